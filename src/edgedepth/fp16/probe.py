"""Activation ranges of a Depth Anything V2 model vs FP16, measured in PyTorch with forward hooks.

Why: LiteRT's GPU delegate under its default precision policy may store (and compute) activations in FP16 even for an
FP32 graph.  FP16's largest finite value is 65504; a trained DPT head's activations can exceed it, and the GPU then
returns a constant map (a published measurement found 94.94 % error for this model).  ``probe`` tells, per stage,
how close each activation comes to that limit, so the ``fp16_safe`` rewrite can rescale exactly where needed.

The probe works on transformers' model and on any rewritten copy (it finds modules by role, not by class).  Per stage
it records, over all probe images (stages and their scale groups: ``edgedepth.fp16.topology``):

- ``max_abs``, ``rms``; ``headroom_bits`` = log2(65504 / max_abs) (negative: overflow);
- ``fp16_overflow``: some value exceeds 65504 (FP16 storage gives inf);
- ``fp16_rel_err``: ||fp16(x) - x|| / ||x|| over the finite values (FP16 rounding: ~2.8e-4 when the range is fine);
- ``fp16_signal_err``: the same error relative to the signal, ||x - per-channel mean||: large when values are so big
  that FP16's spacing exceeds the variation that carries information, or when values underflow;
  ``fp16_precision_loss`` when it exceeds 1e-2;
- ``underflow_frac``: non-zero values below FP16's smallest normal (6.1e-5);
- ``max_spread``: largest / smallest per-image maximum (how much the calibration images differ);
- LayerNorm stages (statistics of the LayerNorm's *input*, the residual stream): ``sq_max`` = max (x - mean)^2 — the
  SQUARED_DIFFERENCE / MUL the converted graph stores before its MEAN — and ``var_max`` = max per-token variance;
  ``variance_overflow`` when sq_max > 65504 (the variance is then inf and every normalised value 0);
- attention logits (``layer??.attn_logits``, recomputed from q and k): informational; TFLite's GPU softmax kernel
  (delegates/gpu/common/tasks/softmax.cc, ancestor of LiteRT's GPU accelerator) subtracts the row maximum and sums in
  float, so only logits beyond 65504 themselves would overflow.  Its MEAN kernel (tasks/reduce.cc) also sums in float
  and stores the result in the tensor's precision: the LayerNorm limit is the squares, not their sum.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from ..models import encoder_layers
from ..images import image_set, image_set_hash
from ..preprocess import preprocess
from . import FP16_MAX, FP16_MIN_NORMAL
from .topology import neck_points

PRECISION_LOSS = 1e-2
DEFAULT_IMAGES = 4

# ------------------------------------------------------------------------------------------------ statistics


class _Acc:
    """Running statistics of one stage's tensors."""

    def __init__(self, kind: str, group: str | None, full: bool = True):
        self.kind, self.group, self.full = kind, group, full
        self.max_abs = 0.0
        self.sum_sq = self.err_sq = self.sig_sq = 0.0
        self.n = self.overflow = self.under = self.nonzero = 0
        self.per_image: list[float] = []
        self.cur = 0.0
        self.sq_max = self.var_max = 0.0
        self.var_min = math.inf
        self.calls = 0

    def new_image(self) -> None:
        if self.calls:
            self.per_image.append(self.cur)
        self.cur, self.calls = 0.0, 0

    @torch.no_grad()
    def add(self, x: torch.Tensor, channel_dim: int | None) -> None:
        x = x.detach().float()
        self.calls += 1
        a = x.abs()
        m = float(a.max()) if x.numel() else 0.0
        self.max_abs = max(self.max_abs, m)
        self.cur = max(self.cur, m)
        if self.kind == "logits" or not self.full:
            return
        sum_sq = float(torch.linalg.vector_norm(x, dtype=torch.float64)) ** 2
        self.sum_sq += sum_sq
        self.n += x.numel()
        err = x.half().float() - x
        if m > FP16_MAX:                      # overflowed values (inf) count separately, not as rounding error
            over = torch.isinf(err)
            self.overflow += int(over.sum())
            err = err.masked_fill(over, 0.0)
        self.err_sq += float(torch.linalg.vector_norm(err, dtype=torch.float64)) ** 2
        self.nonzero += int(torch.count_nonzero(a))
        self.under += int(torch.count_nonzero(a < FP16_MIN_NORMAL)) - (x.numel() - int(torch.count_nonzero(a)))
        # signal = x minus its per-channel mean: sum (x - mu_c)^2 = sum x^2 - sum_c n_c mu_c^2
        if channel_dim is None:
            csum = x.sum(dtype=torch.float64).reshape(1)
        else:
            cd = channel_dim % x.dim()
            csum = x.sum(dim=[d for d in range(x.dim()) if d != cd], dtype=torch.float64)
        n_c = x.numel() / csum.numel()
        self.sig_sq += max(sum_sq - float((csum * csum).sum()) / n_c, 0.0)

    @torch.no_grad()
    def add_layernorm(self, x: torch.Tensor, centered: bool) -> None:
        self.add(x, -1)
        x = x.detach().float()
        d = x if centered else x - x.mean(dim=-1, keepdim=True)
        self.sq_max = max(self.sq_max, float(d.abs().max()) ** 2)
        if self.full:
            var = (d.double() ** 2).mean(dim=-1)
            self.var_max = max(self.var_max, float(var.max()))
            self.var_min = min(self.var_min, float(var.min()))

    def row(self, stage: str) -> dict:
        per = [p for p in self.per_image if p > 0]
        r = {"stage": stage, "kind": self.kind, "group": self.group, "max_abs": self.max_abs,
             "headroom_bits": math.log2(FP16_MAX / self.max_abs) if self.max_abs > 0 else math.inf,
             "fp16_overflow": self.max_abs > FP16_MAX,
             "max_spread": (max(per) / min(per)) if per else 1.0}
        if self.kind != "logits" and self.full:
            r.update({
                "rms": math.sqrt(self.sum_sq / self.n) if self.n else 0.0,
                "overflow_frac": self.overflow / self.n if self.n else 0.0,
                "fp16_rel_err": math.sqrt(self.err_sq / self.sum_sq) if self.sum_sq > 0 else 0.0,
                "fp16_signal_err": math.sqrt(self.err_sq / self.sig_sq) if self.sig_sq > 0 else 0.0,
                "underflow_frac": self.under / self.nonzero if self.nonzero else 0.0,
            })
            if self.overflow:                     # some values become inf: the error is unbounded
                r["fp16_rel_err"] = r["fp16_signal_err"] = math.inf
            r["fp16_precision_loss"] = not self.overflow and r["fp16_signal_err"] > PRECISION_LOSS
        else:                                     # logits, or max-only statistics (full=False)
            r["fp16_precision_loss"] = False
        if self.kind == "layernorm":
            r.update({"sq_max": self.sq_max, "variance_overflow": self.sq_max > FP16_MAX})
            if self.full:
                r.update({"var_max": self.var_max, "var_min": self.var_min if math.isfinite(self.var_min) else 0.0})
        flags = []
        if r["fp16_overflow"]:
            flags.append("overflow")
        if r.get("variance_overflow"):
            flags.append("variance-overflow")
        if r["fp16_precision_loss"]:
            flags.append("precision-loss")
        r["flags"] = flags
        return r


# ------------------------------------------------------------------------------------------------ stages


def _stages(model) -> list[tuple[str, nn.Module, str, str, str | None]]:
    """(stage, module, where, kind, group): where = 'out' (module output), 'in' (input), 'attn' (logits).

    The backbone's stream stages are listed here; the neck/head ones, with their scale groups, come from
    ``topology.neck_points`` (the same topology the fp16_safe rewrite and the stress variant fold factors with).
    """
    bb = model.backbone
    s = [("embeddings", bb.embeddings, "out", "tensor", "stream")]
    for i, layer in enumerate(encoder_layers(model)):
        p = f"layer{i:02d}"
        s += [(f"{p}.norm1", layer.norm1, "in", "layernorm", "stream"),
              (f"{p}.attn_logits", layer.attention, "attn", "logits", None),
              (f"{p}.attn_out", layer.layer_scale1, "out", "tensor", "stream"),
              (f"{p}.norm2", layer.norm2, "in", "layernorm", "stream"),
              (f"{p}.mlp_hidden", layer.mlp.fc1, "out", "tensor", None),
              (f"{p}.mlp_out", layer.layer_scale2, "out", "tensor", "stream"),
              (f"{p}.residual", layer, "out", "tensor", "stream")]
    s.append(("backbone.layernorm", bb.layernorm, "in", "layernorm", "stream"))
    s += [(label, mod, "out", "tensor", group) for label, mod, _src, group in neck_points(model)]
    return s


def _channel_dim(t: torch.Tensor, stage: str) -> int | None:
    if stage == "output":
        return None       # the depth map [1, H, W]: one channel
    return 1 if t.dim() == 4 else -1     # NCHW feature maps; tokens [1, N, D]


def _first_tensor(o):
    if isinstance(o, torch.Tensor):
        return o
    if isinstance(o, (tuple, list)) and o and isinstance(o[0], torch.Tensor):
        return o[0]
    if hasattr(o, "predicted_depth"):
        return o.predicted_depth
    return None


@torch.no_grad()
def _attention_logits_max(att: nn.Module, h: torch.Tensor) -> float:
    """max |q k^T * scaling| of one attention module (q, k recomputed from its weights; fused or separate)."""
    heads = getattr(att, "num_heads", None) or att.num_attention_heads
    d = att.head_dim
    n = h.shape[-2]
    fused = getattr(att, "qkv", None)
    if fused is not None:
        qkv = nn.functional.linear(h, fused.weight, fused.bias).reshape(n, 3 * heads, d).transpose(0, 1)
        q, k = qkv[:heads], qkv[heads:2 * heads]
    else:
        q = nn.functional.linear(h, att.q_proj.weight, att.q_proj.bias).reshape(n, heads, d).transpose(0, 1)
        k = nn.functional.linear(h, att.k_proj.weight, att.k_proj.bias).reshape(n, heads, d).transpose(0, 1)
    q = q * float(att.scaling)
    m = 0.0
    for i in range(heads):
        m = max(m, float(torch.matmul(q[i], k[i].transpose(0, 1)).abs().max()))
    return m


@torch.no_grad()
def probe(model: nn.Module, inputs, *, full: bool = True, logits: bool | None = None, progress=None) -> list[dict]:
    """Per-stage FP16 range report (list of dicts, in forward order) of ``model`` over ``inputs`` ([1,3,H,W] arrays).

    ``full=False``: maxima only (max |x|, LayerNorm (x-mean)^2 max) -- what the fp16_safe rewrite needs; about the cost
    of plain forward passes instead of ~3x.  ``logits`` (default: ``full``) recomputes attention logits.
    """
    model = model.eval()
    logits = full if logits is None else logits
    stages = _stages(model)
    accs = {name: _Acc(kind, group, full) for name, _m, _w, kind, group in stages}
    handles = []

    def out_hook(name):
        def f(mod, args, out):
            t = _first_tensor(out)
            if t is not None:
                accs[name].add(t, _channel_dim(t, name))
        return f

    def in_hook(name, kind):
        def f(mod, args):
            t = args[0]
            if kind == "layernorm":
                accs[name].add_layernorm(t, bool(getattr(mod, "centered", False)))
            else:
                accs[name].add(t, _channel_dim(t, name))
        return f

    def attn_hook(name):
        def f(mod, args, kwargs, out):
            h = args[0] if args else kwargs["hidden_states"]
            accs[name].add(torch.tensor([_attention_logits_max(mod, h[0])]), None)
        return f

    try:
        for name, mod, where, kind, _g in stages:
            if where == "out":
                handles.append(mod.register_forward_hook(out_hook(name)))
            elif where == "in":
                handles.append(mod.register_forward_pre_hook(in_hook(name, kind)))
            elif logits:
                handles.append(mod.register_forward_hook(attn_hook(name), with_kwargs=True))
        for i, x in enumerate(inputs):
            for a in accs.values():
                a.new_image()
            model(pixel_values=torch.from_numpy(np.ascontiguousarray(x, np.float32)))
            if progress:
                progress(i + 1, len(inputs))
        for a in accs.values():
            a.new_image()
    finally:
        for h in handles:
            h.remove()
    return [accs[name].row(name) for name, *_ in stages if accs[name].per_image]


def summarize(rows: list[dict]) -> dict:
    worst = max(rows, key=lambda r: r["max_abs"])
    return {
        "max_abs": worst["max_abs"], "worst_stage": worst["stage"],
        "overflow_stages": [r["stage"] for r in rows if r["fp16_overflow"]],
        "variance_overflow_stages": [r["stage"] for r in rows if r.get("variance_overflow")],
        "precision_loss_stages": [r["stage"] for r in rows if r["fp16_precision_loss"]],
        "fp16_safe": not any(r["flags"] for r in rows),
    }


def group_maxima(rows: list[dict]) -> dict[str, dict]:
    """Per scale group: max |x| over its stages, and (stream) the largest LayerNorm square."""
    out: dict[str, dict] = {}
    for r in rows:
        g = r.get("group")
        if not g:
            continue
        e = out.setdefault(g, {"max_abs": 0.0, "sq_max": 0.0, "stages": 0})
        e["max_abs"] = max(e["max_abs"], r["max_abs"])
        e["sq_max"] = max(e["sq_max"], r.get("sq_max", 0.0))
        e["stages"] += 1
    return out


# ------------------------------------------------------------------------------------------------ inputs


def calibration_inputs(size: tuple[int, int], images: int = DEFAULT_IMAGES, folder: str | None = None):
    """(preprocessed [1,3,H,W] inputs, metadata) from the default image set (or a folder), spread over sources."""
    items = image_set(folder, limit=images)
    xs = [preprocess(it.load(), size) for it in items]
    return xs, {"size": list(size), "images": [it.id for it in items], "image_set_sha256": image_set_hash(items),
                "source": folder or "default"}


def probe_model(model: nn.Module, size: tuple[int, int], images: int = DEFAULT_IMAGES, folder: str | None = None,
                progress=None) -> dict:
    """Probe ``model`` on ``images`` calibration photos at ``size``: {"calibration", "rows", "summary"}."""
    xs, meta = calibration_inputs(size, images, folder)
    rows = probe(model, xs, progress=progress)
    return {"calibration": meta, "rows": rows, "summary": summarize(rows)}
