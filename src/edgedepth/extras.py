"""The optional stacks of ``pip install edgedepth[EXTRA]`` and the modules each brings (pyproject.toml's
``[project.optional-dependencies]`` lists the pinned packages; tests/test_packaging.py checks the two agree).

A module of an extra that is not installed is one line naming the extra (:func:`missing`), never "unexpected
ModuleNotFoundError".
"""

from __future__ import annotations

import importlib
from types import ModuleType

from .errors import EdgedepthError

# extra -> (top-level modules it provides, how to install it when pip's extra alone is not enough)
EXTRAS: dict[str, tuple[tuple[str, ...], str]] = {
    "onnx": (("onnx", "onnxscript", "onnxruntime", "openvino"), "pip install 'edgedepth[onnx]'"),
    "executorch": (("executorch",), "pip install 'edgedepth[executorch]'"),
    # depth-anything-3 declares dependencies that clash with edgedepth's pins: its model code goes in without them
    "da3": (("depth_anything_3", "einops", "addict", "omegaconf"),
            "pip install 'edgedepth[da3]' && pip install --no-deps depth-anything-3==0.1.1"),
    "browser": (("playwright",), "pip install 'edgedepth[browser]'"),
    "cluster": (("ray",), "pip install 'edgedepth[cluster]'"),
}


def missing(module: str | None) -> str | None:
    """One line for a missing module that an extra provides (``module`` as ModuleNotFoundError.name gives it, dotted
    or not), or None when no extra provides it."""
    top = (module or "").split(".")[0]
    for extra, (modules, how) in EXTRAS.items():
        if top in modules:
            return f"{top!r} is not installed: it comes with the {extra!r} extra ({how})"
    return None


def require(module: str) -> ModuleType:
    """``import module``; not installed: an EdgedepthError naming the extra that brings it (one line, exit 2)."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        if isinstance(e, ModuleNotFoundError) and e.name and e.name.split(".")[0] != module.split(".")[0]:
            raise               # a broken installation of that module, not a missing one: not ours to rename
        raise EdgedepthError(missing(module) or f"{module!r} is not installed") from None
