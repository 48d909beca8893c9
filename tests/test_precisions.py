"""The LiteRT precision ladder (fp16, int4, static-int8, a16w8 beside fp32 and int8) on synthetic-tiny."""

import collections
import hashlib
import os

import numpy as np
import pytest
import torch

from edgedepth import formats
from edgedepth.errors import EdgedepthError
from edgedepth.formats import tflite
from edgedepth.formats.tflite import precisions as tp
from edgedepth.rewrites import prepare
from edgedepth.runtimes.litert import LiteRTRunner
from conftest import TINY_SIZE, assert_within_fp32_noise, float64_reference, rel_l2, run_cli, torch_fp32

QUANTISED = ("int8", "int4", "static-int8", "a16w8")


@pytest.fixture(scope="module")
def ladder(tmp_path_factory, tiny_ckpt):
    """Every LiteRT precision of synthetic-tiny at 56x70 (default rewrites), one export."""
    out = tmp_path_factory.mktemp("ladder")
    files = formats.export(tiny_ckpt.model, *TINY_SIZE, str(out), precisions=tflite.PRECISIONS)
    return {f.precision: f.path for f in files}


@pytest.fixture(scope="module")
def fp16_rounded_reference(tiny_ckpt, tiny_input):
    """The rewritten PyTorch module with every FC/conv weight (the 2-D+ ``*.weight`` parameters; not the position
    embedding) rounded to float16, as the fp16 file stores them: {"fp32", "fp64"} depth maps."""
    module, _ = prepare(tiny_ckpt.model, *TINY_SIZE)
    with torch.no_grad():
        for name, w in module.named_parameters():
            if w.ndim >= 2 and name.endswith(".weight"):
                w.copy_(w.half().float())
    return {"fp32": torch_fp32(module, tiny_input), "fp64": float64_reference(module, tiny_input)}


def test_every_precision_keeps_the_float_signature(ladder):
    assert set(ladder) == set(tflite.PRECISIONS)
    for p, path in ladder.items():
        assert os.path.basename(path) == tflite.file_name(*TINY_SIZE, p)
        info = tflite.describe(path)
        assert info["signatures"] == [{"key": "serving_default", "inputs": ["args_0"], "outputs": ["output_0"]}], p
        assert [(t["shape"], t["dtype"]) for t in info["inputs"] + info["outputs"]] == [
            ([1, 3, *TINY_SIZE], "float32"), ([1, *TINY_SIZE], "float32")], p
    assert os.path.basename(ladder["static-int8"]).endswith("_static_int8.tflite")


def _weights_by_dtype(path):
    """{dtype: Counter(sha256 of each constant's bytes as float16)} of the file's constant tensors."""
    from ai_edge_litert import schema_py_generated as S

    data = open(path, "rb").read()
    model = S.ModelT.InitFromPackedBuf(data, 0)
    out = collections.defaultdict(collections.Counter)
    for t in model.subgraphs[0].tensors:
        b = model.buffers[t.buffer]
        raw = data[b.offset:b.offset + b.size] if b.offset else (bytes(b.data) if b.data is not None else b"")
        if raw and t.type in (S.TensorType.FLOAT32, S.TensorType.FLOAT16):
            dt = np.float32 if t.type == S.TensorType.FLOAT32 else np.float16
            out[dt].update([hashlib.sha256(np.frombuffer(raw, dt).astype(np.float16).tobytes()).hexdigest()])
    return out


def test_fp16_weights_are_the_fp32_weights_rounded_once(ladder):
    """Exact: every float16 constant of the fp16 file is an FP32-file constant rounded to float16, one DEQUANTIZE each,
    and no other op changed."""
    w32, w16 = _weights_by_dtype(ladder["fp32"]), _weights_by_dtype(ladder["fp16"])
    assert w16[np.float16] and not (w16[np.float16] - w32[np.float32])
    info32, info16 = tflite.describe(ladder["fp32"]), tflite.describe(ladder["fp16"])
    hist = dict(info16["op_histogram"])
    assert hist.pop("DEQUANTIZE") == sum(w16[np.float16].values())
    assert hist == info32["op_histogram"]


def test_fp16_file_computes_the_rounded_weights_at_fp32_precision(ladder, fp16_rounded_reference, tiny_input):
    out = LiteRTRunner(ladder["fp16"], "cpu", threads=2).run(tiny_input)
    assert_within_fp32_noise(out, fp16_rounded_reference["fp64"], fp16_rounded_reference["fp32"],
                             what="fp16-weight file on LiteRT CPU vs its fp16-rounded PyTorch module")


@pytest.mark.parametrize("precision", QUANTISED)
def test_quantised_files_stay_close(ladder, tiny_refs, tiny_input, precision):
    info = tflite.describe(ladder[precision])
    assert "int8" in info["weights"]
    err = rel_l2(LiteRTRunner(ladder[precision], "cpu", threads=2).run(tiny_input), tiny_refs["fp32"])
    # quantisation error (measured 1e-2..6e-2 on tiny): far above FP32 noise, so a constant; 0.5 = "the same map"
    assert 0 < err < 0.5, (precision, err)


def test_sizes_follow_the_ladder(ladder):
    size = {p: os.path.getsize(path) for p, path in ladder.items()}
    assert size["fp32"] > size["fp16"] > size["int8"] > size["int4"]


def test_static_files_quantise_activations(ladder):
    hist = tflite.describe(ladder["a16w8"])["op_histogram"]
    assert hist.get("QUANTIZE") == 1 and hist.get("DEQUANTIZE") == 1       # all int16 inside; float32 in, float32 out
    hist = tflite.describe(ladder["static-int8"])["op_histogram"]
    n = hist["FULLY_CONNECTED"] + hist["CONV_2D"]      # int8 activations into every FC / CONV, float between them
    assert hist.get("QUANTIZE", 0) >= n // 2 and hist.get("DEQUANTIZE", 0) >= n // 2


@pytest.mark.gpu
@pytest.mark.parametrize("precision", ("fp16", "int8", "static-int8"))
def test_gpu_fully_delegated(ladder, precision, tiny_input, fp16_rounded_reference):
    g = tflite.gpu_check(ladder[precision], x=tiny_input)
    assert g["fully_delegated"] and g["validation_errors"] == 0, (g["error"], g["validation_error"])
    if precision == "fp16":     # FP32 enforced: the GPU computes the fp16 weights in FP32
        assert_within_fp32_noise(g["output"], fp16_rounded_reference["fp64"], fp16_rounded_reference["fp32"],
                                 factor=8.0, what="fp16-weight file on the GPU (FP32 enforced)")


@pytest.mark.gpu
def test_canary_gpu_all_ops_static_int8_compiles_but_computes_garbage(ladder, tiny_input, tmp_path):
    """Upstream bug (LiteRT 2.3.0 WebGPU): ``static_wi8_ai8`` on every op reports full delegation, but a generated
    shader does not compile ("Error while parsing WGSL: ... cannot assign 'vec4<f32>' to 'vec4<i32>'"), its pipeline
    is invalid and the output is unrelated to the CPU's.  gpu_check reports the validation errors, so no caller takes
    it for a working GPU file (the shipped static-int8 quantises FC/CONV only and runs)."""
    path = str(tmp_path / "all.tflite")
    tp.quantize(ladder["fp32"], path, tp.Precision("static-int8-all", "test", tp.static_recipe(8), calibrated=True),
                calibration=tp.calibration_inputs(*TINY_SIZE))
    g = tflite.gpu_check(path, x=tiny_input)
    y_cpu = LiteRTRunner(path, "cpu", threads=2).run(tiny_input)
    assert g["fully_delegated"] and g["validation_errors"] > 0 and "WGSL" in g["validation_error"]
    assert rel_l2(g["output"], y_cpu) > 0.5


@pytest.mark.gpu
def test_canary_gpu_rejects_int16_activations(ladder):
    """Upstream limit: LiteRT's GPU delegate has no INT16 tensors (a16w8 runs on the CPU only)."""
    g = tflite.gpu_check(ladder["a16w8"])
    assert not g["fully_delegated"] and "INT16" in " ".join(g["unsupported"].values())


@pytest.mark.gpu
def test_canary_gpu_blockwise_int4_fc_crashes(ladder):
    """Upstream bug (LiteRT 2.3.0): compiling a blockwise-int4 FULLY_CONNECTED on the GPU accelerator aborts the
    process ("double free or corruption").  When this starts passing compilation, the int4 GPU row can be filled."""
    g = tflite.gpu_check(ladder["int4"])
    assert not g["fully_delegated"] and "crashed" in (g["error"] or "")


def test_failed_recipe_is_one_line_and_leaves_nothing(tmp_path, ladder, monkeypatch):
    """A recipe the quantizer cannot apply (4-bit dynamic TRANSPOSE_CONV) -> one-line EdgedepthError, no file."""
    def int4_transpose_conv():
        from ai_edge_quantizer import qtyping, recipe

        return recipe.dynamic_wi4c_afp32(operation_name=qtyping.TFLOperationName.CONV_2D_TRANSPOSE)

    monkeypatch.setitem(tp.LADDER, "int4", tp.Precision("int4", "test", int4_transpose_conv))
    with pytest.raises(EdgedepthError, match=r"cannot make the int4 file for this graph: .*CONV_2D_TRANSPOSE") as e:
        tp.quantize(ladder["fp32"], str(tmp_path / "x.tflite"), "int4")
    assert "\n" not in str(e.value)
    assert os.listdir(tmp_path) == []


def test_cli_unknown_precision(tmp_path):
    r = run_cli("export", "--model", "synthetic-tiny", "--size", "56x70", "--out", tmp_path, "--precision", "int3")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "int3" in r.stderr and "static-int8" in r.stderr
    assert os.listdir(tmp_path) == []


def test_calibration_inputs_are_the_bundled_photos():
    xs = tp.calibration_inputs(*TINY_SIZE)
    assert len(xs) == 11 and all(x.shape == (1, 3, *TINY_SIZE) and x.dtype == np.float32 for x in xs)


def test_timing_twins_of_fp16_and_int4_files(tmp_path, ladder, tiny_input):
    """edgedepth.formats.tflite.transport carries the ladder to the H200: fp16 weights stripped and refilled as float16, int4 weights
    zeroed and refilled; graph, op list and weight types unchanged, and the twin runs."""
    from edgedepth.formats.tflite import transport

    stripped, twin16 = tmp_path / "s.tflite", tmp_path / "t16.tflite"
    n = transport.strip(ladder["fp16"], str(stripped), min_bytes=256)
    assert n > 10 and transport.fill_float(str(stripped), str(twin16)) == n
    zeroed, twin4 = tmp_path / "z.tflite", tmp_path / "t4.tflite"
    assert transport.zero_int8(ladder["int4"], str(zeroed)) == transport.fill_int8(str(zeroed), str(twin4)) > 10
    for orig, twin in ((ladder["fp16"], twin16), (ladder["int4"], twin4)):
        a, b = tflite.describe(orig), tflite.describe(str(twin))
        assert a["op_histogram"] == b["op_histogram"] and a["weights"] == b["weights"]
        assert np.all(np.isfinite(LiteRTRunner(str(twin)).run(tiny_input)))
