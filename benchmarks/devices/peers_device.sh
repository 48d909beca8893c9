#!/usr/bin/env bash
# The peers run on the lent H200 machine's host CPU (Python 3.12, no registries).  Here, first:
#   .venv/bin/python benchmarks/peers.py export && benchmarks/devices/peers_device.sh prepare   # fills .dev/peers (~50 MiB)
# then one device call with carry [".dev"]:  bash benchmarks/devices/peers_device.sh run      # JSON lands in $OUT
# What travels: LiteRT timing twins (benchmarks/peers.py prepare-twins), slimmed ai-edge-litert 2.3.0 (CPU only: the
# WebGPU accelerator and vendor plugins removed) and OpenVINO 2026.4.1 (CPU plugin + ONNX and IR frontends only) for
# cp312, transformers 5.24.0 (the device has 5.17), the default image set's photos (peers.py prepare-site).  The .onnx
# files are exported there from the same synthetic checkpoint (same state-dict SHA-256 on both CPUs) with that
# machine's torch.
#
# OpenVINO INT8 / BF16 vs LiteRT (benchmarks/openvino_int8.py, issue 30 part 4).  Here:
#   .venv/bin/python benchmarks/peers.py prepare-site --dir .dev/peers     # ~44 MB: runtimes, transformers, photos
#   .venv/bin/python benchmarks/openvino_int8.py prepare                   # ~25 MB: .dev/ovint8 (INT8 IR, twins)
# Both together pass 64 MiB, so two device calls while the machine stays warm (ignored paths already there are kept):
#   carry [".dev/ovint8"]:  ls -l .dev/ovint8
#   carry [".dev/peers"]:   bash benchmarks/devices/peers_device.sh ovint8            # $OUT/cpu_int8_xeon.json
# One call instead (both under 64 MiB): SITE_SRC=.dev/peers-slim (.dev/peers less the transformers wheel, ~30 MB) with
# carry [".dev/ovint8", ".dev/peers-slim"] and EXTRA_SITE=/tmp/site_tf (transformers 5.24 installed there by an earlier
# call on the same warm machine: gpu_truth_device.sh limit/probe).
# Local smoke test (CPython 3.11 wheels): SITE_SRC=/tmp/site311 PY=.venv/bin/python OVINT8_THREADS=2 \
#   OVINT8_ROUNDS=1 OVINT8_ITERS=1 OVINT8_WARMUP=0 OUT=/tmp bash benchmarks/devices/peers_device.sh ovint8
set -euo pipefail
cd "$(dirname "$0")/../.."
D=.dev/peers
PY=${PY:-python3}

site() {   # the slim runtimes + wheels from ${SITE_SRC:-$D} into one folder on PYTHONPATH
  local src=${SITE_SRC:-$D}
  SITE=/tmp/peers_site
  rm -rf "$SITE" && mkdir -p "$SITE"
  tar -xJf "$src/ov_slim.tar.xz" -C "$SITE"
  tar -xJf "$src/litert_slim.tar.xz" -C "$SITE"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --disable-pip-version-check --target "$SITE" \
    "$src"/whl/*.whl
  export PYTHONPATH="${EXTRA_SITE:+$EXTRA_SITE:}$SITE:$PWD/src" PYTHONUNBUFFERED=1
}

case "${1:-}" in
prepare)
  .venv/bin/python benchmarks/peers.py prepare-site --dir "$D"
  .venv/bin/python benchmarks/peers.py prepare-twins --twins "$D/twins"
  du -sh "$D" ;;
run)
  site
  W=/tmp/peers
  "$PY" benchmarks/peers.py export-onnx --dir "$W"
  for t in ${PEERS_THREADS:-2 16}; do
    "$PY" benchmarks/peers.py run --dir "$W" --twins "$D/twins" --images-root "$D/images" --tag "xeon-${t}t" \
      --threads "$t" --rounds "${PEERS_ROUNDS:-3}" --images "${PEERS_IMAGES:-2}" --out "${OUT:-/tmp}/peers_cpu_xeon-${t}t.json"
  done ;;
ovint8)
  V=${OVINT8_DEV:-.dev/ovint8}
  [ -f "$V/ir.tar.xz" ] || { echo "no $V/ir.tar.xz: carry [\".dev/ovint8\"] in an earlier call" >&2; exit 3; }
  site
  W=/tmp/ovint8
  "$PY" benchmarks/openvino_int8.py export-onnx --dir "$W"
  "$PY" benchmarks/openvino_int8.py run --dir "$W" --dev "$V" --images-root "${SITE_SRC:-$D}/images" \
    --threads "${OVINT8_THREADS:-2,16}" --rounds "${OVINT8_ROUNDS:-4}" --warmup "${OVINT8_WARMUP:-2}" \
    --iters "${OVINT8_ITERS:-6}" ${OVINT8_ARGS:-} --out "${OUT:-/tmp}/cpu_int8_xeon.json" ;;
*) echo "usage: $0 prepare|run|ovint8" >&2; exit 2 ;;
esac
