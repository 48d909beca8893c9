"""Graph rewrites (edgedepth.rewrites): PyTorch parity per rewrite, purity, and the converted graph's properties.

Fast tests use ``synthetic-tiny`` (hidden 32, 4 layers, 2 heads).  The full-size check is marked ``slow``.
Tolerances follow the policy in conftest.py: bit-identical where a rewrite's docstring says so, otherwise within
FP32_NOISE_FACTOR of PyTorch FP32's own error against a float64 run measured here.
"""

from __future__ import annotations

import copy
import dataclasses

import numpy as np
import pytest
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.models import DEPTH_ANYTHING_V2
from edgedepth.rewrites import PIPELINE, RewriteContext, apply_rewrites
from edgedepth.formats.tflite import describe, gpu_check
from edgedepth.rewrites._modules import EdgeAttention, EdgeLayerNorm, FrozenEmbeddings
from edgedepth.runtimes.litert import LiteRTRunner
from edgedepth.formats import tflite as litert

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


from conftest import THREADS, assert_rounded_once, assert_within_fp32_noise, float64_reference  # noqa: E402


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


@pytest.fixture(scope="module")
def ref_tiny(tiny, x_tiny):
    """The original model on x_tiny: float64 reference and PyTorch FP32 (at the default thread count)."""
    return {"fp64": float64_reference(tiny, x_tiny), "fp32": depth(tiny, x_tiny)}


# Bit-identical by construction (each rewrite's docstring): the mask adds 0; 1/sqrt(16) is a power of two; a fused
# GEMM computes the same dot products.  freeze_position_embedding is bit-identical only where no resize happens
# (test_other_sizes, 518x518); at 56x70 it is rounded once from float64 (test_frozen_position_embedding_rounded_once).
# fp16_safe's bit identity is tested in tests/test_fp16.py (it is a no-op on a model that fits FP16).
# The others are float-rounding exact: within FP32_NOISE_FACTOR of PyTorch FP32's own error vs float64 (measured
# ratios 0.8-1.2, rel-L2 ~6e-7).
# rank4_attention: torch runs a [1, h, N, d] matmul as the same bmm over the flattened batch dims.
BIT_EXACT = {"drop_attention_mask", "fold_attention_scale", "fuse_qkv", "rank4_attention", "symbolic_output_size"}
# split_large_conv only acts on weights > 32 MiB (Large), split_wide_conv on convolutions over > 910 channels (Large):
# tested below with small thresholds.
TESTED_ELSEWHERE = {"fp16_safe", "split_large_conv", "split_wide_conv"}


V2 = [i for i, r in enumerate(PIPELINE) if r.name not in TESTED_ELSEWHERE and DEPTH_ANYTHING_V2 in r.families]


@pytest.mark.parametrize("idx", V2, ids=[PIPELINE[i].name for i in V2])   # DA3's: tests/test_depth_anything_3.py
def test_rewrite_parity_and_purity(tiny, x_tiny, ref_tiny, idx, torch_threads):
    rw = PIPELINE[idx]
    prefix = [r.name for r in PIPELINE[:idx]]
    before, _ = apply_rewrites(tiny, TINY_H, TINY_W, names=prefix)
    snap = snapshot(before)
    after, changed = rw.fn(before, RewriteContext(TINY_H, TINY_W))
    assert after is not before
    assert changed > 0, f"{rw.name} changed nothing on the tiny model"
    assert_unchanged(before, snap)
    y0, y1 = depth(before, x_tiny), depth(after, x_tiny)
    if rw.name in BIT_EXACT:
        err = float(np.abs(y1 - y0).max())
        assert err == 0.0, f"{rw.name}: documented bit-identical, max abs {err:.3e} at {torch_threads} thread(s)"
    else:
        assert_within_fp32_noise(y1, ref_tiny["fp64"], ref_tiny["fp32"], what=rw.name, max_abs=True)
    # idempotent: running it again changes nothing more
    again, changed2 = rw.fn(after, RewriteContext(TINY_H, TINY_W))
    assert changed2 == 0
    assert np.array_equal(depth(again, x_tiny), y1)


def test_pipeline_report_and_input_untouched(tiny, x_tiny, ref_tiny):
    snap = snapshot(tiny)
    model, report = apply_rewrites(tiny, TINY_H, TINY_W)
    assert_unchanged(tiny, snap)
    assert [r["name"] for r in report] == [r.name for r in PIPELINE if r.default and DEPTH_ANYTHING_V2 in r.families]
    assert all(set(r) == {"name", "exact", "changed"} for r in report)
    assert all(r["changed"] > 0 for r in report if r["name"] not in TESTED_ELSEWHERE)
    assert_within_fp32_noise(depth(model, x_tiny), ref_tiny["fp64"], ref_tiny["fp32"], what="default pipeline",
                             max_abs=True)
    # the structural results the later checks rely on
    assert isinstance(model.backbone.embeddings, FrozenEmbeddings)
    assert all(isinstance(l.attention, EdgeAttention) and l.attention.qkv is not None for l in model.backbone.layers)
    assert all(isinstance(l.norm1, EdgeLayerNorm) and l.norm1.centered and l.norm1.weight is None
               for l in model.backbone.layers)


def test_split_large_conv():
    """On the tiny Large stand-in with a 4 KiB threshold: every big conv split, output within FP32 noise, the input
    model untouched, idempotent; with the real threshold Small's stand-in has nothing to split."""
    from edgedepth.rewrites.split_large_conv import MAX_WEIGHT_BYTES, SplitConv2d, split_large_convs

    model = load_checkpoint("synthetic-tiny-large", quiet=True).model
    x = image_input(TINY_H, TINY_W)
    snap = snapshot(model)
    after, changed = split_large_convs(model, 4096)
    assert changed > 0 and sum(isinstance(m, SplitConv2d) for m in after.modules()) == changed
    assert_unchanged(model, snap)
    assert_within_fp32_noise(depth(after, x), float64_reference(model, x), depth(model, x), what="split_large_conv",
                             max_abs=True)
    assert split_large_convs(after, 4096)[1] == 0
    assert split_large_convs(load_checkpoint("synthetic", quiet=True).model, MAX_WEIGHT_BYTES)[1] == 0


@pytest.mark.parametrize("name", ["synthetic-tiny-large", "synthetic-da3-tiny-mono"])
def test_split_wide_conv(name):
    """On the tiny Large stand-ins (V2 Large; DA3 Mono-Large's DPT head) with a 200-texel limit: every convolution
    whose in_channels x kh x kw exceeds it summed over input-channel groups that fit, every output within FP32 noise,
    the input model untouched, idempotent; with the real limit (8192) Small's stand-ins have nothing to split."""
    import copy

    import torch

    from edgedepth.checkpoint import DepthModule
    from edgedepth.rewrites.split_wide_conv import MAX_TEXELS, InputSplitConv2d, split_wide_convs

    ckpt = load_checkpoint(name, quiet=True)
    model = ckpt.model
    x = image_input(TINY_H, TINY_W)
    snap = snapshot(model)
    after, changed = split_wide_convs(model, 200)
    split = [m for m in after.modules() if isinstance(m, InputSplitConv2d)]
    assert changed == len(split) > 0
    assert all(len(m.parts) > 1 and all(c.in_channels * c.kernel_size[0] * c.kernel_size[1] <= 200 for c in m.parts)
               for m in split)
    assert_unchanged(model, snap)
    with torch.no_grad():
        run = lambda m, xx: [t.numpy() for t in _as_tuple(DepthModule(m, ckpt.outputs)(xx))]  # noqa: E731
        ours, fp32 = run(after, x), run(model, x)
        fp64 = run(copy.deepcopy(model).double(), x.double())
    for role, a, b, c in zip(ckpt.outputs, ours, fp64, fp32):
        assert_within_fp32_noise(a, b, c, what=f"split_wide_conv {name} {role}", max_abs=True)
    assert split_wide_convs(after, 200)[1] == 0
    for small in ("synthetic", "synthetic-da3-tiny"):
        assert split_wide_convs(load_checkpoint(small, quiet=True).model, MAX_TEXELS)[1] == 0


def _as_tuple(y):
    return y if isinstance(y, tuple) else (y,)


def test_quantizer_large_weight_bug_canary():
    """Why split_large_conv exists: ai-edge-quantizer cannot quantise a channelwise weight > 32 MiB (#512).  When this
    starts passing through (upstream fixed), drop the rewrite."""
    from ai_edge_quantizer import qtyping
    from ai_edge_quantizer.algorithms.uniform_quantize import uniform_quantize_tensor as uq

    w = np.ones((1024, 3, 3, 1024), np.float32)        # Large's reassemble resize: 37.7 MB
    params = qtyping.UniformQuantParams(num_bits=8, quantized_dimension=0, scale=np.full((1024, 1, 1, 1), 0.01),
                                        zero_point=np.zeros((1024, 1, 1, 1), np.int32), symmetric=True)
    with pytest.raises(ValueError, match="axis remapping"):
        uq.uniform_quantize(w, params)
    assert uq.uniform_quantize(w[:512], dataclasses.replace(params, scale=params.scale[:512],
                                                            zero_point=params.zero_point[:512])).shape == (512, 3, 3, 1024)


def test_unknown_rewrite_name(tiny):
    with pytest.raises(ValueError, match="unknown rewrite"):
        apply_rewrites(tiny, TINY_H, TINY_W, names=["nope"])


def test_rewrites_declare_their_families(tiny, monkeypatch):
    """Every rewrite names the model families whose structure it walks (edgedepth.models); a model of no known family
    is refused before anything runs, and a rewrite runs only on its families' models."""
    from edgedepth.models import FAMILIES, family_of

    known = {f.name for f in FAMILIES}
    assert all(r.families and set(r.families) <= known for r in PIPELINE), [(r.name, r.families) for r in PIPELINE]
    with pytest.raises(ValueError, match="no known family"):
        apply_rewrites(torch.nn.Linear(2, 2), TINY_H, TINY_W)
    import edgedepth.rewrites as rw

    foreign = dataclasses.replace(PIPELINE[0], families=("another_family",))
    monkeypatch.setitem(rw.REWRITES, foreign.name, foreign)
    with pytest.raises(ValueError, match=f"do not apply to {family_of(tiny).name}"):
        apply_rewrites(tiny, TINY_H, TINY_W, names=[foreign.name])


def test_names_subset_runs_in_pipeline_order(tiny):
    _, report = apply_rewrites(tiny, TINY_H, TINY_W, names=["freeze_position_embedding", "drop_attention_mask"])
    assert [r["name"] for r in report] == ["drop_attention_mask", "freeze_position_embedding"]


@pytest.mark.parametrize("hw", [(518, 518), (224, 224), (392, 518)], ids=lambda hw: f"{hw[0]}x{hw[1]}")
def test_other_sizes(tiny, hw):
    """518x518 takes DINOv2's no-interpolation branch: the frozen constant follows it bit for bit.  Where a resize
    happens (224x224, 392x518) the constant is rounded once from float64: within FP32 noise of the original."""
    h, w = hw
    x = image_input(h, w, seed=2)
    y0, y64 = depth(tiny, x), float64_reference(tiny, x)
    frozen, _ = apply_rewrites(tiny, h, w, names=["drop_attention_mask", "freeze_position_embedding"])
    if hw == (518, 518):
        assert np.array_equal(depth(frozen, x), y0)
    else:
        assert_within_fp32_noise(depth(frozen, x), y64, y0, what=f"frozen position embedding {h}x{w}", max_abs=True)
    model, _ = apply_rewrites(tiny, h, w)
    assert_within_fp32_noise(depth(model, x), y64, y0, what=f"default pipeline {h}x{w}", max_abs=True)


@pytest.mark.parametrize("hw", [(TINY_H, TINY_W), (392, 518), (518, 518)], ids=lambda hw: f"{hw[0]}x{hw[1]}")
def test_frozen_position_embedding_rounded_once(tiny, hw):
    """The frozen constant is transformers' interpolation (bicubic, A=-0.75, align_corners=False) computed in float64
    and rounded to float32 once (its docstring): <= 0.5 float32 ULP from PyTorch's float64 bicubic of the table.
    (transformers itself resizes in float32, even in a float64 model.)  Where no resize happens: the table itself."""
    h, w = hw
    frozen, _ = apply_rewrites(tiny, h, w, names=["drop_attention_mask", "freeze_position_embedding"])
    emb = frozen.backbone.embeddings
    table = tiny.backbone.embeddings.position_embeddings.detach()
    cls = tiny.backbone.embeddings.cls_token.detach()
    side, dim = int(round((table.shape[1] - 1) ** 0.5)), table.shape[-1]
    if hw == (518, 518):
        assert torch.equal(emb.patch_pos, table[:, 1:]) and torch.equal(emb.cls_pos, cls + table[:, :1])
        return
    grid = table[:, 1:].double().reshape(1, side, side, dim).permute(0, 3, 1, 2)
    pos64 = torch.nn.functional.interpolate(grid, size=(h // 14, w // 14), mode="bicubic", align_corners=False)
    pos64 = pos64.permute(0, 2, 3, 1).reshape(1, -1, dim)
    scale = float(table.abs().max())
    assert_rounded_once(emb.patch_pos.numpy(), pos64.numpy(), scale, what=f"patch_pos {h}x{w}")
    assert_rounded_once(emb.cls_pos.numpy(), (cls.double() + table[:, :1].double()).numpy(), scale,
                        what=f"cls_pos {h}x{w}")


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


def test_converted_tiny_graph(tiny_tflite):
    hist = _check_graph(tiny_tflite)
    assert sum(hist.values()) == 202, dict(hist)   # plain tiny conversion: 403 ops; 182 + rank4_attention's 5 RESHAPEs per layer


@pytest.mark.parametrize("threads", THREADS)
def test_converted_tiny_cpu_parity(x_tiny, ref_tiny, tiny_tflite, threads):
    y = LiteRTRunner(str(tiny_tflite), threads=threads).run(x_tiny.numpy())
    assert_within_fp32_noise(y, ref_tiny["fp64"], ref_tiny["fp32"], what=f"LiteRT CPU {threads} thread(s)")


def test_rewrites_keep_the_arithmetic(tiny_tflite, tiny_plain_export):
    """Rewrites remove layout/elementwise work, never multiply-accumulates: same MACs per op class as the plain graph."""
    plain, opt = describe(tiny_plain_export["fp32"])["macs"], describe(str(tiny_tflite))["macs"]
    assert plain["total"] > 0 and opt == plain


@pytest.mark.gpu
def test_tiny_gpu_fp32_and_int8(x_tiny, ref_tiny, tiny_tflite, tmp_path):
    """Full WebGPU delegation (SwiftShader) for FP32 and dynamic INT8; FP32 GPU parity (enforce_f32)."""
    assert_within_fp32_noise(_gpu(tiny_tflite, x_tiny), ref_tiny["fp64"], ref_tiny["fp32"], what="GPU (enforce_f32)")
    int8 = tmp_path / "tiny_rw_int8.tflite"
    litert.quantize_int8(str(tiny_tflite), str(int8))
    _gpu(int8)


@pytest.mark.slow
@pytest.mark.gpu
def test_full_size_518x686(full_release_518x686, full_reference):
    """The release's 518x686 FP32 file (every default rewrite; conftest's shared export): 457 ops, LiteRT CPU parity
    with the original model, and FP32 and INT8 fully delegated to the GPU."""
    ref = full_reference
    path = full_release_518x686["fp32"]
    hist = _check_graph(path)
    assert sum(hist.values()) == 457, dict(hist)   # plain: 748; 397 + rank4_attention's 5 RESHAPEs per layer
    for threads in THREADS:
        assert_within_fp32_noise(LiteRTRunner(path, threads=threads).run(ref["x"]), ref["fp64"], ref["fp32"],
                                 what=f"full size, LiteRT CPU {threads} thread(s)")
    _gpu(path)
    _gpu(full_release_518x686["int8"])
