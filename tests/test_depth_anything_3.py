"""Depth Anything 3 as the second model family (issue 31; edgedepth.models.depth_anything_3): stand-ins built from the
depth-anything-3 package's own modules, the monocular contract, seeded weights that are the same bytes on every CPU,
the da3_* rewrites (each its own parity test), the LiteRT file wholly on the GPU delegate (SwiftShader), ONNX and
ExecuTorch FP32 files at FP32-noise parity, and the one-line refusals of what is not built yet (ONNX FP16 and dynamic
size, ExecuTorch INT8, the FP16 range probe).  Real weights: tests/test_da3_weights.py."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint, state_dict_digest
from edgedepth.models import MEMBERS, SYNTHETIC, family_of, member_of_hub_id
from edgedepth.rewrites import apply_rewrites, default_names
from conftest import (OTHER_KERNELS, assert_one_line_error, assert_rounded_once, assert_within_fp32_noise,
                      float64_reference, run_cli)

TINY = "synthetic-da3-tiny"
PHOTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors", "rgb_160x120.png")
SIZE = (28, 42)
# State-dict SHA-256s of the stand-ins (models._weights.normal_like: CPU-independent by construction).
GOLDEN_DIGEST = {
    "synthetic-da3-tiny": "f23e65014061c335628cbbbcc5611f55625ab07069c12e12219a773eab612c29",
    "synthetic-da3-small": "2d8503ff942b30854661e5d7213b280f5104adc07e898d0ba4495a6064931ce7",
    "synthetic-da3-base": "676b6c72b8cf93861822b571cb4878d5b3012bfdbd02aced323d0ed0d6c380ad",
    "synthetic-da3-tiny-base": "4a40e691a3e5f6f5ae38bc027fa47fdb9746cb8d305fdec6b2cf714ddfddab46",
    "synthetic-da3-mono-large": "98031fe6b535d63b125faf9faafc24b0979a7f25f890c6614e3d7ede445297a4",
    "synthetic-da3-tiny-mono": "f48b6bfe5e40e7e9f61ff809f9b15f57beb890a7149dc5561cdc58fbaeab077b",
}
# The metric member's stand-ins: the package's da3metric-large preset is the same network as da3mono-large (only the
# trained weights differ), so its stand-ins are the mono ones' bytes (test_metric_stand_ins_are_the_mono_ones)
SAME_AS = {"synthetic-da3-metric-large": "synthetic-da3-mono-large",
           "synthetic-da3-tiny-metric": "synthetic-da3-tiny-mono"}


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


def test_dpt_members_mono_model_is_the_packages_forward(x):
    """Mono-/Metric-Large (plain DPT head, no RoPE or camera token): DA3Mono's depth and sky are the package's
    DepthAnything3Net's bit for bit, before its mono sky step; that step (left out of the files, as the card says)
    changes only pixels with sky >= 0.3."""
    from edgedepth.models.depth_anything_3.mono import package_net
    from edgedepth.progress import quiet_output

    ckpt = load_checkpoint("synthetic-da3-tiny-mono", quiet=True)
    assert ckpt.outputs == ("depth", "sky") and ckpt.member.name == "da3mono-large"
    with quiet_output():
        net = package_net("da3mono-large")
    net.backbone, net.head = ckpt.model.backbone, ckpt.model.head
    with torch.no_grad():
        ours = ckpt.model(x)
        stepped = net(x[:, None])
        net._process_mono_sky_estimation = lambda out: out       # this instance only: the head's raw output
        raw = net(x[:, None])
    assert ours.confidence is None and torch.equal(ours.sky, raw["sky"][:, 0])
    assert torch.equal(ours.predicted_depth, raw["depth"][:, 0]) and bool((ours.sky >= 0).all())
    changed = stepped["depth"][:, 0] != ours.predicted_depth
    assert bool(changed.any()) and bool((ours.sky[changed] >= 0.3).all())


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


def test_stand_in_weights_are_golden_under_other_kernels():
    """The stand-ins' weights are the same bytes here and in a child under other CPU kernels (golden SHA-256; one
    child for all of them: its start-up is most of a tiny one's time)."""
    import json

    code = ("import json, sys; from edgedepth.checkpoint import load_checkpoint, state_dict_digest; "
            "print(json.dumps({n: state_dict_digest(load_checkpoint(n, quiet=True).model) for n in sys.argv[1:]}))")
    r = subprocess.run([sys.executable, "-c", code, *sorted(GOLDEN_DIGEST)], capture_output=True, text=True,
                       timeout=900, env={**os.environ, **OTHER_KERNELS})
    assert r.returncode == 0, r.stderr[-2000:]
    assert json.loads(r.stdout.splitlines()[-1]) == GOLDEN_DIGEST
    assert state_dict_digest(load_checkpoint(TINY, quiet=True).model) == GOLDEN_DIGEST[TINY]


def test_members_and_licences():
    """From the package README's model table (0.1.1): Small, Base, Mono-Large and Metric-Large Apache 2.0, Large
    CC BY-NC 4.0."""
    assert {n: m.license for n, m in MEMBERS.items() if m.family == "depth_anything_3"} == {
        "da3-small": "apache-2.0", "da3-base": "apache-2.0", "da3-large": "cc-by-nc-4.0",
        "da3mono-large": "apache-2.0", "da3metric-large": "apache-2.0"}
    assert member_of_hub_id("depth-anything/da3-small").name == "da3-small"
    assert member_of_hub_id("depth-anything/DA3METRIC-LARGE").kind == "metric-focal"
    assert {n for n in SYNTHETIC if "da3" in n} == set(GOLDEN_DIGEST) | set(SAME_AS)
    assert "farther" in MEMBERS["da3-small"].output_semantics
    assert "metres = output x focal / 300" in MEMBERS["da3metric-large"].output_semantics


def test_metric_stand_ins_are_the_mono_ones():
    """The package's da3metric-large and da3mono-large presets build the same network (their YAMLs differ in nothing),
    and the stand-ins' architectures differ only in the preset's name: so one digest serves both (SAME_AS)."""
    import dataclasses

    from depth_anything_3.cfg import load_config
    from depth_anything_3.registry import MODEL_REGISTRY

    assert load_config(MODEL_REGISTRY["da3metric-large"]) == load_config(MODEL_REGISTRY["da3mono-large"])
    for metric, mono in SAME_AS.items():
        (m_member, m_arch), (o_member, o_arch) = SYNTHETIC[metric], SYNTHETIC[mono]
        assert (m_member, o_member) == ("da3metric-large", "da3mono-large")
        assert dataclasses.replace(m_arch, preset=o_arch.preset) == o_arch and m_arch.head == "dpt"


def test_only_its_own_rewrites_run_on_it(tiny):
    """By default only the rewrites declared for Depth Anything 3 run (V2's know HF DINOv2 / DPT structure; the one
    shared, rank_preserving_fc and split_wide_conv, walk both); a V2-only rewrite named for it is refused."""
    out, report = apply_rewrites(tiny.model, *SIZE)
    assert [r["name"] for r in report] == ["rank_preserving_fc", "split_wide_conv", "da3_static_rope",
                                           "da3_rank4_attention", "da3_fold_layerscale",
                                           "da3_freeze_position_embedding", "da3_concat_camera_token",
                                           "da3_drop_ray_head", "da3_constant_uv_embedding", "da3_static_positions"]
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
    # its tables: the package's, bit for bit, computed without the package's cache (whose state, filled by an earlier
    # PyTorch run, would change what an export traces)
    rope = next(b.attn.rope for b in out.backbone.pretrained.blocks if b.attn.rope is not None)
    rope.rope.frequency_cache.clear()
    for dim in (8, 16):
        mine = rope.tables(dim, torch.device("cpu"), torch.float32)
        theirs = rope.rope._compute_frequency_components(dim, rope.max_position, torch.device("cpu"), torch.float32)
        assert all(torch.equal(a, b) for a, b in zip(mine, theirs))
    assert len(rope.rope.frequency_cache) == 2      # only the package's own calls filled it


def test_a_job_gives_the_same_bytes_whatever_ran_before_it(tmp_path):
    """A release job's files do not depend on the process's history: the uint8-input job run first in a fresh process
    (a Ray worker's case) and again after the float job and its parity gate (a serial build's case) gives the same
    bytes (the frequency-table cache of the package's RoPE once made them differ)."""
    from edgedepth.release import load_recipe
    from edgedepth.release.build import plan
    from edgedepth.release.jobs import run_job

    p = plan(load_recipe("depth-anything-3-small").with_overrides(
        model=TINY, sizes=["28x42"], parity_images=1, formats=["litert"]), gpu_check=False)
    pixel = next(s for s in p.specs if s.job.variant)
    float_job = p.specs[0]
    assert not float_job.job.variant and not float_job.job.after
    runs = []
    for i, spec in enumerate((pixel, float_job, pixel)):
        (tmp_path / str(i)).mkdir()
        runs.append(run_job(spec, p.ckpt, p.items, str(tmp_path / str(i)), lambda name: None)["files"])
    assert runs[0] == runs[2]


def test_rank4_attention_is_within_fp32_noise(tiny, x):
    """da3_rank4_attention: written-out softmax attention on [B, h, N, d] instead of SDPA on a 5-D reshape: within the
    FP32-noise factor; no attention module of the package is left."""
    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_static_rope", "da3_rank4_attention"])
    assert report[1]["changed"] == len(tiny.model.backbone.pretrained.blocks)
    assert all(type(b.attn).__name__ == "DA3Attention" for b in out.backbone.pretrained.blocks)
    ref64 = float64_reference(tiny.model, x.numpy())
    assert_within_fp32_noise(_depth(out, x), ref64, _depth(tiny.model, x), what="da3_rank4_attention")


def test_rank_preserving_fc_is_within_fp32_noise(tiny, x):
    """rank_preserving_fc (shared with V2): every block Linear as F.linear + bias, so the INT8 file's FULLY_CONNECTEDs
    keep rank 3 (without it the GPU delegate refuses the DA3 INT8 file: "Unable to parse bc coord for BATCH axis");
    within the FP32-noise factor."""
    out, report = apply_rewrites(tiny.model, *SIZE, names=["rank_preserving_fc"])
    assert report[0]["changed"] == 4 * len(tiny.model.backbone.pretrained.blocks)     # qkv, proj, fc1, fc2
    ref64 = float64_reference(tiny.model, x.numpy())
    assert_within_fp32_noise(_depth(out, x), ref64, _depth(tiny.model, x), what="rank_preserving_fc")


def test_fold_layerscale_is_within_fp32_noise(tiny, x):
    """da3_fold_layerscale: one rounding apart (diag(g)(Wx+b) = (diag(g)W)x + g*b): within the suite's FP32-noise
    factor of PyTorch FP32's own error vs a float64 run of the same model (tests/README.md)."""
    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_fold_layerscale"])
    assert report[0]["changed"] == 2 * len(tiny.model.backbone.pretrained.blocks)
    assert not any(isinstance(m, type(tiny.model.backbone.pretrained.blocks[0].ls1)) for m in out.modules())
    ref64 = float64_reference(tiny.model, x.numpy())
    assert_within_fp32_noise(_depth(out, x), ref64, _depth(tiny.model, x), what="da3_fold_layerscale")


def _outputs(model, x):
    with torch.no_grad():
        out = model(x)
    return out.predicted_depth, out.confidence


def _assert_bit_identical(out, tiny, x):
    for ours, theirs in zip(_outputs(out, x), _outputs(tiny.model, x)):
        assert torch.equal(ours, theirs)


def test_concat_camera_token_is_exact(tiny, x):
    """da3_concat_camera_token: the one-view backbone with the camera token put in by concatenation is bit-identical
    (depth and confidence) to the package's index assignment; pure, and idempotent."""
    from edgedepth.rewrites._modules import DA3ConcatCameraToken, DA3MonoBackbone

    before = state_dict_digest(tiny.model)
    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_concat_camera_token"])
    assert report[0]["changed"] == 1 and state_dict_digest(tiny.model) == before
    assert isinstance(out.backbone, DA3MonoBackbone) and isinstance(out.backbone.camera, DA3ConcatCameraToken)
    assert out.backbone.pretrained.blocks is not tiny.model.backbone.pretrained.blocks
    _assert_bit_identical(out, tiny, x)
    assert apply_rewrites(out, *SIZE, names=["da3_concat_camera_token"])[1][0]["changed"] == 0


def test_freeze_position_embedding_is_rounded_once_and_within_fp32_noise(tiny, x):
    """da3_freeze_position_embedding: the constant is the package's resize (bicubic, its interpolate_offset scale
    factors) evaluated in float64 and rounded to float32 once; the model is within the FP32-noise factor of PyTorch
    FP32's own error vs float64; at 518x518 (no resize in the package) bit-identical; another size is refused."""
    import math

    import torch.nn.functional as F

    vit = tiny.model.backbone.pretrained
    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_freeze_position_embedding"])
    assert report[0]["changed"] == 1
    frozen = out.backbone.tokens
    side, dim = int(math.isqrt(vit.pos_embed.shape[1] - 1)), vit.pos_embed.shape[-1]
    gh, gw = SIZE[0] // 14, SIZE[1] // 14
    table = vit.pos_embed.detach().double()
    ref = F.interpolate(table[:, 1:].reshape(1, side, side, dim).permute(0, 3, 1, 2), mode="bicubic",
                        scale_factor=((gh + vit.interpolate_offset) / side, (gw + vit.interpolate_offset) / side))
    assert ref.shape[-2:] == (gh, gw)
    scale = float(table.abs().max())
    assert_rounded_once(frozen.patch_pos.numpy(), ref.permute(0, 2, 3, 1).reshape(1, -1, dim).numpy(), scale,
                        what="patch position embedding")
    assert_rounded_once(frozen.cls_pos.numpy(), (vit.cls_token.detach().double() + table[:, :1]).numpy(), scale,
                        what="CLS + its position embedding")
    ref64 = float64_reference(tiny.model, x.numpy())
    assert_within_fp32_noise(_depth(out, x), ref64, _depth(tiny.model, x), what="da3_freeze_position_embedding")

    x518 = torch.from_numpy(np.random.default_rng(1).standard_normal((1, 3, 518, 518)).astype(np.float32))
    _assert_bit_identical(apply_rewrites(tiny.model, 518, 518, names=["da3_freeze_position_embedding"])[0], tiny, x518)
    with pytest.raises(ValueError, match="frozen for another size"):
        apply_rewrites(out, 56, 56, names=["da3_freeze_position_embedding"])


def test_drop_ray_head_is_exact(tiny, x):
    """da3_drop_ray_head: depth and confidence bit-identical without the ray branch, whose modules are gone."""
    from edgedepth.rewrites._modules import DA3DepthHead

    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_drop_ray_head"])
    assert report[0]["changed"] == 1 and isinstance(out.head, DA3DepthHead)
    assert not [n for n, _ in out.named_modules() if "_aux" in n]
    assert [n for n, _ in tiny.model.named_modules() if "_aux" in n]
    assert sum(p.numel() for p in out.parameters()) < sum(p.numel() for p in tiny.model.parameters())
    _assert_bit_identical(out, tiny, x)


def test_constant_uv_embedding_is_exact_and_separable(tiny, x):
    """da3_constant_uv_embedding: the head's five UV embeddings as constants u [1,C/2,1,w] and v [1,C/2,h,1]
    (C/2*(h+w) values each, added to the two channel halves), bit-identical; it needs the depth-only head first (the
    pipeline refuses it alone)."""
    from edgedepth.rewrites._modules import DA3SeparableUVEmbedding

    with pytest.raises(ValueError, match="requires da3_drop_ray_head"):
        apply_rewrites(tiny.model, *SIZE, names=["da3_constant_uv_embedding"])
    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_drop_ray_head", "da3_constant_uv_embedding"])
    assert report[1]["changed"] == 5
    embs = list(out.head.uv_embeds)
    assert all(isinstance(e, DA3SeparableUVEmbedding) for e in embs)
    for e in embs:
        (_, half, _, w), (_, _, h, _) = e.u.shape, e.v.shape
        assert e.v.shape[1] == half and e.u.numel() + e.v.numel() == half * (h + w)
    assert (embs[-1].v.shape[2], embs[-1].u.shape[3]) == SIZE
    _assert_bit_identical(out, tiny, x)


@pytest.mark.gpu
def test_litert_file_runs_wholly_on_the_gpu_delegate(tiny, x, da3_tiny_exports):
    """The tiny model with the default rewrites exports to a .tflite with no GPU hazard that LiteRT's GPU accelerator
    takes whole (SwiftShader here: no op on the CPU, no WebGPU validation error), and whose GPU and CPU outputs are
    each within the FP32-noise factor of PyTorch FP32's own error vs a float64 run (full delegation is not proof of
    right output: docs/spikes/depth-anything-3/bisect_FINDINGS.md)."""
    from edgedepth import formats

    files = da3_tiny_exports("litert")         # conftest: shared with test_da3_confidence
    f, quantised = files["fp32"], (files["fp16"], files["int8"])
    for q in quantised:     # FP16 weights and dynamic INT8 compile wholly on the GPU too
        g = formats.open_artifact(q.path).gpu_check()
        assert g["fully_delegated"] and g["cpu_ops"] == 0, (q.precision, g.get("error"))
    art = formats.open_artifact(f.path)
    assert art.info["gpu_hazards"]["count"] == 0, art.info["gpu_hazards"]
    assert not {"SELECT_V2", "GATHER_ND", "BROADCAST_TO", "SIN", "COS"} & set(art.info["op_histogram"])
    g = art.gpu_check(x=x.numpy())
    assert g["fully_delegated"] and g["cpu_ops"] == 0 and not g["validation_errors"], {k: v for k, v in g.items()
                                                                                        if k != "output"}
    runner = art.open_runner("cpu")
    try:
        cpu = runner.run(x.numpy())
    finally:
        runner.close()
    ref64, fp32 = float64_reference(tiny.model, x.numpy()), _depth(tiny.model, x)
    assert_within_fp32_noise(cpu, ref64, fp32, what="LiteRT CPU")
    assert_within_fp32_noise(g["output"], ref64, fp32, what="LiteRT GPU (SwiftShader)")


@pytest.mark.parametrize("target", ["onnx", "executorch"])
def test_onnx_and_executorch_files_match_pytorch(tiny, x, da3_tiny_exports, target):
    """The other formats take the family's default rewrites (their own lists name V2's: rewrites.format_defaults); their
    FP32 files are within the FP32-noise factor of PyTorch FP32's own error vs float64, their INT8 files (ExecuTorch's
    thanks to da3_static_positions) within the release gate's INT8 bound."""
    from edgedepth import formats

    from edgedepth.release.build import INT8_GATE_REL_L2
    from conftest import rel_l2

    files = da3_tiny_exports(target)          # conftest: shared with test_da3_confidence
    assert "da3_concat_camera_token" in files["fp32"].rewrites and "drop_attention_mask" not in files["fp32"].rewrites
    out = {}
    for p, f in files.items():
        runner = formats.open_artifact(f.path).open_runner("cpu")
        try:
            out[p] = runner.run(x.numpy())
        finally:
            runner.close()
    fp32 = _depth(tiny.model, x)
    assert_within_fp32_noise(out["fp32"], float64_reference(tiny.model, x.numpy()), fp32, what=target)
    assert rel_l2(out["int8"], fp32) <= INT8_GATE_REL_L2    # the release gate's quantisation-level bound


@pytest.mark.parametrize("args,fragments", [
    (("export", "--model", TINY, "--size", "28x42", "--target", "onnx"), ("fp16_safe", "--precision fp32,int8")),
    (("export", "--model", TINY, "--size", "28x42", "--target", "onnx", "--dynamic-size"), ("fixed size",)),
    (("export", "--model", TINY, "--size", "28x42", "--fp16-safe"), ("fp16_safe", "do not apply to depth_anything_3")),
    (("inspect", "--ranges", "--model", TINY, "--size", "28x42", "--images", "1"), ("not of Depth Anything 3",)),
    (("predict", PHOTO, "--model", TINY + "-fp16-stress", "--size", "28x42"), ("FP16 stress variant knows",)),
], ids=["onnx-fp16", "onnx-dynamic", "fp16-safe", "fp16-ranges", "fp16-stress"])
def test_what_is_not_built_yet_is_one_line(tmp_path, args, fragments):
    out = tmp_path / "out"
    r = run_cli(*args, *(("--out", out) if args[0] in ("export", "predict") else ()))
    assert_one_line_error(r, *fragments)
    assert not out.exists()


def test_predict_colours_near_bright(tmp_path):
    """DA3's output grows with distance (V2's relative output is inverse depth): predict's colour PNG still shows near
    as bright, i.e. it colours the negated output; the .npy keeps the output as it is."""
    from PIL import Image

    from edgedepth.predict import colorize

    r = run_cli("predict", PHOTO, "--model", TINY, "--size", "28x42", "--raw", "--out", tmp_path, "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    stem = os.path.splitext(os.path.basename(PHOTO))[0]
    depth = np.load(tmp_path / f"{stem}_depth.npy")
    png = np.asarray(Image.open(tmp_path / f"{stem}_depth.png").convert("RGB"))
    assert np.array_equal(png, colorize(-depth)) and not np.array_equal(png, colorize(depth))


# ------------------------------------------------------------------------------------------------ the release


DA3_RECIPE = "recipes/depth-anything-3-small.py"


@pytest.fixture(scope="module")
def da3_release(tmp_path_factory):
    """The DA3 tiny release (its own recipe, synthetic-da3-tiny at 28x42, 2 parity images, GPU check), built once by
    the recipe file as a user runs it; ~2 min on 2 cores."""
    out = tmp_path_factory.mktemp("da3_release") / "release"
    r = subprocess.run([sys.executable, DA3_RECIPE, "--model", TINY, "--sizes", "28x42", "--parity-images", "2",
                        "--quiet", "--out", str(out)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


def test_da3_release_builds_and_verifies(da3_release):
    import json

    from edgedepth.release.recipe import load_recipe

    assert load_recipe(DA3_RECIPE).base_model == MEMBERS["da3-small"].hub_id
    r = run_cli("verify", da3_release)
    assert r.returncode == 0, r.stdout + r.stderr
    m = json.loads((da3_release / "manifest.json").read_text())
    assert m["model"] == {"family_member": "da3-small", "hub_id": "depth-anything/DA3-SMALL", "kind": "relative",
                          "max_depth_m": None, "license": "apache-2.0",
                          "output_semantics": MEMBERS["da3-small"].output_semantics, "larger_is_farther": True}
    models = {(f["format"], f["precision"], f["input"]["dtype"]) for f in m["files"] if "input" in f}
    assert models == {("tflite", "fp32", "float32"), ("tflite", "fp16", "float32"), ("tflite", "int8", "float32"),
                      ("tflite", "fp16", "uint8"), ("pte", "fp32", "float32"), ("onnx", "fp32", "float32"),
                      ("onnx", "int8", "float32")}
    assert all(f["gpu_fully_delegated"] for f in m["files"] if f.get("format") == "tflite")
    # the monocular contract: every file outputs depth then confidence (tests/test_da3_confidence.py)
    assert {tuple(o["role"] for o in f["outputs"]) for f in m["files"] if "input" in f} == {("depth", "confidence")}
    assert all(f["outputs"][0]["name"] == f["output"]["name"] for f in m["files"] if "input" in f)
    # ONNX: fixed-size files in onnx-community's names, both outputs; no transformers.js config (no DA3 class there)
    onnx = {f["path"]: f for f in m["files"] if f.get("format") == "onnx"}
    assert set(onnx) == {"onnx/model.onnx", "onnx/model_quantized.onnx"}
    assert all("dynamic_size" not in f and f["input"]["shape"] == [1, 3, 28, 42] for f in onnx.values())
    assert all([o["name"] for o in f["outputs"]] == ["predicted_depth", "confidence"] for f in onnx.values())
    assert all("transformers.js" not in f["recommended_runtime_options"] for f in onnx.values())
    assert not (da3_release / "config.json").exists() and not (da3_release / "preprocessor_config.json").exists()
    # the build gated the confidence too, each output by its own PyTorch FP32-vs-float64 noise (release.gate.Gate)
    rep = json.loads((da3_release / "build-report.json").read_text())
    gated = {f["path"] for f in m["files"] if "input" in f}
    assert set(rep["files"]) == gated and set(rep["pytorch_fp32_vs_float64_rel_l2_by_output"]["28x42"]) == \
        {"depth", "confidence"}
    for name in gated:
        for part in ("parity_cpu", "parity_cpu_confidence"):
            assert rep["files"][name][part]["pooled_rel_l2"] <= rep["files"][name][part]["gate_bound"], (name, part)
    assert "depth-anything-3 package" in m["parity_method"]["reference"]
    assert {"README.md", "LICENSE", "NOTICE"} <= {f["path"] for f in m["files"]}
    licence = (da3_release / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    notice = (da3_release / "NOTICE").read_text()
    assert notice.startswith("files derived from Depth Anything 3 Small\n", len("This folder contains "))
    assert "V2" not in notice and "transformers" not in notice and "interpolate_pos_encoding" in notice


def test_da3_card_tells_the_truth_about_da3(da3_release):
    """The card names DA3 (paper, citation from the package's README, tag, recipe, output that grows with distance) and
    never V2; it is the one render_model_card makes from the manifest."""
    import json

    from test_model_card import code_blocks, front_matter

    from edgedepth.release.modelcard import render_model_card

    text = (da3_release / "README.md").read_text()
    assert text == render_model_card(json.loads((da3_release / "manifest.json").read_text()))
    fm = front_matter(text)
    assert fm["license"] == "apache-2.0" and fm["base_model"] == "depth-anything/DA3-SMALL"
    assert "depth-anything-3" in fm["tags"] and "depth-anything-v2" not in fm["tags"]
    assert "[Depth Anything 3](https://arxiv.org/abs/2511.10647) Small:" in text
    (bib,) = [b for lang, b in code_blocks(text) if lang == "bibtex"]
    assert bib.startswith("@article{depthanything3,") and "arXiv:2511.10647" in bib
    assert "larger = farther" in text and "inverse depth" not in text and "larger = closer" not in text
    assert "| output 1 (confidence) | `output_1` |" in text and "not exported" not in text
    assert "`edgedepth release --recipe depth-anything-3-small" in text
    assert "Apache-2.0 (see `LICENSE`)" in text
    for v2 in ("V2", "2406.09414", "depth_anything_v2", "depth-anything-v2", "(transformers)",
               "DPT head can overflow"):
        assert v2 not in text, v2


def test_da3_card_litert_block_runs_as_written(da3_release, tmp_path):
    """The card's LiteRT snippet, as written, in a copy of the folder with a photo: the file's [H, W] depth, finite,
    from the very pixels edgedepth.preprocess makes; its comment says what the output is."""
    import shutil

    from test_model_card import _check_python, _ok, _photo, code_blocks, run_python_block

    (block,) = [b for lang, b in code_blocks((da3_release / "README.md").read_text())
                if lang == "python" and "ai_edge_litert" in b]
    assert block.count("USE_GPU = False") == 1 and "# relative depth, larger = farther\n" in block
    folder = tmp_path / "depth-anything-3-small-edgedepth"
    shutil.copytree(da3_release, folder)
    _photo(folder / "photo.jpg")
    assert "confidence = out[1].read(" in block
    r = run_python_block(block + CONFIDENCE_CHECK, folder)
    _check_python(_ok(r, "DA3 LiteRT block"), SIZE, "DA3 LiteRT block")
    _check_confidence(r.stdout, "DA3 LiteRT block")


# appended to a card block: what its ``confidence`` is (the PY_CHECK of test_model_card checks its ``depth``)
CONFIDENCE_CHECK = ("\nimport json as _json\nprint('CONFIDENCE ' + _json.dumps({'shape': list(confidence.shape), "
                    "'min': float(confidence.min()), 'finite': bool(np.isfinite(confidence).all()), "
                    "'same_as_depth': bool(np.array_equal(confidence, depth))}))\n")


def _check_confidence(stdout: str, what: str) -> None:
    """The block's confidence map: the file's size, finite, >= 1 (exp + 1 head), not the depth."""
    import json

    (line,) = [ln for ln in stdout.splitlines() if ln.startswith("CONFIDENCE ")]
    c = json.loads(line[len("CONFIDENCE "):])
    assert tuple(c["shape"]) == SIZE and c["finite"] and c["min"] >= 1 and not c["same_as_depth"], (what, c)


DA3_MEMBER_RECIPES = {"da3-base": "recipes/depth-anything-3-base.py",
                      "da3mono-large": "recipes/depth-anything-3-mono-large.py",
                      "da3metric-large": "recipes/depth-anything-3-metric-large.py"}


def test_da3_member_recipes_are_smalls_at_one_size():
    """Base's, Mono-Large's and Metric-Large's recipes: Small's with the member's checkpoint, one size, LiteRT only,
    named as the family names them (``ModelFamily.recipe_file``)."""
    from edgedepth.models import family_of_member
    from edgedepth.release.recipe import load_recipe

    small = load_recipe(DA3_RECIPE)
    for name, path in DA3_MEMBER_RECIPES.items():
        r = load_recipe(path)
        assert r.base_model == r.model == MEMBERS[name].hub_id and r.sizes == ("378x504",), name
        assert [f.name for f, _ in r.parts] == ["tflite"] and r.sha256 != small.sha256
        assert family_of_member(MEMBERS[name]).recipe_file(MEMBERS[name]) == path


SKY_CHECK = ("\nimport json as _json\nprint('SKY ' + _json.dumps({'shape': list(sky.shape), 'min': float(sky.min()), "
             "'finite': bool(np.isfinite(sky).all()), 'same_as_depth': bool(np.array_equal(sky, depth))}))\n")


def _run_litert_block_reading_sky(card: str, release, tmp_path) -> None:
    """The card's LiteRT snippet as written (CPU), in a copy of the folder with a photo: depth [H, W] from
    edgedepth.preprocess's pixels, and the sky map: the file's size, finite, >= 0 (relu head), not the depth."""
    import json
    import shutil

    from test_model_card import _check_python, _kind, _ok, _photo, code_blocks, run_python_block

    (block,) = [b for lang, b in code_blocks(card) if lang == "python" and _kind(b) == "litert"]
    assert "sky = out[1].read(" in block and "# sky score, >= 0" in block
    folder = tmp_path / "copy"
    shutil.copytree(release, folder)
    _photo(folder / "photo.jpg")
    r = run_python_block(block + SKY_CHECK, folder)
    _check_python(_ok(r, "DA3 Metric-Large LiteRT block"), SIZE, "DA3 Metric-Large LiteRT block")
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("SKY ")]
    s = json.loads(line[len("SKY "):])
    assert tuple(s["shape"]) == SIZE and s["finite"] and s["min"] >= 0 and not s["same_as_depth"], s


def test_da3_metric_large_recipe_builds_depth_and_sky(tmp_path):
    """Metric-Large's recipe builds its files from the tiny stand-in (a ViT with no RoPE and a plain DPT head): depth
    and sky, each gated against PyTorch, all on the GPU delegate, the card saying how to get metres and reading the sky
    in its LiteRT snippet (run as written); and it refuses Small's checkpoint."""
    import json

    out = tmp_path / "rel"
    p = run_cli("release", "--recipe", DA3_MEMBER_RECIPES["da3metric-large"], "--out", out, "--model",
                "synthetic-da3-tiny-metric", "--sizes", "28x42", "--parity-images", "1")
    assert p.returncode == 0, p.stderr[-2000:]
    m = json.loads((out / "manifest.json").read_text())
    assert m["model"]["family_member"] == "da3metric-large" and m["model"]["license"] == "apache-2.0"
    assert m["model"]["kind"] == "metric-focal" and m["model"]["larger_is_farther"]
    models = [f for f in m["files"] if "input" in f]
    assert len(models) == 4 and all(f["path"].startswith("depth_anything_3_da3metric_large_28x42_") for f in models)
    assert all(f["gpu_fully_delegated"] for f in models)
    assert all([o["role"] for o in f["outputs"]] == ["depth", "sky"] for f in models)
    rep = json.loads((out / "build-report.json").read_text())
    assert all("parity_cpu_sky" in rep["files"][f["path"]] for f in models)
    # the sky is a mask: its quantised files are gated on pixels changing side of 0.3, and the manifest and card say so
    assert m["parity_method"]["build_gate"]["masks"].startswith("sky (a mask at >= 0.3)")
    quantised = [rep["files"][f["path"]]["parity_cpu_sky"] for f in models if f["precision"] != "fp32"]
    assert quantised and all(q["gate_bound"] == 0.01 and 0 <= q["mask_flipped"] <= 0.01 for q in quantised)
    card = (out / "README.md").read_text()
    assert "(their sky (a mask at >= 0.3): quantised files' share of pixels" in card
    assert "[Depth Anything 3](https://arxiv.org/abs/2511.10647) Metric Large: a monocular model" in card
    assert "metres = output x focal / 300" in card and "do not read metres" not in card
    _run_litert_block_reading_sky(card, out, tmp_path)
    wrong = run_cli("release", "--recipe", DA3_MEMBER_RECIPES["da3metric-large"], "--out", tmp_path / "w", "--model",
                    TINY, "--sizes", "28x42", "--parity-images", "0", "--no-gpu-check")
    assert_one_line_error(wrong, "is for depth-anything/DA3METRIC-LARGE", "--model synthetic-da3-tiny is da3-small")
    assert not (tmp_path / "w").exists()


@pytest.mark.parametrize("kind", ["onnxruntime", "openvino"])
def test_da3_card_onnx_blocks_run_as_written(da3_release, tmp_path, kind):
    """The card's ONNX Runtime and OpenVINO snippets, as written, in a copy of the folder with a photo: the fixed-size
    file's depth [H, W] from edgedepth.preprocess's pixels; the text names both outputs and no transformers.js."""
    import shutil

    from test_model_card import _check_python, _kind, _ok, _photo, code_blocks, run_python_block

    text = (da3_release / "README.md").read_text()
    (block,) = [b for lang, b in code_blocks(text) if lang == "python" and _kind(b) == kind]
    assert "H, W = 28, 42" in block and "# [H, W], relative depth, larger = farther" in block
    assert "confidence = " in block and "larger = more confident" in block
    assert "outputs `predicted_depth` `[1, H, W]`, `confidence` `[1, H, W]` (in that order)" in text
    assert "transformers.js" not in text and "```js" not in text
    folder = tmp_path / "depth-anything-3-small-edgedepth"
    shutil.copytree(da3_release, folder)
    _photo(folder / "photo.jpg")
    r = run_python_block(block + CONFIDENCE_CHECK, folder)
    _check_python(_ok(r, f"DA3 {kind} block"), SIZE, f"DA3 {kind} block")
    _check_confidence(r.stdout, f"DA3 {kind} block")


@pytest.mark.parametrize("recipe,model,fragments", [
    (DA3_RECIPE, "synthetic-tiny", ("is for depth-anything/DA3-SMALL", "use recipes/depth-anything-v2-small.py")),
    ("recipes/depth-anything-v2-small.py", TINY, ("--model synthetic-da3-tiny is da3-small",
                                                  "use recipes/depth-anything-3-small.py")),
], ids=["v2-model-da3-recipe", "da3-model-v2-recipe"])
def test_a_recipe_names_the_members_own_recipe(tmp_path, recipe, model, fragments):
    r = run_cli("release", "--recipe", recipe, "--out", tmp_path / "rel", "--model", model, "--sizes", "28x42",
                "--parity-images", "0", "--no-gpu-check")
    assert_one_line_error(r, *fragments)
    assert not (tmp_path / "rel").exists()


def test_static_positions_are_exact(tiny, x):
    """da3_static_positions: the RoPE positions as int64 constants (the package's own values): bit-identical depth and
    confidence, and no zeros -> to(int64) chain left for ExecuTorch's quantizer to turn into float indices."""
    from edgedepth.rewrites._modules import DA3StaticPositions

    out, report = apply_rewrites(tiny.model, *SIZE, names=["da3_static_positions"])
    assert report[0]["changed"] == 1 and isinstance(out.backbone.positions, DA3StaticPositions)
    assert out.backbone.positions.local.dtype == torch.int64
    _assert_bit_identical(out, tiny, x)
