"""Latency with a stated method: variants interleaved within each round, warm-ups then timed synchronous calls.

Method (defaults follow the published reference): R rounds; in each round every variant runs W warm-up calls and then M
timed calls, one variant after another, with the variant order rotated from round to round so no variant always runs
first.  A timed call = write input + synchronous invoke + read output (what an app waits for).  Compilation/loading is
timed separately; preprocessing is excluded.  Reported per variant: median, IQR (p25..p75), min, mean over all timed
calls, plus each round's median, so drift across rounds is visible.
"""

from __future__ import annotations

import os
import platform
import resource
import time

import numpy as np
from ..errors import EdgedepthError
from ..preprocess import denormalise


def _rss_mb() -> float:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6
    except OSError:
        return float("nan")


def summarise(times_ms: list[float]) -> dict:
    t = np.asarray(times_ms, np.float64)
    p25, p50, p75 = np.percentile(t, [25, 50, 75])
    return {"median_ms": float(p50), "p25_ms": float(p25), "p75_ms": float(p75), "iqr_ms": float(p75 - p25),
            "min_ms": float(t.min()), "mean_ms": float(t.mean()), "calls": int(t.size)}


def input_for(runner, x):
    """``x`` for the runner: a ``--input-dtype uint8`` file gets the pixels ``x`` was made from; every other runner
    ``x`` itself."""
    if getattr(runner, "input_dtype", "float32") != "uint8" or x is None:
        return x
    return denormalise(x)


def run_interleaved(variants: dict, x: np.ndarray, *, rounds: int = 6, warmup: int = 5, iters: int = 12,
                    progress=None) -> dict:
    """``variants``: {name: zero-arg factory returning a Runner}. Returns {name: stats} plus the order used.

    Factories are called once each (load/compile time and RSS growth recorded), then the rounds run.
    ``rounds`` and ``iters`` are at least 1, ``warmup`` at least 0 (one-line error otherwise).
    """
    for name, value, least in (("rounds", rounds, 1), ("iters", iters, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < least:
            raise EdgedepthError(f"{name} {value!r}: must be a whole number, at least {least}", option=name)
    if not variants:
        raise EdgedepthError("nothing to time: no variants given")
    runners, load, inputs = {}, {}, {}
    for name, factory in variants.items():
        rss0, t0 = _rss_mb(), time.perf_counter()
        runners[name] = factory()
        inputs[name] = input_for(runners[name], x)
        runners[name].run(inputs[name])  # first call: lazy allocation happens here in some runtimes; counted as load
        load[name] = {"load_s": time.perf_counter() - t0, "rss_growth_mb": _rss_mb() - rss0}
    names = list(runners)
    times = {n: [] for n in names}
    round_medians = {n: [] for n in names}
    orders = []
    total = rounds * len(names) * (warmup + iters)
    done = 0
    for r in range(rounds):
        order = names[r % len(names):] + names[: r % len(names)]
        orders.append(order)
        for n in order:
            run, xn = runners[n].run, inputs[n]
            for _ in range(warmup):
                run(xn)
                done += 1
            t_round = []
            for _ in range(iters):
                t0 = time.perf_counter()
                run(xn)
                t_round.append((time.perf_counter() - t0) * 1e3)
                done += 1
                if progress:
                    progress(done, total)
            times[n] += t_round
            round_medians[n].append(float(np.median(t_round)))
            if progress:
                progress(done, total)
    for r in runners.values():
        r.close()
    results = {n: {**summarise(times[n]), "round_medians_ms": round_medians[n], **load[n]} for n in names}
    return {"method": {"rounds": rounds, "warmup": warmup, "iters": iters, "interleaved": True,
                       "order_rotated_per_round": True, "orders": orders,
                       "timed": "input write + synchronous invoke + output read; compile and preprocessing excluded"},
            "variants": results, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}


def floor_ratios(variants: dict, macs: int, precisions=("fp32", "int8")) -> dict:
    """Plain / optimised / floor medians -> ratios, per precision (keys ``{p}_plain``, ``{p}``, ``{p}_floor``).

    Used by the latency-floor benchmarks (benchmarks/latency_floor.py here, benchmarks/devices/cpu_device.py on another CPU).
    """
    out = {}
    for p in precisions:
        plain, opt, floor = (variants[k]["median_ms"] for k in (f"{p}_plain", p, f"{p}_floor"))
        out[p] = {"optimised_over_plain": opt / plain, "floor_over_plain": floor / plain,
                  "optimised_over_floor": opt / floor, "gmac_per_s_floor": macs / floor / 1e6}
    return out


def environment(threads: int | None = None) -> dict:
    """Where a number was measured: CPU, cores, threads, library versions."""
    from importlib.metadata import PackageNotFoundError, version

    cpu, flags = platform.processor(), set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and cpu == platform.processor():
                    cpu = line.split(":", 1)[1].strip()
                elif line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    versions = {}
    for pkg in ("torch", "transformers", "litert-torch", "ai-edge-litert", "ai-edge-quantizer", "executorch", "onnx",
                "onnxruntime", "openvino", "numpy"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            pass
    isa = [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile") if f in flags]
    return {"cpu": cpu, "cpu_isa": isa, "cores": os.cpu_count(), "threads": threads, "python": platform.python_version(),
            "machine": platform.machine(), "versions": versions, "date": time.strftime("%Y-%m-%d", time.gmtime())}
