"""Fold LayerNorm's gamma/beta into the linear layers that consume the normalised tensor.

norm1 -> q/k/v (or the fused qkv), norm2 -> mlp.fc1, the backbone's output LayerNorm -> the four reassemble
projections (its output feeds nothing else: the CLS token is dropped).  W(g*n + b) + c == (W diag g) n + (W b + c).
Answers: 2 elementwise ops (MUL, ADD) over [1, N, D] per LayerNorm (25 LayerNorms -> 50 ops).
Float-rounding exact (rel-L2 ~1e-7); the folded values are the same bytes on every CPU (float64 products, exactly
rounded sums: :mod:`._exact`).  Needs :mod:`fast_layernorm` first.
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._exact import exact_matvec_add
from ._modules import EdgeLayerNorm, TokenReassemble

NAME = "fold_layernorm_affine"
EXACT = True
REQUIRES: tuple[str, ...] = ("fast_layernorm",)   # checked by apply_rewrites
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def _fold(norm: EdgeLayerNorm, consumers: list[nn.Module]) -> bool:
    if norm.weight is None and norm.bias is None:
        return False
    g = norm.weight.detach().double() if norm.weight is not None else None
    for mod in consumers:
        w = mod.weight.detach()
        w2 = w.reshape(w.shape[0], w.shape[1])                      # Linear [out,in] or 1x1 conv [out,in,1,1]
        if norm.bias is not None:
            bias = exact_matvec_add(w2, norm.bias, mod.bias)        # W b + c, CPU-independent
        else:
            bias = mod.bias.detach().double() if mod.bias is not None else torch.zeros(w.shape[0], dtype=torch.float64)
        w2 = w2.double()
        if g is not None:
            w2 = w2 * g[None, :]                                    # exact in float64, rounded once below
        mod.weight.copy_(w2.reshape(w.shape).to(mod.weight.dtype))
        if mod.bias is None:
            mod.bias = nn.Parameter(bias.to(mod.weight.dtype), requires_grad=False)
        else:
            mod.bias.copy_(bias.to(mod.bias.dtype))
    norm.weight = None
    norm.bias = None
    return True


@torch.no_grad()
def fold_layernorm_affine(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        for norm_name in ("norm1", "norm2"):
            if not isinstance(getattr(layer, norm_name), EdgeLayerNorm):
                raise ValueError("fold_layernorm_affine needs fast_layernorm first")
        att = layer.attention
        qkv = [att.qkv] if getattr(att, "qkv", None) is not None else [att.q_proj, att.k_proj, att.v_proj]
        changed += _fold(layer.norm1, qkv)
        changed += _fold(layer.norm2, [layer.mlp.fc1])
    bb = model.backbone
    if isinstance(bb.layernorm, EdgeLayerNorm) and getattr(bb, "apply_layernorm", True):
        stage = model.neck.reassemble_stage
        projs = list(stage.proj) if isinstance(stage, TokenReassemble) else [l.projection for l in stage.layers]
        changed += _fold(bb.layernorm, projs)
    return model, changed
