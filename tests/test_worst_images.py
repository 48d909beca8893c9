"""Worst images of a validate run on a user's photo folder (``edgedepth.verify.worst``): their order, the side-by-side
picture of the worst one (a PNG four panels wide, written atomically, its rel-L2 validate's own value bit for bit),
the report block, and names that would put a picture outside its folder refused."""

from __future__ import annotations

import os

import numpy as np
import pytest
from PIL import Image

from conftest import TINY_SIZE
from edgedepth.errors import EdgedepthError
from edgedepth.images import folder_image_set, source_files
from edgedepth.preprocess import pixels
from edgedepth.verify import worst
from edgedepth.verify.reports import validate_markdown
from edgedepth.verify.validate import validate


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """A user's folder: three bundled photos cropped and shrunk (as a phone's would differ from the default set),
    and one deliberately odd image, flat grey."""
    folder = tmp_path_factory.mktemp("my_photos")
    for i, src in enumerate(source_files()[:3]):
        img = Image.open(src).convert("RGB")
        w, h = img.size
        img.crop((w // 8, h // 8, w - w // 8, h - h // 8)).resize((120, 90)).save(folder / f"photo{i}.png")
    Image.new("RGB", (100, 80), (128, 128, 128)).save(folder / "grey.png")
    return folder_image_set(str(folder))


@pytest.fixture(scope="module")
def validated(tiny_ckpt, tiny_plain_export, photos):
    """validate's CPU rows for the session's tiny FP32 and INT8 files on the folder, and what it ran with."""
    from edgedepth.checkpoint import DepthModule

    module = DepthModule(tiny_ckpt.model)
    files = [tiny_plain_export["fp32"], tiny_plain_export["int8"]]
    rows = validate(files, ["cpu"], module, photos)
    assert [r["status"] for r in rows] == ["ok", "ok"], rows
    return {"rows": rows, "module": module, "files": files, "items": photos}


def test_worst_images_order_and_ties():
    row = {"per_image_rel_l2": {"b": 0.2, "a": 0.2, "c": 0.5, "d": 0.1, "e": 0.2}}
    assert worst.worst_images(row, k=4) == [{"image": "c", "rel_l2": 0.5}, {"image": "a", "rel_l2": 0.2},
                                            {"image": "b", "rel_l2": 0.2}, {"image": "e", "rel_l2": 0.2}]
    assert worst.worst_images(dict(reversed(list(row.items()))), k=4) == worst.worst_images(row, k=4)


def test_worst_images_k_larger_than_the_set_and_no_values():
    row = {"per_image_rel_l2": {"x": 1e-7, "y": 3e-7}}
    assert worst.worst_images(row, k=10) == [{"image": "y", "rel_l2": 3e-7}, {"image": "x", "rel_l2": 1e-7}]
    assert worst.worst_images({"status": "compile_failed", "per_image_rel_l2": None}) == []
    with pytest.raises(EdgedepthError, match="k must be at least 1"):
        worst.worst_images(row, k=0)


def test_non_finite_values_are_the_worst():
    row = {"per_image_rel_l2": {"a": 0.5, "b": float("inf"), "c": float("nan")}}
    assert [w["image"] for w in worst.worst_images(row)] == ["c", "b", "a"]


def test_picture_of_the_worst_image(tmp_path, validated):
    """One PNG per file, four panels wide, nothing else left in the folder (no temp file), and its rel-L2 validate's
    per-image value exactly: the same pixels, the same PyTorch module and the same CPU runner and thread count."""
    summary = worst.worst_report(validated["rows"], validated["files"], validated["module"], validated["items"],
                                 str(tmp_path / "report"), k=3)
    names = [os.path.basename(f) for f in validated["files"]]
    assert list(summary) == names
    assert sorted(os.listdir(tmp_path / "report")) == sorted(f"{n}.worst.png" for n in names)
    h, w = TINY_SIZE
    for row in validated["rows"]:
        s = summary[row["artifact"]]
        assert s["worst"] == worst.worst_images(row, 3) and len(s["worst"]) == 3
        with Image.open(tmp_path / "report" / s["png"]) as png:
            assert png.format == "PNG"
            ratio = png.width / png.height
        assert 3 * w / h < ratio <= 4 * w / h, ratio      # four panels of the model's aspect side by side, plus titles
    by_id = {it.id: it for it in validated["items"]}
    for row, path in zip(validated["rows"], validated["files"]):
        image = worst.worst_images(row, 1)[0]["image"]
        from edgedepth.formats import open_artifact

        got = worst.side_by_side(open_artifact(path), validated["module"], by_id[image], TINY_SIZE,
                                 tmp_path / "again.png")
        assert got == {"image": image, "rel_l2": row["per_image_rel_l2"][image], "png": "again.png"}
    assert sorted(os.listdir(tmp_path)) == ["again.png", "report"]


def test_uint8_input_file_gets_the_resized_pixels(tmp_path, validated):
    """A file taking uint8 pixels is fed exactly ``preprocess.pixels`` of the image, as validate feeds it."""
    seen = []

    class Runner:
        input_dtype = "uint8"

        def run(self, x):
            seen.append(x)
            return np.ones((1, *TINY_SIZE), np.float32)

        def close(self):
            pass

    class Art:
        name = "u8in.tflite"

        def open_runner(self, backend="cpu", threads=2):
            assert backend == "cpu"
            return Runner()

    item = validated["items"][0]
    got = worst.side_by_side(Art(), validated["module"], item, TINY_SIZE, tmp_path / "u8.png")
    assert len(seen) == 1 and np.array_equal(seen[0], pixels(item.load(), TINY_SIZE))
    assert got["png"] == "u8.png" and np.isfinite(got["rel_l2"]) and os.listdir(tmp_path) == ["u8.png"]


def test_report_block(validated):
    """The Markdown gains the worst images and picture per file; without a "worst" section it is unchanged."""
    report = {"reference": {"name": "synthetic-tiny"}, "results": validated["rows"],
              "image_set": {"count": len(validated["items"]), "source": "my_photos", "sha256": "0" * 64}}
    plain = validate_markdown(report)
    summary = {r["artifact"]: {"worst": worst.worst_images(r, 2), "png": worst.png_name(r["artifact"])}
               for r in validated["rows"]}
    md = validate_markdown({**report, "worst": summary})
    assert md.startswith(plain + "\n") and "worst" not in plain.lower()
    for name, s in summary.items():
        line = next(l for l in md.splitlines() if l.startswith(f"- {name}:"))
        assert f"`{s['png']}`" in line and all(f"`{w['image']}`" in line for w in s["worst"])


@pytest.mark.parametrize("name", ["../model.tflite", "sub/model.tflite", "sub\\model.tflite", "..", ""])
def test_path_separator_in_artifact_name_refused(tmp_path, name):
    with pytest.raises(EdgedepthError, match="not a plain file name"):
        worst.png_name(name)
    row = {"artifact": name, "backend": "cpu", "per_image_rel_l2": {"a.png": 0.1}}
    with pytest.raises(EdgedepthError, match="not a plain file name"):
        worst.worst_report([row], [], None, [], str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()       # refused before anything is written
