"""Which rewrites help ONNX Runtime?  Each cumulative prefix of the rewrite pipeline (plain, +1st, +1st+2nd, ...)
exported to FP32 ONNX at 518x686 (full synthetic model), op count, parity vs PyTorch FP32 (float64 as truth) and ORT
CPU latency, interleaved.  ``formats.onnx.DEFAULT_REWRITES`` is chosen from this table: the longest prefix whose
latency is not worse than the best one by more than the run's own round-to-round spread, and only exact rewrites.

    .venv/bin/python benchmarks/onnx_rewrites.py [--dir out/onnx_rewrites] [--rounds 3 --warmup 2 --iters 5]

Exported files are cached in --dir (reruns time only).  Writes benchmarks/results/onnx_rewrites.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.formats import onnx as onnxfmt
from edgedepth.fsutil import sha256_file
from edgedepth.models import DEPTH_ANYTHING_V2
from edgedepth.rewrites import PIPELINE, prepare
from edgedepth.runtimes.onnxruntime import OrtRunner
from edgedepth.verify.bench import environment, run_interleaved
from edgedepth.verify.parity import rel_l2

H, W = 518, 686


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="out/onnx_rewrites")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="benchmarks/results/onnx_rewrites.json")
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    ckpt = load_checkpoint("synthetic", quiet=True)
    names = [r.name for r in PIPELINE if r.default and DEPTH_ANYTHING_V2 in r.families]
    x = np.random.default_rng(0).standard_normal((1, 3, H, W), dtype=np.float32)
    with torch.no_grad():
        ref32 = DepthModule(ckpt.model).eval()(torch.from_numpy(x)).numpy()
        ref64 = DepthModule(ckpt.model).double().eval()(torch.from_numpy(x).double()).numpy()
    ckpt.model.float()
    steps = []
    for k in range(len(names) + 1):
        label = "plain" if k == 0 else "+" + names[k - 1]
        path = os.path.join(a.dir, f"step{k:02d}.onnx")
        if not os.path.exists(path):
            print(f"export {label}", file=sys.stderr, flush=True)
            module, _ = prepare(ckpt.model, H, W, names[:k])
            onnxfmt._write(onnxfmt.to_model_proto(module, H, W), path)
        info = onnxfmt.describe(path)
        r = OrtRunner(path, threads=a.threads)
        y = r.run(x)
        r.close()
        steps.append({"step": label, "rewrites": names[:k], "ops": info["ops"], "op_histogram": info["op_histogram"],
                      "rel_l2_vs_torch_fp32": rel_l2(y, ref32), "rel_l2_vs_float64": rel_l2(y, ref64),
                      "sha256": sha256_file(path), "path": path})
    variants = {s["step"]: (lambda p=s["path"]: OrtRunner(p, threads=a.threads)) for s in steps}
    res = run_interleaved(variants, x, rounds=a.rounds, warmup=a.warmup, iters=a.iters,
                          progress=lambda d, t: print(f"\r{d}/{t}", end="", file=sys.stderr, flush=True))
    print(file=sys.stderr)
    plain = res["variants"]["plain"]["median_ms"]
    for s in steps:
        v = res["variants"][s["step"]]
        s.update(median_ms=v["median_ms"], iqr_ms=v["iqr_ms"], round_medians_ms=v["round_medians_ms"],
                 over_plain=v["median_ms"] / plain)
        del s["path"]
    out = {"kind": "edgedepth.onnx_rewrites", "size": [H, W], "model": "synthetic", "runtime": "onnxruntime CPU EP",
           "torch_fp32_rel_l2_vs_float64": rel_l2(ref32, ref64),
           "environment": environment(a.threads), "method": res["method"], "steps": steps}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    for s in steps:
        print(f"{s['step']:28s} {s['ops']:4d} ops  {s['median_ms']:7.1f} ms  x{s['over_plain']:.3f}  "
              f"rel-L2 {s['rel_l2_vs_torch_fp32']:.2e}")


if __name__ == "__main__":
    main()
