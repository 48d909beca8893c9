"""The Depth Anything V2 family (edgedepth.models.depth_anything_v2): every member's tiny stand-in goes through the same rewrites,
export and checks as Small; metric members output metres; licences and bad input."""

import json
import os
import re

import numpy as np
import pytest

from edgedepth import formats
from edgedepth.checkpoint import load_checkpoint
from edgedepth.models import CC_BY_NC, member_of_file_name, member_of_hub_id
from edgedepth.models.depth_anything_v2.members import MEMBERS, SYNTHETIC, member_of_config
from edgedepth.formats import tflite
from edgedepth.rewrites import prepare
from edgedepth.runtimes.litert import LiteRTRunner
from conftest import assert_one_line_error
from conftest import TINY_SIZE, assert_within_fp32_noise, float64_reference, rel_l2, run_cli, torch_fp32

TINY_MEMBERS = ("synthetic-tiny-metric-indoor", "synthetic-tiny-metric-outdoor", "synthetic-tiny-large")


@pytest.fixture(scope="module", params=TINY_MEMBERS)
def member(request, tmp_path_factory, tiny_input):
    ckpt = load_checkpoint(request.param, quiet=True)
    out = tmp_path_factory.mktemp(request.param)
    files = {f.precision: f.path for f in formats.export(ckpt.model, *TINY_SIZE, str(out), precisions=("fp32", "int8"),
                                                         stem=ckpt.file_stem)}
    return {"name": request.param, "ckpt": ckpt, "files": files, "fp32": torch_fp32(ckpt.model, tiny_input),
            "fp64": float64_reference(ckpt.model, tiny_input)}


def test_rewrites_stay_within_fp32_noise(member, tiny_input):
    module, report = prepare(member["ckpt"].model, *TINY_SIZE)
    assert {r["name"] for r in report if r["changed"]} >= {"fuse_qkv", "rank4_attention", "freeze_position_embedding"}
    assert_within_fp32_noise(torch_fp32(module, tiny_input), member["fp64"], member["fp32"],
                             what=f"{member['name']}: rewritten PyTorch module")


def test_litert_fp32_and_int8(member, tiny_input):
    y = LiteRTRunner(member["files"]["fp32"], "cpu", threads=2).run(tiny_input)
    assert_within_fp32_noise(y, member["fp64"], member["fp32"], what=f"{member['name']}: LiteRT FP32")
    err = rel_l2(LiteRTRunner(member["files"]["int8"], "cpu", threads=2).run(tiny_input), member["fp32"])
    assert 0 < err < 0.1     # INT8 weight quantisation error (a constant: far above FP32 noise), as for Small


def test_metric_members_output_metres(member):
    m = member["ckpt"].member
    y = member["fp32"]
    if m.is_metric:
        assert 0 < y.min() and y.max() < m.max_depth and member["ckpt"].is_metric   # sigmoid x max_depth
        assert "metres" in m.output_semantics and f"{m.max_depth}" in m.output_semantics
    else:
        assert y.min() >= 0 and "relative" in m.output_semantics


def test_files_are_named_after_their_member(member):
    m = member["ckpt"].member
    for p, path in member["files"].items():
        assert os.path.basename(path) == tflite.file_name(*TINY_SIZE, p, stem=m.file_stem)
        assert member_of_file_name(path) == m
    assert member_of_file_name("depth_anything_v2_small_518x686_fp32.tflite") == MEMBERS["small"]
    assert member_of_file_name("renamed.tflite") is None


def test_validate_refuses_a_file_of_another_member(member):
    """validate compares a file with --model's PyTorch output: a file exported from another member is one line."""
    r = run_cli("validate", member["files"]["fp32"], "--model", "synthetic-tiny", "--limit", "1", "--quiet")
    assert_one_line_error(r, f"was exported from {member['ckpt'].member.name}", "--model synthetic-tiny is small")


def test_predict_writes_metres(member, tmp_path):
    """Metric files: .npy in metres within 0..max_depth, the 16-bit PNG in millimetres of the same values, the colour
    PNG with a colour bar beside the photo; relative files keep the photo-sized colour PNG."""
    from PIL import Image

    from edgedepth.samples import sample_photo

    m = member["ckpt"].member
    r = run_cli("predict", sample_photo(), "--model", member["files"]["fp32"], "-o", tmp_path, "--raw", "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    photo = Image.open(sample_photo()).size
    stem = os.path.splitext(os.path.basename(sample_photo()))[0]
    depth = np.load(tmp_path / f"{stem}_depth.npy")
    colour = Image.open(tmp_path / f"{stem}_depth.png").size
    png16 = np.asarray(Image.open(tmp_path / f"{stem}_depth16.png"))
    if m.is_metric:
        assert 0 <= depth.min() and depth.max() <= m.max_depth and depth.max() > 1.0
        assert np.array_equal(png16, np.minimum(np.rint(depth.astype(np.float64) * 1000), 65535).astype(png16.dtype))
        assert colour[1] == photo[1] and colour[0] > photo[0]       # the colour bar sits to the right
    else:
        assert colour == photo and png16.max() == 65535             # relative: min-max normalised, as before


def test_export_of_a_non_commercial_member_says_so(tmp_path):
    r = run_cli("export", "--model", "synthetic-tiny-large", "--size", "28x42", "--precision", "fp32", "--out", tmp_path,
                "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Large-hf is licensed cc-by-nc-4.0: files derived from it are for non-commercial use only" in r.stderr
    assert os.listdir(tmp_path) == ["depth_anything_v2_large_28x42_fp32.tflite"]


def test_member_short_names_load_their_hub_id(monkeypatch):
    import edgedepth.checkpoint as ck
    from edgedepth.models import depth_anything_v2

    seen = []
    monkeypatch.setattr(depth_anything_v2.DepthAnythingV2, "load_pretrained",
                        lambda self, hf_id, rev, source: seen.append((hf_id, rev, source)))
    ck.load_checkpoint("metric-outdoor-small")
    ck.load_checkpoint("small")
    assert seen == [(MEMBERS["metric-outdoor-small"].hub_id, None, "hf"),
                    (MEMBERS["small"].hub_id, MEMBERS["small"].revision, "hf")]


@pytest.mark.gpu
def test_gpu_fully_delegated(member):
    for p, path in member["files"].items():
        g = tflite.gpu_check(path)
        assert g["fully_delegated"] and not g["validation_errors"], (member["name"], p, g["error"])


def test_family_table():
    assert {m.license for m in MEMBERS.values() if "small" in m.name} == {"apache-2.0"}
    assert all(m.license == CC_BY_NC for m in MEMBERS.values() if "base" in m.name or "large" in m.name)
    assert member_of_hub_id("depth-anything/depth-anything-v2-metric-indoor-small-hf").max_depth == 20
    for name, (member_name, _arch) in SYNTHETIC.items():
        if "tiny" not in name:          # full-size stand-ins are recognised from their config alone
            from edgedepth.models.depth_anything_v2.synthetic import synthetic_config

            assert member_of_config(synthetic_config(name)).name == member_name


def test_not_a_depth_anything_folder(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    r = run_cli("export", "--model", tmp_path, "--size", "56x70", "--out", tmp_path / "out", "--quiet")
    assert_one_line_error(r, "'bert' checkpoint, not Depth Anything")
    assert not os.path.exists(tmp_path / "out") or os.listdir(tmp_path / "out") == []


@pytest.mark.parametrize("recipe,model,licence,says", [
    ("large", "synthetic-tiny-large", "cc-by-nc-4.0", "relative inverse depth"),
    ("metric-outdoor-small", "synthetic-tiny-metric-outdoor", "apache-2.0", "metric depth in metres, 0..80")])
def test_member_release(tmp_path, recipe, model, licence, says):
    """A member's recipe builds its release: licence in the card's front matter, LICENSE, NOTICE and the manifest (the
    CLI says so for CC BY-NC), output semantics in the manifest's I/O contract and the card.  Built from the member's
    recipe with its formats cut to one LiteRT FP32 file (a recipe on top of it, as a user would write one): every
    format's files of Small's recipe are built and checked in test_release / test_reproducible."""
    out = tmp_path / "rel"
    trimmed = tmp_path / "recipe.py"
    trimmed.write_text("import runpy\n"
                       f"RECIPE = {{**runpy.run_path({os.path.abspath(f'recipes/depth-anything-v2-{recipe}.py')!r})"
                       "['RECIPE'], 'litert': {'precisions': ['fp32']}, 'onnx': None, 'executorch': None}\n")
    r = run_cli("release", "--recipe", trimmed, "--out", out, "--model", model,
                "--sizes", "28x42", "--parity-images", "0", "--no-gpu-check")
    assert r.returncode == 0, r.stderr[-2000:]
    done, total = re.findall(r"(\d+)/(\S+) stages", r.stderr)[-1]     # the progress bar's total was right
    assert done == total, r.stderr[-500:]
    m = json.loads((out / "manifest.json").read_text())
    assert m["model"]["license"] == licence and m["model"]["family_member"] == recipe
    assert {f["output"]["semantics"] for f in m["files"] if "output" in f} == {MEMBERS[recipe].output_semantics}
    card = (out / "README.md").read_text()
    assert f"\nlicense: {licence}\n" in card and says in card
    assert all(MEMBERS[recipe].file_stem in f["path"] for f in m["files"] if f["path"].endswith(".tflite"))
    if licence == CC_BY_NC:
        assert "licence of large: cc-by-nc-4.0" in r.stderr and "non-commercial use only" in card
        assert (out / "LICENSE").read_text().startswith("Creative Commons Attribution-NonCommercial 4.0")
        assert "CC BY-NC 4.0" in (out / "NOTICE").read_text()


def test_every_member_has_a_recipe():
    from edgedepth.release.recipe import load_recipe

    for name, m in MEMBERS.items():
        r = load_recipe(f"recipes/depth-anything-v2-{name}.py")
        assert r.base_model == m.hub_id and r.model.split("@")[0] == m.hub_id and r.sha256


def test_recipe_of_another_member_is_one_line(tmp_path):
    r = run_cli("release", "--recipe", "recipes/depth-anything-v2-metric-indoor-small.py", "--out", tmp_path / "rel",
                "--model", "synthetic-tiny", "--sizes", "28x42", "--parity-images", "0", "--no-gpu-check")
    assert_one_line_error(r, "is for depth-anything/Depth-Anything-V2-Metric-Indoor-Small-hf",
                          "--model synthetic-tiny is small", "recipes/depth-anything-v2-small.py")
    assert not os.path.exists(tmp_path / "rel")
