"""Keep DINOv2's residual stream zero-mean over channels by construction, so no LayerNorm has to subtract its mean.

LayerNorm(x) == LayerNorm(Cx) with C = I - 11^T/D (the centring projection).  Everything that writes into the stream
is linear and its output goes through C once: the patch conv, the CLS/position constants, every ``o_proj`` and
``fc2`` (rows recentred: W' = CW, b' = Cb).  Then every LayerNorm — norm1, norm2 and the backbone's output LayerNorm —
can skip MEAN + SUB (50 ops and two passes over [1, N, D] each in Depth Anything V2 Small).
Float-rounding exact (rel-L2 ~1e-7, measured in tests); means are exactly rounded sums (:mod:`._exact`), so the
centred weights are the same bytes on every CPU.  Needs freeze_position_embedding, fold_layerscale and
fast_layernorm first.
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._exact import exact_center
from ._modules import EdgeBackbone, EdgeLayerNorm, FrozenEmbeddings

NAME = "center_residual_stream"
EXACT = True
REQUIRES: tuple[str, ...] = ("drop_attention_mask", "freeze_position_embedding", "fold_layerscale", "fast_layernorm")   # checked by apply_rewrites
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def _center_rows(weight: torch.Tensor, bias: torch.Tensor | None) -> None:
    weight.copy_(exact_center(weight, 0).to(weight.dtype))
    if bias is not None:
        bias.copy_(exact_center(bias, 0).to(bias.dtype))


def _center_last(t: torch.Tensor) -> None:
    t.copy_(exact_center(t, t.dim() - 1).to(t.dtype))


@torch.no_grad()
def center_residual_stream(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    bb = model.backbone
    if not isinstance(bb, EdgeBackbone) or not isinstance(bb.embeddings, FrozenEmbeddings):
        raise ValueError("center_residual_stream needs drop_attention_mask and freeze_position_embedding first")
    layers = encoder_layers(model)
    norms = [bb.layernorm] + [getattr(l, n) for l in layers for n in ("norm1", "norm2")]
    if not all(isinstance(n, EdgeLayerNorm) for n in norms):
        raise ValueError("center_residual_stream needs fast_layernorm first")
    if all(n.centered for n in norms):
        return fresh_copy(model), 0
    for l in layers:
        if not (isinstance(l.layer_scale1, nn.Identity) and isinstance(l.layer_scale2, nn.Identity)):
            raise ValueError("center_residual_stream needs fold_layerscale first")
        if not isinstance(getattr(l, "drop_path", nn.Identity()), nn.Identity):
            raise ValueError("center_residual_stream expects no drop-path")
    model = fresh_copy(model)
    bb = model.backbone
    emb = bb.embeddings
    conv = emb.patch_embeddings.projection
    _center_rows(conv.weight, conv.bias)
    _center_last(emb.cls_pos)
    _center_last(emb.patch_pos)
    changed = 1
    for l in encoder_layers(model):
        _center_rows(l.attention.o_proj.weight, l.attention.o_proj.bias)
        _center_rows(l.mlp.fc2.weight, l.mlp.fc2.bias)
        l.norm1.centered = True
        l.norm2.centered = True
        changed += 1
    bb.layernorm.centered = True
    return model, changed
