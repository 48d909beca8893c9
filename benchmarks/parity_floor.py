"""How close to PyTorch can an FP32 file be?  PyTorch FP32, LiteRT plain and LiteRT optimised against a float64 truth.

Any FP32 implementation that sums in another order than PyTorch differs from it by rounding.  This script measures how
big that rounding is for this model: the same synthetic checkpoint run in float64 (PyTorch, ``model.double()``) is the
truth; PyTorch FP32, the plain and the optimised .tflite (ai_edge_litert CPU) are each compared with it, and with each
other, on every Nth image of the default set (pooled rel-L2, as ``edgedepth validate``).  If LiteRT-vs-PyTorch is below
PyTorch-vs-truth, the file is as accurate as PyTorch itself and the remaining gap to PyTorch is rounding noise.

    .venv/bin/python benchmarks/parity_floor.py [--dir out/bench] [--every 5] [--model synthetic|HF_ID@REV|FOLDER]

Needs the two 518x686 FP32 files from ``STEPS=export benchmarks/run_cpu.sh``.  Writes benchmarks/results/parity_floor.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys

import torch

from edgedepth.verify.bench import environment
from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.images import default_image_set, image_set_hash
from edgedepth.verify.parity import ParityAccumulator
from edgedepth.preprocess import preprocess
from edgedepth.runtimes.litert import LiteRTRunner

H, W = 518, 686
P = f"depth_anything_v2_small_{H}x{W}"
PAIRS = [("pytorch_fp32", "float64"), ("fp32_plain", "float64"), ("fp32", "float64"),
         ("fp32_plain", "pytorch_fp32"), ("fp32", "pytorch_fp32"), ("fp32", "fp32_plain")]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="out/bench")
    ap.add_argument("--model", default="synthetic", help="the checkpoint the files in --dir were exported from")
    ap.add_argument("--every", type=int, default=5, help="use every Nth image of the default set")
    ap.add_argument("--out", default="benchmarks/results/parity_floor.json")
    a = ap.parse_args()
    files = {k: os.path.join(a.dir, f"{P}_{k}.tflite") for k in ("fp32_plain", "fp32")}
    missing = [p for p in files.values() if not os.path.isfile(p)]
    if missing:
        raise SystemExit(f"missing {missing[0]}: run STEPS=export benchmarks/run_cpu.sh first")
    torch.set_num_threads(2)
    ckpt = load_checkpoint(a.model, quiet=True)
    m32 = DepthModule(ckpt.model).eval()
    m64 = copy.deepcopy(m32).double()
    runners = {k: LiteRTRunner(p, "cpu", threads=2) for k, p in files.items()}
    items = default_image_set()[::a.every]
    acc = {f"{x} vs {y}": ParityAccumulator() for x, y in PAIRS}
    for i, it in enumerate(items, 1):
        x = preprocess(it.load(), (H, W))
        with torch.no_grad():
            out = {"pytorch_fp32": m32(torch.from_numpy(x)).numpy(),
                   "float64": m64(torch.from_numpy(x).double()).numpy()}
        out.update({k: r.run(x) for k, r in runners.items()})
        for x_, y_ in PAIRS:
            acc[f"{x_} vs {y_}"].add(out[x_], out[y_])
        print(f"\r{i}/{len(items)} images", end="", file=sys.stderr)
    print(file=sys.stderr)
    results = {k: a_.summary() for k, a_ in acc.items()}
    for k, s in results.items():
        print(f"{k:28s} pooled rel-L2 {s['pooled_rel_l2']:.2e}  max {s['max_rel_l2']:.2e}")
    out = {"kind": "edgedepth.parity_floor", "model": ckpt.provenance(), "size": [H, W], "truth": "PyTorch float64",
           "image_set": {"source": "default", "every": a.every, "count": len(items), "sha256": image_set_hash(items)},
           "results": results, "environment": environment(2)}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
