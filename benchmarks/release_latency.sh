#!/usr/bin/env bash
# CPU latency of every .tflite in a release folder, one interleaved run per size (FP32 vs INT8), 2 threads.
# Writes benchmarks/results/release_cpu_latency_<size>.json with their measurement records (`bench --json` writes them);
# the recipe reads those records, and a rebuild's model card shows a latency row for each file whose SHA-256 matches
# the file timed here.
#   benchmarks/release_latency.sh out/depth-anything-v2-small-edgedepth
set -euo pipefail
cd "$(dirname "$0")/.."
REL=${1:?release folder}
for fp32 in "$REL"/depth_anything_v2_small_*_fp32.tflite; do
  size=$(basename "$fp32" | sed -E 's/.*_([0-9]+x[0-9]+)_fp32.tflite/\1/')
  echo "== $size"
  .venv/bin/edgedepth bench "$fp32" "${fp32/_fp32/_int8}" --backend cpu --threads 2 --rounds "${ROUNDS:-3}" \
    --warmup 2 --iters 5 --json "benchmarks/results/release_cpu_latency_$size.json" --quiet | tail -3
done
