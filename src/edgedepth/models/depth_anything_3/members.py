"""Depth Anything 3's members (ByteDance-Seed/Depth-Anything-3; the ``depth-anything-3`` package, Apache-2.0).

Architectures are the package's presets (``depth_anything_3/configs/<preset>.yaml``): a DINOv2 ViT with 2-D rotary
position embedding, QK-norm and alternating frame/global attention from ``alt_start``, a camera token, and the DualDPT
head (depth + ray branches).  Licences from the package README's model table (0.1.1): DA3-SMALL and DA3-BASE
Apache 2.0; DA3-LARGE CC BY-NC 4.0.  DA3MONO-LARGE / DA3METRIC-LARGE (Apache 2.0) have a plain DPT head: not here yet.

Synthetic stand-ins: ``synthetic-da3-small`` is the preset's exact backbone + DualDPT with seeded realistic weights;
``synthetic-da3-tiny`` keeps every structural feature (RoPE, QK-norm and alternating attention from block 2, the
camera token, ``cat_token``, four output layers, DualDPT) at tiny widths, for tests; ``synthetic-da3-base`` /
``synthetic-da3-tiny-base`` the same for Base (its recipe).
"""

from __future__ import annotations

import dataclasses
import functools

from ..base import APACHE, CC_BY_NC, Member

NAME = "depth_anything_3"
OUTPUT_SEMANTICS = ("relative depth, larger = farther (exp head, > 0); the files' second output is the head's "
                    "confidence in it")
# The files' second output (ModelFamily.outputs: ("depth", "confidence")), the head's depth_conf on one view
CONFIDENCE_SEMANTICS = "confidence of the depth, >= 1 (exp + 1 head), larger = more confident; relative, no unit"


@dataclasses.dataclass(frozen=True)
class Arch:
    preset: str                 # the package's config name (MODEL_REGISTRY key)
    embed_dim: int | None = None        # tiny stand-ins: the ViT and head widths replaced
    depth: int | None = None
    num_heads: int | None = None
    out_layers: tuple[int, ...] | None = None
    start: int | None = None            # alt_start = qknorm_start = rope_start
    features: int | None = None
    out_channels: tuple[int, ...] | None = None


SMALL = Arch("da3-small")
BASE = Arch("da3-base")
LARGE = Arch("da3-large")
TINY = Arch("da3-small", embed_dim=32, depth=4, num_heads=2, out_layers=(0, 1, 2, 3), start=2, features=16,
            out_channels=(8, 16, 24, 32))
# Base's tiny stand-in (its recipe's tests): Base's preset (same structure as Small's) at other tiny widths
TINY_BASE = Arch("da3-base", embed_dim=48, depth=4, num_heads=3, out_layers=(0, 1, 2, 3), start=2, features=16,
                 out_channels=(8, 16, 24, 48))

_HF = "depth-anything/"
_member = functools.partial(Member, family=NAME, semantics=OUTPUT_SEMANTICS, larger_is_farther=True)
MEMBERS: dict[str, Member] = {m.name: m for m in (
    _member("da3-small", _HF + "DA3-SMALL", SMALL, APACHE),
    _member("da3-base", _HF + "DA3-BASE", BASE, APACHE),
    _member("da3-large", _HF + "DA3-LARGE", LARGE, CC_BY_NC),
)}

SYNTHETIC: dict[str, tuple[str, Arch]] = {
    "synthetic-da3-small": ("da3-small", SMALL),
    "synthetic-da3-tiny": ("da3-small", TINY),
    "synthetic-da3-base": ("da3-base", BASE),
    "synthetic-da3-tiny-base": ("da3-base", TINY_BASE),
}
