"""Measurement records: one measured fact about one file, the only measurement shape a release reads.

A report JSON (any benchmark's, or ``edgedepth validate --json`` / ``bench --json``) carries its facts in a top-level
``"records"`` list; whatever else the report holds is for its own readers (BENCHMARKS.md).  One record::

    sha256        the measured file's SHA-256 (64 hex)
    kind          "parity" | "latency"
    backend       runtime backend the file ran on ("cpu", "gpu", "gpu-fp16", "litertjs-wasm", ...)
    threads       int | null          cpu  str | null          gpu_adapter  str | null
    method        dict | str | null   (latency: rounds / warmup / iters; parity: images)
    source        basename of the report file holding the record
    date          str, optional       command  str, optional   (when the report knows them)
  parity:
    metrics           {name: value}, floats rounded to 4 significant digits (round_metrics)
    reference         str | null (what the file was compared with)
    image_set_sha256  str | null
  latency:
    median_ms         number          p25_ms, p75_ms  number | null
    fastest_peer      {"label": str, "median_ms": number}, optional (same machine, same run, same precision)
    timing_twin       true, optional (timed on a twin: same graph, seeded weights, ``sha256`` = the file it stands for)
    h200_gpu_fp32_median_ms  number, optional

``read(paths, kind)`` turns records into the rows a release manifest embeds (``row``); ``newest_latency(paths)`` keeps
one dated latency row per (file, machine, backend), the newest, and says which it left out; converters from the
benchmark scripts' report shapes live with those scripts (``benchmarks/lib/records.py``), the ones for this library's
own ``validate`` / ``bench`` reports here.
"""

from __future__ import annotations

import json
import os
import re

from ..errors import EdgedepthError
from ..fsutil import read_input

KINDS = ("parity", "latency")
_COMMON = ("sha256", "kind", "backend", "threads", "cpu", "gpu_adapter", "method", "source")
_OPTIONAL = ("date", "command")
_FIELDS = {"parity": ("metrics", "reference", "image_set_sha256"), "latency": ("median_ms", "p25_ms", "p75_ms")}
_EXTRA = {"parity": (), "latency": ("fastest_peer", "timing_twin", "h200_gpu_fp32_median_ms")}
_SHA = re.compile(r"[0-9a-f]{64}")


def _num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str_or_none(v) -> bool:
    return v is None or isinstance(v, str)


_CHECKS = {   # field -> (test, what it should be)
    "sha256": (lambda v: isinstance(v, str) and bool(_SHA.fullmatch(v)), "a 64-digit hex SHA-256"),
    "kind": (lambda v: v in KINDS, "'parity' or 'latency'"),
    "backend": (lambda v: isinstance(v, str) and bool(v), "a backend name"),
    "threads": (lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)), "an int or null"),
    "cpu": (_str_or_none, "a string or null"), "gpu_adapter": (_str_or_none, "a string or null"),
    "method": (lambda v: v is None or isinstance(v, (dict, str)), "an object, a string or null"),
    "source": (lambda v: isinstance(v, str) and bool(v), "the report's file name"),
    "date": (lambda v: isinstance(v, str), "a string"), "command": (lambda v: isinstance(v, str), "a string"),
    "metrics": (lambda v: isinstance(v, dict) and bool(v), "a non-empty object"),
    "reference": (_str_or_none, "a string or null"), "image_set_sha256": (_str_or_none, "a string or null"),
    "median_ms": (_num, "a number"), "p25_ms": (lambda v: v is None or _num(v), "a number or null"),
    "p75_ms": (lambda v: v is None or _num(v), "a number or null"),
    "fastest_peer": (lambda v: isinstance(v, dict) and set(v) == {"label", "median_ms"} and isinstance(v["label"], str)
                     and _num(v["median_ms"]), "{\"label\": str, \"median_ms\": number}"),
    "timing_twin": (lambda v: v is True, "true"), "h200_gpu_fp32_median_ms": (_num, "a number"),
}


def round_metrics(m: dict) -> dict:
    """Parity metrics as records carry them: floats to 4 significant digits, the rest as is."""
    return {k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in m.items()}


def check(record, where: str = "record") -> dict:
    """``record`` if it has the schema above, else a one-line EdgedepthError starting with ``where``."""
    if not isinstance(record, dict):
        raise EdgedepthError(f"{where}: should be an object, got {type(record).__name__}")
    kind = record.get("kind")
    if kind not in KINDS:
        raise EdgedepthError(f"{where}: field 'kind' should be 'parity' or 'latency', got {kind!r}")
    required = _COMMON + _FIELDS[kind]
    missing = [f for f in required if f not in record]
    if missing:
        raise EdgedepthError(f"{where}: {kind} record without field{'s' * (len(missing) > 1)} "
                             f"{', '.join(repr(f) for f in missing)}")
    unknown = sorted(set(record) - set(required) - set(_OPTIONAL) - set(_EXTRA[kind]))
    if unknown:
        raise EdgedepthError(f"{where}: {kind} record with unknown field{'s' * (len(unknown) > 1)} "
                             f"{', '.join(repr(f) for f in unknown)}")
    for f, v in record.items():
        ok, what = _CHECKS[f]
        if not ok(v):
            raise EdgedepthError(f"{where}: field {f!r} should be {what}, got {json.dumps(v)[:80]}")
    return record


def records_of(report: dict, where: str = "report") -> list[dict]:
    """The checked records of ``report`` (a one-line EdgedepthError starting with ``where`` if it has none)."""
    if not isinstance(report, dict) or not isinstance(report.get("records"), list):
        raise EdgedepthError(f"{where}: no measurement records (a top-level \"records\" list; "
                             f"see edgedepth.verify.records)")
    return [check(r, f"{where}: record {i}") for i, r in enumerate(report["records"])]


def attach(report: dict, records: list[dict]) -> dict:
    """``report`` with ``"records"`` set to the checked ``records`` (added last, or replaced where it was)."""
    out = dict(report)
    out["records"] = [check(r, f"record {i}") for i, r in enumerate(records)]
    return out


def row(record: dict) -> dict:
    """The row a release manifest embeds for ``record`` (key order fixed: the manifest bytes depend on it)."""
    r = record
    if r["kind"] == "parity":
        return {**r["metrics"], "backend": r["backend"], "threads": r["threads"], "cpu": r["cpu"],
                "reference": r["reference"], "image_set_sha256": r["image_set_sha256"], "source": r["source"]}
    return {"backend": r["backend"], "median_ms": r["median_ms"], "p25_ms": r["p25_ms"], "p75_ms": r["p75_ms"],
            "threads": r["threads"], "cpu": r["cpu"], "gpu_adapter": r["gpu_adapter"], "method": r["method"],
            "source": r["source"], **{k: r[k] for k in _EXTRA["latency"] if k in r}}


def _records(paths, kind: str, backend: str | None = None):
    """The checked ``kind`` records (of ``backend``, if given) of the report files ``paths``, in path then record
    order; paths that do not exist are skipped (see :func:`read`)."""
    if kind not in KINDS:
        raise ValueError(f"kind should be one of {KINDS}, got {kind!r}")
    for p in paths:
        if not os.path.lexists(p):
            continue
        try:
            report = json.loads(read_input(p, "report").decode("utf-8"))
        except ValueError as e:
            raise EdgedepthError(f"{p}: not JSON ({e})") from None
        for i, r in enumerate(records_of(report, p)):
            if r["source"] != os.path.basename(p):
                raise EdgedepthError(f"{p}: record {i}: field 'source' is {r['source']!r}, not this file's name "
                                     f"(records were made for another file)")
            if r["kind"] == kind and (backend is None or r["backend"] == backend):
                yield r


def read(paths, kind: str, *, backend: str | None = None) -> dict[str, list[dict]]:
    """sha256 -> rows (``row``) of the ``kind`` records (of ``backend``, if given) in the report files ``paths``, in
    path then record order; paths that do not exist are skipped.  A file without records, with a record off the
    schema, or that is no regular file (:func:`edgedepth.fsutil.read_input`) is a one-line EdgedepthError."""
    rows: dict[str, list[dict]] = {}
    for r in _records(paths, kind, backend):
        rows.setdefault(r["sha256"], []).append(row(r))
    return rows


def machine(r: dict) -> str:
    """The machine a latency record or row names: its GPU adapter, else its CPU at its thread count ("AMD EPYC, 2
    threads"); a 2-thread and a 16-thread run of one CPU are two machines here."""
    if r.get("gpu_adapter"):
        return r["gpu_adapter"]
    cpu = r.get("cpu") or "unnamed CPU"
    return f"{cpu}, {r['threads']} thread{'s' * (r['threads'] != 1)}" if r.get("threads") else cpu


def newest_latency(paths) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    """(kept, left out): sha256 -> latency rows of the report files ``paths`` (read as :func:`read` does), one kept per
    (file, :func:`machine`, backend): the newest by ``date``; on the same date the record of the path listed later
    (then the later record of the file).  Kept rows are ``row`` + the record's ``date`` after ``source``; a record
    without a date is never kept (a release shows dated rows only).  Each left-out row: its backend, machine,
    median_ms, source and date (null: undated), and ``kept``: the source and date of the row shown instead (null for
    an undated record with no dated one)."""
    best: dict[tuple, tuple] = {}               # (sha256, machine, backend) -> (order key, record)
    seen: list[tuple] = []
    for n, r in enumerate(_records(paths, "latency")):
        key = (r["sha256"], machine(r), r["backend"])
        order = (r.get("date") or "", n)       # ISO dates sort as text; n: path order, then record order
        seen.append((key, order, r))
        if r.get("date") and (key not in best or order > best[key][0]):
            best[key] = (order, r)
    kept: dict[str, list[dict]] = {}
    left: dict[str, list[dict]] = {}
    for key, order, r in seen:
        winner = best.get(key, (None, None))[1]
        if winner is r:
            base = row(r)
            names = list(base)
            at = names.index("source") + 1
            kept.setdefault(key[0], []).append({**{k: base[k] for k in names[:at]}, "date": r["date"],
                                               **{k: base[k] for k in names[at:]}})
        else:
            left.setdefault(key[0], []).append(
                {"backend": r["backend"], "machine": key[1], "median_ms": r["median_ms"], "source": r["source"],
                 "date": r.get("date"),
                 "kept": {"source": winner["source"], "date": winner["date"]} if winner is not None else None})
    return kept, left


# ---- this library's own reports ----------------------------------------------------------------------------------

def common(sha256: str, kind: str, backend: str, threads, cpu, gpu_adapter, method, source: str, report: dict) -> dict:
    """The fields every record has, in schema order, + ``date`` / ``command`` where ``report`` (or its environment)
    states them; ``source`` is reduced to its basename."""
    env = report.get("environment") or {}
    date, command = report.get("date") or env.get("date"), report.get("command")
    return {"sha256": sha256, "kind": kind, "backend": backend, "threads": threads, "cpu": cpu,
            "gpu_adapter": gpu_adapter, "method": method, "source": os.path.basename(source),
            **({"date": date} if isinstance(date, str) else {}),
            **({"command": command} if isinstance(command, str) else {})}


def validate_records(report: dict, source: str) -> list[dict]:
    """Parity records of an ``edgedepth validate`` report (every result with metrics and a SHA-256, any backend)."""
    env, images = report["environment"], report.get("image_set") or {}
    return [{**common(r["sha256"], "parity", r["backend"], env.get("threads"), env.get("cpu"), env.get("gpu_adapter"),
                      {"images": images.get("count")}, source, report),
             "metrics": round_metrics(r["metrics"]), "reference": (report.get("reference") or {}).get("name"),
             "image_set_sha256": images.get("sha256")}
            for r in report.get("results", []) if r.get("sha256") and r.get("metrics")]


def bench_records(report: dict, source: str) -> list[dict]:
    """Latency records of an ``edgedepth bench`` report (every variant with a SHA-256: the files, not PyTorch)."""
    env = report["environment"]
    return [{**common(v["sha256"], "latency", report["backend"], env.get("threads"), env.get("cpu"),
                      env.get("gpu_adapter"), {k: report["method"][k] for k in ("rounds", "warmup", "iters")}, source,
                      report),
             "median_ms": round(v["median_ms"], 2), "p25_ms": round(v["p25_ms"], 2), "p75_ms": round(v["p75_ms"], 2)}
            for v in report.get("variants", {}).values() if v.get("sha256")]


_OWN = {"edgedepth.validate": validate_records, "edgedepth.bench": bench_records}


def with_records(report: dict, path: str | None) -> dict:
    """An ``edgedepth validate`` / ``bench`` report about to be written to the file ``path``, with its records
    (unchanged when ``path`` is None or "-": records name the file that holds them)."""
    if not path or path == "-":
        return report
    return attach(report, _OWN[report["kind"]](report, path))
