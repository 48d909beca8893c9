"""Fuse q_proj/k_proj/v_proj into one Linear whose output is split into q, k, v after one head reshape/transpose.

Answers: per layer 3 FULLY_CONNECTED + 3 RESHAPE + 3 TRANSPOSE become 1 FULLY_CONNECTED + 1 RESHAPE + 1 TRANSPOSE +
1 SPLIT, and one wide GEMM instead of three narrow ones.  Exact: each output column is the same dot product.
Needs :mod:`static_attention` first (acts on EdgeAttention).
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._modules import EdgeAttention

NAME = "fuse_qkv"
EXACT = True
REQUIRES: tuple[str, ...] = ("static_attention",)   # checked by apply_rewrites
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


@torch.no_grad()
def fuse_qkv(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        att = layer.attention
        if not isinstance(att, EdgeAttention):
            raise ValueError("fuse_qkv needs static_attention first")
        if att.qkv is not None:
            continue
        projs = (att.q_proj, att.k_proj, att.v_proj)
        fused = nn.Linear(projs[0].in_features, sum(p.out_features for p in projs), bias=True)
        fused.weight.copy_(torch.cat([p.weight for p in projs], 0))
        fused.bias.copy_(torch.cat([p.bias if p.bias is not None else torch.zeros(p.out_features) for p in projs]))
        fused.requires_grad_(False)
        att.qkv = fused
        att.q_proj = att.k_proj = att.v_proj = None
        changed += 1
    return model, changed
