"""Depth Anything 3: the camera token put in place of token 0 by concatenation instead of index assignment.

Answers: at block ``alt_start`` the package writes the reference view's camera token over the CLS slot,
``x[:, :, 0] = cam_token`` (vision_transformer.py); the converter lowers that assignment to a SELECT_V2 with a
constant mask, which LiteRT's GPU delegate rejects ("if, else tensors must be ... same shape as output or constant
scalar": docs/spikes/depth-anything-3.md section 5), and everything after it fell back to the CPU.  The backbone becomes
the one-view :class:`._modules.DA3MonoBackbone` (bit-identical restatement, installed once for this rewrite and
da3_freeze_position_embedding) whose ``camera`` part is :class:`._modules.DA3ConcatCameraToken`:
``cat(token, x[:, 1:])``.  Exact: the same values moved, no arithmetic (torch.equal, tests/test_depth_anything_3.py).
"""

from __future__ import annotations

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, RewriteContext, fresh_copy
from ._modules import DA3ConcatCameraToken, DA3MonoBackbone

NAME = "da3_concat_camera_token"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_3,)     # the model families whose structure it walks


@torch.no_grad()
def da3_concat_camera_token(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    vit = model.backbone.pretrained
    if vit.alt_start == -1 or isinstance(getattr(model.backbone, "camera", None), DA3ConcatCameraToken):
        return model, 0
    DA3MonoBackbone.of(model).camera = DA3ConcatCameraToken(vit.camera_token)
    return model, 1
