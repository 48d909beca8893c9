"""Depth Anything V2's members: every member's architecture, output kind and licence.

Architectures are those of transformers' own conversion script for V2
(``src/transformers/models/depth_anything/convert_depth_anything_to_hf.py``, ``get_dpt_config``): DINOv2-S/B/L backbones
(hidden 384/768/1024, 12/12/24 layers, 6/12/16 heads, patch 14, MLP ratio 4), output stages [3,6,9,12] for S and B and
[5,12,18,24] for L, fusion width 64/128/256, neck widths [48,96,192,384] / [96,192,384,768] / [256,512,1024,1024],
reassemble factors 4/2/1/0.5, head width 32; metric members use ``depth_estimation_type="metric"`` (sigmoid x
``max_depth``) with ``max_depth`` 20 m (indoor, Hypersim) or 80 m (outdoor, Virtual KITTI 2).

Licences (the Depth-Anything-V2 repository's README and the checkpoints' model cards): Small and the metric Small
models Apache-2.0; Base and Large (relative and metric) CC-BY-NC-4.0.

Synthetic stand-ins (``synthetic-<member>``) have the member's exact architecture with seeded realistic weights; the
``-tiny`` ones keep what distinguishes the member (output-stage spacing, metric head) at tiny widths, for tests.
"""

from __future__ import annotations

import dataclasses
import functools

from ..base import APACHE, CC_BY_NC, Member


@dataclasses.dataclass(frozen=True)
class Arch:
    hidden_size: int
    num_hidden_layers: int
    num_attention_heads: int
    out_indices: tuple[int, ...]
    fusion_hidden_size: int
    neck_hidden_sizes: tuple[int, ...]
    head_hidden_size: int = 32


SMALL = Arch(384, 12, 6, (3, 6, 9, 12), 64, (48, 96, 192, 384))
BASE = Arch(768, 12, 12, (3, 6, 9, 12), 128, (96, 192, 384, 768))
LARGE = Arch(1024, 24, 16, (5, 12, 18, 24), 256, (256, 512, 1024, 1024))
TINY = Arch(32, 4, 2, (1, 2, 3, 4), 16, (8, 16, 24, 32), 8)
TINY_LARGE = Arch(32, 8, 2, (2, 4, 6, 8), 16, (8, 16, 32, 32), 8)      # L's uneven stages, equal last two widths
TINY_BASE = Arch(48, 4, 3, (1, 2, 3, 4), 16, (12, 24, 48, 48), 8)      # B's shape of S at other tiny widths


NAME = "depth_anything_v2"       # the family's name: file stems, the rewrites' FAMILIES
_HF = "depth-anything/Depth-Anything-V2-"
_member = functools.partial(Member, family=NAME)
MEMBERS: dict[str, Member] = {m.name: m for m in (
    _member("small", _HF + "Small-hf", SMALL, APACHE, revision="5426e4f0f36572d16453bbda7a8389317b1bef99"),
    _member("base", _HF + "Base-hf", BASE, CC_BY_NC),
    _member("large", _HF + "Large-hf", LARGE, CC_BY_NC),
    _member("metric-indoor-small", _HF + "Metric-Indoor-Small-hf", SMALL, APACHE, "metric", 20),
    _member("metric-outdoor-small", _HF + "Metric-Outdoor-Small-hf", SMALL, APACHE, "metric", 80),
    _member("metric-indoor-base", _HF + "Metric-Indoor-Base-hf", BASE, CC_BY_NC, "metric", 20),
    _member("metric-outdoor-base", _HF + "Metric-Outdoor-Base-hf", BASE, CC_BY_NC, "metric", 80),
    _member("metric-indoor-large", _HF + "Metric-Indoor-Large-hf", LARGE, CC_BY_NC, "metric", 20),
    _member("metric-outdoor-large", _HF + "Metric-Outdoor-Large-hf", LARGE, CC_BY_NC, "metric", 80),
)}

# synthetic name -> (member it stands in for, architecture).  "synthetic" / "synthetic-tiny" are the Small relative
# model (their weights are golden-tested: unchanged by this table).
SYNTHETIC: dict[str, tuple[str, Arch]] = {
    "synthetic": ("small", SMALL),
    "synthetic-tiny": ("small", TINY),
    "synthetic-base": ("base", BASE),
    "synthetic-large": ("large", LARGE),
    "synthetic-metric-indoor": ("metric-indoor-small", SMALL),
    "synthetic-metric-outdoor": ("metric-outdoor-small", SMALL),
    "synthetic-tiny-large": ("large", TINY_LARGE),
    "synthetic-tiny-metric-indoor": ("metric-indoor-small", TINY),
    "synthetic-tiny-metric-outdoor": ("metric-outdoor-small", TINY),
    # every other member's (a whole family at tiny widths: release --family ... --synthetic tiny)
    "synthetic-tiny-base": ("base", TINY_BASE),
    "synthetic-tiny-metric-indoor-base": ("metric-indoor-base", TINY_BASE),
    "synthetic-tiny-metric-outdoor-base": ("metric-outdoor-base", TINY_BASE),
    "synthetic-tiny-metric-indoor-large": ("metric-indoor-large", TINY_LARGE),
    "synthetic-tiny-metric-outdoor-large": ("metric-outdoor-large", TINY_LARGE),
}


def member_of_config(config, *, stand_ins: bool = False) -> Member | None:
    """The member whose architecture and head kind match a loaded ``DepthAnythingConfig`` (local folders, unknown ids,
    checkpoint files): of those, the one with the config's ``max_depth``, else the first metric one given that
    ``max_depth`` (a fine-tune's own range: its ``output_semantics`` say so).  ``stand_ins``: the tiny stand-ins'
    architectures count as their members' (a file saved from a stand-in is that stand-in)."""
    bb = config.backbone_config
    shape = (bb.hidden_size, bb.num_hidden_layers, bb.num_attention_heads)
    kind = getattr(config, "depth_estimation_type", "relative")
    archs = [(m, m.arch) for m in MEMBERS.values()]
    archs += [(MEMBERS[name], a) for name, a in SYNTHETIC.values()] if stand_ins else []
    same = [m for m, a in archs if (a.hidden_size, a.num_hidden_layers, a.num_attention_heads) == shape and
            m.kind == kind]
    if not same or kind != "metric":
        return same[0] if same else None
    exact = next((m for m in same if float(config.max_depth) == m.max_depth), None)
    return exact or dataclasses.replace(same[0], max_depth=_metres(config.max_depth))


def _metres(value) -> int | float:
    value = float(value)
    return int(value) if value.is_integer() else value
