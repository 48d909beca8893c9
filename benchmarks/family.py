"""The model family at 518x686 (issue 17): every Depth Anything V2 member edgedepth knows, exported, checked and timed
the same way — one table of size, ops, GPU delegation, accuracy, CPU / H200 latency and export cost.

Members: the synthetic stand-ins (full architecture, seeded realistic weights; ``edgedepth.models``) of Small relative,
Metric-Indoor-Small, Metric-Outdoor-Small, Base and Large.  Depth quality does not transfer to the trained
checkpoints; graph, ops, delegation, latency, parity and export cost do.

Method:
- build: per member, two child processes of this script, one after the other: the optimised LiteRT FP32 + INT8
  (``formats.export``, default rewrites) and the plain FP32 (``rewrites=()``, for the op count).  Each child reports
  its export wall time (imports and checkpoint load excluded: ``load_s``) and its peak RSS (``getrusage(RUSAGE_SELF)``;
  for a child killed, e.g. out of memory, the parent's ``wait4`` figure, plus ``free -m``).  The lowest MemAvailable
  seen during the child is recorded too (the machine is shared).
- files: ops, op histogram, bytes, SHA-256 (``formats.open_artifact``); GPU: compiled on LiteRT's GPU accelerator
  alone (SwiftShader here) for optimised FP32 / INT8 and the plain FP32.
- parity: LiteRT CPU (2 threads) FP32 and INT8 vs PyTorch FP32 of the same member, ``image_set(limit=N)`` (default 11:
  one view of each bundled photo; ``edgedepth.verify.validate``).  Noise reference: PyTorch FP32 vs PyTorch float64
  (``model.double()``, float64 input) of the same member on the first 2 of those images, pooled rel-L2 — what
  summation order alone costs at FP32.
- CPU latency: ONE interleaved run (``run_interleaved``) over every member's FP32 and INT8 file, 2 threads, first
  bundled photo.  Large takes ~11 s a call here, so rounds / warm-ups / timed calls are few (3 x (1 + 3)).
- H200: timing twins of the optimised files (same graphs, seeded weights; ``precision_ladder.write_twins`` /
  ``precision_ladder.device``), FP32-enforced and default precision, one interleaved run.

    .venv/bin/python benchmarks/family.py build [--dir out/family] [--members a,b] [--force]   # ~20 min, Large ~7
    .venv/bin/python benchmarks/family.py cpu   [--images 11] [--members a,b]     # -> results/family.json, ~35 min
    .venv/bin/python benchmarks/family.py twins                                  # -> .dev/family_twins (24 MB)
    device: carry [".dev/family_twins", ".whl", ".gl"], bash benchmarks/devices/family_device.sh -> $OUT/family_h200.json
    .venv/bin/python benchmarks/family.py merge --h200 FILE                      # H200 rows into the same JSON
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import subprocess
import sys
import threading
import time

import precision_ladder as ladder       # benchmarks/ (the script's folder) is on sys.path

H, W = ladder.H, ladder.W
ROOT = ladder.ROOT
RESULT = os.path.join(ROOT, "benchmarks", "results", "family.json")
TWINS = os.path.join(ROOT, ".dev", "family_twins")
MEMBERS = ("synthetic", "synthetic-metric-indoor", "synthetic-metric-outdoor", "synthetic-base", "synthetic-large")
TAG = "FAMILY_BUILD "
T0 = time.time()


def _log(msg: str) -> None:
    print(f"{time.time() - T0:7.0f} s  {msg}", flush=True)


def _member(name: str):
    from edgedepth.models import MEMBERS as ALL, SYNTHETIC

    return ALL[SYNTHETIC[name][0]]


def _files(d: str, name: str) -> dict:
    """{"fp32", "int8", "fp32_plain"}: paths of a member's files (named as formats.export names them)."""
    from edgedepth.formats.tflite import file_name

    stem = _member(name).file_stem
    return {"fp32": os.path.join(d, file_name(H, W, "fp32", stem=stem)),
            "int8": os.path.join(d, file_name(H, W, "int8", stem=stem)),
            "fp32_plain": os.path.join(d, file_name(H, W, "fp32", plain=True, stem=stem))}


def build_one(name: str, d: str, plain: bool) -> None:
    """Child: export one member (optimised FP32 + INT8, or plain FP32); last line = TAG + JSON facts."""
    from edgedepth import formats
    from edgedepth.checkpoint import load_checkpoint

    what = f"{name} {'plain' if plain else 'optimised'}"
    _log(f"{what}: load checkpoint")
    ckpt = load_checkpoint(name, quiet=True)
    t1 = time.time()
    files = formats.export(ckpt.model, H, W, d, target_name="litert",
                           precisions=("fp32",) if plain else ("fp32", "int8"), rewrites=() if plain else "default",
                           stem=ckpt.file_stem,
                           progress=lambda s: _log(f"{what}: {s}"))
    print(TAG + json.dumps({"load_s": t1 - T0, "export_s": time.time() - t1, "rewrites": files[0].rewrites,
                            "files": {f.precision: os.path.basename(f.path) for f in files},
                            "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}), flush=True)


def _mem_available_mib() -> float:
    with open("/proc/meminfo") as f:
        return next(int(line.split()[1]) / 1024 for line in f if line.startswith("MemAvailable"))


def _child(name: str, d: str, plain: bool) -> dict:
    """Run ``build-one`` in a child, echo its progress, return its facts (or why it failed, with the wait4 peak)."""
    cmd = [sys.executable, os.path.abspath(__file__), "build-one", name, "--dir", d] + (["--plain"] if plain else [])
    t0, low, done = time.time(), [_mem_available_mib()], threading.Event()

    def watch():
        while not done.wait(2.0):
            low[0] = min(low[0], _mem_available_mib())
    threading.Thread(target=watch, daemon=True).start()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    facts, tail = None, []
    for line in proc.stdout:
        if line.startswith(TAG):
            facts = json.loads(line[len(TAG):])
        else:
            tail = (tail + [line.rstrip()])[-20:]
            print("   | " + line.rstrip(), flush=True)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    out = {"wall_s": time.time() - t0, "min_mem_available_mib": low[0], "returncode": proc.returncode,
           "peak_rss_mib_wait4": usage.ru_maxrss / 1024}
    if facts is None or proc.returncode:
        out.update(error=f"child exited {proc.returncode}", log_tail=tail,
                   free_m=subprocess.run(["free", "-m"], capture_output=True, text=True).stdout)
    return {**out, **(facts or {})}


def build(d: str, names: list[str], force: bool) -> None:
    os.makedirs(d, exist_ok=True)
    for name in names:
        path, files = os.path.join(d, f"{name}.json"), _files(d, name)
        rec = json.load(open(path)) if os.path.exists(path) and not force else {}
        for key, plain, want in (("optimised", False, ("fp32", "int8")), ("plain", True, ("fp32_plain",))):
            if key in rec and "error" not in rec[key] and all(os.path.exists(files[k]) for k in want):
                _log(f"{name} {key}: files exist, skipped (--force rebuilds)")
                continue
            _log(f"{name} {key}: start (MemAvailable {_mem_available_mib() / 1024:.1f} GiB)")
            rec[key] = _child(name, d, plain)
            r = rec[key]
            _log(f"{name} {key}: {'FAILED ' + r['error'] if 'error' in r else 'done'} — wall {r['wall_s']:.0f} s, "
                 f"export {r.get('export_s', float('nan')):.0f} s, peak RSS "
                 f"{r.get('peak_rss_mib', r['peak_rss_mib_wait4']) / 1024:.2f} GiB, min MemAvailable "
                 f"{r['min_mem_available_mib'] / 1024:.1f} GiB")
            with open(path, "w") as f:
                json.dump({"member": name, **rec}, f, indent=1)


def _float64_floor(module, items) -> dict:
    """PyTorch FP32 vs PyTorch float64 (same member, same inputs): the FP32 rounding every FP32 runtime shares."""
    import copy

    import torch

    from edgedepth.preprocess import preprocess
    from edgedepth.verify.parity import ParityAccumulator

    m64, acc = copy.deepcopy(module).double().eval(), ParityAccumulator()
    for it in items:
        x = preprocess(it.load(), (H, W))
        with torch.no_grad():
            acc.add(module.eval()(torch.from_numpy(x)).numpy(), m64(torch.from_numpy(x).double()).numpy())
    del m64
    return acc.summary()


def cpu(d: str, names: list[str], n_images: int, rounds: int, warmup: int, iters: int, threads: int,
        out: str) -> dict:
    import torch

    from edgedepth import formats
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.images import default_image_set, image_set, image_set_hash
    from edgedepth.preprocess import preprocess
    from edgedepth.verify.bench import environment, run_interleaved
    from edgedepth.verify.validate import validate

    torch.set_num_threads(threads)
    items = image_set(limit=n_images)
    rows, arts = {}, {}
    for name in names:
        m, build_rec = _member(name), json.load(open(os.path.join(d, f"{name}.json")))
        arts[name] = {k: formats.open_artifact(p) for k, p in _files(d, name).items()}
        files = {}
        for k, art in arts[name].items():
            g = art.gpu_check()
            files[k] = {"file": art.name, "bytes": art.info["bytes"], "sha256": art.sha256, "ops": art.info["ops"],
                        "op_histogram": art.info["op_histogram"],
                        "gpu_swiftshader": {key: g.get(key) for key in ladder.GPU_KEYS}}
            _log(f"{name} {k}: {art.info['bytes'] / 1e6:.1f} MB, {art.info['ops']} ops, SwiftShader "
                 f"{'fully delegated' if g['fully_delegated'] else g['error']}")
        ckpt = load_checkpoint(name, quiet=True)
        module = DepthModule(ckpt.model).eval()
        done = [0]

        def progress(n, name=name):
            done[0] += n
            _log(f"{name}: parity {done[0]}/{2 * len(items)} runs")
        for res in validate([arts[name]["fp32"], arts[name]["int8"]], ["cpu"], module, items, threads=threads,
                            progress=progress):
            k = next(k for k, a in arts[name].items() if a.name == res["artifact"])
            files[k]["parity"] = res["metrics"] if res["status"] == "ok" else {"error": res["error"]}
            _log(f"{name} {k}: parity {files[k]['parity'].get('pooled_rel_l2')} on {len(items)} images")
        floor = _float64_floor(module, items[:2])
        _log(f"{name}: PyTorch FP32 vs float64 {floor['pooled_rel_l2']:.2e} on 2 images")
        a = m.arch
        rows[name] = {
            "member": m.name, "hub_id": m.hub_id, "license": m.license, "kind": m.kind, "max_depth": m.max_depth,
            "output": m.output_semantics, "file_stem": m.file_stem,
            "arch": {"hidden_size": a.hidden_size, "layers": a.num_hidden_layers, "heads": a.num_attention_heads,
                     "out_indices": list(a.out_indices)},
            "params": sum(p.numel() for p in ckpt.model.parameters()), "provenance": ckpt.provenance(),
            "files": files, "float64_floor": floor,
            "build": {k: build_rec.get(k) for k in ("optimised", "plain")}}
        del ckpt, module
        gc.collect()
    x = preprocess(default_image_set()[0].load(), (H, W))
    lat = run_interleaved({f"{n}.{p}": (lambda a=arts[n][p]: a.open_runner("cpu", threads))
                           for n in names for p in ("fp32", "int8")}, x, rounds=rounds, warmup=warmup, iters=iters,
                          progress=lambda i, n: _log(f"CPU latency {i}/{n} calls") if i % 10 == 0 else None)
    for key, v in lat["variants"].items():
        n, p = key.split(".")
        rows[n]["files"][p]["cpu_latency"] = v
        _log(f"{key}: CPU {v['median_ms']:.0f} ms")
    report = {
        "kind": "edgedepth.family", "date": time.strftime("%Y-%m-%d"), "size": [H, W],
        "environment": environment(threads), "cpu_method": lat["method"], "cpu_peak_rss_mb": lat["peak_rss_mb"],
        "parity_method": {"images": len(items), "image_set_sha256": image_set_hash(items), "reference": "PyTorch FP32",
                          "runtime": f"LiteRT CPU, {threads} threads",
                          "float64_floor": "PyTorch FP32 vs PyTorch float64 (model.double()), first 2 parity images"},
        "build_method": "per member: optimised FP32+INT8 export, then plain FP32 export, each in its own child "
                        "process; export_s excludes imports and the checkpoint load (load_s); peak RSS = the child's "
                        "getrusage(RUSAGE_SELF).ru_maxrss",
        "members": list(names), "rows": rows}
    old = json.load(open(out)) if os.path.exists(out) else {}
    if "h200" in old:
        report["h200"] = old["h200"]
    ladder._write(report, out)
    return report


def twins(d: str, names: list[str], out: str) -> None:
    """H200 timing twins of every optimised FP32 (stripped) and INT8 (zeroed) file, named ``<member>.<precision>``."""
    ladder.write_twins({f"{n}.{p}": (_files(d, n)[p], "float" if p == "fp32" else "int")
                        for n in names for p in ("fp32", "int8")}, out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["build", "build-one", "cpu", "twins", "device", "merge"])
    ap.add_argument("name", nargs="?", help="build-one: the member")
    ap.add_argument("--dir", default=os.path.join(ROOT, "out", "family"))
    ap.add_argument("--members", default=",".join(MEMBERS))
    ap.add_argument("--force", action="store_true")
    ap.add_argument("--plain", action="store_true", help="build-one: the plain FP32")
    ap.add_argument("--twins", default=TWINS)
    ap.add_argument("--images", type=int, default=11)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--result", default=RESULT, help="cpu / merge: the family JSON")
    ap.add_argument("--out", default="/tmp/out/family_h200.json", help="device: where the H200 JSON goes")
    ap.add_argument("--h200", default=None)
    a = ap.parse_args()
    names = [n for n in a.members.split(",") if n]
    bad = [n for n in names if n not in MEMBERS]
    if bad:
        ap.error(f"unknown member {bad[0]!r} (choose from {', '.join(MEMBERS)})")
    if a.command == "build":
        build(a.dir, names, a.force)
    elif a.command == "build-one":
        build_one(a.name, a.dir, a.plain)
    elif a.command == "cpu":
        cpu(a.dir, names, a.images, a.rounds, a.warmup, a.iters, a.threads, a.result)
    elif a.command == "twins":
        twins(a.dir, names, a.twins)
    elif a.command == "device":
        ladder.device(a.twins, a.out, a.rounds, a.warmup, a.iters)
    else:
        ladder.merge(a.h200, a.result)


if __name__ == "__main__":
    main()
