"""Which file for which use, from the manifest's own entries and the measurements embedded in them.

``recommend(entries, size, gate)`` -> ``{use: {"path", "why"}}`` for the release's first (main) size:

- ``webgpu`` (GPU / browser): among float-compute .tflite files that compiled fully on the GPU (or were not checked:
  then ``why`` says so, never "fully on the GPU"), one taking uint8 pixels
  when present (a quarter of the input bytes to write per call; what that saves: benchmarks/gpu_floor.py), then the
  smallest: the fp16-weight file (the GPU delegate reads fp16 constants natively; its GPU median quoted when measured).
- the other uses consider float32-input files only (what a CPU caller already feeds).
- ``cpu``: among files within the quantised parity gate, timed in one run (one source), the most accurate of those
  within 5 % of the fastest CPU median; FP32 when nothing was measured for these exact bytes.
- ``wasm`` (the browser without WebGPU): the same rule over LiteRT.js wasm medians (benchmarks/playground_latency.py);
  FP32 when none were measured (a native-CPU number says nothing about the browser).
- ``smallest``: the smallest .tflite whose embedded parity is within the gate (unmeasured files do not qualify).

The playground reads ``webgpu`` / ``wasm`` to pick its default file; the model card prints all of them.
"""

from __future__ import annotations

import collections

from ..formats import entry_format

FLOAT = ("fp16", "fp32")


def _input_dtype(f: dict) -> str:
    return (f.get("input") or {}).get("dtype", "float32")


def _parity(f: dict, source=None) -> float | None:
    """The file's pooled rel-L2 from the parity ``source`` (a committed report's name), else its first row."""
    rows = [r for r in f.get("parity") or [] if source is None or r.get("source") == source]
    return rows[0].get("pooled_rel_l2") if rows else None


def _parity_source(files: list[dict]):
    """The parity report that measured most of ``files`` (their errors are compared inside one image set)."""
    sources = collections.Counter(r.get("source") for f in files for r in f.get("parity") or [])
    return max(sources, key=lambda s: (sources[s], str(s))) if sources else None


NEAR = 1.05    # files within 5 % of the fastest count as equally fast (run-to-run noise): the most accurate wins


def _fastest(ok: list[dict], fp32: dict, backend: str, where: str, label: str, psrc=None) -> dict:
    """Among ``ok`` files, compared inside ONE measurement source (the one that timed most of them: never across
    runs), the most accurate (parity source ``psrc``) of those within NEAR of the fastest."""
    ms = {f["path"]: {r.get("source"): r for r in f.get("latency") or []
                      if r.get("backend") == backend and r.get("median_ms")} for f in ok}
    sources = collections.Counter(s for d in ms.values() for s in d)
    if not sources:
        return {"path": fp32["path"], "why": f"FP32: no {label} latency measured for these exact files"}
    src = max(sources, key=lambda s: (sources[s], str(s)))
    timed = [f for f in ok if src in ms[f["path"]]]
    t = {f["path"]: ms[f["path"]][src]["median_ms"] for f in timed}
    best = min(t.values())
    f = min((f for f in timed if t[f["path"]] <= NEAR * best), key=lambda f: _parity(f, psrc))
    row = ms[f["path"]][src]
    others = ", ".join(f"{g['precision']} {t[g['path']]:.0f} ms" for g in timed if g is not f)
    return {"path": f["path"], "why": f"{where}: {t[f['path']]:.0f} ms at {row.get('threads')} threads, "
                                      f"{row.get('cpu')}" + (f" (same run: {others})" if others else "")
                                      + f"; the most accurate within {NEAR - 1:.0%} of the fastest, pooled rel-L2 "
                                      f"{_parity(f, psrc):.1e}"}


def recommend(entries: list[dict], size: str, gate: float) -> dict:
    every = [f for f in entries if (fmt := entry_format(f)) and fmt.has_gpu_check and f.get("size") == size]
    files = [f for f in every if _input_dtype(f) == "float32"]
    if not files:
        return {}
    by = {f["precision"]: f for f in files}
    fp32 = by.get("fp32") or files[0]
    out = {}
    gpu = [f for f in every if f["precision"] in FLOAT and f.get("gpu_fully_delegated") is not False]
    if gpu:
        f = min(gpu, key=lambda f: (_input_dtype(f) != "uint8", f["bytes"]))
        checked = f.get("gpu_fully_delegated")     # True: compiled GPU-only at build time; None: not checked
        why = f"{f['precision']} weights: {f['bytes'] / 1e6:.1f} MB, " + (
            "fully on the GPU delegate" if checked else "GPU delegation not checked in this build (--no-gpu-check)")
        if f["bytes"] != fp32["bytes"]:
            why += f" ({f['bytes'] / fp32['bytes']:.0%} of the FP32 download; float32 compute with enforce_f32)"
        if _input_dtype(f) == "uint8":
            why += "; takes the resized uint8 RGB pixels (normalised in the graph): 1/4 of the input bytes per call"
        h200 = [r["h200_gpu_fp32_median_ms"] for r in f.get("latency") or [] if "h200_gpu_fp32_median_ms" in r]
        if h200:
            why += f"; H200 WebGPU {h200[0]:.1f} ms"
        out["webgpu"] = {"path": f["path"], "why": why}
    psrc = _parity_source(files)
    ok = [f for f in files if (_parity(f, psrc) is not None and _parity(f, psrc) <= gate)]
    out["cpu"] = _fastest(ok, fp32, "cpu", "CPU", "CPU", psrc)
    out["wasm"] = _fastest(ok, fp32, "litertjs-wasm", "LiteRT.js wasm", "LiteRT.js wasm", psrc)
    if ok:
        f = min(ok, key=lambda f: f["bytes"])
        out["smallest"] = {"path": f["path"], "why": f"{f['bytes'] / 1e6:.1f} MB, pooled rel-L2 {_parity(f, psrc):.1e} "
                                                    f"(within the {gate:g} gate)"}
    return out
