"""Same bytes on any machine: the synthetic checkpoints, the rewrites' weight folds and two size presets of the full
synthetic release (518x686 under other CPU kernels; 224x224, every format it ships in) are checked against golden
SHA-256s recorded on another machine.

The tiny release (every file, manifest and card) is checked in tests/test_release.py.  Re-record goldens only when the
bytes are meant to change: ``python tests/golden/record.py all`` (``make demo`` checks its build against them).
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import OTHER_KERNELS, export_in_child

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
import record  # noqa: E402  (tests/golden/record.py: the goldens' one reader and writer)

GOLDEN = json.load(open(record.PATH))


def _state_dicts_in_child(env_extra: dict) -> dict:
    code = ("import json, sys; sys.path.insert(0, %r); import record; print(json.dumps(record.state_dicts()))"
            % os.path.join(HERE, "golden"))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                       env={**os.environ, **env_extra})
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("kernels", ["native", "other"])
def test_checkpoint_and_folds_match_golden(kernels):
    """Synthetic init (incl. its float64 head calibration) and every fold of the default rewrites are CPU-independent."""
    got = _state_dicts_in_child({} if kernels == "native" else OTHER_KERNELS)
    assert got == GOLDEN["state_dicts"]


def test_other_kernels_really_are_other():
    """Guard for the test above: the forced settings change PyTorch's float kernels (else it proves nothing)."""
    code = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    caps = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           env={**os.environ, **extra}).stdout.strip() for extra in ({}, OTHER_KERNELS)]
    assert caps[1] == "DEFAULT" and caps[0] != "DEFAULT", caps


@pytest.mark.slow
def test_full_size_export_under_other_kernels_matches_golden(full_release_518x686):
    """The 518x686 FP32, FP16-weight, INT8 and uint8-input FP16-weight (WebGPU) files of the full synthetic release,
    rebuilt with other kernels (conftest's shared export), equal the golden."""
    from edgedepth.fsutil import sha256_file

    golden = GOLDEN[record.FULL_SECTION]["sha256"]
    got = {os.path.basename(p): sha256_file(p) for p in full_release_518x686.values()}
    assert got == {n: golden[n] for n in got}


@pytest.mark.slow
def test_224x224_preset_every_format_matches_golden(tmp_path):
    """Another size preset of the full synthetic release, every format the recipe ships at it (LiteRT FP32, FP16
    weights, INT8; ExecuTorch XNNPACK and WebGPU), rebuilt on this machine's kernels, equals the golden: a pipeline
    change that alters the other sizes' files fails here, not only at 518x686."""
    export_in_child(tmp_path, "224x224", "--precision", "fp32,fp16,int8")
    export_in_child(tmp_path, "224x224", "--target", "executorch", "--et-backend", "xnnpack,webgpu", "--precision",
                    "fp32")
    golden = {n: h for n, h in GOLDEN[record.FULL_SECTION]["sha256"].items() if "_224x224_" in n}
    assert len(golden) == 5, sorted(golden)
    assert record.compare(tmp_path, golden) == {"match": sorted(golden), "differ": [], "no_golden": [], "missing": []}


@pytest.mark.slow
def test_dynamic_onnx_matches_golden_under_other_kernels(tmp_path):
    """The release's onnx/model.onnx (the full synthetic model, dynamic height and width, recorded size 518x686)
    exported in a child under other CPU kernels equals its golden: the exporter's constant folding and the weights'
    bytes do not depend on the CPU."""
    export_in_child(tmp_path, "518x686", "--target", "onnx", "--dynamic-size", "--precision", "fp32",
                    env_extra=OTHER_KERNELS)
    from edgedepth.fsutil import sha256_file

    golden = GOLDEN[record.FULL_SECTION]["sha256"]["onnx/model.onnx"]
    assert sha256_file(str(tmp_path / "depth_anything_v2_small_518x686_fp32_dynamic.onnx")) == golden


def test_golden_check_names_every_kind_of_difference(tmp_path):
    """``record.py check`` (what make demo runs) tells matching, differing, unrecorded and missing files apart."""
    (tmp_path / "a.bin").write_bytes(b"a")
    (tmp_path / "b.bin").write_bytes(b"b")
    (tmp_path / "c.bin").write_bytes(b"c")
    (tmp_path / "build-report.json").write_text("{}")       # machine-dependent: never recorded nor compared
    golden = {"a.bin": record.hashes(tmp_path)["a.bin"], "b.bin": "0" * 64, "gone.bin": "1" * 64}
    assert record.compare(tmp_path, golden) == {"match": ["a.bin"], "differ": ["b.bin"], "no_golden": ["c.bin"],
                                                "missing": ["gone.bin"]}


def test_every_file_of_the_synthetic_release_has_a_golden():
    """Goldens for every file the recipe builds: all sizes, FP16, the WebGPU file, ExecuTorch, ONNX, card, licence,
    the Git LFS routing."""
    golden = GOLDEN[record.FULL_SECTION]["sha256"]
    sizes = ["518x686", "686x518", "518x518", "392x518", "252x252", "224x224"]
    stem = "depth_anything_v2_small_"
    want = {f"{stem}{s}_{p}.tflite" for s in sizes for p in ("fp32", "fp16", "int8")}
    want |= {f"{stem}518x686_fp16_u8in.tflite", f"{stem}224x224_xnnpack_fp32.pte", f"{stem}224x224_webgpu_fp32.pte",
             "onnx/model.onnx", "onnx/model_fp16.onnx", "onnx/model_quantized.onnx", "config.json",
             "preprocessor_config.json", "manifest.json", "README.md", "LICENSE", "NOTICE", ".gitattributes"}
    assert set(golden) == want
