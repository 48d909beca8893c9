"""edgedepth: Depth Anything V2 Small -> verified on-device artifacts (LiteRT, ExecuTorch).

Pipeline, one module per concern: checkpoint -> rewrites -> targets -> runtimes -> parity/bench -> release.
"""

__version__ = "0.1.0"
