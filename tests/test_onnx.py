"""ONNX target: export (FP32 / FP16 / dynamic INT8), byte reproducibility, parity on ONNX Runtime and OpenVINO, the
inspect / predict / validate / bench CLI on .onnx files, and one-line errors for bad files and missing runtimes.

synthetic-tiny at 56x70 (each export ~15 s on 2 cores).  One export (the three files) is shared by the module; the
same model is exported again in this process and (slow) in a child with other CPU kernels: the same bytes.

Tolerances (tests/README.md): FP32 files within FP32 noise of a float64 run (``assert_within_fp32_noise``); the FP16
file bounded by what FP16 rounding does to the same model, measured here (see the FP16 tests); INT8 by the constant
the other INT8 tests use, far above FP32 noise; re-exports byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import THREADS, TINY_SIZE, assert_within_fp32_noise, float64_reference, rel_l2, run_cli, torch_fp32
from conftest import OTHER_KERNELS  # PyTorch scalar kernels, oneDNN SSE4.1, one thread
from edgedepth import formats
from edgedepth.cli import main
from edgedepth.errors import EdgedepthError
from edgedepth.formats import onnx as ox
from edgedepth.samples import sample_photo

PRECISIONS = ("fp32", "fp16", "int8")
NAMES = {"fp32": "depth_anything_v2_small_56x70_fp32.onnx", "fp16": "depth_anything_v2_small_56x70_fp16.onnx",
         "int8": "depth_anything_v2_small_56x70_int8.onnx"}
PLAIN_NAMES = {p: n.replace(".onnx", "_plain.onnx") for p, n in NAMES.items()}
PHOTO_ID = "astronaut/full"           # a view of the default image set (edgedepth.images)
BACKENDS = ("cpu", "openvino")        # ONNX Runtime CPU EP, OpenVINO CPU plugin
# Dynamic INT8 (int8 weights, uint8 activations per call; measured rel-L2 1.2e-2..1.8e-2 vs PyTorch FP32 on
# ORT and OpenVINO): quantisation error, 4e4 x FP32 noise, so a constant -- the one the LiteRT and ExecuTorch INT8
# tests use (0.1 = "the same map").
INT8_REL_L2_MAX = 0.1
# A file that claims FP16 or INT8 must be measurably off FP32: its error at least this many times PyTorch FP32's own
# (measured >= 900x for FP16, >= 3e4x for INT8; README: a real defect is >= 100x, and so is real FP16 rounding).
QUANTISED_MIN_RATIO = 100.0
BF16_FACTOR = 2.0
# ORT FP16 error / FP16 emulation's error, same module (measured 0.52-0.96 over 10 photos): test_fp16_onnxruntime.
FP16_EMULATION_FACTOR = 2.0


def _sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _one_line_error(capfd, rc, *fragments) -> str:
    """rc 2 and stderr is exactly one line, 'edgedepth: error: ...', holding every fragment; returns it."""
    err = capfd.readouterr().err
    lines = err.strip().splitlines()
    assert rc == 2, err
    assert len(lines) == 1 and lines[0].startswith("edgedepth: error:"), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def _graphs(model):
    """The main graph and every subgraph (If/Loop bodies) of an ONNX model."""
    todo = [model.graph]
    while todo:
        g = todo.pop()
        yield g
        for n in g.node:
            for a in n.attribute:
                if a.HasField("g"):
                    todo.append(a.g)
                todo.extend(a.graphs)


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def onnx_export(tiny_ckpt, tmp_path_factory):
    """synthetic-tiny 56x70 -> FP32, FP16, INT8 (default rewrites): {"dir", precision: Exported}."""
    out = tmp_path_factory.mktemp("onnx")
    files = formats.export(tiny_ckpt.model, *TINY_SIZE, str(out), target_name="onnx", precisions=PRECISIONS)
    return {"dir": out, **{f.precision: f for f in files}}


@pytest.fixture(scope="module")
def photo(tiny_ckpt):
    """A real photo preprocessed to 56x70 and the original HF model (SDPA, no rewrites) on it: {"x", "fp32", "fp64",
    "noise" (PyTorch FP32's own rel-L2 vs float64)}."""
    from edgedepth.images import default_image_set
    from edgedepth.preprocess import preprocess

    item = next(i for i in default_image_set() if i.id == PHOTO_ID)
    x = preprocess(item.load(), TINY_SIZE)
    y32, y64 = torch_fp32(tiny_ckpt.model, x), float64_reference(tiny_ckpt.model, x)
    return {"x": x, "fp32": y32, "fp64": y64, "noise": rel_l2(y32, y64)}


@pytest.fixture(scope="module")
def fp16_refs(tiny_ckpt, onnx_export, photo):
    """The module the FP16 file is traced from (the rewrites its export reports: the defaults, plus fp16_safe where
    that changed something) on the photo: "emulated" = FP16 emulation (weights and every op output rounded to FP16,
    FP32 inside ops); "w16_fp32" / "w16_fp64" = its FP16-rounded weights computed in FP32 / float64 (input not
    rounded)."""
    from edgedepth.rewrites import prepare
    from edgedepth.verify import fp16_emulation as emulate

    m16 = prepare(tiny_ckpt.model, *TINY_SIZE, onnx_export["fp16"].rewrites)[0].model
    w16 = emulate.fp16_weights(m16)
    x = photo["x"]
    return {"emulated": emulate.emulate_fp16(m16, [x])[0], "w16_fp32": torch_fp32(w16, x),
            "w16_fp64": float64_reference(w16, x)}


def _run(path, backend, threads, x):
    """(runner, output, output of a second call) on a fresh runner, closed afterwards."""
    r = ox.open_runner(str(path), backend, threads)
    try:
        return r, r.run(x), r.run(x)
    finally:
        r.close()


# ------------------------------------------------------------------------------------------------ the files


def test_export_writes_the_three_files(onnx_export):
    assert sorted(os.listdir(onnx_export["dir"])) == sorted(NAMES.values())   # no temporary or hidden file left
    for p in PRECISIONS:
        f = onnx_export[p]
        assert (os.path.basename(f.path), f.format, f.precision, f.backend) == (NAMES[p], "onnx", p, None)
        assert ox.file_name(*TINY_SIZE, p) == NAMES[p]
    size = {p: os.path.getsize(onnx_export[p].path) for p in PRECISIONS}
    assert size["int8"] < size["fp16"] < size["fp32"]                            # measured 0.2 / 0.3 / 0.6 MB


@pytest.mark.parametrize("precision", PRECISIONS)
def test_signature_and_describe(onnx_export, precision):
    path = onnx_export[precision].path
    info = ox.describe(path)
    assert set(info) == {"path", "bytes", "format", "opset", "producer", "inputs", "outputs", "ops", "op_histogram",
                         "weights", "precision", "size", "dynamic"}
    assert info["size"] == list(TINY_SIZE) and info["dynamic"] is False
    assert info["inputs"] == [{"name": "pixel_values", "shape": [1, 3, *TINY_SIZE], "dtype": "float32"}]
    assert info["outputs"] == [{"name": "predicted_depth", "shape": [1, *TINY_SIZE], "dtype": "float32"}]
    assert info["precision"] == precision
    assert info["bytes"] == os.path.getsize(path)
    assert info["opset"]["ai.onnx"] == ox.OPSET == 18 and info["format"].endswith("opset 18")
    assert info["ops"] == sum(info["op_histogram"].values()) > 100 and all(v > 0 for v in info["op_histogram"].values())
    w, hist = info["weights"], info["op_histogram"]
    quant_ops = {"MatMulInteger", "ConvInteger", "DynamicQuantizeLinear"} & set(hist)
    if precision == "fp32":
        assert max(w, key=w.get) == "float32" and "float16" not in w and not quant_ops
    elif precision == "fp16":
        assert w["float16"] > 100 * w.get("float32", 0) and not quant_ops     # float32 left: a few scalars
        assert hist["Cast"] >= 2                                               # float32 I/O kept around FP16 compute
    else:
        assert quant_ops == {"MatMulInteger", "ConvInteger", "DynamicQuantizeLinear"} and w["int8"] > w["float32"]
    art = formats.open_artifact(path)                                        # the registry's view of the same file
    assert art.format.name == "onnx" and art.format.backends == (*BACKENDS, "openvino-bf16")
    assert art.sha256 == _sha(path) and art.input_shape == (1, 3, *TINY_SIZE) and art.size == TINY_SIZE
    assert art.format_text() == ox.format_text(info)


@pytest.mark.parametrize("precision", PRECISIONS)
def test_no_exporter_provenance(onnx_export, precision):
    """The exporter's source locations and FX text (metadata_props, doc_string) are gone: no path of this checkout,
    of the Python install or of the temporary folder in the bytes."""
    import onnx
    import torch

    path = onnx_export[precision].path
    data = open(path, "rb").read()
    here = os.path.dirname(os.path.abspath(__file__))
    for needle in (b"/work/", b"stack_trace", b"pkg.torch", b"fx_node", os.path.dirname(here).encode(),
                   os.path.dirname(torch.__file__).encode(), sys.prefix.encode(), str(onnx_export["dir"]).encode()):
        assert needle not in data, needle
    model = onnx.load(path)
    assert model.doc_string == "" and not model.functions
    for g in _graphs(model):
        assert g.doc_string == "" and not g.metadata_props
        for v in list(g.node) + list(g.input) + list(g.output) + list(g.value_info) + list(g.initializer):
            assert v.doc_string == "" and not v.metadata_props, v.name


# ------------------------------------------------------------------------------------------------ reproducible bytes


def test_reexport_in_the_same_process_is_byte_identical(tmp_path, tiny_ckpt, onnx_export):
    again = formats.export(tiny_ckpt.model, *TINY_SIZE, str(tmp_path), target_name="onnx", precisions=PRECISIONS)
    assert {f.precision: _sha(f.path) for f in again} == {p: _sha(onnx_export[p].path) for p in PRECISIONS}


@pytest.mark.slow
def test_export_under_other_kernels_is_byte_identical(tmp_path, onnx_export):
    """``edgedepth export --target onnx`` in a child with other CPU kernels (test_reproducible checks those really are
    other) writes the same three files, byte for byte.  Slow (~30 s); the fast suite has the same claim at 28x42 through
    the release build (test_release.two_builds, which holds the ONNX files)."""
    r = run_cli("export", "--target", "onnx", "--model", "synthetic-tiny", "--size", "56x70", "--out", tmp_path,
                "--quiet", env={**os.environ, **OTHER_KERNELS})
    assert r.returncode == 0, r.stderr[-3000:]
    assert sorted(os.listdir(tmp_path)) == sorted(NAMES.values())
    assert {p: _sha(tmp_path / NAMES[p]) for p in PRECISIONS} == {p: _sha(onnx_export[p].path) for p in PRECISIONS}


# ------------------------------------------------------------------------------------------------ parity


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_fp32_matches_pytorch(onnx_export, photo, record_property, backend, threads):
    """FP32 within FP32 noise of the original model (the default rewrites are exact), on a real photo."""
    r, out, again = _run(onnx_export["fp32"].path, backend, threads, photo["x"])
    assert r.name == {"cpu": "onnxruntime-cpu", "openvino": "openvino-cpu"}[backend]
    assert r.input_shape == (1, 3, *TINY_SIZE) and r.size == TINY_SIZE
    assert out.shape == (1, *TINY_SIZE) and out.dtype == np.float32
    if backend == "openvino":  # left to itself OpenVINO computes in bf16 on AMX / AVX512-BF16 CPUs
        import openvino

        assert r.inference_precision == openvino.Type.f32.get_type_name() == "f32"
    err = assert_within_fp32_noise(out, photo["fp64"], photo["fp32"],
                                   what=f"ONNX FP32 on {backend}, {threads} thread(s)")
    record_property("rel_l2_vs_float64", err)
    print(f"ONNX FP32 {backend} {threads}t: rel-L2 vs float64 {err:.3g} (PyTorch FP32: {photo['noise']:.3g})")
    assert np.array_equal(out, again)   # same session, same input: the same bits (no reused output buffer)


@pytest.mark.parametrize("threads", THREADS)
def test_fp16_onnxruntime(onnx_export, photo, fp16_refs, record_property, threads):
    """ORT's CPU EP runs the FP16 file's nodes on FP16 kernels or, lacking one, on the FP32 kernel between casts: FP16
    storage between nodes, FP32 or FP16 inside.  Its error vs float64 is bounded by the FP16 emulation of the same
    module measured here (FP16 weights, every op output rounded to FP16: one rounding per op, ~unit roundoff 4.9e-4
    each) times FP16_EMULATION_FACTOR = 2: the graph rounds at ONNX node boundaries rather than at torch op
    boundaries, a different but same-sized set of roundings (measured 0.52-0.96 x the emulation over 10 photos); an
    overflow, a lost cast or a wrong weight is >> 2x.  From below: far above FP32 noise (it is FP16)."""
    r, out, again = _run(onnx_export["fp16"].path, "cpu", threads, photo["x"])
    assert out.dtype == np.float32 and np.all(np.isfinite(out)) and np.array_equal(out, again)
    err, emulated = rel_l2(out, photo["fp64"]), rel_l2(fp16_refs["emulated"], photo["fp64"])
    record_property("rel_l2_vs_float64", err)
    print(f"ONNX FP16 ORT {threads}t: rel-L2 vs float64 {err:.3g}, FP16 emulation {emulated:.3g}, "
          f"PyTorch FP32 {photo['noise']:.3g}")
    assert err <= FP16_EMULATION_FACTOR * emulated, (err, emulated)
    assert err > QUANTISED_MIN_RATIO * photo["noise"], (err, photo["noise"])


def test_openvino_bf16_computes_in_bfloat16(onnx_export, tiny_ckpt, photo, record_property):
    """--backend openvino-bf16 (results/cpu_int8_xeon.json: 0.40x OpenVINO FP32's time on a Xeon with AMX): on a CPU
    that computes bf16 the plugin reports bf16 and the error vs float64 is bf16-sized: within BF16_FACTOR = 2 of
    PyTorch's CPU bf16 autocast of the same model on the same photo (measured 0.68-1.14x over 10 views of the default
    set, AMD EPYC with AVX512-BF16), and far above FP32 noise (it is not an FP32 run under a bf16 name). A CPU without
    bf16: a one-line error naming --backend openvino, never a silent FP32 run."""
    import openvino
    import torch

    if "BF16" not in openvino.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"):
        with pytest.raises(EdgedepthError, match=r"^this CPU cannot compute in bfloat16 [^\n]*--backend openvino$"):
            ox.open_runner(str(onnx_export["fp32"].path), "openvino-bf16", 2)
        return
    r, out, again = _run(onnx_export["fp32"].path, "openvino-bf16", 2, photo["x"])
    assert r.inference_precision == "bf16" and np.array_equal(out, again)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        ab = tiny_ckpt.model(pixel_values=torch.from_numpy(photo["x"])).predicted_depth.float().numpy()
    err, ref = rel_l2(out, photo["fp64"]), rel_l2(ab, photo["fp64"])
    record_property("rel_l2_vs_float64", err)
    print(f"ONNX FP32 on OpenVINO bf16: rel-L2 vs float64 {err:.3g}, PyTorch bf16 autocast {ref:.3g}")
    assert err <= BF16_FACTOR * ref, (err, ref)
    assert err > QUANTISED_MIN_RATIO * photo["noise"], (err, photo["noise"])


@pytest.mark.parametrize("threads", THREADS)
def test_fp16_openvino_is_fp32_compute_on_fp16_weights(onnx_export, fp16_refs, photo, threads):
    """OpenVINO at f32 inference precision (the runner's setting) treats the FP16 file as compressed weights: weights
    decompressed to FP32, FP32 compute, the input's cast to FP16 dropped.  So its output is, within FP32 noise, the same
    module with FP16-rounded weights computed in FP32 on the unrounded input (measured 0.8-1.3 x PyTorch FP32's own
    error vs float64 over 10 photos; rounding the input instead would be ~300x)."""
    r, out, again = _run(onnx_export["fp16"].path, "openvino", threads, photo["x"])
    assert np.array_equal(out, again)
    assert_within_fp32_noise(out, fp16_refs["w16_fp64"], fp16_refs["w16_fp32"],
                             what=f"OpenVINO FP16 file, {threads} thread(s), vs FP16 weights in float64")
    assert rel_l2(out, photo["fp64"]) > QUANTISED_MIN_RATIO * photo["noise"]   # the weights really are FP16


@pytest.mark.parametrize("threads", THREADS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_int8_stays_close(onnx_export, photo, record_property, backend, threads):
    r, out, again = _run(onnx_export["int8"].path, backend, threads, photo["x"])
    assert np.array_equal(out, again)
    err = rel_l2(out, photo["fp32"])
    record_property("rel_l2_int8", err)
    print(f"ONNX INT8 {backend} {threads}t: rel-L2 vs PyTorch FP32 {err:.3g}")
    assert QUANTISED_MIN_RATIO * photo["noise"] < err < INT8_REL_L2_MAX


# ------------------------------------------------------------------------------------------------ rewrites


def test_default_rewrites_are_exact(onnx_export):
    """The ONNX export uses only rewrites documented exact (its FP32 file is held to FP32 noise), and each of them
    changes something on this model (else it is dead weight in DEFAULT_REWRITES)."""
    from edgedepth.rewrites import REWRITES

    exact = {n for n, r in REWRITES.items() if r.exact}
    assert len(set(ox.DEFAULT_REWRITES)) == len(ox.DEFAULT_REWRITES)
    assert set(ox.DEFAULT_REWRITES) <= exact, set(ox.DEFAULT_REWRITES) - exact
    assert onnx_export["fp32"].rewrites == onnx_export["int8"].rewrites == list(ox.DEFAULT_REWRITES)
    assert set(onnx_export["fp16"].rewrites) <= set(ox.DEFAULT_REWRITES) | {"fp16_safe"}
    assert REWRITES["fp16_safe"].exact


def test_plain_export_via_cli(tmp_path, capfd, monkeypatch, tiny_ckpt, onnx_export, photo):
    """``export --target onnx --plain``: *_plain.onnx files of the model as transformers builds it (no rewrite: the
    bicubic position-embedding resize and the separate q/k/v projections are still there), still FP32-exact."""
    import onnx

    import edgedepth.checkpoint

    # the session's synthetic-tiny instead of a second 7 s load (the child above runs the CLI's own load)
    monkeypatch.setattr(edgedepth.checkpoint, "load_checkpoint",
                        lambda spec, **kw: tiny_ckpt if spec == "synthetic-tiny" else pytest.fail(spec))
    rc = main(["export", "--target", "onnx", "--plain", "--model", "synthetic-tiny", "--size", "56x70",
               "--out", str(tmp_path), "--quiet"])
    out = capfd.readouterr().out
    assert rc == 0
    assert sorted(os.listdir(tmp_path)) == sorted(PLAIN_NAMES.values())
    for p in PRECISIONS:
        path = tmp_path / PLAIN_NAMES[p]
        assert f"{p}: {path} (" in out
        assert ox.describe(str(path))["precision"] == p
        assert ox.file_name(*TINY_SIZE, p, plain=True) == PLAIN_NAMES[p]

    def ops(path):
        m = onnx.load(str(path))
        cubic = sum(1 for n in m.graph.node if n.op_type == "Resize"
                    for a in n.attribute if a.name == "mode" and a.s == b"cubic")
        return cubic, sum(1 for n in m.graph.node if n.op_type == "MatMul")

    (plain_cubic, plain_mm), (opt_cubic, opt_mm) = ops(tmp_path / PLAIN_NAMES["fp32"]), ops(onnx_export["fp32"].path)
    layers = tiny_ckpt.model.config.backbone_config.num_hidden_layers
    assert (plain_cubic, opt_cubic) == (1, 0)                  # freeze_position_embedding removes the interpolation
    assert plain_mm - opt_mm == 2 * layers                     # fuse_qkv: one projection per layer instead of three
    r, y, _ = _run(tmp_path / PLAIN_NAMES["fp32"], "cpu", 2, photo["x"])
    assert_within_fp32_noise(y, photo["fp64"], photo["fp32"], what="plain ONNX FP32 on ORT")


def test_inspect_prints_the_summary(onnx_export, capfd):
    paths = [onnx_export[p].path for p in PRECISIONS]
    assert main(["inspect", *paths]) == 0
    out = capfd.readouterr().out
    assert out == "\n".join(ox.format_text(ox.describe(p)) for p in paths) + "\n"
    for p, path in zip(PRECISIONS, paths):
        assert f"{path}: " in out and f"opset 18, {p}, " in out
    assert out.count("inputs  pixel_values float32[1, 3, 56, 70]") == 3
    assert out.count("outputs predicted_depth float32[1, 56, 70]") == 3
    assert out.count("runs on: ONNX Runtime (--backend cpu), OpenVINO (--backend openvino; openvino-bf16: in "
                     "bfloat16)") == 3
    assert main(["inspect", paths[0], "--json"]) == 0
    assert json.loads(capfd.readouterr().out) == ox.describe(paths[0])


def test_predict_openvino_writes_a_png(tmp_path, onnx_export, capfd):
    from PIL import Image

    from edgedepth.predict import resize_depth
    from edgedepth.preprocess import load_and_preprocess

    path, out = onnx_export["fp32"].path, tmp_path / "out"
    rc = main(["predict", sample_photo(), "--model", path, "--backend", "openvino", "--threads", "2", "-o", str(out),
               "--raw", "--quiet"])
    assert rc == 0, capfd.readouterr().err
    png = out / "grace_hopper_depth.png"
    assert str(png) in capfd.readouterr().out.splitlines()
    x, (h, w) = load_and_preprocess(sample_photo(), TINY_SIZE)
    img = Image.open(png)
    assert img.format == "PNG" and img.mode == "RGB" and img.size == (w, h)
    assert len(np.unique(np.asarray(img).reshape(-1, 3), axis=0)) > 10      # a depth map, not a flat image
    _, y, _ = _run(path, "openvino", 2, x)
    assert np.array_equal(np.load(out / "grace_hopper_depth.npy"), resize_depth(y, (h, w)))  # OpenVINO's output


# ------------------------------------------------------------------------------------------------ bad input


def _tiny_onnx(path, inputs, out_shape, out_type=None):
    """A valid ONNX model (checker-clean) whose inputs are [(name, elem_type, shape)], output y = sum of inputs."""
    import onnx
    from onnx import helper

    vis = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    node = (helper.make_node("Identity", [inputs[0][0]], ["y"]) if len(inputs) == 1
            else helper.make_node("Add", [n for n, _, _ in inputs], ["y"]))
    y = helper.make_tensor_value_info("y", out_type or inputs[0][1], out_shape)
    model = helper.make_model(helper.make_graph([node], "g", vis, [y]), opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 10
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, str(path))


def _bad_file(kind, tmp_path, good: bytes):
    from onnx import TensorProto as T

    path = tmp_path / f"{kind}.onnx"
    if kind == "truncated":
        path.write_bytes(good[: len(good) // 2])
    elif kind == "random":
        path.write_bytes(np.random.default_rng(0).bytes(4096))
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "rank3":
        _tiny_onnx(path, [("x", T.FLOAT, [1, 3, 14])], [1, 3, 14])
    elif kind == "float16":
        _tiny_onnx(path, [("x", T.FLOAT16, [1, 3, 14, 14])], [1, 3, 14, 14])
    elif kind == "two_inputs":
        _tiny_onnx(path, [("a", T.FLOAT, [1, 3, 14, 14]), ("b", T.FLOAT, [1, 3, 14, 14])], [1, 3, 14, 14])
    elif kind == "output_rank4":
        _tiny_onnx(path, [("x", T.FLOAT, [1, 3, 14, 14])], [1, 3, 14, 14])
    return path


@pytest.mark.parametrize("kind,fragment", [
    ("truncated", "corrupt or truncated"), ("random", "corrupt or truncated"), ("empty", "empty (0 bytes)"),
    ("rank3", "float32[1, 3, 14]"), ("float16", "float16[1, 3, 14, 14]"), ("two_inputs", "expected 1 input"),
    ("output_rank4", "expected [1,14,14]"),
])
def test_bad_onnx_files_are_one_line_errors(tmp_path, onnx_export, capfd, kind, fragment):
    path = _bad_file(kind, tmp_path, open(onnx_export["fp32"].path, "rb").read())
    _one_line_error(capfd, main(["inspect", str(path)]), fragment, path.name)
    out = tmp_path / "out"
    for backend in BACKENDS:
        _one_line_error(capfd, main(["predict", sample_photo(), "--model", str(path), "--backend", backend,
                                     "-o", str(out), "--quiet"]), fragment, path.name)
    assert not out.exists() or os.listdir(out) == []
    with pytest.raises(EdgedepthError, match=r"^[^\n]*$"):   # the library raises the same one-line error
        ox.open_runner(str(path))


@pytest.mark.parametrize("backend", ["gpu", "gpu-fp16"])
def test_gpu_backend_on_onnx_is_rejected(tmp_path, onnx_export, capfd, backend):
    path = onnx_export["fp32"].path
    _one_line_error(capfd, main(["predict", sample_photo(), "--model", path, "--backend", backend,
                                 "-o", str(tmp_path / "o"), "--quiet"]), "--backend cpu, openvino", f"not {backend}")
    _one_line_error(capfd, main(["bench", path, "--backend", backend, "--quiet"]), "--backend cpu, openvino")
    assert not (tmp_path / "o").exists() or os.listdir(tmp_path / "o") == []


def _minimal_tflite(path) -> None:
    """A valid TFLite flatbuffer (one float32 [1,3,14,14] tensor, no ops): what validate's backend check reads."""
    import flatbuffers
    from ai_edge_litert import schema_py_generated as S

    t = S.TensorT()
    t.shape, t.type, t.name, t.buffer = [1, 3, 14, 14], S.TensorType.FLOAT32, b"x", 0
    sg = S.SubGraphT()
    sg.tensors, sg.inputs, sg.outputs, sg.operators = [t], [0], [0], []
    m = S.ModelT()
    m.version, m.subgraphs, m.buffers, m.operatorCodes = 3, [sg], [S.BufferT()], []
    b = flatbuffers.Builder(0)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    path.write_bytes(bytes(b.Output()))


def test_openvino_backend_on_tflite_is_rejected(tmp_path, capfd):
    path = tmp_path / "m.tflite"
    _minimal_tflite(path)
    assert formats.open_artifact(str(path)).input_shape == (1, 3, 14, 14)   # a file the registry accepts
    _one_line_error(capfd, main(["validate", str(path), "--backend", "openvino", "--model", "synthetic-tiny",
                                 "--quiet"]), "m.tflite", ".tflite", "not openvino")
    _one_line_error(capfd, main(["bench", str(path), "--backend", "openvino", "--quiet"]), "m.tflite", ".tflite")
    _one_line_error(capfd, main(["predict", sample_photo(), "--model", str(path), "--backend", "openvino",
                                 "-o", str(tmp_path / "o"), "--quiet"]), "openvino")


@pytest.mark.parametrize("args,fragment", [
    (["--precision", "fp8"], "fp32, fp16, int8"),
    (["--fp16-safe"], "--fp16-safe"),
])
def test_bad_export_options(tmp_path, capfd, args, fragment):
    _one_line_error(capfd, main(["export", "--target", "onnx", "--model", "synthetic-tiny", "--size", "56x70",
                                 "--out", str(tmp_path), "--quiet", *args]), fragment)
    assert os.listdir(tmp_path) == []


def test_export_backends_are_rejected(tmp_path, tiny_ckpt):
    with pytest.raises(EdgedepthError, match="take no backends option"):
        formats.export(tiny_ckpt.model, *TINY_SIZE, str(tmp_path), target_name="onnx", backends=["xnnpack"])
    assert os.listdir(tmp_path) == []


# A child where onnxruntime and openvino (then onnx) cannot be imported: None in sys.modules makes `import m` raise
# ImportError, as when the package is not installed.  Each CLI call is framed by markers on stderr.
_NO_RUNTIME_CHILD = r"""
import json, sys
for m in ("onnxruntime", "openvino"):
    sys.modules[m] = None
from edgedepth.cli import main
for name, hide, args in json.loads(sys.argv[1]):
    for m in hide:
        sys.modules[m] = None
    print("@@case " + name, file=sys.stderr, flush=True)
    rc = main(args)
    sys.stdout.flush()
    print("@@rc %d" % rc, file=sys.stderr, flush=True)
"""


def test_missing_runtimes_are_one_line_errors(tmp_path, onnx_export):
    path = onnx_export["fp32"].path
    predict = ["predict", sample_photo(), "--model", path, "-o", str(tmp_path / "o"), "--quiet", "--backend"]
    cases = [("inspect", [], ["inspect", path]),                   # describing a file needs neither runtime
             ("no-onnxruntime", [], predict + ["cpu"]),
             ("no-openvino", [], predict + ["openvino"]),
             ("no-onnx", ["onnx"], ["inspect", path])]
    r = subprocess.run([sys.executable, "-c", _NO_RUNTIME_CHILD, json.dumps(cases)], capture_output=True, text=True,
                       timeout=600, env=os.environ.copy())
    assert r.returncode == 0, r.stderr[-3000:]
    got = {}
    for block in r.stderr.split("@@case ")[1:]:
        name, *lines, last = block.strip().splitlines()
        got[name] = (int(last.removeprefix("@@rc ")), lines)
    assert list(got) == [c[0] for c in cases], r.stderr
    assert got["inspect"] == (0, []) and f"{path}: " in r.stdout and "pixel_values float32[1, 3, 56, 70]" in r.stdout
    for name, package in (("no-onnxruntime", "onnxruntime"), ("no-openvino", "openvino"), ("no-onnx", "onnx")):
        rc, lines = got[name]
        assert rc == 2 and len(lines) == 1, (name, lines)
        assert lines[0].startswith("edgedepth: error:") and f"{package!r} is not installed: it comes with the " \
            "'onnx' extra (pip install 'edgedepth[onnx]')" in lines[0], lines[0]
    assert not (tmp_path / "o").exists() or os.listdir(tmp_path / "o") == []


def _hide_onnxruntime(monkeypatch):
    """As if onnxruntime were not installed (its already imported submodules would still import: hide them too)."""
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    for name in [m for m in sys.modules if m.startswith("onnxruntime.")]:
        monkeypatch.setitem(sys.modules, name, None)


def test_int8_without_onnxruntime_is_a_one_line_error(tmp_path, onnx_export, monkeypatch):
    _hide_onnxruntime(monkeypatch)
    with pytest.raises(EdgedepthError, match=r"^'onnxruntime' is not installed: it comes with the 'onnx' extra"):
        ox.quantize_int8(onnx_export["fp32"].path, str(tmp_path / "x_int8.onnx"))
    assert os.listdir(tmp_path) == []


def test_fp16_without_onnxruntime_is_a_one_line_error(onnx_export, monkeypatch):
    """The FP16 conversion is onnxruntime's float16 converter: without it, one line naming the package (as INT8)."""
    import onnx

    model = onnx.load(onnx_export["fp32"].path)
    _hide_onnxruntime(monkeypatch)
    with pytest.raises(EdgedepthError, match=r"^'onnxruntime' is not installed: it comes with the 'onnx' extra"):
        ox.to_fp16(model)
