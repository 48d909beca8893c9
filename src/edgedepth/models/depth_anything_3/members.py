"""Depth Anything 3's members (ByteDance-Seed/Depth-Anything-3; the ``depth-anything-3`` package, Apache-2.0).

Architectures are the package's presets (``depth_anything_3/configs/<preset>.yaml``): a DINOv2 ViT with 2-D rotary
position embedding, QK-norm and alternating frame/global attention from ``alt_start``, a camera token, and the DualDPT
head (depth + ray branches).  Licences from the package README's model table (0.1.1): DA3-SMALL and DA3-BASE
Apache 2.0; DA3-LARGE CC BY-NC 4.0; DA3MONO-LARGE and DA3METRIC-LARGE Apache 2.0.  Those two are monocular models:
a ViT-L with no RoPE, QK-norm, alternating attention or camera token (``alt_start`` etc. -1) and a plain ``DPT`` head
(``output_dim`` 1: depth, no confidence) with a sky branch (relu): their files output depth and sky
(:data:`HEAD_OUTPUTS`).  DA3METRIC-LARGE's depth is metric once scaled by the camera's focal length (the package
README: ``metric_depth = focal * net_output / 300``), a kind of its own: ``metric-focal``.

Synthetic stand-ins: ``synthetic-da3-small`` is the preset's exact backbone + DualDPT with seeded realistic weights;
``synthetic-da3-tiny`` keeps every structural feature (RoPE, QK-norm and alternating attention from block 2, the
camera token, ``cat_token``, four output layers, DualDPT) at tiny widths, for tests; ``synthetic-da3-base`` /
``synthetic-da3-tiny-base`` the same for Base (its recipe); ``synthetic-da3-mono-large`` /
``synthetic-da3-metric-large`` and ``synthetic-da3-tiny-mono`` / ``synthetic-da3-tiny-metric`` (a tiny ViT with no RoPE
and a tiny DPT head with its sky branch) for the two DPT members (one network: each pair is the same bytes).
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
# The DPT members' second output: the head's sky branch (the package counts sky >= 0.3 as sky, compute_sky_mask)
SKY_THRESHOLD = 0.3     # the package counts a pixel as sky where its score is at least this
SKY_SEMANTICS = ("sky score, >= 0 (relu head); the package counts a pixel as sky where it is >= 0.3 and then sets "
                 "those pixels' depth to the 99th percentile of the rest (a step left out of these files)")
MONO_SEMANTICS = ("relative depth, larger = farther (exp head, > 0); the files' second output is the head's sky "
                  "score")
METRIC_SEMANTICS = ("depth, metres = output x focal / 300 (focal: the camera's focal length in pixels at the file's "
                    "input size, mean of fx and fy, as the package README says; exp head, > 0); the files' second "
                    "output is the head's sky score")
# What each preset's head puts in the files, in order (ModelFamily.outputs_of): DualDPT depth + confidence, DPT depth
# + sky
HEAD_OUTPUTS = {"dualdpt": ("depth", "confidence"), "dpt": ("depth", "sky")}


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
    head: str = "dualdpt"               # the preset's head: "dualdpt" (any-view members) | "dpt" (mono / metric)

    @property
    def outputs(self) -> tuple[str, ...]:
        return HEAD_OUTPUTS[self.head]


SMALL = Arch("da3-small")
BASE = Arch("da3-base")
LARGE = Arch("da3-large")
MONO_LARGE = Arch("da3mono-large", head="dpt")
METRIC_LARGE = Arch("da3metric-large", head="dpt")
TINY = Arch("da3-small", embed_dim=32, depth=4, num_heads=2, out_layers=(0, 1, 2, 3), start=2, features=16,
            out_channels=(8, 16, 24, 32))
# Base's tiny stand-in (its recipe's tests): Base's preset (same structure as Small's) at other tiny widths
TINY_BASE = Arch("da3-base", embed_dim=48, depth=4, num_heads=3, out_layers=(0, 1, 2, 3), start=2, features=16,
                 out_channels=(8, 16, 24, 48))
# The DPT members' tiny stand-in: their preset's structure (no RoPE / QK-norm / alternation / camera token: start -1)
TINY_MONO = Arch("da3mono-large", embed_dim=32, depth=4, num_heads=2, out_layers=(0, 1, 2, 3), start=-1, features=16,
                 out_channels=(8, 16, 24, 32), head="dpt")

_HF = "depth-anything/"
_member = functools.partial(Member, family=NAME, semantics=OUTPUT_SEMANTICS, larger_is_farther=True)
MEMBERS: dict[str, Member] = {m.name: m for m in (
    _member("da3-small", _HF + "DA3-SMALL", SMALL, APACHE),
    _member("da3-base", _HF + "DA3-BASE", BASE, APACHE),
    _member("da3-large", _HF + "DA3-LARGE", LARGE, CC_BY_NC),
    _member("da3mono-large", _HF + "DA3MONO-LARGE", MONO_LARGE, APACHE, semantics=MONO_SEMANTICS),
    _member("da3metric-large", _HF + "DA3METRIC-LARGE", METRIC_LARGE, APACHE, kind="metric-focal",
            semantics=METRIC_SEMANTICS),
)}

SYNTHETIC: dict[str, tuple[str, Arch]] = {
    "synthetic-da3-small": ("da3-small", SMALL),
    "synthetic-da3-tiny": ("da3-small", TINY),
    "synthetic-da3-base": ("da3-base", BASE),
    "synthetic-da3-tiny-base": ("da3-base", TINY_BASE),
    "synthetic-da3-mono-large": ("da3mono-large", MONO_LARGE),
    "synthetic-da3-metric-large": ("da3metric-large", METRIC_LARGE),
    "synthetic-da3-tiny-mono": ("da3mono-large", TINY_MONO),
    "synthetic-da3-tiny-metric": ("da3metric-large", dataclasses.replace(TINY_MONO, preset="da3metric-large")),
}
