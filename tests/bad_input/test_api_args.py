"""Python API arguments (issue 27, item 7): unknown or ill-typed arguments are an EdgedepthError, a runner refuses an
input of another dtype or shape than its file's, and a failed command leaves no empty folder behind."""

import json
import os

import numpy as np
import pytest

import edgedepth
from conftest import TINY_SIZE, assert_one_line_error, run_cli
from edgedepth.errors import EdgedepthError


@pytest.fixture()
def list_config(tmp_path):
    """A checkpoint folder whose config.json is a JSON list: loading it fails after the output folder would be made."""
    d = tmp_path / "ckpt"
    d.mkdir()
    (d / "config.json").write_text(json.dumps([]))
    return str(d)


@pytest.mark.parametrize("backends, match", [(["tpu"], "unknown 'tpu'"), ("cpu", r"list of names.*\['cpu'\]"),
                                             ([], "empty"), (["openvino"], "runs on cpu, gpu, gpu-fp16 only"),
                                             ([1], "list of names")])
def test_validate_backends_never_give_an_empty_result(tiny_plain_export, backends, match):
    """D14: validate(backends=['tpu'] / 'cpu' / [] / one no file runs on) raises instead of returning [] (a script
    checking "all rows ok" would pass with nothing tested)."""
    with pytest.raises(EdgedepthError, match=match) as e:
        edgedepth.validate([tiny_plain_export["fp32"]], model="synthetic-tiny", backends=backends)
    assert e.value.option == "backends"


def test_validate_threads_and_limit(tiny_plain_export):
    """D14/D15: validate(threads=0) and limit=0 are EdgedepthErrors."""
    with pytest.raises(EdgedepthError, match="^threads 0"):
        edgedepth.validate([tiny_plain_export["fp32"]], model="synthetic-tiny", threads=0)
    with pytest.raises(EdgedepthError, match="limit"):
        edgedepth.validate([tiny_plain_export["fp32"]], model="synthetic-tiny", limit=0)


@pytest.mark.parametrize("kwargs, match", [
    ({"precisions": "fp32"}, r"precisions 'fp32': give a list of names, e\.g\. precisions=\['fp32'\]"),
    ({"precisions": ["fp12"]}, "unknown 'fp12'; choose from fp32"),
    ({"precisions": []}, "precisions .*empty"),
    ({"rewrites": ["nope"]}, "unknown 'nope'; choose from .*fuse_qkv"),
    ({"rewrites": "fuse_qkv"}, "give a list of names"),
    ({"rewrites": ["fuse_qkv"]}, "fuse_qkv needs static_attention"),
    ({"input_dtype": "int8"}, "input_dtype 'int8'"),
    ({"size": 518}, "size 518"),
    ({"size": "140000x140000"}, "at most 1400"),
    ({"target": "tf"}, "unknown export target"),
    ({"backends": ["xnnpack"]}, "only ExecuTorch files take an export backend"),
    ({"target": "executorch", "backends": "xnnpack"}, "give a list of names"),
    ({"target": "executorch", "backends": ["vulkan"], "precisions": ["int8"]}, "xnnpack only"),
])
def test_export_arguments_are_checked_before_anything_runs(tmp_path, kwargs, match):
    """D14: export(precisions="fp32") (was "precision f, p, 3, 2"), rewrites=["nope"] (was a bare ValueError) and the
    other ill-typed/unknown arguments raise EdgedepthError before a checkpoint loads; no out_dir is made."""
    out = tmp_path / "out"
    with pytest.raises(EdgedepthError, match=match):
        edgedepth.export("synthetic-tiny", out_dir=str(out), **kwargs)
    assert not out.exists()


def test_runners_refuse_an_input_of_another_dtype_or_shape(tiny_plain_export, tiny_ckpt):
    """D14: a float32-input file fed uint8 pixels (or float64) through runner.run is refused, not cast (the cast gave
    a wrong map, rel-L2 0.45); a wrong shape too; the PyTorch runner the same. The float32 tensor runs."""
    from edgedepth.checkpoint import DepthModule
    from edgedepth.preprocess import load_image, pixels, preprocess
    from edgedepth.runtimes.torch import TorchRunner
    from edgedepth.samples import sample_photo

    img = load_image(sample_photo())
    px, x = pixels(img, TINY_SIZE), preprocess(img, TINY_SIZE)
    for runner in (edgedepth.open(tiny_plain_export["fp32"]).runner(), TorchRunner(DepthModule(tiny_ckpt.model),
                                                                                   TINY_SIZE)):
        with pytest.raises(EdgedepthError, match="float32 tensor.*not uint8 pixels"):
            runner.run(px)
        with pytest.raises(EdgedepthError, match="not float64"):
            runner.run(x.astype(np.float64))
        with pytest.raises(EdgedepthError, match="input shape"):
            runner.run(x[:, :, :14])
        assert runner.run(x).shape == (1, *TINY_SIZE)
        runner.close()


def test_shared_input_check_for_uint8_files():
    """D14: the check every file runner shares (LiteRT, ONNX Runtime, OpenVINO, ExecuTorch): a uint8-input file
    refuses float32; a float32 file takes only float32."""
    from edgedepth.runtimes import FileRunner

    class Stub(FileRunner):
        input_shape = (1, 3, 14, 14)

    u8 = Stub()
    u8.input_dtype = "uint8"
    with pytest.raises(EdgedepthError, match="takes uint8 RGB pixels"):
        u8._checked(np.zeros((1, 3, 14, 14), np.float32))
    assert u8._checked(np.zeros((1, 3, 14, 14), np.uint8)).dtype == np.uint8
    with pytest.raises(EdgedepthError, match="not int8"):
        Stub()._checked(np.zeros((1, 3, 14, 14), np.int8))


def test_failed_export_leaves_no_empty_folder(tmp_path, list_config):
    """D14: an export that fails after its folder was made (a config.json that is a list) removes the folders it
    created, via the API and the CLI; a folder that existed before stays."""
    with pytest.raises(EdgedepthError, match="config.json"):
        edgedepth.export(list_config, size="56x70", out_dir=str(tmp_path / "api" / "deep"), precisions=["fp32"])
    assert not (tmp_path / "api").exists()
    assert_one_line_error(run_cli("export", "--model", list_config, "--size", "56x70", "--precision", "fp32",
                                  "--out", tmp_path / "cli" / "deep"), "config.json")
    assert not (tmp_path / "cli").exists()
    from edgedepth.cli import main

    (tmp_path / "mine").mkdir()
    assert main(["export", "--model", list_config, "--size", "56x70", "--out", str(tmp_path / "mine")]) == 2
    assert (tmp_path / "mine").is_dir()


def test_failed_predict_leaves_no_empty_folder(tmp_path):
    """D14: predict failing after its output folder was made (a missing model file) leaves no folder behind."""
    from edgedepth.samples import sample_photo

    out = tmp_path / "o"
    assert_one_line_error(run_cli("predict", sample_photo(), "--model", tmp_path / "nope.tflite", "-o", out),
                          "does not exist")
    assert not out.exists()


def test_made_dir_removes_only_what_it_made_while_empty(tmp_path):
    """D14: fsutil.made_dir removes the folders it created when the block fails, never one holding a file, never one
    that existed; on success the folder stays."""
    from edgedepth.fsutil import made_dir

    with pytest.raises(RuntimeError):
        with made_dir(str(tmp_path / "a" / "b")):
            raise RuntimeError("boom")
    assert not (tmp_path / "a").exists()
    with pytest.raises(RuntimeError):
        with made_dir(str(tmp_path / "c" / "d")) as d:
            open(os.path.join(d, "kept.txt"), "w").close()
            raise RuntimeError("boom")
    assert (tmp_path / "c" / "d" / "kept.txt").exists()
    with made_dir(str(tmp_path / "e")):
        pass
    assert (tmp_path / "e").is_dir()


def test_paths_may_be_pathlike(tmp_path, tiny_plain_export):
    """export, open, Model.predict and validate take ``pathlib.Path`` as well as ``str`` (os.PathLike; predict took a
    Path for a PIL image, validate iterated it)."""
    from pathlib import Path

    from edgedepth.samples import sample_photo

    (made,) = edgedepth.export("synthetic-tiny", size=(28, 42), out_dir=tmp_path / "out", precisions=["fp32"],
                               rewrites=None)
    assert isinstance(made, str) and os.path.isfile(made) and os.path.dirname(made) == str(tmp_path / "out")
    model = edgedepth.open(Path(tiny_plain_export["fp32"]))
    photo = sample_photo()
    assert np.array_equal(model.predict(Path(photo)), model.predict(photo))
    rows = edgedepth.validate(Path(tiny_plain_export["fp32"]), model="synthetic-tiny", limit=1)
    assert [r["status"] for r in rows] == ["ok"]
    assert len(edgedepth.validate([Path(tiny_plain_export["fp32"])], model="synthetic-tiny", limit=1)) == 1


@pytest.mark.parametrize("kwargs, option", [
    ({"limit": "1"}, "limit"), ({"limit": 1.5}, "limit"), ({"limit": True}, "limit"), ({"model": None}, "model"),
    ({"images": 3}, "images"), ({"max_pixels": 1e9}, "max_pixels"), ({"verbose": "yes"}, "verbose"),
])
def test_validate_argument_types(tiny_plain_export, kwargs, option):
    """validate(limit="1" / 1.5, model=None, ...) is a one-line EdgedepthError naming the argument."""
    with pytest.raises(EdgedepthError) as e:
        edgedepth.validate([tiny_plain_export["fp32"]], **{"model": "synthetic-tiny", **kwargs})
    assert e.value.option == option and "\n" not in str(e.value), str(e.value)
    with pytest.raises(EdgedepthError, match="^paths 42"):
        edgedepth.validate(42)


@pytest.mark.parametrize("kwargs, match", [
    ({"out_dir": None}, "^out_dir None"), ({"model": None}, "^model None"), ({"out_dir": b"x"}, "^out_dir b'x'"),
    ({"size": (28.9, 42)}, r"^size \(28\.9, 42\): .*whole numbers"), ({"size": (True, 42)}, "^size"),
    ({"size": (28, 42, 3)}, "^size"), ({"verbose": 1}, "^verbose 1"),
])
def test_export_argument_types(tmp_path, kwargs, match):
    """export(out_dir=None / model=None / size=(28.9, 42)) is a one-line EdgedepthError before anything runs (a
    float size was truncated to 28 silently; bool is not a size)."""
    with pytest.raises(EdgedepthError, match=match) as e:
        edgedepth.export(**{"model": "synthetic-tiny", "out_dir": tmp_path / "out", **kwargs})
    assert "\n" not in str(e.value)
    assert not (tmp_path / "out").exists()


def test_predict_and_runner_misuse(tiny_plain_export):
    """Model.predict on a 0x0 image or a non-image, and a runner's run() after close(), are one-line
    EdgedepthErrors (not an AttributeError or a runtime's crash)."""
    from PIL import Image

    model = edgedepth.open(tiny_plain_export["fp32"])
    with pytest.raises(EdgedepthError, match="^image 0x0"):
        model.predict(Image.new("RGB", (0, 0)))
    with pytest.raises(EdgedepthError, match="^image 0x5"):
        model.predict_all(Image.new("RGB", (0, 5)))
    with pytest.raises(EdgedepthError, match="^image ndarray: give a path or a PIL image"):
        model.predict(np.zeros((5, 5, 3), np.uint8))
    with pytest.raises(EdgedepthError, match="^path None"):
        edgedepth.open(None)
    runner = model.runner()
    x = np.zeros(runner.input_shape, np.float32)
    assert runner.run(x).shape == (1, *TINY_SIZE)
    runner.close()
    for call in (runner.run, runner.run_all):
        with pytest.raises(EdgedepthError, match="runner was closed"):
            call(x)
    runner.close()          # twice: still nothing
