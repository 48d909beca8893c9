"""Release folder: verify catches every kind of tampering; builds are byte-identical across processes, CPU kernels,
thread counts and machines (golden SHA-256s committed in tests/golden/release_sha256.json)."""

import hashlib
import json
import os
import shutil

import pytest

from conftest import TINY_RELEASE_ARGS as ARGS, TINY_RELEASE_RECIPE as RECIPE, run_cli
GOLDEN = os.path.join(os.path.dirname(__file__), "golden", "release_sha256.json")
# The second build (the installed wheel) runs with PyTorch's scalar kernels, oneDNN limited to SSE4.1 and one thread: a
# different CPU as far as every float kernel is concerned.  Its files must still be the same bytes.


@pytest.fixture(scope="module")
def two_builds(tiny_release, wheel_release):
    """The session's tiny release (this checkout) and a second build by the installed wheel, with the default recipe
    it carries, in a folder outside the repository, under other CPU kernels (conftest ``wheel_release``)."""
    return [tiny_release, wheel_release]


def _files(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_two_builds_are_byte_identical_under_other_kernels(two_builds):
    a, b = two_builds
    assert _files(a) == _files(b)
    for rel in _files(a):
        if rel != "build-report.json":         # what each build measured: machine- and kernel-dependent by design
            assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_tiny_release_matches_golden_sha256(two_builds):
    """Every file of the tiny release, manifest and card included, equals the bytes recorded on another machine."""
    golden = json.load(open(GOLDEN))["synthetic-tiny release"]
    assert golden["args"] == ARGS
    got = {rel: _sha(two_builds[0] / rel) for rel in _files(two_builds[0]) if rel != "build-report.json"}
    assert got == golden["sha256"]


def test_build_report_holds_the_measurements(two_builds):
    rep = json.loads((two_builds[0] / "build-report.json").read_text())
    assert rep["environment"]["cpu"] and rep["pytorch_fp32_vs_float64_rel_l2"]["28x42"] > 0
    for name, f in rep["files"].items():
        if "webgpu" in name:
            continue
        p = f["parity_cpu"]
        assert p["images"] == 2 and p["pooled_rel_l2"] <= p["gate_bound"], name


def test_release_contents(two_builds):
    folder = two_builds[0]
    m = json.loads((folder / "manifest.json").read_text())
    assert m["schema_version"] == 1
    paths = {f["path"] for f in m["files"]}
    assert {"README.md", "LICENSE", "NOTICE"} <= paths
    ptes = [f for f in m["files"] if f.get("format") == "pte"]
    assert {(f["backend"], f["size"]) for f in ptes} == {("xnnpack", "224x224"), ("webgpu", "224x224")}
    assert all(f["delegation"]["fully_delegated"] for f in ptes if f["backend"] == "webgpu")
    tfl = [f for f in m["files"] if f.get("format") == "tflite"]
    assert {f["precision"] for f in tfl} == {"fp32", "fp16", "int8"}
    assert m["model"] == {"family_member": "small", "hub_id": "depth-anything/Depth-Anything-V2-Small-hf",
                          "kind": "relative", "max_depth_m": None, "license": "apache-2.0",
                          "output_semantics": "relative inverse depth, larger = closer"}
    # which file for which use: fp16 weights + uint8 pixels for the GPU (fully delegated, smaller, less to write per
    # call); FP32 for CPU and wasm (nothing measured)
    rec = {k: v["path"] for k, v in m["recommended"].items()}
    assert rec == {"webgpu": "depth_anything_v2_small_28x42_fp16_u8in.tflite",
                   "cpu": "depth_anything_v2_small_28x42_fp32.tflite", "wasm": "depth_anything_v2_small_28x42_fp32.tflite"}
    # the recipe's pixel_input files: at the first size only, uint8 in, normalisation stated as done in the graph
    u8 = [f for f in tfl if f["input"]["dtype"] == "uint8"]
    assert [f["path"] for f in u8] == ["depth_anything_v2_small_28x42_fp16_u8in.tflite"]
    assert u8[0]["input"]["normalisation"]["in_graph"]["scale"] == "1/255" and u8[0]["gpu_fully_delegated"]
    assert "_u8in.tflite" in (folder / "README.md").read_text()
    assert "## Which file to use" in (folder / "README.md").read_text()
    for f in tfl:
        assert len(f["sha256"]) == 64 and f["bytes"] > 0 and f["ops"] > 0
        assert f["input"]["shape"] == [1, 3, 28, 42] and f["output"]["semantics"].startswith("relative inverse depth")
        assert f["recommended_runtime_options"]["gpu"]["enforce_f32"] is True
        assert "parity_cpu" not in f and f["parity"] == [] and f["latency"] == []   # no committed record matches
        assert f["gpu_fully_delegated"] is True
    onnx = {f["path"]: f for f in m["files"] if f.get("format") == "onnx"}
    # the onnx-community / transformers.js layout, at the first size, with the names transformers.js feeds
    assert {p: f["precision"] for p, f in onnx.items()} == {
        "onnx/model.onnx": "fp32", "onnx/model_fp16.onnx": "fp16", "onnx/model_quantized.onnx": "int8"}
    for f in onnx.values():
        assert f["input"]["name"] == "pixel_values" and f["input"]["shape"] == [1, 3, 28, 42]
        assert f["output"]["name"] == "predicted_depth" and f["output"]["shape"] == [1, 28, 42]
    # fp16_safe is tried for the FP16 file and listed only where it rescaled something; the tiny model's activations
    # already fit float16 (test_fp16 covers the rescaling), so all three files carry the same rewrites
    rw = onnx["onnx/model.onnx"]["rewrites"]
    assert "fp16_safe" not in rw and "fuse_qkv" in rw
    assert onnx["onnx/model_fp16.onnx"]["rewrites"] == onnx["onnx/model_quantized.onnx"]["rewrites"] == rw
    fp32 = next(f for f in tfl if f["precision"] == "fp32")
    assert m["parity_method"]["build_gate"]["images"]["count"] == 2
    prov = m["provenance"]
    from edgedepth.checkpoint import load_checkpoint, state_dict_digest

    assert prov["checkpoint"] == {"source": "synthetic", "name": "synthetic-tiny", "seed": 0,
                                  "state_dict_sha256": state_dict_digest(load_checkpoint("synthetic-tiny", quiet=True).model)}
    assert len(prov["recipe"]["sha256"]) == 64 and "torch" in prov["versions"]
    card = (folder / "README.md").read_text()
    assert card.startswith("---\nlicense: apache-2.0\n") and "pipeline_tag: depth-estimation" in card
    # the card comes from the manifest: hashes, the parity gate, no machine-measured number
    assert fp32["sha256"] in card and "build-report.json" in card and prov["checkpoint"]["state_dict_sha256"] in card
    assert "synthetic" in card.lower() and "Apache License" in (folder / "LICENSE").read_text()
    assert "  - transformers.js" in card and "onnx/model_quantized.onnx" in card and "ONNX" in (folder / "NOTICE").read_text()


def _copy(src, tmp_path):
    dst = tmp_path / "rel"
    shutil.copytree(src, dst)
    return dst


def _tflite(folder):
    return sorted(p for p in os.listdir(folder) if p.endswith(".tflite"))[0]


def test_verify_passes_on_a_clean_folder(two_builds):
    r = run_cli("verify", two_builds[0])
    assert r.returncode == 0 and "match" in r.stdout


@pytest.mark.parametrize("damage,expected", [
    ("flip", "changed: "), ("truncate", "truncated: "), ("missing", "missing: "), ("extra", "extra: stowaway.bin"),
])
def test_verify_names_the_problem(two_builds, tmp_path, damage, expected):
    folder = _copy(two_builds[0], tmp_path)
    name = _tflite(folder)
    p = folder / name
    data = bytearray(p.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
        p.write_bytes(bytes(data))
    elif damage == "truncate":
        p.write_bytes(bytes(data[:-10]))
    elif damage == "missing":
        p.unlink()
    else:
        (folder / "stowaway.bin").write_bytes(b"x")
    r = run_cli("verify", folder)
    assert r.returncode == 1
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in r.stderr
    if damage != "extra":
        assert name in lines[0]


@pytest.mark.parametrize("which", ["tflite", "onnx/model.onnx"])
def test_predict_refuses_a_tampered_release_file(two_builds, tmp_path, which):
    """Also for a file one folder down (onnx/model.onnx: its manifest is in the release folder above)."""
    from edgedepth.samples import sample_photo

    folder = _copy(two_builds[0], tmp_path)
    p = folder / (_tflite(folder) if which == "tflite" else which)
    r = run_cli("predict", sample_photo(), "--model", p, "-o", tmp_path / "ok", "--quiet")
    assert r.returncode == 0, r.stderr          # untouched: runs
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 0xFF
    p.write_bytes(bytes(data))
    r = run_cli("predict", sample_photo(), "--model", p, "-o", tmp_path / "o")
    assert r.returncode == 2 and "does not match its manifest" in r.stderr


def test_recipe_presets_are_valid_export_sizes():
    """Every preset must be a multiple of the 14-pixel patch (256x256 is not: it would yield a 252x252 map)."""
    from edgedepth.preprocess import parse_size
    from edgedepth.release import PRESET_SIZES, load_recipe

    recipe = load_recipe(RECIPE)
    assert len(recipe.sha256) == 64 and list(recipe.sizes) == PRESET_SIZES
    from edgedepth.formats import TARGETS

    for s in recipe.sizes + recipe.part(TARGETS["executorch"]).sizes:
        h, w = parse_size(s)
        assert h % 14 == 0 and w % 14 == 0


@pytest.mark.parametrize("field,value,expected", [
    ("sizes", ["256x256"], "multiples of 14"), ("litert", {"precisions": ["fp8"]}, "unknown"),
    ("parity", {}, "missing field 'images'"), ("name", 3, "should be str")])
def test_bad_recipe_is_one_clear_error(tmp_path, field, value, expected):
    from edgedepth.release import load_recipe

    p = tmp_path / "r.py"
    p.write_text(f"import runpy\nRECIPE = dict(runpy.run_path({RECIPE!r})['RECIPE'])\nRECIPE[{field!r}] = {value!r}\n")
    r = run_cli("release", "--recipe", p, "--out", tmp_path / "out", "--quiet")
    assert r.returncode == 2 and expected in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()
    with pytest.raises(Exception, match=expected):
        load_recipe(str(p))


def test_committed_h200_rows_are_for_todays_webgpu_file():
    """The recipe's H200 data (benchmarks/gpu_floor.py, timing twins that name the release file they stand for) reaches
    the WebGPU file of the synthetic release by its golden SHA-256: a pipeline change that alters the file fails here
    until the GPU is measured again."""
    from edgedepth.release.recipe import load_recipe
    from edgedepth.verify import records

    golden = json.load(open(GOLDEN))["synthetic release"]["sha256"]
    rows = records.read(load_recipe(RECIPE).latency_data, "latency")[
        golden["depth_anything_v2_small_518x686_fp16_u8in.tflite"]]
    assert {r["backend"] for r in rows} == {"gpu", "gpu-fp16"}, rows
    fp32 = next(r for r in rows if r["backend"] == "gpu")
    assert fp32["h200_gpu_fp32_median_ms"] == fp32["median_ms"] > 0 and "H200" in fp32["gpu_adapter"]
