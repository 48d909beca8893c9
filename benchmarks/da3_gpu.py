"""Depth Anything 3 Small vs Depth Anything V2 Small at 518x518 on the lent H200: LiteRT GPU and PyTorch CUDA.

Issue 31 (goal 5's GPU side).  The stand-ins ``synthetic`` (V2 Small architecture) and ``synthetic-da3-small`` (DA3
Small: the package's backbone + DualDPT head, seeded weights) are exported here exactly as benchmarks/da3_vs_v2.py does
(``edgedepth.formats.export``, target litert, default rewrites, FP32 + INT8); the device receives at most 64 MiB per
call, so the four files travel as timing twins (``edgedepth.formats.tflite.transport``):

- INT8 file: every int8 weight zeroed (``zero_int8``; scales, float tensors and graph kept), gzip; refilled there
  with seeded int8 values (``fill_int8``, seed 0);
- FP32 file: its graph with the float weights emptied (``strip``), gzip; rebuilt there from the refilled INT8 twin
  (``rebuild``: every emptied tensor = the INT8 twin's same-named tensor, dequantised with the real scales; the
  float tensors the INT8 file keeps -- position embeddings, RoPE tables, norms, biases -- are the real ones).

A twin has the real file's exact graph, ops and shapes (latency, delegation and GPU-vs-CPU agreement transfer; PyTorch
parity does not: that is measured here, benchmarks/da3_vs_v2.py).  ``prepare`` rebuilds every twin here too and records
its SHA-256; ``run`` compares (the same bytes = the same twin, given the same numpy / ai-edge-litert).

``run`` (on the device, one call): rebuild the twins, then

1. LiteRT part (a child process): per file, compile on LiteRT's GPU accelerator alone with FP32 enforced
   (``tflite.gpu_check``, itself a child: fully on the GPU or not, ops GPU / CPU, adapter) and rel-L2 of that GPU
   output vs LiteRT CPU of the same file on one seeded input; then ONE interleaved run (``run_interleaved``: R rounds,
   order rotated, W warm-ups + N timed calls; timed = input write + synchronous invoke + output read) of every fully
   delegated file at FP32-enforced (``gpu``) and default precision (``gpu-fp16``); each timed runner's first output is
   compared with the CPU's too.
2. PyTorch part (a child process): both models as ``DepthModule(ckpt.model)`` (the module the exporter starts from,
   before rewrites), eager FP32 (TF32 off) and ``torch.compile(mode="reduce-overhead")`` under FP16 autocast (CUDA
   graphs, ``torch.compiler.cudagraph_mark_step_begin()`` before each call: benchmarks/gpu_reference.py's
   ``make_variant``); first call / compile timed apart; rel-L2 vs a float64 CPU run of the same model; then R rounds,
   order rotated, W warm-ups + N timed calls on a device-resident input, two timers per call (CUDA events and the
   synchronised wall clock: gpu_reference's ``Timer``), + throughput (100 calls synchronised once).

``$OUT/da3_gpu.json`` is written after the twins, after the LiteRT part and after the PyTorch part (a timeout keeps
what was measured); ratios DA3 / V2 per runtime and precision are in ``ratios``.

    .venv/bin/python benchmarks/da3_gpu.py prepare [--reuse] [--dir out/da3_gpu]  # here: ~2 min on 2 cores
                                                                   # -> .dev/da3gpu (twins + wheels + index.json)
    device: carry [".gl", ".whl", ".whl2", ".dev/da3gpu"]   bash benchmarks/devices/da3_gpu_device.sh
    then: cp <files_at>/da3_gpu.json benchmarks/results/ && .venv/bin/python benchmarks/da3_gpu.py check-twins
    smoke test here (SwiftShader): prepare --tiny (~1 min) && run --tiny --no-cuda (~15 s; --torch-cpu: +2 min)
"""

from __future__ import annotations

import argparse
import gc
import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TWINS = os.path.join(ROOT, ".dev", "da3gpu")
TINY_TWINS = os.path.join(ROOT, ".dev", "da3gpu-tiny")
MODELS = {"v2_small": "synthetic", "da3_small": "synthetic-da3-small"}
TINY_MODELS = {"v2_small": "synthetic-tiny", "da3_small": "synthetic-da3-tiny"}
PRECISIONS = ("fp32", "int8")
BACKENDS = ("gpu", "gpu-fp16")
TORCH_VARIANTS = ("eager-fp32", "compile-cudagraphs-fp16")
# what the DA3 PyTorch model needs on the device (depth_anything_3/model/** + cfg.py imports; PyYAML for omegaconf,
# in case the device's is missing); versions = this machine's .venv.  antlr4 4.9.3 has no wheel on PyPI: built here.
WHEELS = {"depth-anything-3": "0.1.1", "einops": "0.8.2", "addict": "2.4.0", "omegaconf": "2.3.1",
          "antlr4-python3-runtime": "4.9.3", "PyYAML": "6.0.4"}
PACKAGES = ("torch", "transformers", "ai-edge-litert", "litert-torch", "ai-edge-quantizer", "depth-anything-3",
            "einops", "omegaconf", "numpy")
GPU_KEYS = ("fully_delegated", "gpu_ops", "cpu_ops", "unsupported", "validation_errors", "validation_error",
            "error", "adapter")
T0 = time.time()


def _log(msg: str) -> None:
    print(f"{time.time() - T0:7.1f} s  {msg}", flush=True)


def _sha(path: str) -> str:
    from edgedepth.fsutil import sha256_file

    return sha256_file(path)


def _no_nan(obj):
    """``obj`` with every float NaN as None (strict JSON; a NaN rel-L2 comes from non-finite outputs: check-twins)."""
    if isinstance(obj, float) and obj != obj:
        return None
    if isinstance(obj, dict):
        return {k: _no_nan(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_no_nan(v) for v in obj]
    return obj


def _write(obj: dict, path: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(_no_nan(obj), f, indent=1, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def _models(tiny: bool) -> dict:
    return TINY_MODELS if tiny else MODELS


def _size(a) -> tuple[int, int]:
    from edgedepth.preprocess import parse_size

    return parse_size(a.size or ("56x56" if a.tiny else "518x518"))


def _input(h: int, w: int) -> np.ndarray:
    """The one input of every check and timed call: seeded standard normal [1,3,H,W] (numpy default_rng(0))."""
    return np.random.default_rng(0).standard_normal((1, 3, h, w)).astype(np.float32)


# ---------------------------------------------------------------- twins (here: make + verify; there: rebuild)

def _unzip(src: str, dst: str) -> None:
    with gzip.open(src, "rb") as i, open(dst, "wb") as o:
        shutil.copyfileobj(i, o)


def rebuild_twins(twins: str, index: dict, work: str) -> dict:
    """``work``/<key>.<precision>.tflite for every file in ``index``: INT8 = fill_int8(zeroed, seed 0), FP32 =
    rebuild(stripped, that INT8 twin).  Returns {name: {"path", "sha256", "matches_prepare", "rebuild_s"}}."""
    from edgedepth.formats.tflite import transport

    os.makedirs(work, exist_ok=True)
    out = {}
    for name, f in sorted(index["files"].items(), key=lambda kv: kv[1]["precision"] != "int8"):   # INT8 first
        t0 = time.perf_counter()
        raw, path = os.path.join(work, name + ".carried.tflite"), os.path.join(work, name + ".tflite")
        _unzip(os.path.join(twins, f["twin"]), raw)
        if f["twin_method"] == "fill_int8":
            transport.fill_int8(raw, path, seed=0)
        else:
            transport.rebuild(raw, out[f["rebuild_from"]]["path"], path)
        os.remove(raw)
        sha, want = _sha(path), f.get("twin_sha256")
        out[name] = {"path": path, "sha256": sha, "matches_prepare": sha == want if want else None,
                     "rebuild_s": round(time.perf_counter() - t0, 2)}
        _log(f"twin {name}: {os.path.getsize(path) / 1e6:.1f} MB, {out[name]['rebuild_s']} s, SHA-256 {sha[:12]}… "
             + ("" if not want else "= prepare's" if sha == want else "DIFFERS from prepare's (other numpy / "
                "ai-edge-litert? same graph either way)"))
    return out


def _export(ckpt, h: int, w: int, d: str, reuse: bool) -> tuple[dict, dict]:
    """Here only: da3_vs_v2's export (the same default-rewrite LiteRT FP32 + INT8 files as its CPU table)."""
    from da3_vs_v2 import export_files

    return export_files(ckpt, h, w, d, reuse)


def _wheels(dest: str) -> dict:
    """cp312 wheels of WHEELS into ``dest`` (pip download; antlr4 built from its sdist by pip wheel); {file: sha256}."""
    os.makedirs(dest, exist_ok=True)
    plat = ["--python-version", "3.12", "--implementation", "cp", "--platform", "manylinux_2_28_x86_64",
            "--platform", "manylinux_2_17_x86_64", "--platform", "manylinux2014_x86_64"]
    for name, ver in WHEELS.items():
        if any(f.lower().startswith(name.lower().replace("-", "_") + "-" + ver) for f in os.listdir(dest)):
            continue
        cmd = ["python3", "-m", "pip", "download", "-q", "--no-deps",
               "--only-binary=:all:", *plat, "-d", dest, f"{name}=={ver}"]
        if subprocess.run(cmd, capture_output=True, text=True).returncode != 0:     # no wheel published: build one
            r = subprocess.run(["python3", "-m", "pip", "wheel", "-q", "--no-deps", "-w", dest, f"{name}=={ver}"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"no wheel for {name}=={ver}: {r.stderr.strip()[-300:]}")
        _log(f"wheel {name}=={ver}")
    whl = sorted(f for f in os.listdir(dest) if f.endswith(".whl"))
    bad = [f for f in whl if not (f.endswith("-none-any.whl") or "-cp312-" in f)]
    if bad:
        raise SystemExit(f"not a cp312 / pure-Python wheel: {bad}")
    return {f: _sha(os.path.join(dest, f)) for f in whl}


def prepare(a) -> None:
    import torch

    from edgedepth import formats
    from edgedepth.checkpoint import DepthModule, load_checkpoint, state_dict_digest
    from edgedepth.formats.tflite import transport

    h, w = _size(a)
    twins = a.twins or (TINY_TWINS if a.tiny else TWINS)
    d = os.path.join(a.dir, f"{h}x{w}")
    os.makedirs(d, exist_ok=True)
    os.makedirs(twins, exist_ok=True)
    for f in os.listdir(twins):                        # old twins go; the wheels (whl/) stay
        if f.endswith(".tflite.gz") or f in ("index.json", ".verify"):
            shutil.rmtree(os.path.join(twins, f)) if os.path.isdir(os.path.join(twins, f)) else os.remove(
                os.path.join(twins, f))
    torch.set_num_threads(a.threads)
    files, models = {}, {}
    with_vs = {}
    vs_path = os.path.join(ROOT, "benchmarks", "results", "da3_vs_v2.json")
    if os.path.exists(vs_path) and not a.tiny:          # the CPU benchmark's files, by SHA-256 (same file or not)
        vs = json.load(open(vs_path))
        with_vs = {f"{k}.{p}": f["sha256"] for k, r in vs["rows"].items() for p, f in r["files"].items()}
    for key, name in _models(a.tiny).items():
        ckpt = load_checkpoint(name, quiet=True)
        module = DepthModule(ckpt.model).eval()
        models[key] = {"checkpoint": name, "class": type(ckpt.model).__name__,
                       "params": int(sum(p.numel() for p in module.parameters())),
                       "state_dict_sha256": state_dict_digest(module)}
        paths, build = _export(ckpt, h, w, d, a.reuse)
        models[key]["build"] = build
        del module, ckpt
        gc.collect()
        for p in ("int8", "fp32"):                     # INT8 first: the FP32 twin is rebuilt from it
            n, path = f"{key}.{p}", paths[p]
            info = formats.open_artifact(path).info
            tmp = os.path.join(twins, "tmp.tflite")
            if p == "int8":
                count = transport.zero_int8(path, tmp)
                twin, method, src = f"{n}.zeroed.tflite.gz", "fill_int8", None
            else:
                count = transport.strip(path, tmp)
                twin, method, src = f"{n}.stripped.tflite.gz", "rebuild", f"{key}.int8"
            with open(tmp, "rb") as i, gzip.GzipFile(os.path.join(twins, twin), "wb", mtime=0) as o:
                shutil.copyfileobj(i, o)
            os.remove(tmp)
            files[n] = {"model": key, "precision": p, "file": os.path.basename(path), "sha256": _sha(path),
                        "bytes": os.path.getsize(path), "ops": info["ops"], "twin": twin, "twin_method": method,
                        "rebuild_from": src, "tensors_emptied_or_zeroed": count,
                        "carried_bytes": os.path.getsize(os.path.join(twins, twin)),
                        "carried_sha256": _sha(os.path.join(twins, twin))}
            if n in with_vs:
                files[n]["same_file_as_da3_vs_v2_json"] = files[n]["sha256"] == with_vs[n]
            _log(f"{n}: {files[n]['bytes'] / 1e6:.1f} MB, {info['ops']} ops -> twin {files[n]['carried_bytes'] / 1e6:.2f} MB")
    index = {"kind": "edgedepth.da3_gpu.twins", "date": time.strftime("%Y-%m-%d"), "size": [h, w], "tiny": a.tiny,
             "models": models, "files": files}
    # the device's steps, here: each twin's SHA-256 (and a sanity check: same ops as the real file)
    work = os.path.join(twins, ".verify")
    built = rebuild_twins(twins, {**index, "files": files}, work)
    for n, b in built.items():
        files[n]["twin_sha256"] = b["sha256"]
        ops = formats.open_artifact(b["path"]).info["ops"]
        if ops != files[n]["ops"]:
            raise SystemExit(f"twin {n}: {ops} ops, the real file {files[n]['ops']}")
    shutil.rmtree(work)
    if not a.tiny:
        index["wheels"] = _wheels(os.path.join(twins, "whl"))
    _write(index, os.path.join(twins, "index.json"))
    du = subprocess.run(["du", "-sh", twins] + [os.path.join(ROOT, x) for x in (".whl", ".whl2", ".gl")
                                                if os.path.isdir(os.path.join(ROOT, x))],
                        capture_output=True, text=True).stdout
    print(du.strip())
    tot = subprocess.run(["du", "-csm", twins] + [os.path.join(ROOT, x) for x in (".whl", ".whl2", ".gl")
                                                  if os.path.isdir(os.path.join(ROOT, x))],
                         capture_output=True, text=True).stdout.split()[-2]
    _log(f"wrote {os.path.relpath(twins, ROOT)}/index.json; carried folders {tot} MiB in all (+ the ~4.5 MiB checkout; "
         "a call takes 64 MiB)")


# ---------------------------------------------------------------- device: LiteRT part

class _FirstOutput:
    """A runner that keeps its first output (run_interleaved's untimed first call), then runs unwrapped."""

    def __init__(self, runner):
        self.inner, self.first = runner, None
        self.input_dtype = runner.input_dtype

    def run(self, x):
        y = self.inner.run(x)
        self.first = np.array(y, copy=True)
        self.run = self.inner.run          # later calls (the timed ones) skip this wrapper
        return y

    def close(self):
        self.inner.close()


def litert_part(a) -> None:
    from edgedepth.formats import tflite
    from edgedepth.runtimes.litert import LiteRTRunner
    from edgedepth.verify.bench import run_interleaved
    from edgedepth.verify.parity import rel_l2

    files = json.load(open(a.files))
    h, w = _size(a)
    x = _input(h, w)
    threads = min(8, os.cpu_count() or 2)
    part: dict = {"rows": {}, "cpu_threads": threads}
    timed = {}
    for n, path in files.items():
        t0 = time.perf_counter()
        info = tflite.describe(path)
        g = tflite.gpu_check(path, x=x, info=info)
        row = {"ops": info["ops"], "gpu_only_fp32": {k: g.get(k) for k in GPU_KEYS}}
        if g.get("fully_delegated") and g.get("gpu_ops") is None:     # the probe logs no count when none fall back
            row["gpu_only_fp32"]["gpu_ops"] = info["ops"]
        row["gpu_only_fp32"]["check_s"] = round(time.perf_counter() - t0, 1)
        cpu = LiteRTRunner(path, "cpu", threads=threads)
        try:
            y_cpu = np.asarray(cpu.run(x), np.float64)
        finally:
            cpu.close()
        part.setdefault("_cpu", {})[n] = y_cpu
        if g.get("output") is not None:
            row["gpu_only_fp32"]["rel_l2_vs_cpu"] = rel_l2(np.asarray(g["output"]).reshape(y_cpu.shape), y_cpu)
        ok = bool(g.get("fully_delegated")) and not g.get("validation_errors")
        row["timed"] = ok
        part["rows"][n] = row
        adapter = g.get("adapter")
        if adapter:
            part["adapter"] = adapter
        _log(f"{n}: GPU alone (FP32 enforced) {'fully delegated' if g.get('fully_delegated') else g.get('error')} "
             f"(gpu {row['gpu_only_fp32']['gpu_ops']} / cpu {g.get('cpu_ops')}), rel-L2 vs CPU "
             f"{row['gpu_only_fp32'].get('rel_l2_vs_cpu', float('nan')):.2e}, {row['gpu_only_fp32']['check_s']} s")
        if ok:
            timed[n] = path
    cpus = part.pop("_cpu")
    _write(part, a.part)
    wrappers = {}

    def factory(n, backend, path):
        def make():
            wrappers[f"{n} {backend}"] = _FirstOutput(LiteRTRunner(path, backend))
            return wrappers[f"{n} {backend}"]
        return make

    variants = {f"{n} {b}": factory(n, b, p) for n, p in timed.items() for b in BACKENDS}
    if not variants:
        part["error"] = "no file compiled fully on the GPU: nothing timed"
        _write(part, a.part)
        return
    _log(f"LiteRT GPU: {len(variants)} variants interleaved, {a.rounds} rounds x ({a.warmup} + {a.iters})")
    lat = run_interleaved(variants, x, rounds=a.rounds, warmup=a.warmup, iters=a.iters)
    part["method"] = lat["method"]
    for name, v in lat["variants"].items():
        n, b = name.split(" ")
        wr = wrappers[name]
        part["rows"][n][b] = {**v, "fully_accelerated": bool(wr.inner.fully_accelerated),
                              "rel_l2_vs_cpu": rel_l2(wr.first.reshape(cpus[n].shape), cpus[n])}
        _log(f"{name}: median {v['median_ms']:.2f} ms (IQR {v['p25_ms']:.2f}-{v['p75_ms']:.2f}), rel-L2 vs CPU "
             f"{part['rows'][n][b]['rel_l2_vs_cpu']:.2e}")
    _write(part, a.part)


# ---------------------------------------------------------------- device: PyTorch part

def torch_part(a) -> None:
    import copy

    import torch

    from edgedepth.checkpoint import DepthModule, load_checkpoint, state_dict_digest
    from gpu_reference import Timer, _both, _counters, _timed, make_variant, rel_l2, set_tf32, sync

    device = "cpu" if a.torch_cpu else "cuda"
    h, w = _size(a)
    x_np = _input(h, w)
    x = torch.from_numpy(x_np).to(device)
    torch.manual_seed(0)
    part: dict = {"device": device, "rows": {}}
    try:
        from gpu_reference import gpu_environment
        part["environment"] = gpu_environment()
    except Exception as e:  # noqa: BLE001
        part["environment"] = {"error": f"{type(e).__name__}: {e}"[:300]}
    timer, live = Timer(device), {}
    for key, name in _models(a.tiny).items():
        t0 = time.perf_counter()
        ckpt = load_checkpoint(name, quiet=True)
        module = DepthModule(ckpt.model).eval()
        row = {"checkpoint": name, "class": type(ckpt.model).__name__, "state_dict_sha256": state_dict_digest(module),
               "params": int(sum(p.numel() for p in module.parameters())), "load_s": round(time.perf_counter() - t0, 1),
               "variants": {}}
        with torch.no_grad():
            ref = copy.deepcopy(module).double()(torch.from_numpy(x_np).double()).detach()
        row["reference"] = {"what": "float64, CPU, same model and input", "mean": float(ref.mean()),
                            "std": float(ref.std())}
        module.to(device)
        for v in TORCH_VARIANTS:
            try:
                tf32, call = make_variant(v, module, device)
                set_tf32(tf32)
                t0 = time.perf_counter()
                y = call(x).clone()
                sync(device)
                first = time.perf_counter() - t0
                for _ in range(2):              # CUDA graphs record on the 2nd/3rd call: check what replays
                    y = call(x).clone()
                sync(device)
                row["variants"][v] = {"first_call_s": round(first, 2), **rel_l2(y, ref)}
                live[f"{key} {v}"] = (tf32, call)
            except Exception as e:  # noqa: BLE001 - a failing variant is a result
                row["variants"][v] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:500]}
            _log(f"torch {key} {v}: {row['variants'][v]}")
        row["counters_after_setup"] = _counters()
        part["rows"][key] = row
        _write(part, a.part)
    times = {n: [] for n in live}
    walls = {n: [] for n in live}
    rmed = {n: [] for n in live}
    order = list(live)
    orders = []
    for r in range(a.torch_rounds):
        orders.append(order[r % len(order):] + order[: r % len(order)])
        for n in orders[-1]:
            tf32, call = live[n]
            set_tf32(tf32)
            key, v = n.split(" ")
            try:
                for _ in range(a.torch_warmup):
                    call(x)
                sync(device)
                t, wl = _timed(timer, call, x, a.torch_iters)
            except Exception as e:  # noqa: BLE001
                part["rows"][key]["variants"][v]["error"] = f"round {r}: {type(e).__name__}: {e}"[:500]
                continue
            times[n] += t
            walls[n] += wl
            rmed[n].append(float(np.median(t)))
    for n in live:
        key, v = n.split(" ")
        if times[n]:
            tf32, call = live[n]
            set_tf32(tf32)
            part["rows"][key]["variants"][v].update(_both(times[n], walls[n]), round_medians_ms=rmed[n],
                                                    throughput_ms=timer.throughput(call, x, 100))
            s = part["rows"][key]["variants"][v]
            _log(f"torch {n}: events {s['median_ms']:.3f} ms, wall {s['wall_median_ms']:.3f}, "
                 f"x100 {s['throughput_ms']:.3f}")
    set_tf32(False)
    part["method"] = {"rounds": a.torch_rounds, "warmup": a.torch_warmup, "iters": a.torch_iters,
                      "interleaved": True, "order_rotated_per_round": True, "orders": orders}
    part["counters_after_rounds"] = _counters()
    _write(part, a.part)


# ---------------------------------------------------------------- device: orchestration

_RUNNING: dict = {}      # the child process now running; "stop" once SIGTERM came (the wrapper's `timeout`)


def _on_term(signum, frame) -> None:
    _RUNNING["stop"] = True
    p = _RUNNING.get("child")
    if p is not None and p.poll() is None:
        os.killpg(p.pid, signal.SIGKILL)


def _child(step: str, a, extra: list[str], part: str, timeout: float) -> tuple[dict | None, dict]:
    """Run ``step`` of this script in its own process group (killed with its own children on timeout or SIGTERM);
    returns (its part JSON as far as written, or None; how it ended)."""
    cmd = [sys.executable, os.path.abspath(__file__), step, "--part", part, *extra]
    t0 = time.perf_counter()
    p = _RUNNING["child"] = subprocess.Popen(cmd, start_new_session=True)
    try:
        rc = p.wait(timeout=timeout)
        how = {"returncode": rc}
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        how = {"returncode": None, "error": f"timed out after {timeout:.0f} s (part JSON = what it had written)"}
    _RUNNING["child"] = None
    if _RUNNING.get("stop"):
        how["error"] = "stopped by SIGTERM (the wrapper's timeout); part JSON = what it had written"
    elif how.get("returncode"):
        how["error"] = f"exited {how['returncode']}"
    how["wall_s"] = round(time.perf_counter() - t0, 1)
    data = json.load(open(part)) if os.path.exists(part) else None
    return data, how


def _ratio(a_: dict | None, b_: dict | None, key: str = "median_ms") -> dict | None:
    if not a_ or not b_ or key not in a_ or key not in b_:
        return None
    out = {"median": a_[key] / b_[key]}
    if a_.get("round_medians_ms") and b_.get("round_medians_ms") and key == "median_ms":
        out["per_round"] = [x / y for x, y in zip(a_["round_medians_ms"], b_["round_medians_ms"])]
    return out


def ratios(rep: dict) -> dict:
    out = {}
    rows = (rep.get("litert") or {}).get("rows") or {}
    for p in PRECISIONS:
        for b in BACKENDS:
            r = _ratio((rows.get(f"da3_small.{p}") or {}).get(b), (rows.get(f"v2_small.{p}") or {}).get(b))
            if r:
                out[f"litert {p} file {b}"] = r
    trows = (rep.get("torch") or {}).get("rows") or {}
    for v in TORCH_VARIANTS:
        da3, v2 = ((trows.get(k) or {}).get("variants", {}).get(v) for k in ("da3_small", "v2_small"))
        r = _ratio(da3, v2)
        if r:
            r["wall_median"] = _ratio(da3, v2, "wall_median_ms")["median"]
            r["throughput"] = _ratio(da3, v2, "throughput_ms")["median"]
            out[f"torch {v}"] = r
    return out


def _nvidia_smi() -> dict:
    try:
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit",
                            "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
        k = ("gpu", "driver", "memory", "max_sm_clock", "power_limit")
        return dict(zip(k, (s.strip() for s in q.splitlines()[0].split(","))))
    except Exception as e:  # noqa: BLE001
        return {"gpu": None, "nvidia_smi": f"unavailable ({type(e).__name__})"}


def run(a) -> None:
    from edgedepth.verify.bench import environment
    from lib.machine import versions      # benchmarks/lib

    signal.signal(signal.SIGTERM, _on_term)
    twins = a.twins or (TINY_TWINS if a.tiny else TWINS)
    index = json.load(open(os.path.join(twins, "index.json")))
    if bool(index.get("tiny")) != bool(a.tiny):
        raise SystemExit(f"{twins} holds {'tiny' if index.get('tiny') else 'full-size'} twins; run "
                         f"{'with' if index.get('tiny') else 'without'} --tiny")
    a.size = a.size or "x".join(map(str, index["size"]))
    h, w = _size(a)
    out = a.out or os.path.join(os.environ.get("OUT", "/tmp/out"), "da3_gpu.json")
    work = a.work
    env = {**environment(threads=None), **_nvidia_smi(), "versions": versions(PACKAGES),
           "vulkan_icd": os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES")}
    rep: dict = {
        "kind": "edgedepth.da3_gpu", "issue": 31, "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "command": "benchmarks/da3_gpu.py " + " ".join(sys.argv[1:]), "size": [h, w], "tiny": a.tiny,
        "models": _models(a.tiny), "environment": env,
        "method": {
            "weights": "timing twins of the files exported here (edgedepth.formats.export, target litert, default "
                       "rewrites): INT8 = int8 weights refilled with seeded values (transport.fill_int8, seed 0; real "
                       "scales), FP32 = the real graph rebuilt from that INT8 twin (transport.rebuild: weights "
                       "dequantised, float constants real). Same graphs, ops, shapes; PyTorch uses the synthetic "
                       "checkpoints themselves (state-dict SHA-256 per row)",
            "input": f"seeded standard normal [1,3,{h},{w}] float32 (numpy default_rng(0)), the same for every row",
            "litert": "per file: GPU accelerator alone, FP32 enforced (tflite.gpu_check, own process): delegation + "
                      "rel-L2 vs LiteRT CPU of the same file; then ONE interleaved run (run_interleaved) of every "
                      "fully delegated file at FP32-enforced ('gpu') and default precision ('gpu-fp16'): R rounds, "
                      "order rotated, W warm-ups + N timed calls; timed = input write + synchronous invoke + output "
                      "read; compile excluded",
            "torch": "DepthModule(checkpoint model) (the module the exporter starts from, before rewrites); eager "
                     "FP32 (TF32 off) and torch.compile(mode='reduce-overhead', dynamic=False) under FP16 autocast "
                     "(CUDA graphs; cudagraph_mark_step_begin before each call); all four interleaved, R rounds, "
                     "order rotated, W warm-ups + N timed calls on a device-resident input; per call CUDA events "
                     "(median_ms) and synchronised wall clock (wall_median_ms); throughput_ms = 100 calls "
                     "synchronised once / 100; compile excluded (first_call_s); rel-L2 vs float64 CPU",
            "counts": {"litert": {"rounds": a.rounds, "warmup": a.warmup, "iters": a.iters},
                       "torch": {"rounds": a.torch_rounds, "warmup": a.torch_warmup, "iters": a.torch_iters}}},
        "prepare": index, "status": {}}
    rep["prepare"].pop("wheels", None)
    _write(rep, out)
    t0 = time.perf_counter()
    built = rebuild_twins(twins, index, work)
    rep["twins"] = {n: {k: v for k, v in b.items() if k != "path"} for n, b in built.items()}
    rep["status"]["twins_s"] = round(time.perf_counter() - t0, 1)
    _write(rep, out)
    files = {n: b["path"] for n, b in built.items()}
    files_json = os.path.join(work, "files.json")
    _write(files, files_json)
    common = ["--size", f"{h}x{w}"] + (["--tiny"] if a.tiny else [])
    if _RUNNING.get("stop"):
        raise SystemExit("SIGTERM before the LiteRT part: report = the twins only")
    rep["litert"], rep["status"]["litert"] = _child(
        "litert-part", a, common + ["--files", files_json, "--rounds", str(a.rounds), "--warmup", str(a.warmup),
                                    "--iters", str(a.iters)], os.path.join(work, "litert.json"), a.litert_timeout)
    rep["ratios"] = ratios(rep)
    _write(rep, out)
    if _RUNNING.get("stop"):
        rep["status"]["torch"] = {"skipped": "SIGTERM during the LiteRT part"}
    elif a.no_cuda and not a.torch_cpu:
        rep["status"]["torch"] = {"skipped": "--no-cuda"}
    else:
        rep["torch"], rep["status"]["torch"] = _child(
            "torch-part", a, common + (["--torch-cpu"] if a.torch_cpu else [])
            + ["--torch-rounds", str(a.torch_rounds), "--torch-warmup", str(a.torch_warmup),
               "--torch-iters", str(a.torch_iters)], os.path.join(work, "torch.json"), a.torch_timeout)
    rep["ratios"] = ratios(rep)
    try:
        from lib.records import attach                  # measurement records (LiteRT rows: the real files' SHA-256)
        rep = attach(rep, out)
    except Exception as e:  # noqa: BLE001
        rep["status"]["records"] = f"{type(e).__name__}: {e}"[:300]
    _write(rep, out)
    for k, v in rep["ratios"].items():
        _log(f"DA3 / V2 {k}: {v['median']:.3f}")
    _log(f"wrote {out}")


def check_twins(a) -> None:
    """Here, after a device run: rebuild the twins (the same bytes: SHA-256 vs prepare's), run each on LiteRT CPU on
    the run's one input, and attach how much of every output is finite to the report (``--out``, default
    benchmarks/results/da3_gpu.json) as ``twin_cpu_outputs``.  A twin's refilled weights can overflow an exp head
    (DA3's depth): a GPU-vs-CPU rel-L2 of inf - inf is NaN, which says nothing about the GPU."""
    from edgedepth import formats
    from edgedepth.verify.bench import environment

    twins = a.twins or (TINY_TWINS if a.tiny else TWINS)
    with open(os.path.join(twins, "index.json")) as f:
        index = json.load(f)
    out = a.out or os.path.join(ROOT, "benchmarks", "results", "da3_gpu.json")
    with open(out) as f:
        rep = json.load(f)
    h, w = rep["size"]
    x, res = _input(h, w), {}
    for name, t in rebuild_twins(twins, index, a.work).items():
        r = formats.open_runner(t["path"])
        try:
            ys = r.run_all(x)
        finally:
            r.close()
        res[name] = {"sha256": t["sha256"], "matches_prepare": t["matches_prepare"],
                     **{role: {"finite_fraction": float(np.isfinite(y).mean()), "inf": int(np.isinf(y).sum()),
                               "nan": int(np.isnan(y).sum())} for role, y in ys.items()}}
        _log(f"{name}: " + ", ".join(f"{k} {v['finite_fraction']:.1%} finite" for k, v in res[name].items()
                                     if isinstance(v, dict)))
    rep["twin_cpu_outputs"] = {"what": "each twin on LiteRT CPU here (check-twins), the run's one input: the share of "
                                       "finite values per output", "environment": environment(threads=None),
                             "files": res}
    _write(rep, out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=["prepare", "run", "litert-part", "torch-part", "check-twins"])
    ap.add_argument("--tiny", action="store_true", help="synthetic-tiny / synthetic-da3-tiny at 56x56, 1 round")
    ap.add_argument("--size", default=None, help="HxW (default 518x518; --tiny 56x56)")
    ap.add_argument("--twins", default=None, help=f"twins folder (default {os.path.relpath(TWINS, ROOT)}, --tiny "
                                                  f"{os.path.relpath(TINY_TWINS, ROOT)})")
    ap.add_argument("--dir", default=os.path.join(ROOT, "out", "da3_gpu"), help="prepare: where the .tflite go")
    ap.add_argument("--reuse", action="store_true", help="prepare: keep files already in --dir")
    ap.add_argument("--threads", type=int, default=2, help="prepare: torch threads")
    ap.add_argument("--out", default=None, help="run: the report (default $OUT/da3_gpu.json)")
    ap.add_argument("--work", default="/tmp/da3gpu", help="run: where the twins are rebuilt")
    ap.add_argument("--no-cuda", action="store_true", help="run: skip the PyTorch CUDA part")
    ap.add_argument("--torch-cpu", action="store_true", help="run: the PyTorch part on the CPU (smoke test)")
    ap.add_argument("--rounds", type=int, default=None, help="LiteRT rounds (default 3; --tiny 1)")
    ap.add_argument("--warmup", type=int, default=None, help="LiteRT warm-ups per round (default 5; --tiny 1)")
    ap.add_argument("--iters", type=int, default=None, help="LiteRT timed calls per round (default 20; --tiny 3)")
    ap.add_argument("--torch-rounds", type=int, default=None, help="default 3; --tiny 1")
    ap.add_argument("--torch-warmup", type=int, default=None, help="default 20; --tiny 2")
    ap.add_argument("--torch-iters", type=int, default=None, help="default 50; --tiny 3")
    ap.add_argument("--litert-timeout", type=float, default=150.0, help="run: seconds for the LiteRT part")
    ap.add_argument("--torch-timeout", type=float, default=190.0, help="run: seconds for the PyTorch part")
    ap.add_argument("--files", help=argparse.SUPPRESS)
    ap.add_argument("--part", help=argparse.SUPPRESS)
    a = ap.parse_args()
    for k, full, tiny in (("rounds", 3, 1), ("warmup", 5, 1), ("iters", 20, 3), ("torch_rounds", 3, 1),
                          ("torch_warmup", 20, 2), ("torch_iters", 50, 3)):
        if getattr(a, k) is None:
            setattr(a, k, tiny if a.tiny else full)
    # no Vulkan driver named (VK_DRIVER_FILES / VK_ICD_FILENAMES; the device wrapper names NVIDIA's): LiteRT's GPU
    # falls back to SwiftShader where chromium is installed (edgedepth.runtimes.vulkan) -- slow, tiny models only
    {"prepare": prepare, "run": run, "litert-part": litert_part, "torch-part": torch_part,
     "check-twins": check_twins}[a.step](a)


if __name__ == "__main__":
    main()
