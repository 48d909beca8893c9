"""FP16 safety of Depth Anything V2: activation ranges vs FP16, FP16 emulation, the fp16-stress variant.

Why: LiteRT's GPU delegate under its default precision policy may store (and compute) activations in FP16 even for an
FP32 graph; FP16's largest finite value is 65504 and a trained DPT head's activations can exceed it (the GPU then
returns a constant map).  One module per job:

  topology   the one stage topology: scale groups, neck/head activations in forward order, folding factors into weights
  probe      activation-range statistics per stage (forward hooks) on calibration photos  (``inspect --ranges``)
  stress     ``*-fp16-stress``: a function-preserving rescaling whose internal activations overflow FP16
  report     text table / strict JSON of a probe report, and ``run_cli`` behind ``edgedepth inspect --ranges``

The exact rescaling that fixes a model is a rewrite, ``edgedepth.rewrites.fp16_safe``; it imports this package, never
the other way round.  FP16 emulation (run a model with FP16 weights and FP16 storage of every op's output) is a
verification tool: ``edgedepth.verify.fp16_emulation``.  Importing this package is light (no torch): it only registers the ``-fp16-stress`` model-name
variant with ``edgedepth.variants`` (``load_checkpoint("synthetic-tiny-fp16-stress")``).
"""

from __future__ import annotations

from ..variants import register_variant

FP16_MAX = 65504.0               # largest finite FP16 value
FP16_MIN_NORMAL = 2.0 ** -14     # smallest normal FP16 value
STRESS_SUFFIX = "-fp16-stress"


def _stress_variant(ckpt):
    from .stress import stress_checkpoint      # lazy: torch only when such a name is loaded

    return stress_checkpoint(ckpt)


register_variant(STRESS_SUFFIX, _stress_variant)

__all__ = ["FP16_MAX", "FP16_MIN_NORMAL", "STRESS_SUFFIX"]
