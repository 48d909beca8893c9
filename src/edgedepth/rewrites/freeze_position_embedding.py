"""Freeze DINOv2's position-embedding interpolation for the export size into one constant.

Answers: ~33 ops of bicubic resize on constants in the converted graph, among them GATHER_ND and BROADCAST_TO, which
LiteRT's GPU delegate does not accelerate.  The resize is transformers' ``interpolate_pos_encoding`` (bicubic,
A=-0.75, align_corners=False, same branch rule: no resize when the grid already matches and the image is square) but
computed in float64 with a fixed operation order (:func:`._exact.bicubic_resize`) and rounded to float32 once, so the
constant is the same bytes on every CPU; PyTorch's float32 bicubic kernel gives different bits under different CPU
capabilities.  Float-rounding exact where a resize happens (<= 1 float32 rounding per value); bit-identical where it
does not (e.g. 518x518).  The CLS/patch additions are the same float adds in a different grouping of the concatenation.
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, fresh_copy
from ._exact import bicubic_resize
from ._modules import FrozenEmbeddings

NAME = "freeze_position_embedding"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


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
    pos = _position_embedding(emb.position_embeddings, ctx.height // ph, ctx.width // pw, ctx.height == ctx.width)
    cls_pos = emb.cls_token + pos[:, :1]
    model.backbone.embeddings = FrozenEmbeddings(emb.patch_embeddings, cls_pos, pos[:, 1:], ctx.height, ctx.width)
    return model, 1


def _position_embedding(table: torch.Tensor, grid_h: int, grid_w: int, square: bool) -> torch.Tensor:
    """[1, 1 + grid_h*grid_w, D] position embedding for a grid, as Dinov2Embeddings.interpolate_pos_encoding."""
    n_pos = table.shape[1] - 1
    side = int(round(n_pos ** 0.5))
    if grid_h * grid_w == n_pos and square:                  # transformers' no-interpolation branch
        return table
    dim = table.shape[-1]
    grid = table[:, 1:].reshape(1, side, side, dim).permute(0, 3, 1, 2)
    patch = bicubic_resize(grid, grid_h, grid_w).to(table.dtype).permute(0, 2, 3, 1).reshape(1, -1, dim)
    return torch.cat((table[:, :1], patch), dim=1)
