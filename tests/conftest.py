"""Shared fixtures: models and exports are built once per session (conversion is the slow part)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

TINY_SIZE = (56, 70)      # 4x5 patches: exercises position-embedding interpolation like 518x686 does
FULL_SIZE = (518, 686)


def rel_l2(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def run_cli(*args, timeout=900, env=None):
    """Run ``python -m edgedepth ARGS`` in a child, as a user would; returns CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-m", "edgedepth", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="session")
def tiny_ckpt():
    from edgedepth.checkpoint import load_checkpoint

    return load_checkpoint("synthetic-tiny", quiet=True)


@pytest.fixture(scope="session")
def tiny_input():
    return np.random.default_rng(1).standard_normal((1, 3, *TINY_SIZE), dtype=np.float32)


@pytest.fixture(scope="session")
def tiny_plain_export(tmp_path_factory, tiny_ckpt):
    """synthetic-tiny at 56x70, plain conversion, FP32 + INT8."""
    from edgedepth.checkpoint import DepthModule
    from edgedepth.targets import litert

    out = tmp_path_factory.mktemp("tiny_plain")
    return litert.export(DepthModule(tiny_ckpt.model), *TINY_SIZE, str(out), ("fp32", "int8"), plain=True)


@pytest.fixture(scope="session")
def full_plain_export(tmp_path_factory):
    """The full-size synthetic model at 518x686, plain conversion, FP32 + INT8 (about a minute)."""
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.targets import litert

    out = tmp_path_factory.mktemp("full_plain")
    ckpt = load_checkpoint("synthetic", quiet=True)
    paths = litert.export(DepthModule(ckpt.model), *FULL_SIZE, str(out), ("fp32", "int8"), plain=True)
    return {"paths": paths, "ckpt": ckpt}
