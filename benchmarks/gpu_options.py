"""LiteRT's GPU options measured and chosen (issue 30): every ``GpuOptions`` flag on the release's GPU-facing files.

Steps:
  here:    .venv/bin/python benchmarks/gpu_options.py prepare out/depth-anything-v2-small     (-> .dev/gpu, ~29 MB)
  device:  python3 benchmarks/gpu_options.py run        (one interleaved run; writes $OUT/gpu_options.json)
           python3 benchmarks/gpu_options.py compare    (the WebGPU file, chosen flags vs none, for the same call as
                                                         gpu_reference.py; writes $OUT/gpu_options_compare.json)
  (benchmarks/devices/gpu_truth_device.sh wraps both device calls.)

What travels (64 MiB per call): the release's 518x686 INT8 file as is, its FP32 file stripped of its weights (rebuilt
there from the INT8 file: the originals rounded to 8 bits, edgedepth.formats.tflite.transport.rebuild) and the WebGPU file
(``_fp16_u8in``) stripped (refilled there with seeded fp16 values, transport.fill_float: same graph, ops and kernels).

Method (``run``): variants = file x precision (``enforce_f32`` on = "fp32", off = LiteRT's default, which may compute in
FP16) x flag set (none, each flag alone, and the pairs that could add up). All are compiled first (GPU alone; a flag
that fails to compile is a result), then ``--rounds`` interleaved rounds, order rotated each round, ``--warmup`` + ``--iters``
calls per slot; a call = input write + run + output read (edgedepth.verify.bench.run_interleaved). Correctness: every
variant's output on ``--images`` photos vs LiteRT CPU (all cores) on the same file: pooled rel-L2, and "correct" =
finite and within 1.5x the same file + precision's no-flag rel-L2 (what the GPU costs anyway). ``constant_tensor_sharing``
runs in a child process first (it crashed ai-edge-litert 2.3.0): its exit status is recorded. The chosen flags = the
flag set that is correct on every file and precision and has the lowest geometric-mean time ratio to no flags.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess

import numpy as np

from edgedepth.runtimes import litert

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

STEM = os.environ.get("GPU_OPTIONS_STEM", "depth_anything_v2_small_518x686")   # a tiny release's stem: smoke test
SIZE = tuple(int(v) for v in STEM.rsplit("_", 1)[1].split("x"))
DEV = os.path.join(ROOT, ".dev", "gpu")
WORK = "/tmp/gpu_options"
FLAGS = ("hint_waiting_for_completion", "allow_src_quantized_fc_conv_ops", "benchmark_mode", "infinite_float_capping")
FLAG_SETS = {"none": (), **{f: (f,) for f in FLAGS},
             "hint+quantized": ("hint_waiting_for_completion", "allow_src_quantized_fc_conv_ops"),
             "hint+capping": ("hint_waiting_for_completion", "infinite_float_capping")}
CRASHER = "constant_tensor_sharing"


def prepare(release: str) -> None:
    from edgedepth.formats.tflite import transport
    from edgedepth.images import source_files

    shutil.rmtree(DEV, ignore_errors=True)
    os.makedirs(os.path.join(DEV, "images"))
    transport.strip(os.path.join(release, f"{STEM}_fp32.tflite"), os.path.join(DEV, f"{STEM}_fp32.stripped.tflite"))
    transport.strip(os.path.join(release, f"{STEM}_fp16_u8in.tflite"),
                    os.path.join(DEV, f"{STEM}_fp16_u8in.stripped.tflite"))
    shutil.copy(os.path.join(release, f"{STEM}_int8.tflite"), DEV)
    for p in source_files():
        shutil.copy(p, os.path.join(DEV, "images"))
    print(subprocess.run(["du", "-sh", DEV], capture_output=True, text=True).stdout.strip())


def materialise() -> dict:
    """The three GPU-facing files on the device, built once per machine in WORK: {label: path}."""
    from edgedepth.formats.tflite import transport

    os.makedirs(WORK, exist_ok=True)
    files = {"webgpu (fp16 weights, uint8 in; seeded twin)": os.path.join(WORK, f"{STEM}_fp16_u8in.twin.tflite"),
             "fp32 (weights from the INT8 file)": os.path.join(WORK, f"{STEM}_fp32.rebuilt.tflite"),
             "int8": os.path.join(DEV, f"{STEM}_int8.tflite")}
    w, f, _ = files.values()
    if not os.path.exists(w):
        transport.fill_float(os.path.join(DEV, f"{STEM}_fp16_u8in.stripped.tflite"), w)
    if not os.path.exists(f):
        transport.rebuild(os.path.join(DEV, f"{STEM}_fp32.stripped.tflite"), files["int8"], f)
    return files


def crash_canary(path: str) -> dict:
    """Compile + run ``path`` on the GPU with constant_tensor_sharing in a child process; its exit status."""
    return litert.gpu_flag_run(path, CRASHER)


def _photos(shape, n: int) -> list:
    from edgedepth.images import default_image_set
    from edgedepth.preprocess import preprocess

    items = default_image_set(root=os.path.join(DEV, "images"))
    step = max(1, len(items) // n)
    return [preprocess(it.load(), tuple(shape[2:])) for it in items[::step][:n]]


def _build(variants: dict) -> tuple[dict, dict]:
    """Compile every variant once: ({name: (label, runner)}, {name: error}); a flag that fails is a result."""
    live, errors = {}, {}
    for name, (label, factory) in variants.items():
        try:
            live[name] = (label, factory())
        except Exception as e:  # noqa: BLE001
            errors[name] = " ".join(str(e).split())[:300]
        print("compiled" if name in live else "FAILED", name, flush=True)
    return live, errors


def _correctness(files: dict, live: dict, n_images: int) -> dict:
    """Pooled rel-L2 of every variant vs LiteRT CPU on the same file, over ``n_images`` photos."""
    from edgedepth.runtimes.litert import LiteRTRunner
    from edgedepth.verify.bench import input_for
    from edgedepth.verify.parity import ParityAccumulator

    out = {}
    for label, path in files.items():
        cpu = LiteRTRunner(path, backend="cpu", threads=os.cpu_count() or 4)
        xs = [input_for(cpu, x) for x in _photos((1, 3) + SIZE, n_images)]
        refs = [cpu.run(x) for x in xs]
        cpu.close()
        for name, (vlabel, r) in live.items():
            if vlabel != label:
                continue
            try:
                acc = ParityAccumulator()
                for x, ref in zip(xs, refs):
                    acc.add(r.run(x), ref)
                rel = acc.summary()["pooled_rel_l2"]
                out[name] = {"pooled_rel_l2_vs_cpu": rel, "finite": bool(np.isfinite(rel))}
            except Exception as e:  # noqa: BLE001 - a failing flag is a result
                out[name] = {"error": " ".join(str(e).split())[:300]}
    return out


def _variants(files: dict, flag_sets: dict) -> dict:
    from edgedepth.runtimes.litert import LiteRTRunner

    v = {}
    for label, path in files.items():
        for prec, backend in (("fp32", "gpu"), ("default", "gpu-fp16")):
            for set_name, flags in flag_sets.items():
                v[f"{label} | {prec} | {set_name}"] = (label, lambda p=path, b=backend, f=flags:
                                                       LiteRTRunner(p, backend=b, gpu_options={k: True for k in f}))
    return v


def _time(live: dict, a) -> dict:
    from edgedepth.verify.bench import run_interleaved

    x = _photos((1, 3) + SIZE, 1)[0]
    return run_interleaved({n: (lambda r=r: r) for n, (_l, r) in live.items()}, x,
                           rounds=a.rounds, warmup=a.warmup, iters=a.iters)


def choose(report: dict) -> dict:
    """The flag set correct everywhere with the lowest geometric-mean time ratio to no flags (ties: fewer flags)."""
    bench, corr = report["bench"]["variants"], report["correctness"]
    base = {n.rsplit(" | ", 1)[0]: n for n in bench if n.endswith("| none")}
    scores = {}
    for set_name in FLAG_SETS:
        ratios, ok = [], True
        for key, b in base.items():
            n = f"{key} | {set_name}"
            if n not in bench:
                continue
            c, c0 = corr.get(n, {}), corr.get(b, {})
            if "error" in c or not c.get("finite") or c["pooled_rel_l2_vs_cpu"] > 1.5 * c0["pooled_rel_l2_vs_cpu"]:
                ok = False
            ratios.append(bench[n]["median_ms"] / bench[b]["median_ms"])
        if ratios:
            scores[set_name] = {"geomean_ratio_to_none": float(np.exp(np.mean(np.log(ratios)))), "correct": ok,
                                "pairs": len(ratios)}
    def earns(flag):                 # a flag earns its place alone: correct and >= 1 % faster (less is noise)
        one = scores.get(flag, {})
        return one.get("correct", False) and one.get("geomean_ratio_to_none", 1.0) < 0.99

    good = {k: v for k, v in scores.items() if v["correct"] and all(earns(f) for f in FLAG_SETS[k])}
    best = min(good, key=lambda k: (round(good[k]["geomean_ratio_to_none"], 3), len(FLAG_SETS[k])), default="none")
    return {"scores": scores, "chosen": best, "flags": list(FLAG_SETS[best]),
            "rule": "a flag set whose flags each earn their place alone (correct on every file and precision: "
                    "finite, rel-L2 vs CPU <= 1.5x no flags'; geometric-mean median ratio to no flags < 0.99), "
                    "the lowest ratio of those; else no flags"}


def rechoose(path: str) -> None:
    """Apply ``choose`` to a measured gpu_options.json again (after the rule changed); rewrites its ``choice``."""
    report = json.load(open(path))
    report["choice"] = choose(report)
    with open(path, "w") as f:
        json.dump(report, f, indent=1)
    print(report["choice"]["chosen"], report["choice"]["flags"])


def run(a) -> None:
    from edgedepth.verify.bench import environment

    files = materialise()
    report = {"kind": "edgedepth.gpu_options", "environment": environment(threads=None),
              "files": {k: os.path.basename(v) for k, v in files.items()},
              "method": {"rounds": a.rounds, "warmup": a.warmup, "iters": a.iters, "images": a.images,
                         "flag_sets": {k: list(v) for k, v in FLAG_SETS.items()}, "doc": __doc__.split("Method")[1]}}
    report["crash_canary"] = crash_canary(files["fp32 (weights from the INT8 file)"])
    print("canary", report["crash_canary"], flush=True)
    live, report["compile_errors"] = _build(_variants(files, FLAG_SETS))
    report["correctness"] = _correctness(files, live, a.images)
    report["bench"] = _time(live, a)
    report["choice"] = choose(report)
    _write(report, "gpu_options.json")
    for n, s in report["bench"]["variants"].items():
        print(f"{n:<70} {s['median_ms']:7.2f} ms  rel-L2 {report['correctness'].get(n)}")
    print("chosen:", report["choice"]["chosen"], report["choice"]["scores"])


def compare(a) -> None:
    """The WebGPU file: chosen flags vs none, both precisions, interleaved (for the same call as gpu_reference.py)."""
    from edgedepth.verify.bench import environment

    # this machine's own choice when `run` went before on it, else the committed one (results/gpu_options.json)
    here = os.path.join(WORK, "gpu_options.json")
    chosen = json.load(open(here if os.path.exists(here) else os.path.join(ROOT, "benchmarks", "results",
                                                                           "gpu_options.json")))["choice"]
    files = materialise()
    webgpu = {k: v for k, v in files.items() if k.startswith("webgpu")}
    sets = {"none": (), chosen["chosen"]: tuple(chosen["flags"])}
    report = {"kind": "edgedepth.gpu_options_compare", "environment": environment(threads=None), "chosen": chosen,
              "method": {"rounds": a.rounds, "warmup": a.warmup, "iters": a.iters}}
    live, report["compile_errors"] = _build(_variants(webgpu, sets))
    report["bench"] = _time(live, a)
    _write(report, "gpu_options_compare.json")
    for n, s in report["bench"]["variants"].items():
        print(f"{n:<70} {s['median_ms']:7.2f} ms (IQR {s['p25_ms']:.2f}-{s['p75_ms']:.2f})")


def _write(report: dict, name: str) -> None:
    for d in (os.environ.get("OUT", "/tmp/out"), WORK):
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, name), "w") as f:
            json.dump(report, f, indent=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("prepare", "run", "compare", "rechoose"))
    ap.add_argument("release", nargs="?", default=os.path.join(ROOT, "out", "depth-anything-v2-small"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--images", type=int, default=3)
    a = ap.parse_args()
    {"prepare": lambda: prepare(a.release), "run": lambda: run(a), "compare": lambda: compare(a),
     "rechoose": lambda: rechoose(a.release)}[a.step]()


if __name__ == "__main__":
    main()
