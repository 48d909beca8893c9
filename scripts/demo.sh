#!/usr/bin/env bash
# The main job behind `make demo`: synthetic full-size model -> LiteRT FP32 + INT8 -> inspect -> depth PNG of a photo.
set -euo pipefail
OUT=${1:-out}
BIN=.venv/bin
mkdir -p "$OUT/litert" "$OUT/predict"
echo "== export (synthetic full-size Depth Anything V2 Small, 518x686)"
$BIN/edgedepth export --model synthetic --size 518x686 --out "$OUT/litert"
echo "== inspect"
for f in "$OUT"/litert/*.tflite; do
  $BIN/edgedepth inspect "$f" --json > "${f%.tflite}.inspect.json"
  $BIN/python - "${f%.tflite}.inspect.json" <<'PY'
import json, sys
i = json.load(open(sys.argv[1])); g = i["gpu"]
print(f"{i['file']}: {i['bytes'] / 1e6:.1f} MB, {i['ops']} ops")
print("  GPU (" + str(g["adapter"]).split(",")[0] + "):",
      "fully delegated" if g["fully_delegated"] else f"NOT fully delegated ({g['cpu_ops']} ops would fall back): {g['error']}")
PY
done
echo "== predict (sample photo: matplotlib's grace_hopper.jpg)"
PHOTO=$($BIN/python -m edgedepth.samples)
FP32=$(ls "$OUT"/litert/*_fp32.tflite | head -1)
$BIN/edgedepth predict "$PHOTO" --model "$FP32" -o "$OUT/predict" --raw --quiet
echo
echo "Everything went to $OUT/:"
find "$OUT" -type f | sort | sed 's/^/  /'
