"""Depth Anything 3: the ViT's position embedding for the export size frozen into one constant.

Answers: at any grid other than the square 37x37 it was trained at (518x518), the package bicubic-resizes its
position-embedding table inside the graph (``interpolate_pos_encoding``); converted, that is GATHER_ND and BROADCAST_TO
on constants, which LiteRT's GPU delegate does not accelerate (16 GATHER_ND + 8 BROADCAST_TO at 56x56:
docs/spikes/depth-anything-3.md section 5).  The V2 family's freeze_position_embedding is the analogue.  The package
resizes with ``scale_factor = (grid + interpolate_offset) / 37`` (not the size), bicubic, no antialias; that is
recomputed here in float64 with a fixed operation order (:func:`._exact.bicubic_resize` with those factors) and
rounded to float32 once, so the constant is the same bytes on every CPU.  The backbone becomes the one-view
:class:`._modules.DA3MonoBackbone` with :class:`._modules.DA3FrozenTokens` as its ``tokens`` part.
Float-rounding exact where a resize happens (the package resizes in float32: the two constants are float32 roundings
apart; bounded against a float64 run in tests/test_depth_anything_3.py); bit-identical where none does (518x518).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, RewriteContext, fresh_copy
from ._exact import bicubic_resize
from ._modules import DA3FrozenTokens, DA3MonoBackbone

NAME = "da3_freeze_position_embedding"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_3,)     # the model families whose structure it walks


@torch.no_grad()
def da3_freeze_position_embedding(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    tokens = getattr(model.backbone, "tokens", None)
    if isinstance(tokens, DA3FrozenTokens):
        if (tokens.height, tokens.width) != (ctx.height, ctx.width):
            raise ValueError("position embedding already frozen for another size")
        return model, 0
    vit = model.backbone.pretrained
    ps = vit.patch_size
    if ctx.height % ps or ctx.width % ps or vit.num_register_tokens:
        raise ValueError(f"export size {ctx.height}x{ctx.width}: not a multiple of the patch size {ps} "
                         "(or a ViT with register tokens, which this rewrite does not know)")
    pos = position_embedding(vit, ctx.height // ps, ctx.width // ps, ctx.height == ctx.width)
    cls_pos = vit.cls_token + pos[:, :1]
    DA3MonoBackbone.of(model).tokens = DA3FrozenTokens(vit.patch_embed, cls_pos, pos[:, 1:], ctx.height, ctx.width)
    return model, 1


def position_embedding(vit: nn.Module, grid_h: int, grid_w: int, square: bool) -> torch.Tensor:
    """[1, 1 + grid_h*grid_w, C] as the package's ``interpolate_pos_encoding`` gives it (same branch rule, same
    sampling positions), the resize computed in float64 and rounded once."""
    table = vit.pos_embed
    n = table.shape[1] - 1
    side = int(math.sqrt(n))
    if grid_h * grid_w == n and square:                  # the package's no-interpolation branch
        return table.detach().clone()
    if vit.interpolate_antialias:
        raise ValueError("antialiased position-embedding resize: not reproduced by this rewrite")
    off = vit.interpolate_offset
    factors = (float(grid_h + off) / side, float(grid_w + off) / side) if off else None
    grid = table[:, 1:].reshape(1, side, side, -1).permute(0, 3, 1, 2)
    patch = bicubic_resize(grid, grid_h, grid_w, factors).to(table.dtype)
    patch = patch.permute(0, 2, 3, 1).reshape(1, grid_h * grid_w, -1)
    return torch.cat((table[:, :1], patch), dim=1)
