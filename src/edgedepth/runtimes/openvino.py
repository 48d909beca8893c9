"""OpenVINO runner (CPU plugin) reading the same ``.onnx`` file as ONNX Runtime.

Compiled with ``INFERENCE_NUM_THREADS = threads``, ``PERFORMANCE_HINT = LATENCY`` and ``INFERENCE_PRECISION_HINT =
f32``: left to itself, OpenVINO computes in bf16 on CPUs with AMX/AVX512-BF16 (e.g. the H200 host's Xeon) — a silent
precision change.  ``inference_precision`` reports what the plugin actually chose.  ``precision="bf16"`` (``--backend
openvino-bf16``) asks for that on purpose: on a Xeon with AMX it took 0.40x (2 threads) / 0.46x (16 threads) of
OpenVINO FP32's time at 518x686, rel-L2 5.1e-03 vs float64 (results/cpu_int8_xeon.json); a CPU that cannot compute
in bf16 is a one-line error, never a silent FP32 run under that name.
"""

from __future__ import annotations

import numpy as np

from ..errors import EdgedepthError
from ..extras import require
from . import FileRunner, default_output_names


def _ov():
    return require("openvino")


class OpenVINORunner(FileRunner):
    """Compile once on OpenVINO's CPU plugin, then run: ``run(x[1,3,H,W]) -> depth[1,H,W]`` (the first output;
    ``run_all``: every output).  ``size``: (H, W) a
    file with symbolic height and width is reshaped to before compiling (static shapes: OpenVINO's fast path)."""

    def __init__(self, path: str, threads: int = 2, precision: str = "f32", size: tuple[int, int] | None = None,
                 free_dims: dict | None = None):
        """``free_dims``: ONNX Runtime's named dynamic dims, unused here (the model is reshaped to ``size``)."""
        ov = _ov()
        self.path, self.threads = path, threads
        self.name = "openvino-cpu"
        core = ov.Core()
        cfg = {"INFERENCE_NUM_THREADS": int(threads), "PERFORMANCE_HINT": "LATENCY",
               "INFERENCE_PRECISION_HINT": precision}
        try:
            model = core.read_model(path)
            if size is not None and model.inputs[0].get_partial_shape().is_dynamic:
                model.reshape({model.inputs[0].get_any_name(): [1, 3, int(size[0]), int(size[1])]})
            self._c = core.compile_model(model, "CPU", cfg)
        except Exception as e:  # RuntimeError with a multi-line C++ message
            raise EdgedepthError(f"OpenVINO could not compile {path!r}: {' '.join(str(e).split())[:300]}") from None
        chosen = self._c.get_property("INFERENCE_PRECISION_HINT")  # an ov.Type: "f32", "bf16", "f16"
        self.inference_precision = chosen.get_type_name() if hasattr(chosen, "get_type_name") else str(chosen)
        if precision == "bf16" and self.inference_precision != "bf16":
            caps = core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")
            raise EdgedepthError(f"this CPU cannot compute in bfloat16 (OpenVINO chose {self.inference_precision}; "
                                 f"its capabilities: {', '.join(caps)}): use --backend openvino")
        (i,), outs = self._c.inputs, self._c.outputs
        self.input_shape = tuple(int(d) for d in i.get_shape())
        self.output_shape = tuple(int(d) for d in outs[0].get_shape())
        self.output_names = default_output_names([o.get_any_name() for o in outs])
        self._req = self._c.create_infer_request()

    def run(self, x: np.ndarray) -> np.ndarray:
        self._req.infer([self._checked(x)])
        return np.array(self._req.get_output_tensor(0).data, dtype=np.float32).reshape(self.output_shape)

    def run_all(self, x: np.ndarray) -> dict[str, np.ndarray]:
        self._req.infer([self._checked(x)])
        return {n: np.array(self._req.get_output_tensor(i).data, dtype=np.float32).reshape(self.output_shape)
                for i, n in enumerate(self.output_names)}

    def close(self) -> None:
        self._req = None
        self._c = None
