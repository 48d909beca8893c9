#!/usr/bin/env bash
# Run HERE (the CPU machine) before the device call: fills the git-ignored .dev/ folder the H200 run carries.
#   .dev/models   stripped FP32 graph (weights removed) + the INT8 file it is rebuilt from (see edgedepth.formats.tflite.transport)
#   .dev/images   the default image set's 11 source photos
#   .whl/         ai-edge-litert + backports.strenum wheels for the device's Python 3.12 (it has no registry access)
#   .gl/          the Vulkan loader .deb
# Usage: benchmarks/devices/h200_prepare.sh DIR_WITH_TFLITES   (files named *_fp32.tflite / *_int8.tflite, same stem)
set -euo pipefail
SRC=${1:?folder with the *_fp32.tflite and *_int8.tflite to measure}
BIN=.venv/bin
rm -rf .dev && mkdir -p .dev/models .dev/images
for f in "$SRC"/*_fp32*.tflite; do
  base=$(basename "$f")
  int8="$SRC/${base/_fp32/_int8}"
  [ -f "$int8" ] || { echo "missing INT8 twin $int8" >&2; exit 1; }
  $BIN/python -m edgedepth.formats.tflite.transport strip "$f" ".dev/models/${base%.tflite}.stripped.tflite" >/dev/null
  cp "$int8" .dev/models/
  sha256sum "$f" | awk -v n="$base" '{print $1"  "n}' >> .dev/models/SHA256SUMS.original
done
$BIN/python -c 'import shutil, edgedepth.images as i; [shutil.copy(p, ".dev/images/") for p in i.source_files()]'
if [ ! -f .whl/ai_edge_litert-2.3.0-cp312-cp312-manylinux_2_27_x86_64.whl ]; then
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    -d .whl ai-edge-litert==2.3.0 backports.strenum==1.2.8
fi
if ! ls .gl/libglvnd0_*.deb >/dev/null 2>&1; then
  mkdir -p .gl /tmp/amd64/partial
  o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  apt-get $o update -q >/dev/null && (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 libopengl0 libgl1 libglx0 libgles2)
fi
du -ch .dev .whl .gl | tail -1
