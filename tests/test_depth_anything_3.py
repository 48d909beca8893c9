"""Depth Anything 3 as the second model family (issue 31, first slice; edgedepth.models.depth_anything_3): stand-ins
built from the depth-anything-3 package's own modules, the monocular contract, seeded weights that are the same bytes
on every CPU, and the one-line refusals of what is not built yet (export, real weights, the FP16 range probe)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint, state_dict_digest
from edgedepth.models import MEMBERS, SYNTHETIC, family_of, member_of_hub_id
from edgedepth.rewrites import apply_rewrites, default_names
from conftest import OTHER_KERNELS, assert_one_line_error, assert_within_fp32_noise, float64_reference, run_cli

TINY = "synthetic-da3-tiny"
PHOTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors", "rgb_160x120.png")
SIZE = (28, 42)
# State-dict SHA-256s of the stand-ins (models._weights.normal_like: CPU-independent by construction).
GOLDEN_DIGEST = {
    "synthetic-da3-tiny": "f23e65014061c335628cbbbcc5611f55625ab07069c12e12219a773eab612c29",
    "synthetic-da3-small": "2d8503ff942b30854661e5d7213b280f5104adc07e898d0ba4495a6064931ce7",
}


@pytest.fixture(scope="module")
def tiny():
    return load_checkpoint(TINY, quiet=True)


@pytest.fixture(scope="module")
def x():
    return torch.from_numpy(np.random.default_rng(0).standard_normal((1, 3, *SIZE)).astype(np.float32))


def test_mono_model_is_the_packages_own_forward(tiny, x):
    """DA3Mono on one view = the package's DepthAnything3Net on [B, S=1, 3, H, W] with the same backbone and head,
    bit for bit (depth and confidence)."""
    from edgedepth.models.depth_anything_3.mono import package_net
    from edgedepth.progress import quiet_output

    with quiet_output():
        net = package_net("da3-small")
    net.backbone, net.head, net.cam_dec, net.cam_enc = tiny.model.backbone, tiny.model.head, None, None
    with torch.no_grad():
        theirs = net(x[:, None])
        ours = tiny.model(x)
    assert torch.equal(ours.predicted_depth, theirs["depth"][:, 0])
    assert torch.equal(ours.confidence, theirs["depth_conf"][:, 0])


def test_output_contract(tiny, x):
    """depth [1, H, W] > 0 (exp head), confidence [1, H, W] >= 1 (exp + 1); DepthModule exports the depth."""
    with torch.no_grad():
        out = tiny.model(x)
        depth = DepthModule(tiny.model)(x)
    assert out.predicted_depth.shape == out.confidence.shape == (1, *SIZE)
    assert bool((out.predicted_depth > 0).all()) and bool((out.confidence >= 1).all())
    assert torch.equal(depth, out.predicted_depth)
    assert family_of(tiny.model).name == "depth_anything_3" and not tiny.is_metric
    assert tiny.member.name == "da3-small" and tiny.file_stem == "depth_anything_3_da3_small"


@pytest.mark.parametrize("name", sorted(GOLDEN_DIGEST))
def test_stand_in_weights_are_golden_under_other_kernels(name):
    """The stand-ins' weights are the same bytes here and in a child under other CPU kernels (golden SHA-256)."""
    code = ("from edgedepth.checkpoint import load_checkpoint, state_dict_digest; "
            f"print(state_dict_digest(load_checkpoint({name!r}, quiet=True).model))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env={**os.environ, **OTHER_KERNELS})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split()[-1] == GOLDEN_DIGEST[name]
    if name == TINY:
        assert state_dict_digest(load_checkpoint(name, quiet=True).model) == GOLDEN_DIGEST[name]


def test_members_and_licences():
    """From the package README's model table (0.1.1): Small and Base Apache 2.0, Large CC BY-NC 4.0."""
    assert {n: m.license for n, m in MEMBERS.items() if m.family == "depth_anything_3"} == {
        "da3-small": "apache-2.0", "da3-base": "apache-2.0", "da3-large": "cc-by-nc-4.0"}
    assert member_of_hub_id("depth-anything/da3-small").name == "da3-small"
    assert {n for n in SYNTHETIC if "da3" in n} == set(GOLDEN_DIGEST)
    assert "farther" in MEMBERS["da3-small"].output_semantics


def test_only_its_own_rewrites_run_on_it(tiny):
    """By default only the rewrites declared for Depth Anything 3 run (V2's know HF DINOv2 / DPT structure); a V2
    rewrite named for it is refused."""
    out, report = apply_rewrites(tiny.model, *SIZE)
    assert [r["name"] for r in report] == ["da3_static_rope", "da3_rank4_attention", "da3_fold_layerscale"]
    assert out is not tiny.model
    assert default_names(tiny.model) == [r["name"] for r in report]
    with pytest.raises(ValueError, match="do not apply to depth_anything_3"):
        apply_rewrites(tiny.model, *SIZE, names=["fuse_qkv"])


def _depth(model, x):
    with torch.no_grad():
        return DepthModule(model)(x).numpy()


def test_static_rope_is_exact_and_pure(tiny, x):
    """da3_static_rope: bit-identical (the package's table function on the length it would derive), on local and
    global blocks; the input model is untouched, and a second run changes nothing."""
    before = state_dict_digest(tiny.model)
    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_static_rope"])
    n_rope = sum(b.attn.rope is not None for b in tiny.model.backbone.pretrained.blocks)
    assert report[0]["changed"] == n_rope > 0 and state_dict_digest(tiny.model) == before
    assert np.array_equal(_depth(out, x), _depth(tiny.model, x))
    assert apply_rewrites(out, *SIZE, names=["da3_static_rope"])[1][0]["changed"] == 0


def test_rank4_attention_is_within_fp32_noise(tiny, x):
    """da3_rank4_attention: written-out softmax attention on [B, h, N, d] instead of SDPA on a 5-D reshape: within the
    FP32-noise factor; no attention module of the package is left."""
    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_static_rope", "da3_rank4_attention"])
    assert report[1]["changed"] == len(tiny.model.backbone.pretrained.blocks)
    assert all(type(b.attn).__name__ == "DA3Attention" for b in out.backbone.pretrained.blocks)
    ref64 = float64_reference(tiny.model, x.numpy())
    assert_within_fp32_noise(_depth(out, x), ref64, _depth(tiny.model, x), what="da3_rank4_attention")


def test_fold_layerscale_is_within_fp32_noise(tiny, x):
    """da3_fold_layerscale: one rounding apart (diag(g)(Wx+b) = (diag(g)W)x + g*b): within the suite's FP32-noise
    factor of PyTorch FP32's own error vs a float64 run of the same model (tests/README.md)."""
    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_fold_layerscale"])
    assert report[0]["changed"] == 2 * len(tiny.model.backbone.pretrained.blocks)
    assert not any(isinstance(m, type(tiny.model.backbone.pretrained.blocks[0].ls1)) for m in out.modules())
    ref64 = float64_reference(tiny.model, x.numpy())
    assert_within_fp32_noise(_depth(out, x), ref64, _depth(tiny.model, x), what="da3_fold_layerscale")


@pytest.mark.parametrize("args,fragments", [
    (("export", "--model", TINY, "--size", "28x42"), ("Depth Anything 3 files cannot be exported yet", "issue 31")),
    (("export", "--model", "da3-small"), ("depth-anything/DA3-SMALL", "not supported yet", "synthetic-da3-small")),
    (("inspect", "--ranges", "--model", TINY, "--size", "28x42", "--images", "1"), ("not of Depth Anything 3",)),
    (("predict", PHOTO, "--model", TINY + "-fp16-stress", "--size", "28x42"), ("FP16 stress variant knows",)),
], ids=["export", "real-weights", "fp16-ranges", "fp16-stress"])
def test_what_is_not_built_yet_is_one_line(tmp_path, args, fragments):
    out = tmp_path / "out"
    r = run_cli(*args, *(("--out", out) if args[0] in ("export", "predict") else ()))
    assert_one_line_error(r, *fragments)
    assert not out.exists()
