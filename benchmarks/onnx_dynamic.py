"""Dynamic vs static ONNX (issue 28): does giving the release's ``onnx/`` files symbolic height and width (what
transformers.js needs) cost time in ONNX Runtime or OpenVINO?

Full synthetic model, 518x686.  Four files: FP32 and INT8 (``quantize_dynamic``), each static (``formats.onnx
.DEFAULT_REWRITES``: position embedding frozen for 518x686) and dynamic (``DYNAMIC_REWRITES``: the embedding resized in
the graph, the head's size symbolic).  Timed in ONE interleaved run (``verify.bench.run_interleaved``; per call = input
+ run + output; 2 threads), ONNX Runtime CPU EP and OpenVINO CPU (f32; OpenVINO reshapes the dynamic file to static
shapes before compiling, as edgedepth's runner does).  Two more ONNX Runtime FP32 variants say where a difference comes
from: the dynamic file with ORT's free-dimension overrides (``height``/``width`` fixed at session creation: static
shapes, same graph) and a static export of the dynamic file's graph (position embedding resized in the graph, no frozen
constant).  Parity of the dynamic FP32 file vs PyTorch FP32 / float64 at three sizes.

    .venv/bin/python benchmarks/onnx_dynamic.py [--dir out/onnx_dynamic] [--rounds 4 --warmup 2 --iters 5]

Files are cached in --dir (reruns time only).  Writes benchmarks/results/onnx_dynamic.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch

from edgedepth import formats
from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.formats import onnx as onnxfmt
from edgedepth.fsutil import sha256_file
from edgedepth.verify.bench import environment, run_interleaved
from edgedepth.verify.parity import rel_l2

H, W = 518, 686
PARITY_SIZES = [(518, 686), (518, 518), (686, 518)]


def _export(ckpt, folder: str, dynamic: bool) -> dict[str, str]:
    sub = os.path.join(folder, "dynamic" if dynamic else "static")
    want = {p: os.path.join(sub, onnxfmt.file_name(H, W, p, dynamic=dynamic)) for p in ("fp32", "int8")}
    if not all(os.path.exists(p) for p in want.values()):
        print(f"export {'dynamic' if dynamic else 'static'}", file=sys.stderr, flush=True)
        formats.export(ckpt.model, H, W, sub, target_name="onnx", precisions=("fp32", "int8"), dynamic_size=dynamic)
    return want


class _OverriddenOrt:
    """ONNX Runtime on a dynamic file with ``height``/``width`` fixed by free-dimension overrides."""

    def __new__(cls, path: str, threads: int):
        import onnxruntime as ort

        from edgedepth.runtimes.onnxruntime import OrtRunner

        runner = OrtRunner(path, threads=threads, size=(H, W))
        so = ort.SessionOptions()
        so.intra_op_num_threads, so.inter_op_num_threads = threads, 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        for name, value in zip(onnxfmt.DYNAMIC_DIMS, (H, W)):
            so.add_free_dimension_override_by_name(name, value)
        runner._s = ort.InferenceSession(path, sess_options=so, providers=["CPUExecutionProvider"])
        runner.name = "onnxruntime-cpu (free dims fixed)"
        return runner


def _static_unfrozen(ckpt, folder: str) -> str:
    """A static export of the dynamic file's rewrites (no freeze_position_embedding)."""
    from edgedepth.rewrites import prepare

    path = os.path.join(folder, "static_unfrozen", onnxfmt.file_name(H, W, "fp32"))
    if not os.path.exists(path):
        print("export static, unfrozen", file=sys.stderr, flush=True)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        module, _ = prepare(ckpt.model, H, W, list(onnxfmt.DYNAMIC_REWRITES))
        onnxfmt._write(onnxfmt.to_model_proto(module, H, W), path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="out/onnx_dynamic")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/onnx_dynamic.json")
    a = ap.parse_args()
    ckpt = load_checkpoint("synthetic", quiet=True)
    files = {kind: _export(ckpt, a.dir, kind == "dynamic") for kind in ("static", "dynamic")}
    info = {f"{kind} {p}": {"ops": onnxfmt.describe(path)["ops"], "bytes": os.path.getsize(path),
                            "sha256": sha256_file(path)}
            for kind, d in files.items() for p, path in d.items()}
    parity = []
    ref = DepthModule(ckpt.model).eval()
    for hw in PARITY_SIZES:
        x = np.random.default_rng(1).standard_normal((1, 3, *hw), dtype=np.float32)
        with torch.no_grad():
            y32 = ref(torch.from_numpy(x)).numpy()
            y64 = DepthModule(ckpt.model).double()(torch.from_numpy(x).double()).numpy()
        ckpt.model.float()
        r = onnxfmt.open_runner(files["dynamic"]["fp32"], "cpu", a.threads, size=hw)
        y = r.run(x)
        r.close()
        parity.append({"size": list(hw), "rel_l2_vs_torch_fp32": rel_l2(y, y32), "rel_l2_vs_float64": rel_l2(y, y64),
                       "torch_fp32_rel_l2_vs_float64": rel_l2(y32, y64)})
        print(f"parity {hw}: {parity[-1]}", file=sys.stderr, flush=True)
    variants = {}
    for backend in ("cpu", "openvino"):
        for p in ("fp32", "int8"):
            for kind in ("static", "dynamic"):
                variants[f"{backend} {p} {kind}"] = (lambda path=files[kind][p], b=backend:
                                                     onnxfmt.open_runner(path, b, a.threads, size=(H, W)))
    variants["cpu fp32 dynamic, free dims fixed"] = lambda: _OverriddenOrt(files["dynamic"]["fp32"], a.threads)
    unfrozen = _static_unfrozen(ckpt, a.dir)
    info["static fp32, embedding resized in the graph"] = {"ops": onnxfmt.describe(unfrozen)["ops"],
                                                           "bytes": os.path.getsize(unfrozen),
                                                           "sha256": sha256_file(unfrozen)}
    variants["cpu fp32 static, embedding resized in the graph"] = lambda: onnxfmt.open_runner(unfrozen, "cpu", a.threads)
    x = np.random.default_rng(0).standard_normal((1, 3, H, W), dtype=np.float32)
    res = run_interleaved(variants, x, rounds=a.rounds, warmup=a.warmup, iters=a.iters,
                          progress=lambda d, t: print(f"\r{d}/{t}", end="", file=sys.stderr, flush=True))
    print(file=sys.stderr)
    rows = []
    for backend in ("cpu", "openvino"):
        for p in ("fp32", "int8"):
            s, d = (res["variants"][f"{backend} {p} {k}"] for k in ("static", "dynamic"))
            rows.append({"runtime": {"cpu": "onnxruntime", "openvino": "openvino"}[backend], "precision": p,
                         "static_ms": s["median_ms"], "dynamic_ms": d["median_ms"],
                         "static_iqr_ms": s["iqr_ms"], "dynamic_iqr_ms": d["iqr_ms"],
                         "static_round_medians_ms": s["round_medians_ms"],
                         "dynamic_round_medians_ms": d["round_medians_ms"],
                         "dynamic_over_static": d["median_ms"] / s["median_ms"]})
    static32 = res["variants"]["cpu fp32 static"]["median_ms"]
    explain = {k: {"median_ms": res["variants"][k]["median_ms"], "over_static": res["variants"][k]["median_ms"] / static32,
                   "round_medians_ms": res["variants"][k]["round_medians_ms"]}
               for k in ("cpu fp32 dynamic, free dims fixed", "cpu fp32 static, embedding resized in the graph")}
    out = {"kind": "edgedepth.onnx_dynamic", "size": [H, W], "model": "synthetic (full DA-V2-Small architecture)",
           "files": info, "parity_dynamic_fp32": parity, "rows": rows,
           "onnxruntime_fp32_where_from": explain, "environment": environment(a.threads),
           "method": {**res["method"], "per_call": "input + run + output read", "threads": a.threads,
                      "openvino": "INFERENCE_PRECISION_HINT f32; dynamic file reshaped to 1x3x518x686 before compile",
                      "onnxruntime": "CPUExecutionProvider, ORT_ENABLE_ALL, sequential"}}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    for r in rows:
        print(f"{r['runtime']:12s} {r['precision']}: static {r['static_ms']:7.1f} ms  dynamic {r['dynamic_ms']:7.1f} ms"
              f"  x{r['dynamic_over_static']:.3f}")
    for k, v in explain.items():
        print(f"onnxruntime  fp32: {k}: {v['median_ms']:.1f} ms  x{v['over_static']:.3f}")


if __name__ == "__main__":
    main()
