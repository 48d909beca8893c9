"""Depth Anything 3 on LiteRT's GPU delegate: what each rewrite set leaves on the CPU, and whether the GPU is right.

Issue 31.  Exports a synthetic Depth Anything 3 stand-in to FP32 .tflite (``edgedepth.formats.export``, target litert)
with several rewrite sets -- none (the package's own graph), ``da3_static_rope`` alone (the least that converts),
the previous default (static RoPE, rank-4 attention, folded LayerScale) and today's default (those plus the frozen
ViT position embedding, the camera token by concatenation, no ray branch, separable constant UV embeddings) -- and
records per file: conversion time, size, op count and histogram, ``describe()["gpu_hazards"]`` (ops the GPU computes
wrongly although it takes them), GPU delegation (``open_artifact(path).gpu_check``: GPU accelerator alone, FP32
enforced; ops on GPU / CPU and why), and rel-L2 of LiteRT CPU vs PyTorch FP32 and of the GPU vs the CPU on one
seeded input.  The GPU is whatever Vulkan driver ``edgedepth.runtimes.vulkan`` selects: SwiftShader here.

    .venv/bin/python benchmarks/da3_delegation.py [--small] [--sizes 56x56] [--out FILE]
        -> benchmarks/results/da3_delegation.json

``--small`` adds synthetic-da3-small at 518x518 (none, previous default, default; several minutes on 2 cores).
Mono-/Metric-Large's structure (no RoPE, plain DPT head): ``--model synthetic-da3-tiny-mono --out
benchmarks/results/da3_delegation_dpt.json``; at full size (ViT-L, ~1.3 GB files; the GPU check on SwiftShader takes
long): ``--model synthetic-da3-mono-large --sizes 378x504 --rewrite-sets none,default --out
benchmarks/results/da3_delegation_mono_large.json``. V2 Large (the same 3x3 convolutions over 1024 channels), before and
after ``split_wide_conv``: ``--model synthetic-large --sizes 518x686 --rewrite-sets
default_without_split_wide_conv,default --out benchmarks/results/delegation_v2_large.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time

import numpy as np

from lib.machine import cpu_name, versions     # benchmarks/lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULT = os.path.join(ROOT, "benchmarks", "results", "da3_delegation.json")
PREVIOUS = ["da3_static_rope", "da3_rank4_attention", "da3_fold_layerscale"]
PACKAGES = ("torch", "litert-torch", "ai-edge-litert", "depth-anything-3", "numpy")


def rewrite_sets(model) -> dict[str, list[str]]:
    from edgedepth.rewrites import default_names

    default = default_names(model)
    return {"none": [], "static_rope_only": ["da3_static_rope"], "previous_default": PREVIOUS,
            "default_without_split_wide_conv": [n for n in default if n != "split_wide_conv"], "default": default}


def measure(ckpt, h: int, w: int, label: str, names: list[str], x: np.ndarray, torch_out: np.ndarray,
            tmp: str) -> dict:
    from edgedepth import formats
    from edgedepth.verify.parity import rel_l2

    row: dict = {"model": ckpt.name, "size": f"{h}x{w}", "rewrites": label, "names": names}
    out_dir = os.path.join(tmp, f"{ckpt.name}_{h}x{w}_{label}")
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    try:
        (f,) = formats.export(ckpt.model, h, w, out_dir, target_name="litert", precisions=("fp32",), rewrites=names,
                              stem=ckpt.file_stem)
    except Exception as e:                           # the package's own graph does not convert: record why
        row.update(converted=False, convert_s=round(time.perf_counter() - t0, 1),
                   error=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
        return row
    row.update(converted=True, convert_s=round(time.perf_counter() - t0, 1), changed=f.rewrites)
    art = formats.open_artifact(f.path)
    info = art.info
    row.update(file_bytes=os.path.getsize(f.path), ops=info["ops"], op_histogram=info["op_histogram"],
               gpu_hazards=info["gpu_hazards"]["count"], gpu_hazard_examples=info["gpu_hazards"]["examples"][:3])
    runner = art.open_runner("cpu")
    try:
        cpu = np.asarray(runner.run(x), np.float64).reshape(torch_out.shape)
    finally:
        runner.close()
    t0 = time.perf_counter()
    g = art.gpu_check(x=x)
    row["gpu_check_s"] = round(time.perf_counter() - t0, 1)
    row["gpu"] = {k: g.get(k) for k in ("fully_delegated", "gpu_ops", "cpu_ops", "unsupported", "validation_errors",
                                        "validation_error", "error", "adapter")}
    if g.get("fully_delegated") and g.get("gpu_ops") is None:     # the probe logs no count when nothing falls back
        row["gpu"]["gpu_ops"] = info["ops"]
    row["rel_l2"] = {"cpu_vs_torch": rel_l2(cpu, torch_out)}
    if g.get("output") is not None:
        gpu = np.asarray(g["output"], np.float64).reshape(torch_out.shape)
        row["rel_l2"] |= {"gpu_vs_cpu": rel_l2(gpu, cpu), "gpu_vs_torch": rel_l2(gpu, torch_out)}
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="synthetic-da3-tiny")
    ap.add_argument("--sizes", default="56x56", help="comma-separated HxW for --model")
    ap.add_argument("--small", action="store_true",
                    help="also synthetic-da3-small at 518x518 (none, previous default, default)")
    ap.add_argument("--rewrite-sets", default=None,
                    help="comma-separated subset of none, static_rope_only, previous_default, "
                         "default_without_split_wide_conv, default (for --model)")
    ap.add_argument("--out", default=RESULT)
    args = ap.parse_args()

    import torch

    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.fsutil import write_bytes_atomic
    from edgedepth.preprocess import parse_size

    sets = tuple(args.rewrite_sets.split(",")) if args.rewrite_sets else None
    jobs = [(args.model, parse_size(s), sets) for s in args.sizes.split(",")]
    if args.small:
        jobs.append(("synthetic-da3-small", (518, 518), ("none", "previous_default", "default")))
    rows = []
    with tempfile.TemporaryDirectory(prefix="da3-delegation-") as tmp:
        for name, (h, w), only in jobs:
            ckpt = load_checkpoint(name, quiet=True)
            x = np.random.default_rng(0).standard_normal((1, 3, h, w)).astype(np.float32)
            with torch.no_grad():
                torch_out = DepthModule(ckpt.model).eval()(torch.from_numpy(x)).numpy().astype(np.float64)
            for label, names in rewrite_sets(ckpt.model).items():
                if only is None or label in only:
                    rows.append(measure(ckpt, h, w, label, names, x, torch_out, tmp))
                    r = rows[-1]
                    print(f"{name} {h}x{w} {label}: " + (
                        f"{r['ops']} ops, hazards {r['gpu_hazards']}, fully delegated {r['gpu']['fully_delegated']}"
                        f" (gpu {r['gpu']['gpu_ops']} / cpu {r['gpu']['cpu_ops']}), rel-L2 {r['rel_l2']}"
                        if r["converted"] else f"not converted: {r['error']}"), flush=True)
    adapters = {r["gpu"]["adapter"] for r in rows if r.get("gpu", {}).get("adapter")}
    rep = {"kind": "edgedepth.da3_delegation", "date": time.strftime("%Y-%m-%d"), "issue": 31,
           "command": " ".join(["benchmarks/da3_delegation.py", *sys.argv[1:]]),
           "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version()},
           "versions": versions(PACKAGES), "gpu_adapter": sorted(adapters),
           "gpu_mode": "GPU accelerator alone, enforce_f32 (tflite.gpu_check)", "cpu_runner": "LiteRT CPU, 2 threads",
           "input": "seeded standard normal [1,3,H,W] (numpy default_rng(0)); synthetic seeded weights",
           "torch_reference": "PyTorch FP32 eager of the unrewritten model",
           "runs": rows}
    write_bytes_atomic(args.out, (json.dumps(rep, indent=2) + "\n").encode())
    print("wrote", args.out)


if __name__ == "__main__":
    main()
