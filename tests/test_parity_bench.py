"""The harness on constructed cases: metrics with known answers, interleaving order, failure reporting."""

import json

import numpy as np
import pytest

from edgedepth.verify.bench import floor_ratios, run_interleaved, summarise
from edgedepth.verify.parity import ParityAccumulator, align_scale_shift
from conftest import FP32_NOISE_FACTOR, TINY_SIZE, float64_reference, run_cli, torch_fp32


def _maps(n=3, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.uniform(0.5, 5.0, (1, 20, 30)) for _ in range(n)]


def test_identical_is_zero():
    acc = ParityAccumulator()
    for r in _maps():
        acc.add(r.copy(), r)
    s = acc.summary()
    assert s["pooled_rel_l2"] == 0 and s["max_rel_l2"] == 0 and s["max_abs_diff"] == 0
    # float64 least squares on identical maps: 1e-12 is ~1e4 float64 ULPs (no FP32 arithmetic involved)
    assert s["aligned_absrel"] == pytest.approx(0, abs=1e-12) and s["aligned_delta1"] == 1.0
    assert s["pearson"] == pytest.approx(1.0) and s["identical_images"] == 3


def test_mask_flipped_counts_pixels_changing_side():
    """An output used as a mask: the share of pixels on the other side of the threshold than the reference, exact
    (a map that is zero almost everywhere has a large rel-L2 for small changes; the mask may not change at all)."""
    r = np.zeros((4, 5))
    r[0, :3] = 0.9                                  # 3 "sky" pixels of 20
    y = r.copy()
    y[0, 0], y[3, 4] = 0.2, 0.31                    # one leaves the mask, one joins it
    y[1, 1] = 0.29                                  # below 0.3: no change of side, a large rel-L2 term
    acc = ParityAccumulator(threshold=0.3)
    acc.add(y, r)
    s = acc.summary()
    assert s["mask_flipped"] == 2 / 20 and s["pooled_rel_l2"] > 0.4
    plain = ParityAccumulator()
    plain.add(y, r)
    assert "mask_flipped" not in plain.summary()


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


class _FakeClock:
    """Stands in for ``time`` in edgedepth.verify.bench: perf_counter() reads a counter that only the fake runners advance,
    so the measured times are exactly the runners' costs, whatever the machine's load (no sleeping)."""

    def __init__(self):
        self.now = 1000.0

    def perf_counter(self):
        return self.now


class _FakeRunner:
    """Records the global call order; each call costs a fixed time on the fake clock (its n-th timed call costs
    ``delay`` plus a small ramp, so the median of a round is a known value)."""

    log: list = []
    clock: _FakeClock = None

    def __init__(self, name, delay):
        self.name, self.delay = name, delay

    def run(self, x):
        _FakeRunner.log.append(self.name)
        _FakeRunner.clock.now += self.delay
        return x

    def close(self):
        pass


def test_interleaving_order_and_stats(monkeypatch):
    import edgedepth.verify.bench as bench

    _FakeRunner.log = []
    _FakeRunner.clock = _FakeClock()
    monkeypatch.setattr(bench, "time", _FakeRunner.clock)
    variants = {n: (lambda n=n, d=d: _FakeRunner(n, d)) for n, d in [("a", 0.002), ("b", 0.006), ("c", 0.004)]}
    res = run_interleaved(variants, np.zeros(1), rounds=3, warmup=1, iters=2)
    assert res["method"]["orders"] == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"]]
    # first call per variant at load, then per round: (1 warm-up + 2 timed) per variant in the rotated order
    calls = _FakeRunner.log[3:]
    blocks = [calls[i:i + 3] for i in range(0, len(calls), 3)]
    assert [b[0] for b in blocks] == ["a", "b", "c", "b", "c", "a", "c", "a", "b"] and all(len(set(b)) == 1 for b in blocks)
    v = res["variants"]
    assert v["a"]["calls"] == 6 and len(v["a"]["round_medians_ms"]) == 3
    # the fake clock makes every timed call cost exactly its delay (float64 clock arithmetic: rel 1e-9 is far above
    # its rounding, far below any mix-up between variants)
    for name, ms in (("a", 2.0), ("b", 6.0), ("c", 4.0)):
        assert v[name]["median_ms"] == pytest.approx(ms, rel=1e-9), (name, v[name])
        assert v[name]["round_medians_ms"] == pytest.approx([ms] * 3, rel=1e-9), (name, v[name])


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


def _pooled_fp32_noise(model, items, size) -> float:
    """Pooled rel-L2 of PyTorch FP32 against float64 over ``items`` (what validate's metrics pool over)."""
    from edgedepth.preprocess import preprocess

    acc = ParityAccumulator()
    for it in items:
        x = preprocess(it.load(), size)
        acc.add(torch_fp32(model, x), float64_reference(model, x))
    return acc.summary()["pooled_rel_l2"]


@pytest.mark.gpu
def test_validate_reports_failing_backend_and_metrics(tmp_path, tiny_plain_export, tiny_ckpt):
    from edgedepth.images import image_set

    """The plain tiny graph does not compile on the GPU alone: reported with its error, not skipped."""
    out = tmp_path / "v.json"
    r = run_cli("validate", tiny_plain_export["fp32"], tiny_plain_export["int8"], "--model", "synthetic-tiny",
                "--backend", "cpu,gpu", "--limit", "3", "--json", out, "--quiet")
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    rows = {("int8.tflite" if "int8" in x["artifact"] else "fp32.tflite", x["backend"]): x for x in rep["results"]}
    # validate compares with PyTorch FP32 (in its own process): both sides within the FP32 noise factor of float64,
    # so at most 2x the factor times PyTorch FP32's own error on the same 3 images, measured here (conftest policy)
    noise = _pooled_fp32_noise(tiny_ckpt.model, image_set(limit=3), TINY_SIZE)
    fp32_err = rows[("fp32.tflite", "cpu")]["metrics"]["pooled_rel_l2"]
    assert fp32_err <= 2 * FP32_NOISE_FACTOR * noise, (fp32_err, noise)
    # INT8 weight quantisation error: orders of magnitude above FP32 noise, so constants bound it
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
