"""The monocular on-device model: one view ``pixel_values`` [B, 3, H, W] -> depth [B, H, W] and confidence [B, H, W]
(DualDPT head) or sky [B, H, W] (the mono / metric members' DPT head), running the package's own backbone (DinoV2) and
head unchanged.

Dropped from the package's ``DepthAnything3Net``: the camera encoder (only with given poses), the camera decoder
(pose from the last camera token) and the head's ray branch (torch.export removes it: nothing reads it).  With one view
the package's reference-view reordering (three views or more) never runs.  The DPT members' mono sky step (sky pixels'
depth set to the 99th percentile of a random sample of the rest) is post-processing, left to the user: the sky map
is an output.  ``DepthAnything3Net.forward`` takes
``[B, S(views), 3, H, W]``; this passes S = 1.
"""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from ...progress import quiet_output


@dataclasses.dataclass
class MonoOutput:
    predicted_depth: torch.Tensor       # [B, H, W] (the name every family's output has: checkpoint.DepthModule)
    confidence: torch.Tensor | None = None      # [B, H, W], DualDPT head
    sky: torch.Tensor | None = None             # [B, H, W], DPT head


class DA3Mono(nn.Module):
    """pixel_values [B, 3, H, W] (ImageNet-normalised, H and W multiples of 14) -> :class:`MonoOutput`.
    ``outputs``: the roles it fills (members.HEAD_OUTPUTS of its head)."""

    def __init__(self, backbone: nn.Module, head: nn.Module, preset: str):
        super().__init__()
        from depth_anything_3.model.dualdpt import DualDPT

        from .members import HEAD_OUTPUTS

        self.backbone = backbone
        self.head = head
        self.preset = preset
        self.outputs = HEAD_OUTPUTS["dualdpt" if isinstance(head, DualDPT) else "dpt"]

    def forward(self, pixel_values: torch.Tensor) -> MonoOutput:
        h, w = pixel_values.shape[-2:]
        feats, _ = self.backbone(pixel_values[:, None], cam_token=None, export_feat_layers=[])
        out = self.head(feats, h, w, patch_start_idx=0)
        if "sky" in self.outputs:
            return MonoOutput(out["depth"][:, 0], sky=out["sky"][:, 0])
        return MonoOutput(out["depth"][:, 0], out["depth_conf"][:, 0])


def package_net(preset: str):
    """The package's full ``DepthAnything3Net`` of ``preset``, built from its YAML (random init, no download)."""
    from depth_anything_3.cfg import create_object, load_config
    from depth_anything_3.registry import MODEL_REGISTRY

    return create_object(load_config(MODEL_REGISTRY[preset])).eval()


def build(arch) -> DA3Mono:
    """A :class:`DA3Mono` of ``arch`` (members.Arch): the preset's backbone and head, or tiny replacements of both
    with the preset's structure (same classes, smaller widths).  The package's log lines are silenced."""
    with quiet_output():
        return _build(arch)


def _build(arch) -> DA3Mono:
    net = package_net(arch.preset)
    backbone, head = net.backbone, net.head
    if arch.embed_dim is not None:
        from depth_anything_3.model.dinov2.vision_transformer import DinoVisionTransformer
        from depth_anything_3.model.dpt import DPT
        from depth_anything_3.model.dualdpt import DualDPT

        vit = backbone.pretrained
        backbone.out_layers = list(arch.out_layers)
        backbone.alt_start = backbone.qknorm_start = backbone.rope_start = arch.start
        backbone.pretrained = DinoVisionTransformer(
            img_size=518, patch_size=14, embed_dim=arch.embed_dim, depth=arch.depth, num_heads=arch.num_heads,
            mlp_ratio=4, ffn_layer="mlp", alt_start=arch.start, qknorm_start=arch.start, rope_start=arch.start,
            cat_token=vit.cat_token)
        dim_in = (2 if vit.cat_token else 1) * arch.embed_dim
        if arch.head == "dpt":          # the mono / metric presets' head: depth + sky
            head = DPT(dim_in=dim_in, output_dim=1, features=arch.features, out_channels=list(arch.out_channels))
        else:
            head = DualDPT(dim_in=dim_in, output_dim=2, features=arch.features, out_channels=list(arch.out_channels))
    return DA3Mono(backbone, head, arch.preset).eval()
