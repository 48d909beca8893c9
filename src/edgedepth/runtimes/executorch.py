"""ExecuTorch runner over ``executorch.runtime`` (the pybindings shipped in the ``executorch`` wheel).

The Python runtime registers XNNPACK (plus QNN/OpenVINO) only: XNNPACK ``.pte`` files run here; Vulkan/WebGPU ones
fail to load with a one-line error naming the missing backend.  ``threads`` sets ExecuTorch's threadpool, which is
process-wide (the last runner created wins; the threadpool is reset only when the count changes).
"""

from __future__ import annotations

import numpy as np

from ..errors import EdgedepthError
from . import FileRunner, default_output_names, native_log_captured

METHOD = "forward"


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _load_reason(lines: list) -> str:
    """The runtime's own last words before a failure, without the cpuinfo chatter and the [file:line] prefix."""
    useful = [ln.split("] ", 1)[-1].strip() for ln in lines if ln.strip() and "cpuinfo" not in ln]
    return f" ({useful[-1]})" if useful else ""


def _set_threads(threads: int) -> None:
    from executorch.extension.pybindings import portable_lib

    if threads and portable_lib._threadpool_get_thread_count() != threads:
        portable_lib._unsafe_reset_threadpool(int(threads))


class ExecuTorchRunner(FileRunner):
    """Load a .pte once, then run it: ``run(x[1,3,H,W]) -> depth[1,H,W]`` (the first output; ``run_all``: every
    output; a .pte names none, so the others are ``output_<i>`` unless ``formats`` names them)."""

    def __init__(self, path: str, threads: int = 2, backends: list[str] = ()):
        """``backends``: the delegate ids the file needs (``formats.pte.describe``; ``formats.pte.open_runner``
        checks the file and passes them)."""
        self.path, self.threads = path, threads
        self.backends = sorted(backends)
        self.name = "executorch-" + ("+".join(b.removesuffix("Backend").lower() for b in self.backends) or "portable")
        import torch  # noqa: F401  (the runtime's tensors are torch tensors)
        from executorch.runtime import Runtime

        log: list[str] = []
        with native_log_captured(log, show=False):
            rt = Runtime.get()
        missing = [b for b in self.backends if not rt.backend_registry.is_available(b)]
        if missing:
            raise EdgedepthError(
                f"{path!r} needs ExecuTorch backend(s) {', '.join(missing)}, which this Python runtime does not "
                f"register (it has: {', '.join(rt.backend_registry.registered_backend_names)})")
        log = []
        try:
            with native_log_captured(log, show=False):
                _set_threads(threads)  # creating the threadpool probes cpuinfo, which logs to fd 2
                self._program = rt.load_program(path)
                self._method = self._program.load_method(METHOD)
        except Exception as e:  # the pybindings raise RuntimeError/ValueError with the runtime's error code
            raise EdgedepthError(f"ExecuTorch could not load {path!r}: {_one_line(e)}{_load_reason(log)}") from None
        if self._method is None:
            raise EdgedepthError(f"{path!r} has no {METHOD!r} method")
        meta = self._method.metadata
        if meta.num_inputs() != 1 or meta.num_outputs() < 1:
            raise EdgedepthError(f"{path!r}: expected 1 input and at least 1 output, got {meta.num_inputs()} and "
                                 f"{meta.num_outputs()}")
        self.input_shape = tuple(int(s) for s in meta.input_tensor_meta(0).sizes())
        self.output_shape = tuple(int(s) for s in meta.output_tensor_meta(0).sizes())
        self.output_names = default_output_names([f"output_{i}" for i in range(meta.num_outputs())])

    def run(self, x: np.ndarray) -> np.ndarray:
        import torch

        out = self._method.execute([torch.from_numpy(self._checked(x))])[0]
        return out.numpy().reshape(self.output_shape)  # a copy is not needed: the output is a fresh tensor

    def run_all(self, x: np.ndarray) -> dict[str, np.ndarray]:
        import torch

        outs = self._method.execute([torch.from_numpy(self._checked(x))])
        return {n: o.numpy().reshape(self.output_shape) for n, o in zip(self.output_names, outs)}

    def close(self) -> None:
        self._method = None
        self._program = None
