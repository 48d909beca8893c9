"""What the per-call floor of LiteRT's GPU accelerator is made of (issue 15), on the H200.

The attribution (gpu_attribution.py) found ~2.4-3.6 ms per call that no graph change touches. This splits a call of
``LiteRTRunner`` (input ``write`` + ``run_by_index`` + output ``read``) into its parts, per file:

* ``call``       write + run + read (what every GPU figure in BENCHMARKS.md times);
* ``run+read``   the input already written (same bytes every call);
* ``write``      the host -> GPU input copy alone;
* ``run x4 + read``  four runs then one read, per run: whether runs queue without waiting (pipelining) or each
                 ``run_by_index`` blocks until the GPU is done.

Files (from ``.dev/gpu_attr``, refilled with seeded weights): a tiny one ([1,8] ADD: dispatch + sync, no bytes), the
token-sized ADD file (2.8 MB in and out), the model-sized I/O file (4.3 MB in, 1.4 MB out, one MEAN) and the same with
a float16 and a uint8 input (CAST in the graph), the shipped model, and the shipped model exported with
``--input-dtype uint8``, with fp16 weights, and both (the release's WebGPU file); ``--build`` makes the input-dtype and
fp16 files here and records which synthetic-release file (name, SHA-256) each timing twin stands for. One interleaved run: ``--rounds`` rounds, order
rotated, ``--warmup`` + ``--iters`` calls per slot, FP32 enforced (``--backend gpu-fp16``: the default precision).

    .venv/bin/python benchmarks/gpu_floor.py --build          # here, once: the input-dtype files
    (device) python3 benchmarks/gpu_floor.py --out $OUT/gpu_floor.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


FILES = {"tiny [1,8] ADD": "call_tiny_x1", "token-sized ADD": "call_tokens_x1", "model-sized I/O + MEAN": "call_model_io_x1",
         "model-sized I/O, float16 input": "io_f16", "model-sized I/O, uint8 input (/255 in the graph)": "io_u8",
         "shipped model": "model_shipped", "shipped model, uint8 input (--input-dtype uint8)": "model_shipped_u8in",
         "fp16 weights, float32 input (the WebGPU file until now)": "model_shipped_fp16",
         "fp16 weights, uint8 input (the release's WebGPU file)": "model_shipped_fp16_u8in"}
# Made by `gpu_floor.py --build`: the I/O files travel as they are; the models stripped (edgedepth.formats.tflite.transport), refilled
# there with seeded weights in their own type (FLOAT32 / FLOAT16).
MODELS = {"model_shipped_u8in": ("fp32", "uint8"), "model_shipped_fp16": ("fp16", "float32"),   # (precision, input)
          "model_shipped_fp16_u8in": ("fp16", "uint8")}
STRIPPED = set(MODELS)
DTYPES = {"io_f16": np.float16, "io_u8": np.uint8, **{k: np.dtype(d).type for k, (_, d) in MODELS.items()}}
STANDS_FOR = "stands_for.json"   # model key -> the synthetic release file (name, sha256) its timing twin stands for


def build(folder: str) -> None:
    """Here: the model-sized I/O file (one MEAN over the channels) with a float16 and a uint8 input (CAST in the graph;
    uint8 also /255): what writing the input costs when the input is 2x or 4x smaller."""
    import litert_torch
    import torch
    from torch import nn

    from edgedepth.progress import quiet_output

    class IO(nn.Module):
        def __init__(self, kind):
            super().__init__()
            self.kind = kind

        def forward(self, x):
            x = x.float() / 255.0 if self.kind == "io_u8" else x.float()
            return x.mean(dim=1)

    shape = (1, 3, 518, 686)
    for kind, sample in (("io_f16", torch.randn(shape).half()), ("io_u8", torch.randint(0, 256, shape, dtype=torch.uint8))):
        with quiet_output(True), torch.no_grad():
            litert_torch.convert(IO(kind).eval(), (sample,)).export(os.path.join(folder, kind + ".tflite"))
        print("built", kind)
    from edgedepth import formats, transport
    from edgedepth.checkpoint import load_checkpoint
    from edgedepth.fsutil import sha256_file, write_bytes_atomic

    model = load_checkpoint("synthetic", quiet=True).model
    stands = {}
    for key, (precision, dtype) in MODELS.items():
        (f,) = formats.export(model, 518, 686, folder, precisions=(precision,), input_dtype=dtype)
        stands[key] = {"file": os.path.basename(f.path), "sha256": sha256_file(f.path)}
        transport.strip(f.path, os.path.join(folder, f"{key}.stripped.tflite"), min_bytes=1024)
        os.remove(f.path)
        print(f"built {key} (stripped)", flush=True)
    write_bytes_atomic(os.path.join(folder, STANDS_FOR), json.dumps(stands, indent=1).encode())


def _gpu_name() -> str:
    """The GPU's name from nvidia-smi ("" without one): the Python API does not name LiteRT's WebGPU adapter."""
    import subprocess

    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                              text=True, timeout=30).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        return ""


def call(r, x):
    """write + run + read, as LiteRTRunner.run, but writing ``x`` in its own dtype (the runner casts to float32 any
    input that is not uint8, which a float16-input file must not get)."""
    r._ib[0].write(x)
    r._cm.run_by_index(0, r._ib, r._ob)
    r._ob[0].read(r._n_out, np.float32)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dir", default=".dev/gpu_attr")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "out"), "gpu_floor.json"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--backend", default="gpu", choices=["gpu", "gpu-fp16"],
                    help="gpu: FP32 enforced; gpu-fp16: LiteRT's default precision")
    ap.add_argument("--files", nargs="*", help="only these FILES keys (e.g. model_shipped model_shipped_u8in)")
    ap.add_argument("--parts", nargs="*", help="only these parts (call, run+read, write, 'run x4 + read, per run')")
    ap.add_argument("--build", action="store_true", help="make the input-dtype files in --dir (here) and stop")
    a = ap.parse_args()
    if a.build:
        build(a.dir)
        return 0

    from edgedepth.formats.tflite import transport
    from edgedepth.fsutil import write_bytes_atomic
    from edgedepth.runtimes.litert import LiteRTRunner
    from edgedepth.verify.bench import environment

    index = json.load(open(os.path.join(a.dir, "index.json")))
    entries = {**{f"{n}_x{k}": f for n, p in index["pieces"].items() for k, f in p["reps"].items()},
               **{f"model_{n}": f for n, f in index["models"].items()}}
    runners = {}
    for label, key in FILES.items():
        if a.files and key not in a.files:
            continue
        if key in DTYPES:
            path = os.path.join(a.dir, key + ".tflite")
            if key in STRIPPED:
                path = f"/tmp/{key}.tflite"
                transport.fill_float(os.path.join(a.dir, key + ".stripped.tflite"), path, seed=0)
            f = {"file": os.path.basename(path), "input": [1, 3, 518, 686]}
            x = np.random.default_rng(1).standard_normal(f["input"])
            x = (x if DTYPES[key] == np.float32 else (x * 50 + 100).clip(0, 255)).astype(DTYPES[key])
        else:
            f = entries[key]
            path = f"/tmp/{key}.tflite"
            transport.fill_float(os.path.join(a.dir, f["file"]), path, seed=0)
            x = np.random.default_rng(1).standard_normal(f["input"], dtype=np.float32)
        r = LiteRTRunner(path, backend=a.backend)
        call(r, x)
        runners[label] = (r, x, f)

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
    parts = {p: v for p, v in parts.items() if not a.parts or p in a.parts}
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
           "backend": a.backend,
           "method": f"LiteRT GPU accelerator, {'FP32 enforced' if a.backend == 'gpu' else 'default precision'}; {a.rounds} interleaved rounds x ({a.warmup} + {a.iters}) "
                     "per (file, part), order rotated; medians",
           "method_counts": {"rounds": a.rounds, "warmup": a.warmup, "iters": a.iters},
           "device": "NVIDIA H200 (LiteRT WebGPU accelerator over Vulkan)" if "H200" in _gpu_name() else _gpu_name(),
           "files": {}}
    stands = json.load(open(os.path.join(a.dir, STANDS_FOR))) if os.path.isfile(os.path.join(a.dir, STANDS_FOR)) else {}
    for lab, (r, x, f) in runners.items():
        out["files"][lab] = {"file": FILES[lab], "stands_for": stands.get(FILES[lab]), "input": f["input"],
                             "input_mb": x.nbytes / 1e6,
                             "output_mb": r._n_out * 4 / 1e6, "ops": f.get("ops"),
                             "median_ms": {p: float(np.median(times[(lab, p)])) for p in parts}}
        print(lab, {p: round(v, 3) for p, v in out["files"][lab]["median_ms"].items()}, flush=True)
        r.close()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    from lib.records import attach as attach_records      # benchmarks/lib: the measurement records the release reads

    write_bytes_atomic(a.out, json.dumps(attach_records(out, a.out), indent=1).encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
