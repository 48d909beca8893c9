"""Depth Anything 3: the rotary-embedding positions as int64 constants for the export size.

Answers: ExecuTorch's dynamic INT8 (XNNPACKQuantizer through torchao's ``prepare_pt2e``): the package builds the
positions at run time from ``zeros(...).to(int64)``; in the prepared graph that chain reaches the rotary embedding's
``embedding`` op as float indices and the INT8 ``.pte`` export fails ("Expected tensor for argument #1 'indices' to
have one of the following scalar types: Long, Int").  With the positions as constants the chain is gone.  Bit-exact:
the same integers, computed once by the package's own ``_prepare_rope``.
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, RewriteContext, fresh_copy
from ._modules import DA3MonoBackbone, DA3StaticPositions

NAME = "da3_static_positions"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_3,)     # the model families whose structure it walks


@torch.no_grad()
def da3_static_positions(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    vit = model.backbone.pretrained
    if vit.rope is None or isinstance(getattr(model.backbone, "positions", None), DA3StaticPositions):
        return model, 0
    pos, pos_global = vit._prepare_rope(1, 1, ctx.height, ctx.width, torch.device("cpu"))
    DA3MonoBackbone.of(model).positions = DA3StaticPositions(pos, pos_global)
    return model, 1
