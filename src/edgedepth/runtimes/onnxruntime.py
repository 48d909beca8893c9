"""ONNX Runtime runner (CPU execution provider) over an ``.onnx`` file.

Session: all graph optimisations on (ORT's default, ``ORT_ENABLE_ALL``), ``intra_op_num_threads = threads``, one
inter-op thread, sequential execution.  A file with symbolic height and width is opened at one size with ORT's
free-dimension overrides (static shapes from session creation on): measured 1.005x the static file's time at 518x686,
vs 1.09x left symbolic (benchmarks/onnx_dynamic.py); ``predict``, which runs each photo at its own size, opens a
session per size as the size changes (``formats.onnx.PhotoSizedRunner``).  The file is not checked here: open it
through ``edgedepth.formats``.
"""

from __future__ import annotations

import numpy as np

from ..errors import EdgedepthError
from ..extras import require
from . import FileRunner, default_output_names


def _ort():
    return require("onnxruntime")


class OrtRunner(FileRunner):
    """Create an ORT session once, then run it: ``run(x[1,3,H,W]) -> depth[1,H,W]`` (the first output; ``run_all``:
    every output).  ``size``: (H, W) of a file with
    symbolic height and width (the runner then takes that size only); a static file's own size otherwise.
    ``free_dims``: {dim_param: value} fixed when the session is created (the same size, as static shapes)."""

    def __init__(self, path: str, threads: int = 2, size: tuple[int, int] | None = None,
                 free_dims: dict[str, int] | None = None):
        ort = _ort()
        self.path, self.threads = path, threads
        self.name = "onnxruntime-cpu"
        so = ort.SessionOptions()
        so.intra_op_num_threads = int(threads)
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.log_severity_level = 3
        for name, value in (free_dims or {}).items():     # the file's symbolic dims, fixed for this session
            so.add_free_dimension_override_by_name(name, int(value))
        try:
            self._s = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
        except Exception as e:  # onnxruntime raises its own Fail/InvalidGraph/NotImplemented classes
            raise EdgedepthError(f"ONNX Runtime could not load {path!r}: {' '.join(str(e).split())[:300]}") from None
        (i,), outs = self._s.get_inputs(), self._s.get_outputs()
        self._in, self._out, self._outs = i.name, outs[0].name, [o.name for o in outs]
        self.output_names = default_output_names(self._outs)
        symbolic = [isinstance(d, str) or d is None for d in i.shape]
        if any(symbolic) and size is None:
            raise EdgedepthError(f"{path!r} has a dynamic input {i.shape}: give the size to run it at")
        self.input_shape = (1, 3, *map(int, size)) if any(symbolic) else tuple(int(d) for d in i.shape)
        self.output_shape = (1, *self.input_shape[2:])

    def run(self, x: np.ndarray) -> np.ndarray:
        (y,) = self._s.run([self._out], {self._in: self._checked(x)})
        return np.asarray(y, dtype=np.float32).reshape(self.output_shape)

    def run_all(self, x: np.ndarray) -> dict[str, np.ndarray]:
        ys = self._s.run(self._outs, {self._in: self._checked(x)})
        return {n: np.asarray(y, dtype=np.float32).reshape(self.output_shape) for n, y in zip(self.output_names, ys)}

    def close(self) -> None:
        self._s = None
