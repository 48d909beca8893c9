"""``synthetic-fp16-stress``: a function-preserving rescaling of a checkpoint that puts its internal activations where a
trained DPT's are reported to be -- growing through the fusion stages to ~1e6..1e8 in the head -- while the depth map
stays the same (rel-L2 4e-7 vs the unstressed model: float rounding).  It uses the same exact-in-maths symmetries as
fp16_safe (LayerNorm scale invariance, ReLU/conv homogeneity), with factors that are deliberately not powers of two,
so fp16_safe cannot simply undo them; it must find its own from the probe.
Measured on ``synthetic`` at 518x686 (4 default photos), max |x|: backbone stream 559 (storage fits, but LayerNorm's
(x - mean)^2 reaches 3.2e5: all 25 LayerNorms overflow), neck.fusion2.projection 2.5e5, neck.fusion3.projection
2.7e6, head.conv1 1.2e7, head.conv2 1.0e8; depth map unchanged (max 7.8).  Also the head's last conv weights become
~1e-7..1e-8: subnormal or zero in FP16 (75 % of them zero), as small as a huge-activation head's must be.

Registered as the ``-fp16-stress`` model-name variant by ``edgedepth.fp16`` (``load_checkpoint("synthetic-fp16-stress")``).
"""

from __future__ import annotations

import copy
import dataclasses

from torch import nn

from ..errors import EdgedepthError
from . import STRESS_SUFFIX
from .topology import FAMILIES, neck_groups, scale_neck, scale_stream

STRESS_STREAM = 61.3            # backbone residual stream: LayerNorm (x - mean)^2 beyond 65504, storage still < 65504
STRESS_NECK_BASE = 3.3          # reassemble / neck-conv outputs
STRESS_FUSION_GROWTH = 9.7      # each fusion layer's stream this much larger than the previous one's
STRESS_HEAD = (1.3e6, 1.2e7)    # head.conv1 / head.conv2 output factors (head.in follows the fusion growth)


def stress_factors(model: nn.Module) -> dict:
    """{"stream": c, "neck": {group: factor}} used by ``stress_checkpoint`` (output group 1: same depth map)."""
    neck = {}
    for g in neck_groups(model):
        if g.startswith(("reassemble", "resize")):
            neck[g] = STRESS_NECK_BASE
        elif g.startswith("fusion"):
            k = int(g[len("fusion")])
            f = STRESS_NECK_BASE * STRESS_FUSION_GROWTH ** (k + 1)
            neck[g] = f * (0.37 if ".rcu" in g else 1.0)
        elif g == "head.in":
            neck[g] = STRESS_NECK_BASE * STRESS_FUSION_GROWTH ** 5
        elif g == "head.conv1":
            neck[g] = STRESS_HEAD[0]
        elif g == "head.conv2":
            neck[g] = STRESS_HEAD[1]
    neck["output"] = 1.0
    return {"stream": STRESS_STREAM, "neck": neck}


def stress_model(model: nn.Module, *, stream: bool = True, neck: bool = True) -> nn.Module:
    """A deep copy of ``model`` rescaled by ``stress_factors`` (same depth map to float rounding)."""
    m = copy.deepcopy(model).eval()
    f = stress_factors(m)
    if stream:
        scale_stream(m, f["stream"])
    if neck:
        scale_neck(m, f["neck"])
    m.fp16_stress = {"stream": f["stream"] if stream else 1.0, "neck": f["neck"] if neck else {}}
    return m


def stress_checkpoint(ckpt, *, stream: bool = True, neck: bool = True):
    """``synthetic-fp16-stress``: a copy of ``ckpt`` (a checkpoint of a family the FP16 topology knows) with
    FP16-overflowing internal activations."""
    if ckpt.family is None or ckpt.family.name not in FAMILIES:
        raise EdgedepthError(f"{ckpt.name}{STRESS_SUFFIX}: the FP16 stress variant knows the structure of "
                             f"{', '.join(FAMILIES)} models only", option="model")
    return dataclasses.replace(ckpt, model=stress_model(ckpt.model, stream=stream, neck=neck),
                               name=f"{ckpt.name}{STRESS_SUFFIX}")
