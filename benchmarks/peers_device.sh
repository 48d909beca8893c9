#!/usr/bin/env bash
# The peers run on the lent H200 machine's host CPU (Python 3.12, no registries).  Here, first:
#   .venv/bin/python benchmarks/peers.py export && benchmarks/peers_device.sh prepare   # fills .dev/peers (~50 MiB)
# then one device call with carry [".dev"]:  bash benchmarks/peers_device.sh run      # JSON lands in $OUT
# What travels: LiteRT timing twins (benchmarks/peers.py prepare-twins), slimmed ai-edge-litert 2.3.0 (CPU only: the
# WebGPU accelerator and vendor plugins removed) and OpenVINO 2026.4.1 (CPU plugin + ONNX frontend only) for cp312,
# transformers 5.24.0 (the device has 5.17), the default image set's photos.  The .onnx files are exported there
# from the same synthetic checkpoint (same state-dict SHA-256 on both CPUs) with that machine's torch.
set -euo pipefail
cd "$(dirname "$0")/.."
D=.dev/peers
case "${1:-}" in
prepare)
  .venv/bin/python benchmarks/peers.py prepare-twins --twins "$D/twins"
  du -sh "$D" ;;
run)
  SITE=/tmp/peers_site
  mkdir -p "$SITE"
  tar -xJf "$D/ov_slim.tar.xz" -C "$SITE"
  tar -xJf "$D/litert_slim.tar.xz" -C "$SITE"
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$D"/whl/*.whl
  export PYTHONPATH="$SITE:$PWD/src" PYTHONUNBUFFERED=1
  W=/tmp/peers
  python3 benchmarks/peers.py export-onnx --dir "$W"
  for t in ${PEERS_THREADS:-2 16}; do
    python3 benchmarks/peers.py run --dir "$W" --twins "$D/twins" --images-root "$D/images" --tag "xeon-${t}t" \
      --threads "$t" --rounds "${PEERS_ROUNDS:-3}" --images "${PEERS_IMAGES:-2}" --out "${OUT:-/tmp}/peers_cpu_xeon-${t}t.json"
  done ;;
*) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
