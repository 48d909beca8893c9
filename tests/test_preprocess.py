import numpy as np
import pytest
from PIL import Image

from edgedepth.errors import EdgedepthError
from edgedepth.preprocess import load_image, parse_size, preprocess
from edgedepth.samples import sample_photo
from conftest import FP32_NOISE_FACTOR

MEAN64 = np.array([0.485, 0.456, 0.406]).reshape(1, 3, 1, 1)
STD64 = np.array([0.229, 0.224, 0.225]).reshape(1, 3, 1, 1)


def hf_processor(h, w):
    from transformers.models.dpt.image_processing_pil_dpt import DPTImageProcessorPil

    # The pinned checkpoint's preprocessor_config, with the resize fixed to the export size.
    return DPTImageProcessorPil(do_resize=True, size={"height": h, "width": w}, keep_aspect_ratio=False,
                                ensure_multiple_of=1, resample=3, do_rescale=True, rescale_factor=1 / 255,
                                do_normalize=True, image_mean=[0.485, 0.456, 0.406], image_std=[0.229, 0.224, 0.225])


def assert_matches_processor(img, size):
    """Same resized pixels, then the same normalisation in float32 with a different op order: each within FP32 noise
    of the float64 value of those pixels, ours within FP32_NOISE_FACTOR x transformers' own max error (conftest
    policy; measured 6.0e-7 vs 3.6e-7)."""
    ref = hf_processor(*size)(images=img, return_tensors="np")["pixel_values"]
    mine = preprocess(img, size)
    assert mine.shape == ref.shape == (1, 3, *size) and mine.dtype == np.float32
    u8 = np.asarray(img.resize((size[1], size[0]), Image.Resampling.BICUBIC), np.float64).transpose(2, 0, 1)[None]
    exact = (u8 / 255 - MEAN64) / STD64
    hf_err, my_err = np.abs(ref - exact).max(), np.abs(mine - exact).max()
    assert 0 < hf_err and my_err <= FP32_NOISE_FACTOR * hf_err, (my_err, hf_err)


@pytest.mark.parametrize("size", [(518, 686), (224, 224), (392, 518)])
def test_matches_transformers_processor(size):
    assert_matches_processor(load_image(sample_photo()), size)


def test_matches_processor_on_random_pixels():
    rng = np.random.default_rng(0)
    assert_matches_processor(Image.fromarray(rng.integers(0, 256, (123, 301, 3), dtype=np.uint8)), (56, 70))


@pytest.mark.parametrize("text,expected", [("518x686", (518, 686)), ("224X224", (224, 224)), ("392×518", (392, 518))])
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["500x686", "518", "axb", "0x14", "-14x14", "518x686x3"])
def test_parse_size_rejects(text):
    with pytest.raises(EdgedepthError, match="size"):
        parse_size(text)


def _save(tmp_path, name, img, **kw):
    p = tmp_path / name
    img.save(p, **kw)
    return str(p)


def test_modes_become_8bit_rgb(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    gray16 = (np.arange(600, dtype=np.uint16).reshape(20, 30) * 100)
    cases = {
        "rgba.png": Image.fromarray(np.dstack([rgb, np.full((20, 30), 7, np.uint8)]), "RGBA"),
        "gray.png": Image.fromarray(rgb[..., 0], "L"),
        "gray16.png": Image.fromarray(gray16),
        "cmyk.jpg": Image.fromarray(rgb).convert("CMYK"),
        "palette.png": Image.fromarray(rgb).convert("P"),
    }
    for name, img in cases.items():
        out = load_image(_save(tmp_path, name, img))
        assert out.mode == "RGB" and out.size == (30, 20), name
    # RGBA: alpha dropped, colours kept
    assert np.array_equal(np.asarray(load_image(str(tmp_path / "rgba.png"))), rgb)
    # 16-bit: scaled to 8 bits, not clipped at 255
    g = np.asarray(load_image(str(tmp_path / "gray16.png")))[..., 0].astype(int)
    assert g.max() == round(int(gray16.max()) * 255 / 65535) and g.max() > 200


def test_exif_orientation_applied(tmp_path):
    img = Image.new("RGB", (40, 20), (255, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 CW on display
    p = _save(tmp_path, "rot.jpg", img, exif=exif.tobytes())
    assert load_image(p).size == (20, 40)


@pytest.mark.parametrize("content,match", [(b"", "empty"), (b"not an image at all", "not an image"),
                                           (None, "does not exist")])
def test_bad_images(tmp_path, content, match):
    p = tmp_path / "bad.jpg"
    if content is not None:
        p.write_bytes(content)
    with pytest.raises(EdgedepthError, match=match):
        load_image(str(p))


def test_truncated_image(tmp_path):
    data = open(sample_photo(), "rb").read()
    p = tmp_path / "cut.jpg"
    p.write_bytes(data[: len(data) // 3])
    with pytest.raises(EdgedepthError, match="corrupt or truncated"):
        load_image(str(p))


def test_denormalise_inverts_normalise_exactly():
    """bench feeds a uint8-input file ``denormalise(x)``: the pixels ``x`` was made from, every value 0..255."""
    from edgedepth.preprocess import denormalise, normalise

    px = np.arange(3 * 16 * 16, dtype=np.int64).reshape(1, 3, 16, 16).__mod__(256).astype(np.uint8)
    np.testing.assert_array_equal(denormalise(normalise(px)), px)
