"""Drop the all-true bidirectional attention mask that transformers 5 builds under export.

Answers: BROADCAST_TO + SELECT_V2 over [1, heads, N, N] and one ADD per layer (12) in the converted graph; BROADCAST_TO
and SELECT_V2 are not accelerated by LiteRT's GPU delegate.  Exact (bit-identical): the mask adds 0 everywhere.

Replaces ``model.backbone`` (Dinov2Backbone) by :class:`EdgeBackbone`, which holds the same embeddings, layers and
LayerNorm and calls every layer with ``attention_mask=None``.
"""

from __future__ import annotations

from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, fresh_copy
from ._modules import EdgeBackbone

NAME = "drop_attention_mask"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def drop_attention_mask(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    bb = model.backbone
    if isinstance(bb, EdgeBackbone):
        return fresh_copy(model), 0
    cfg = bb.config
    if getattr(cfg, "reshape_hidden_states", False):
        raise ValueError("drop_attention_mask expects reshape_hidden_states=False (Depth Anything's backbone config)")
    model = fresh_copy(model)
    bb = model.backbone
    out_layers = [i for i, s in enumerate(bb.stage_names) if s in bb.out_features]   # stage_names[0] is "stem"
    model.backbone = EdgeBackbone(bb.embeddings, bb.encoder.layer, bb.layernorm, out_layers, cfg.apply_layernorm)
    return model, len(model.backbone.layers)
