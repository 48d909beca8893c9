"""Bad input: one line naming the problem, non-zero exit, no traceback, no half-written output."""

import os
import shutil

import numpy as np
import pytest
from PIL import Image

from edgedepth.samples import sample_photo
from conftest import assert_one_line_error, run_cli


@pytest.fixture()
def photo(tmp_path):
    p = tmp_path / "photo.jpg"
    shutil.copy(sample_photo(), p)
    return p


def test_missing_tflite(tmp_path, photo):
    assert_one_line_error(run_cli("predict", photo, "--model", tmp_path / "nope.tflite", "-o", tmp_path / "o"),
                          "does not exist")
    assert_one_line_error(run_cli("inspect", tmp_path / "nope.tflite"), "does not exist")


def test_corrupt_tflite(tmp_path, photo):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(b"\x00" * 4096)
    assert_one_line_error(run_cli("inspect", bad), "not a TFLite model")
    assert_one_line_error(run_cli("predict", photo, "--model", bad, "-o", tmp_path / "o"), "not a TFLite model")
    empty = tmp_path / "empty.tflite"
    empty.write_bytes(b"")
    assert_one_line_error(run_cli("inspect", empty), "empty")


def test_truncated_tflite(tmp_path, photo, tiny_plain_export):
    data = open(tiny_plain_export["fp32"], "rb").read()
    for cut in (len(data) // 2, len(data) - 1000, 64):
        t = tmp_path / f"cut{cut}.tflite"
        t.write_bytes(data[:cut])
        assert_one_line_error(run_cli("inspect", t, "--no-gpu"), "truncated")
        assert_one_line_error(run_cli("predict", photo, "--model", t, "-o", tmp_path / "o"), "truncated")


def test_bad_images(tmp_path, tiny_plain_export):
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    text = tmp_path / "notes.jpg"
    text.write_text("hello")
    m = tiny_plain_export["fp32"]
    assert_one_line_error(run_cli("predict", empty, "--model", m, "-o", tmp_path / "o"), "empty")
    assert_one_line_error(run_cli("predict", text, "--model", m, "-o", tmp_path / "o"), "not an image")
    assert_one_line_error(run_cli("predict", tmp_path / "missing.png", "--model", m, "-o", tmp_path / "o"),
                          "does not exist")
    assert not (tmp_path / "o").exists() or os.listdir(tmp_path / "o") == []


def test_unwritable_output(tmp_path, photo, tiny_plain_export):
    m = tiny_plain_export["fp32"]
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert_one_line_error(run_cli("predict", photo, "--model", m, "-o", afile), "not a folder")
    assert_one_line_error(run_cli("predict", photo, "--model", m, "-o", afile / "sub"), "cannot create")
    assert_one_line_error(run_cli("predict", photo, "--model", m, "-o", "/sys/edgedepth-out"), "cannot create")
    assert_one_line_error(run_cli("export", "--model", "synthetic-tiny", "--size", "28x28", "--out", afile),
                          "not a folder")


@pytest.mark.parametrize("size", ["500x686", "518", "big"])
def test_wrong_size(tmp_path, size):
    assert_one_line_error(run_cli("export", "--model", "synthetic-tiny", "--size", size, "--out", tmp_path),
                          "--size", "14")
    assert os.listdir(tmp_path) == []


def test_wrong_precision(tmp_path):
    assert_one_line_error(run_cli("export", "--model", "synthetic-tiny", "--precision", "fp12", "--out", tmp_path),
                          "--precision")


def test_odd_images_work(tmp_path, tiny_plain_export):
    """16-bit, RGBA, grayscale, CMYK and EXIF-rotated photos are converted, not rejected; output keeps photo size."""
    rgb = np.asarray(Image.open(sample_photo()).convert("RGB").resize((60, 40)))
    paths = []
    for name, img, kw in [
        ("rgba.png", Image.fromarray(np.dstack([rgb, np.full(rgb.shape[:2], 128, np.uint8)]), "RGBA"), {}),
        ("gray.png", Image.fromarray(rgb[..., 1]), {}),
        ("gray16.png", Image.fromarray(rgb[..., 1].astype(np.uint16) * 257), {}),
        ("cmyk.jpg", Image.fromarray(rgb).convert("CMYK"), {}),
    ]:
        p = tmp_path / name
        img.save(p, **kw)
        paths.append(p)
    exif = Image.Exif()
    exif[0x0112] = 8
    rot = tmp_path / "rotated.jpg"
    Image.fromarray(rgb).save(rot, exif=exif.tobytes())
    paths.append(rot)
    out = tmp_path / "out"
    r = run_cli("predict", *paths, "--model", tiny_plain_export["fp32"], "-o", out, "--raw", "--quiet")
    assert r.returncode == 0, r.stderr
    for p in paths:
        stem = p.stem
        png = Image.open(out / f"{stem}_depth.png")
        expected = (40, 60) if stem == "rotated" else (60, 40)
        assert png.size == expected and png.mode == "RGB", stem
        raw = np.load(out / f"{stem}_depth.npy")
        assert raw.shape == expected[::-1] and np.isfinite(raw).all()
        d16 = Image.open(out / f"{stem}_depth16.png")
        assert np.asarray(d16).dtype in (np.uint16, np.int32) and np.asarray(d16).max() > 1000
        assert len(np.unique(np.asarray(png).reshape(-1, 3), axis=0)) > 10  # a real map, not a flat image
