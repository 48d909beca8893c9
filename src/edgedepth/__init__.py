"""edgedepth: Depth Anything V2 -> verified on-device artifacts (LiteRT, ExecuTorch).

Pipeline, one place per concern: checkpoint -> rewrites -> formats (export, describe, runners) -> runtimes ->
verify (parity, bench) -> release (recipe, manifest, model card) -> serve; ``api`` and ``cli`` on top.

Python API (imported on first use, so ``import edgedepth`` stays light): ``edgedepth.export``, ``edgedepth.open``,
``edgedepth.validate`` -- see :mod:`edgedepth.api`.
"""

from .version import __version__  # noqa: F401  (one place: version.py)

_API = ("export", "open", "validate", "Model")


def __getattr__(name):
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'edgedepth' has no attribute {name!r}")


__all__ = list(_API)

from . import fp16  # noqa: E402,F401  (light: registers the ``-fp16-stress`` model-name variant; no torch)
