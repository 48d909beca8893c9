"""A release recipe: a Python file defining ``RECIPE`` (a dict), read into a typed, validated :class:`Recipe`.

A recipe is code: :func:`load_recipe` executes it (like ``setup.py``), so run only recipes you trust.  The default
recipe is this checkout's ``recipes/depth-anything-v2-small.py`` (:func:`default_recipe`), never a file of the current
folder.  Every field is checked once, here, with a one-line error naming the field; the build and the CLI only see the
typed object.  The recipe file's SHA-256 goes into the manifest's provenance.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import runpy

from ..errors import EdgedepthError
from ..formats import onnx as onnxfmt, pte, tflite
from ..preprocess import parse_size


@dataclasses.dataclass(frozen=True)
class ExecuTorchPart:
    sizes: tuple[str, ...]
    backends: tuple[str, ...]
    precisions: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Recipe:
    name: str
    base_model: str
    model: str                                  # checkpoint spec (HF_ID@REV, folder, synthetic...)
    sizes: tuple[str, ...]                      # "HxW", multiples of the 14-pixel patch
    rewrites: str                               # "default": edgedepth.rewrites.PIPELINE defaults
    litert_precisions: tuple[str, ...]
    executorch: ExecuTorchPart | None
    parity_images: int
    onnx_precisions: tuple[str, ...] = ()       # ONNX files at the first size, onnx-community layout (onnx/model*.onnx)
    litert_pixel_input: tuple[str, ...] = ()    # LiteRT precisions also written at the first size taking uint8 pixels
    parity_data: tuple[str, ...] = ()           # committed `edgedepth validate --json` reports (matched by sha256)
    latency_data: tuple[str, ...] = ()          # committed `edgedepth bench --json` reports (matched by sha256)
    path: str = ""
    sha256: str = ""

    def with_overrides(self, *, model: str | None = None, sizes: list[str] | None = None,
                       parity_images: int | None = None) -> "Recipe":
        """The recipe with the CLI's overrides applied (validated like the file's own values)."""
        r = dataclasses.replace(self, model=model or self.model, sizes=tuple(sizes or self.sizes),
                                parity_images=self.parity_images if parity_images is None else parity_images)
        _check_sizes("sizes", r.sizes)
        if r.parity_images < 0:
            raise EdgedepthError(f"parity images {r.parity_images}: must be >= 0")
        return r


def _check_sizes(field: str, sizes) -> None:
    if not sizes:
        raise EdgedepthError(f"recipe field {field!r} lists no size")
    for s in sizes:
        parse_size(s)                           # one-line error for anything that is not HxW in multiples of 14


def _field(d: dict, key: str, kind, where: str):
    if key not in d:
        raise EdgedepthError(f"recipe {where}: missing field {key!r}")
    if not isinstance(d[key], kind):
        raise EdgedepthError(f"recipe {where}: field {key!r} should be {getattr(kind, '__name__', kind)}")
    return d[key]


def from_dict(d: dict, *, path: str = "", sha256: str = "") -> Recipe:
    """Validate a RECIPE dict (see recipes/depth-anything-v2-small.py) into a :class:`Recipe`."""
    where = os.path.basename(path) or "RECIPE"
    lit = _field(d, "litert", dict, where)
    precisions = tuple(_field(lit, "precisions", list, where))
    bad = [p for p in precisions if p not in tflite.PRECISIONS]
    if bad:
        raise EdgedepthError(f"recipe {where}: litert precision(s) {bad} unknown (choose from {tflite.PRECISIONS})")
    pixel = tuple(lit.get("pixel_input", []))
    if [p for p in pixel if p not in tflite.PIXEL_INPUT_PRECISIONS]:
        raise EdgedepthError(f"recipe {where}: litert pixel_input {list(pixel)} (choose from "
                             f"{tflite.PIXEL_INPUT_PRECISIONS}: float files, for the GPU)")
    et = None
    if d.get("executorch"):
        e = d["executorch"]
        et = ExecuTorchPart(tuple(_field(e, "sizes", list, where)), tuple(_field(e, "backends", list, where)),
                            tuple(_field(e, "precisions", list, where)))
        _check_sizes("executorch.sizes", et.sizes)
        if [b for b in et.backends if b not in pte.BACKENDS] or [p for p in et.precisions if p not in pte.PRECISIONS]:
            raise EdgedepthError(f"recipe {where}: executorch backends {et.backends} / precisions {et.precisions} "
                                 f"(choose from {pte.BACKENDS} / {pte.PRECISIONS})")
    onnx_precisions = ()
    if d.get("onnx"):
        onnx_precisions = tuple(_field(d["onnx"], "precisions", list, where))
        if not onnx_precisions or [p for p in onnx_precisions if p not in onnxfmt.PRECISIONS]:
            raise EdgedepthError(f"recipe {where}: onnx precisions {list(onnx_precisions)} "
                                 f"(choose from {onnxfmt.PRECISIONS})")
    rewrites = d.get("rewrites", "default")
    if rewrites != "default":
        raise EdgedepthError(f"recipe {where}: rewrites {rewrites!r}: only 'default' is supported")
    r = Recipe(
        name=_field(d, "name", str, where), base_model=_field(d, "base_model", str, where),
        model=_field(d, "model", str, where), sizes=tuple(_field(d, "sizes", list, where)), rewrites=rewrites,
        litert_precisions=precisions, executorch=et,
        parity_images=int(_field(_field(d, "parity", dict, where), "images", int, where)),
        onnx_precisions=onnx_precisions, litert_pixel_input=pixel, parity_data=tuple(d.get("parity_data", [])),
        latency_data=tuple(d.get("latency_data", [])),
        path=path, sha256=sha256)
    _check_sizes("sizes", r.sizes)
    return r


def default_recipe() -> str:
    """``recipes/depth-anything-v2-small.py`` of the repository this package is in (src layout: ../../../recipes),
    never the current folder's."""
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.join(here, os.pardir, os.pardir, os.pardir)
    return os.path.normpath(os.path.join(repo, "recipes", "depth-anything-v2-small.py"))


def _run(path: str) -> dict:
    """Execute the recipe file; anything it raises (SystemExit included) is one EdgedepthError line."""
    try:
        return runpy.run_path(path, run_name="edgedepth_recipe")
    except EdgedepthError:
        raise
    except SystemExit as e:
        code = "" if e.code is None else repr(e.code)
        raise EdgedepthError(f"recipe {path!r} stopped with sys.exit({code}) instead of defining RECIPE") from None
    except Exception as e:
        raise EdgedepthError(f"recipe {path!r} raised {type(e).__name__}: {' '.join(str(e).split())[:300]}") from None


def load_recipe(path: str | None = None) -> Recipe:
    """Run the recipe file (Python: it is executed; default: :func:`default_recipe`) and validate its RECIPE dict."""
    if path is None:
        path = default_recipe()
        if not os.path.isfile(path):
            raise EdgedepthError(f"the default recipe {path!r} is missing (edgedepth is installed without its "
                                 "repository): pass a recipe file")
    if not os.path.isfile(path):
        raise EdgedepthError(f"recipe {path!r} does not exist")
    data = open(path, "rb").read()
    ns = _run(path)
    if not isinstance(ns.get("RECIPE"), dict):
        raise EdgedepthError(f"recipe {path!r} defines no RECIPE dict")
    for inc in ns.get("INCLUDES", ()):     # recipes built on another recipe: its bytes are part of the provenance
        try:
            data += open(inc, "rb").read()
        except (OSError, TypeError) as e:
            raise EdgedepthError(f"recipe {path!r}: cannot read included file {inc!r}: "
                                 f"{getattr(e, 'strerror', None) or e}") from None
    return from_dict(ns["RECIPE"], path=path, sha256=hashlib.sha256(data).hexdigest())
