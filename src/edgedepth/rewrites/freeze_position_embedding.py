"""Freeze DINOv2's position-embedding interpolation for the export size into one constant.

Answers: ~33 ops of bicubic resize on constants in the converted graph, among them GATHER_ND and BROADCAST_TO, which
LiteRT's GPU delegate does not accelerate.  Exact (bit-identical): the constant is computed by transformers' own
``interpolate_pos_encoding`` (float32 bicubic, including its no-interpolation branch at 518x518), and the CLS/patch
additions are the same float adds in a different grouping of the concatenation.
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import RewriteContext, fresh_copy
from ._modules import FrozenEmbeddings

NAME = "freeze_position_embedding"
EXACT = True


@torch.no_grad()
def freeze_position_embedding(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    emb = model.backbone.embeddings
    if isinstance(emb, FrozenEmbeddings):
        if (emb.height, emb.width) != (ctx.height, ctx.width):
            raise ValueError("position embedding already frozen for another size")
        return fresh_copy(model), 0
    model = fresh_copy(model)
    emb = model.backbone.embeddings
    ph, pw = emb.patch_embeddings.patch_size
    if ctx.height % ph or ctx.width % pw:
        raise ValueError(f"export size {ctx.height}x{ctx.width} is not a multiple of the patch size {ph}x{pw}")
    n = (ctx.height // ph) * (ctx.width // pw) + 1
    dim = emb.position_embeddings.shape[-1]
    dummy = torch.zeros(1, n, dim, dtype=emb.position_embeddings.dtype)
    pos = emb.interpolate_pos_encoding(dummy, ctx.height, ctx.width)          # transformers' own code path
    cls_pos = emb.cls_token + pos[:, :1]
    model.backbone.embeddings = FrozenEmbeddings(emb.patch_embeddings, cls_pos, pos[:, 1:], ctx.height, ctx.width)
    return model, 1
