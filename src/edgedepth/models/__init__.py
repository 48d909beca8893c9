"""Model families: each a package with a :class:`~edgedepth.models.base.ModelFamily`, listed once in
:data:`FAMILIES`.  Everything else asks here (a spec, a model, a file name -> its family and member) and never names
a family.  Adding a family: one package ``models/<family>/`` plus one entry in ``FAMILIES``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import depth_anything_3, depth_anything_v2
from .base import APACHE, CC_BY_NC, Checkpoint, Member, ModelFamily

if TYPE_CHECKING:
    from torch import nn

FAMILIES: list[ModelFamily] = [depth_anything_v2.FAMILY, depth_anything_3.FAMILY]
# Family names, for code that declares which families' structure it knows (the rewrites' FAMILIES, fp16's topology).
DEPTH_ANYTHING_V2 = depth_anything_v2.FAMILY.name
DEPTH_ANYTHING_3 = depth_anything_3.FAMILY.name
DEFAULT_FAMILY = FAMILIES[0]     # a hub id no family knows is loaded as this one (its loader then says if it is not)

MEMBERS: dict[str, Member] = {n: m for f in FAMILIES for n, m in f.members.items()}
SYNTHETIC: dict[str, tuple[str, object]] = {n: v for f in FAMILIES for n, v in f.synthetic.items()}
_DEFAULT = DEFAULT_FAMILY.members["small"]       # the default model: Depth-Anything-V2-Small @ a pinned revision
DEFAULT_HF_ID, DEFAULT_REVISION = _DEFAULT.hub_id, _DEFAULT.revision
DEFAULT_MODEL = f"{DEFAULT_HF_ID}@{DEFAULT_REVISION}"
DEFAULT_STEM = _DEFAULT.file_stem      # the default model's file names


def family_of(model: nn.Module) -> ModelFamily:
    """The family of a loaded or rewritten model (ValueError for a model of none)."""
    for f in FAMILIES:
        if f.owns_model(model):
            return f
    raise ValueError(f"{type(model).__name__} is a model of no known family ({', '.join(f.name for f in FAMILIES)})")


def family_of_synthetic(name: str) -> ModelFamily | None:
    return next((f for f in FAMILIES if name in f.synthetic), None)


def family_of_model_type(model_type) -> ModelFamily | None:
    """The family whose checkpoints' config.json says ``model_type``."""
    return next((f for f in FAMILIES if model_type in f.model_types), None)


def family_of_config(config: dict) -> ModelFamily | None:
    """The family whose checkpoints' config.json (parsed: an object) looks like ``config``: a transformers
    ``model_type`` (V2), or the depth-anything-3 package's ``model_name`` (DA3); None for none."""
    return next((f for f in FAMILIES if f.owns_config(config)), None)


def config_hints() -> str:
    """What config.json must hold for some family: "model_type 'depth_anything', or model_name 'da3-small', ..."."""
    return ", or ".join(f.config_hint() for f in FAMILIES)


def family_of_hub_id(hub_id: str) -> ModelFamily:
    m = member_of_hub_id(hub_id)
    return family_of_member(m) if m else DEFAULT_FAMILY


def family_of_member(member: Member) -> ModelFamily:
    return next(f for f in FAMILIES if f.name == member.family)


def member_of_hub_id(hub_id: str) -> Member | None:
    """The member with this hub id (case-insensitive), or None."""
    return next((m for m in MEMBERS.values() if m.hub_id.lower() == hub_id.lower()), None)


def member_of_file_name(path: str) -> Member | None:
    """The member an exported file's name says it came from (``<stem>_<H>x<W>_...``), or None (renamed file)."""
    return next((m for f in FAMILIES if (m := f.member_of_file_name(path))), None)


def load_file(path: str, max_depth=None) -> Checkpoint | None:
    """A single checkpoint file, loaded by the first family whose :attr:`~ModelFamily.file_suffixes` it has and that
    takes it (:meth:`ModelFamily.load_file`); None when none does."""
    lower = path.lower()
    return next((c for f in FAMILIES if lower.endswith(f.file_suffixes) and (c := f.load_file(path, max_depth))),
                None)


def file_hints() -> str:
    """The single checkpoint files some family loads, in words: "an official Depth Anything V2 state dict (...)"."""
    return ", or ".join(f.file_hint for f in FAMILIES if f.file_hint)


def encoder_layers(model: nn.Module):
    """The transformer blocks of a model of any family (original or rewritten): what the rewrites walk."""
    return family_of(model).encoder_layers(model)


def model_types() -> list[str]:
    return [t for f in FAMILIES for t in f.model_types]


__all__ = ["APACHE", "CC_BY_NC", "Checkpoint", "DEFAULT_FAMILY", "DEFAULT_HF_ID", "DEFAULT_MODEL", "DEFAULT_REVISION",
           "DEFAULT_STEM", "DEPTH_ANYTHING_3", "DEPTH_ANYTHING_V2", "FAMILIES", "MEMBERS", "Member",
           "ModelFamily", "SYNTHETIC", "config_hints", "encoder_layers", "family_of", "family_of_config",
           "family_of_hub_id", "family_of_member", "family_of_model_type", "family_of_synthetic", "file_hints",
           "load_file", "member_of_file_name", "member_of_hub_id", "model_types"]
