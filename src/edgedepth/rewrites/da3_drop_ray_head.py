"""Depth Anything 3: DualDPT without its ray (aux) branch.

Answers: the monocular model exports depth only, but the package's DualDPT always runs its second fusion chain and
four output stacks for rays (``refinenet*_aux``, ``output_conv1_aux``, ``output_conv2_aux``): about 15 % of the head's
parameters and compute in eager PyTorch, and a dead branch that only torch.export's dead-code elimination keeps out
of the files.  The head becomes :class:`._modules.DA3DepthHead`: the package's ``_forward_impl`` restated for the
depth and confidence outputs (the same modules and ops, their UV position embeddings as swappable parts for
da3_constant_uv_embedding), the ray modules deleted.  Exact: the depth branch never reads the ray branch
(torch.equal on depth and confidence, tests/test_depth_anything_3.py).  The mono / metric members' plain DPT head has
no ray branch: it is left as it is (0 changes).
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, RewriteContext, fresh_copy
from ._modules import DA3DepthHead

NAME = "da3_drop_ray_head"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_3,)     # the model families whose structure it walks


@torch.no_grad()
def da3_drop_ray_head(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    if isinstance(model.head, DA3DepthHead) or not hasattr(model.head.scratch, DA3DepthHead.AUX[-1]):
        return model, 0
    model.head = DA3DepthHead(model.head)
    return model, 1
