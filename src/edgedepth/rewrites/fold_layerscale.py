"""Fold DINOv2's LayerScale (lambda1 of layer_scale1/2) into ``o_proj`` and ``mlp.fc2``; the LayerScale becomes Identity.

Answers: 2 MULs over [1, N, D] per layer (24 in Depth Anything V2 Small), and a LiteRT GPU delegate bug: the plain
graph writes each as ``MUL(FC output [N, D], lambda [1, 1, D]) -> [1, N, D]``, which the GPU accelerator delegates
and computes wrongly (row 0 on every row; ``formats.tflite._gpu_hazard``, tests/test_litert_export.py).
Float-rounding exact: diag(l)(Wx+b) is computed as (diag(l)W)x + l*b, one rounding apart (rel-L2 ~1e-7).
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._exact import scale_output_rows

NAME = "fold_layerscale"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


@torch.no_grad()
def fold_layerscale(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        for ls_name, target in (("layer_scale1", layer.attention.o_proj), ("layer_scale2", layer.mlp.fc2)):
            ls = getattr(layer, ls_name)
            if isinstance(ls, nn.Identity):
                continue
            scale_output_rows(target, ls.lambda1.detach())
            setattr(layer, ls_name, nn.Identity())
            changed += 1
    return model, changed
