"""One-off measurement for issue 6 (ExecuTorch target) on the full-size synthetic model.

For 518x686 and 224x224: export time, file size, delegated/undelegated node counts, rel-L2 vs PyTorch (original HF
model, default SDPA attention, same seeded input), CPU latency with 2 threads (median of 15 calls after 3 warm-ups).
Variants:
  plain        XNNPACK FP32, no rewrites, default SDPA attention (the baseline)
  notes        XNNPACK FP32, eager attention + freeze_position_embedding (the NOTES recipe)
  default      XNNPACK FP32, eager + drop_attention_mask + freeze_position_embedding (export_executorch default)
  int8         XNNPACK dynamic INT8 (linear only), default rewrites
  allrewrites  XNNPACK FP32, eager + every rewrite of edgedepth.rewrites.PIPELINE
  webgpu       WebGPU FP32, default rewrites (lowering only: cannot run here)
  vulkan       Vulkan FP32, default rewrites (224x224 only; compared byte-for-byte with webgpu)

Run: .venv/bin/python benchmarks/executorch_measure.py [--sizes 518x686,224x224] ; writes benchmarks/results/executorch.json
Then (the machine is shared): .venv/bin/python benchmarks/executorch_measure.py --interleaved 518x686
re-times the XNNPACK files already written plus PyTorch eager with edgedepth.verify.bench.run_interleaved (3 rounds, order
rotated per round, 3 warm-ups + 5 timed calls per variant per round = 15 timed calls each); writes
benchmarks/results/executorch_interleaved_<size>.json
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time

import numpy as np
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.rewrites import REWRITES
from edgedepth.runtimes.executorch import ExecuTorchRunner
from edgedepth.formats import pte as et
from edgedepth.verify.parity import rel_l2

OUT = "out/executorch_measure"
THREADS = 2
WARMUP, ITERS = 3, 15


def latency(fn, x):
    for _ in range(WARMUP):
        fn(x)
    t = []
    for _ in range(ITERS):
        t0 = time.perf_counter()
        fn(x)
        t.append((time.perf_counter() - t0) * 1e3)
    return {"median_ms": round(float(np.median(t)), 1), "min_ms": round(float(np.min(t)), 1),
            "p25_ms": round(float(np.percentile(t, 25)), 1), "p75_ms": round(float(np.percentile(t, 75)), 1),
            "calls": ITERS, "warmup": WARMUP}


def plain_export(model, h, w, path):
    """Baseline: no rewrites, the model's default (SDPA) attention."""
    from executorch.exir import to_edge_transform_and_lower

    t0 = time.perf_counter()
    sample = et._sample(h, w)
    with et._quiet(True):
        ep = torch.export.export(DepthModule(model).eval(), (sample,), strict=False)
        edge = to_edge_transform_and_lower(ep, partitioner=et._partitioners("xnnpack"))
        stats = et.delegation_stats(edge)
        prog = edge.to_executorch()
    with open(path, "wb") as f:
        prog.write_to_file(f)
    stats.update(bytes=os.path.getsize(path), export_s=round(time.perf_counter() - t0, 2), path=path,
                 backend="xnnpack", precision="fp32", rewrites=[], attention="sdpa")
    return stats


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="518x686,224x224")
    ap.add_argument("--variants", default="plain,notes,default,int8,allrewrites,webgpu,vulkan")
    ap.add_argument("--interleaved", default=None, metavar="HxW", help="re-time existing files, interleaved")
    args = ap.parse_args()
    torch.set_num_threads(THREADS)
    if args.interleaved:
        return interleaved(args.interleaved)
    os.makedirs(OUT, exist_ok=True)
    ckpt = load_checkpoint("synthetic", quiet=True)
    model = ckpt.model
    variants = args.variants.split(",")
    results = {"threads": THREADS, "warmup": WARMUP, "iters": ITERS, "torch": torch.__version__,
               "executorch": __import__("executorch.version", fromlist=["x"]).__version__, "sizes": {}}
    for size in args.sizes.split(","):
        h, w = map(int, size.split("x"))
        x = np.random.default_rng(1).standard_normal((1, 3, h, w), dtype=np.float32)
        ref_mod = DepthModule(model).eval()
        with torch.inference_mode():
            ref = ref_mod(torch.from_numpy(x)).numpy()
        res = {}
        with torch.inference_mode():
            res["pytorch-eager"] = {"latency": latency(lambda a: ref_mod(torch.from_numpy(a)), x)}
        print(size, "pytorch-eager", res["pytorch-eager"], flush=True)
        for v in variants:
            if v == "vulkan" and (h, w) != (224, 224):
                continue
            path = os.path.join(OUT, f"{h}x{w}_{v}.pte")
            if v == "plain":
                st = plain_export(model, h, w, path)
            else:
                backend = v if v in ("webgpu", "vulkan") else "xnnpack"
                precision = "int8" if v == "int8" else "fp32"
                rewrites = {"notes": ("freeze_position_embedding",), "allrewrites": tuple(REWRITES)}.get(
                    v, et.DEFAULT_REWRITES)
                st = et.export_executorch(model, h, w, path, backend, precision, rewrites=rewrites)
            st["sha256"] = hashlib.sha256(open(path, "rb").read()).hexdigest()
            if st["backend"] == "xnnpack":
                r = ExecuTorchRunner(path, threads=THREADS)
                y = r.run(x)
                st["rel_l2_vs_pytorch"] = rel_l2(y, ref)
                st["max_abs_vs_pytorch"] = float(np.abs(y.astype(np.float64) - ref).max())
                st["latency"] = latency(r.run, x)
                r.close()
            res[v] = st
            short = {k: st.get(k) for k in ("delegated_subgraphs", "delegated_nodes", "non_delegated_nodes",
                                            "fully_delegated", "bytes", "export_s", "rel_l2_vs_pytorch", "latency")}
            print(size, v, json.dumps(short), flush=True)
            print("   outside:", st["non_delegated_ops"], flush=True)
        if "webgpu" in res and "vulkan" in res:
            res["webgpu_equals_vulkan_bytes"] = res["webgpu"]["sha256"] == res["vulkan"]["sha256"]
        results["sizes"][size] = res
        with open("benchmarks/results/executorch.json", "w") as f:
            json.dump(results, f, indent=2)
    return 0


def interleaved(size: str) -> int:
    from edgedepth.verify.bench import run_interleaved

    h, w = map(int, size.split("x"))
    x = np.random.default_rng(1).standard_normal((1, 3, h, w), dtype=np.float32)
    variants = {}
    for v in ("plain", "notes", "default", "int8", "allrewrites"):
        path = os.path.join(OUT, f"{h}x{w}_{v}.pte")
        if os.path.exists(path):
            variants[f"executorch-xnnpack {v}"] = lambda p=path: ExecuTorchRunner(p, threads=THREADS)
    from edgedepth.runtimes.torch import TorchRunner

    module = DepthModule(load_checkpoint("synthetic", quiet=True).model)
    variants["pytorch-eager"] = lambda: TorchRunner(module, (h, w), THREADS)
    res = run_interleaved(variants, x, rounds=3, warmup=3, iters=5)
    with open(f"benchmarks/results/executorch_interleaved_{size}.json", "w") as f:
        json.dump(res, f, indent=2)
    for name, r in res["variants"].items():
        print(f"{size} {name:32s} median {r['median_ms']:8.1f} ms  IQR {r['p25_ms']:.0f}..{r['p75_ms']:.0f}  "
              f"min {r['min_ms']:.0f}  rounds {[round(m) for m in r['round_medians_ms']]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
