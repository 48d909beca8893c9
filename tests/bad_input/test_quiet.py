"""Quiet by default (issue 27 item 8, D15): third-party warnings and LiteRT's INFO lines stay off the terminal unless
``--verbose`` (the Python API: ``verbose=True``); a hub id without network fails in one line at once."""

import os

import pytest

from conftest import assert_one_line_error, run_cli

PHOTO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "rgb_160x120.png")
# What third parties printed before any line of ours (torchao's "Failed to load ..._C_*.so", torch's _pytree
# deprecation lines, LiteRT's "INFO: [environment.cc:36] ...", absl's preamble).
NOISE = ("torchao", "_pytree", "INFO: [", "absl::InitializeLog")


@pytest.fixture(scope="module")
def small_pte(tmp_path_factory):
    """A minimal ExecuTorch program (mean over channels, [1,3,14,14] -> [1,14,14]): reading a .pte imports
    executorch, which imports torchao."""
    import torch
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import to_edge_transform_and_lower

    class Mean(torch.nn.Module):
        def forward(self, x):
            return x.mean(1)

    program = to_edge_transform_and_lower(torch.export.export(Mean(), (torch.zeros(1, 3, 14, 14),)),
                                          partitioner=[XnnpackPartitioner()]).to_executorch()
    path = tmp_path_factory.mktemp("quiet") / "mean.pte"
    path.write_bytes(program.buffer)
    return path


def _noise(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if any(n in ln for n in NOISE)]


def test_inspect_is_quiet_unless_verbose(small_pte):
    """D15: ``inspect --no-gpu FILE.pte`` prints nothing on stderr; with --verbose, torchao's and torch's lines show
    (so the quiet run is quiet because of the filter, not because there was nothing to hide)."""
    loud = run_cli("inspect", "--no-gpu", small_pte, "--verbose")
    assert loud.returncode == 0, loud.stderr
    assert any("torchao" in ln or "_pytree" in ln for ln in loud.stderr.splitlines()), (
        "--verbose no longer shows torchao/torch lines: if upstream stopped printing them, pick another source",
        loud.stderr)
    quiet = run_cli("inspect", "--no-gpu", small_pte)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "", quiet.stderr
    assert quiet.stdout == loud.stdout


def test_predict_is_quiet_unless_verbose(tmp_path, tiny_plain_export):
    """D15: ``predict --quiet`` on a .tflite prints only its output paths (LiteRT logged dozens of INFO lines, from
    C++, also as the process ended); with --verbose the LiteRT lines show."""
    model = tiny_plain_export["fp32"]
    loud = run_cli("predict", PHOTO, "--model", model, "-o", tmp_path / "loud", "--quiet", "--verbose")
    assert loud.returncode == 0, loud.stderr
    assert sum(ln.startswith("INFO: [") for ln in loud.stderr.splitlines()) >= 5, loud.stderr
    quiet = run_cli("predict", PHOTO, "--model", model, "-o", tmp_path / "quiet", "--quiet")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == "", quiet.stderr
    assert quiet.stdout.strip() == str(tmp_path / "quiet" / "rgb_160x120_depth.png")


def test_checkpoint_predict_shows_only_our_lines(tmp_path):
    """D15: a PyTorch checkpoint (transformers imports torchao) -> stderr holds our synthetic-weights warning only."""
    r = run_cli("predict", PHOTO, "--model", "synthetic-tiny", "--size", "28x42", "-o", tmp_path / "o", "--quiet")
    assert r.returncode == 0, r.stderr
    assert _noise(r.stderr) == [], r.stderr
    assert [ln.split(":")[0] for ln in r.stderr.splitlines()] == ["WARNING"], r.stderr


_API_CALLS = """
import sys
import edgedepth
from edgedepth.samples import sample_photo

verbose = sys.argv[2] == "verbose"
(f,) = edgedepth.export("synthetic-tiny", size="28x42", out_dir=sys.argv[1], precisions=["fp32"], rewrites=None,
                        verbose=verbose)
model = edgedepth.open(f, verbose=verbose)
model.describe()
assert model.predict(sample_photo()).ndim == 2
assert [r["status"] for r in edgedepth.validate(f, model="synthetic-tiny", limit=1, verbose=verbose)] == ["ok"]
print("done")
"""


def test_api_is_quiet_unless_verbose(tmp_path):
    """The Python API (export, open, predict, validate) in a process of its own prints nothing of torchao's, torch's
    or LiteRT's on stderr, neither during the calls nor as the process ends (LiteRT's "DestroyAccelerator" INFO
    lines); with ``verbose=True`` they show."""
    import subprocess
    import sys

    def run(mode):
        r = subprocess.run([sys.executable, "-c", _API_CALLS, str(tmp_path / mode), mode], capture_output=True,
                           text=True, timeout=900)
        assert r.returncode == 0 and r.stdout.splitlines()[-1:] == ["done"], r.stdout + r.stderr[-3000:]
        return r

    loud = run("verbose").stderr
    assert any("torchao" in ln or "_pytree" in ln for ln in loud.splitlines()), loud
    assert any(ln.startswith("INFO: [") for ln in loud.splitlines()), loud
    assert "DestroyAccelerator" in loud.splitlines()[-1], loud[-2000:]
    quiet = run("quiet")
    assert _noise(quiet.stderr) == [] and "DestroyAccelerator" not in quiet.stderr, quiet.stderr
    assert (quiet.stdout, quiet.stderr) == ("done\n", "")      # the converter's progress lines too


def test_hub_id_without_network_is_one_line(tmp_path):
    """D15: a hub id that is not cached, with no network, fails in one line saying so (it used to retry for ~30-40 s
    first).  The child only ever contacts loopback: the endpoint is a closed local port, proxies are unset."""
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and k not in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_CACHE",
                                                             "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE")}
    env.update(HF_ENDPOINT="http://127.0.0.1:9", HF_HOME=str(tmp_path / "hf-home"))
    out = tmp_path / "out"
    model = "depth-anything/Depth-Anything-V2-Small-hf@5426e4f0f36572d16453bbda7a8389317b1bef99"
    r = run_cli("export", "--model", model, "--out", out, "--quiet", env=env)
    assert_one_line_error(r, "cannot load depth-anything/Depth-Anything-V2-Small-hf@5426e4f0", "no network",
                          "127.0.0.1:9", "not in the local cache")
    assert "Retrying" not in r.stderr and _noise(r.stderr) == [], r.stderr
    assert not out.exists()
