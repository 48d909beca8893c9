"""Release folder: a typed recipe -> exported files + manifest.json + generated model card + LICENSE/NOTICE.

``recipe`` (what to build, validated), ``build`` (the staging/gate/write logic), ``manifest`` (what a runtime or a
browser checks: SHA-256s, I/O contract, provenance; ``verify``), ``modelcard`` (README.md from the manifest only).
"""

from .build import BUILD_REPORT, PRESET_SIZES, build, fp32_noise, parity_gate
from .recipe import Recipe, load_recipe

__all__ = ["BUILD_REPORT", "PRESET_SIZES", "Recipe", "build", "fp32_noise", "load_recipe", "parity_gate"]
