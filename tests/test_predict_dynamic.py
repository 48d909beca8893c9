"""``predict`` on a dynamic-size ONNX file (a release's ``onnx/model.onnx``): each photo runs at the size upstream's
image processor gives it (transformers' ``DPTImageProcessor`` configured by the folder's ``preprocessor_config.json``:
aspect ratio kept, multiples of 14), as transformers, transformers.js and the card's ONNX Runtime snippet run it,
unless ``--size`` chooses one; and a release folder passed as ``--model`` is one line naming its files.

The tiny release (``tiny_release``): synthetic-tiny, ONNX recorded at 28x42.  Photos: the Grace Hopper sample (taller
than wide) and tests/vectors/rgb_160x120.png (wider than tall).  Tolerances (tests/README.md): predict's map against
the snippet's (an FP32 ONNX Runtime run too, on pixels normalised in float64 where predict normalises in float32)
within 2 x FP32_NOISE_FACTOR x PyTorch FP32's own rel-L2 against a float64 run on the same input, measured here.
"""

from __future__ import annotations

import os
import types

import numpy as np
import pytest

from conftest import FP32_NOISE_FACTOR, FULL_SIZE_PHOTO, assert_one_line_error, assert_within_fp32_noise
from conftest import float64_reference, rel_l2, run_cli, torch_fp32
from edgedepth.samples import sample_photo

PHOTOS = {"portrait": sample_photo(), "landscape": FULL_SIZE_PHOTO}


def _card_onnx_block(folder) -> str:
    """The ONNX Runtime block of the release's own card (README.md)."""
    text = (folder / "README.md").read_text()
    blocks = text.split("```python\n")[1:]
    (block,) = [b.split("\n```")[0] for b in blocks if "import onnxruntime" in b]
    return block


@pytest.fixture(scope="module")
def work(tiny_release, tmp_path_factory):
    """A folder where the card's snippet runs as written: onnx/ of the tiny release (a symlink) and photo.jpg."""
    root = tmp_path_factory.mktemp("predict_dynamic")
    os.symlink(tiny_release / "onnx", root / "onnx")
    return root


def _processor_hw(folder, photo: str) -> tuple[int, int]:
    """(H, W) of transformers' own DPTImageProcessor, configured by ``folder``'s preprocessor_config.json."""
    from PIL import Image
    from transformers import DPTImageProcessor

    proc = DPTImageProcessor.from_pretrained(str(folder))
    return tuple(proc(images=Image.open(photo).convert("RGB"), return_tensors="np")["pixel_values"].shape[2:])


def _snippet(block: str, work, photo: str, monkeypatch) -> dict:
    """The card's ONNX Runtime block run as written on ``photo`` (as photo.jpg): its namespace (x, depth, H, W)."""
    from PIL import Image

    Image.open(photo).convert("RGB").save(work / "photo.jpg", quality=95)
    monkeypatch.chdir(work)
    ns: dict = {}
    exec(compile(block, "card-onnxruntime-block", "exec"), ns)      # noqa: S102  (the card's own code)
    return ns


def _predict(monkeypatch, tmp_path, model, photo, *extra) -> tuple[np.ndarray, list]:
    """``edgedepth predict --raw`` in this process: (the photo-sized depth .npy, the model input sizes it used)."""
    from edgedepth import predict as pr
    from edgedepth.cli import main

    sizes, model_input = [], pr.model_input

    def spy(img, size, dtype="float32"):
        sizes.append(tuple(size))
        return model_input(img, size, dtype)

    monkeypatch.setattr(pr, "model_input", spy)
    out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
    assert main(["predict", str(photo), "--model", str(model), "-o", str(out), "--raw", "--quiet", *extra]) == 0
    stem = os.path.splitext(os.path.basename(photo))[0]
    return np.load(out / f"{stem}_depth.npy"), sizes


@pytest.mark.parametrize("kind", list(PHOTOS))
def test_predict_runs_each_photo_at_the_processors_size(kind, tiny_release, tiny_ckpt, work, tmp_path, monkeypatch):
    """The size predict uses is transformers' DPTImageProcessor's for the photo (the folder's config), and its map
    is the card snippet's within FP32 noise; with --size (here the recorded 28x42, what predict ran before) the map
    is the squashed one, far from it."""
    from edgedepth.predict import resize_depth

    ns = _snippet(_card_onnx_block(tiny_release), work, PHOTOS[kind], monkeypatch)
    photo = work / "photo.jpg"
    hw = _processor_hw(tiny_release, str(photo))
    assert (kind == "portrait") == (hw[0] > hw[1]) and hw != (28, 42)
    assert tuple(ns["x"].shape[2:]) == hw, "the card's snippet sizes the photo as transformers does"

    depth, sizes = _predict(monkeypatch, tmp_path, tiny_release / "onnx" / "model.onnx", photo)
    assert sizes == [hw]
    orig = np.asarray(ns["img"]).shape[:2]
    assert depth.shape == orig
    snip = resize_depth(ns["depth"], orig)
    ref64, fp32 = (resize_depth(f(tiny_ckpt.model, ns["x"])[0], orig) for f in (float64_reference, torch_fp32))
    assert_within_fp32_noise(snip, ref64, fp32, what="the card's snippet")
    noise = rel_l2(fp32, ref64)
    err = rel_l2(depth, snip)
    assert err <= 2 * FP32_NOISE_FACTOR * noise, (err, noise)

    old, sizes = _predict(monkeypatch, tmp_path, tiny_release / "onnx" / "model.onnx", photo, "--size", "28x42")
    assert sizes == [(28, 42)] and old.shape == orig
    assert rel_l2(old, snip) > 100 * noise, (rel_l2(old, snip), noise)
    print(f"{kind} {orig}: processor size {hw}, predict vs snippet rel-L2 {err:.2e} (FP32 noise {noise:.2e}); "
          f"at the recorded 28x42: {rel_l2(old, snip):.3f}")


def test_size_overrides_and_the_api_agrees(tiny_release, tmp_path, monkeypatch):
    """--size runs every photo at that size; edgedepth.open(...).predict gives predict's map, bit for bit."""
    import edgedepth

    model = tiny_release / "onnx" / "model.onnx"
    depth, sizes = _predict(monkeypatch, tmp_path, model, PHOTOS["portrait"], "--size", "42x42")
    assert sizes == [(42, 42)]
    depth, sizes = _predict(monkeypatch, tmp_path, model, PHOTOS["portrait"])
    assert sizes == [_processor_hw(tiny_release, PHOTOS["portrait"])]
    assert np.array_equal(edgedepth.open(model).predict(PHOTOS["portrait"]), depth)


def test_fixed_size_files_keep_their_size(tiny_release, tmp_path, monkeypatch):
    m = next(f for f in sorted(os.listdir(tiny_release)) if f.endswith(".tflite"))
    _, sizes = _predict(monkeypatch, tmp_path, tiny_release / m, PHOTOS["portrait"])
    assert sizes == [(28, 42)]


def test_a_panorama_is_brought_within_the_side_limit(tiny_release, tmp_path, monkeypatch, capsys):
    """A 600x6000 photo: upstream's rule gives 518x5180; predict runs 140x1400 (MAX_SIDE, same aspect) and says so."""
    from PIL import Image

    pano = tmp_path / "pano.png"
    ramp = np.broadcast_to(np.linspace(0, 255, 6000, dtype=np.float32)[None, :, None], (600, 6000, 3))
    Image.fromarray(ramp.astype(np.uint8)).save(pano)
    depth, sizes = _predict(monkeypatch, tmp_path, tiny_release / "onnx" / "model.onnx", pano)
    assert sizes == [(140, 1400)] and depth.shape == (600, 6000)
    assert "518x5180" in capsys.readouterr().err


def test_processor_size_is_transformers_rule():
    """Processor.size_for against transformers' own get_resize_output_image_size, halves (Python's round) included."""
    from transformers.models.dpt.image_processing_pil_dpt import get_resize_output_image_size

    from edgedepth.preprocess import Processor

    rng = np.random.default_rng(0)
    shapes = [(480, 640), (640, 480), (600, 512), (259, 518), (1, 1), (7, 1000), (4000, 3000)]
    shapes += [tuple(int(v) for v in rng.integers(1, 6000, 2)) for _ in range(3000)]
    for cfg in [(518, 518, True, 14), (28, 42, True, 14), (518, 518, False, 14), (392, 392, True, 28)]:
        p = Processor(*cfg)
        for h, w in shapes:
            want = get_resize_output_image_size(np.zeros((3, h, w)), cfg[:2], cfg[2], cfg[3])
            assert p.size_for(h, w) == (want.height, want.width), (cfg, h, w)


def test_a_release_folder_as_model_is_one_line(tiny_release, tmp_path):
    """bad_input style: `predict --model RELEASE_FOLDER` names the files to pass (the manifest's recommended CPU
    file, the photo-sized ONNX file); exit 2, one line, no traceback, no output folder left."""
    import json

    m = json.loads((tiny_release / "manifest.json").read_text())
    r = run_cli("predict", PHOTOS["portrait"], "--model", tiny_release, "-o", tmp_path / "o")
    assert_one_line_error(r, "release folder", os.path.join(str(tiny_release), m["recommended"]["cpu"]["path"]),
                          os.path.join(str(tiny_release), "onnx", "model.onnx"))
    assert "safetensors" not in r.stderr and not (tmp_path / "o").exists()


@pytest.mark.parametrize("config, words", [
    ('{"resample": 2, "size": {"height": 518, "width": 518}, "keep_aspect_ratio": true, "ensure_multiple_of": 14}',
     "resample 2"),
    ('{"size": {"height": 518}}', "size {'height': 518}"),
    ('{"ensure_multiple_of": 16}', "ensure_multiple_of 16"),
    ('{"size": ', "is not valid JSON"),
])
def test_a_preprocessor_config_edgedepth_cannot_follow_is_one_line(tiny_release, tmp_path, monkeypatch, capsys,
                                                                   config, words):
    """A dynamic file (outside a release) beside a preprocessor_config.json whose pixels edgedepth would not make the
    same way, or a broken one: one line, exit 2, no output folder; without a config, upstream's settings."""
    import shutil

    from edgedepth.cli import main

    folder = tmp_path / "m"
    folder.mkdir()
    shutil.copy(tiny_release / "onnx" / "model.onnx", folder / "model.onnx")
    (folder / "preprocessor_config.json").write_text(config)
    code = main(["predict", PHOTOS["portrait"], "--model", str(folder / "model.onnx"), "-o", str(tmp_path / "o")])
    assert_one_line_error(types.SimpleNamespace(returncode=code, stderr=capsys.readouterr().err), words)
    assert not (tmp_path / "o").exists()
    os.remove(folder / "preprocessor_config.json")
    _, sizes = _predict(monkeypatch, tmp_path, folder / "model.onnx", PHOTOS["portrait"])
    assert sizes == [(602, 518)]        # upstream's 518 rule for the 600x512 photo
