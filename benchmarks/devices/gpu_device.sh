#!/usr/bin/env bash
# One device call on the lent H200 (Python 3.12, no registries) for issue 15: GPU time attribution + PyTorch CUDA rows.
# Here, first:  .venv/bin/python benchmarks/gpu_attribution.py build   (-> .dev/gpu_attr, stripped graphs, ~1 MB)
#               benchmarks/devices/h200_prepare.sh's wheel/.deb part (.whl: ai-edge-litert cp312, backports.strenum,
#               transformers 5.24.0; .gl: the Vulkan loader and libglvnd, which NVIDIA's ICD needs) and the photos in .dev/images (for gpu_reference.py)
# Device call:  carry [".dev/gpu_attr", ".dev/images", ".whl", ".gl"]   command: bash benchmarks/devices/gpu_device.sh
# Writes $OUT/gpu_attribution.json, $OUT/gpu_reference.json and their logs.
source "$(dirname "$0")/device_env.sh"
for part in pieces models; do     # one process each: fewer GPU environments alive at once
  timeout "${ATTR_TIMEOUT:-240}" python3 benchmarks/gpu_attribution.py run --part $part --out "$OUT/gpu_attribution.json" \
    --method "${ATTR_METHOD:-5,5,20}" > "$OUT/gpu_attribution_$part.log" 2>&1 || echo "attribution $part exit $?"
  grep "ms$\|^timed\|Error" "$OUT/gpu_attribution_$part.log" | tail -60 || true
done
if [ "${GPU_REFERENCE:-1}" = 1 ]; then
  timeout "${REF_TIMEOUT:-240}" python3 benchmarks/gpu_reference.py --images-root .dev/images ${REF_SIZES:-} \
    --rounds 5 --warmup 20 --iters 60 --out "$OUT/gpu_reference.json" > "$OUT/gpu_reference.log" 2>&1 \
    || echo "gpu_reference exit $?"
  tail -8 "$OUT/gpu_reference.log"
fi
