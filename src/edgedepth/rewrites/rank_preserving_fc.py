"""Make every Linear of the backbone and of the token reassemble a :class:`RankPreservingLinear` (``F.linear + b``).

Answers: LiteRT #9481.  With ``nn.Linear`` on a [1, N, D] input, litert-torch decomposes to ``addmm`` on a [N, D] view;
the converter then drops the output RESHAPE in front of the residual ADD, leaving ``fc2`` with keep_num_dims=False
(rank 3 -> 2) and ``o_proj`` on [N, D].  The GPU delegate turns those into ``{N,1,1,D}`` and dynamic-INT8 compilation
fails ("Unable to parse bc coord for BATCH axis").  After this rewrite every FULLY_CONNECTED keeps rank 3.
Float-rounding exact (matmul then bias add instead of addmm; rel-L2 ~1e-7).  Depth Anything 3's blocks (qkv, proj,
fc1, fc2) fail the same way in INT8 without it (measured on SwiftShader, tests/test_depth_anything_3.py).
"""

from __future__ import annotations

from torch import nn

from ._base import DEPTH_ANYTHING_3, DEPTH_ANYTHING_V2, RewriteContext, encoder_layers, fresh_copy
from ._modules import RankPreservingLinear, TokenReassemble

NAME = "rank_preserving_fc"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2, DEPTH_ANYTHING_3)     # the model families whose structure it walks


def _swap_linears(parent: nn.Module) -> int:
    changed = 0
    for name, child in list(parent.named_children()):
        if type(child) is nn.Linear:
            setattr(parent, name, RankPreservingLinear(child))
            changed += 1
        else:
            changed += _swap_linears(child)
    return changed


def rank_preserving_fc(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    changed = 0
    for layer in encoder_layers(model):
        changed += _swap_linears(layer)
    stage = getattr(getattr(model, "neck", None), "reassemble_stage", None)    # V2's DPT neck (token_reassemble)
    if isinstance(stage, TokenReassemble):
        changed += _swap_linears(stage.proj)
    return model, changed
