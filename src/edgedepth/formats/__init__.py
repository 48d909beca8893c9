"""Artifact formats: the one place that knows file formats.

Each format is a :class:`~.base.Format` subclass in its own package (``tflite/``, ``pte/``, ``onnx/``), listed once in
``FORMATS`` below.  Everything else asks the registry (``format_of``, ``open_artifact``, ``target``, ``entry_format``)
and the class instead of switching on names or file extensions.  Adding a format = one package and one ``FORMATS`` entry.

An :class:`Artifact` is a file described and hashed once, then passed along (validate, bench, release, the API).
"""

from __future__ import annotations

import dataclasses
import os

from ..errors import EdgedepthError
from ..fsutil import regular_file, sha256_file
from ..models import DEFAULT_STEM, family_of, family_of_member, member_of_file_name
from . import onnx, pte, tflite
from .base import CliOption, Exported, Format, ReleaseStep


FORMATS: tuple[Format, ...] = (tflite.FORMAT, pte.FORMAT, onnx.FORMAT)   # every format, in release order
BY_SUFFIX = {f.suffix: f for f in FORMATS}
NAMES = {f.name: f for f in FORMATS}                        # manifest "format" field -> Format


def entry_format(entry: dict) -> Format | None:
    """The Format of a manifest entry (its "format" field), or None for a file of no model format (config, card)."""
    return NAMES.get(entry.get("format"))


BACKENDS = tuple(dict.fromkeys(b for f in FORMATS for b in f.backends))  # every --backend value
SUFFIXES = tuple(BY_SUFFIX)
TARGETS = {f.target_name: f for f in FORMATS}               # export --target NAME


def target(name: str) -> Format:
    if name not in TARGETS:
        raise EdgedepthError(f"unknown export target {name!r} (choose from {', '.join(TARGETS)})")
    return TARGETS[name]


def is_artifact(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in BY_SUFFIX


def format_of(path: str) -> Format:
    """The format of ``path`` by its suffix; a one-line error for anything else."""
    fmt = BY_SUFFIX.get(os.path.splitext(path)[1].lower())
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
        return self.format.format_text(self.info)

    def open_runner(self, backend: str = "cpu", threads: int = 2):
        return name_outputs(self.format.open_runner(self.path, backend=backend, threads=threads),
                            member_of_file_name(self.path))

    def gpu_check(self, **kw) -> dict | None:
        """Compile on the GPU accelerator alone (child process); None for formats without a GPU check here."""
        return self.format.gpu_check(self.path, info=self.info, **kw)


def open_artifact(path: str) -> Artifact:
    """Check, describe and hash ``path`` (one-line errors for missing, empty, corrupt or truncated files, and for
    anything but a regular file: :func:`edgedepth.fsutil.regular_file`)."""
    fmt = format_of(path)
    regular_file(path, "model file")
    info = fmt.describe(path)
    return Artifact(path=path, format=fmt, sha256=sha256_file(path), info=info)


def name_outputs(runner, member):
    """``runner`` with its outputs named (``run_all``'s keys) by the contract of the family ``member`` belongs to
    (``ModelFamily.member_outputs``: Depth Anything 3's depth, confidence or sky) when the file has as many; else (no
    member: a renamed file) the runner's own names: the depth, then the file's ("confidence" in an ONNX file,
    "output_1")."""
    n = len(getattr(runner, "output_names", ()))
    roles = family_of_member(member).member_outputs(member) if member is not None and n > 1 else ()
    if len(roles) == n > 1:
        runner.output_names = roles
    return runner


def open_runner(path: str, backend: str = "cpu", threads: int = 2, size: tuple[int, int] | None = None):
    """The runner for a model file, by its format (a shortcut for ``open_artifact(path).open_runner(...)``).  ``size``:
    the (H, W) to run a dynamic-size file at (formats with ``dynamic_size``); any other file must have that size.
    Its outputs are named by :func:`name_outputs` (the family its file name says; the CLI then by its manifest's)."""
    fmt = format_of(path)
    regular_file(path, "model file")        # before a runtime opens it by name
    if size is not None and fmt.dynamic_size:
        runner = fmt.open_runner(path, backend=backend, threads=threads, size=tuple(size))
        return name_outputs(runner, member_of_file_name(path))
    runner = name_outputs(fmt.open_runner(path, backend=backend, threads=threads), member_of_file_name(path))
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
        else:
            out.append(regular_file(p, "model file"))     # a FIFO, device or /proc file: one line
    return out


def check_exportable(model) -> None:
    """A one-line error (``--model``) when the model's family cannot be exported yet (``ModelFamily.export_blocker``)."""
    blocker = family_of(model).export_blocker
    if blocker:
        raise EdgedepthError(blocker, option="model")


def export(model, height: int, width: int, out_dir: str, *, target_name: str = "litert", precisions=("fp32", "int8"),
           rewrites="default", verbose: bool = False, progress=None, stem: str | None = None,
           **options) -> list[Exported]:
    """Export a checkpoint's model (``Checkpoint.model``) at one size to ``out_dir`` through the format registry.

    ``rewrites``: ``"default"`` (the target's default rewrites), names, or ``()`` for the plain baseline.  Every target
    prepares the model with :func:`edgedepth.rewrites.prepare`; files are written atomically.  ``stem`` starts every file
    name (``Checkpoint.file_stem``: the family member); default ``depth_anything_v2_small``.  ``options``: the
    target's own (its ``cli_options``: LiteRT ``input_dtype``, ``fp16_safe``; ExecuTorch ``backends``; ONNX
    ``dynamic_size``); another format's option is a one-line error.  Callers keep ``out_dir`` out of release folders
    (``release.outdir.check_export_dir``: the CLI and the API do).
    """
    fmt = target(target_name)
    fmt.check_options(precisions, options)
    check_exportable(model)
    return fmt.export(model, height, width, out_dir, precisions=tuple(precisions), rewrites=rewrites, verbose=verbose,
                      progress=progress, stem=stem or DEFAULT_STEM, **options)
