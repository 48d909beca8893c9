import json
import os

import numpy as np
import pytest
import torch

from edgedepth.checkpoint import DepthModule
from edgedepth.errors import EdgedepthError
from edgedepth.formats.tflite import describe
from edgedepth.runtimes.litert import LiteRTRunner
from edgedepth.formats import tflite as litert
from edgedepth.formats.tflite.transport import one_op_model
from conftest import THREADS, TINY_SIZE, assert_within_fp32_noise, rel_l2


def test_signature_and_io(tiny_plain_export):
    info = describe(tiny_plain_export["fp32"])
    assert info["signatures"] == [{"key": "serving_default", "inputs": ["args_0"], "outputs": ["output_0"]}]
    assert info["inputs"][0]["shape"] == [1, 3, *TINY_SIZE] and info["inputs"][0]["dtype"] == "float32"
    assert info["outputs"][0]["shape"] == [1, *TINY_SIZE] and info["outputs"][0]["dtype"] == "float32"


@pytest.mark.parametrize("threads", THREADS)
def test_fp32_matches_pytorch(tiny_plain_export, tiny_refs, tiny_input, threads):
    runner = LiteRTRunner(tiny_plain_export["fp32"], "cpu", threads=threads)
    out = runner.run(tiny_input)
    assert out.shape == tiny_refs["fp32"].shape
    assert_within_fp32_noise(out, tiny_refs["fp64"], tiny_refs["fp32"], what=f"LiteRT FP32, {threads} thread(s)")
    assert np.array_equal(runner.run(tiny_input), out)   # same compiled model, same input: the same bits


@pytest.mark.parametrize("threads", THREADS)
def test_int8_has_int8_weights_and_stays_close(tiny_plain_export, tiny_refs, tiny_input, threads):
    info = describe(tiny_plain_export["int8"])
    assert "int8" in info["weights"]
    assert all("weights int8" in k for k in info["fc_variants"])
    err = rel_l2(LiteRTRunner(tiny_plain_export["int8"], "cpu", threads=threads).run(tiny_input), tiny_refs["fp32"])
    # INT8 weight quantisation error (measured 2e-2..5e-2): 1e4 x FP32 noise, so a constant; 0.1 = "the same map"
    assert 0 < err < 0.1


def test_reexport_is_byte_identical(tmp_path, tiny_plain_export, tiny_ckpt):
    again = litert.export(DepthModule(tiny_ckpt.model), *TINY_SIZE, str(tmp_path), ("fp32",), plain=True)
    assert open(again["fp32"], "rb").read() == open(tiny_plain_export["fp32"], "rb").read()


class _Broken(torch.nn.Module):
    def forward(self, x):
        raise RuntimeError("boom while tracing")


def test_failed_export_leaves_no_file(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        litert.export(_Broken(), *TINY_SIZE, str(tmp_path), ("fp32", "int8"))
    assert os.listdir(tmp_path) == []


def test_failed_quantisation_leaves_no_file(tmp_path, tiny_plain_export, monkeypatch):
    import ai_edge_quantizer.quantizer as q

    def fail(self, *a, **k):
        raise RuntimeError("quantizer failed")

    monkeypatch.setattr(q.Quantizer, "quantize", fail)  # the quantizer failing is outside our control: simulate it
    with pytest.raises(EdgedepthError, match="cannot make the int8 file for this graph: quantizer failed"):
        litert.quantize_int8(tiny_plain_export["fp32"], str(tmp_path / "x_int8.tflite"))
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------------------------------------- uint8 input

@pytest.fixture(scope="module")
def u8_export(tmp_path_factory, tiny_ckpt):
    """synthetic-tiny 56x70, default rewrites, FP32 with a uint8 pixel input (``--input-dtype uint8``)."""
    from edgedepth import formats

    out = str(tmp_path_factory.mktemp("tiny_u8"))
    (f,) = formats.export(tiny_ckpt.model, *TINY_SIZE, out, precisions=("fp32",), input_dtype="uint8")
    return f.path


@pytest.fixture(scope="module")
def float_twin(tmp_path_factory, tiny_ckpt):
    """The same export with the float32 input (the file u8_export is compared with)."""
    from edgedepth import formats

    (f,) = formats.export(tiny_ckpt.model, *TINY_SIZE, str(tmp_path_factory.mktemp("tiny_f32")), precisions=("fp32",))
    return f.path


def test_uint8_input_file_matches_pytorch_on_the_same_pixels(u8_export, tiny_ckpt):
    """The graph's normalisation = edgedepth.preprocess up to float rounding: the uint8 file on the resized pixels is
    within the FP32 noise of a float64 PyTorch run on preprocess() of the same pixels, fully on the GPU accelerator
    (SwiftShader here), and refuses a normalised float tensor with one clear error."""
    from PIL import Image

    from edgedepth.formats.tflite import gpu_check
    from edgedepth.preprocess import pixels, preprocess
    from conftest import float64_reference, torch_fp32

    assert os.path.basename(u8_export).endswith("_fp32_u8in.tflite")
    info = describe(u8_export)
    assert info["inputs"][0]["dtype"] == "uint8" and info["inputs"][0]["shape"] == [1, 3, *TINY_SIZE]
    img = Image.fromarray(np.random.default_rng(3).integers(0, 256, (97, 61, 3), dtype=np.uint8))
    px, x = pixels(img, TINY_SIZE), preprocess(img, TINY_SIZE)
    assert px.dtype == np.uint8 and px.shape == (1, 3, *TINY_SIZE)
    runner = LiteRTRunner(u8_export, "cpu", threads=2)
    assert runner.input_dtype == "uint8"
    model = DepthModule(tiny_ckpt.model)
    assert_within_fp32_noise(runner.run(px), float64_reference(model, x), torch_fp32(model, x),
                             what="uint8-input file vs PyTorch on preprocess()")
    with pytest.raises(EdgedepthError, match="takes uint8 RGB pixels"):
        runner.run(x)
    g = gpu_check(u8_export)
    assert g["fully_delegated"], g


def test_predict_and_validate_feed_pixels_to_a_uint8_input_file(tmp_path, u8_export, float_twin):
    """predict, validate and bench give a uint8-input file pixels (validate's reference the normalised tensor): its
    parity vs PyTorch is within the FP32-noise factor of its float-input twin's, validated in the same run."""
    from conftest import FP32_NOISE_FACTOR
    from conftest import run_cli
    from edgedepth.samples import sample_photo

    r = run_cli("predict", sample_photo(), "--model", u8_export, "-o", tmp_path / "p", "--quiet")
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "p" / "grace_hopper_depth.png").exists()
    r = run_cli("validate", u8_export, float_twin, "--model", "synthetic-tiny", "--backend", "cpu", "--limit", "3",
                "--json", tmp_path / "v.json")
    assert r.returncode == 0, r.stderr[-2000:]
    u8, f32 = json.load(open(tmp_path / "v.json"))["results"]
    assert u8["status"] == f32["status"] == "ok" and u8["artifact"].endswith("_u8in.tflite"), (u8, f32)
    assert u8["metrics"]["pooled_rel_l2"] <= FP32_NOISE_FACTOR * f32["metrics"]["pooled_rel_l2"], (u8, f32)
    r = run_cli("bench", u8_export, float_twin, "--backend", "cpu", "--rounds", "1", "--warmup", "1", "--iters", "1",
                "--json", tmp_path / "b.json", "--quiet")   # bench gives the uint8 file pixels too
    assert r.returncode == 0, r.stderr[-2000:]
    assert len(json.load(open(tmp_path / "b.json"))["variants"]) == 2


def test_uint8_input_bad_combinations_are_one_line(tmp_path):
    from conftest import assert_one_line_error
    from conftest import run_cli

    for extra, says in ((["--precision", "fp16,int8"], "LiteRT float files"),
                        (["--target", "onnx"], "is for LiteRT files")):
        r = run_cli("export", "--model", "synthetic-tiny", "--size", "28x42", "--out", tmp_path / "o",
                    "--input-dtype", "uint8", *extra)
        assert_one_line_error(r, says)
    assert not (tmp_path / "o").exists() or not os.listdir(tmp_path / "o")


# --- a LiteRT GPU delegate bug, found on Depth Anything 3 (docs/spikes/depth-anything-3/bisect_FINDINGS.md) ----------

def _run_one_op(path, inputs, out_size: int, gpu: bool) -> np.ndarray:
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
    from ai_edge_litert.options import CpuOptions, GpuOptions, Options

    from edgedepth.runtimes.vulkan import ensure_vulkan_env

    ensure_vulkan_env()     # SwiftShader here, as LiteRTRunner does before a GPU model
    opts = (Options(hardware_accelerators=HA.GPU, gpu_options=GpuOptions(enforce_f32=True)) if gpu else
            Options(hardware_accelerators=HA.CPU, cpu_options=CpuOptions(num_threads=1)))
    cm = CompiledModel.from_file(str(path), options=opts)
    assert not gpu or cm.is_fully_accelerated()
    ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
    for buf, x in zip(ib, inputs):
        buf.write(np.ascontiguousarray(x, np.float32))
    cm.run_by_index(0, ib, ob)
    return ob[0].read(out_size, np.float32)


N, C = 17, 32


@pytest.mark.gpu
@pytest.mark.parametrize("op", ["MUL", "ADD"])
@pytest.mark.parametrize("second", ["constant [1,1,C]", "constant [1,N,C]", "runtime [1,N,C]"])
def test_gpu_hazard_rule_is_the_delegates(tmp_path, op, second):
    """``describe``'s gpu_hazards flags exactly the ops the GPU accelerator computes wrongly: an elementwise op whose
    first input [N, C] has a lower rank than its output [1, N, C] and whose second input is a constant (it returns row
    0 of the first input on every row).  With two runtime inputs (V2's residual ADDs) it is right and not flagged.
    A canary too: when LiteRT fixes the bug, the flagged case computes right and this test says so."""
    rng = np.random.default_rng(0)
    b_shape = [1, 1, C] if "[1,1,C]" in second else [1, N, C]
    a = rng.standard_normal((N, C)).astype(np.float32)
    b = (rng.standard_normal(b_shape) + 2).astype(np.float32)
    const = second.startswith("constant")
    path = tmp_path / "one_op.tflite"
    one_op_model(str(path), op, [N, C], b_shape, [1, N, C], b if const else None)
    expected = (np.multiply if op == "MUL" else np.add)(a, b).ravel()     # one IEEE op per element: exact
    inputs = [a] if const else [a, b]
    assert np.array_equal(_run_one_op(path, inputs, N * C, gpu=False), expected)
    gpu = _run_one_op(path, inputs, N * C, gpu=True)
    flagged = describe(str(path))["gpu_hazards"]["count"]
    assert flagged == int(const)
    if const:
        row0 = (np.multiply if op == "MUL" else np.add)(np.broadcast_to(a[:1], a.shape), b).ravel()
        assert np.array_equal(gpu, row0), "LiteRT's GPU now computes this right: relax formats.tflite._gpu_hazard"
    else:
        assert np.array_equal(gpu, expected)


def test_edgedepth_files_have_no_gpu_hazard(tiny_plain_export, u8_export, tiny_ckpt):
    """The plain conversion has the pattern twice per layer (each LayerScale MUL after a rank-2 FULLY_CONNECTED: its
    GPU output would be wrong even where it delegates); edgedepth's rewritten files have none (fold_layerscale)."""
    layers = tiny_ckpt.model.config.backbone_config.num_hidden_layers
    plain = describe(tiny_plain_export["fp32"])["gpu_hazards"]
    assert plain["count"] == 2 * layers and {e["op"] for e in plain["examples"]} == {"MUL"}
    assert describe(u8_export)["gpu_hazards"] == {"count": 0, "examples": []}
