#!/usr/bin/env bash
# One device call on the lent H200 for the model family (issue 17): GPU compile + latency of every member's optimised
# LiteRT FP32 and INT8 file (timing twins: same graphs, seeded weights), FP32-enforced and default precision.
# Here, first:  .whl (ai-edge-litert cp312 + backports.strenum) and .gl (Vulkan loader + libglvnd): benchmarks/devices/h200_prepare.sh
#               (it empties .dev/, so run it before the twins), then
#               .venv/bin/python benchmarks/family.py build && ... twins   (-> .dev/family_twins)
# Device call:  carry [".dev/family_twins", ".whl", ".gl"]   command: bash benchmarks/devices/family_device.sh
# Writes $OUT/family_h200.json (+ log); here: family.py merge --h200 <that file>.
source "$(dirname "$0")/device_env.sh"
timeout "${FAMILY_TIMEOUT:-500}" python3 benchmarks/family.py device --out "$OUT/family_h200.json" \
  --rounds "${ROUNDS:-3}" --warmup "${WARMUP:-3}" --iters "${ITERS:-10}" > "$OUT/family_h200.log" 2>&1 \
  || echo "family exit $?"
grep -v "^INFO\|^I0000\|^W0000\|^WARNING" "$OUT/family_h200.log" | tail -40
