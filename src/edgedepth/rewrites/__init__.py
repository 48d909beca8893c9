"""Graph rewrites for export: pure functions ``rewrite(model, ctx) -> (new_model, places_changed)``.

Each rewrite deep-copies its input and swaps submodules or folds weights on the copy (no monkey-patching of torch or
transformers).  ``PIPELINE`` is the order they run in; ``apply_rewrites`` runs them and reports what each did.
A rewrite with ``exact=False`` is off by default (none is, at present); ``token_reassemble`` is off by default
because it measured no op-count or latency gain (kept for experiments: ``names=[...]``).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from torch import nn

from ._base import RewriteContext
from .center_residual_stream import center_residual_stream
from .drop_attention_mask import drop_attention_mask
from .fast_layernorm import fast_layernorm
from .fold_attention_scale import fold_attention_scale
from .fold_layernorm_affine import fold_layernorm_affine
from .fold_layerscale import fold_layerscale
from .fp16_safe import fp16_safe
from .freeze_position_embedding import freeze_position_embedding
from .fuse_qkv import fuse_qkv
from .rank_preserving_fc import rank_preserving_fc
from .static_attention import static_attention
from .token_reassemble import token_reassemble


@dataclasses.dataclass(frozen=True)
class Rewrite:
    name: str
    fn: Callable[[nn.Module, RewriteContext], tuple[nn.Module, int]]
    exact: bool
    default: bool = True


def _r(fn, exact: bool, default: bool | None = None) -> Rewrite:
    return Rewrite(fn.__name__, fn, exact, default=exact if default is None else (default and exact))


PIPELINE: list[Rewrite] = [
    _r(drop_attention_mask, True),
    _r(freeze_position_embedding, True),
    _r(static_attention, True),
    _r(fold_attention_scale, True),
    _r(fold_layerscale, True),
    _r(fuse_qkv, True),
    _r(fast_layernorm, True),
    _r(token_reassemble, True, default=False),   # measured: 0 ops, no latency change at 518x686
    _r(fold_layernorm_affine, True),
    _r(center_residual_stream, True),
    _r(rank_preserving_fc, True),
    _r(fp16_safe, True, default=False),   # data-driven (probes calibration photos): `export --fp16-safe`; tests/test_fp16.py
]

REWRITES = {r.name: r for r in PIPELINE}


def apply_rewrites(model: nn.Module, height: int, width: int, names: list[str] | None = None):
    """Run the pipeline (or the named subset, in pipeline order) on a copy of ``model``.

    Returns ``(new_model, report)`` with report = [{"name", "exact", "changed"}, ...] in the order run.
    """
    if names is not None:
        unknown = [n for n in names if n not in REWRITES]
        if unknown:
            raise ValueError(f"unknown rewrite(s) {unknown}; known: {list(REWRITES)}")
    ctx = RewriteContext(height, width)
    selected = [r for r in PIPELINE if (r.name in names if names is not None else r.default)]
    report = []
    out = model
    for r in selected:
        out, changed = r.fn(out, ctx)
        report.append({"name": r.name, "exact": r.exact, "changed": int(changed)})
    if not selected:
        import copy

        out = copy.deepcopy(model).eval()
    return out, report


__all__ = ["PIPELINE", "REWRITES", "Rewrite", "RewriteContext", "apply_rewrites"]
