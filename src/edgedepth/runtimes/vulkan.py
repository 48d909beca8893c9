"""Where LiteRT's GPU (WebGPU-over-Vulkan) accelerator finds a driver.

A real GPU is used when the environment names its driver (``VK_ICD_FILENAMES`` or ``VK_DRIVER_FILES``, e.g. the NVIDIA
ICD on the lent H200).  Otherwise, on a machine with Debian's chromium installed, SwiftShader (a CPU Vulkan driver) is
used so GPU code paths can be tested without a GPU; the log then names "SwiftShader Device".
"""

from __future__ import annotations

import os

SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json"


def vulkan_env(base: dict | None = None) -> dict:
    """Environment for a process that will use LiteRT's GPU accelerator."""
    env = dict(os.environ if base is None else base)
    if not env.get("VK_ICD_FILENAMES") and not env.get("VK_DRIVER_FILES") and os.path.exists(SWIFTSHADER_ICD):
        env["VK_ICD_FILENAMES"] = SWIFTSHADER_ICD
    return env


def ensure_vulkan_env() -> None:
    """Apply :func:`vulkan_env` to this process (must run before the first GPU model is compiled)."""
    os.environ.update({k: v for k, v in vulkan_env().items() if k.startswith("VK_")})
