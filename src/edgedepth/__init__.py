"""edgedepth: Depth Anything V2 Small -> verified on-device artifacts (LiteRT, ExecuTorch).

Pipeline, one module per concern: checkpoint -> rewrites -> targets -> runtimes -> parity/bench -> release.
"""

__version__ = "0.1.0"

from . import fp16  # noqa: E402,F401  (light: registers the ``-fp16-stress`` model-name variant; no torch)
