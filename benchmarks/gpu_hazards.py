"""A LiteRT GPU delegate bug, measured: elementwise ops it accepts and computes wrongly, and which files have them.

Found bisecting Depth Anything 3's GPU divergence (docs/spikes/depth-anything-3/bisect_FINDINGS.md): ADD / MUL / SUB /
DIV whose first input has a lower rank than the output and whose second input is a constant return row 0 of the first
input on every row under LiteRT's GPU accelerator (FP32 enforced, fully delegated, no warning); the CPU is right.
``edgedepth.formats.tflite._gpu_hazard`` is the rule; this script measures it and counts it in files:

1. one-op files (``transport.one_op_model``: the schema bindings), every op x second input (constant [1,1,C],
   constant [1,N,C], runtime [1,N,C]) at two widths: CPU and GPU vs numpy (rel-L2), GPU vs "row 0 everywhere";
2. the release folder's .tflite files and a plain (no rewrites) FP32 conversion of the same model: hazard counts.

    .venv/bin/python benchmarks/gpu_hazards.py [--release out/depth-anything-v2-small] [--size 518x686]
        -> benchmarks/results/gpu_hazards.json  (GPU: SwiftShader here; ~3 min with the plain conversion)
"""

from __future__ import annotations

import argparse
import glob
import importlib.metadata
import json
import os
import platform
import tempfile
import time

import numpy as np

from edgedepth.formats import tflite
from edgedepth.fsutil import write_bytes_atomic
from edgedepth.runtimes.vulkan import ensure_vulkan_env
from edgedepth.formats.tflite.transport import one_op_model
from edgedepth.verify.parity import rel_l2

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULT = os.path.join(ROOT, "benchmarks", "results", "gpu_hazards.json")
OPS = {"ADD": np.add, "MUL": np.multiply, "SUB": np.subtract, "DIV": np.divide}
SECONDS = ("constant [1,1,C]", "constant [1,N,C]", "runtime [1,N,C]")
N = 17                          # CLS + 4x4 patches: Depth Anything at 56x56


def _run(path: str, inputs, n_out: int, gpu: bool) -> tuple[np.ndarray, bool]:
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
    from ai_edge_litert.options import CpuOptions, GpuOptions, Options

    opts = (Options(hardware_accelerators=HA.GPU, gpu_options=GpuOptions(enforce_f32=True)) if gpu else
            Options(hardware_accelerators=HA.CPU, cpu_options=CpuOptions(num_threads=1)))
    cm = CompiledModel.from_file(path, options=opts)
    ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
    for buf, x in zip(ib, inputs):
        buf.write(np.ascontiguousarray(x, np.float32))
    cm.run_by_index(0, ib, ob)
    return ob[0].read(n_out, np.float32), bool(cm.is_fully_accelerated())


def one_op_rows(tmp: str) -> list[dict]:
    rng = np.random.default_rng(0)
    rows = []
    for c in (32, 384):
        for op, fn in OPS.items():
            for second in SECONDS:
                b_shape = [1, 1, c] if "[1,1,C]" in second else [1, N, c]
                a = rng.standard_normal((N, c)).astype(np.float32)
                b = (rng.standard_normal(b_shape) + 3).astype(np.float32)     # away from 0: DIV
                const = second.startswith("constant")
                path = os.path.join(tmp, f"{op}_{c}_{len(rows)}.tflite")
                one_op_model(path, op, [N, c], b_shape, [1, N, c], b if const else None)
                inputs = [a] if const else [a, b]
                ref = fn(a, b).ravel()
                cpu, _ = _run(path, inputs, N * c, gpu=False)
                gpu, full = _run(path, inputs, N * c, gpu=True)
                row0 = fn(np.broadcast_to(a[:1], a.shape), b).ravel()
                rows.append({"op": op, "first": [N, c], "second": second.replace("C", str(c)).replace("N", str(N)),
                             "flagged": tflite.describe(path)["gpu_hazards"]["count"], "gpu_fully_delegated": full,
                             "cpu_vs_numpy": rel_l2(cpu, ref), "gpu_vs_numpy": rel_l2(gpu, ref),
                             "gpu_vs_row0": rel_l2(gpu, row0)})
    return rows


def file_rows(release: str, size: str, tmp: str) -> list[dict]:
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.preprocess import parse_size

    paths = sorted(glob.glob(os.path.join(release, "*.tflite")))
    h, w = parse_size(size)
    plain = tflite.export(DepthModule(load_checkpoint("synthetic", quiet=True).model), h, w, tmp, ("fp32",),
                          plain=True)
    rows = []
    for p in paths + list(plain.values()):
        info = tflite.describe(p)
        rows.append({"file": os.path.basename(p), "plain": p not in paths, "ops": info["ops"],
                     "gpu_hazards": info["gpu_hazards"]["count"],
                     "example": (info["gpu_hazards"]["examples"] or [None])[0]})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--release", default=os.path.join(ROOT, "out", "depth-anything-v2-small"))
    ap.add_argument("--size", default="518x686", help="the plain conversion's size")
    ap.add_argument("--out", default=RESULT)
    args = ap.parse_args()
    ensure_vulkan_env()
    with tempfile.TemporaryDirectory(prefix="gpu-hazards-") as tmp:
        ops = one_op_rows(tmp)
        files = file_rows(args.release, args.size, tmp)
    adapter = tflite.gpu_check(os.path.join(args.release, files[0]["file"]))["adapter"]
    rep = {"kind": "edgedepth.gpu_hazards", "date": time.strftime("%Y-%m-%d"),
           "litert": importlib.metadata.version("ai-edge-litert"), "gpu_adapter": adapter,
           "cpu": platform.processor() or platform.machine(),
           "rule": "ADD/MUL/SUB/DIV, first input of lower rank than the output and > 1 element, second input constant",
           "one_op": ops, "files": files, "command": "benchmarks/gpu_hazards.py"}
    write_bytes_atomic(args.out, (json.dumps(rep, indent=2) + "\n").encode())
    bad = [r for r in ops if r["gpu_vs_numpy"] > 1e-6]
    print(f"{len(bad)} of {len(ops)} one-op files wrong on the GPU; flagged: {sum(r['flagged'] > 0 for r in ops)}; "
          f"files with hazards: {[f['file'] for f in files if f['gpu_hazards']]}")


if __name__ == "__main__":
    main()
