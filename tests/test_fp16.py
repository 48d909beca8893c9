"""FP16 safety (issue 8): activation-range probe, stress variant, the exact ``fp16_safe`` rewrite, FP16 emulation.

All on ``synthetic-tiny`` (56x70, calibration = 4 photos of the default set): a few seconds per test, plus one pair of
tiny conversions.  Measured numbers are in the comments next to the thresholds.  Tolerances (conftest policy): the
power-of-two rescaling is bit-identical; FP32 comparisons are bounded by PyTorch FP32's own error vs float64 measured
here; the constants bound FP16 rounding/overflow effects (FP16 unit roundoff 4.9e-4), which FP32 rounding cannot reach.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

from edgedepth.fp16 import FP16_MAX, probe, report
from edgedepth.verify import fp16_emulation as emulate
from edgedepth.fp16.stress import stress_checkpoint
from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.rewrites import RewriteContext, apply_rewrites
from edgedepth.rewrites.fp16_safe import MARGIN_BITS, fp16_safe, plan_from_rows, weight_report
from conftest import FP32_NOISE_FACTOR, SWIFTSHADER_ICD, THREADS, float64_reference, require_vulkan

H, W = 56, 70
LIMIT = FP16_MAX / 2 ** MARGIN_BITS


@pytest.fixture(scope="module")
def tiny():
    return load_checkpoint("synthetic-tiny", quiet=True)


@pytest.fixture(scope="module")
def stress(tiny):
    return stress_checkpoint(tiny)


@pytest.fixture(scope="module")
def xs():
    return probe.calibration_inputs((H, W), 4)[0]


@pytest.fixture(scope="module")
def xs_ref(tiny, xs):
    """The original tiny model on the calibration photos: float64 outputs and PyTorch FP32's pooled rel-L2 to them."""
    y64 = [float64_reference(tiny.model, x) for x in xs]
    return {"fp64": y64, "noise": emulate.compare(emulate.fp32_outputs(tiny.model, xs), y64)["pooled_rel_l2"]}


@pytest.fixture(scope="module")
def opt_and_safe(stress):
    opt, _ = apply_rewrites(stress.model, H, W)
    safe, changed = fp16_safe(opt, RewriteContext(H, W))
    return opt, safe, changed


def _maxdiff(a, b) -> float:
    return max(float(np.abs(x - y).max()) for x, y in zip(a, b))


# ------------------------------------------------------------------------------------------------ probe


def test_probe_plain_is_fp16_safe(tiny, xs):
    rows = probe.probe(tiny.model, xs)
    s = probe.summarize(rows)
    assert s["fp16_safe"], s
    assert s["max_abs"] < 100                                  # measured 9.8 (head.conv2)
    r = next(r for r in rows if r["stage"] == "output")
    assert 1e-4 < r["fp16_rel_err"] < 5e-4                     # plain FP16 rounding (measured ~2.1e-4)


def test_probe_flags_stress(stress, xs):
    rows = probe.probe(stress.model, xs)
    s = probe.summarize(rows)
    assert not s["fp16_safe"]
    assert {"head.conv1", "head.conv2", "neck.fusion3.projection"} <= set(s["overflow_stages"]), s
    assert s["max_abs"] > 1e7                                  # measured 1.2e8 at head.conv2
    # the backbone stream fits FP16 storage, but LayerNorm's (x - mean)^2 does not
    assert all(r["max_abs"] < FP16_MAX for r in rows if r["group"] == "stream")
    assert any(r.get("variance_overflow") for r in rows)
    text = report.format_ranges({"rows": rows})
    assert "variance-overflow" in text and "overflow" in text and "NOT FP16-safe" in text


def test_probe_same_stages_on_hf_and_rewritten(tiny, xs, xs_ref):
    """Stages are found by role: the rewritten model reports the same stages and the same neck/head maxima (two FP32
    runs: within 2x the noise factor of PyTorch FP32's own output error vs float64; measured ratio ~1)."""
    opt, _ = apply_rewrites(tiny.model, H, W)
    a, b = probe.probe(tiny.model, xs, full=False), probe.probe(opt, xs, full=False)
    assert [r["stage"] for r in a] == [r["stage"] for r in b]
    for ra, rb in zip(a, b):
        if ra["stage"].startswith(("neck.", "head.", "output")):
            assert rb["max_abs"] == pytest.approx(ra["max_abs"], rel=2 * FP32_NOISE_FACTOR * xs_ref["noise"]), ra["stage"]


def test_probe_statistics_on_constructed_tensors():
    """Overflow, precision loss (a signal riding on a large offset: FP16 spacing at 3000 is 2) and clean data."""
    g = torch.Generator().manual_seed(0)
    signal = torch.randn(1, 8, 16, 16, generator=g)
    cases = {"clean": signal, "offset": 3000.0 + 0.1 * signal, "huge": 1e5 * signal}
    rows = {}
    for name, t in cases.items():
        acc = probe._Acc("tensor", None)
        acc.add(t, 1)
        acc.new_image()
        rows[name] = acc.row(name)
    assert rows["clean"]["flags"] == [] and rows["clean"]["fp16_signal_err"] < 5e-4
    assert rows["offset"]["flags"] == ["precision-loss"] and rows["offset"]["fp16_signal_err"] > 0.5
    assert rows["offset"]["fp16_rel_err"] < 5e-4                  # relative to the values themselves FP16 looks fine
    assert rows["huge"]["flags"] == ["overflow"] and rows["huge"]["overflow_frac"] > 0.1


def test_stress_preserves_the_depth_map(tiny, stress, xs, xs_ref):
    """Only the internal scales differ: the stressed model is the same function to FP32 rounding (measured 0.9x
    PyTorch FP32's own error vs float64)."""
    err = emulate.compare(emulate.fp32_outputs(stress.model, xs), xs_ref["fp64"])["pooled_rel_l2"]
    assert err <= FP32_NOISE_FACTOR * xs_ref["noise"], (err, xs_ref["noise"])


def test_stress_variant_name_loads_through_checkpoint(tiny):
    """``*-fp16-stress`` is a variant registered by edgedepth.fp16 with checkpoint's registry (no import loop)."""
    from edgedepth.models import family_of

    st = load_checkpoint("synthetic-tiny-fp16-stress", quiet=True)
    assert st.name == "synthetic-tiny-fp16-stress" and st.model.fp16_stress["stream"] > 1
    assert family_of(st.model).member_of(st).name == "small"       # its base's member: files are named after it


def test_fp16_package_import_rules():
    """``import edgedepth`` (which registers the variant) loads no torch; edgedepth.fp16 never imports the rewrites;
    edgedepth.checkpoint imports nothing from edgedepth.fp16."""
    import subprocess
    import sys

    code = ("import sys, edgedepth; assert 'torch' not in sys.modules, 'torch'; "
            "import edgedepth.checkpoint; assert not [m for m in sys.modules if m.startswith('edgedepth.fp16.')]; "
            "import edgedepth.fp16.topology, edgedepth.fp16.probe, edgedepth.fp16.stress, "
            "edgedepth.fp16.report; bad = [m for m in sys.modules if m.startswith('edgedepth.rewrites')]; "
            "assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ.copy())
    assert r.returncode == 0, r.stderr[-2000:]


def test_stress_preserves_the_depth_map(tiny, stress, xs):
    y0, y1 = emulate.fp32_outputs(tiny.model, xs), emulate.fp32_outputs(stress.model, xs)
    assert emulate.compare(y1, y0)["pooled_rel_l2"] < 1e-5       # measured 4e-7: only the internal scales differ
    assert stress.name == "synthetic-tiny-fp16-stress"


# ------------------------------------------------------------------------------------------------ the rewrite


def test_fp16_safe_exact_in_fp32(opt_and_safe, xs):
    opt, safe, changed = opt_and_safe
    assert changed > 0
    diff = _maxdiff(emulate.fp32_outputs(safe, xs), emulate.fp32_outputs(opt, xs))
    assert diff == 0.0                                         # power-of-two factors: bit-identical (measured 0.0)


def test_fp16_safe_exact_on_the_hf_model(stress, xs):
    """Also on transformers' own modules (LayerScale, nn.LayerNorm, SDPA, in-graph position interpolation)."""
    safe, changed = fp16_safe(stress.model, RewriteContext(H, W))
    assert changed > 0
    assert _maxdiff(emulate.fp32_outputs(safe, xs), emulate.fp32_outputs(stress.model, xs)) == 0.0


def test_fp16_safe_brings_activations_under_the_limit(opt_and_safe, xs):
    _, safe, _ = opt_and_safe
    plan = safe.fp16_safe_plan
    assert plan["output_scale"] == 1.0                         # the depth map itself is unchanged
    assert plan["groups"]["head.conv2"]["shift"] >= 10         # measured 15
    rows = probe.probe(safe, xs)
    assert probe.summarize(rows)["fp16_safe"]
    for r in rows:
        if r["group"]:                                         # every rescalable stage: 4 bits of margin (calibration)
            assert r["max_abs"] <= LIMIT, r
        if r["kind"] == "layernorm":
            assert r["sq_max"] <= LIMIT, r
    # no more rescaling than needed: maxima land in (LIMIT/2, LIMIT] where a group was rescaled (the stream's shift
    # is set by LayerNorm's squares, which move by 4x per shift)
    for g, v in plan["groups"].items():
        if v["shift"] and g == "stream":
            assert LIMIT / 4 < v["sq_max_after"] <= LIMIT, v
        elif v["shift"]:
            assert LIMIT / 2 < v["max_after"] <= LIMIT, (g, v)


def test_fp16_safe_fixes_weights_that_vanish_in_fp16(opt_and_safe):
    """A huge-activation head has tiny last-layer weights: subnormal or zero in FP16.  Rescaling brings them back."""
    opt, safe, _ = opt_and_safe
    before = {r["layer"]: r for r in weight_report(opt)}
    after = {r["layer"]: r for r in weight_report(safe)}
    assert before["head.conv3"]["subnormal_frac"] == 1.0          # every weight below FP16's smallest normal
    assert before["head.conv3"]["zero_in_fp16_frac"] > 0.25       # measured 0.375 (tiny), 0.75 (full size)
    assert after["head.conv3"]["subnormal_frac"] == 0.0
    assert not any(r["fp16_overflow"] for r in after.values())


def test_fp16_safe_noop_pure_idempotent(tiny, opt_and_safe, xs):
    from test_rewrites import assert_unchanged, snapshot

    opt, safe, _ = opt_and_safe
    snap = snapshot(safe)
    again, changed = fp16_safe(safe, RewriteContext(H, W))
    assert changed == 0 and again is not safe
    assert_unchanged(safe, snap)
    plain_opt, _ = apply_rewrites(tiny.model, H, W)
    same, changed = fp16_safe(plain_opt, RewriteContext(H, W))
    assert changed == 0 and not hasattr(same, "fp16_safe_plan")
    assert _maxdiff(emulate.fp32_outputs(same, xs), emulate.fp32_outputs(plain_opt, xs)) == 0.0


def test_plan_from_rows_uses_margin():
    rows = [{"stage": "a", "group": "head.conv2", "max_abs": 1.0e8, "kind": "tensor"},
            {"stage": "b", "group": "stream", "max_abs": 300.0, "sq_max": 300.0 ** 2, "kind": "layernorm"},
            {"stage": "c", "group": "output", "max_abs": 10.0, "kind": "tensor"}]
    p = plan_from_rows(rows, margin_bits=4)
    assert p["groups"]["head.conv2"]["shift"] == 15            # 1e8 / 2^15 = 3052 <= 4094 < 6104
    assert p["groups"]["stream"]["shift"] == 3                 # (300 / 8)^2 = 1406 <= 4094 < (300 / 4)^2
    assert p["groups"]["output"]["shift"] == 0 and p["output_scale"] == 1.0
    rows[2]["max_abs"] = 1.0e6                                 # a metric head's logits: never rescaled, reported
    assert plan_from_rows(rows, margin_bits=4)["groups"]["output"]["shift"] == 8
    m = plan_from_rows(rows, margin_bits=4, fixed_output=True)
    assert m["groups"]["output"]["shift"] == 0 and m["not_rescalable_over_limit"] == [{"stage": "c", "max_abs": 1e6}]


def test_fp16_safe_keeps_a_metric_head_exact(xs):
    """Every rescaled group of a metric member, and its metres bit-identical (sigmoid x max_depth untouched)."""
    m = stress_checkpoint(load_checkpoint("synthetic-tiny-metric-indoor", quiet=True))
    safe, changed = fp16_safe(m.model, RewriteContext(H, W))
    assert changed > 0 and safe.fp16_safe_plan["groups"]["output"]["shift"] == 0
    assert _maxdiff(emulate.fp32_outputs(safe, xs), emulate.fp32_outputs(m.model, xs)) == 0.0


# ------------------------------------------------------------------------------------------------ FP16 emulation


def test_fp16_emulation_error_large_to_small(opt_and_safe, xs):
    opt, safe, _ = opt_and_safe
    ref = emulate.fp32_outputs(opt, xs)
    bad = emulate.compare(emulate.emulate_fp16(opt, xs), ref)
    good = emulate.compare(emulate.emulate_fp16(safe, xs), ref)
    assert bad["pooled_rel_l2"] > 0.5 and bad["nonfinite_frac"] > 0.5      # measured 1.0 / all NaN
    assert good["pooled_rel_l2"] < 2e-3 and good["nonfinite_frac"] == 0.0   # measured 8.8e-4


def test_fp16_emulation_layernorm_variance(tiny, xs):
    """Stream-only stress: every value fits FP16, only LayerNorm's (x - mean)^2 overflows; still visibly wrong."""
    st = stress_checkpoint(tiny, neck=False)
    opt, _ = apply_rewrites(st.model, H, W)
    safe, _ = fp16_safe(opt, RewriteContext(H, W))
    ref = emulate.fp32_outputs(opt, xs)
    bad = emulate.compare(emulate.emulate_fp16(opt, xs), ref)["pooled_rel_l2"]
    good = emulate.compare(emulate.emulate_fp16(safe, xs), ref)["pooled_rel_l2"]
    # measured 3.6e-2 vs 7.5e-4 (FP16 rounding alone: unit roundoff 4.9e-4); both far above FP32 noise.  The bad
    # error is relative to the map, so it shrinks when the head's output offset grows (0.19 with the noise-calibrated
    # head): require it to stand clear of FP16 rounding rather than a fixed size.
    assert bad > 0.01 and bad > 10 * good, (bad, good)
    assert good < 2e-3, good
    # the HF model's fused layer_norm is decomposed by the emulator as the converted graph does
    hf = emulate.compare(emulate.emulate_fp16(st.model, xs), ref)["pooled_rel_l2"]
    assert hf > 0.01 and hf > 10 * good, (hf, good)                                  # measured 3.6e-2


# ------------------------------------------------------------------------------------------------ converted graph


@pytest.fixture(scope="module")
def tflites(opt_and_safe, tmp_path_factory):
    from edgedepth.formats import tflite as litert

    opt, safe, _ = opt_and_safe
    d = tmp_path_factory.mktemp("fp16")
    paths = {}
    for name, m in (("opt", opt), ("safe", safe)):
        paths[name] = str(d / f"{name}.tflite")
        litert.convert_fp32(DepthModule(m), H, W, paths[name])
    return paths


@pytest.mark.parametrize("threads", THREADS)
def test_converted_same_ops_bit_identical_cpu(tflites, xs, threads):
    from edgedepth.formats.tflite import describe
    from edgedepth.runtimes.litert import LiteRTRunner

    a, b = describe(tflites["opt"]), describe(tflites["safe"])
    assert a["op_histogram"] == b["op_histogram"]              # no op added (202 both)
    ra, rb = LiteRTRunner(tflites["opt"], threads=threads), LiteRTRunner(tflites["safe"], threads=threads)
    assert _maxdiff([rb.run(x) for x in xs], [ra.run(x) for x in xs]) == 0.0   # XNNPACK too: measured 0.0


@pytest.mark.gpu
def test_swiftshader_default_precision_computes_fp32(tflites, xs, monkeypatch):
    """On SwiftShader (no shader-f16) the default precision policy still computes FP32: the stressed graph, whose
    activations reach 1e8, comes out finite and bit-identical to enforce_f32.  FP16 behaviour needs a real GPU.
    SwiftShader is selected explicitly (a real GPU named in the environment would answer another question)."""
    from edgedepth.formats.tflite import gpu_check

    monkeypatch.delenv("VK_DRIVER_FILES", raising=False)
    monkeypatch.setenv("VK_ICD_FILENAMES", SWIFTSHADER_ICD)
    require_vulkan()

    g32 = gpu_check(tflites["opt"], x=xs[0], enforce_f32=True)
    g16 = gpu_check(tflites["opt"], x=xs[0], enforce_f32=False)
    assert g32["fully_delegated"] and g16["fully_delegated"], (g32["error"], g16["error"])
    assert np.all(np.isfinite(g16["output"])) and np.array_equal(g16["output"], g32["output"])
