"""Split a convolution whose weights would make a WebGPU texture taller than 8192 texels into input-channel groups
whose results are summed.

Answers: LiteRT's WebGPU delegate stores a convolution's weights as a 2-D texture ``in_channels x kh x kw`` texels high
(measured: a 3x3 convolution over 1024 channels asks for 64 x 9216), and WebGPU's default ``maxTextureDimension2D`` is
8192 (SwiftShader's limit; an adapter's own may be higher: the H200's runs V2 Large).  Depth Anything V2 Large and
Depth Anything 3 Mono-/Metric-Large compile fully on the GPU and then fail WebGPU validation ("Texture size ... exceeded
maximum texture size"; benchmarks/results/family.json, da3_delegation_mono_large.json).  Each such ``nn.Conv2d``
becomes :class:`InputSplitConv2d`: the same convolution over consecutive input-channel groups of at most
``8192 // (kh * kw)`` channels (a multiple of 4), summed, the bias added once.  Small and Base have no such layer (the
rewrite changes nothing there).

Float-rounding exact: the same products, the reduction over input channels summed in two or more parts (within FP32
noise: tests/test_rewrites.py).  Adds one SLICE per group and one ADD per extra group.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ._base import DEPTH_ANYTHING_3, DEPTH_ANYTHING_V2, RewriteContext, fresh_copy

NAME = "split_wide_conv"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2, DEPTH_ANYTHING_3)     # the model families whose structure it walks

MAX_TEXELS = 8192       # WebGPU's default maxTextureDimension2D


class InputSplitConv2d(nn.Module):
    """``conv`` as convolutions over consecutive input-channel groups (``bounds``), summed; the bias in the first."""

    def __init__(self, conv: nn.Conv2d, bounds: list[int]):
        super().__init__()
        self.bounds = tuple(bounds)
        self.parts = nn.ModuleList()
        for i, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
            bias = conv.bias is not None and i == 0
            c = nn.Conv2d(hi - lo, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, conv.dilation,
                          1, bias, conv.padding_mode)
            c.weight = nn.Parameter(conv.weight.detach()[:, lo:hi].clone(), requires_grad=False)
            if bias:
                c.bias = nn.Parameter(conv.bias.detach().clone(), requires_grad=False)
            self.parts.append(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.parts[0](x[:, self.bounds[0]:self.bounds[1]])
        for c, lo, hi in zip(self.parts[1:], self.bounds[1:], self.bounds[2:]):
            out = out + c(x[:, lo:hi])
        return out


def group_bounds(in_channels: int, kernel_texels: int, max_texels: int = MAX_TEXELS) -> list[int] | None:
    """Input-channel bounds of groups of at most ``max_texels // kernel_texels`` channels (a multiple of 4), as even
    as that allows; None when one group fits, or when no group of 4 channels would."""
    most = (max_texels // kernel_texels) // 4 * 4
    if in_channels * kernel_texels <= max_texels or most == 0:
        return None
    parts = math.ceil(in_channels / most)
    step = math.ceil(in_channels / parts / 4) * 4
    return [min(i * step, in_channels) for i in range(parts)] + [in_channels]


@torch.no_grad()
def split_wide_convs(model: nn.Module, max_texels: int = MAX_TEXELS) -> tuple[nn.Module, int]:
    """The rewrite with its limit (tests use a small one on the tiny stand-ins)."""
    model = fresh_copy(model)
    done = tuple(name + "." for name, m in model.named_modules() if isinstance(m, InputSplitConv2d))
    wide = [(name, m, b) for name, m in model.named_modules() if type(m) is nn.Conv2d and m.groups == 1
            and not name.startswith(done)
            and (b := group_bounds(m.in_channels, m.kernel_size[0] * m.kernel_size[1], max_texels)) is not None]
    for name, conv, bounds in wide:
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, InputSplitConv2d(conv, bounds))
    return model, len(wide)


def split_wide_conv(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    return split_wide_convs(model)
