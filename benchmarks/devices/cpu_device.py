"""CPU latency plain vs optimised vs floor on a second CPU: the lent H200 machine's host CPU (Python 3.12, no registries).

Same method as benchmarks/latency_floor.py (ai_edge_litert CPU, 2 threads, interleaved rounds) on a different x86 CPU,
to show how much of "optimised ÷ plain" is a property of the CPU.  Two steps:

  here:    .venv/bin/python benchmarks/devices/cpu_device.py prepare [--dir out/bench]
           -> .whl/ (ai-edge-litert for cp312) and .dev/cpu/ (about 30 MiB in all)
  device:  one call, carry [".whl", ".dev"]: `PYTHONPATH=src python3 benchmarks/devices/cpu_device.py run`   (writes $OUT/cpu_device.json)

Timing twins travel, not the files: INT8 files with their int8 weights zeroed (gzip -> a few MB; refilled there with
seeded random int8, edgedepth.formats.tflite.transport.zero_int8/fill_int8) and FP32 graphs stripped of their float weights (rebuilt
there from the refilled INT8 twin, transport.strip/rebuild).  Same graphs, shapes and arithmetic, other weight values:
valid for latency, not for parity.
"""

from __future__ import annotations

import glob
import gzip
import importlib.util
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SITE = "/tmp/cpu_device_site"                      # ai-edge-litert installed here on the device (by this script)
sys.path[:0] = [SITE]
P = "depth_anything_v2_small_518x686"
KINDS = ("plain", "", "floor")                     # file suffixes: _plain, (optimised), _floor
DEV = os.path.join(ROOT, ".dev", "cpu")


def _suffix(kind: str) -> str:
    return f"_{kind}" if kind else ""


def prepare(src_dir: str) -> None:
    from edgedepth.formats.tflite import transport

    shutil.rmtree(DEV, ignore_errors=True)
    os.makedirs(DEV)
    for kind in KINDS:
        fp32, int8 = (os.path.join(src_dir, f"{P}_{p}{_suffix(kind)}.tflite") for p in ("fp32", "int8"))
        for f in (fp32, int8):
            if not os.path.isfile(f):
                raise SystemExit(f"missing {f}: run STEPS=export benchmarks/run_cpu.sh and benchmarks/latency_floor.py")
        transport.strip(fp32, os.path.join(DEV, f"{P}_fp32{_suffix(kind)}.stripped.tflite"))
        zeroed = os.path.join(DEV, "zeroed.tflite")
        transport.zero_int8(int8, zeroed)
        with open(zeroed, "rb") as src, gzip.open(os.path.join(DEV, f"{P}_int8{_suffix(kind)}.zeroed.tflite.gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(zeroed)
    size = sum(os.path.getsize(f) for f in glob.glob(os.path.join(DEV, "*")))
    print(f"{DEV}: {size / 2**20:.1f} MiB")
    wheel = os.path.join(ROOT, ".whl", "ai_edge_litert-2.3.0-cp312-cp312-manylinux_2_27_x86_64.whl")
    if not os.path.isfile(wheel):
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                        "--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
                        "--platform", "manylinux_2_27_x86_64", "--platform", "manylinux_2_17_x86_64", "-d",
                        os.path.join(ROOT, ".whl"), "ai-edge-litert==2.3.0", "backports.strenum==1.2.8"], check=True)


def _materialise(work: str) -> dict[str, str]:
    """On the device: refill the INT8 twins, rebuild the FP32 files from them; returns {variant: path}."""
    from edgedepth.formats.tflite import transport

    files = {}
    for kind in KINDS:
        zeroed = os.path.join(work, f"{P}_int8{_suffix(kind)}.zeroed.tflite")
        with gzip.open(os.path.join(DEV, os.path.basename(zeroed) + ".gz"), "rb") as src, open(zeroed, "wb") as dst:
            shutil.copyfileobj(src, dst)
        files[f"int8{_suffix(kind)}"] = os.path.join(work, f"{P}_int8{_suffix(kind)}.twin.tflite")
        transport.fill_int8(zeroed, files[f"int8{_suffix(kind)}"], seed=0)
        files[f"fp32{_suffix(kind)}"] = os.path.join(work, f"{P}_fp32{_suffix(kind)}.twin.tflite")
        transport.rebuild(os.path.join(DEV, f"{P}_fp32{_suffix(kind)}.stripped.tflite"), files[f"int8{_suffix(kind)}"],
                          files[f"fp32{_suffix(kind)}"])
    return files


def run() -> None:
    import numpy as np

    from edgedepth.verify.bench import environment, floor_ratios, run_interleaved
    from edgedepth.formats.tflite import describe
    from edgedepth.runtimes.litert import LiteRTRunner

    rounds, warmup, iters = (int(v) for v in os.environ.get("CPU_METHOD", "3,5,12").split(","))
    if importlib.util.find_spec("ai_edge_litert") is None:      # the device has no registry: install the carried wheel
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", SITE,
                        *glob.glob(os.path.join(ROOT, ".whl", "*.whl"))], check=True)
        importlib.invalidate_caches()
    work = "/tmp/cpu_device"
    os.makedirs(work, exist_ok=True)
    files = _materialise(work)
    info = {k: describe(p) for k, p in files.items()}
    x = np.random.default_rng(0).standard_normal((1, 3, 518, 686), dtype=np.float32)
    order = ["fp32_plain", "fp32", "fp32_floor", "int8_plain", "int8", "int8_floor"]
    variants = {k: (lambda p=files[k]: LiteRTRunner(p, "cpu", threads=2)) for k in order}
    res = run_interleaved(variants, x, rounds=rounds, warmup=warmup, iters=iters)
    v = res["variants"]
    ratios = floor_ratios(v, info["fp32"]["macs"]["total"])
    for prec, r in ratios.items():
        print(prec, {k: round(val, 3) for k, val in r.items()}, flush=True)
    for k in order:
        v[k].update(ops=info[k]["ops"], macs=info[k]["macs"],
                    transport="timing twin: seeded random int8 weights" if k.startswith("int8") else
                    "timing twin: rebuilt from the random INT8 twin",
                    file=os.path.basename(files[k]))
        print(f"{k}: median {v[k]['median_ms']:.1f} ms", flush=True)
    env = environment(2)
    try:
        cpuinfo = open("/proc/cpuinfo").read()
        env["cpu_flags_avx512"], env["cpu_flags_amx"] = "avx512f" in cpuinfo, "amx_int8" in cpuinfo
    except OSError:
        pass
    out = {"kind": "edgedepth.latency_floor", "machine": "lent H200 machine, host CPU", "model": "synthetic",
           "size": [518, 686], "target_ratio": 0.75, "ratios": ratios, "method": res["method"], "variants": v,
           "environment": env}
    dst = os.path.join(os.environ.get("OUT", "/tmp"), "cpu_device.json")
    with open(dst, "w") as f:
        json.dump(out, f, indent=2)
    print("wrote", dst)


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "prepare":
        prepare(sys.argv[sys.argv.index("--dir") + 1] if "--dir" in sys.argv else os.path.join(ROOT, "out", "bench"))
    elif cmd == "run":
        run()
    else:
        raise SystemExit("usage: cpu_device.py prepare [--dir DIR] | run")
