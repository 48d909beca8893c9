"""Runtimes: one runner interface (``run(x) -> depth``) over PyTorch eager, LiteRT CPU/GPU, ExecuTorch, ONNX Runtime
and OpenVINO, and the registry :data:`RUNTIMES`: which runner runs files of which format on which ``--backend``.

Formats are named here by their manifest name only (``Format.name``); checking and describing a file stays with
``edgedepth.formats``, which opens its runner through :func:`open_runner`.  Adding a runtime = one module here plus
one :class:`Runtime` line (its format and backend).

Every runner takes the float32 model input [1,3,H,W] (numpy) and returns float32 depth [1,H,W] (numpy): ``run`` the
file's first output, the depth; ``run_all`` every output by name (Depth Anything 3's files: depth and confidence).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import os
import sys
import tempfile
from typing import Protocol

import numpy as np
from ..errors import EdgedepthError


@dataclasses.dataclass(frozen=True)
class Backend:
    """What a ``--backend`` value is, asked instead of comparing its name (issue 29): where it computes and at which
    precision.  Which runner opens a format's files on it: :data:`RUNTIMES`."""
    name: str
    gpu: bool = False               # runs on the GPU (a GPU check applies; a CPU-identical result is suspicious)
    reduced_precision: bool = False     # computes below FP32: FP16 (the GPU delegate's default) or bfloat16
    help: str = ""


BACKENDS: dict[str, Backend] = {b.name: b for b in (
    Backend("cpu", help="the format's CPU runtime (LiteRT XNNPACK, ExecuTorch, ONNX Runtime)"),
    Backend("gpu", gpu=True, help="LiteRT's GPU accelerator with FP32 enforced"),
    Backend("gpu-fp16", gpu=True, reduced_precision=True, help="LiteRT's GPU accelerator, default precision (FP16)"),
    Backend("openvino", help="OpenVINO on the CPU (FP32 enforced)"),
    Backend("openvino-bf16", reduced_precision=True,
            help="OpenVINO on the CPU in bfloat16 (CPUs with AMX or AVX512-BF16: OpenVINO's own default there)"),
)}


@dataclasses.dataclass(frozen=True)
class Runtime:
    """The runner of ``format`` files on ``backend`` (a :data:`BACKENDS` key)."""

    format: str                 # formats.Format.name: "tflite", "pte", "onnx"
    backend: str
    runner: str                 # "module:Class" under edgedepth.runtimes, imported when a file is opened
    options: tuple = ()         # fixed keyword arguments of the runner, as (name, value) pairs
    input_dtypes: tuple[str, ...] = ("float32",)


RUNTIMES: dict[tuple[str, str], Runtime] = {(r.format, r.backend): r for r in (
    Runtime("tflite", "cpu", "litert:LiteRTRunner", (("backend", "cpu"),), ("float32", "uint8")),
    Runtime("tflite", "gpu", "litert:LiteRTRunner", (("backend", "gpu"),), ("float32", "uint8")),
    Runtime("tflite", "gpu-fp16", "litert:LiteRTRunner", (("backend", "gpu-fp16"),), ("float32", "uint8")),
    Runtime("pte", "cpu", "executorch:ExecuTorchRunner"),
    Runtime("onnx", "cpu", "onnxruntime:OrtRunner"),
    Runtime("onnx", "openvino", "openvino:OpenVINORunner"),
    Runtime("onnx", "openvino-bf16", "openvino:OpenVINORunner", (("precision", "bf16"),)),
)}


def backends_of(format_name: str) -> tuple[str, ...]:
    """The --backend values files of a format run on here, in registry order."""
    return tuple(b for f, b in RUNTIMES if f == format_name)


def open_runner(format_name: str, backend: str, path: str, threads: int = 2, **options):
    """The runner of ``path`` (a ``format_name`` file, already checked by its format) on ``backend``; ``options``:
    the runner's own (a dynamic file's ``size``, an ExecuTorch file's delegates)."""
    rt = RUNTIMES.get((format_name, backend))
    if rt is None:
        raise EdgedepthError(f"{path!r}: a .{format_name} file runs on --backend "
                             f"{', '.join(backends_of(format_name))} here, not {backend}")
    module, cls = rt.runner.split(":")
    runner = getattr(importlib.import_module(f"{__name__}.{module}"), cls)
    return runner(path, threads=threads, **dict(rt.options), **options)


REFERENCE_BACKEND = "cpu"       # the other backends' rows are compared with this one's (silent fallback, precision)
FP32_GPU = next(b.name for b in BACKENDS.values() if b.gpu and not b.reduced_precision)   # the reduced one's twin


class Runner(Protocol):
    name: str          # e.g. "litert-cpu", "litert-gpu", "torch-eager"
    input_shape: tuple[int, int, int, int]
    input_dtype: str = "float32"    # "uint8": a file exported with --input-dtype uint8 takes resized RGB pixels

    output_names: tuple[str, ...] = ("depth",)

    def run(self, x: np.ndarray) -> np.ndarray: ...

    def run_all(self, x: np.ndarray) -> dict[str, np.ndarray]: ...

    def close(self) -> None: ...


def default_output_names(file_names) -> tuple[str, ...]:
    """What ``run_all`` names a file's outputs before anything says more (``formats`` names them by the release
    manifest or the file's family: ``ModelFamily.outputs``): the first is the depth, the others keep the file's own
    names (an ONNX file's "confidence", a .tflite's "output_1")."""
    return ("depth", *file_names[1:])


class FileRunner:
    """Shared by the runners of exported files (and PyTorch eager): the fixed input shape and dtype, and their check."""
    input_shape: tuple[int, int, int, int]
    input_dtype: str = "float32"    # "uint8": a file exported with --input-dtype uint8 takes resized RGB pixels
    # What run_all names each output, in the file's order: "depth" (output 0, what run returns) first
    output_names: tuple[str, ...] = ("depth",)

    _closed = False

    def __init_subclass__(cls, **kwargs):
        """Each runner's own ``run``/``run_all`` refuse to run after its ``close`` (a one-line error, not the released
        runtime's AttributeError or crash)."""
        super().__init_subclass__(**kwargs)
        for name in ("run", "run_all", "close"):
            if name in cls.__dict__:
                setattr(cls, name, (_closing if name == "close" else _open_only)(cls.__dict__[name]))

    @property
    def size(self) -> tuple[int, int]:
        return int(self.input_shape[2]), int(self.input_shape[3])

    def run_all(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """Every output of the model, by name (:attr:`output_names`), each float32 [1,H,W]; a one-output file: the
        depth alone (``run``'s)."""
        return {"depth": self.run(x)}

    def _checked(self, x: np.ndarray) -> np.ndarray:
        """``x`` as the runtime takes it; an input of another shape or dtype than the model's is refused, never cast
        (uint8 pixels cast to float are not the normalised tensor: a wrong map, silently)."""

        x = np.asarray(x)
        if x.shape != self.input_shape:
            raise EdgedepthError(f"input shape {x.shape} does not match the model's {self.input_shape}")
        if x.dtype != self.input_dtype:
            if self.input_dtype == "uint8":
                raise EdgedepthError("this file takes uint8 RGB pixels [1,3,H,W] (exported with input_dtype uint8; "
                                     f"normalisation is in the graph), not a {x.dtype} tensor")
            raise EdgedepthError(f"this model takes the normalised float32 tensor [1,3,H,W] (preprocess.preprocess), "
                                 f"not {x.dtype}" + (" pixels (a file exported with input_dtype uint8 takes those)"
                                                     if x.dtype == np.uint8 else ""))
        return np.ascontiguousarray(x)


def _open_only(method):
    @functools.wraps(method)
    def run(self, x):
        if self._closed:
            raise EdgedepthError(f"this {getattr(self, 'name', 'model')} runner was closed: open a new one to run "
                                 "again")
        return method(self, x)
    return run


def _closing(method):
    @functools.wraps(method)
    def close(self) -> None:
        self._closed = True
        method(self)
    return close


def native_log_shown() -> bool:
    """Whether native libraries may write their own log lines (LiteRT INFO, the converter's absl/TF lines) to stderr:
    only with ``EDGEDEPTH_VERBOSE`` set (the CLI's ``--verbose`` sets it)."""
    return os.environ.get("EDGEDEPTH_VERBOSE", "") not in ("", "0")


@contextlib.contextmanager
def native_log_captured(lines: list, show: bool | None = None):
    """Send fd 2 to a temp file while the block runs, then append what was written there to ``lines``.

    Native runtimes log from C++ straight to fd 2, which Python's own redirection cannot catch: LiteRT dozens of INFO
    lines per model load (no Python API raises its minimum severity), ExecuTorch cpuinfo probing and the *reason* of a
    load failure (its exception only carries an error code).  ``show`` (default :func:`native_log_shown`)
    leaves fd 2 alone.  Python's writes to stderr inside the block are captured too.  The file has a name
    (``$TMPDIR/edgedepth-native-log-*.txt``, removed after the block) so that a native crash inside the block, which
    ends the process before anything can be shown, leaves its last words behind."""
    try:
        buf = None if (native_log_shown() if show is None else show) else \
            tempfile.NamedTemporaryFile(prefix="edgedepth-native-log-", suffix=".txt")
    except OSError:             # no writable temp folder: then the lines show
        buf = None
    if buf is None:
        yield lines
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with buf:
        os.dup2(buf.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            buf.seek(0)
            lines.extend(buf.read().decode("utf-8", "replace").splitlines())
