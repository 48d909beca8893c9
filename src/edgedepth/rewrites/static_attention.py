"""Swap every Dinov2Attention for :class:`EdgeAttention`: eager maths, static head reshapes, rank-3 projections.

Answers: LiteRT #9481 — the plain graph flattens the attention output to [N, D] before ``o_proj`` (a RESHAPE feeding a
rank-2 FULLY_CONNECTED), which the GPU delegate turns into ``{N,1,1,D}``; dynamic-INT8 compilation then fails with
"Unable to parse bc coord for BATCH axis".  Here every projection sees [1, N, D].  Also avoids SDPA's decomposition.
Exact to float rounding (same matmuls and softmax, eager instead of SDPA): rel-L2 ~1e-7.
"""

from __future__ import annotations

from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._modules import EdgeAttention

NAME = "static_attention"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def static_attention(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        if not isinstance(layer.attention, EdgeAttention):
            layer.attention = EdgeAttention(layer.attention)
            changed += 1
    return model, changed
