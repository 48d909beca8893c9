"""Depth Anything 3: DualDPT's UV position embeddings as separable constants for the export size.

Answers: the head adds a sin/cos embedding of a UV grid after each of its four projections and after the final
upsample (``_add_pos_embed``).  Its ``torch.meshgrid`` converts to BROADCAST_TO on constants, which LiteRT's GPU
delegate does not accelerate (and the 10 SIN + 10 COS behind it stay in the graph): docs/spikes/depth-anything-3.md
section 5.  Evaluated once with the package's own functions, the embedding is separable -- its first C/2 channels
depend only on the column, the last C/2 only on the row -- so each place becomes
:class:`._modules.DA3SeparableUVEmbedding`: ``cat(x[:, :C/2] + u, x[:, C/2:] + v)`` with ``u`` [1, C/2, 1, w] and
``v`` [1, C/2, h, 1].  Stored values C/2*(h+w) instead of C*h*w (a full constant for the final map of DA3-Small at
518x518 is [1, 32, 518, 518] = 34 MB; ``x + u' + v'`` with zero-padded halves measured the same 34 MB: the converter
folds the two constants into one), and both ADDs keep the runtime tensor first at full rank, so neither is the GPU
hazard ``tflite.describe`` counts (a broadcast ADD whose lower-rank *first* input meets a constant).
Exact: the same one float add per element as the package (torch.equal, tests/test_depth_anything_3.py).
Requires da3_drop_ray_head (its head holds the embeddings as parts; the ray branch has a sixth).
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, RewriteContext, fresh_copy
from ._modules import DA3SeparableUVEmbedding, DA3UVEmbedding

NAME = "da3_constant_uv_embedding"
EXACT = True
REQUIRES: tuple[str, ...] = ("da3_drop_ray_head",)
FAMILIES = (DEPTH_ANYTHING_3,)     # the model families whose structure it walks


@torch.no_grad()
def da3_constant_uv_embedding(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    head = model.head
    if getattr(head, "uv_embeds", None) is None:      # none to freeze (a plain DPT head: pos_embed False)
        return model, 0
    H, W = ctx.height, ctx.width
    ph, pw = H // head.patch_size, W // head.patch_size
    shapes = [(head.projects[i].out_channels, ph, pw) for i in range(4)]
    shapes.append((head.scratch.output_conv1.out_channels, int(ph * head.patch_size / head.down_ratio),
                   int(pw * head.patch_size / head.down_ratio)))
    changed = 0
    for i, (c, h, w) in enumerate(shapes):
        emb = head.uv_embeds[i]
        if isinstance(emb, DA3SeparableUVEmbedding):
            if emb.size != (H, W):
                raise ValueError("UV embeddings already frozen for another size")
            continue
        assert isinstance(emb, DA3UVEmbedding), type(emb)
        head.uv_embeds[i] = DA3SeparableUVEmbedding(*separable_parts(emb, c, h, w, W, H), W, H)
        changed += 1
    return model, changed


def separable_parts(emb: nn.Module, c: int, h: int, w: int, W: int, H: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(u [1, c/2, 1, w], v [1, c/2, h, 1]): the package's embedding of an h x w map is cat(u, v) broadcast over
    rows / columns (checked, exactly)."""
    pe = emb(torch.zeros(1, c, h, w), W, H)          # 0 + pe: the package's float32 values exactly
    half = c // 2
    u, v = pe[:, :half, :1, :].clone(), pe[:, half:, :, :1].clone()
    if c % 2 or not torch.equal(torch.cat((u.expand(-1, -1, h, -1), v.expand(-1, -1, -1, w)), dim=1), pe):
        raise ValueError(f"UV embedding of a {c}x{h}x{w} map is not separable by channel halves")
    return u, v
