"""Depth Anything 3's monocular contract on device (issue 31): one view [1,3,H,W] -> depth [1,H,W] and confidence
[1,H,W].  Its LiteRT, ONNX and ExecuTorch (XNNPACK) FP32 files carry both outputs, depth first; each runner's ``run``
still returns the depth and ``run_all`` both maps by name, the confidence within the FP32-noise factor of PyTorch
FP32's own error vs a float64 run of DA3Mono's ``confidence`` (tests/README.md); predict writes the confidence map
where a model has one and V2 files gain nothing (their bytes: tests/golden, test_release)."""

import copy
import os

import numpy as np
import pytest
import torch

from edgedepth import formats
from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.models import family_of, family_of_synthetic
from conftest import DA3_TINY_SIZE, THREADS, assert_within_fp32_noise, run_cli, torch_fp32

TINY = "synthetic-da3-tiny"
DEPTH_ANYTHING_V2, DEPTH_ANYTHING_3 = family_of_synthetic("synthetic-tiny"), family_of_synthetic(TINY)
SIZE = DA3_TINY_SIZE          # the session's shared DA3 exports (conftest.da3_tiny_exports)
PHOTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors", "rgb_160x120.png")
TARGETS = {"litert": "fp32", "onnx": "fp32", "executorch": "fp32"}     # ExecuTorch: XNNPACK, its default backend
FILE_NAMES = {"litert": ["output_0", "output_1"], "onnx": ["predicted_depth", "confidence"], "executorch": None}


@pytest.fixture(scope="module")
def da3():
    return load_checkpoint(TINY, quiet=True)


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(3).standard_normal((1, 3, *SIZE)).astype(np.float32)


@pytest.fixture(scope="module")
def refs(da3, x):
    """PyTorch's depth and confidence: FP32 (DA3Mono as loaded) and float64 (a deep copy), the noise policy's pair."""
    both = ("depth", "confidence")
    with torch.no_grad():
        out32 = da3.model(torch.from_numpy(x))
        y64 = DepthModule(copy.deepcopy(da3.model).double().eval(), both)(torch.from_numpy(x.astype(np.float64)))
    return {"fp32": {"depth": out32.predicted_depth.numpy(), "confidence": out32.confidence.numpy()},
            "fp64": dict(zip(both, (t.numpy() for t in y64)))}


@pytest.fixture(scope="module")
def files(da3_tiny_exports):
    """One FP32 file per format at DA3_TINY_SIZE, default rewrites, named after the member (as export names them):
    the session's shared exports (test_depth_anything_3 checks their depth and INT8 too)."""
    return {t: da3_tiny_exports(t)[p].path for t, p in TARGETS.items()}


def test_families_declare_their_outputs(da3, x):
    """V2 exports the depth alone (DepthModule returns the tensor, as ever); DA3 depth then confidence (its DPT members
    depth then sky), the tuple prepare's module returns; DepthModule refuses an output list without the depth first."""
    from edgedepth.rewrites import prepare

    assert DEPTH_ANYTHING_V2.outputs == ("depth",) and DEPTH_ANYTHING_3.outputs == ("depth", "confidence")
    assert family_of(da3.model) is DEPTH_ANYTHING_3 and set(DEPTH_ANYTHING_3.output_texts) == {"confidence", "sky"}
    module, _ = prepare(da3.model, *SIZE)
    assert module.outputs == ("depth", "confidence") == da3.outputs
    mono = load_checkpoint("synthetic-da3-tiny-mono", quiet=True)
    assert prepare(mono.model, *SIZE)[0].outputs == ("depth", "sky") == mono.outputs
    assert DEPTH_ANYTHING_3.member_outputs(mono.member) == ("depth", "sky")
    with torch.no_grad():
        depth, conf = module(torch.from_numpy(x))
    assert depth.shape == conf.shape == (1, *SIZE) and bool((conf >= 1).all())
    assert torch.is_tensor(DepthModule(da3.model)(torch.from_numpy(x)))      # the default: depth alone
    with pytest.raises(ValueError, match="'depth' first"):
        DepthModule(da3.model, ("confidence", "depth"))


@pytest.mark.parametrize("target", list(TARGETS))
def test_files_have_both_outputs_and_match_pytorch(files, refs, x, target):
    """Two [1,H,W] float32 outputs in the file, in order; ``run_all`` names them depth, confidence (the file's family,
    from its name) and ``run`` is its depth; both maps within the FP32-noise factor, at every thread count."""
    art = formats.open_artifact(files[target])
    outs = art.info["outputs"]
    assert [o["shape"] for o in outs] == [[1, *SIZE]] * 2 and {o["dtype"] for o in outs} == {"float32"}
    if FILE_NAMES[target]:
        names = art.info["signatures"][0]["outputs"] if target == "litert" else [o["name"] for o in outs]
        assert names == FILE_NAMES[target]
    for threads in THREADS if target != "onnx" else (2,):
        runner = art.open_runner("cpu", threads=threads)
        try:
            assert runner.output_names == ("depth", "confidence")
            both, depth = runner.run_all(x), runner.run(x)
        finally:
            runner.close()
        assert list(both) == ["depth", "confidence"] and np.array_equal(depth, both["depth"])
        for name in both:
            assert both[name].shape == (1, *SIZE) and both[name].dtype == np.float32
            assert_within_fp32_noise(both[name], refs["fp64"][name], refs["fp32"][name],
                                     what=f"{target} {name}, {threads} threads")


def test_openvino_reads_both_outputs(files, refs, x):
    runner = formats.open_runner(files["onnx"], "openvino")
    try:
        both = runner.run_all(x)
    finally:
        runner.close()
    assert list(both) == ["depth", "confidence"]
    for name in both:
        assert_within_fp32_noise(both[name], refs["fp64"][name], refs["fp32"][name], what=f"OpenVINO {name}")


def test_validate_gates_the_confidence_too(files, tmp_path):
    """``edgedepth validate`` compares every output of a DA3 file with the package's PyTorch forward: the depth's
    ``metrics`` and ``output_metrics["confidence"]``, both within FP32 noise of the reference (bound: the factor x
    PyTorch FP32's own error vs float64 on the same image, measured here), and the Markdown shows the confidence row."""
    import json

    from conftest import FP32_NOISE_FACTOR

    from edgedepth.checkpoint import load_checkpoint as load
    from edgedepth.release.build import fp32_noise_by_output
    from edgedepth.images import image_set
    from edgedepth.preprocess import preprocess

    report = tmp_path / "v.json"
    r = run_cli("validate", files["litert"], "--model", TINY, "--limit", "1", "--json", report, "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    (row,) = json.loads(report.read_text())["results"]
    assert set(row["output_metrics"]) == {"confidence"} and row["status"] == "ok"
    ckpt = load(TINY, quiet=True)
    noise = fp32_noise_by_output(DepthModule(ckpt.model, DEPTH_ANYTHING_3.outputs),
                                 preprocess(image_set(limit=1)[0].load(), SIZE))
    assert set(noise) == {"depth", "confidence"} and all(v > 0 for v in noise.values())
    for role, m in (("depth", row["metrics"]), ("confidence", row["output_metrics"]["confidence"])):
        assert m["pooled_rel_l2"] <= FP32_NOISE_FACTOR * noise[role], (role, m["pooled_rel_l2"], noise[role])
    assert "_fp32.tflite → confidence | cpu | ok |" in r.stdout


def test_a_renamed_file_still_runs(files, x, tmp_path):
    """Without a family-member name or a manifest, the outputs keep the file's own names after the depth."""
    import shutil

    renamed = tmp_path / "model.tflite"
    shutil.copy(files["litert"], renamed)
    runner = formats.open_runner(str(renamed))
    try:
        assert runner.output_names == ("depth", "output_1") and set(runner.run_all(x)) == {"depth", "output_1"}
    finally:
        runner.close()


def test_manifest_contract_lists_both_outputs():
    """A release entry's I/O (build._io): V2's as ever (no ``outputs``); DA3's ``outputs``: depth, confidence, each
    named as its format's files name it, and ``output`` the depth."""
    from edgedepth.release import manifest as mf
    from edgedepth.release.build import _io

    v2 = _io(DEPTH_ANYTHING_V2, ("depth",), "relative inverse depth, larger = closer")(28, 42,
                                                                                    fmt=formats.NAMES["onnx"])
    assert v2 == mf.io_contract(28, 42) and "outputs" not in v2 and mf.output_roles(v2) == ("depth",)
    semantics = "relative depth, larger = farther"
    for fmt, given, names in (("tflite", (), ["output_0", "output_1"]),      # given: what release_entry passes
                              ("onnx", ("pixel_values", "predicted_depth"), ["predicted_depth", "confidence"]),
                              ("pte", ("pixel_values", "depth"), ["depth", "confidence"])):
        io = _io(DEPTH_ANYTHING_3, ("depth", "confidence"), semantics)(28, 42, *given, fmt=formats.NAMES[fmt])
        assert [o["name"] for o in io["outputs"]] == names and mf.output_roles(io) == ("depth", "confidence")
        assert io["outputs"][0] == {"role": "depth", **io["output"]} and io["output"]["semantics"] == semantics
        assert io["outputs"][1]["shape"] == [1, 28, 42] and "more confident" in io["outputs"][1]["semantics"]


def test_predict_writes_the_confidence_map(files, tmp_path):
    """``edgedepth predict`` on the DA3 .tflite: <stem>_confidence.png (grey, min-max, brighter = more confident) and,
    with --raw, its .npy, each named in the output; the PNG is the .npy's map scaled as said."""
    from PIL import Image

    r = run_cli("predict", PHOTO, "--model", files["litert"], "--raw", "--out", tmp_path, "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    stem = os.path.splitext(os.path.basename(PHOTO))[0]
    png, npy = tmp_path / f"{stem}_confidence.png", tmp_path / f"{stem}_confidence.npy"
    assert str(png) in r.stdout.splitlines() and str(npy) in r.stdout.splitlines()
    conf = np.load(npy)
    grey = Image.open(png)
    assert grey.mode == "L" and conf.shape == (120, 160) == np.asarray(grey).shape
    lo, hi = conf.min(), conf.max()
    assert np.array_equal(np.asarray(grey), ((conf - lo) / (hi - lo) * 255 + 0.5).astype(np.uint8))
    assert (tmp_path / f"{stem}_depth.png").exists()


def test_api_predict_all_gives_both_maps(files):
    """``edgedepth.open(f).predict_all(photo)``: depth and confidence, each at the photo's size, the very maps the CLI's
    predict writes (its .npy); ``predict`` is the depth of the same call, bit for bit."""
    import edgedepth
    from edgedepth.predict import resize_depth
    from edgedepth.preprocess import load_image, model_input

    model = edgedepth.open(files["litert"])
    maps = model.predict_all(PHOTO)
    assert list(maps) == ["depth", "confidence"] and all(m.shape == (120, 160) for m in maps.values())
    assert np.array_equal(model.predict(PHOTO), maps["depth"])
    runner = model.runner()
    try:
        raw = runner.run_all(model_input(load_image(PHOTO), SIZE, runner.input_dtype))
    finally:
        runner.close()
    assert np.array_equal(maps["confidence"], resize_depth(raw["confidence"][0], (120, 160)))
    small = model.predict_all(PHOTO, resize_back=False)
    assert np.array_equal(small["confidence"], raw["confidence"][0]) and not np.array_equal(small["confidence"],
                                                                                            small["depth"])


def test_v2_predict_writes_no_confidence(tmp_path):
    """A V2 model has no confidence: predict writes what it always wrote (here from the checkpoint in PyTorch)."""
    from edgedepth.predict import predict
    from edgedepth.runtimes.torch import TorchRunner

    v2 = load_checkpoint("synthetic-tiny", quiet=True)
    runner = TorchRunner(DepthModule(v2.model, v2.family.outputs), (28, 42))
    assert runner.output_names == ("depth",) and list(runner.run_all(
        np.zeros((1, 3, 28, 42), np.float32))) == ["depth"]
    written = predict([PHOTO], runner, str(tmp_path), raw=True)
    assert [os.path.basename(w) for w in written] == ["rgb_160x120_depth.png", "rgb_160x120_depth.npy",
                                                      "rgb_160x120_depth16.png"]
    assert sorted(os.listdir(tmp_path)) == sorted(os.path.basename(w) for w in written)


def test_predict_writes_the_sky_map_of_a_dpt_member(tmp_path):
    """Mono-/Metric-Large (DPT head): depth and sky; predict writes <stem>_sky.png (and .npy), no confidence, the .npy
    the checkpoint's sky at the photo's size."""
    from edgedepth.predict import predict, resize_depth
    from edgedepth.preprocess import load_and_preprocess
    from edgedepth.runtimes.torch import TorchRunner

    mono = load_checkpoint("synthetic-da3-tiny-mono", quiet=True)
    runner = TorchRunner(DepthModule(mono.model, mono.outputs), SIZE)
    assert runner.output_names == ("depth", "sky")
    written = [os.path.basename(w) for w in predict([PHOTO], runner, str(tmp_path), raw=True)]
    assert written == ["rgb_160x120_depth.png", "rgb_160x120_depth.npy", "rgb_160x120_depth16.png",
                       "rgb_160x120_sky.png", "rgb_160x120_sky.npy"]
    x, orig = load_and_preprocess(PHOTO, SIZE)
    with torch.no_grad():
        sky = mono.model(torch.from_numpy(x)).sky.numpy()
    np.testing.assert_array_equal(np.load(tmp_path / "rgb_160x120_sky.npy"), resize_depth(sky[0], orig))


def test_torch_runner_gives_both(da3, refs, x):
    """A DA3 checkpoint in PyTorch (predict --model synthetic-da3-tiny): run = the depth, run_all both maps."""
    from edgedepth.runtimes.torch import TorchRunner

    runner = TorchRunner(DepthModule(da3.model, da3.family.outputs), SIZE)
    both = runner.run_all(x)
    assert np.array_equal(runner.run(x), both["depth"]) and np.array_equal(both["depth"], torch_fp32(da3.model, x))
    assert np.array_equal(both["confidence"], refs["fp32"]["confidence"])


def test_predict_help_says_what_the_confidence_map_is(capsys):
    from edgedepth.cli import main

    with pytest.raises(SystemExit):
        main(["predict", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "<stem>_confidence.png or <stem>_sky.png: grey, min-max per photo, larger = brighter" in text


def test_card_and_semantics_no_longer_say_not_exported():
    from edgedepth.models import MEMBERS

    about = DEPTH_ANYTHING_3.card_about({"family_member": "da3-small"})
    assert "not exported" not in about and "confidence" in about
    assert "not exported" not in MEMBERS["da3-small"].output_semantics
