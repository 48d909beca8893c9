"""Write each encoder layer's attention head by head (:class:`PerHeadAttention`): no RESHAPE/TRANSPOSE/SPLIT.

Answers: the GPU delegate stores tensors as BHWC with channels packed by 4; the fused head-major path
([1,N,3hd] -> [N,3h,d] -> TRANSPOSE [3h,N,d] -> SPLIT) makes it re-layout 1814x1152 floats twice per layer, and runs
attention as one [6,N,N] BATCH_MATMUL.  Per head, everything stays token-major [1,N,C].  Costs ops (per layer
3x6 FULLY_CONNECTED, 2x6 BATCH_MATMUL, 6 SOFTMAX, 1 CONCATENATION instead of 11 ops).  Measured on the H200
(benchmarks/gpu_attribution.py): 853 ops, 1.61x the shipped file's GPU time (per-head cores at [1, N, 64] are slower
than one [1, 6, N, 64] core), so it is off by default and kept for experiments.  Exact: every projection column, score and
weighted sum is the same dot product as in the fused form.
"""

from __future__ import annotations

from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._modules import EdgeAttention, PerHeadAttention

NAME = "unroll_heads"
EXACT = True
REQUIRES: tuple[str, ...] = ("static_attention", "fold_attention_scale")
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def unroll_heads(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        if isinstance(layer.attention, EdgeAttention):
            layer.attention = PerHeadAttention(layer.attention)
            changed += 1
    return model, changed
