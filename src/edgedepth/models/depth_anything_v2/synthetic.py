"""Synthetic stand-ins of Depth Anything V2 members: the member's exact architecture (transformers'
``DepthAnythingForDepthEstimation``) with seeded *realistic* weights, the same bytes on every CPU.

Realistic: non-zero biases, LayerScale values away from 1, LayerNorm scales away from 1.  HF's own init (zero biases,
unit scales) lets the converter constant-fold patterns that real weights produce (716 vs 748 ops for Small), so it
would hide exactly the op patterns the rewrites target.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ...images import image_set
from ...preprocess import preprocess
from .._weights import normal_like, on_grid
from .members import MEMBERS, SYNTHETIC, Arch


def synthetic_config(kind: str = "synthetic"):
    """DepthAnythingConfig of a synthetic name: its family member's architecture and head (.members)."""
    member_name, a = SYNTHETIC[kind]
    member = MEMBERS[member_name]
    return model_config(a, member.max_depth if member.is_metric else None)


def model_config(a: Arch, max_depth: float | None = None):
    """DepthAnythingConfig of architecture ``a``: a relative head, or a metric one (sigmoid x ``max_depth`` metres)."""
    from transformers import DepthAnythingConfig, Dinov2Config

    backbone = Dinov2Config(
        hidden_size=a.hidden_size, num_hidden_layers=a.num_hidden_layers, num_attention_heads=a.num_attention_heads,
        mlp_ratio=4, patch_size=14, image_size=518, out_features=[f"stage{i}" for i in a.out_indices],
        reshape_hidden_states=False, apply_layernorm=True, layerscale_value=1.0,
    )
    metric = dict(depth_estimation_type="metric", max_depth=max_depth) if max_depth is not None else \
        dict(depth_estimation_type="relative")
    return DepthAnythingConfig(
        backbone_config=backbone, fusion_hidden_size=a.fusion_hidden_size, neck_hidden_sizes=list(a.neck_hidden_sizes),
        reassemble_factors=[4, 2, 1, 0.5], reassemble_hidden_size=a.hidden_size,
        head_hidden_size=a.head_hidden_size, **metric,
    )


@torch.no_grad()
def realistic_init(model: nn.Module, seed: int) -> None:
    """Overwrite every parameter with seeded values shaped like trained ones (nothing zero, nothing exactly one).

    CPU-independent by construction: values from :func:`_normal_like`; the head calibration below runs in float64 on
    bundled photos and keeps only two numbers rounded to a coarse grid, applied with correctly rounded float32 ops.
    """
    rng = np.random.Generator(np.random.PCG64(seed))

    def rnd(shape, std, mean=0.0):
        return normal_like(rng, tuple(shape), std, mean)

    for name, p in model.named_parameters():
        if "lambda1" in name:                                   # LayerScale: trained DINOv2 values are ~0.01..1
            p.copy_(rnd(p.shape, 0.05, 0.2))
        elif ("norm" in name) and name.endswith("weight"):       # LayerNorm gamma
            p.copy_(rnd(p.shape, 0.1, 1.0))
        elif name.endswith("bias"):
            p.copy_(rnd(p.shape, 0.02))
        elif "position_embeddings" in name or "cls_token" in name or "mask_token" in name:
            p.copy_(rnd(p.shape, 0.02))
        else:                                                   # conv / linear weights: fan-in scaled
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            p.copy_(rnd(p.shape, 1.0 / fan_in ** 0.5))
    # Make the relative head produce a varied, mostly positive map on photos, as a trained head does (with random
    # weights the final ReLU would zero much of it): standardise conv3's output over CALIBRATION_PHOTOS bundled photos
    # and shift it so that its 5th percentile sits at +0.25 (measured: 70-100 % positive pixels on other photos).
    head = model.head
    size = (224, 224) if model.config.backbone_config.hidden_size > 64 else (56, 70)
    feats = []
    hook = head.conv3.register_forward_hook(lambda m, i, o: feats.append(o.detach().flatten()))
    model.double()
    try:
        for x in _calibration_photos(size):
            model(pixel_values=torch.from_numpy(x).double())
    finally:
        model.float()
        hook.remove()
    z = torch.cat(feats) - head.conv3.bias.detach().double()
    std = on_grid(max(float(z.std()), 1e-12))
    q05 = on_grid(float(torch.quantile(z / std, 0.05)))
    head.conv3.weight.copy_((head.conv3.weight.double() / std).float())       # one IEEE division, one rounding
    if getattr(model.config, "depth_estimation_type", "relative") == "metric":
        # metric head: sigmoid(conv3) x max_depth; centre the logits at -1 (about a quarter of max_depth), unit spread
        q50 = on_grid(float(torch.quantile(z / std, 0.5)))
        head.conv3.bias.copy_(torch.full_like(head.conv3.bias, -1.0 - q50))
    else:
        head.conv3.bias.copy_(torch.full_like(head.conv3.bias, 0.25 - q05))


CALIBRATION_PHOTOS = 8


def _calibration_photos(size: tuple[int, int]):
    """CALIBRATION_PHOTOS views spread over the bundled default image set, preprocessed at ``size`` (deterministic:
    Pillow's integer resampling and elementwise float32 normalisation)."""
    items = image_set()
    step = max(1, len(items) // CALIBRATION_PHOTOS)
    return [preprocess(it.load(), size) for it in items[::step][:CALIBRATION_PHOTOS]]


def synthetic_model(kind: str, seed: int) -> nn.Module:
    """The eval-mode stand-in ``kind`` (a key of ``SYNTHETIC``) with seeded realistic weights."""
    from transformers import DepthAnythingForDepthEstimation

    torch.manual_seed(seed)
    model = DepthAnythingForDepthEstimation(synthetic_config(kind)).eval()
    realistic_init(model, seed)
    return model
