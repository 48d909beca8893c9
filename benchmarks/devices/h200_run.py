"""Runs ON the lent H200 machine (Python 3.12, no registries): GPU delegation, latency and GPU-vs-CPU parity.

Invoked by the device call documented in BENCHMARKS.md (see benchmarks/devices/h200_prepare.sh for what travels).  For each
FP32/INT8 pair in .dev/models: rebuild the FP32 file from its stripped graph + INT8 twin, check full delegation on the
GPU accelerator alone (log names the adapter), time GPU (enforce_f32) vs GPU (default precision) interleaved, and compare
both GPU modes with LiteRT CPU on the same device over the default image set.  Writes $OUT/h200.json.
"""

from __future__ import annotations

import glob
import json
import os
import time


import numpy as np  # noqa: E402

from edgedepth.formats.tflite import transport  # noqa: E402
from edgedepth.verify.bench import environment, run_interleaved  # noqa: E402
from edgedepth.images import default_image_set, image_set_hash  # noqa: E402
from edgedepth.formats.tflite import describe, gpu_check  # noqa: E402
from edgedepth.verify.parity import ParityAccumulator  # noqa: E402
from edgedepth.preprocess import preprocess  # noqa: E402
from edgedepth.runtimes.litert import LiteRTRunner  # noqa: E402


def main() -> None:
    out = os.environ.get("OUT", "/tmp/out")
    rounds, warmup, iters = (int(v) for v in os.environ.get("H200_METHOD", "6,20,60").split(","))
    limit = int(os.environ.get("H200_IMAGES", "0")) or None
    work = "/tmp/h200"
    os.makedirs(work, exist_ok=True)
    report = {"kind": "edgedepth.h200", "environment": environment(threads=None), "files": {}, "bench": None,
              "parity": {}}
    files = {}
    for stripped in sorted(glob.glob(".dev/models/*.stripped.tflite")):
        stem = os.path.basename(stripped).replace(".stripped.tflite", "")
        int8 = os.path.join(".dev/models", stem.replace("_fp32", "_int8") + ".tflite")
        fp32 = os.path.join(work, stem + ".rebuilt.tflite")
        t = time.time()
        transport.rebuild(stripped, int8, fp32)
        print(f"rebuilt {fp32} in {time.time() - t:.1f}s", flush=True)
        for name, path, note in ((stem + " (weights from INT8 twin)", fp32, "rebuilt"), (os.path.basename(int8), int8, "original")):
            g = gpu_check(path)
            info = describe(path)
            files[name] = path
            report["files"][name] = {"ops": info["ops"], "bytes": info["bytes"], "transport": note, "gpu": g}
            print(name, info["ops"], "ops; GPU:", "fully delegated" if g["fully_delegated"] else g["error"],
                  "| adapter:", g["adapter"], flush=True)
    report["environment"]["gpu_adapter"] = next((f["gpu"]["adapter"] for f in report["files"].values()), None)
    shape = tuple(describe(next(iter(files.values())))["inputs"][0]["shape"])
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    variants = {}
    for name, path in files.items():
        if not report["files"][name]["gpu"]["fully_delegated"]:
            continue
        for backend in ("gpu", "gpu-fp16"):
            variants[f"{name} [{backend}]"] = (lambda p=path, b=backend: LiteRTRunner(p, backend=b))
    if not variants:
        raise SystemExit("no file compiled fully on the GPU: see the delegation lines above")
    report["bench"] = run_interleaved(variants, x, rounds=rounds, warmup=warmup, iters=iters)
    for n, s in report["bench"]["variants"].items():
        print(f"{n}: median {s['median_ms']:.2f} ms (IQR {s['p25_ms']:.2f}-{s['p75_ms']:.2f})", flush=True)
    items = default_image_set(root=".dev/images")
    if limit:
        items = items[:limit]
    report["image_set"] = {"count": len(items), "sha256": image_set_hash(items)}
    inputs = [preprocess(it.load(), shape[2:]) for it in items]
    for name, path in files.items():
        cpu = LiteRTRunner(path, backend="cpu", threads=os.cpu_count() or 4)
        refs = [cpu.run(xi) for xi in inputs]
        cpu.close()
        for backend in ("gpu", "gpu-fp16"):
            key = f"{name} [{backend} vs cpu]"
            try:
                r = LiteRTRunner(path, backend=backend)
            except Exception as e:  # reported, not skipped
                report["parity"][key] = {"error": str(e)}
                continue
            acc = ParityAccumulator()
            for xi, ri in zip(inputs, refs):
                acc.add(r.run(xi), ri)
            r.close()
            report["parity"][key] = acc.summary()
            print(key, "pooled rel-L2 %.3e" % report["parity"][key]["pooled_rel_l2"], flush=True)
    with open(os.path.join(out, "h200.json"), "w") as f:
        json.dump(report, f, indent=2)


if __name__ == "__main__":
    main()
