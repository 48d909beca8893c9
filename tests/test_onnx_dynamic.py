"""ONNX files with dynamic height and width (``export --target onnx --dynamic-size``; the release's ``onnx/``): what
transformers.js needs, since its preprocessing picks a size per photo (518 px, aspect ratio kept, multiples of 14).

synthetic-tiny, exported once at a recorded size of 56x70 and run at several sizes: the native 37x37 grid (518x518,
where transformers skips the position-embedding resize), landscape, portrait and one patch row.  Tolerances as in
tests/test_onnx.py: FP32 within FP32 noise of a float64 run of the original model at the same size; FP16 within
FP16_EMULATION_FACTOR of the FP16 emulation's error; INT8 by the suite's INT8 constant.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pytest

from conftest import OTHER_KERNELS, TINY_SIZE, assert_one_line_error, assert_within_fp32_noise, float64_reference
from conftest import rel_l2, run_cli, torch_fp32
from edgedepth import formats, runtimes
from edgedepth.errors import EdgedepthError
from edgedepth.formats import onnx as ox
from test_onnx import FP16_EMULATION_FACTOR, INT8_REL_L2_MAX, QUANTISED_MIN_RATIO

PRECISIONS = ("fp32", "fp16", "int8")
SIZES = [(518, 518), (56, 70), (98, 42), (14, 56), (224, 308)]    # (H, W); 518x518 = the checkpoint's own grid
NAMES = {p: f"depth_anything_v2_small_56x70_{p}_dynamic.onnx" for p in PRECISIONS}


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def dyn(tiny_ckpt, tmp_path_factory):
    out = tmp_path_factory.mktemp("onnx_dyn")
    files = formats.export(tiny_ckpt.model, *TINY_SIZE, str(out), target_name="onnx", precisions=PRECISIONS,
                           dynamic_size=True)
    return {"dir": out, **{f.precision: f for f in files}}


@pytest.fixture(scope="module")
def photos():
    """A real photo preprocessed at every size of SIZES."""
    from edgedepth.images import default_image_set
    from edgedepth.preprocess import preprocess

    img = next(i for i in default_image_set() if i.id == "astronaut/full").load()
    return {hw: preprocess(img, hw) for hw in SIZES}


def test_signature_names_and_recorded_size(dyn):
    import onnx

    assert sorted(os.listdir(dyn["dir"])) == sorted(NAMES.values())
    for p in PRECISIONS:
        info = ox.describe(dyn[p].path)
        assert info["inputs"] == [{"name": "pixel_values", "shape": [1, 3, "height", "width"], "dtype": "float32"}]
        assert info["outputs"] == [{"name": "predicted_depth", "shape": [1, "height", "width"], "dtype": "float32"}]
        assert info["dynamic"] is True and info["size"] == list(TINY_SIZE)
        meta = {m.key: m.value for m in onnx.load(dyn[p].path).metadata_props}
        assert meta[ox.SIZE_KEY] == "56x70"     # (+ "onnx.infer" written by the INT8 quantizer)
        art = formats.open_artifact(dyn[p].path)
        assert art.size == TINY_SIZE and art.input_shape == (1, 3, *TINY_SIZE)
        assert "dynamic height and width" in art.format_text()
    # no size-specific rewrite: the position embedding is resized in the graph, the head's size is symbolic
    assert dyn["fp32"].rewrites == list(ox.DYNAMIC_REWRITES) and "freeze_position_embedding" not in ox.DYNAMIC_REWRITES


def test_bytes_do_not_depend_on_the_recorded_size(dyn, tiny_ckpt, tmp_path):
    """Traced at TRACE_SIZE whatever the size: a file recording 28x42 differs only in that metadata value."""
    import onnx

    other = formats.export(tiny_ckpt.model, 28, 42, str(tmp_path), target_name="onnx", precisions=["fp32"],
                           dynamic_size=True)[0]
    a, b = onnx.load(dyn["fp32"].path), onnx.load(other.path)
    assert [m.value for m in b.metadata_props] == ["28x42"]
    del a.metadata_props[:], b.metadata_props[:]
    assert a.SerializeToString() == b.SerializeToString()


@pytest.mark.slow
def test_export_under_other_kernels_is_byte_identical(dyn, tmp_path):
    r = run_cli("export", "--target", "onnx", "--dynamic-size", "--model", "synthetic-tiny", "--size", "56x70",
                "--out", tmp_path, "--quiet", env={**os.environ, **OTHER_KERNELS})
    assert r.returncode == 0, r.stderr[-3000:]
    assert {p: _sha(tmp_path / NAMES[p]) for p in PRECISIONS} == {p: _sha(dyn[p].path) for p in PRECISIONS}


@pytest.mark.parametrize("hw", SIZES, ids=lambda hw: f"{hw[0]}x{hw[1]}")
@pytest.mark.parametrize("backend", [b for b in ox.BACKENDS if not runtimes.BACKENDS[b].reduced_precision])
def test_fp32_at_every_size_within_fp32_noise(dyn, tiny_ckpt, photos, backend, hw):
    """One file, every size: the map has the input's size and is within FP32 noise of the original model there."""
    x = photos[hw]
    r = ox.open_runner(dyn["fp32"].path, backend, 2, size=hw)
    try:
        out = r.run(x)
    finally:
        r.close()
    assert r.size == hw and out.shape == (1, *hw)
    assert_within_fp32_noise(out, float64_reference(tiny_ckpt.model, x), torch_fp32(tiny_ckpt.model, x),
                             what=f"dynamic ONNX FP32 on {backend} at {hw[0]}x{hw[1]}")


@pytest.mark.parametrize("hw", [(518, 518), (98, 42)], ids=lambda hw: f"{hw[0]}x{hw[1]}")
def test_fp16_and_int8_at_other_sizes(dyn, tiny_ckpt, photos, hw):
    """FP16 (ORT) within FP16_EMULATION_FACTOR x the FP16 emulation's error of its own module at that size; INT8 under
    the suite's INT8 bound; both measurably off FP32 (they are quantised)."""
    from edgedepth.rewrites import prepare
    from edgedepth.verify import fp16_emulation as emulate

    x = photos[hw]
    y64, y32 = float64_reference(tiny_ckpt.model, x), torch_fp32(tiny_ckpt.model, x)
    noise = rel_l2(y32, y64)
    m16 = prepare(tiny_ckpt.model, *hw, dyn["fp16"].rewrites)[0].model
    emulated = rel_l2(emulate.emulate_fp16(m16, [x])[0], y64)
    outs = {}
    for p in ("fp16", "int8"):
        r = ox.open_runner(dyn[p].path, "cpu", 2, size=hw)
        outs[p] = r.run(x)
        r.close()
    assert rel_l2(outs["fp16"], y64) <= FP16_EMULATION_FACTOR * emulated, (rel_l2(outs["fp16"], y64), emulated)
    assert QUANTISED_MIN_RATIO * noise < rel_l2(outs["int8"], y32) < INT8_REL_L2_MAX
    assert rel_l2(outs["fp16"], y64) > QUANTISED_MIN_RATIO * noise


def test_without_symbolic_output_size_the_export_refuses(tiny_ckpt):
    """transformers' head fixes the map's size with int(): traced dynamically, every input would get a map of the
    trace size (measured: a silently wrong file).  The exporter checks the output's dims and refuses."""
    from edgedepth.rewrites import prepare

    module, _ = prepare(tiny_ckpt.model, *TINY_SIZE, ["drop_attention_mask"])
    with pytest.raises(EdgedepthError, match="a size was fixed"):
        ox.to_model_proto(module, *TINY_SIZE, dynamic=True)


def test_a_static_file_runs_at_its_own_size_only(tiny_ckpt, tmp_path, dyn):
    static = formats.export(tiny_ckpt.model, *TINY_SIZE, str(tmp_path), target_name="onnx", precisions=["fp32"])[0]
    with pytest.raises(EdgedepthError, match="56x70 only"):
        ox.open_runner(static.path, "cpu", 2, size=(98, 42))
    with pytest.raises(EdgedepthError, match="multiples of 14"):
        ox.open_runner(dyn["fp32"].path, "cpu", 2, size=(100, 42))
    r = ox.open_runner(dyn["fp32"].path, "cpu", 2, size=(98, 42))
    with pytest.raises(EdgedepthError, match="does not match"):      # the runner takes the size it was opened at
        r.run(np.zeros((1, 3, *TINY_SIZE), np.float32))


def test_freeze_position_embedding_cannot_go_into_a_dynamic_file(tiny_ckpt, tmp_path):
    with pytest.raises(EdgedepthError, match="fixes one input size"):
        formats.export(tiny_ckpt.model, *TINY_SIZE, str(tmp_path), target_name="onnx", precisions=["fp32"],
                       rewrites=["drop_attention_mask", "freeze_position_embedding"], dynamic_size=True)
    assert os.listdir(tmp_path) == []


def test_dynamic_size_is_for_onnx_only(tmp_path):
    r = run_cli("export", "--target", "litert", "--dynamic-size", "--model", "synthetic-tiny", "--size", "56x70",
                "--out", tmp_path / "o", "--quiet")
    assert_one_line_error(r, "--dynamic-size", "ONNX")
    assert not (tmp_path / "o").exists()


def test_predict_and_inspect_a_dynamic_file(dyn, tmp_path):
    """predict runs a dynamic file (each photo at upstream's size for it: tests/test_predict_dynamic.py); inspect
    says so, and names the size validate and bench run it at."""
    from edgedepth.samples import sample_photo

    r = run_cli("predict", sample_photo(), "--model", dyn["fp32"].path, "-o", tmp_path / "o", "--raw", "--quiet")
    assert r.returncode == 0, r.stderr
    raw = [f for f in os.listdir(tmp_path / "o") if f.endswith(".npy")]
    assert raw and np.load(tmp_path / "o" / raw[0]).shape[-2:] != ()
    r = run_cli("inspect", dyn["fp32"].path, "--no-gpu")
    assert r.returncode == 0 and "validate and bench run it at 56x70" in r.stdout, r.stdout + r.stderr


def test_predict_size_chooses_a_dynamic_files_size_only(dyn, tmp_path, tiny_ckpt):
    """``predict --size`` runs a dynamic file at that size; a file of a fixed size refuses another (it was ignored)."""
    from edgedepth.samples import sample_photo

    r = run_cli("predict", sample_photo(), "--model", dyn["fp32"].path, "--size", "98x42", "-o", tmp_path / "o",
                "--quiet")
    assert r.returncode == 0, r.stderr
    static = formats.export(tiny_ckpt.model, *TINY_SIZE, str(tmp_path / "s"), target_name="onnx",
                            precisions=["fp32"])[0]
    r = run_cli("predict", sample_photo(), "--model", static.path, "--size", "98x42", "-o", tmp_path / "o2", "--quiet")
    assert_one_line_error(r, "takes 56x70 only", "--dynamic-size")
    assert not (tmp_path / "o2").exists()
