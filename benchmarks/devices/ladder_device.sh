#!/usr/bin/env bash
# One device call on the lent H200 for the precision ladder (issue 16): GPU compile + latency of every LiteRT precision.
# Here, first:  .venv/bin/python benchmarks/precision_ladder.py build && ... twins   (-> .dev/ladder_twins, a few MB)
#               .whl (ai-edge-litert cp312 + backports.strenum) and .gl (Vulkan loader + libglvnd): benchmarks/devices/h200_prepare.sh
# Device call:  carry [".dev/ladder_twins", ".whl", ".gl"]   command: bash benchmarks/devices/ladder_device.sh
# Writes $OUT/precision_ladder_h200.json (+ log); here: precision_ladder.py merge --h200 <that file>.
source "$(dirname "$0")/device_env.sh"
timeout "${LADDER_TIMEOUT:-420}" python3 benchmarks/precision_ladder.py device --out "$OUT/precision_ladder_h200.json" \
  --rounds "${ROUNDS:-5}" --warmup "${WARMUP:-5}" --iters "${ITERS:-20}" > "$OUT/precision_ladder_h200.log" 2>&1 \
  || echo "ladder exit $?"
grep -v "^INFO\|^I0000\|^W0000\|^WARNING" "$OUT/precision_ladder_h200.log" | tail -40
