"""Replace the DPT reassemble stage by :class:`TokenReassemble`: 1x1 projection as a rank-3 Linear on the tokens,
CLS dropped by one slice, one static reshape to [1, h, w, C] and a permute the converter folds into its NHWC layout.

Answers: the reshape/transpose pairs around the four 384-channel 1x1 convolutions (NCHW <-> NHWC) in the neck.
Exact to float rounding (a 1x1 conv and a Linear are the same dot products; rel-L2 ~1e-7).
"""

from __future__ import annotations

from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, fresh_copy
from ._modules import TokenReassemble

NAME = "token_reassemble"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def token_reassemble(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    if isinstance(model.neck.reassemble_stage, TokenReassemble):
        return fresh_copy(model), 0
    model = fresh_copy(model)
    ph, pw = ctx.patch_grid(model.config.patch_size)
    stage = model.neck.reassemble_stage
    model.neck.reassemble_stage = TokenReassemble(stage, ph, pw)
    return model, len(stage.layers)
