"""Depth Anything 3 Small next to Depth Anything V2 Small at one size: ops, GPU delegation, parity, CPU latency.

Issue 31, goal 5.  The stand-ins ``synthetic`` (Depth Anything V2 Small architecture) and ``synthetic-da3-small``
(Depth Anything 3 Small; seeded weights, full architecture) are exported the same way (``edgedepth.formats.export``,
target litert, default rewrites, FP32 + INT8) and measured the same way, with edgedepth's public API only:

- file: bytes, ops, op histogram, multiply-accumulates, GPU hazards (``open_artifact(path).info``);
- GPU delegation: ``Artifact.gpu_check()`` -- LiteRT's GPU accelerator alone, FP32 enforced, on SwiftShader Vulkan
  (``VK_ICD_FILENAMES``); ops on GPU / CPU, and why not;
- parity: LiteRT CPU (2 threads) vs PyTorch FP32 of the same model on ``image_set(limit=N)``, pooled rel-L2
  (``edgedepth.verify.validate.validate``); and PyTorch FP32 vs a float64 run of the same model on the same images
  (pooled rel-L2): what FP32 summation order alone costs, so an FP32 file's rel-L2 can be read as a multiple of it;
- CPU latency: the four files (V2 FP32, V2 INT8, DA3 FP32, DA3 INT8) in ONE interleaved run
  (``edgedepth.verify.bench.run_interleaved``, order rotated per round), 2 threads, first parity image; the DA3 / V2
  ratio of the medians per precision is the number to read (the machine is shared: absolute times are noisy, the
  ratio inside one run much less).  Issue 31's goal: DA3-Small <= 1.5 x V2-Small at the same size.

    .venv/bin/python benchmarks/da3_vs_v2.py [--size 518x518] [--rounds 3] [--warmup 2] [--iters 5] [--images 4]
        [--dir out/da3_vs_v2] [--reuse] [--out benchmarks/results/da3_vs_v2.json]

~15-25 min on 2 cores at 518x518 (two conversions of 1-2 min each, four GPU checks, parity, the timed run).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import sys
import time

import numpy as np

from lib.machine import cpu_name, versions     # benchmarks/lib

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
RESULT = os.path.join(ROOT, "benchmarks", "results", "da3_vs_v2.json")
SWIFTSHADER = "/usr/lib/chromium/vk_swiftshader_icd.json"
MODELS = {"v2_small": "synthetic", "da3_small": "synthetic-da3-small"}
PRECISIONS = ("fp32", "int8")
PACKAGES = ("torch", "litert-torch", "ai-edge-litert", "ai-edge-quantizer", "depth-anything-3", "numpy")
GPU_KEYS = ("fully_delegated", "gpu_ops", "cpu_ops", "unsupported", "validation_errors", "error", "adapter")
T0 = time.time()


def _log(msg: str) -> None:
    print(f"{time.time() - T0:7.0f} s  {msg}", flush=True)


def fp32_noise_pooled(module, items, size: tuple[int, int]) -> dict:
    """PyTorch FP32 vs PyTorch float64 (``module.double()``, float64 input) on ``items``: pooled / max rel-L2."""
    import copy

    import torch

    from edgedepth.preprocess import preprocess
    from edgedepth.verify.parity import ParityAccumulator

    m64, acc = copy.deepcopy(module).double().eval(), ParityAccumulator()
    with torch.inference_mode():
        for it in items:
            x = torch.from_numpy(preprocess(it.load(), size))
            acc.add(module(x).numpy().astype(np.float64), m64(x.double()).numpy())
    del m64
    s = acc.summary()
    return {"pooled_rel_l2": s["pooled_rel_l2"], "max_rel_l2": s.get("max_rel_l2"), "images": len(items)}


def export_files(ckpt, h: int, w: int, d: str, reuse: bool) -> tuple[dict, dict]:
    """{precision: path} of the default-rewrite LiteRT files, and the export's facts (time, rewrites)."""
    from edgedepth import formats
    from edgedepth.formats.tflite import file_name

    paths = {p: os.path.join(d, file_name(h, w, p, stem=ckpt.file_stem)) for p in PRECISIONS}
    if reuse and all(os.path.exists(p) for p in paths.values()):
        _log(f"{ckpt.name}: reusing {', '.join(os.path.basename(p) for p in paths.values())}")
        return paths, {"reused": True}
    t0 = time.perf_counter()
    files = formats.export(ckpt.model, h, w, d, target_name="litert", precisions=PRECISIONS, stem=ckpt.file_stem,
                           progress=lambda s: _log(f"{ckpt.name}: {s}"))
    facts = {"reused": False, "export_s": round(time.perf_counter() - t0, 1), "rewrites": files[0].rewrites}
    return {f.precision: f.path for f in files}, facts


def measure_model(key: str, name: str, h: int, w: int, d: str, items, threads: int, reuse: bool) -> tuple[dict, dict]:
    """One model's row (everything but CPU latency) and its {precision: Artifact}."""
    import torch

    from edgedepth import formats
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.verify.validate import validate

    ckpt = load_checkpoint(name, quiet=True)
    paths, build = export_files(ckpt, h, w, d, reuse)
    _log(f"{name}: files ready ({build})")
    arts = {p: formats.open_artifact(paths[p]) for p in PRECISIONS}
    row: dict = {"checkpoint": ckpt.name, "class": type(ckpt.model).__name__, "file_stem": ckpt.file_stem,
                 "params": int(sum(p.numel() for p in ckpt.model.parameters())), "build": build, "files": {}}
    for p, art in arts.items():
        info = art.info
        t0 = time.perf_counter()
        g = art.gpu_check()
        gpu = {k: g.get(k) for k in GPU_KEYS}
        if gpu.get("fully_delegated") and gpu.get("gpu_ops") is None:     # the probe logs no count when none fall back
            gpu["gpu_ops"] = info["ops"]
        gpu["check_s"] = round(time.perf_counter() - t0, 1)
        hist = dict(sorted(info["op_histogram"].items(), key=lambda kv: (-kv[1], kv[0])))
        row["files"][p] = {"file": art.name, "bytes": info["bytes"], "sha256": art.sha256, "ops": info["ops"],
                           "op_histogram": hist, "macs": (info.get("macs") or {}).get("total"),
                           "fc_variants": info.get("fc_variants"),
                           "gpu_hazards": info["gpu_hazards"]["count"],
                           "gpu_hazard_examples": info["gpu_hazards"]["examples"][:3], "gpu_swiftshader": gpu}
        _log(f"{name} {p}: {info['bytes'] / 1e6:.1f} MB, {info['ops']} ops, hazards {info['gpu_hazards']['count']}, "
             f"SwiftShader {'fully delegated' if gpu['fully_delegated'] else gpu['error']} "
             f"(gpu {gpu['gpu_ops']} / cpu {gpu['cpu_ops']}, {gpu['check_s']} s)")
    module = DepthModule(ckpt.model).eval()
    torch.set_num_threads(threads)
    for res in validate([arts[p] for p in PRECISIONS], ["cpu"], module, items, threads=threads):
        p = next(p for p, a in arts.items() if a.name == res["artifact"])
        m = res["metrics"] if res["status"] == "ok" else None
        row["files"][p]["parity_vs_pytorch_fp32"] = (
            {k: m.get(k) for k in ("pooled_rel_l2", "max_rel_l2", "p95_rel_l2", "pearson")} if m
            else {"error": res["error"], "status": res["status"]})
        row["files"][p]["parity_per_image_rel_l2"] = res.get("per_image_rel_l2")
        _log(f"{name} {p}: parity {row['files'][p]['parity_vs_pytorch_fp32']}")
    row["pytorch_fp32_vs_float64"] = fp32_noise_pooled(module, items, (h, w))
    _log(f"{name}: PyTorch FP32 vs float64 {row['pytorch_fp32_vs_float64']['pooled_rel_l2']:.2e}")
    del module, ckpt
    gc.collect()
    return row, arts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", default="518x518", help="HxW, the same for both models")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--images", type=int, default=4, help="parity images (image_set(limit=N))")
    ap.add_argument("--dir", default=os.path.join(ROOT, "out", "da3_vs_v2"), help="where the .tflite files go")
    ap.add_argument("--reuse", action="store_true", help="keep files already in --dir instead of exporting again")
    ap.add_argument("--out", default=RESULT)
    args = ap.parse_args()
    os.environ.setdefault("VK_ICD_FILENAMES", SWIFTSHADER)

    from edgedepth.fsutil import write_bytes_atomic
    from edgedepth.images import image_set, image_set_hash
    from edgedepth.preprocess import parse_size, preprocess
    from edgedepth.verify.bench import run_interleaved

    h, w = parse_size(args.size)
    d = os.path.join(args.dir, f"{h}x{w}")
    os.makedirs(d, exist_ok=True)
    items = image_set(limit=args.images)
    rows, arts = {}, {}
    for key, name in MODELS.items():
        rows[key], arts[key] = measure_model(key, name, h, w, d, items, args.threads, args.reuse)

    x = preprocess(items[0].load(), (h, w))
    variants = {f"{k}.{p}": (lambda a=arts[k][p]: a.open_runner("cpu", args.threads)) for k in MODELS for p in PRECISIONS}
    _log(f"CPU latency: {len(variants)} files interleaved, {args.rounds} rounds x ({args.warmup} + {args.iters})")
    lat = run_interleaved(variants, x, rounds=args.rounds, warmup=args.warmup, iters=args.iters,
                          progress=lambda i, n: _log(f"CPU latency {i}/{n} calls") if i % 10 == 0 else None)
    for k, v in lat["variants"].items():
        key, p = k.split(".")
        rows[key]["files"][p]["cpu_latency"] = v
        _log(f"{k}: median {v['median_ms']:.0f} ms (IQR {v['p25_ms']:.0f}-{v['p75_ms']:.0f})")
    ratios = {}
    for p in PRECISIONS:
        a, b = rows["da3_small"]["files"][p]["cpu_latency"], rows["v2_small"]["files"][p]["cpu_latency"]
        ratios[p] = {"median": a["median_ms"] / b["median_ms"],
                     "per_round": [x / y for x, y in zip(a["round_medians_ms"], b["round_medians_ms"])]}
        _log(f"DA3 / V2 {p}: {ratios[p]['median']:.3f}")
    goal = 1.5
    rep = {"kind": "edgedepth.da3_vs_v2", "issue": 31, "date": time.strftime("%Y-%m-%d"),
           "command": "benchmarks/da3_vs_v2.py " + " ".join(sys.argv[1:]) if sys.argv[1:] else "benchmarks/da3_vs_v2.py",
           "size": [h, w],
           "machine": {"cpu": cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
                       "note": "shared machine (other jobs running): read latency as ratios inside the one run"},
           "versions": versions(PACKAGES), "models": MODELS,
           "export": "edgedepth.formats.export, target litert, default rewrites, FP32 + INT8",
           "gpu_method": f"Artifact.gpu_check(): LiteRT GPU accelerator alone, FP32 enforced, Vulkan ICD "
                         f"{os.environ.get('VK_ICD_FILENAMES')}",
           "parity_method": {"images": len(items), "image_ids": [it.id for it in items],
                             "image_set_sha256": image_set_hash(items), "reference": "PyTorch FP32 eager (DepthModule)",
                             "runtime": f"LiteRT CPU, {args.threads} threads", "metric": "pooled rel-L2",
                             "fp32_noise": "PyTorch FP32 vs PyTorch float64 (model.double(), float64 input), same images"},
           "cpu_method": {**lat["method"], "threads": args.threads, "input": items[0].id,
                          "files": list(variants)},
           "cpu_peak_rss_mb": lat["peak_rss_mb"],
           "rows": rows,
           "da3_over_v2_cpu": ratios, "goal_ratio": goal,
           "goal_met": {p: ratios[p]["median"] <= goal for p in PRECISIONS}}
    write_bytes_atomic(args.out, (json.dumps(rep, indent=2) + "\n").encode())
    _log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
