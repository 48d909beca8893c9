"""Depth Anything 3: attention without rank-5 tensors.

Answers: the package reshapes the qkv output to [B, N, 3, h, d] and permutes it (5-D), which LiteRT's GPU delegate
rejects (48 RESHAPEs and 12 TRANSPOSEs fall back to the CPU in DA3-Small at 518x518: docs/spikes/depth-anything-3.md).
Each block's attention becomes :class:`_modules.DA3Attention`: q, k, v as channel slices, heads as [B, h, N, d], the
package's QK-norm and rotary embedding unchanged.  Float rounding: written-out softmax attention instead of
scaled_dot_product_attention (within FP32 noise, tests/test_depth_anything_3.py).
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, RewriteContext, encoder_layers, fresh_copy
from ._modules import DA3Attention

NAME = "da3_rank4_attention"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_3,)     # the model families whose structure it walks


@torch.no_grad()
def da3_rank4_attention(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for block in encoder_layers(model):
        if not isinstance(block.attn, DA3Attention):
            block.attn = DA3Attention(block.attn)
            changed += 1
    return model, changed
