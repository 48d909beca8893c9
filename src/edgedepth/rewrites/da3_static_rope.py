"""Depth Anything 3: each block's rotary position embedding with its table length fixed for the export size.

Answers: torch.export cannot trace the package's RotaryPositionEmbedding2D: ``max_position = int(positions.max()) + 1``
(rope.py) is a data-dependent value, and conversion stops there (GuardOnDataDependentSymNode; measured,
docs/spikes/depth-anything-3.md).  The positions depend only on the size: the ViT's own ``_prepare_rope`` gives them
here, local blocks get the patch grid's length and global blocks (odd blocks from ``alt_start``: one view, all patches
at (1, 1)) theirs.  Exact: the package's own table function on the same length, the same lookups (bit-identical,
tests/test_depth_anything_3.py).
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, RewriteContext, encoder_layers, fresh_copy
from ._modules import StaticRope

NAME = "da3_static_rope"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_3,)     # the model families whose structure it walks


@torch.no_grad()
def da3_static_rope(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    vit = model.backbone.pretrained
    if vit.rope is None:
        return model, 0
    pos, pos_nodiff = vit._prepare_rope(1, 1, ctx.height, ctx.width, torch.device("cpu"))
    length = {"local": int(pos.max()) + 1, "global": int(pos_nodiff.max()) + 1}
    changed = 0
    for i, block in enumerate(encoder_layers(model)):
        if block.attn.rope is None or isinstance(block.attn.rope, StaticRope):
            continue
        kind = "global" if vit.alt_start != -1 and i >= vit.alt_start and i % 2 == 1 else "local"
        block.attn.rope = StaticRope(block.attn.rope, length[kind])
        changed += 1
    return model, changed
