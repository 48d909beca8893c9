"""Graph rewrites (edgedepth.rewrites): PyTorch parity per rewrite, purity, and the converted graph's properties.

Fast tests use ``synthetic-tiny`` (hidden 32, 4 layers, 2 heads).  The full-size check is marked ``slow``.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.rewrites import PIPELINE, RewriteContext, apply_rewrites
from edgedepth.inspect import describe, gpu_check
from edgedepth.rewrites._modules import EdgeAttention, EdgeLayerNorm, FrozenEmbeddings
from edgedepth.runtimes.litert import LiteRTRunner
from edgedepth.targets import litert

TINY_H, TINY_W = 56, 70
CPU_ONLY_OPS = {"BROADCAST_TO", "GATHER_ND", "SELECT_V2"}


def image_input(h: int, w: int, seed: int = 1) -> torch.Tensor:
    """Seeded image-like input (smooth colour field, an edge, mild noise), ImageNet-normalised."""
    g = torch.Generator().manual_seed(seed)
    img = torch.nn.functional.interpolate(torch.rand(1, 3, 6, 8, generator=g), size=(h, w), mode="bicubic",
                                          align_corners=False)
    yy, xx = torch.meshgrid(torch.linspace(0, 1, h), torch.linspace(0, 1, w), indexing="ij")
    img = (img + 0.3 * ((xx + 0.5 * yy) > 0.6).float() + 0.03 * torch.randn(1, 3, h, w, generator=g)).clamp(0, 1)
    mean = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
    std = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)
    return ((img - mean) / std).float()


from conftest import rel_l2  # noqa: E402


@torch.no_grad()
def depth(model, x) -> np.ndarray:
    return DepthModule(model).eval()(x).numpy()


def snapshot(model):
    """Everything a rewrite could mutate: module tree, parameters/buffers (values), plain attributes we rely on."""
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    return repr(model), state


def assert_unchanged(model, snap):
    tree, state = snap
    assert repr(model) == tree, "rewrite changed its input's module tree"
    now = model.state_dict()
    assert now.keys() == state.keys()
    for k, v in state.items():
        assert torch.equal(now[k], v), f"rewrite changed its input's {k}"


@pytest.fixture(scope="module")
def tiny():
    return load_checkpoint("synthetic-tiny", quiet=True).model


@pytest.fixture(scope="module")
def x_tiny():
    return image_input(TINY_H, TINY_W)


# Measured on synthetic-tiny 56x70 (isolated effect of each rewrite on its input): bit-identical ones are 0;
# the others are float-rounding level (max abs <= ~4e-6 on outputs of magnitude ~1..10, rel-L2 <= ~3e-7).
BIT_EXACT = {"drop_attention_mask", "freeze_position_embedding", "fold_attention_scale", "fuse_qkv"}


@pytest.mark.parametrize("idx", range(len(PIPELINE)), ids=[r.name for r in PIPELINE])
def test_rewrite_parity_and_purity(tiny, x_tiny, idx):
    if PIPELINE[idx].name == "fp16_safe":
        pytest.skip("data-driven: a no-op on a model that fits FP16; see tests/test_fp16.py")
    rw = PIPELINE[idx]
    prefix = [r.name for r in PIPELINE[:idx]]
    before, _ = apply_rewrites(tiny, TINY_H, TINY_W, names=prefix)
    snap = snapshot(before)
    after, changed = rw.fn(before, RewriteContext(TINY_H, TINY_W))
    assert after is not before
    assert changed > 0, f"{rw.name} changed nothing on the tiny model"
    assert_unchanged(before, snap)
    y0, y1 = depth(before, x_tiny), depth(after, x_tiny)
    err, rel = float(np.abs(y1 - y0).max()), rel_l2(y1, y0)
    if rw.name in BIT_EXACT:
        assert err == 0.0, f"{rw.name}: expected bit-identical, max abs {err:.3e}"
    assert rw.exact
    assert rel <= 1e-6, f"{rw.name}: rel-L2 {rel:.3e}"
    assert err <= 2e-5 * max(1.0, float(np.abs(y0).max())), f"{rw.name}: max abs {err:.3e}"
    # idempotent: running it again changes nothing more
    again, changed2 = rw.fn(after, RewriteContext(TINY_H, TINY_W))
    assert changed2 == 0
    assert np.array_equal(depth(again, x_tiny), y1)


def test_pipeline_report_and_input_untouched(tiny, x_tiny):
    snap = snapshot(tiny)
    y0 = depth(tiny, x_tiny)
    model, report = apply_rewrites(tiny, TINY_H, TINY_W)
    assert_unchanged(tiny, snap)
    assert [r["name"] for r in report] == [r.name for r in PIPELINE if r.default]
    assert all(set(r) == {"name", "exact", "changed"} for r in report)
    assert all(r["changed"] > 0 for r in report)
    y1 = depth(model, x_tiny)
    assert rel_l2(y1, y0) <= 1e-6
    # the structural results the later checks rely on
    assert isinstance(model.backbone.embeddings, FrozenEmbeddings)
    assert all(isinstance(l.attention, EdgeAttention) and l.attention.qkv is not None for l in model.backbone.layers)
    assert all(isinstance(l.norm1, EdgeLayerNorm) and l.norm1.centered and l.norm1.weight is None
               for l in model.backbone.layers)


def test_unknown_rewrite_name(tiny):
    with pytest.raises(ValueError, match="unknown rewrite"):
        apply_rewrites(tiny, TINY_H, TINY_W, names=["nope"])


def test_names_subset_runs_in_pipeline_order(tiny):
    _, report = apply_rewrites(tiny, TINY_H, TINY_W, names=["freeze_position_embedding", "drop_attention_mask"])
    assert [r["name"] for r in report] == ["drop_attention_mask", "freeze_position_embedding"]


@pytest.mark.parametrize("hw", [(518, 518), (224, 224), (392, 518)], ids=lambda hw: f"{hw[0]}x{hw[1]}")
def test_other_sizes(tiny, hw):
    """518x518 takes DINOv2's no-interpolation branch; the frozen constant must follow it bit for bit."""
    h, w = hw
    x = image_input(h, w, seed=2)
    y0 = depth(tiny, x)
    frozen, _ = apply_rewrites(tiny, h, w, names=["drop_attention_mask", "freeze_position_embedding"])
    assert np.array_equal(depth(frozen, x), y0)
    model, _ = apply_rewrites(tiny, h, w)
    y1 = depth(model, x)
    # float32 noise itself is ~1-2e-6 here (measured vs float64): the rewritten model must be as close to the
    # float64 reference as the original float32 model is, and within 2e-6 of it (measured 0.9-1.0e-6).
    with torch.no_grad():
        y64 = DepthModule(copy.deepcopy(tiny).double()).eval()(x.double()).numpy()
    assert rel_l2(y1, y64) <= 1.1 * rel_l2(y0, y64) + 1e-7
    assert rel_l2(y1, y0) <= 2e-6


def test_frozen_size_is_enforced(tiny):
    model, _ = apply_rewrites(tiny, TINY_H, TINY_W)
    with pytest.raises(ValueError, match="frozen for 56x70"):
        depth(model, image_input(70, 56))


# ---------------------------------------------------------------------------------------------- converted graph


def _check_graph(path):
    """No CPU-only ops; no FULLY_CONNECTED that drops rank (LiteRT #9481). Returns the op histogram."""
    info = describe(str(path))
    hist = info["op_histogram"]
    assert not (CPU_ONLY_OPS & set(hist)), f"ops the GPU delegate does not take: {CPU_ONLY_OPS & set(hist)}"
    for variant in info["fc_variants"]:
        assert "rank 3->2" not in variant and ("keep_num_dims=True" in variant or "rank 2->2" in variant), variant
    return hist


def _gpu(path, x=None):
    """GPU accelerator alone (SwiftShader here), FP32 enforced, in a child process; optionally runs ``x``."""
    g = gpu_check(str(path), x=None if x is None else x.numpy())
    assert g["fully_delegated"], g["error"]
    return g.get("output")


@pytest.fixture(scope="module")
def tiny_tflite(tiny, tmp_path_factory):
    model, _ = apply_rewrites(tiny, TINY_H, TINY_W)
    path = tmp_path_factory.mktemp("rw") / "tiny_rw.tflite"
    litert.convert_fp32(DepthModule(model), TINY_H, TINY_W, str(path))
    return path


def test_converted_tiny_graph_and_cpu_parity(tiny, x_tiny, tiny_tflite):
    hist = _check_graph(tiny_tflite)
    assert sum(hist.values()) <= 190, dict(hist)          # plain tiny conversion: 403 ops; measured 182
    y_ref = depth(tiny, x_tiny)
    assert rel_l2(LiteRTRunner(str(tiny_tflite)).run(x_tiny.numpy()), y_ref) <= 1e-6


def test_rewrites_keep_the_arithmetic(tiny_tflite, tiny_plain_export):
    """Rewrites remove layout/elementwise work, never multiply-accumulates: same MACs per op class as the plain graph."""
    plain, opt = describe(tiny_plain_export["fp32"])["macs"], describe(str(tiny_tflite))["macs"]
    assert plain["total"] > 0 and opt == plain


def test_tiny_gpu_fp32_and_int8(tiny, x_tiny, tiny_tflite, tmp_path):
    """Full WebGPU delegation (SwiftShader) for FP32 and dynamic INT8; FP32 GPU parity (enforce_f32)."""
    y_ref = depth(tiny, x_tiny)
    assert rel_l2(_gpu(tiny_tflite, x_tiny), y_ref) <= 1e-6
    int8 = tmp_path / "tiny_rw_int8.tflite"
    litert.quantize_int8(str(tiny_tflite), str(int8))
    _gpu(int8)


@pytest.mark.slow
def test_full_size_518x686(tmp_path):
    h, w = 518, 686
    model = load_checkpoint("synthetic", quiet=True).model
    x = image_input(h, w)
    opt, _ = apply_rewrites(model, h, w)
    path = tmp_path / "full_rw.tflite"
    litert.convert_fp32(DepthModule(opt), h, w, str(path))
    hist = _check_graph(path)
    assert sum(hist.values()) <= 450, dict(hist)          # plain: 748; measured 397
    y_ref = depth(model, x)
    assert rel_l2(LiteRTRunner(str(path)).run(x.numpy()), y_ref) <= 1e-6
    _gpu(path)
    int8 = tmp_path / "full_rw_int8.tflite"
    litert.quantize_int8(str(path), str(int8))
    _gpu(int8)
