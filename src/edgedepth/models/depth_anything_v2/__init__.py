"""Depth Anything V2 (transformers' ``DepthAnythingForDepthEstimation``: a DINOv2 ViT backbone and a DPT head).

I/O contract: ``pixel_values`` float32 [1, 3, H, W], RGB, /255, ImageNet mean/std, H and W multiples of 14 ->
``predicted_depth`` float32 [1, H, W]: relative inverse depth (larger = closer, >= 0: ReLU head), or metric depth in
metres for the metric members (sigmoid x ``max_depth``).  Members and licences: :mod:`.members`; stand-ins:
:mod:`.synthetic`; the official repository's .pth files: :mod:`.official`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ...fsutil import sha256_file
from ...preprocess import MEAN, PATCH, STD
from ...variants import split_variant
from .. import _hub
from ..base import Checkpoint, Member, ModelFamily
from .members import MEMBERS, NAME, SYNTHETIC, member_of_config

if TYPE_CHECKING:
    from torch import nn


class DepthAnythingV2(ModelFamily):
    name = NAME
    title = "Depth Anything"
    model_types = ("depth_anything",)
    members = MEMBERS
    synthetic = SYNTHETIC
    mean, std, patch = MEAN, STD, PATCH
    card_title = "Depth Anything V2"
    hub_tag = "depth-anything-v2"
    paper = "https://arxiv.org/abs/2406.09414"
    citation = """@article{depth_anything_v2,
  title={Depth Anything V2},
  author={Yang, Lihe and Kang, Bingyi and Huang, Zilong and Zhao, Zhen and Xu, Xiaogang and Feng, Jiashi and Zhao, Hengshuang},
  journal={arXiv:2406.09414},
  year={2024}
}"""
    implementation = "transformers"
    size_notice = "(position embedding interpolated once per size, bicubic, as transformers does)"
    fp16_note = "this model's DPT head can overflow FP16"
    file_suffixes = (".pth", ".pt", ".safetensors")
    file_hint = "an official Depth Anything V2 state dict (.pth, .pt, .safetensors)"

    def card_about(self, info: dict) -> str:
        if info["family_member"] == "small":
            return ("a DINOv2-S ViT backbone with a DPT head, 24.8M parameters, predicting relative inverse depth from "
                    "one RGB image")
        return f"a DINOv2 ViT backbone with a DPT head, predicting {info['output_semantics']} from one RGB image"

    def owns_model(self, model: nn.Module) -> bool:
        return getattr(getattr(model, "config", None), "model_type", None) in self.model_types

    def load_synthetic(self, name: str, seed: int) -> Checkpoint:
        from .synthetic import synthetic_model      # torch, transformers: only when a model is loaded

        return Checkpoint(model=synthetic_model(name, seed), source="synthetic", name=name, seed=seed, family=self)

    def load_pretrained(self, path_or_id: str, revision: str | None, source: str) -> Checkpoint:
        from transformers import DepthAnythingForDepthEstimation

        model, files = _hub.from_pretrained(DepthAnythingForDepthEstimation, path_or_id, revision, source, self.title)
        return Checkpoint(model=model, source=source, name=path_or_id, revision=revision, weight_files=files,
                          family=self)

    def load_file(self, path: str, max_depth) -> Checkpoint | None:
        from . import official      # torch, transformers: only when a model is loaded

        loaded = official.load(path, max_depth)
        if loaded is None:
            return None
        model, fmt = loaded
        return Checkpoint(model=model, source="local", name=path, format=fmt, family=self,
                          weight_files={os.path.basename(path): sha256_file(path)})

    def member_of(self, ckpt: Checkpoint) -> Member | None:
        if ckpt.source == "synthetic":
            return MEMBERS[SYNTHETIC[split_variant(ckpt.name)[0]][0]]     # a variant (-fp16-stress): its base's
        by_id = next((m for m in MEMBERS.values() if m.hub_id.lower() == ckpt.name.lower()), None) \
            if ckpt.source == "hf" else None
        # a local checkpoint (folder or file) saved from a tiny stand-in is that stand-in's member (tests, guides)
        return by_id or member_of_config(ckpt.model.config, stand_ins=ckpt.source == "local")

    def is_metric(self, model: nn.Module) -> bool:
        return getattr(model.config, "depth_estimation_type", "relative") == "metric"

    def encoder_layers(self, model: nn.Module):
        bb = model.backbone        # transformers' Dinov2Backbone, or the rewrites' EdgeBackbone
        return bb.layers if hasattr(bb, "layers") else bb.encoder.layer


FAMILY = DepthAnythingV2()
