"""Run each attention core (``softmax(q k^T) v``) on rank-4 [1, h, N, d] tensors instead of rank-3 [h, N, d].

Answers: LiteRT's GPU delegate runs BATCH_MATMUL on rank-3 [6, 1814, 64] operands far slower than on rank-4
[1, 6, 1814, 64].  Measured on the H200 (benchmarks/gpu_attribution.py -> results/gpu_attribution.json, one
interleaved run): 0.73 vs 0.50 ms per attention core; whole 518x686 model 18.3 -> 15.3 ms with FP32 enforced,
15.8 -> 12.7 ms at default precision.  Costs 5 RESHAPEs per layer (397 -> 457 ops), which the CPU does not feel
(results/gpu_rewrites_cpu.json, 8 interleaved rounds on LiteRT CPU: FP32 and INT8 no slower).  Exact: the same products
and sums, only the shapes around them change (bit-identical in PyTorch).  Needs :mod:`static_attention` first.
"""

from __future__ import annotations

from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._modules import EdgeAttention

NAME = "rank4_attention"
EXACT = True
REQUIRES: tuple[str, ...] = ("static_attention",)
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def rank4_attention(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        att = layer.attention
        if isinstance(att, EdgeAttention) and not att.rank4:
            att.rank4 = True
            changed += 1
    return model, changed
