"""Graph rewrites for export: pure functions ``rewrite(model, ctx) -> (new_model, places_changed)``.

Each rewrite deep-copies its input and swaps submodules or folds weights on the copy (no monkey-patching of torch or
transformers).  Each module declares ``NAME``, ``EXACT``, ``REQUIRES`` (rewrites that must have run before it) and
``FAMILIES`` (the model families, :mod:`edgedepth.models`, whose structure it knows: it runs on no other);
``PIPELINE`` is the order they run in (checked against every ``REQUIRES`` at import); ``apply_rewrites`` runs a
selection, refuses one whose requirements neither ran earlier in the selection nor were applied to the input model
before, and reports what each did.  ``prepare`` is what every format's export calls.
A rewrite with ``exact=False`` is off by default (none is, at present); ``token_reassemble`` is off by default
because it measured no op-count or latency gain (kept for experiments: ``names=[...]``).
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from torch import nn

from . import (center_residual_stream, da3_concat_camera_token, da3_constant_uv_embedding, da3_drop_ray_head,
               da3_fold_layerscale, da3_freeze_position_embedding, da3_rank4_attention, da3_static_positions,
               da3_static_rope,
               drop_attention_mask, fast_layernorm, fold_attention_scale, fold_layernorm_affine, fold_layerscale,
               fp16_safe, freeze_position_embedding, fuse_qkv, rank4_attention, rank_preserving_fc, split_large_conv,
               split_wide_conv, static_attention, symbolic_output_size, token_reassemble, unroll_heads)
from ..errors import EdgedepthError
from ..models import family_of
from ._base import RewriteContext

APPLIED_ATTR = "edgedepth_rewrites"    # names of the rewrites applied to a model, set by apply_rewrites


class ForeignRewriteError(EdgedepthError, ValueError):
    """Rewrites named for a model of another family (e.g. ``export --fp16-safe`` of a Depth Anything 3 model): one
    line in the CLI."""


@dataclasses.dataclass(frozen=True)
class Rewrite:
    name: str
    fn: Callable[[nn.Module, RewriteContext], tuple[nn.Module, int]]
    exact: bool
    default: bool = True
    requires: tuple[str, ...] = ()
    families: tuple[str, ...] = ()


def _r(module, default: bool = True) -> Rewrite:
    return Rewrite(module.NAME, getattr(module, module.NAME), module.EXACT, default=default and module.EXACT,
                   requires=tuple(module.REQUIRES), families=tuple(module.FAMILIES))


PIPELINE: list[Rewrite] = [
    _r(drop_attention_mask),
    _r(freeze_position_embedding),
    _r(symbolic_output_size, default=False),   # dynamic H/W: the ONNX format's files (formats/onnx/)
    _r(static_attention),
    _r(fold_attention_scale),
    _r(fold_layerscale),
    _r(fuse_qkv),
    _r(fast_layernorm),
    _r(token_reassemble, default=False),   # measured: 0 ops, no latency change at 518x686
    _r(fold_layernorm_affine),
    _r(center_residual_stream),
    _r(rank_preserving_fc),
    _r(rank4_attention),            # GPU: BATCH_MATMUL on [1,h,N,d] (issue 15, benchmarks/gpu_attribution.py)
    _r(fp16_safe, default=False),   # data-driven (probes calibration photos): `export --fp16-safe`; tests/test_fp16.py
    _r(unroll_heads, default=False),   # measured 1.61x slower on the H200 GPU (benchmarks/gpu_attribution.py)
    _r(split_wide_conv),            # WebGPU weight textures <= 8192 texels high (Large only); after fp16_safe's plan
    _r(split_large_conv),           # weights > 32 MiB (Large only): ai-edge-quantizer#512; after fp16_safe's neck plan
    _r(da3_static_rope),            # Depth Anything 3 (issue 31): traceable RoPE
    _r(da3_rank4_attention),        # Depth Anything 3: no 5-D qkv reshape (GPU delegate: rank <= 4)
    _r(da3_fold_layerscale),        # Depth Anything 3: the LiteRT GPU delegate bug (benchmarks/gpu_hazards.py)
    _r(da3_freeze_position_embedding),  # Depth Anything 3: no bicubic resize (GATHER_ND / BROADCAST_TO) in the graph
    _r(da3_concat_camera_token),    # Depth Anything 3: no SELECT_V2 (GPU delegate rejects it)
    _r(da3_drop_ray_head),          # Depth Anything 3: depth + confidence branch only
    _r(da3_constant_uv_embedding),  # Depth Anything 3: no meshgrid (BROADCAST_TO) / sin / cos in the head
    _r(da3_static_positions),       # Depth Anything 3: RoPE positions as constants (ExecuTorch INT8's quantizer)
]

REWRITES = {r.name: r for r in PIPELINE}


def _check_pipeline_order(pipeline: list[Rewrite]) -> None:
    seen: set[str] = set()
    for r in pipeline:
        missing = [q for q in r.requires if q not in seen]
        if missing:
            raise ImportError(f"rewrite pipeline order: {r.name} requires {missing} earlier")
        seen.add(r.name)


_check_pipeline_order(PIPELINE)


def default_names(model: nn.Module) -> list[str]:
    """The rewrites ``apply_rewrites`` runs on ``model`` by default: the pipeline's defaults for its family, in order."""
    family = family_of(model).name
    return [r.name for r in PIPELINE if r.default and family in r.families]


def format_defaults(model: nn.Module, names) -> tuple[list[str], bool]:
    """A format's default rewrites for ``model``: (the ``names`` of its family, True), or, when ``names`` hold none of
    its family's (a list measured on another family, like ONNX's and ExecuTorch's on V2), (its family's pipeline
    defaults, False)."""
    family = family_of(model).name
    own = [n for n in names if family in REWRITES[n].families]
    return (own, True) if own else (default_names(model), False)


def apply_rewrites(model: nn.Module, height: int, width: int, names: list[str] | None = None):
    """Run the pipeline (or the named subset, in pipeline order) on a copy of ``model``.

    Returns ``(new_model, report)`` with report = [{"name", "exact", "changed"}, ...] in the order run.
    """
    family = family_of(model).name
    if names is not None:
        unknown = [n for n in names if n not in REWRITES]
        if unknown:
            raise ValueError(f"unknown rewrite(s) {unknown}; known: {list(REWRITES)}")
        foreign = [n for n in names if family not in REWRITES[n].families]
        if foreign:
            raise ForeignRewriteError(f"rewrite(s) {foreign} do not apply to {family} models (theirs: "
                                      f"{', '.join(r.name for r in PIPELINE if family in r.families)})")
    ctx = RewriteContext(height, width)
    selected = [r for r in PIPELINE if (r.name in names if names is not None else r.default and family in r.families)]
    done = list(getattr(model, APPLIED_ATTR, ()))
    for i, r in enumerate(selected):
        missing = [q for q in r.requires if q not in done and q not in [s.name for s in selected[:i]]]
        if missing:
            raise ValueError(f"rewrite {r.name} requires {', '.join(missing)} first (neither selected before it nor "
                             "already applied to this model)")
    report = []
    out = model
    for r in selected:
        out, changed = r.fn(out, ctx)
        report.append({"name": r.name, "exact": r.exact, "changed": int(changed)})
    if not selected:
        import copy

        out = copy.deepcopy(model).eval()
    setattr(out, APPLIED_ATTR, tuple(dict.fromkeys(done + [r["name"] for r in report])))
    return out, report


def prepare(model: nn.Module, height: int, width: int, rewrites="default"):
    """What every format exports: ``(DepthModule(rewritten copy), report)``; the module returns its family's outputs
    (``ModelFamily.outputs_of``: V2 the depth alone, Depth Anything 3 depth and confidence or sky).

    ``rewrites``: ``"default"`` (the pipeline's defaults), a list of names (run in pipeline order), or ``()``/``None``
    for none (the plain baseline: a copy of the model).
    """
    from ..checkpoint import DepthModule

    names = None if rewrites == "default" else list(rewrites or ())
    out, report = apply_rewrites(model, height, width, names)
    return DepthModule(out, family_of(model).outputs_of(model)), report


__all__ = ["PIPELINE", "REWRITES", "ForeignRewriteError", "Rewrite", "RewriteContext", "apply_rewrites",
           "default_names", "format_defaults", "prepare"]
