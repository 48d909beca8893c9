"""Depth Anything 3 (the ``depth-anything-3`` package's model code: DINOv2 with RoPE / QK-norm / alternating
attention and a camera token, DualDPT head), monocular: :mod:`.mono`.

I/O contract: ``pixel_values`` float32 [1, 3, H, W], RGB, /255, ImageNet mean/std (the package's input processor),
H and W multiples of 14 -> ``predicted_depth`` [1, H, W], relative depth (exp head: > 0, larger = farther) and its
``confidence`` [1, H, W] (>= 1, larger = more confident), the files' two outputs in that order (:attr:`outputs`).
Exports through the da3_* rewrites (issue 31; docs/spikes/depth-anything-3.md): static RoPE, rank-4 attention, folded
LayerScale, a frozen ViT position embedding, the camera token by concatenation, no ray branch and separable constant
UV embeddings in the head; the LiteRT file then runs wholly on the GPU delegate (SwiftShader:
tests/test_depth_anything_3.py, benchmarks/da3_delegation.py).  Released weights (the hub's DA3-SMALL / DA3-BASE /
DA3-LARGE folders, as the package writes them, or such a folder on disk): :mod:`.weights`.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from ...preprocess import MEAN, PATCH, STD
from ...variants import split_variant
from .. import _hub
from ..base import Checkpoint, Member, ModelFamily
from .members import CONFIDENCE_SEMANTICS, MEMBERS, NAME, SKY_SEMANTICS, SKY_THRESHOLD, SYNTHETIC

if TYPE_CHECKING:
    from torch import nn


class DepthAnything3(ModelFamily):
    name = NAME
    title = "Depth Anything 3"
    model_types = ()            # the hub's DA3 folders have no transformers config: owns_config (model_name)
    members = MEMBERS
    synthetic = SYNTHETIC
    mean, std, patch = MEAN, STD, PATCH
    export_blocker = None       # issue 31: the da3_* rewrites make its graph GPU-ready
    outputs = ("depth", "confidence")   # issue 31: the monocular contract (MonoOutput), both maps in every file;
    # the mono / metric members (DPT head): depth and sky (outputs_of, member_outputs)
    output_texts = {"confidence": CONFIDENCE_SEMANTICS, "sky": SKY_SEMANTICS}
    mask_outputs = {"sky": SKY_THRESHOLD}
    # The card's texts.  Paper and BibTeX: the depth-anything-3 package's README (0.1.1, its PyPI METADATA).
    card_title = "Depth Anything 3"
    hub_tag = "depth-anything-3"
    paper = "https://arxiv.org/abs/2511.10647"
    citation = """@article{depthanything3,
  title={Depth Anything 3: Recovering the visual space from any views},
  author={Haotong Lin and Sili Chen and Jun Hao Liew and Donny Y. Chen and Zhenyu Li and Guang Shi and Jiashi Feng and Bingyi Kang},
  journal={arXiv preprint arXiv:2511.10647},
  year={2025}
}"""
    implementation = "depth-anything-3 package"
    size_notice = ("(ViT position embedding resized once per size as the package's interpolate_pos_encoding does, "
                   "bicubic; rotary position tables built once per size)")
    fp16_note = "this model's activations have not been checked against FP16's range yet"
    _BACKBONES = {"da3-small": "DINOv2-S", "da3-base": "DINOv2-B", "da3-large": "DINOv2-L",
                  "da3mono-large": "DINOv2-L", "da3metric-large": "DINOv2-L"}

    def member_title(self, member_name: str) -> str:
        return super().member_title(_short(member_name))

    def card_about(self, info: dict) -> str:
        vit = self._BACKBONES.get(info["family_member"], "DINOv2")
        member = MEMBERS.get(info["family_member"])
        if member is not None and member.arch.head == "dpt":
            return (f"a monocular model, a {vit} ViT backbone (no rotary embedding, QK-norm or camera token) with a "
                    f"DPT head, predicting {info['output_semantics'].split('; the files')[0]} from one RGB image. "
                    "These files have two outputs: the depth, then the head's sky score (>= 0; the package counts "
                    ">= 0.3 as sky); the package's sky step (sky depth set to the 99th percentile of the rest) is "
                    "left to the user")
        return (f"the any-view model run on one view (monocular), a {vit} ViT backbone (2-D rotary position embedding, "
                "QK-norm, alternating frame / global attention, a camera token) with a DualDPT head, predicting "
                "relative depth from one RGB image (larger = farther: an exp head, > 0). These files have two outputs: "
                "the depth, then the head's confidence map (>= 1, larger = more confident); its ray branch and the "
                "camera encoder / decoder (poses) are left out")

    def recipe_file(self, member: Member) -> str:
        return "recipes/depth-anything-3-" + _short(member.name) + ".py"

    def owns_model(self, model: nn.Module) -> bool:
        mono = sys.modules.get(__name__ + ".mono")      # not imported yet: no model of this family exists
        return mono is not None and isinstance(model, mono.DA3Mono)

    def load_synthetic(self, name: str, seed: int) -> Checkpoint:
        from .mono import build                  # torch and the package: only when a model is loaded
        from .synthetic import realistic_init

        model = build(SYNTHETIC[name][1])
        realistic_init(model, seed)
        return Checkpoint(model=model, source="synthetic", name=name, seed=seed, family=self)

    def load_pretrained(self, path_or_id: str, revision: str | None, source: str) -> Checkpoint:
        """A folder the depth-anything-3 package wrote (config.json ``model_name`` + model.safetensors: the hub's
        depth-anything/DA3-SMALL ...), local or a hub id: :mod:`.weights`."""
        from .weights import CONFIG, WEIGHTS, load_folder

        if source == "hf":
            folder = _hub.snapshot(path_or_id, revision, [CONFIG, WEIGHTS], synthetic=next(iter(SYNTHETIC)))
            where = f"{path_or_id}{'@' + revision if revision else ''} (hub cache {folder})"
        else:
            folder, where = path_or_id, repr(path_or_id)
        model, files = load_folder(folder, where, follow_symlinks=source == "hf")
        return Checkpoint(model=model, source=source, name=path_or_id, revision=revision, weight_files=files,
                          family=self)

    def owns_config(self, config: dict) -> bool:
        """The package's hub folders: config.json holds its ``DepthAnything3`` init kwargs (``model_name``), with no
        transformers ``model_type``; which presets load is :mod:`.weights`' to say."""
        return "model_type" not in config and "model_name" in config

    def config_hint(self) -> str:
        return "model_name " + ", ".join(map(repr, (m.arch.preset for m in MEMBERS.values())))

    def member_of(self, ckpt: Checkpoint) -> Member | None:
        if ckpt.source == "synthetic":
            return MEMBERS[SYNTHETIC[split_variant(ckpt.name)[0]][0]]     # a variant (-fp16-stress): its base's
        from .weights import PRESET_MEMBERS          # the preset config.json named, which the model was built as

        return PRESET_MEMBERS.get(getattr(ckpt.model, "preset", None))

    def is_metric(self, model: nn.Module) -> bool:
        return False            # DA3Metric-Large is "metric-focal": metres only with the focal length (members)

    def outputs_of(self, model: nn.Module) -> tuple[str, ...]:
        return model.outputs            # mono.DA3Mono: its head's (members.HEAD_OUTPUTS)

    def member_outputs(self, member: Member) -> tuple[str, ...]:
        return member.arch.outputs

    def encoder_layers(self, model: nn.Module):
        return model.backbone.pretrained.blocks


def _short(member_name: str) -> str:
    """"da3-small" -> "small", "da3mono-large" -> "mono-large" (titles, recipe names)."""
    return member_name.removeprefix("da3").removeprefix("-")


FAMILY = DepthAnything3()
