"""The harness on constructed cases: metrics with known answers, interleaving order, failure reporting."""

import json

import numpy as np
import pytest

from edgedepth.bench import floor_ratios, run_interleaved, summarise
from edgedepth.parity import ParityAccumulator, align_scale_shift
from conftest import run_cli


def _maps(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 5.0, (1, 20, 30)) for _ in range(n)]


def test_identical_is_zero():
    acc = ParityAccumulator()
    for r in _maps():
        acc.add(r.copy(), r)
    s = acc.summary()
    assert s["pooled_rel_l2"] == 0 and s["max_rel_l2"] == 0 and s["max_abs_diff"] == 0
    assert s["aligned_absrel"] == pytest.approx(0, abs=1e-12) and s["aligned_delta1"] == 1.0
    assert s["pearson"] == pytest.approx(1.0) and s["identical_images"] == 3


def test_known_scale_and_shift_aligns_to_zero():
    acc = ParityAccumulator()
    for r in _maps():
        acc.add(0.5 * r - 3.0, r)  # a relative-depth model may differ by scale and shift
    s = acc.summary()
    assert s["pooled_rel_l2"] > 0.3                              # raw error is large ...
    assert s["aligned_absrel"] == pytest.approx(0, abs=1e-9)     # ... but alignment removes it exactly
    assert s["aligned_delta1"] == 1.0 and s["pearson"] == pytest.approx(1.0)
    assert align_scale_shift(0.5 * _maps()[0] - 3.0, _maps()[0]) == pytest.approx((2.0, 6.0))


def test_known_perturbation_gives_expected_rel_l2():
    rng = np.random.default_rng(1)
    acc = ParityAccumulator()
    refs = _maps(4)
    errs = [rng.standard_normal(r.shape) for r in refs]
    for r, e in zip(refs, errs):
        acc.add(r + 1e-3 * e, r)
    expected = 1e-3 * np.sqrt(sum((e ** 2).sum() for e in errs) / sum((r ** 2).sum() for r in refs))
    assert acc.summary()["pooled_rel_l2"] == pytest.approx(expected, rel=1e-9)
    per = [np.linalg.norm(1e-3 * e) / np.linalg.norm(r) for r, e in zip(refs, errs)]
    assert acc.summary()["max_rel_l2"] == pytest.approx(max(per), rel=1e-9)


class _FakeRunner:
    """Records the global call order; sleeps a fixed time so medians are known."""

    log: list = []

    def __init__(self, name, delay):
        self.name, self.delay = name, delay

    def run(self, x):
        import time

        _FakeRunner.log.append(self.name)
        time.sleep(self.delay)
        return x

    def close(self):
        pass


def test_interleaving_order_and_stats():
    _FakeRunner.log = []
    variants = {n: (lambda n=n, d=d: _FakeRunner(n, d)) for n, d in [("a", 0.002), ("b", 0.006), ("c", 0.004)]}
    res = run_interleaved(variants, np.zeros(1), rounds=3, warmup=1, iters=2)
    assert res["method"]["orders"] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    # first call per variant at load, then per round: (1 warm-up + 2 timed) per variant in the rotated order
    calls = _FakeRunner.log[3:]
    blocks = [calls[i:i + 3] for i in range(0, len(calls), 3)]
    assert [b[0] for b in blocks] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"] and all(len(set(b)) == 1 for b in blocks)
    v = res["variants"]
    assert v["a"]["calls"] == 6 and len(v["a"]["round_medians_ms"]) == 3
    assert v["a"]["median_ms"] < v["c"]["median_ms"] < v["b"]["median_ms"]
    assert v["b"]["median_ms"] >= 6.0


def test_summarise():
    s = summarise([1, 2, 3, 4, 100])
    assert s["median_ms"] == 3 and s["min_ms"] == 1 and s["iqr_ms"] == 2 and s["calls"] == 5


def test_floor_ratios():
    v = {"fp32_plain": {"median_ms": 200.0}, "fp32": {"median_ms": 150.0}, "fp32_floor": {"median_ms": 120.0}}
    r = floor_ratios(v, macs=6_000_000_000, precisions=("fp32",))["fp32"]
    assert r == {"optimised_over_plain": 0.75, "floor_over_plain": 0.6, "optimised_over_floor": 1.25,
                 "gmac_per_s_floor": 50.0}
    with pytest.raises(KeyError):
        floor_ratios(v, macs=1)            # no int8 variants


@pytest.mark.gpu
def test_validate_reports_failing_backend_and_metrics(tmp_path, tiny_plain_export):
    """The plain tiny graph does not compile on the GPU alone: reported with its error, not skipped."""
    out = tmp_path / "v.json"
    r = run_cli("validate", tiny_plain_export["fp32"], tiny_plain_export["int8"], "--model", "synthetic-tiny",
                "--backend", "cpu,gpu", "--limit", "3", "--json", out, "--quiet")
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    rows = {("int8.tflite" if "int8" in x["artifact"] else "fp32.tflite", x["backend"]): x for x in rep["results"]}
    assert rows[("fp32.tflite", "cpu")]["metrics"]["pooled_rel_l2"] <= 1e-6
    assert 1e-4 < rows[("int8.tflite", "cpu")]["metrics"]["pooled_rel_l2"] < 0.1
    gpu = rows[("fp32.tflite", "gpu")]
    assert gpu["status"] == "compile_failed" and "BROADCAST_TO" in gpu["error"]
    assert "Unable to parse bc coord" in rows[("int8.tflite", "gpu")]["error"]
    assert rep["image_set"]["count"] == 3 and len(rep["image_set"]["sha256"]) == 64
    assert "compile_failed" in r.stdout  # the Markdown table shows it too
    r = run_cli("validate", tiny_plain_export["fp32"], "--model", "synthetic-tiny", "--backend", "gpu", "--limit",
                "1", "--strict", "--quiet")
    assert r.returncode == 1


def test_default_image_set():
    from edgedepth.images import default_image_set, image_set, image_set_hash

    items = default_image_set()
    assert len(items) >= 100 and len({i.id for i in items}) == len(items)
    assert image_set_hash(items) == image_set_hash(default_image_set())
    assert image_set_hash(image_set(limit=5)) != image_set_hash(items)
    img = items[5].load()
    assert img.mode == "RGB" and min(img.size) > 50
