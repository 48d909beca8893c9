#!/usr/bin/env bash
# One device call on the lent H200 (issue 31): Depth Anything 3 Small vs V2 Small at 518x518 -- LiteRT GPU (WebGPU over
# Vulkan; FP32-enforced and default precision; FP32 and INT8 files as timing twins) and PyTorch CUDA (eager FP32,
# torch.compile reduce-overhead FP16 autocast with CUDA graphs), ~4-5 min.
# Here, first:  .gl (Vulkan loader + libglvnd .debs) and .whl (ai-edge-litert 2.3.0 cp312 + backports.strenum):
#                 benchmarks/devices/h200_prepare.sh's download part (NOT the script itself: it empties .dev/);
#               .whl2: transformers 5.24.0 (the device has 5.17);
#               .venv/bin/python benchmarks/da3_gpu.py prepare   (-> .dev/da3gpu: twins, index.json, whl/ = the DA3
#                 package + einops, addict, omegaconf, antlr4 4.9.3, PyYAML for cp312; prints the carried sizes)
# Carried (2026-12-05): .gl 0.4 + .whl 20.8 + .whl2 12.9 + .dev/da3gpu 6.1 (prepare prints it) = 40.2 MiB, + the
# ~4.5 MiB checkout = ~45 MiB < 64 MiB.
# Device call:  carry [".gl", ".whl", ".whl2", ".dev/da3gpu"]   command: bash benchmarks/devices/da3_gpu_device.sh
# Writes $OUT/da3_gpu.json (rewritten after the twins, the LiteRT part and the PyTorch part) + $OUT/da3_gpu.log;
# here: copy da3_gpu.json to benchmarks/results/ and make BENCHMARKS.md (benchmarks/report/make_benchmarks_md.py).
# Knobs: DA3GPU_TIMEOUT (whole run, s), DA3GPU_ARGS (extra arguments of `da3_gpu.py run`).
source "$(dirname "$0")/device_env.sh"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_da3 \
  .whl2/*.whl .dev/da3gpu/whl/*.whl
export PYTHONPATH=/tmp/site_da3:$PYTHONPATH
timeout "${DA3GPU_TIMEOUT:-360}" python3 benchmarks/da3_gpu.py run --out "$OUT/da3_gpu.json" ${DA3GPU_ARGS:-} \
  > "$OUT/da3_gpu.log" 2>&1 || echo "da3_gpu exit $?"
grep -v "^INFO\|^I0000\|^W0000\|^WARNING\|^VERBOSE\|^compiled\|^W1\|^I1" "$OUT/da3_gpu.log" | tail -45 || true
