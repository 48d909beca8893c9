"""Replace every nn.LayerNorm of the backbone by :class:`EdgeLayerNorm` (keep-dims means, mean reused for variance).

Answers: ~12 ops per LayerNorm in the plain graph (MEAN without keepdims + RESHAPEs back, SQUARED_DIFFERENCE and SUB
both from the mean); 25 LayerNorms in Depth Anything V2 Small.  Float-rounding exact (rel-L2 ~1e-7 vs torch's kernel).
"""

from __future__ import annotations

from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._modules import EdgeLayerNorm

NAME = "fast_layernorm"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def fast_layernorm(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        for name in ("norm1", "norm2"):
            if isinstance(getattr(layer, name), nn.LayerNorm):
                setattr(layer, name, EdgeLayerNorm(getattr(layer, name)))
                changed += 1
    bb = model.backbone
    if isinstance(bb.layernorm, nn.LayerNorm):
        bb.layernorm = EdgeLayerNorm(bb.layernorm)
        changed += 1
    return model, changed
