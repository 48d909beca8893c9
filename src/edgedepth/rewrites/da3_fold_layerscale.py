"""Depth Anything 3: fold each block's LayerScale (``ls1.gamma``, ``ls2.gamma``) into ``attn.proj`` and ``mlp.fc2``.

Answers: the LiteRT GPU delegate bug measured in benchmarks/gpu_hazards.py — the converter writes each LayerScale as
``MUL(FC output [N, C], gamma [1, 1, C]) -> [1, N, C]``, which the GPU accelerator delegates and computes wrongly (row 0
on every row; DA3's GPU output was 0.19 rel-L2 off the CPU's until this fold, docs/spikes/depth-anything-3/
bisect_FINDINGS.md) — and 2 MULs per block.  Float-rounding exact, as V2's fold_layerscale: diag(g)(Wx + b) computed
as (diag(g)W)x + g*b, one rounding apart.
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, RewriteContext, encoder_layers, fresh_copy
from ._exact import scale_output_rows

NAME = "da3_fold_layerscale"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_3,)     # the model families whose structure it walks


@torch.no_grad()
def da3_fold_layerscale(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for block in encoder_layers(model):
        for ls_name, target in (("ls1", block.attn.proj), ("ls2", block.mlp.fc2)):
            ls = getattr(block, ls_name)
            if isinstance(ls, nn.Identity):
                continue
            scale_output_rows(target, ls.gamma.detach())
            setattr(block, ls_name, nn.Identity())
            changed += 1
    return model, changed
