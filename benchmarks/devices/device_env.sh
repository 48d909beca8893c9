# Sourced by the H200 device scripts (gpu_device.sh, ladder_device.sh): unpack the carried Vulkan loader + libglvnd
# (.gl), install the carried wheels (.whl) for the device's Python, point Vulkan at NVIDIA's driver, make $OUT.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
