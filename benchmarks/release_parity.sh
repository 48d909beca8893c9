#!/usr/bin/env bash
# CPU parity of every CPU-runnable file in a release folder (.tflite FP32/INT8, XNNPACK .pte) against the PyTorch
# checkpoint it was built from (MODEL, default synthetic), on IMAGES images of the default set (default 22), 2 threads.
# Writes benchmarks/results/release_cpu_parity.json with its measurement records (`validate --json` writes them,
# edgedepth.verify.records); the recipe reads those records, and a rebuild's manifest and model card show a parity row
# for each file whose SHA-256 matches a file measured here.  (benchmarks/results/webgpu_file_cpu_parity.json is the
# same run over the WebGPU file.)
#   benchmarks/release_parity.sh out/depth-anything-v2-small-edgedepth
set -euo pipefail
cd "$(dirname "$0")/.."
REL=${1:?release folder}
mapfile -t FILES < <(ls "$REL"/*.tflite "$REL"/*_xnnpack_*.pte 2>/dev/null)
.venv/bin/edgedepth validate "${FILES[@]}" --model "${MODEL:-synthetic}" --backend cpu --limit "${IMAGES:-22}" \
  --threads 2 --json benchmarks/results/release_cpu_parity.json --quiet | tail -20
