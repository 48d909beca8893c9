"""Measurement records (issue 29 item 5): one record type, one writer (benchmarks/lib/records.py + the library's own
validate/bench reports), one reader (edgedepth.verify.records.read) -- the only measurement shape a release reads."""

import importlib.util
import json
import os
import re
import runpy

import pytest

from edgedepth.errors import EdgedepthError
from edgedepth.runtimes import REFERENCE_BACKEND
from edgedepth.verify import records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECIPE = runpy.run_path(os.path.join(ROOT, "recipes", "depth-anything-v2-small.py"))["RECIPE"]
_spec = importlib.util.spec_from_file_location("bench_records", os.path.join(ROOT, "benchmarks", "lib", "records.py"))
conv = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(conv)

SHA_A, SHA_B, SHA_C = "a" * 64, "b" * 64, "c" * 64
ENV = {"cpu": "Test CPU", "threads": 2, "date": "2026-01-02"}
LATENCY_KEYS = ["backend", "median_ms", "p25_ms", "p75_ms", "threads", "cpu", "gpu_adapter", "method", "source"]
PARITY_TAIL = ["backend", "threads", "cpu", "reference", "image_set_sha256", "source"]


def _recipe_reports():
    return list(dict.fromkeys(os.path.realpath(p) for p in RECIPE["parity_data"] + RECIPE["latency_data"]))


def test_committed_reports_carry_fresh_records_and_rows_have_the_schema():
    """Every report the recipe names has records, they pass the schema, they are what its converter makes of the
    report today (refresh: benchmarks/lib/records.py --attach), and the rows read from them have the manifest's keys."""
    for p in _recipe_reports():
        rep = json.load(open(p))
        recs = records.records_of(rep, p)
        assert recs, p
        assert recs == conv.records_for({k: v for k, v in rep.items() if k != "records"}, p), f"{p}: stale records"
    parity = records.read(RECIPE["parity_data"], "parity", backend=REFERENCE_BACKEND)
    latency = records.read(RECIPE["latency_data"], "latency")
    assert parity and latency
    for rows in parity.values():
        for r in rows:
            assert list(r)[-len(PARITY_TAIL):] == PARITY_TAIL and "pooled_rel_l2" in r and r["backend"] == "cpu", r
    for rows in latency.values():
        for r in rows:
            assert list(r)[:len(LATENCY_KEYS)] == LATENCY_KEYS and r["median_ms"] > 0, r
            assert set(r) - set(LATENCY_KEYS) <= {"fastest_peer", "timing_twin", "h200_gpu_fp32_median_ms"}, r


def _write(tmp_path, name, data) -> str:
    p = tmp_path / name
    p.write_text(json.dumps(data, indent=2) + "\n")
    return str(p)


def _one_line_error(paths, kind="latency"):
    with pytest.raises(EdgedepthError) as e:
        records.read(paths, kind)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def _good_latency(source="r.json", **kw):
    return {"sha256": SHA_A, "kind": "latency", "backend": "cpu", "threads": 2, "cpu": "x", "gpu_adapter": None,
            "method": {"rounds": 1, "warmup": 0, "iters": 1}, "source": source, "median_ms": 1.0, "p25_ms": 0.9,
            "p75_ms": 1.1, **kw}


@pytest.mark.parametrize("record,expected", [
    ({k: v for k, v in _good_latency().items() if k != "median_ms"}, "without field 'median_ms'"),
    (_good_latency(kind="speed"), "field 'kind' should be 'parity' or 'latency'"),
    (_good_latency(sha256="abc"), "field 'sha256' should be a 64-digit hex SHA-256"),
    (_good_latency(median_ms="fast"), "field 'median_ms' should be a number"),
    (_good_latency(colour="red"), "unknown field 'colour'"),
    (_good_latency(source="other.json"), "field 'source' is 'other.json'"),
    ("not a record", "should be an object"),
])
def test_malformed_record_is_one_line_naming_the_file(tmp_path, record, expected):
    p = _write(tmp_path, "r.json", {"kind": "x", "records": [_good_latency(), record]})
    msg = _one_line_error([p])
    assert msg.startswith(f"{p}: record 1") and expected in msg, msg


def test_report_without_records_is_one_line_naming_the_file(tmp_path):
    p = _write(tmp_path, "old.json", {"kind": "edgedepth.bench", "variants": {}})
    msg = _one_line_error([p])
    assert msg.startswith(p) and "records" in msg
    bad = tmp_path / "broken.json"
    bad.write_text("{")
    assert _one_line_error([str(bad)]).startswith(str(bad))
    assert records.read([str(tmp_path / "absent.json")], "latency") == {}    # absent files are skipped, as before


# ---- attach -> read round trip, one hand-made report per converter -----------------------------------------------

METHOD = {"rounds": 3, "warmup": 1, "iters": 5, "interleaved": True}


def _validate():
    res = {"sha256": SHA_A, "backend": "cpu", "metrics": {"images": 2, "pooled_rel_l2": 1.23456e-4, "pearson": 0.99999}}
    return {"kind": "edgedepth.validate", "reference": {"name": "synthetic"},
            "image_set": {"count": 2, "sha256": SHA_C}, "environment": ENV,
            "results": [res, {**res, "backend": "gpu", "sha256": SHA_B},
                        {"sha256": SHA_B, "backend": "cpu", "metrics": None}]}


def _bench():
    return {"kind": "edgedepth.bench", "backend": "cpu", "environment": {**ENV, "gpu_adapter": None}, "method": METHOD,
            "variants": {"a.tflite": {"median_ms": 10.123, "p25_ms": 9.876, "p75_ms": 11.0, "sha256": SHA_A},
                         "pytorch-eager": {"median_ms": 20.0, "p25_ms": 19.0, "p75_ms": 21.0}}}


def _peers():
    return {"kind": "edgedepth.peers", "threads": 2, "environment": ENV, "method": METHOD,
            "rows": {"ours-fp32": {"side": "ours", "precision": "fp32", "runner": "cpu", "sha256": SHA_A,
                                   "median_ms": 10.0, "p25_ms": 9.0, "p75_ms": 11.0, "label": "ours"},
                     "ort-fp32": {"side": "peer", "precision": "fp32", "label": "ONNX Runtime", "median_ms": 12.345}},
            "summary": {"fp32": {"fastest_peer": "ort-fp32"}}}


def _ladder():
    return {"kind": "edgedepth.precision_ladder", "date": "2026-01-03", "environment": ENV, "cpu_method": METHOD,
            "parity_method": {"images": 110, "reference": "PyTorch FP32", "image_set_sha256": SHA_C},
            "rows": {"fp16": {"sha256": SHA_A, "parity": {"pooled_rel_l2": 2.34567e-4},
                              "cpu_latency": {"median_ms": 100.126, "p25_ms": 99.0, "p75_ms": 101.0}},
                     "int4": {"sha256": SHA_B, "parity": {"error": "unsupported"}}},
            "h200": {"rows": {"fp16": {"gpu": {"median_ms": 15.123}}}}}


def _gpu_floor():
    files = {"twin": {"stands_for": {"name": "x.tflite", "sha256": SHA_A}, "median_ms": {"call": 3.4567}},
             "tiny": {"stands_for": None, "median_ms": {"call": 0.1}}}
    return {"kind": "edgedepth.gpu_floor", "environment": ENV, "backend": "gpu", "device": "NVIDIA H200 (test)",
            "method_counts": {"rounds": 5, "warmup": 5, "iters": 20}, "files": files}


def _playground():
    f = {"sha256": SHA_A, "litertjs_wasm_median_ms": 250.26, "litertjs_p25_p75": [240.04, 260.16],
         "runtime": {"threads": 2}}
    return {"kind": "edgedepth.playground_latency", "cpu": "Test CPU", "date": "2026-01-04",
            "method_counts": {"rounds": 3, "warmup": 1, "iters": 3}, "files": {"a.tflite": f}}


def _lat(backend, median, p25, p75, threads, cpu, gpu, method, src, **extra):
    return {"backend": backend, "median_ms": median, "p25_ms": p25, "p75_ms": p75, "threads": threads, "cpu": cpu,
            "gpu_adapter": gpu, "method": method, "source": src, **extra}


M3 = {"rounds": 3, "warmup": 1, "iters": 5}
CASES = {   # report -> (parity rows, latency rows) as the release embeds them (the pre-records readers' rows)
    "validate": (_validate, {SHA_A: [{"images": 2, "pooled_rel_l2": 1.235e-4, "pearson": 1.0, "backend": "cpu",
                                      "threads": 2, "cpu": "Test CPU", "reference": "synthetic",
                                      "image_set_sha256": SHA_C, "source": "validate.json"}]}, {}),
    "bench": (_bench, {}, {SHA_A: [_lat("cpu", 10.12, 9.88, 11.0, 2, "Test CPU", None, M3, "bench.json")]}),
    "peers": (_peers, {}, {SHA_A: [_lat("cpu", 10.0, 9.0, 11.0, 2, "Test CPU", None, M3, "peers.json",
                                        fastest_peer={"label": "ONNX Runtime", "median_ms": 12.35})]}),
    "ladder": (_ladder, {SHA_A: [{"pooled_rel_l2": 2.346e-4, "backend": "cpu", "threads": 2, "cpu": "Test CPU",
                                  "reference": "PyTorch FP32", "image_set_sha256": SHA_C, "source": "ladder.json"}]},
               {SHA_A: [_lat("cpu", 100.13, 99.0, 101.0, 2, "Test CPU", None, M3, "ladder.json",
                             h200_gpu_fp32_median_ms=15.12)]}),
    "gpu_floor": (_gpu_floor, {}, {SHA_A: [_lat("gpu", 3.46, None, None, None, None, "NVIDIA H200 (test)",
                                                {"rounds": 5, "warmup": 5, "iters": 20}, "gpu_floor.json",
                                                timing_twin=True, h200_gpu_fp32_median_ms=3.46)]}),
    "playground": (_playground, {}, {SHA_A: [_lat("litertjs-wasm", 250.3, 240.0, 260.2, 2, "Test CPU", None,
                                                  {"rounds": 3, "warmup": 1, "iters": 3}, "playground.json")]}),
}


@pytest.mark.parametrize("name", list(CASES))
def test_attach_then_read_round_trip(tmp_path, name):
    make, parity, latency = CASES[name]
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps(make(), indent=1))             # indent 1, no trailing newline: kept as it is
    assert conv.attach_file(str(p)) == len(records.records_of(json.load(open(p))))
    text = p.read_text()
    data = json.loads(text)
    assert list(data)[-1] == "records" and json.dumps({k: v for k, v in data.items() if k != "records"}, indent=1) == \
        json.dumps(make(), indent=1) and not text.endswith("\n")
    conv.attach_file(str(p))
    assert p.read_text() == text                            # refreshing is idempotent
    assert json.dumps(records.read([str(p)], "parity", backend=REFERENCE_BACKEND)) == json.dumps(parity)
    assert json.dumps(records.read([str(p)], "latency")) == json.dumps(latency)
    assert {r["date"] for r in data["records"]} == {make().get("date") or make()["environment"]["date"]}


def test_library_reports_records_with_gpu_parity_kept_apart():
    """validate records keep every backend's parity; the release reads the reference backend's."""
    recs = records.validate_records(_validate(), "/x/validate.json")
    assert [(r["sha256"], r["backend"]) for r in recs] == [(SHA_A, "cpu"), (SHA_B, "gpu")]
    assert all(r["source"] == "validate.json" and r["method"] == {"images": 2} for r in recs)


def test_unknown_report_kind_and_foreign_layout_refused(tmp_path):
    with pytest.raises(EdgedepthError, match="no record converter for report kind 'edgedepth.nope'"):
        conv.records_for({"kind": "edgedepth.nope"}, "n.json")
    p = tmp_path / "bench.json"
    p.write_text(json.dumps(_bench(), indent=3))
    with pytest.raises(EdgedepthError, match="layout"):
        conv.attach_file(str(p))


def test_library_reads_no_benchmark_report_shape():
    """Only records reach the release: no library code outside verify/records.py names a benchmark report kind."""
    kinds = [k for k in conv.CONVERTERS if k not in ("edgedepth.validate", "edgedepth.bench")]
    src = os.path.join(ROOT, "src", "edgedepth")
    offenders = [f"{os.path.relpath(os.path.join(d, f), ROOT)}:{i}" for d, _, fs in os.walk(src) for f in fs
                 if f.endswith(".py") for i, line in enumerate(open(os.path.join(d, f), encoding="utf-8"), 1)
                 if re.search("|".join(map(re.escape, kinds)), line)]
    assert not offenders, offenders


def test_library_reports_attach_their_own_records():
    """What `edgedepth validate/bench --json PATH` writes: the report + its records (none on stdout)."""
    rep = records.with_records(_bench(), "/tmp/out/bench.json")
    assert list(rep)[-1] == "records" and [r["sha256"] for r in rep["records"]] == [SHA_A]
    assert rep["records"][0]["source"] == "bench.json" and "records" not in records.with_records(_bench(), "-")
