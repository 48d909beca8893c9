"""Benchmark reports -> measurement records (``edgedepth.verify.records``), one converter per report kind.

The release reads only records; each script attaches its report's records when it writes the report (``attach``),
and this CLI adds or refreshes them in committed reports, the rest of each file byte-identical:

    .venv/bin/python benchmarks/lib/records.py --attach benchmarks/results/peers_cpu_xeon-2t.json ...
"""

from __future__ import annotations

import json
import os
import sys

from edgedepth.errors import EdgedepthError
from edgedepth.runtimes import BACKENDS as RUNTIME_BACKENDS
from edgedepth.verify import records as rec
from edgedepth.verify.records import common, round_metrics


def _three(method: dict) -> dict:
    return {k: method[k] for k in ("rounds", "warmup", "iters")}


def from_peers(report: dict, source: str) -> list[dict]:
    """benchmarks/peers.py: our files' CPU latency, each with the fastest peer path of its precision (same run)."""
    env, rows = report["environment"], report["rows"]
    out = []
    for r in rows.values():
        best = report["summary"].get(r["precision"], {}).get("fastest_peer")
        if r["side"] == "ours" and r.get("sha256") and r.get("median_ms") and best:
            out.append({**common(r["sha256"], "latency", r["runner"], report["threads"], env.get("cpu"), None,
                                  _three(report["method"]), source, report),
                        "median_ms": round(r["median_ms"], 2), "p25_ms": round(r["p25_ms"], 2),
                        "p75_ms": round(r["p75_ms"], 2),
                        "fastest_peer": {"label": rows[best]["label"], "median_ms": round(rows[best]["median_ms"], 2)}})
    return out


def from_precision_ladder(report: dict, source: str) -> list[dict]:
    """benchmarks/precision_ladder.py: CPU parity (110 images) and CPU latency of every precision, + the H200 GPU
    median of the graph (FP32 enforced) when measured."""
    env, pm = report["environment"], report["parity_method"]
    out = []
    for r in report["rows"].values():
        if "pooled_rel_l2" in r.get("parity", {}):
            out.append({**common(r["sha256"], "parity", "cpu", env.get("threads"), env.get("cpu"), None,
                                  {"images": pm.get("images")}, source, report),
                        "metrics": round_metrics(r["parity"]), "reference": pm["reference"],
                        "image_set_sha256": pm["image_set_sha256"]})
    h200 = report.get("h200", {}).get("rows", {})
    for name, r in report["rows"].items():
        if r.get("cpu_latency"):
            v, gpu = r["cpu_latency"], (h200.get(name) or {}).get("gpu")
            out.append({**common(r["sha256"], "latency", "cpu", env.get("threads"), env.get("cpu"), None,
                                  _three(report["cpu_method"]), source, report),
                        "median_ms": round(v["median_ms"], 2), "p25_ms": round(v["p25_ms"], 2),
                        "p75_ms": round(v["p75_ms"], 2),
                        **({"h200_gpu_fp32_median_ms": round(gpu["median_ms"], 2)} if gpu else {})})
    return out


def from_gpu_floor(report: dict, source: str) -> list[dict]:
    """benchmarks/gpu_floor.py: GPU call medians (write + run + read) of timing twins, recorded for the release file
    each stands for (``stands_for``); FP32-enforced medians also as ``h200_gpu_fp32_median_ms``."""
    backend = RUNTIME_BACKENDS.get(report.get("backend"))
    fp32 = bool(backend and backend.gpu and not backend.reduced_precision)
    out = []
    for f in report["files"].values():
        if (f.get("stands_for") or {}).get("sha256") and "method_counts" in report:
            ms = round(f["median_ms"]["call"], 2)
            out.append({**common(f["stands_for"]["sha256"], "latency", report["backend"], None, None,
                                  report.get("device"), report["method_counts"], source, report),
                        "median_ms": ms, "p25_ms": None, "p75_ms": None, "timing_twin": True,
                        **({"h200_gpu_fp32_median_ms": ms} if fp32 else {})})
    return out


def from_playground_latency(report: dict, source: str) -> list[dict]:
    """benchmarks/playground_latency.py: LiteRT.js wasm in headless chromium, per release file."""
    out = []
    for f in report["files"].values():
        if f.get("sha256"):
            lo, hi = f["litertjs_p25_p75"]
            out.append({**common(f["sha256"], "latency", "litertjs-wasm", f["runtime"].get("threads"),
                                  report.get("cpu"), None, report["method_counts"], source, report),
                        "median_ms": round(f["litertjs_wasm_median_ms"], 1), "p25_ms": round(lo, 1),
                        "p75_ms": round(hi, 1)})
    return out


def from_da3_gpu(report: dict, source: str) -> list[dict]:
    """benchmarks/da3_gpu.py: LiteRT GPU medians of the timing twins (FP32-enforced ``gpu`` and default precision
    ``gpu-fp16``), recorded for the real file each stands for; the FP32-enforced ones on an H200 also as
    ``h200_gpu_fp32_median_ms``.  A ``--tiny`` smoke run has none."""
    if report.get("tiny"):
        return []
    lit, files = report.get("litert") or {}, (report.get("prepare") or {}).get("files") or {}
    adapter = lit.get("adapter") or report.get("environment", {}).get("gpu")
    h200 = "H200" in str(adapter)
    out = []
    for name, r in (lit.get("rows") or {}).items():
        for backend in ("gpu", "gpu-fp16"):
            v, sha = r.get(backend), (files.get(name) or {}).get("sha256")
            if v and sha and "median_ms" in v:
                out.append({**common(sha, "latency", backend, None, None, adapter, _three(lit["method"]), source,
                                     report),
                            "median_ms": round(v["median_ms"], 2), "p25_ms": round(v["p25_ms"], 2),
                            "p75_ms": round(v["p75_ms"], 2), "timing_twin": True,
                            **({"h200_gpu_fp32_median_ms": round(v["median_ms"], 2)}
                               if backend == "gpu" and h200 else {})})
    return out


CONVERTERS = {"edgedepth.validate": rec.validate_records, "edgedepth.bench": rec.bench_records,
              "edgedepth.peers": from_peers, "edgedepth.precision_ladder": from_precision_ladder,
              "edgedepth.gpu_floor": from_gpu_floor, "edgedepth.playground_latency": from_playground_latency,
              "edgedepth.da3_gpu": from_da3_gpu}


def records_for(report: dict, source: str) -> list[dict]:
    """The records of ``report`` (written to the file ``source``), by its ``kind``."""
    conv = CONVERTERS.get(report.get("kind"))
    if conv is None:
        raise EdgedepthError(f"{source}: no record converter for report kind {report.get('kind')!r} "
                             f"(known: {', '.join(CONVERTERS)})")
    return conv(report, source)


def attach(report: dict, source: str) -> dict:
    """``report`` with its records (for a script about to write it to the file ``source``)."""
    return rec.attach(report, records_for(report, source))


def _layout(text: str, data) -> dict | None:
    """The json.dumps arguments (+ trailing newline) that reproduce ``text`` exactly, or None."""
    # key order as loaded (a file written with sort_keys keeps its order; "records" goes last, its fields in schema
    # order: sorting them would reorder the method dicts the release manifest embeds)
    for indent in (2, 1, 4, None):
        for ensure_ascii in (True, False):
            kw = {"indent": indent, "ensure_ascii": ensure_ascii}
            body = json.dumps(data, **kw)
            for nl in ("\n", ""):
                if body + nl == text:
                    return {**kw, "nl": nl}
    return None


def attach_file(path: str) -> int:
    """Add or refresh ``"records"`` in the report file ``path``, keeping its layout; returns the record count."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    data = json.loads(text)
    kw = _layout(text, data)
    if kw is None:
        raise EdgedepthError(f"{path}: its layout is not one json.dumps writes (indent 1/2/4/none): "
                             f"not rewritten")
    nl = kw.pop("nl")
    out = attach(data, path)
    new = json.dumps(out, **kw) + nl
    if new != text:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(new)
        os.replace(tmp, path)
    return len(out["records"])


def main(argv=None) -> int:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--attach", nargs="+", metavar="FILE", required=True,
                    help="report JSON files to add/refresh \"records\" in")
    a = ap.parse_args(argv)
    try:
        for p in a.attach:
            print(f"{p}: {attach_file(p)} records")
    except EdgedepthError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
