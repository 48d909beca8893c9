"""Fold the attention scale 1/sqrt(head_dim) into the query projection's weight and bias.

Answers: one MUL over [1, heads, N, N] (or [1, heads, N, d]) per layer.  Exact: for head_dim 64 (and 16 in the tiny
test model) the scale is a power of two, so scaling the weights is bit-identical; otherwise float-rounding level.
Works on transformers' Dinov2Attention and on EdgeAttention (fused or separate q/k/v).
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy

NAME = "fold_attention_scale"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


@torch.no_grad()
def fold_attention_scale(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        att = layer.attention
        s = float(att.scaling)
        if s == 1.0:
            continue
        fused = getattr(att, "qkv", None)
        if fused is not None:
            rows = slice(0, att.num_heads * att.head_dim)
            fused.weight[rows] *= s
            if fused.bias is not None:
                fused.bias[rows] *= s
        else:
            att.q_proj.weight.mul_(s)
            if att.q_proj.bias is not None:
                att.q_proj.bias.mul_(s)
        att.scaling = 1.0
        changed += 1
    return model, changed
