"""edgedepth's wheel as a user gets it, for tests/test_packaging.py (conftest ``install_wheel``) and
benchmarks/wheel_path.py: ``python -m build`` (sdist, then the wheel from the sdist; no isolation: this venv's pinned
setuptools, offline), a fresh venv outside the repository, ``pip install --no-deps`` of the wheel.

The fresh venv's dependencies are this venv's site-packages, on its path by a .pth line: the same pinned versions,
not downloaded again; their own .pth files (among them the checkout's editable install) are not read, so ``import
edgedepth`` there is the wheel's copy only.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig


def build_command(root: str, dist: str) -> list[str]:
    return [sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, root]


def make_venv(venv: str) -> None:
    """A fresh venv at ``venv`` whose dependencies are this interpreter's site-packages (a .pth line)."""
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    purelib = subprocess.run([os.path.join(venv, "bin", "python"), "-c",
                              "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    with open(os.path.join(purelib, "_edgedepth_dependencies.pth"), "w") as f:
        f.write(sysconfig.get_paths()["purelib"] + "\n")


def install_command(venv: str, wheel: str) -> list[str]:
    return [os.path.join(venv, "bin", "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
            "--ignore-installed", wheel]


def user_env(venv: str) -> dict:
    """The user's environment: the venv's bin first, nothing pointing into the repository."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EDGEDEPTH_WEB_DIR", "VIRTUAL_ENV")}
    return {**env, "PATH": os.path.join(venv, "bin") + os.pathsep + env.get("PATH", ""), "VIRTUAL_ENV": venv}
