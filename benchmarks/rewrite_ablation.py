"""Per-rewrite effect on the full synthetic model at 518x686: op count, GPU delegation and CPU latency of each
cumulative prefix of the rewrite pipeline (plain, +1st, +1st+2nd, ...).  Writes benchmarks/results/rewrite_ablation.json.

    .venv/bin/python benchmarks/rewrite_ablation.py [--rounds 3 --warmup 2 --iters 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

import numpy as np

from edgedepth.verify.bench import environment, run_interleaved
from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.formats.tflite import describe, gpu_check
from edgedepth.fsutil import sha256_file
from edgedepth.models import DEPTH_ANYTHING_V2
from edgedepth.rewrites import PIPELINE, apply_rewrites
from edgedepth.runtimes.litert import LiteRTRunner
from edgedepth.formats import tflite as litert

H, W = 518, 686


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/rewrite_ablation.json")
    a = ap.parse_args()
    ckpt = load_checkpoint("synthetic", quiet=True)
    names = [r.name for r in PIPELINE if r.default and DEPTH_ANYTHING_V2 in r.families]
    work = tempfile.mkdtemp(prefix="ablation-")
    steps = []
    for k in range(len(names) + 1):
        label = "plain" if k == 0 else "+" + names[k - 1]
        model, _ = apply_rewrites(ckpt.model, H, W, names=names[:k])
        path = os.path.join(work, f"step{k:02d}.tflite")
        litert.convert_fp32(DepthModule(model), H, W, path)
        info, g = describe(path), gpu_check(path)
        steps.append({"step": k, "label": label, "rewrites": names[:k], "ops": info["ops"],
                      "op_histogram": info["op_histogram"], "gpu_fully_delegated": g["fully_delegated"],
                      "gpu_cpu_ops": g["cpu_ops"], "sha256": sha256_file(path), "path": path})
        print(f"{label:32s} {info['ops']:4d} ops  GPU: {'full' if g['fully_delegated'] else g['error']}", flush=True)
    x = np.random.default_rng(0).standard_normal((1, 3, H, W), dtype=np.float32)
    variants = {s["label"]: (lambda p=s["path"]: LiteRTRunner(p, "cpu", threads=2)) for s in steps}
    res = run_interleaved(variants, x, rounds=a.rounds, warmup=a.warmup, iters=a.iters,
                          progress=lambda d, t: print(f"\rbench {d}/{t}", end="", file=sys.stderr))
    for s in steps:
        s["cpu_median_ms"] = res["variants"][s["label"]]["median_ms"]
        s["cpu_iqr_ms"] = [res["variants"][s["label"]]["p25_ms"], res["variants"][s["label"]]["p75_ms"]]
        del s["path"]
    out = {"kind": "edgedepth.rewrite_ablation", "model": "synthetic", "size": [H, W], "steps": steps,
           "method": res["method"], "environment": environment(2)}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"\nwrote {a.out}")


if __name__ == "__main__":
    main()
