"""Split a DPT neck/head convolution whose weight exceeds 32 MiB into output-channel slices joined by a concatenation.

Answers: ai-edge-quantizer 0.10.0 (and litert-quantizer 0.11.0) cannot quantise a channelwise weight above 32 MiB:
its chunked path broadcasts the [O,1,1,1] scales to the 2-D reshaped weight and raises "input operand has more
dimensions than allowed by the axis remapping" (upstream issue google-ai-edge/ai-edge-quantizer#512, fixes #482/#513
open).  Depth Anything V2 Large's last reassemble resize, Conv2d(1024, 1024, 3, stride 2), is 37.7 MB, so the dynamic
INT8 Large file could not be made; Small and Base have no such weight (the rewrite changes nothing there).
``tests/test_rewrites.py`` keeps a canary on the upstream bug: when it is fixed, this rewrite can go.

Exact: every output channel is the same dot product over the same inputs and weights; only which kernel call computes
it changes (float-rounding exact: within FP32 noise, kernels may tile the reduction differently).  Adds one
CONCATENATION per split convolution (GPU-delegated like every other op).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, fresh_copy

NAME = "split_large_conv"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks

MAX_WEIGHT_BYTES = 32 * 1024 * 1024      # the quantizer's chunked-path threshold (tensor_data.nbytes > 32 MiB)


class SplitConv2d(nn.Module):
    """``conv`` as ``parts`` convolutions over consecutive output-channel slices, concatenated on channels."""

    def __init__(self, conv: nn.Conv2d, parts: int):
        super().__init__()
        bounds = [round(i * conv.out_channels / parts) for i in range(parts + 1)]
        self.parts = nn.ModuleList()
        for lo, hi in zip(bounds, bounds[1:]):
            c = nn.Conv2d(conv.in_channels, hi - lo, conv.kernel_size, conv.stride, conv.padding, conv.dilation,
                          conv.groups, conv.bias is not None, conv.padding_mode)
            c.weight = nn.Parameter(conv.weight.detach()[lo:hi].clone(), requires_grad=False)
            if conv.bias is not None:
                c.bias = nn.Parameter(conv.bias.detach()[lo:hi].clone(), requires_grad=False)
            self.parts.append(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cat([c(x) for c in self.parts], dim=1)


@torch.no_grad()
def split_large_convs(model: nn.Module, max_bytes: int = MAX_WEIGHT_BYTES) -> tuple[nn.Module, int]:
    """The rewrite with its threshold (tests use a small one on the tiny stand-ins)."""
    model = fresh_copy(model)
    mods = [(f"{part}.{name}", m) for part in ("neck", "head") for name, m in getattr(model, part).named_modules()]
    done = tuple(name + "." for name, m in mods if isinstance(m, SplitConv2d))     # its slices stay as they are
    big = [(name, m) for name, m in mods if type(m) is nn.Conv2d and m.groups == 1 and not name.startswith(done)
           and m.weight.numel() * m.weight.element_size() > max_bytes]
    for name, conv in big:
        parent_name, _, child = name.rpartition(".")
        parts = math.ceil(conv.weight.numel() * conv.weight.element_size() / max_bytes)
        setattr(model.get_submodule(parent_name), child, SplitConv2d(conv, parts))
    return model, len(big)


def split_large_conv(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    return split_large_convs(model)
