"""Artifact formats: the one place that knows file formats.

Each format is one module (``tflite``, ``pte``, ``onnx``) offering ``check(path)``, ``describe(path) -> dict``,
``format_text(info) -> str``, ``open_runner(path, backend, threads)``, ``file_name(...)`` and ``export(...)``; the
registry below maps a file suffix to it.  Everything else asks the registry (``format_of``, ``open_artifact``) instead
of switching on file extensions.  Adding a format = adding one module and one ``Format`` line here.

An :class:`Artifact` is a file described and hashed once, then passed along (validate, bench, release, the API).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from typing import Callable

from .. import runtimes
from ..errors import EdgedepthError
from ..fsutil import sha256_file
from ..models import DEFAULT_STEM, family_of


@dataclasses.dataclass(frozen=True)
class Format:
    name: str                   # "tflite", "pte"
    suffix: str                 # ".tflite"
    target_name: str            # the export target's name: "litert", "executorch", "onnx"
    gpu_check: bool             # has a GPU-delegation check (LiteRT's GPU accelerator)
    module_name: str
    # what the format can do, asked instead of switching on its name (issue 29):
    dynamic_size: bool = False          # export can leave height/width symbolic (--dynamic-size)
    fp16_safe: bool = False             # the fp16_safe rewrite applies (LiteRT's GPU FP16 precision)
    export_backends: bool = False       # export takes backends (ExecuTorch delegates: --et-backend)
    browser_runtime: str | None = None  # the playground's runtime for it, if any
    notice: str = ""                    # its "Modifications" lines in a release's NOTICE (present files only)
    hub_layout: bool = False            # release files in the onnx-community layout (ORT / OpenVINO / transformers.js)
    card_delegation: Callable[[dict], str] = lambda entry: ""   # the model card's "delegation" cell for an entry

    @property
    def backends(self) -> tuple[str, ...]:
        """The --backend values its files run on here (edgedepth.runtimes.RUNTIMES)."""
        return runtimes.backends_of(self.name)

    @property
    def module(self):
        return importlib.import_module(self.module_name)


def _tflite_delegation(entry: dict) -> str:
    return {True: "yes", False: "**no**", None: "not checked"}[entry.get("gpu_fully_delegated")]


def _pte_delegation(entry: dict) -> str:
    d, b = entry["delegation"], entry["backend"]
    return (f"{b}: all {d['delegated_nodes']} nodes delegated" if d["fully_delegated"] else
            f"{b}: {d['delegated_nodes']} delegated, {d['non_delegated_nodes']} on portable kernels")


FORMATS: dict[str, Format] = {f.suffix: f for f in (
    Format("tflite", ".tflite", "litert", True, "edgedepth.formats.tflite",
           fp16_safe=True, browser_runtime="LiteRT.js",
           notice="- converted from PyTorch to LiteRT (.tflite) with litert-torch; INT8 files quantised with "
                  "ai-edge-quantizer\n  (dynamic_wi8_afp32: int8 weights, float activations);\n",
           card_delegation=_tflite_delegation),
    Format("pte", ".pte", "executorch", False, "edgedepth.formats.pte", export_backends=True,
           card_delegation=_pte_delegation),
    Format("onnx", ".onnx", "onnx", False, "edgedepth.formats.onnx", dynamic_size=True,
           browser_runtime="ONNX Runtime Web",
           notice="- exported to ONNX (onnx/) with torch.onnx; FP16 with onnxruntime's float16 converter, INT8 with\n"
                  "  onnxruntime quantize_dynamic;\n",
           hub_layout=True, card_delegation=lambda entry: "runtime's choice (ONNX Runtime / OpenVINO / transformers.js)"),
)}
NAMES = {f.name: f for f in FORMATS.values()}               # manifest "format" field -> Format


def entry_format(entry: dict) -> Format | None:
    """The Format of a manifest entry (its "format" field), or None for a file of no model format (config, card)."""
    return NAMES.get(entry.get("format"))

BACKENDS = tuple(dict.fromkeys(b for f in FORMATS.values() for b in f.backends))  # every --backend value
SUFFIXES = tuple(FORMATS)
TARGETS = {f.target_name: f for f in FORMATS.values()}      # export --target NAME


def target(name: str) -> Format:
    if name not in TARGETS:
        raise EdgedepthError(f"unknown export target {name!r} (choose from {', '.join(TARGETS)})")
    return TARGETS[name]


def is_artifact(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in FORMATS


def format_of(path: str) -> Format:
    """The format of ``path`` by its suffix; a one-line error for anything else."""
    fmt = FORMATS.get(os.path.splitext(path)[1].lower())
    if fmt is None:
        raise EdgedepthError(f"{path!r} is not a model file of a known format ({', '.join(SUFFIXES)})")
    return fmt


@dataclasses.dataclass
class Artifact:
    """One model file: described (which also checks it) and hashed once."""

    path: str
    format: Format
    sha256: str
    info: dict

    @property
    def name(self) -> str:
        return os.path.basename(self.path)

    @property
    def input_shape(self) -> tuple[int, ...]:
        """The shape edgedepth feeds it: a dynamic-size file's symbolic H, W replaced by the size it runs at."""
        shape = tuple(self.info["inputs"][0]["shape"])
        return (*shape[:2], *self.info["size"]) if self.info.get("dynamic") else shape

    @property
    def size(self) -> tuple[int, int]:
        return int(self.input_shape[2]), int(self.input_shape[3])

    def describe(self) -> dict:
        return self.info

    def format_text(self) -> str:
        return self.format.module.format_text(self.info)

    def open_runner(self, backend: str = "cpu", threads: int = 2):
        return self.format.module.open_runner(self.path, backend=backend, threads=threads)

    def gpu_check(self, **kw) -> dict | None:
        """Compile on the GPU accelerator alone (child process); None for formats without a GPU check here."""
        return self.format.module.gpu_check(self.path, info=self.info, **kw) if self.format.gpu_check else None


def open_artifact(path: str) -> Artifact:
    """Check, describe and hash ``path`` (one-line errors for missing, empty, corrupt or truncated files)."""
    fmt = format_of(path)
    info = fmt.module.describe(path)
    return Artifact(path=path, format=fmt, sha256=sha256_file(path), info=info)


def open_runner(path: str, backend: str = "cpu", threads: int = 2, size: tuple[int, int] | None = None):
    """The runner for a model file, by its format (a shortcut for ``open_artifact(path).open_runner(...)``).  ``size``:
    the (H, W) to run a dynamic-size file at (formats with ``dynamic_size``); any other file must have that size."""
    fmt = format_of(path)
    if size is not None and fmt.dynamic_size:
        return fmt.module.open_runner(path, backend=backend, threads=threads, size=tuple(size))
    runner = fmt.module.open_runner(path, backend=backend, threads=threads)
    if size is not None and tuple(runner.size) != tuple(size):
        runner.close()
        raise EdgedepthError(f"{path!r} takes {runner.size[0]}x{runner.size[1]} only, not {size[0]}x{size[1]} "
                             "(--size chooses the size of a checkpoint or of a dynamic-size .onnx)")
    return runner


def find_artifacts(paths: list[str]) -> list[str]:
    """Files as given; a folder contributes its model files of every registered format (sorted)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if is_artifact(f))
            if not found:
                raise EdgedepthError(f"folder {p!r} holds no model files ({', '.join(SUFFIXES)})")
            out += found
        elif not os.path.exists(p):
            raise EdgedepthError(f"artifact {p!r} does not exist")
        else:
            out.append(p)
    return out


@dataclasses.dataclass
class Exported:
    """One file written by :func:`export`."""

    path: str
    format: str                 # Format.name
    precision: str
    backend: str | None         # ExecuTorch backend; None for LiteRT (the runtime picks CPU/GPU)
    rewrites: list[str]         # rewrites that changed something, in the order run
    stats: dict                 # format-specific export facts (e.g. ExecuTorch delegation counts)


def check_input_dtype(fmt: Format, precisions, input_dtype: str) -> None:
    """One-line error unless ``input_dtype`` is float32 or the format writes those precisions with a pixel input
    (LiteRT: ``tflite.PIXEL_INPUT_PRECISIONS``); the CLI calls it before loading a checkpoint."""
    if input_dtype == "float32":
        return
    pix = getattr(fmt.module, "PIXEL_INPUT_PRECISIONS", ())
    if not pix or not set(precisions) <= set(pix):
        raise EdgedepthError(f"--input-dtype {input_dtype} is for LiteRT float files: use --target litert "
                             f"--precision {','.join(pix or ('fp32',))}")


def export(model, height: int, width: int, out_dir: str, *, target_name: str = "litert", precisions=("fp32", "int8"),
           rewrites="default", backends=None, verbose: bool = False, progress=None,
           stem: str | None = None, input_dtype: str = "float32", dynamic: bool = False) -> list[Exported]:
    """Export a checkpoint's model (``Checkpoint.model``) at one size to ``out_dir`` through the format registry.

    ``rewrites``: ``"default"`` (the target's default rewrites), names, or ``()`` for the plain baseline.  Every target
    prepares the model with :func:`edgedepth.rewrites.prepare`; files are written atomically.  ``stem`` starts every file
    name (``Checkpoint.file_stem``: the family member); default ``depth_anything_v2_small``.  ``input_dtype`` "uint8"
    (LiteRT only): files that take resized uint8 pixels, normalisation in the graph (``tflite.pixel_input``).
    ``dynamic`` (formats with ``dynamic_size``, ONNX): height and width symbolic, any multiples of 14.
    """
    fmt = target(target_name)
    check_input_dtype(fmt, precisions, input_dtype)
    blocker = family_of(model).export_blocker
    if blocker:
        raise EdgedepthError(blocker, option="model")
    if dynamic and not fmt.dynamic_size:
        raise EdgedepthError(f"--dynamic-size: {fmt.target_name} files have a fixed input size (ONNX files can be dynamic)")
    extra = {"input_dtype": input_dtype} if input_dtype != "float32" else {}
    extra |= {"dynamic": True} if dynamic else {}
    return fmt.module.export_model(model, height, width, out_dir, precisions=tuple(precisions), rewrites=rewrites,
                                   backends=backends, verbose=verbose, progress=progress, stem=stem or DEFAULT_STEM,
                                   **extra)
