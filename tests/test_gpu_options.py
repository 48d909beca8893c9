"""LiteRT GPU options (issue 30): the flags edgedepth sets are the measured choice, the crashing flag is refused, and
a canary notices when LiteRT fixes the crash (then re-measure: benchmarks/gpu_options.py)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from edgedepth.errors import EdgedepthError
from edgedepth.runtimes import litert
from edgedepth.runtimes.litert import GPU_OPTIONS, GPU_OPTIONS_REFUSED, LiteRTRunner

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "gpu_options.json")
TINY = "depth_anything_v2_small_28x42"


def test_runner_flags_are_the_measured_choice():
    choice = json.load(open(RESULTS))["choice"]
    assert GPU_OPTIONS == {f: True for f in choice["flags"]}, (GPU_OPTIONS, choice)


@pytest.mark.parametrize("flags, fragment", [({"constant_tensor_sharing": True}, "segmentation fault"),
                                             ({"no_such_flag": True}, "unknown GPU option")])
def test_refused_and_unknown_flags_are_one_line_errors(flags, fragment):
    with pytest.raises(EdgedepthError, match=fragment) as e:
        litert._gpu_flags(flags)
    assert "\n" not in str(e.value)


@pytest.mark.gpu
def test_constant_tensor_sharing_still_crashes(tiny_release):
    """Canary: ai-edge-litert 2.3.0 segfaults with constant_tensor_sharing (seen on SwiftShader and the H200). When
    this fails, LiteRT fixed it: measure the flag (benchmarks/gpu_options.py) and drop it from GPU_OPTIONS_REFUSED."""
    r = litert.gpu_flag_run(str(tiny_release / f"{TINY}_fp32.tflite"), "constant_tensor_sharing", timeout=600)
    assert r["returncode"] == -11 and not r["ran"], (
        f"constant_tensor_sharing no longer crashes (exit {r['returncode']}): re-measure it and update "
        f"GPU_OPTIONS_REFUSED ({GPU_OPTIONS_REFUSED})")


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_chosen_flags_keep_gpu_parity(tiny_release, precision):
    """With the chosen flags the GPU output stays as close to LiteRT CPU as without them: within 1.5x of the
    no-flag GPU's own distance (the bound the choice was made with), measured here on the same file and input."""
    path = str(tiny_release / f"{TINY}_{precision}.tflite")
    cpu = LiteRTRunner(path, backend="cpu")
    x = np.random.default_rng(1).standard_normal(cpu.input_shape, dtype=np.float32)
    ref = cpu.run(x)
    off = {k: False for k in GPU_OPTIONS}
    outs = {}
    for name, extra in (("chosen", None), ("none", off)):
        r = LiteRTRunner(path, backend="gpu", gpu_options=extra)
        outs[name] = r.run(x)
        r.close()
    rel = {k: float(np.linalg.norm(v - ref) / np.linalg.norm(ref)) for k, v in outs.items()}
    assert np.isfinite(outs["chosen"]).all()
    assert rel["chosen"] <= 1.5 * rel["none"] + np.finfo(np.float32).eps, rel
