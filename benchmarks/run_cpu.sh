#!/usr/bin/env bash
# All CPU-machine measurements behind BENCHMARKS.md (full synthetic model, 518x686). About 45 minutes on 2 cores.
# Every number lands as JSON in benchmarks/results/; BENCHMARKS.md is then generated from those files.
set -euo pipefail
cd "$(dirname "$0")/.."
E=.venv/bin/edgedepth
R=benchmarks/results
D=out/bench
mkdir -p "$R" "$D"
step() { echo; echo "== $*"; }
# STEPS selects parts (default: all), e.g. STEPS="bench md" benchmarks/run_cpu.sh
STEPS=${STEPS:-"export et inspect bench parity gpu ablation floor md"}
want() { [[ " $STEPS " == *" $1 "* ]]; }

P=$D/depth_anything_v2_small_518x686
if want export; then
step "exports: plain and optimised, FP32 + INT8"
$E export --model synthetic --plain --out "$D" --quiet
$E export --model synthetic --out "$D" --quiet
fi
if want inspect; then
for f in "$P"_fp32_plain "$P"_int8_plain "$P"_fp32 "$P"_int8; do
  $E inspect "$f.tflite" --json > "$R/inspect_$(basename "$f").json"
done
fi

if want et; then
step "ExecuTorch XNNPACK FP32 + INT8 (same size, default ExecuTorch rewrites)"
$E export --target executorch --et-backend xnnpack --model synthetic --out "$D" --quiet
fi

if want bench; then
step "CPU latency: LiteRT plain vs optimised (FP32, INT8), ExecuTorch, PyTorch eager; interleaved, 2 threads"
$E bench "$P"_fp32_plain.tflite "$P"_fp32.tflite "$P"_int8_plain.tflite "$P"_int8.tflite \
  "$P"_xnnpack_fp32.pte "$P"_xnnpack_int8.pte --torch synthetic \
  --backend cpu --threads 2 --rounds "${ROUNDS:-3}" --warmup 5 --iters 12 --json "$R/cpu_latency.json" \
  --plot docs/cpu_latency.png --quiet
fi

if want parity; then
step "CPU parity vs PyTorch on the default image set (110 images)"
$E validate "$P"_fp32_plain.tflite "$P"_fp32.tflite "$P"_int8_plain.tflite "$P"_int8.tflite \
  "$P"_xnnpack_fp32.pte "$P"_xnnpack_int8.pte --model synthetic --backend cpu --json "$R/parity_cpu.json" --plot docs/parity_cpu.png --quiet
fi

if want gpu; then
step "GPU (SwiftShader) parity, enforce_f32 and default precision, a handful of images"
VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json $E validate "$P"_fp32.tflite --model synthetic --backend cpu,gpu --limit "${GPU_IMAGES:-1}" \
  --json "$R/parity_swiftshader.json" --quiet
fi

if want ablation; then
step "per-rewrite ablation (op count, delegation, latency of each pipeline prefix)"
.venv/bin/python benchmarks/rewrite_ablation.py
fi

if want floor; then
step "latency floor (kernel-only graph, same MACs) and parity floor (float64 truth)"
.venv/bin/python benchmarks/latency_floor.py --rounds "${FLOOR_ROUNDS:-6}"
.venv/bin/python benchmarks/parity_floor.py
fi

if want md; then
step "BENCHMARKS.md"
.venv/bin/python benchmarks/report/make_benchmarks_md.py
fi
