"""Seeded realistic weights for Depth Anything 3 stand-ins, the same bytes on every CPU (models._weights)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from .._weights import normal_like


@torch.no_grad()
def realistic_init(model: nn.Module, seed: int) -> None:
    """Overwrite every parameter with seeded values shaped like trained ones (nothing zero, nothing exactly one):
    LayerScale ~0.2, norm scales ~1, small biases and tokens, fan-in scaled weights.  The head's last convolution is
    scaled down so that its exp activations stay in a trained model's range (depth and confidence of order 1)."""
    rng = np.random.Generator(np.random.PCG64(seed))
    for name, p in model.named_parameters():
        shape = tuple(p.shape)
        if name.endswith(".gamma"):                                      # LayerScale
            p.copy_(normal_like(rng, shape, 0.05, 0.2))
        elif "norm" in name and name.endswith("weight"):                  # LayerNorm / QK-norm scales
            p.copy_(normal_like(rng, shape, 0.1, 1.0))
        elif name.endswith("bias"):
            p.copy_(normal_like(rng, shape, 0.02))
        elif name.endswith(("pos_embed", "cls_token", "camera_token", "mask_token")):
            p.copy_(normal_like(rng, shape, 0.02))
        else:
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            p.copy_(normal_like(rng, shape, 1.0 / fan_in ** 0.5))
    last = model.head.scratch.output_conv2[-1]       # logits of depth and confidence: keep exp() near 1
    last.weight.mul_(0.25)
