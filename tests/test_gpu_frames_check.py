"""benchmarks/gpu_frames_check.py, the check behind "webcam frames on a real GPU are right" (issue 30): it must see a
GPU-made input that is not Pillow's and an output that is not FP32 LiteRT's, on frames shaped as webcam_fps.py saves
them."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from conftest import benchmark_module
from edgedepth import formats
from edgedepth.preprocess import model_input

FILE = "depth_anything_v2_small_28x42_fp32.tflite"


def test_check_sees_a_changed_input_value_and_a_reduced_precision_output(tiny_release, tmp_path):
    rgba = np.random.default_rng(3).integers(0, 256, (48, 64, 4), dtype=np.uint8)
    x = model_input(Image.fromarray(rgba[..., :3].copy()), (28, 42), "float32")
    runner = formats.open_artifact(str(tiny_release / FILE)).open_runner("cpu", 2)
    try:
        y = runner.run(x)
    finally:
        runner.close()
    frames = tmp_path / "frames"
    frames.mkdir()
    bad_x = x.copy()
    bad_x[0, 1, 5, 7] = np.nextafter(bad_x[0, 1, 5, 7], np.float32(np.inf))     # one value, one ULP
    bad_y = (y * np.float32(1 + 1e-3)).astype(np.float32)                       # an FP16-sized error
    for key, (xi, yi) in {"litertjs_28x42_gpu-frames": (x, y), "litertjs_28x42_no-overlap": (bad_x, bad_y)}.items():
        np.savez(frames / f"{key}.npz", input=xi, output=yi, gpu_frames=np.array(True), rgba=rgba)
    variants = {k: {"file": FILE, "adapter": "test"}
                for k in ("litertjs:28x42+gpu-frames", "litertjs:28x42+no-overlap")}
    (tmp_path / "webcam_fps_webgpu.json").write_text(json.dumps({"date": "d", "method": "m", "variants": variants}))
    out = tmp_path / "check.json"
    check = benchmark_module("gpu_frames_check")
    assert check.main([str(tiny_release), str(frames), "--out", str(out), "--device", "test"]) == 0
    good, bad = json.loads(out.read_text())["rows"]
    assert good["input_bit_identical_to_pillow"] and good["output_rel_l2_vs_litert_cpu"] == 0.0
    assert good["within_fp32_policy"]
    assert not bad["input_bit_identical_to_pillow"] and bad["input_values_differing"] == 1
    assert not bad["within_fp32_policy"], bad
