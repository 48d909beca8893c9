"""Make every activation fit FP16 by exact power-of-two rescaling folded into weights, biases and LayerNorm eps.

Answers: LiteRT's GPU delegate under its default precision policy (``enforce_f32=False``; our ``gpu-fp16`` backend)
may store and compute activations in FP16 even for an FP32 graph.  FP16 overflows beyond 65504; trained DPT heads go far
beyond (a published measurement found 94.94 % error for this model: the GPU returned a constant map).  Two places fail:

1. the DPT neck/head: activations grow through the fusion stages into the head (overflow -> inf -> NaN / constant);
2. the DINOv2 residual stream's LayerNorms: the converted graph stores (x - mean)^2 before its MEAN, which overflows
   once |x - mean| > 256 even though x itself fits (variance inf -> every normalised value 0).

What it does (data-driven, per checkpoint): probes the model's activation maxima on calibration photos (``edgedepth
.fp16.probe``, default image set, CALIBRATION_IMAGES images at the export size), then gives every scale group (see
``edgedepth.fp16.topology``) the factor 2^-k with the smallest k >= 0 such that max|x| * 2^MARGIN_BITS <= 65504 (stream:
also (x - mean)^2 * 2^MARGIN_BITS <= 65504).  Factors are folded into weights and biases (a conv whose input carries a
and output carries b gets W*b/a, bias*b), the stream factor into its writers (patch conv, CLS/position constants,
LayerScale'd o_proj/fc2) and LayerNorm eps (*factor^2).  The head's last conv takes its input's factor back (W*2^k), so
the depth map itself is unchanged -- unless the depth values themselves exceed the limit, in which case the output stays
scaled by ``plan["output_scale"]`` (a power of two; the output is relative depth, ReLU(s*z) = s*ReLU(z), so the map is
preserved up to that recorded factor).  A metric head (sigmoid x max_depth: not scale-equivariant) never takes an
output factor: its logits are reported if they exceed the limit, and the metres stay exact.  No op is added.

Exact: multiplying by a power of two is exact in binary floating point (barring subnormals), and every op on the
rescaled paths commutes with it exactly (sums, products, convolutions, bilinear resizes, ReLU, LayerNorm with eps*c^2
and an IEEE rsqrt), so the FP32 output is bit-identical (measured: max abs diff 0 in PyTorch and in LiteRT on CPU).
What is not rescaled: the attention logits and the MLP hidden layer (GELU and softmax are not homogeneous) -- reported
by the probe; TFLite's GPU softmax kernel (delegates/gpu/common/tasks/softmax.cc, which LiteRT's GPU accelerator
descends from) subtracts the row max and sums in float, so only logits beyond 65504 themselves would matter.
The plan (groups, maxima, shifts, calibration images) is attached to the returned model as ``fp16_safe_plan``.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..fp16 import FP16_MAX, FP16_MIN_NORMAL
from ..fp16.probe import calibration_inputs, group_maxima, probe
from ..fp16.topology import neck_edges, neck_groups, scale_neck, scale_stream
from ._base import DEPTH_ANYTHING_V2, RewriteContext, fresh_copy

NAME = "fp16_safe"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks

MARGIN_BITS = 4               # keep calibrated maxima 16x (4 bits) below 65504: other photos, GPU partial sums
CALIBRATION_IMAGES = 4


def _shift(value: float, limit: float) -> int:
    """Smallest k >= 0 with value * 2^-k <= limit."""
    if not (value > limit):
        return 0
    return max(0, math.ceil(math.log2(value / limit)))


def plan_from_rows(rows: list[dict], margin_bits: int = MARGIN_BITS, calibration: dict | None = None,
                   fixed_output: bool = False) -> dict:
    """Choose per-group power-of-two shifts from probe rows (``edgedepth.fp16.probe.probe``).  ``fixed_output``: the
    output group keeps factor 1 (a metric head: sigmoid is not homogeneous)."""
    limit = FP16_MAX / 2 ** margin_bits
    groups = {}
    for g, e in group_maxima(rows).items():
        k = 0 if fixed_output and g == "output" else _shift(e["max_abs"], limit)
        if g == "stream":                          # LayerNorm squares: (x - mean)^2 * 2^-2k <= limit
            k = max(k, math.ceil(_shift(e["sq_max"], limit) / 2))
        groups[g] = {"max_abs": e["max_abs"], "shift": k, "scale": 2.0 ** -k, "max_after": e["max_abs"] * 2.0 ** -k}
        if g == "stream":
            groups[g].update(sq_max=e["sq_max"], sq_max_after=e["sq_max"] * 4.0 ** -k)
    fixed = [{"stage": r["stage"], "max_abs": r["max_abs"]} for r in rows
             if (not r.get("group") or (fixed_output and r["group"] == "output")) and r["max_abs"] > limit
             and r["kind"] != "logits"]
    return {"margin_bits": margin_bits, "limit": limit, "groups": groups,
            "output_scale": groups.get("output", {}).get("scale", 1.0),
            "not_rescalable_over_limit": fixed, "calibration": calibration}


@torch.no_grad()
def apply_plan(model: nn.Module, plan: dict) -> tuple[nn.Module, int]:
    """Fold a plan's power-of-two factors into a fresh copy of ``model``; returns (model, tensors changed)."""
    model = fresh_copy(model)
    groups = plan["groups"]
    changed = scale_stream(model, groups.get("stream", {}).get("scale", 1.0))
    known = set(neck_groups(model))
    changed += scale_neck(model, {g: v["scale"] for g, v in groups.items() if g in known and v["scale"] != 1.0})
    if changed:
        prev = getattr(model, "fp16_safe_plan", None)
        model.fp16_safe_plan = plan if prev is None else {**plan, "previous": prev}
    return model, changed


def weight_report(model: nn.Module) -> list[dict]:
    """Neck/head conv weights vs FP16: max |w| and the share of non-zero weights below FP16's smallest normal."""
    out = []
    for label, mod, _a, _b in neck_edges(model):
        w = mod.weight.detach().abs()
        nz = w[w > 0]
        out.append({"layer": label, "max_abs": float(w.max()),
                    "fp16_overflow": float(w.max()) > FP16_MAX,
                    "subnormal_frac": float((nz < FP16_MIN_NORMAL).float().mean()) if nz.numel() else 0.0,
                    "zero_in_fp16_frac": float((nz < 2.0 ** -25).float().mean()) if nz.numel() else 0.0})
    return out


def make_fp16_safe(model: nn.Module, height: int, width: int, *, inputs=None, images: int = CALIBRATION_IMAGES,
                   folder: str | None = None, margin_bits: int = MARGIN_BITS) -> tuple[nn.Module, int]:
    """The rewrite with its knobs: calibration ``inputs`` ([1,3,H,W] arrays) or ``images`` photos from the default
    set (or ``folder``) at ``height`` x ``width``; ``margin_bits`` of headroom."""
    if inputs is None:
        inputs, meta = calibration_inputs((height, width), images, folder)
    else:
        meta = {"size": [height, width], "images": len(inputs), "source": "given inputs"}
    rows = probe(model, inputs, full=False)
    metric = getattr(getattr(model, "config", None), "depth_estimation_type", "relative") == "metric"
    return apply_plan(model, plan_from_rows(rows, margin_bits, meta, fixed_output=metric))


def fp16_safe(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    return make_fp16_safe(model, ctx.height, ctx.width)
