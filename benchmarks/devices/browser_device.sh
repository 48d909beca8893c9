#!/usr/bin/env bash
# The playground in headless Chromium with WebGPU on the device machine's real GPU (H200; Ubuntu 24.04, Python 3.12,
# no registry, no browser), carried there in parts of <= 60 MiB, one part a call.
#
#   prepare            HERE: fill the git-ignored .dev/browser/ with parts p1..pN (Debian's chromium-headless-shell
#                      + the chromium-common files it needs, the shared libraries it needs that the device lacks,
#                      cp312 wheels of Playwright, the LiteRT.js / ORT-web files `edgedepth serve` serves, the release
#                      files) and print what each part holds. Parts are laid end to end: an item may straddle two.
#   assemble           THERE, once per call: move the carried parts into $BROWSER_ROOT (/tmp/browser), make whole
#                      each item whose pieces have all arrived, install the wheels once (pip --target .../site).
#   run [--diagnose-only] [--no-webcam] [--no-latency] [--iters N]
#                      THERE: first the diagnosis (benchmarks/webgpu_diagnose.py -> $OUT/webgpu_diagnosis.json: the
#                      adapter each flag set gets, features, limits, the browser's GPU report, console; the browser's
#                      stderr -> $OUT/chrome_stderr.log), then, on the first flag set with a hardware adapter,
#                      playground_latency.py --webgpu-standalone and webcam_fps.py --backend webgpu -> $OUT/*.json.
#
# Device call i:  carry [".dev/browser/p<i>"]   command: bash benchmarks/devices/browser_device.sh assemble [&& ... run ...]
# Environment: BROWSER_ROOT (/tmp/browser), PARTS_DIR (.dev/browser), OUT (/tmp/out), PYTHON (python3),
#   VK_ICD (NVIDIA's ICD json), BROWSER_ARGS (flags to use instead of the diagnosis' choice), CANDIDATES (flag sets to
#   try, see webgpu_diagnose.py), ALLOW_SOFTWARE=1 (benchmark even without a hardware adapter: the local test),
#   prepare only: RELEASE (out/depth-anything-v2-small-edgedepth), PART_MIB (58: + the ~3.3 MiB checkout < 64), FP32=0 (leave the optional FP32 files out),
#   ONNX_FP16=0 (leave onnx/model_fp16.onnx out). Webcam-only re-run (4 parts): FP32=0 ONNX_FP16=0 PARTS_DIR=.dev/browser-webcam.
#   WEBCAM_FRAMES_OUT=$OUT/frames: keep each LiteRT.js variant's last webcam frame (benchmarks/gpu_frames_check.py, here).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"    # browser_parts.py uses edgedepth.fsutil
ROOT=${BROWSER_ROOT:-/tmp/browser}
PARTS=${PARTS_DIR:-.dev/browser}
PY=${PYTHON:-python3}
OUT=${OUT:-/tmp/out}

# Not carried (the device has them): the glibc family, libstdc++, libgcc_s. The GL/EGL loaders (libglvnd) go to gl/,
# last on the browser's library path (the device has none, and NVIDIA's driver needs libGLdispatch); the Vulkan loader
# is Chromium's own libvulkan.so.1 in its folder.
GLIBC_RE='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libanl\.so\.1|libmvec\.so\.1|libnss_[a-z]+\.so\.2|libstdc\+\+\.so\.6|libgcc_s\.so\.1|linux-vdso\.so\.1)$'
GL_RE='^(libvulkan\.so\.1|libEGL\.so\.1|libGL\.so\.1|libGLX\.so\.0|libGLdispatch\.so\.0|libGLESv2\.so\.2|libOpenGL\.so\.0)$'
GL_LIBS="libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libGL.so.1 libOpenGL.so.0 libGLESv2.so.2"
# dlopen()ed, not in ldd's list: NSS's crypto modules, libpci (GPU enumeration), the X11/Wayland client libraries
# ANGLE/Vulkan probe (seen mapped in a run here); taken when installed here
DLOPEN_LIBS="libsoftokn3.so libfreebl3.so libfreeblpriv3.so libnssckbi.so libpci.so.3 libwayland-client.so.0
  libxcb-shm.so.0 libXcursor.so.1 libxcb-dri3.so.0 libxcb-present.so.0 libxcb-sync.so.1 libxcb-glx.so.0 libxshmfence.so.1"
CHROMIUM_FILES_HS="chromium-headless-shell headless_lib_data.pak headless_lib_strings.pak headless_command_resources.pak"
CHROMIUM_FILES_COMMON="icudtl.dat v8_context_snapshot.bin snapshot_blob.bin libvulkan.so.1 libvk_swiftshader.so vk_swiftshader_icd.json libEGL.so libGLESv2.so"

closure() {   # DT_NEEDED closure of the given files (ldd, system paths only): one resolved path a line
  env -u LD_LIBRARY_PATH ldd "$@" 2>/dev/null | awk '/=> \//{print $3}' | sort -u
}

xz_tar() {    # xz_tar OUT.tar.xz DIR PATH...: a reproducible tar of DIR/PATH..., xz -9, from the cache if unchanged
  local out=$1 dir=$2; shift 2
  local opts=(--sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner)
  local key; key=$(tar -C "$dir" "${opts[@]}" -cf - "$@" | sha256sum | cut -c1-16)
  local c=.dev/browser-cache/xz/$(basename "$out" .tar.xz)-$key.tar.xz
  mkdir -p .dev/browser-cache/xz
  [ -f "$c" ] || { tar -C "$dir" "${opts[@]}" -cf - "$@" | nice -n 10 xz -9 -T1 > "$c.tmp" && mv "$c.tmp" "$c"; }
  cp "$c" "$out"
}

prepare() {
  local REL=${RELEASE:-out/depth-anything-v2-small-edgedepth} CACHE=.dev/browser-cache W=.dev/browser-work
  local S=$W/stage
  mkdir -p "$CACHE/deb" "$CACHE/whl"
  rm -rf "$S" && mkdir -p "$S"
  # 1. chromium-headless-shell + the chromium-common files it reads (data, V8 snapshots, Vulkan loader, SwiftShader)
  local ver=${CHROMIUM_DEB_VERSION:-$(apt-cache policy chromium-headless-shell | awk '/Candidate:/{print $2}')}
  (cd "$CACHE/deb" && for p in chromium-headless-shell chromium-common; do
     ls ${p}_*.deb >/dev/null 2>&1 || apt-get download -q "$p=$ver" >/dev/null; done)
  rm -rf "$W/x" && mkdir -p "$W/x" "$S/tree/chromium"
  for d in "$CACHE"/deb/*.deb; do dpkg -x "$d" "$W/x"; done
  for f in $CHROMIUM_FILES_HS $CHROMIUM_FILES_COMMON; do cp -p "$W/x/usr/lib/chromium/$f" "$S/tree/chromium/"; done
  # 2. shared libraries: ldd closure of the binary, its Vulkan loader / SwiftShader, the dlopen()ed ones, libglvnd
  mkdir -p "$S/tree/lib" "$S/tree/gl" "$S/tree/fonts"
  local extra=() so p
  for so in $DLOPEN_LIBS $GL_LIBS; do
    p=$(ldconfig -p | awk -v n="$so" '$1 == n && /x86-64/ && !f {print $NF; f = 1}')
    [ -z "$p" ] && p=$(ls /usr/lib/x86_64-linux-gnu/nss/$so 2>/dev/null || true)
    if [ -n "$p" ]; then extra+=("$p"); else echo "note: $so not installed here: not carried"; fi
  done
  for p in $(closure "$S/tree/chromium/chromium-headless-shell" "$S/tree/chromium/libvk_swiftshader.so" \
               "$S/tree/chromium/libvulkan.so.1" "${extra[@]}") "${extra[@]}"; do
    so=$(basename "$p")
    [[ $so =~ $GLIBC_RE ]] && continue
    if [[ $so =~ $GL_RE ]]; then cp -L "$p" "$S/tree/gl/$so"; else cp -L "$p" "$S/tree/lib/$so"; fi
  done
  rm -f "$S/tree/gl/libvulkan.so.1"       # chromium's own is in chromium/
  # check: with only the carried folders on the path, nothing but the glibc family comes from the system
  local leak
  leak=$(LD_LIBRARY_PATH="$S/tree/lib:$S/tree/chromium:$S/tree/gl" ldd "$S/tree/chromium/chromium-headless-shell" \
         "$S"/tree/lib/*.so* "$S"/tree/gl/*.so* "$S/tree/chromium/libvk_swiftshader.so" 2>&1 \
         | awk '/=>/{print $1, $3}' | sort -u | while read -r n path; do
             [[ $n =~ $GLIBC_RE ]] || [[ $path == "$PWD/$S/tree/"* || $path == "$S/tree/"* ]] || echo "$n => $path"; done)
  [ -z "$leak" ] || { echo "carried library set incomplete:"; echo "$leak"; exit 1; }
  cp /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf \
     "$S/tree/fonts/" 2>/dev/null || echo "note: no DejaVu fonts here: none carried"
  echo "libraries: $(ls "$S/tree/lib" | wc -l) in lib/ ($(du -sh "$S/tree/lib" | cut -f1)), $(ls "$S/tree/gl" | wc -l) in gl/"
  # 3. wheels for the device's CPython 3.12: playwright, greenlet and what their Requires-Dist name, at .venv's versions
  local todo=(playwright) done_=() name v
  while [ ${#todo[@]} -gt 0 ]; do
    name=${todo[0]}; todo=("${todo[@]:1}")
    [[ " ${done_[*]} " == *" $name "* ]] && continue
    done_+=("$name")
    v=$(.venv/bin/python -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")
    ls "$CACHE/whl/" | grep -i "^${name//-/_}-$v-" >/dev/null || python3 -m pip download -q --no-deps --only-binary=:all: \
      --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 \
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
      -d "$CACHE/whl" "$name==$v" 2>&1 | grep -v "is ignored: it is neither" || true
    todo+=($(python3 - "$CACHE/whl" "$name" "$v" <<'EOF'
import glob, re, sys, zipfile
d, name, v = sys.argv[1:]
w = [p for p in glob.glob(f"{d}/*.whl") if re.match(rf"{re.escape(name.replace('-', '_'))}-{re.escape(v)}-", p.rsplit('/', 1)[1], re.I)][0]
z = zipfile.ZipFile(w)
meta = z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()
for line in meta.splitlines():
    if line.startswith("Requires-Dist:") and "extra ==" not in line:
        print(re.match(r"[A-Za-z0-9_.-]+", line.split(":", 1)[1].strip()).group(0).lower())
EOF
))
  done
  # 4. what `edgedepth serve` serves of web/node_modules for LiteRT.js and ORT-web (transformers.js left out: serve
  #    starts without it). ORT-web: the import map's ort.webgpu.min.mjs and the wasm build it loads (asyncify).
  mkdir -p "$S/tree/web"
  (cd web && find node_modules/@litertjs/core/package.json node_modules/@litertjs/core/dist/index.js \
       node_modules/@litertjs/core/wasm node_modules/@litertjs/wasm-utils/package.json \
       node_modules/@litertjs/wasm-utils/dist node_modules/onnxruntime-web/package.json \
       node_modules/onnxruntime-web/dist/ort.webgpu.min.mjs \
       node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.mjs \
       node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm -type f) \
    | tar -C web -cf - -T - | tar -C "$S/tree/web" -xf -
  # 5. the release: its small files (manifest.json as manifest.full.json: assemble writes a manifest.json that lists
  #    the files present), then the model files, the optional FP32 ones last
  mkdir -p "$S/tree/release"
  cp "$REL/manifest.json" "$S/tree/release/manifest.full.json"
  local f
  for f in $(python3 -c "import json,sys; [print(f['path']) for f in json.load(open(sys.argv[1]))['files'] if f.get('bytes', 0) < 1_000_000]" "$REL/manifest.json") build-report.json; do
    [ -f "$REL/$f" ] && { mkdir -p "$S/tree/release/$(dirname "$f")"; cp "$REL/$f" "$S/tree/release/$f"; }
  done
  # compress: one .tar.xz per item (cached by the content of the tar: a re-run does not compress again)
  local t=$S/tree
  xz_tar "$S/chromium.tar.xz" "$t" chromium
  xz_tar "$S/libs.tar.xz" "$t" lib gl fonts
  xz_tar "$S/web.tar.xz" "$t/web" node_modules
  xz_tar "$S/release-small.tar.xz" "$t/release" .
  {
    printf 'chromium\ttar\t.\tchromium.tar.xz\n'
    printf 'libs\ttar\t.\tlibs.tar.xz\n'
    for w in "$CACHE"/whl/*.whl; do
      case $(basename "$w") in greenlet-*cp312*|playwright-*|*-none-any.whl|*cp312*) ;; *) continue;; esac
      printf 'whl-%s\tfile\twheels/%s\t%s\n' "$(basename "$w" | cut -d- -f1)" "$(basename "$w")" "$(realpath "$w")"
    done
    printf 'web\ttar\tweb\tweb.tar.xz\n'
    printf 'release-small\ttar\trelease\trelease-small.tar.xz\n'
    printf 'm-webgpu-518x686\tfile\trelease/depth_anything_v2_small_518x686_fp16_u8in.tflite\t%s\n' \
      "$(realpath "$REL/depth_anything_v2_small_518x686_fp16_u8in.tflite")"
    [ "${ONNX_FP16:-1}" = 1 ] && \
      printf 'm-onnx-fp16\tfile\trelease/onnx/model_fp16.onnx\t%s\n' "$(realpath "$REL/onnx/model_fp16.onnx")"
    printf 'm-tflite-224x224-fp16\tfile\trelease/depth_anything_v2_small_224x224_fp16.tflite\t%s\n' \
      "$(realpath "$REL/depth_anything_v2_small_224x224_fp16.tflite")"
    if [ "${FP32:-1}" = 1 ]; then
      printf 'm-tflite-518x686-fp32\tfile\trelease/depth_anything_v2_small_518x686_fp32.tflite\t%s\n' \
        "$(realpath "$REL/depth_anything_v2_small_518x686_fp32.tflite")"
      printf 'm-onnx-fp32\tfile\trelease/onnx/model.onnx\t%s\n' "$(realpath "$REL/onnx/model.onnx")"
    fi
  } > "$S/ITEMS.tsv"
  python3 benchmarks/devices/browser_parts.py pack "$S" "$PARTS" --cap-mib "${PART_MIB:-58}"
  rm -rf "$W"          # the staging area (the compressed tars stay cached in .dev/browser-cache/xz)
  echo
  echo "items (in order; an item is usable once all the parts it lies in have been carried):"
  awk -F'\t' 'NR > 1 {printf "  %-24s %8.1f MiB  %-6s -> %-60s in %s\n", $1, $3 / 1048576, $5, $6, $7}' "$PARTS/p1/INDEX.tsv"
  echo "parts:"
  for d in $(ls -d "$PARTS"/p* | sort -V); do
    printf '  %-18s %6.1f MiB: %s\n' "$d" "$(du -sb "$d" | awk '{print $1 / 1048576}')" \
      "$(awk '{print $1}' "$d/CONTENTS.txt" | tr '\n' ' ')"
  done
  du -sb "$PARTS" | awk '{printf "total %.1f MiB\n", $1 / 1048576}'
}

assemble() {
  mkdir -p "$ROOT"
  "$PY" benchmarks/devices/browser_parts.py assemble "$PARTS" "$ROOT"
  # the release folder's manifest.json: manifest.full.json less the files not (yet) here (serve checks every model
  # file it lists), recommendations of absent files dropped
  [ -f "$ROOT/release/manifest.full.json" ] && "$PY" - "$ROOT/release" <<'EOF'
import json, os, sys
d = sys.argv[1]
m = json.load(open(os.path.join(d, "manifest.full.json")))
here = lambda p: os.path.isfile(os.path.join(d, p)) and not os.path.islink(os.path.join(d, p))  # noqa: E731
m["files"] = [f for f in m["files"] if here(f["path"])]
m["recommended"] = {k: v for k, v in (m.get("recommended") or {}).items() if here(v.get("path", ""))}
with open(os.path.join(d, "manifest.json"), "w") as f:
    json.dump(m, f, indent=1)
print("release manifest.json lists:", ", ".join(f["path"] for f in m["files"] if f.get("format") in ("tflite", "onnx")) or "no model file yet")
EOF
  if ls "$ROOT"/wheels/*.whl >/dev/null 2>&1 && [ ! -f "$ROOT/site/.installed" ] \
     && [ ! -f "$ROOT/INDEX.tsv" -o -z "$(awk -F'\t' 'NR > 1 && $1 ~ /^whl-/ {print $1}' "$ROOT/INDEX.tsv" \
          | while read -r n; do [ -f "$ROOT/done/$n" ] || echo "$n"; done)" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$ROOT/site" ${PIP_EXTRA_ARGS:-} \
      "$ROOT"/wheels/*.whl && touch "$ROOT/site/.installed" && echo "wheels installed into $ROOT/site"
  fi
}

run() {
  local diag_only=0 webcam=1 latency=1 iters=${ITERS:-20}
  while [ $# -gt 0 ]; do
    case $1 in
      --diagnose-only) diag_only=1;; --no-webcam) webcam=0;; --no-latency) latency=0;; --iters) iters=$2; shift;;
      *) echo "run: unknown option $1" >&2; exit 2;;
    esac; shift
  done
  [ -x "$ROOT/chromium/chromium-headless-shell" ] || { echo "chromium not assembled yet in $ROOT" >&2; exit 1; }
  [ -f "$ROOT/site/.installed" ] || { echo "wheels not installed yet in $ROOT/site" >&2; exit 1; }
  mkdir -p "$OUT"
  # the wrapper Playwright launches: the carried libraries for the browser only (not for Python), stderr to a log
  local libpath="$ROOT/lib:$ROOT/chromium:$ROOT/gl"     # gl/: libglvnd, which NVIDIA's Vulkan/EGL driver needs
  for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do [ -d "$d" ] && libpath="$libpath:$d"; done
  cat > "$ROOT/chrome" <<EOF
#!/bin/sh
export LD_LIBRARY_PATH="$libpath"
if [ -n "\${CHROME_STDERR:-}" ]; then exec "$ROOT/chromium/chromium-headless-shell" "\$@" 2>>"\$CHROME_STDERR"; fi
exec "$ROOT/chromium/chromium-headless-shell" "\$@"
EOF
  chmod +x "$ROOT/chrome"
  mkdir -p "$ROOT/fonts/cache"
  cat > "$ROOT/fonts/fonts.conf" <<EOF
<?xml version="1.0"?><!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>$ROOT/fonts</dir><cachedir>$ROOT/fonts/cache</cachedir></fontconfig>
EOF
  export FONTCONFIG_FILE=$ROOT/fonts/fonts.conf
  local icd=${VK_ICD:-/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json}
  export VK_ICD_FILENAMES=$icd VK_DRIVER_FILES=$icd
  [ -f /usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json ] && \
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
  export PYTHONPATH="$ROOT/site:$PWD/src:$PWD/benchmarks" PYTHONUNBUFFERED=1
  export CHROME_STDERR=$OUT/chrome_stderr.log
  # the page: this checkout's web/ files with the carried node_modules beside them
  if [ -d "$ROOT/web/node_modules" ]; then
    tar -C web --exclude=./node_modules -cf - . | tar -C "$ROOT/web" -xf -     # web/runtimes/ too
    export EDGEDEPTH_WEB_DIR=$ROOT/web
  fi
  echo "== $(date -u +%FT%TZ) $(uname -r); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null || echo 'no nvidia-smi'); VK_ICD=$icd ($([ -f "$icd" ] && echo present || echo MISSING)); LD_LIBRARY_PATH(browser)=$libpath"
  local args rc=0
  timeout "${DIAG_TIMEOUT:-240}" "$PY" benchmarks/webgpu_diagnose.py --chromium "$ROOT/chrome" --timeout-s 45 \
    --out "$OUT/webgpu_diagnosis.json" ${CANDIDATES:+--candidates "$CANDIDATES"} --print-chosen \
    > "$ROOT/diagnosis.txt" 2>&1 || rc=$?
  if [ $rc = 0 ]; then head -n -1 "$ROOT/diagnosis.txt"; args=$(tail -n 1 "$ROOT/diagnosis.txt"); else cat "$ROOT/diagnosis.txt"; fi
  [ $diag_only = 1 ] && { grep -v "dbus\|Floss\|^$" "$CHROME_STDERR" | tail -n 25 | cut -c1-400; return 0; }
  if [ -n "${BROWSER_ARGS:-}" ]; then
    args=$BROWSER_ARGS
  elif [ $rc != 0 ]; then
    [ "${ALLOW_SOFTWARE:-0}" = 1 ] || { echo "no hardware WebGPU adapter (see $OUT/webgpu_diagnosis.json): no benchmark"; return 3; }
    args=""
  fi
  echo "benchmark launch flags (besides chromium_args' defaults): ${args:-none}"
  [ -f "$ROOT/release/manifest.json" ] || { echo "no release assembled yet" >&2; return 1; }
  [ $latency = 1 ] && { timeout "${LATENCY_TIMEOUT:-240}" "$PY" benchmarks/playground_latency.py "$ROOT/release" \
    --webgpu-standalone --chromium "$ROOT/chrome" --chromium-args "$args" --webgpu-warmup "${WARMUP:-3}" \
    --webgpu-iters "$iters" --webgpu-load-timeout-s "${LOAD_TIMEOUT:-200}" --webgpu-limit-s "${WEBGPU_LIMIT_S:-120}" \
    --out "$OUT/playground_latency_webgpu.json" || echo "playground_latency exit $?"; }
  if [ $webcam = 1 ]; then
    timeout "${WEBCAM_TIMEOUT:-240}" "$PY" benchmarks/webcam_fps.py "$ROOT/release" --backend webgpu \
      --chromium "$ROOT/chrome" --chromium-args "$args" --rounds "${WEBCAM_ROUNDS:-3}" --warmup "${WEBCAM_WARMUP:-3}" \
      --frames "${WEBCAM_FRAMES:-30}" ${WEBCAM_FILES:+--files "$WEBCAM_FILES"} --out "$OUT/webcam_fps_webgpu.json" \
      ${WEBCAM_FRAMES_OUT:+--frames-out "$WEBCAM_FRAMES_OUT"} || echo "webcam_fps exit $?"
  fi
}

cmd=${1:-}; shift || true
case $cmd in
  prepare) prepare "$@";;
  assemble) assemble "$@";;
  run) run "$@";;
  *) echo "usage: $0 prepare | assemble | run [--diagnose-only] [--no-webcam] [--no-latency] [--iters N]" >&2; exit 2;;
esac
