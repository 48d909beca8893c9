"""``edgedepth validate``: every artifact on every backend vs the PyTorch checkpoint it came from, same inputs.

Honest failure reporting: a backend that does not compile is a result with its error, not a skipped row; a "GPU" result
bit-identical to the CPU's on every image is flagged as a probable silent CPU fallback; an FP32-enforced GPU result far
from the CPU's is flagged as probable reduced precision.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np

from .errors import EdgedepthError
from .fsutil import sha256_file
from .parity import ParityAccumulator

FP32_SUSPECT_REL_L2 = 1e-4   # enforce_f32 GPU vs CPU beyond this: the GPU did not really compute in FP32


def find_artifacts(paths: list[str]) -> list[str]:
    """Files as given; a folder contributes its .tflite files (sorted)."""
    out = []
    for p in paths:
        if os.path.isdir(p):
            found = sorted(os.path.join(p, f) for f in os.listdir(p) if f.endswith((".tflite", ".pte")))
            if not found:
                raise EdgedepthError(f"folder {p!r} holds no .tflite or .pte files")
            out += found
        elif not os.path.exists(p):
            raise EdgedepthError(f"artifact {p!r} does not exist")
        else:
            out.append(p)
    from .manifest import verify_next_to

    for p in out:
        verify_next_to(p)  # files inside a release folder must match its manifest before they are measured
    return out


def _digest(a: np.ndarray) -> str:
    return hashlib.sha1(np.ascontiguousarray(a).tobytes()).hexdigest()


class _References:
    """PyTorch outputs, computed once per (size, image) and shared by all artifacts/backends."""

    def __init__(self, module):
        from .runtimes.torch import TorchRunner

        self._module = module
        self._runners: dict = {}
        self._cache: dict = {}
        self._TorchRunner = TorchRunner

    def get(self, size, item, x):
        key = (size, item.id)
        if key not in self._cache:
            if size not in self._runners:
                self._runners[size] = self._TorchRunner(self._module, size)
            self._cache[key] = self._runners[size].run(x)
        return self._cache[key]


def validate(artifacts: list[str], backends: list[str], module, items, *, threads: int = 2, progress=None) -> list[dict]:
    """Returns one result dict per (artifact, backend)."""
    from .inspect import describe, gpu_check
    from .inspect_pte import describe_pte
    from .preprocess import preprocess
    from .runtimes import open_runner

    refs = _References(module)
    inputs: dict = {}
    results = []
    for path in artifacts:
        info = describe_pte(path) if path.endswith(".pte") else describe(path)
        size = tuple(info["inputs"][0]["shape"][2:4])
        cpu_digests: dict = {}
        cpu_outputs: dict = {}
        order = sorted(backends, key=lambda b: b != "cpu")  # CPU first: the fallback/precision flags compare with it
        for backend in order:
            row = {"artifact": os.path.basename(path), "sha256": sha256_file(path), "backend": backend,
                   "size": list(size), "status": "ok", "error": None, "flags": [], "metrics": None}
            g = None
            if backend.startswith("gpu") and path.endswith(".tflite"):
                g = gpu_check(path)
                row["gpu_adapter"] = g["adapter"]
                row["gpu_fully_delegated"] = g["fully_delegated"]
            try:
                runner = open_runner(path, backend=backend, threads=threads)
            except EdgedepthError as e:
                row.update(status="compile_failed", error=(g or {}).get("error") or str(e))
                results.append(row)
                if progress:
                    progress(len(items))
                continue
            acc, vs_cpu = ParityAccumulator(), ParityAccumulator()
            identical_to_cpu = 0
            for it in items:
                key = (size, it.id)
                if key not in inputs:
                    inputs[key] = preprocess(it.load(), size)
                x = inputs[key]
                ref = refs.get(size, it, x)
                try:
                    y = runner.run(x)
                except (RuntimeError, EdgedepthError) as e:  # a runtime failing mid-run is a result, not a crash
                    row.update(status="run_failed", error=f"on {it.id}: {' '.join(str(e).split())}")
                    break
                if not np.all(np.isfinite(y)):
                    row["flags"].append(f"non-finite output on {it.id}")
                acc.add(y, ref)
                if backend == "cpu":
                    cpu_digests[it.id] = _digest(y)
                    cpu_outputs[it.id] = y
                elif it.id in cpu_outputs:
                    vs_cpu.add(y, cpu_outputs[it.id])
                    identical_to_cpu += int(_digest(y) == cpu_digests[it.id])
                if progress:
                    progress(1)
            runner.close()
            if row["status"] != "ok":
                results.append(row)
                continue
            row["metrics"] = acc.summary()
            row["per_image_rel_l2"] = {it.id: float(v) for it, v in zip(items, acc.per_image)}
            if backend != "cpu" and cpu_digests:
                row["vs_cpu_rel_l2"] = vs_cpu.summary()["pooled_rel_l2"]
                if identical_to_cpu == len(items):
                    row["flags"].append("bit-identical to the CPU on every image: probable silent CPU fallback")
                if backend == "gpu" and row["vs_cpu_rel_l2"] > FP32_SUSPECT_REL_L2:
                    row["flags"].append(f"enforce_f32 GPU differs from CPU by rel-L2 {row['vs_cpu_rel_l2']:.2e}: "
                                        "probable reduced-precision compute")
            results.append(row)
    _mark_fp16_as_fp32(results)
    return results


def _mark_fp16_as_fp32(results: list[dict]) -> None:
    """Default-precision GPU bit-identical to FP32-enforced GPU: the device ran FP32 anyway (e.g. no shader-f16)."""
    by = {(r["artifact"], r["backend"]): r for r in results}
    for (art, b), r in by.items():
        f32 = by.get((art, "gpu"))
        if b == "gpu-fp16" and f32 and r["metrics"] and f32["metrics"] and \
                r["metrics"]["pooled_rel_l2"] == f32["metrics"]["pooled_rel_l2"] and \
                r["metrics"]["max_abs_diff"] == f32["metrics"]["max_abs_diff"]:
            r["flags"].append("same result as enforce_f32: this device computed FP32 under the default policy")
