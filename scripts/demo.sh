#!/usr/bin/env bash
# The main job behind `make demo`: the release recipe on the synthetic full-size model (every size preset, FP32, FP16
# weights and INT8, rewrites, GPU-delegation check, parity vs PyTorch) -> verify -> goldens -> a depth PNG of a photo ->
# what publishing would upload (dry run) -> the playground in compare mode (a screenshot) -> how to open it yourself.
set -euo pipefail
OUT=${1:-out}
BIN=.venv/bin
REL="$OUT/depth-anything-v2-small-edgedepth"   # the recipe's name, which the card's transformers.js snippet loads
mkdir -p "$OUT"
echo "== release recipe (synthetic full-size Depth Anything V2 Small: every size preset, format and precision)"
$BIN/python recipes/depth-anything-v2-small.py --model synthetic --out "$REL"
echo
echo "== verify"
$BIN/edgedepth verify "$REL"
echo
echo "== reproducible? every built file against its committed golden SHA-256 (tests/golden/release_sha256.json)"
GOLDEN_STATUS=0
$BIN/python tests/golden/record.py check "$REL" --json "$OUT/golden-check.json" || GOLDEN_STATUS=$?
echo
echo "== what is in it (from manifest.json)"
$BIN/python - "$REL" <<'PY'
import json, os, sys
m = json.load(open(os.path.join(sys.argv[1], "manifest.json")))
built = json.load(open(os.path.join(sys.argv[1], "build-report.json")))["files"]
for f in m["files"]:
    if f.get("format") != "tflite":
        continue
    gpu = {True: "fully on GPU", False: "NOT fully on GPU", None: "GPU not checked"}[f.get("gpu_fully_delegated")]
    p = built.get(f["path"], {}).get("parity_cpu") or {}
    # committed records, each with its machine and date (the manifest keeps the newest per machine and backend)
    cpu = [r for r in f.get("latency") or [] if r.get("backend") == "cpu"]
    gpu = [r for r in f.get("latency") or [] if r.get("backend") == "gpu"]
    lat = (f"CPU {cpu[0]['median_ms']:.0f} ms ({cpu[0]['cpu']}, {cpu[0]['threads']} threads, {cpu[0]['date']})"
           if cpu else "CPU latency not recorded") \
        + "".join(f", GPU {r['median_ms']:.1f} ms FP32 ({r['gpu_adapter'].split(' (')[0]}, {r['date']})" for r in gpu)
    print(f"  {f['path']:48s} {f['bytes'] / 1e6:6.1f} MB  {f['ops']:4d} ops  {gpu:16s} "
          f"rel-L2 vs PyTorch {p.get('pooled_rel_l2', float('nan')):.1e} (this machine)  "
          f"{lat}")
for use, r in m.get("recommended", {}).items():
    print(f"  recommended for {use}: {r['path']} ({r['why']})")
PY
echo
echo "== predict (sample photo: matplotlib's grace_hopper.jpg)"
PHOTO=$($BIN/python -m edgedepth.samples)
$BIN/edgedepth predict "$PHOTO" --model "$REL/depth_anything_v2_small_518x686_fp32.tflite" -o "$OUT/predict" --raw --quiet --overwrite   # its own maps of an earlier demo
echo
echo "== publishing it: what would go to the Hugging Face Hub (a dry run: no network, no token; binaries via Git LFS)"
$BIN/edgedepth publish "$REL" your-name/depth-anything-v2-small-edgedepth --dry-run
echo
echo "== the playground in compare mode (headless chromium: LiteRT.js and ONNX Runtime Web on the same photo)"
$BIN/python scripts/screenshot.py "$REL" -o "$OUT/playground.png"
echo
echo "Everything went to $OUT/:"
find "$OUT" -maxdepth 2 -type f | sort | sed 's/^/  /'
echo
if $BIN/edgedepth serve --help >/dev/null 2>&1; then
  echo "Open the playground:  $BIN/edgedepth serve $REL   (then http://127.0.0.1:8000/)"
fi
if [ "$GOLDEN_STATUS" != 0 ]; then
  echo "make demo: some built files differ from their committed golden SHA-256s (listed above): not reproduced" >&2
  exit "$GOLDEN_STATUS"
fi
