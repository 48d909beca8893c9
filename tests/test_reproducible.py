"""Same bytes on any machine: the synthetic checkpoints, the rewrites' weight folds and a full-size export are checked
against golden SHA-256s recorded on another machine, in this process and in a child with other CPU kernels.

The tiny release (every file, manifest and card) is checked in tests/test_release.py.  Re-record goldens only when the
bytes are meant to change: tests/golden/record.py.
"""

import json
import os
import subprocess
import sys

import pytest

from conftest import run_cli

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = json.load(open(os.path.join(HERE, "golden", "release_sha256.json")))
# PyTorch's scalar kernels, oneDNN limited to SSE4.1, one thread: a different CPU for every float kernel we use.
OTHER_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "OMP_NUM_THREADS": "1"}
FULL_FILES = tuple(f"depth_anything_v2_small_518x686_{p}.tflite" for p in ("fp32", "fp16", "int8", "fp16_u8in"))


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
def test_full_size_export_under_other_kernels_matches_golden(tmp_path):
    """The 518x686 FP32, FP16-weight, INT8 and uint8-input FP16-weight (WebGPU) files of the full synthetic release,
    rebuilt with other kernels, equal the golden."""
    for extra in (["--precision", "fp32,fp16,int8"], ["--precision", "fp16", "--input-dtype", "uint8"]):
        r = run_cli("export", "--model", "synthetic", "--size", "518x686", "--out", tmp_path, "--quiet", *extra,
                    env={**os.environ, **OTHER_KERNELS})
        assert r.returncode == 0, r.stderr[-3000:]
    from edgedepth.fsutil import sha256_file

    golden = GOLDEN["synthetic release"]["sha256"]
    assert {n: sha256_file(str(tmp_path / n)) for n in FULL_FILES} == {n: golden[n] for n in FULL_FILES}
