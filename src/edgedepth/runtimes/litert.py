"""LiteRT runner over ``ai_edge_litert``'s CompiledModel API.

Backends: ``cpu`` (XNNPACK, T threads), ``gpu`` (GPU accelerator alone, ``enforce_f32=True``: FP32 compute),
``gpu-fp16`` (GPU accelerator alone, LiteRT's default precision policy, which may compute in FP16).
GPU backends never fall back to the CPU silently: compilation with the GPU alone fails if any op is not delegated.
"""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys

import numpy as np

from ..errors import EdgedepthError
from . import FileRunner, default_output_names, native_log_captured
from .vulkan import ensure_vulkan_env

BACKENDS = ("cpu", "gpu", "gpu-fp16")
SIGNATURE = "serving_default"

# LiteRT GpuOptions flags edgedepth sets on every GPU compile, chosen by measurement (benchmarks/gpu_options.py,
# benchmarks/results/gpu_options.json: one interleaved run of every flag on the release's GPU-facing files, H200):
# allow_src_quantized_fc_conv_ops made the INT8 file 9 % faster (its FC/conv read int8 weights on the GPU) and left
# the float files alone; every other flag was within noise or slower (benchmark_mode +7 %).
GPU_OPTIONS: dict = {"allow_src_quantized_fc_conv_ops": True}
# Flags refused, with the reason: a measured crash must never be one keyword away.
GPU_OPTIONS_REFUSED = {"constant_tensor_sharing": "crashes the process (segmentation fault) in ai-edge-litert 2.3.0 "
                                                  "on SwiftShader and the H200 (tests/test_gpu_options.py)"}


_RE_NATIVE_ERROR = re.compile(r"^(?:ERROR: \[[^\]]*\]|E\d{4} [^\]]*\])\s*(\S.*)$")


_FLAG_RUN = """import sys
from edgedepth.runtimes.vulkan import ensure_vulkan_env; ensure_vulkan_env()
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
from ai_edge_litert.options import GpuOptions, Options
cm = CompiledModel.from_file(sys.argv[1], options=Options(hardware_accelerators=HA.GPU,
                                                          gpu_options=GpuOptions(**{sys.argv[2]: True})))
ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
cm.run_by_index(0, ib, ob)
print("ran")
"""


def gpu_flag_run(path: str, flag: str, timeout: float = 300.0) -> dict:
    """Compile and run ``path`` once on the GPU with one GpuOptions ``flag`` set, in a child process (a flag may crash
    it: GPU_OPTIONS_REFUSED).  -> {flag, returncode, ran, signal} (returncode None: it did not end within
    ``timeout``).  The canary of tests/test_gpu_options.py and benchmarks/gpu_options.py."""
    try:
        p = subprocess.run([sys.executable, "-c", _FLAG_RUN, path, flag], capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"flag": flag, "returncode": None, "ran": False, "signal": None, "timeout_s": timeout}
    return {"flag": flag, "returncode": p.returncode, "ran": "ran" in p.stdout,
            "signal": -p.returncode if p.returncode < 0 else None}


def _native_errors(lines: list[str]) -> list[str]:
    """The error lines of a captured LiteRT log (``ERROR: [file:line] text``, absl ``E0000 ... file:line] text``)."""
    return [m.group(1).strip() for m in map(_RE_NATIVE_ERROR.match, lines) if m]


def _gpu_flags(extra: dict | None) -> dict:
    """GPU_OPTIONS updated with ``extra`` (GpuOptions keyword -> bool); a refused or unknown flag is a one-line error."""
    import inspect

    from ai_edge_litert.options import GpuOptions

    known = set(inspect.signature(GpuOptions).parameters) - {"enforce_f32"}
    flags = {**GPU_OPTIONS, **(extra or {})}
    for k in flags:
        if k in GPU_OPTIONS_REFUSED:
            raise EdgedepthError(f"GPU option {k!r} refused: {GPU_OPTIONS_REFUSED[k]}")
        if k not in known:
            raise EdgedepthError(f"unknown GPU option {k!r} (choose from {', '.join(sorted(known))})")
    return flags


def _options(backend: str, threads: int, gpu_options: dict | None = None):
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
    from ai_edge_litert.options import CpuOptions, GpuOptions, Options

    if backend == "cpu":
        return Options(hardware_accelerators=HA.CPU, cpu_options=CpuOptions(num_threads=threads))
    if backend in ("gpu", "gpu-fp16"):
        ensure_vulkan_env()
        return Options(hardware_accelerators=HA.GPU,
                       gpu_options=GpuOptions(enforce_f32=(backend == "gpu"), **_gpu_flags(gpu_options)))
    raise EdgedepthError(f"unknown LiteRT backend {backend!r} (choose from {', '.join(BACKENDS)})")


class LiteRTRunner(FileRunner):
    """Compile a .tflite once, then run it: ``run(x[1,3,H,W]) -> depth[1,H,W]`` (the signature's first output);
    ``run_all`` every output (signature order).

    The file is not checked here: open it through ``edgedepth.formats`` (``open_runner``) for one-line errors on a
    missing/corrupt/truncated file."""

    def __init__(self, path: str, backend: str = "cpu", threads: int = 2, gpu_options: dict | None = None):
        """``gpu_options``: GpuOptions flags on top of ``GPU_OPTIONS`` (GPU backends only)."""
        from ai_edge_litert.compiled_model import CompiledModel

        self.path, self.backend, self.threads = path, backend, threads
        self.name = f"litert-{backend}"
        log: list[str] = []
        try:
            with native_log_captured(log):
                self._cm = CompiledModel.from_file(path, options=_options(backend, threads, gpu_options))
        except RuntimeError as e:
            msg = re.sub(r"^(?:ERROR: \[[^\]]*\]\s*(?:└\s*)?)+", "", " ".join(str(e).split()))
            reasons = [r for r in dict.fromkeys(_native_errors(log)) if r not in msg]   # what LiteRT logged
            msg = "; ".join(([msg] if msg else []) + reasons)[:500] or " ".join(str(e).split())
            raise EdgedepthError(f"LiteRT could not compile {path!r} for {backend}: {msg}") from None
        sigs = self._cm.get_signature_list()
        if SIGNATURE not in sigs:
            raise EdgedepthError(f"{path!r} has no {SIGNATURE!r} signature (has: {', '.join(sigs)})")
        inp = self._cm.get_input_tensor_details(SIGNATURE)
        out = self._cm.get_output_tensor_details(SIGNATURE)
        (self._in,) = inp.values()
        names = list(sigs[SIGNATURE]["outputs"])        # the signature's order: its output buffers' order
        self._outs = [out[n] for n in names]
        self._out = self._outs[0]
        self.output_names = default_output_names(names)
        self.input_shape = tuple(self._in["shape"])
        self.input_dtype = "uint8" if self._in.get("dtype") == "uint8" else "float32"
        self.output_shape = tuple(self._out["shape"])
        self.fully_accelerated = self._cm.is_fully_accelerated()
        with native_log_captured([]):
            self._ib = self._cm.create_input_buffers(0)
            self._ob = self._cm.create_output_buffers(0)
        self._n_out = int(np.prod(self.output_shape))
        self._first_run = True

    def run(self, x: np.ndarray) -> np.ndarray:
        return self._logged(self._run, x)

    def run_all(self, x: np.ndarray) -> dict[str, np.ndarray]:
        return self._logged(self._run_all, x)

    def _logged(self, fn, x):
        if self._first_run:         # the first call sets up another LiteRT environment, which logs as it does
            self._first_run = False
            with native_log_captured([]):
                return fn(x)
        return fn(x)

    def _run(self, x: np.ndarray) -> np.ndarray:
        self._ib[0].write(self._checked(x))
        self._cm.run_by_index(0, self._ib, self._ob)
        return self._ob[0].read(self._n_out, np.float32).reshape(self.output_shape)

    def _run_all(self, x: np.ndarray) -> dict[str, np.ndarray]:
        out = {"depth": self._run(x)}
        for i, (name, o) in enumerate(zip(self.output_names[1:], self._outs[1:]), 1):
            shape = tuple(o["shape"])
            out[name] = self._ob[i].read(int(np.prod(shape)), np.float32).reshape(shape)
        return out

    def close(self) -> None:
        if getattr(self, "_cm", None) is None:
            return
        with native_log_captured([]):   # releasing the model logs a line per accelerator
            self._ib = self._ob = None
            self._cm = None

    def __del__(self):                  # a runner dropped without close(): release it as quietly
        with contextlib.suppress(Exception):
            self.close()
