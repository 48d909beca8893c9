"""``edgedepth validate``: every artifact on every backend vs the PyTorch checkpoint it came from, same inputs.

A file with more outputs than the depth (Depth Anything 3's confidence) is compared output by output when the reference
module returns them too (a ``DepthModule`` built with the family's ``outputs``): ``metrics`` is the depth's, and
``output_metrics`` holds the same metrics for each further output, by role.

Honest failure reporting: a backend that does not compile is a result with its error, not a skipped row; a "GPU" result
bit-identical to the CPU's on every image is flagged as a probable silent CPU fallback; an FP32-enforced GPU result far
from the CPU's is flagged as probable reduced precision.
"""

from __future__ import annotations

import hashlib

import numpy as np

from .. import formats
from ..errors import EdgedepthError
from ..preprocess import normalise, pixels
from ..runtimes import BACKENDS, FP32_GPU, REFERENCE_BACKEND
from ..runtimes.torch import TorchRunner
from .parity import ParityAccumulator

FP32_SUSPECT_REL_L2 = 1e-4   # enforce_f32 GPU vs CPU beyond this: the GPU did not really compute in FP32


def _digest(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


class _References:
    """PyTorch outputs (``run_all``'s dict: the depth, and the module's further outputs), computed once per (size,
    image) and shared by all artifacts/backends; ``cache``: a dict {(size, image id): outputs} kept by the caller
    across calls (and seeded with outputs computed elsewhere)."""
    def __init__(self, module, cache: dict | None = None):
        self._module = module
        self._runners: dict = {}
        self._cache: dict = {} if cache is None else cache
        self._TorchRunner = TorchRunner

    def get(self, size, item, x):
        key = (size, item.id)
        if key not in self._cache:
            if size not in self._runners:
                self._runners[size] = self._TorchRunner(self._module, size)
            self._cache[key] = self._runners[size].run_all(x)
        return self._cache[key]


def validate(artifacts: list[str], backends: list[str], module, items, *, threads: int = 2, progress=None,
             masks: dict[str, float] | None = None, references: dict | None = None) -> list[dict]:
    """Returns one result dict per (artifact, backend it runs on); ``artifacts`` are paths or :class:`formats.Artifact`
    values.  A backend the artifact's format has not (``openvino`` for a .tflite) gives no row.  ``masks``: outputs
    used as masks, by role, with their thresholds (``ModelFamily.mask_outputs``: their metrics add ``mask_flipped``).
    ``references``: the caller's cache of PyTorch outputs, {(size, image id): {role: array}}, used and filled."""
    refs = _References(module, references)
    inputs: dict = {}
    results = []
    for art in artifacts:
        art = art if isinstance(art, formats.Artifact) else formats.open_artifact(art)
        cpu: dict = {}              # {image id: output} of the CPU row: the other backends' flags compare with it
        # Only the backends this format runs on; CPU first.
        for backend in sorted((b for b in backends if b in art.format.backends), key=lambda b: b != REFERENCE_BACKEND):
            row, g = _new_row(art, backend)
            try:
                runner = art.open_runner(backend=backend, threads=threads)
            except EdgedepthError as e:
                row.update(status="compile_failed", error=(g or {}).get("error") or str(e))
                results.append(row)
                if progress:
                    progress(len(items))
                continue
            try:
                acc, more, vs_cpu, identical = _run_items(runner, row, items, art.size, inputs, refs, cpu, progress,
                                                          masks or {})
            finally:
                runner.close()
            if row["status"] == "ok":
                row["metrics"] = acc.summary()
                if more:
                    row["output_metrics"] = {role: a.summary() for role, a in more.items()}
                row["per_image_rel_l2"] = {it.id: float(v) for it, v in zip(items, acc.per_image)}
                if backend != REFERENCE_BACKEND and cpu:
                    _flag_against_cpu(row, vs_cpu, identical == len(items))
            results.append(row)
    _mark_fp16_as_fp32(results)
    return results


def _new_row(art, backend: str) -> tuple[dict, dict | None]:
    """A result row before running, and the GPU check of a GPU backend (None otherwise)."""
    row = {"artifact": art.name, "sha256": art.sha256, "backend": backend,
           "size": list(art.size), "status": "ok", "error": None, "flags": [], "metrics": None}
    g = art.gpu_check() if BACKENDS[backend].gpu else None
    if g is not None:
        row["gpu_adapter"] = g["adapter"]
        row["gpu_fully_delegated"] = g["fully_delegated"]
        if g.get("gpu_hazards"):        # accepted, fully delegated, computed wrongly (formats.tflite._gpu_hazard)
            row["flags"].append(f"{g['gpu_hazards']} ops this GPU accelerator is known to compute wrongly "
                                "(elementwise, first input of lower rank, constant second input)")
        if g.get("validation_errors"):   # compiled "fully delegated", but a pipeline is invalid: garbage out
            row["flags"].append(f"{g['validation_errors']} WebGPU validation errors, first: "
                                f"{g['validation_error'][:200]}")
    return row, g


def _run_items(runner, row: dict, items, size, inputs: dict, refs, cpu: dict, progress, masks: dict):
    """Run every image (inputs cached per size; a uint8-input file gets the resized pixels), accumulating parity
    against the reference and, for a non-CPU row, against the CPU row's outputs (``cpu``, filled by the CPU row).
    A runtime failing mid-run sets ``row``'s status (a result, not a crash).  -> (vs reference, vs CPU, bit-identical
    to the CPU count), and ``more``: {role: accumulator} of the further outputs both the file and the reference have."""
    acc, vs_cpu, identical = ParityAccumulator(), ParityAccumulator(), 0
    more: dict[str, ParityAccumulator] = {}
    for it in items:
        key = (size, it.id)
        if key not in inputs:       # the model input, and the resized pixels for --input-dtype uint8 files
            px = pixels(it.load(), size)
            inputs[key] = (normalise(px), px)
        x, px = inputs[key]
        ref = refs.get(size, it, x)
        roles = [n for n in getattr(runner, "output_names", ("depth",))[1:] if n in ref]
        inp = px if getattr(runner, "input_dtype", "float32") == "uint8" else x
        try:
            ys = runner.run_all(inp) if roles else {"depth": runner.run(inp)}
        except (RuntimeError, EdgedepthError) as e:
            row.update(status="run_failed", error=f"on {it.id}: {' '.join(str(e).split())}")
            break
        y = ys["depth"]
        for role in ("depth", *roles):
            if not np.all(np.isfinite(ys[role])):
                row["flags"].append(f"non-finite {role} on {it.id}" if roles else f"non-finite output on {it.id}")
            if role != "depth":
                more.setdefault(role, ParityAccumulator(masks.get(role))).add(ys[role], ref[role])
        acc.add(y, ref["depth"])
        if row["backend"] == REFERENCE_BACKEND:
            cpu[it.id] = y
        elif it.id in cpu:
            vs_cpu.add(y, cpu[it.id])
            identical += int(_digest(y) == _digest(cpu[it.id]))
        if progress:
            progress(1)
    return acc, more, vs_cpu, identical


def _flag_against_cpu(row: dict, vs_cpu, all_identical: bool) -> None:
    """A GPU row bit-identical to the CPU on every image (a silent CPU fallback), or an FP32-enforced GPU row far from
    it (reduced-precision compute), is flagged."""
    backend = row["backend"]
    row["vs_cpu_rel_l2"] = vs_cpu.summary()["pooled_rel_l2"]
    if BACKENDS[backend].gpu and all_identical:
        row["flags"].append("bit-identical to the CPU on every image: probable silent CPU fallback")
    if BACKENDS[backend].gpu and not BACKENDS[backend].reduced_precision and row["vs_cpu_rel_l2"] > FP32_SUSPECT_REL_L2:
        row["flags"].append(f"enforce_f32 GPU differs from CPU by rel-L2 {row['vs_cpu_rel_l2']:.2e}: "
                            "probable reduced-precision compute")


def _mark_fp16_as_fp32(results: list[dict]) -> None:
    """Default-precision GPU bit-identical to FP32-enforced GPU: the device ran FP32 anyway (e.g. no shader-f16)."""
    by = {(r["artifact"], r["backend"]): r for r in results}
    for (art, b), r in by.items():
        f32 = by.get((art, FP32_GPU))
        if BACKENDS[b].reduced_precision and f32 and r["metrics"] and f32["metrics"] and \
                r["metrics"]["pooled_rel_l2"] == f32["metrics"]["pooled_rel_l2"] and \
                r["metrics"]["max_abs_diff"] == f32["metrics"]["max_abs_diff"]:
            r["flags"].append("same result as enforce_f32: this device computed FP32 under the default policy")
