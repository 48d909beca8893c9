"""The precision ladder at 518x686: size, accuracy, CPU latency (here) and GPU latency (the lent H200) of every LiteRT
precision edgedepth writes, plus the alternatives considered and rejected.

Rows: fp32, fp16, int8, int4, static-int8, a16w8 (``edgedepth.formats.tflite.precisions``) and, for the record, two
alternatives considered: ``int4-all4`` (``dynamic_wi4_afp32``: 4-bit channelwise everywhere, incl. convolutions) and
``static-int8-all`` (``static_wi8_ai8`` on every op, which the shipped static-int8 replaced: it measured 10x the error,
5.6x the CPU time and an invalid GPU shader).  a16w8 runs on LiteRT's reference int16 kernels (~50 s a call here): its parity uses 11 images (one per
photo) and its latency 3 calls outside the interleaved run.

Method:
- parity: every file on LiteRT CPU (2 threads) vs PyTorch FP32 of the same synthetic model on the 110-image default
  set (pooled rel-L2, p95, Pearson, aligned AbsRel, delta<1.25: ``edgedepth.verify.validate``).  The static files are
  calibrated on the 11 full-frame views, which are 11 of the 110.
- CPU latency: one interleaved run (``run_interleaved``: R rounds, order rotated, W warm-ups + N timed calls; timed =
  input write + invoke + output read), 2 threads, first bundled photo.
- GPU: compile on the GPU accelerator alone (SwiftShader here: delegation facts; a crash is a row with its reason),
  and on the H200 the same through ``device`` (timing twins: same graphs, seeded weights; FP32-enforced and default
  precision, interleaved).

    .venv/bin/python benchmarks/precision_ladder.py build  [--dir out/ladder]     # ~10 min (two calibrations)
    .venv/bin/python benchmarks/precision_ladder.py cpu    [--images 110]         # -> results/precision_ladder.json
    .venv/bin/python benchmarks/precision_ladder.py twins                         # -> .dev/ladder_twins (a few MB)
    device: carry [".dev/ladder_twins", ".whl", ".gl"], bash benchmarks/devices/ladder_device.sh -> $OUT/precision_ladder_h200.json
    .venv/bin/python benchmarks/precision_ladder.py merge  --h200 FILE            # GPU rows into the same JSON
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

H, W = 518, 686
RESULT = os.path.join(ROOT, "benchmarks", "results", "precision_ladder.json")
TWINS = os.path.join(ROOT, ".dev", "ladder_twins")
SLOW = {"a16w8": 11}
GPU_KEYS = ("fully_delegated", "error", "adapter", "gpu_ops", "cpu_ops", "validation_errors", "validation_error")    # rows on reference kernels: parity images


def _int4_all4():
    from ai_edge_quantizer import recipe

    return recipe.dynamic_wi4_afp32()


def _extras() -> dict:
    """Considered, not shipped: {name: Precision}."""
    from edgedepth.formats.tflite.precisions import Precision, static_recipe

    return {p.name: p for p in (
        Precision("int4-all4", "dynamic_wi4_afp32 (4-bit channelwise weights everywhere, float activations)",
                  _int4_all4),
        Precision("static-int8-all", "static_wi8_ai8 on every op (int8 activations throughout; float32 input/output)",
                  static_recipe(8), calibrated=True))}


def _files(d: str) -> dict:
    from edgedepth.formats import tflite

    names = {p: tflite.file_name(H, W, p) for p in tflite.PRECISIONS}
    names.update({p: f"depth_anything_v2_small_{H}x{W}_{e.file_part}.tflite" for p, e in _extras().items()})
    return {p: os.path.join(d, n) for p, n in names.items()}


def build(d: str) -> None:
    from edgedepth import formats
    from edgedepth.checkpoint import load_checkpoint
    from edgedepth.formats import tflite
    from edgedepth.formats.tflite.precisions import calibration_inputs, quantize

    os.makedirs(d, exist_ok=True)
    t0 = time.time()
    model = load_checkpoint("synthetic", quiet=True).model
    files = formats.export(model, H, W, d, target_name="litert", precisions=tflite.PRECISIONS,
                           progress=lambda s: print(f"{time.time() - t0:6.0f} s  {s}", flush=True))
    for p, e in _extras().items():
        print(f"{time.time() - t0:6.0f} s  quantize {p} (considered)", flush=True)
        quantize(_files(d)["fp32"], _files(d)[p], e, calibration=calibration_inputs(H, W) if e.calibrated else None)
    for f in files:
        print(f.precision, os.path.basename(f.path), os.path.getsize(f.path))
    print(f"built in {time.time() - t0:.0f} s")


def cpu(d: str, n_images: int, rounds: int, warmup: int, iters: int, threads: int) -> dict:
    import torch

    from edgedepth import formats
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.formats.tflite.precisions import CALIBRATION_VIEW, INT4_BLOCK, LADDER
    from edgedepth.images import default_image_set, image_set, image_set_hash
    from edgedepth.preprocess import preprocess
    from edgedepth.verify.bench import environment, run_interleaved
    from edgedepth.verify.validate import validate

    torch.set_num_threads(threads)
    files = _files(d)
    arts = {p: formats.open_artifact(path) for p, path in files.items()}
    module = DepthModule(load_checkpoint("synthetic", quiet=True).model)
    items = default_image_set()[:n_images]
    t0 = time.time()
    rows = {}
    for p, art in arts.items():
        g = art.gpu_check()
        rows[p] = {"file": art.name, "bytes": art.info["bytes"], "sha256": art.sha256, "ops": art.info["ops"],
                   "op_histogram": art.info["op_histogram"], "weights": art.info["weights"],
                   "summary": (LADDER.get(p) or _extras()[p]).summary, "shipped": p in LADDER,
                   "gpu_swiftshader": {k: g[k] for k in GPU_KEYS}}
        print(f"{p}: {art.info['bytes'] / 1e6:.2f} MB, {art.info['ops']} ops, SwiftShader "
              f"{'fully delegated' if g['fully_delegated'] else g['error']}, {g['validation_errors']} validation errors",
              flush=True)
    groups = [([p for p in arts if p not in SLOW], items)] + [([p], image_set(limit=n)) for p, n in SLOW.items()]
    for names, some in groups:      # one validate call per group: the PyTorch references are computed once
        for res in validate([arts[p] for p in names], ["cpu"], module, some, threads=threads):
            p = next(k for k in names if arts[k].name == res["artifact"])
            rows[p]["parity"] = res["metrics"] if res["status"] == "ok" else {"error": res["error"]}
            print(f"{p}: parity {rows[p]['parity'].get('pooled_rel_l2')} on {len(some)} ({time.time() - t0:.0f} s)",
                  flush=True)
    x = preprocess(items[0].load(), (H, W))
    lat = run_interleaved({p: (lambda a=a: a.open_runner("cpu", threads)) for p, a in arts.items() if p not in SLOW},
                          x, rounds=rounds, warmup=warmup, iters=iters)
    for p in SLOW:
        lat["variants"][p] = {**run_interleaved({p: lambda a=arts[p]: a.open_runner("cpu", threads)}, x, rounds=1,
                                                warmup=0, iters=3)["variants"][p], "outside_interleaved_run": True}
    for p, v in lat["variants"].items():
        rows[p]["cpu_latency"] = v
        print(f"{p}: CPU {v['median_ms']:.0f} ms", flush=True)
    report = {
        "kind": "edgedepth.precision_ladder", "date": time.strftime("%Y-%m-%d"), "model": "synthetic", "size": [H, W],
        "environment": environment(threads), "cpu_method": lat["method"],
        "parity_method": {"images": len(items), "image_set_sha256": image_set_hash(items), "reference": "PyTorch FP32",
                          "runtime": f"LiteRT CPU, {threads} threads",
                          "calibration": f"11 '{CALIBRATION_VIEW}' views (11 of the parity images)",
                          "slow_rows_images": SLOW},
        "int4_block": INT4_BLOCK, "rows": rows,
    }
    old = json.load(open(RESULT)) if os.path.exists(RESULT) else {}
    if "h200" in old:
        report["h200"] = old["h200"]
    _write(report)
    return report


def twins(d: str, out: str) -> None:
    """Timing twins of every file for the H200 (64 MiB per call): float weights stripped, int weights zeroed, gzip."""
    write_twins({p: (path, "float" if p in ("fp32", "fp16") else "int") for p, path in _files(d).items()}, out)


def write_twins(files: dict, out: str) -> None:
    """``files``: {name: (path, "float" | "int")} -> ``out``/NAME.tflite.gz + index.json, as ``device`` reads them
    (also used by family.py)."""
    from edgedepth.formats.tflite import transport

    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    index = {}
    for p, (path, kind) in files.items():
        tmp = os.path.join(out, "tmp.tflite")
        (transport.strip if kind == "float" else transport.zero_int8)(path, tmp)
        with open(tmp, "rb") as src, gzip.open(os.path.join(out, p + ".tflite.gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(tmp)
        index[p] = {"file": os.path.basename(path), "twin": p + ".tflite.gz", "kind": kind}
    with open(os.path.join(out, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print({k: os.path.getsize(os.path.join(out, v["twin"])) for k, v in index.items()})


def device(twins_dir: str, out: str, rounds: int, warmup: int, iters: int) -> None:
    """On the H200: refill the twins, GPU-compile each in a child (a crash is a row), then one interleaved run of
    every compiled file at FP32-enforced and default precision."""
    from edgedepth.formats.tflite import transport
    from edgedepth.formats import tflite
    from edgedepth.runtimes.litert import LiteRTRunner
    from edgedepth.verify.bench import environment, run_interleaved

    index = json.load(open(os.path.join(twins_dir, "index.json")))
    work = "/tmp/ladder"
    os.makedirs(work, exist_ok=True)
    rows, runnable, x = {}, {}, None
    for p, v in index.items():
        raw = os.path.join(work, p + ".raw.tflite")
        with gzip.open(os.path.join(twins_dir, v["twin"]), "rb") as src, open(raw, "wb") as dst:
            shutil.copyfileobj(src, dst)
        path = os.path.join(work, v["file"])
        (transport.fill_float if v["kind"] == "float" else transport.fill_int8)(raw, path, seed=0)
        if x is None:
            shape = tflite.describe(path)["inputs"][0]["shape"]
            x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        g = tflite.gpu_check(path, x=x)
        row = {k: g[k] for k in GPU_KEYS}
        if g["fully_delegated"] and g.get("output") is not None:    # same twin on the CPU (a16w8 there: ~50 s, skipped)
            y_cpu = LiteRTRunner(path, "cpu", threads=2).run(x)
            row["gpu_vs_cpu_rel_l2"] = float(np.linalg.norm(g["output"] - y_cpu) / np.linalg.norm(y_cpu))
        rows[p] = row
        print(p, row, flush=True)
        if g["fully_delegated"] and not g["validation_errors"]:   # an invalid WebGPU pipeline times nothing
            runnable[p] = path
    variants = {}
    for p, path in runnable.items():
        variants[f"{p} gpu"] = lambda path=path: LiteRTRunner(path, "gpu")
        variants[f"{p} gpu-fp16"] = lambda path=path: LiteRTRunner(path, "gpu-fp16")
    lat = run_interleaved(variants, x, rounds=rounds, warmup=warmup, iters=iters)
    for name, v in lat["variants"].items():
        p, backend = name.split(" ")
        rows[p][backend] = v
        print(name, f"{v['median_ms']:.2f} ms", flush=True)
    with open(out, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d"), "environment": environment(2), "method": lat["method"],
                   "weights": "timing twins (same graphs, seeded weights: transport.fill_float / fill_int8)",
                   "rows": rows}, f, indent=1)


def merge(h200: str, result: str = RESULT) -> None:
    report = json.load(open(result))
    report["h200"] = json.load(open(h200))
    _write(report, result)


def _write(report: dict, result: str = RESULT) -> None:
    from edgedepth.fsutil import write_bytes_atomic
    from lib.records import attach as attach_records      # benchmarks/lib: the measurement records the release reads

    # keys sorted, then "records" last with its fields in schema order (the release embeds their rows as they are)
    report = json.loads(json.dumps({k: v for k, v in report.items() if k != "records"}, sort_keys=True))
    write_bytes_atomic(result, (json.dumps(attach_records(report, result), indent=1) + "\n").encode())
    print("wrote", os.path.relpath(result, ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["build", "cpu", "twins", "device", "merge"])
    ap.add_argument("--dir", default=os.path.join(ROOT, "out", "ladder"))
    ap.add_argument("--twins", default=TWINS)
    ap.add_argument("--images", type=int, default=110)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="/tmp/out/precision_ladder_h200.json")
    ap.add_argument("--h200", default=None)
    a = ap.parse_args()
    if a.command == "build":
        build(a.dir)
    elif a.command == "cpu":
        cpu(a.dir, a.images, a.rounds, a.warmup, a.iters, a.threads)
    elif a.command == "twins":
        twins(a.dir, a.twins)
    elif a.command == "device":
        device(a.twins, a.out, a.rounds, a.warmup, a.iters)
    else:
        merge(a.h200)


if __name__ == "__main__":
    main()
