"""What the per-call floor of LiteRT's GPU accelerator is made of (issue 15), on the H200.

The attribution (gpu_attribution.py) found ~2.4-3.6 ms per call that no graph change touches. This splits a call of
``LiteRTRunner`` (input ``write`` + ``run_by_index`` + output ``read``) into its parts, per file:

* ``call``       write + run + read (what every GPU figure in BENCHMARKS.md times);
* ``run+read``   the input already written (same bytes every call);
* ``write``      the host -> GPU input copy alone;
* ``run x4 + read``  four runs then one read, per run: whether runs queue without waiting (pipelining) or each
                 ``run_by_index`` blocks until the GPU is done.

Files (from ``.dev/gpu_attr``, refilled with seeded weights): a tiny one ([1,8] ADD: dispatch + sync, no bytes), the
token-sized ADD file (2.8 MB in and out), the model-sized I/O file (4.3 MB in, 1.4 MB out, one MEAN) and the shipped
model. One interleaved run: ``--rounds`` rounds, order rotated, ``--warmup`` + ``--iters`` calls per slot, FP32
enforced.

    (device) python3 benchmarks/gpu_floor.py --out $OUT/gpu_floor.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "src"))
sys.path.insert(0, SRC)

FILES = {"tiny [1,8] ADD": "call_tiny_x1", "token-sized ADD": "call_tokens_x1", "model-sized I/O + MEAN": "call_model_io_x1",
         "shipped model": "model_shipped"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=".dev/gpu_attr")
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()

    from edgedepth import transport
    from edgedepth.runtimes.litert import LiteRTRunner
    from edgedepth.verify.bench import environment

    index = json.load(open(os.path.join(a.dir, "index.json")))
    entries = {**{f"{n}_x{k}": f for n, p in index["pieces"].items() for k, f in p["reps"].items()},
               **{f"model_{n}": f for n, f in index["models"].items()}}
    runners = {}
    for label, key in FILES.items():
        f = entries[key]
        path = f"/tmp/{key}.tflite"
        transport.fill_float(os.path.join(a.dir, f["file"]), path, seed=0)
        r = LiteRTRunner(path, backend="gpu")
        x = np.random.default_rng(1).standard_normal(f["input"], dtype=np.float32)
        r.run(x)
        runners[label] = (r, x, f)

    def call(r, x):
        r.run(x)

    def run_read(r, x):
        r._cm.run_by_index(0, r._ib, r._ob)
        r._ob[0].read(r._n_out, np.float32)

    def write(r, x):
        r._ib[0].write(x)

    def run4_read(r, x):
        for _ in range(4):
            r._cm.run_by_index(0, r._ib, r._ob)
        r._ob[0].read(r._n_out, np.float32)

    parts = {"call": (call, 1), "run+read": (run_read, 1), "write": (write, 1), "run x4 + read, per run": (run4_read, 4)}
    times = {(lab, p): [] for lab in runners for p in parts}
    order = [(lab, p) for lab in runners for p in parts]
    for rd in range(a.rounds):
        for lab, p in order[rd % len(order):] + order[:rd % len(order)]:
            r, x, _ = runners[lab]
            fn, per = parts[p]
            for i in range(a.warmup + a.iters):
                t = time.perf_counter()
                fn(r, x)
                dt = (time.perf_counter() - t) * 1000 / per
                if i >= a.warmup:
                    times[(lab, p)].append(dt)
    out = {"kind": "edgedepth.gpu_floor", "environment": environment(threads=None),
           "method": f"LiteRT GPU accelerator, FP32 enforced; {a.rounds} interleaved rounds x ({a.warmup} + {a.iters}) "
                     "per (file, part), order rotated; medians",
           "files": {}}
    for lab, (r, x, f) in runners.items():
        out["files"][lab] = {"file": FILES[lab], "input": f["input"], "input_mb": x.nbytes / 1e6,
                             "output_mb": r._n_out * 4 / 1e6, "ops": f["ops"],
                             "median_ms": {p: float(np.median(times[(lab, p)])) for p in parts}}
        print(lab, {p: round(v, 3) for p, v in out["files"][lab]["median_ms"].items()}, flush=True)
        r.close()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out + ".tmp", "w") as fh:
        json.dump(out, fh, indent=1)
    os.replace(a.out + ".tmp", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
