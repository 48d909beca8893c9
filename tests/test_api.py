"""The Python API: the README's example runs as written (on synthetic-tiny), and bad input is one clear error."""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _readme_example() -> str:
    text = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    m = re.search(r"<!-- api-example:start -->\s*```python\n(.*?)```\s*<!-- api-example:end -->", text, re.S)
    assert m, "README.md has no api-example block"
    return m.group(1)


def test_readme_example_runs(tmp_path):
    from edgedepth.samples import sample_photo

    code = _readme_example().replace('"photo.jpg"', repr(sample_photo()))
    code += "\nimport numpy as np; np.save('depth.npy', depth)\n"
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    ops, delegated = r.stdout.strip().splitlines()[-1].split()
    assert int(ops) > 0 and delegated == "True"
    depth = np.load(tmp_path / "depth.npy")
    from PIL import Image

    w, h = Image.open(sample_photo()).size
    assert depth.shape == (h, w) and depth.dtype == np.float32 and np.isfinite(depth).all()


def test_open_bad_file_is_one_clear_error(tmp_path):
    import edgedepth
    from edgedepth.errors import EdgedepthError

    bad = tmp_path / "x.tflite"
    bad.write_bytes(b"not a model")
    with pytest.raises(EdgedepthError, match="not a TFLite model"):
        edgedepth.open(str(bad))
    with pytest.raises(EdgedepthError, match="not a model file of a known format"):
        edgedepth.open(str(tmp_path / "x.h5"))
    with pytest.raises(EdgedepthError, match=r"x.onnx' does not exist"):
        edgedepth.open(str(tmp_path / "x.onnx"))



def test_api_exports_and_predicts_with_a_uint8_input_file(tmp_path):
    """``edgedepth.export(input_dtype="uint8")`` writes the pixel-input file; ``Model.predict`` feeds it the resized
    pixels (not a normalised tensor): within FP32 noise of a float64 PyTorch run on the same photo (conftest policy)."""
    import edgedepth
    from conftest import assert_within_fp32_noise, float64_reference, torch_fp32
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.preprocess import load_image, preprocess
    from edgedepth.samples import sample_photo

    (u8,) = edgedepth.export("synthetic-tiny", size="56x70", out_dir=str(tmp_path), precisions=("fp32",),
                             input_dtype="uint8")
    assert u8.endswith("_fp32_u8in.tflite")
    y = edgedepth.open(u8).predict(sample_photo(), resize_back=False)
    x = preprocess(load_image(sample_photo()), (56, 70))
    model = DepthModule(load_checkpoint("synthetic-tiny", quiet=True).model)
    assert_within_fp32_noise(y[None], float64_reference(model, x), torch_fp32(model, x), what="API predict, uint8 file")
