"""Activation ranges of a Depth Anything V2 model vs FP16, measured in PyTorch with forward hooks.

Why: LiteRT's GPU delegate under its default precision policy may store (and compute) activations in FP16 even for an
FP32 graph.  FP16's largest finite value is 65504; a trained DPT head's activations can exceed it, and the GPU then
returns a constant map (a published measurement found 94.94 % error for this model).  ``probe`` tells, per stage,
how close each activation comes to that limit, so the ``fp16_safe`` rewrite can rescale exactly where needed.

The probe works on transformers' model and on any rewritten copy (it finds modules by role, not by class).  Per stage
it records, over all probe images:

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

``emulate_fp16`` runs a model with every op's output and every weight rounded to FP16 (FP32 arithmetic inside each op:
TFLite-GPU's F32_F16 mode; a lower bound for full-FP16 arithmetic), the way to check a build without a GPU.
``stress_checkpoint`` makes a model whose internal activations exceed FP16 like a trained DPT's do.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import torch
from torch import nn

FP16_MAX = 65504.0
FP16_MIN_NORMAL = 2.0 ** -14
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


def _layers(model):
    bb = model.backbone
    return bb.layers if hasattr(bb, "layers") else bb.encoder.layer


def _stages(model) -> list[tuple[str, nn.Module, str, str, str | None]]:
    """(stage, module, where, kind, group): where = 'out' (module output), 'in' (input), 'attn' (logits)."""
    from .rewrites.fp16_safe_scaling import neck_parts

    bb = model.backbone
    s = [("embeddings", bb.embeddings, "out", "tensor", "stream")]
    for i, layer in enumerate(_layers(model)):
        p = f"layer{i:02d}"
        s += [(f"{p}.norm1", layer.norm1, "in", "layernorm", "stream"),
              (f"{p}.attn_logits", layer.attention, "attn", "logits", None),
              (f"{p}.attn_out", layer.layer_scale1, "out", "tensor", "stream"),
              (f"{p}.norm2", layer.norm2, "in", "layernorm", "stream"),
              (f"{p}.mlp_hidden", layer.mlp.fc1, "out", "tensor", None),
              (f"{p}.mlp_out", layer.layer_scale2, "out", "tensor", "stream"),
              (f"{p}.residual", layer, "out", "tensor", "stream")]
    s.append(("backbone.layernorm", bb.layernorm, "in", "layernorm", "stream"))
    parts = neck_parts(model)
    n = len(parts["projs"])
    for j in range(n):
        s.append((f"neck.reassemble{j}.projection", parts["projs"][j], "out", "tensor", f"reassemble{j}"))
        if not isinstance(parts["resizes"][j], nn.Identity):
            s.append((f"neck.reassemble{j}.resize", parts["resizes"][j], "out", "tensor", f"resize{j}"))
    for j in range(n):
        s.append((f"neck.conv{j}", parts["convs"][j], "out", "tensor", f"fusion{n - 1 - j}"))
    for k, layer in enumerate(parts["fusion"]):
        units = [(1, layer.residual_layer1), (2, layer.residual_layer2)] if k > 0 else [(2, layer.residual_layer2)]
        for r, unit in units:
            s += [(f"neck.fusion{k}.rcu{r}.conv1", unit.convolution1, "out", "tensor", f"fusion{k}.rcu{r}"),
                  (f"neck.fusion{k}.rcu{r}.conv2", unit.convolution2, "out", "tensor", f"fusion{k}"),
                  (f"neck.fusion{k}.rcu{r}.out", unit, "out", "tensor", f"fusion{k}")]
        nxt = f"fusion{k + 1}" if k + 1 < len(parts["fusion"]) else "head.in"
        s.append((f"neck.fusion{k}.projection", layer.projection, "out", "tensor", nxt))
    h = parts["head"]
    s += [("head.conv1", h.conv1, "out", "tensor", "head.conv1"),
          ("head.conv2", h.conv2, "out", "tensor", "head.conv2"),
          ("head.conv3", h.conv3, "out", "tensor", "output"), ("output", h, "out", "tensor", "output")]
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
    from .images import image_set, image_set_hash
    from .preprocess import preprocess

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


# ------------------------------------------------------------------------------------------------ report


def report_json(report, **kw) -> str:
    """JSON text of a report with non-finite floats as strings ("inf", "nan"): strict JSON for other tools."""
    import json

    def clean(o):
        if isinstance(o, float) and not math.isfinite(o):
            return str(o)
        if isinstance(o, dict):
            return {k: clean(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [clean(v) for v in o]
        return o

    return json.dumps(clean(report), **kw)


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if not math.isfinite(v):
        return str(v)
    return f"{v:.3g}" if 1e-3 <= abs(v) < 1e5 else f"{v:.2e}"


def format_ranges(report: dict | list, title: str | None = None) -> str:
    """Text table of a ``probe_model`` report (or bare rows)."""
    rows = report["rows"] if isinstance(report, dict) else report
    lines = []
    if title:
        lines.append(title)
    if isinstance(report, dict) and "calibration" in report:
        c = report["calibration"]
        lines.append(f"  {len(c['images'])} image(s) at {c['size'][0]}x{c['size'][1]} ({c['source']} set); FP16 max "
                     f"{FP16_MAX:.0f}; flags: overflow (> max), variance-overflow (LayerNorm (x-mean)^2 > max), "
                     f"precision-loss (FP16 error > {PRECISION_LOSS:g} of the signal)")
    lines.append(f"  {'stage':34s} {'max|x|':>9s} {'headroom':>8s} {'rms':>9s} {'fp16 err':>9s} {'sig err':>9s}  flags")
    for r in rows:
        head = f"{r['headroom_bits']:+.1f}b" if math.isfinite(r["headroom_bits"]) else "inf"
        extra = ""
        if r["kind"] == "layernorm":
            extra = f"  (x-mean)^2 max {_fmt(r['sq_max'])}"
        nan = float("nan")
        lines.append(f"  {r['stage']:34s} {_fmt(r['max_abs']):>9s} {head:>8s} {_fmt(r.get('rms', nan)):>9s} "
                     f"{_fmt(r.get('fp16_rel_err', nan)):>9s} {_fmt(r.get('fp16_signal_err', nan)):>9s}"
                     f"  {','.join(r['flags']) or '-'}{extra}")
    s = summarize(rows)
    lines.append(f"  largest |x|: {_fmt(s['max_abs'])} at {s['worst_stage']}; "
                 + ("FP16-safe (no stage flagged)" if s["fp16_safe"] else
                    f"NOT FP16-safe: {len(s['overflow_stages'])} overflow, "
                    f"{len(s['variance_overflow_stages'])} LayerNorm variance overflow, "
                    f"{len(s['precision_loss_stages'])} precision-loss stage(s)"))
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------ FP16 emulation


class _FP16Storage(torch.overrides.TorchFunctionMode):
    """Round every float32 result of every torch function to FP16 (inf beyond 65504), keep computing in FP32.

    Fused kernels are decomposed the way the converted graph does it, so that their intermediates are rounded too:
    ``layer_norm`` (MEAN, SQUARED_DIFFERENCE, MEAN, ADD, RSQRT, MUL[, MUL, ADD]) and ``scaled_dot_product_attention``
    (BATCH_MATMUL, MUL, SOFTMAX, BATCH_MATMUL).
    """

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is nn.functional.layer_norm:
            return _layer_norm16(*args, **kwargs)
        if func is nn.functional.scaled_dot_product_attention:
            return _sdpa16(*args, **kwargs)
        return _round16(func(*args, **kwargs))


def _layer_norm16(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    r = _round16
    if len(normalized_shape) != 1:
        raise ValueError("FP16 emulation decomposes LayerNorm over the last dim only")
    d = r(x - r(x.mean(-1, keepdim=True)))
    y = r(d * r(torch.rsqrt(r(r(r(d * d).mean(-1, keepdim=True)) + eps))))
    if weight is not None:
        y = r(y * weight)
    if bias is not None:
        y = r(y + bias)
    return y


def _sdpa16(q, k, v, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None, enable_gqa=False):
    r = _round16
    if is_causal:
        raise ValueError("FP16 emulation: causal attention not expected here")
    s = scale if scale is not None else q.shape[-1] ** -0.5
    logits = r(r(torch.matmul(q, k.transpose(-2, -1))) * s)
    if attn_mask is not None:
        logits = r(logits.masked_fill(~attn_mask, float("-inf")) if attn_mask.dtype == torch.bool
                   else logits + attn_mask)
    return r(torch.matmul(r(torch.softmax(logits, dim=-1)), v))


def _round16(o):
    if isinstance(o, torch.Tensor) and o.dtype == torch.float32:
        return o.to(torch.float16).to(torch.float32)
    if isinstance(o, tuple) and not hasattr(o, "_fields"):
        return tuple(_round16(t) for t in o)
    if isinstance(o, list):
        return [_round16(t) for t in o]
    return o


def fp16_weights(model: nn.Module) -> nn.Module:
    """Deep copy with every float parameter/buffer rounded to FP16 (what a GPU delegate in FP16 mode uploads)."""
    m = copy.deepcopy(model).eval()
    with torch.no_grad():
        for t in list(m.parameters()) + list(m.buffers()):
            if t.dtype == torch.float32:
                t.copy_(t.half().float())
    return m


@torch.no_grad()
def emulate_fp16(model: nn.Module, inputs) -> list[np.ndarray]:
    """Outputs of ``model`` with FP16 weights and every op's output stored in FP16 (see module docstring)."""
    from .checkpoint import DepthModule

    m = DepthModule(fp16_weights(model)).eval()
    outs = []
    for x in inputs:
        t = torch.from_numpy(np.ascontiguousarray(x, np.float32)).half().float()
        with _FP16Storage():
            outs.append(m(t).numpy().copy())
    return outs


@torch.no_grad()
def fp32_outputs(model: nn.Module, inputs) -> list[np.ndarray]:
    from .checkpoint import DepthModule

    m = DepthModule(model).eval()
    return [m(torch.from_numpy(np.ascontiguousarray(x, np.float32))).numpy() for x in inputs]


def compare(outputs: list[np.ndarray], refs: list[np.ndarray]) -> dict:
    """Pooled rel-L2 etc. (edgedepth.parity); non-finite outputs counted, then read as 0 / +-65504."""
    from .parity import ParityAccumulator

    acc = ParityAccumulator()
    nonfinite = total = 0
    for y, r in zip(outputs, refs):
        bad = ~np.isfinite(y)
        nonfinite += int(bad.sum())
        total += y.size
        acc.add(np.nan_to_num(y, nan=0.0, posinf=FP16_MAX, neginf=-FP16_MAX), r)
    s = acc.summary()
    s["nonfinite_frac"] = nonfinite / total if total else 0.0
    s["constant_map_images"] = int(sum(1 for y in outputs if np.ptp(np.nan_to_num(y, nan=0.0, posinf=FP16_MAX,
                                                                               neginf=-FP16_MAX)) == 0))
    return s


def fp16_error(model: nn.Module, inputs, refs: list[np.ndarray] | None = None) -> dict:
    """FP16-emulated outputs vs the FP32 reference (``refs`` or ``model`` in FP32)."""
    refs = refs if refs is not None else fp32_outputs(model, inputs)
    return compare(emulate_fp16(model, inputs), refs)


# ------------------------------------------------------------------------------------------------ stress variant

# ``synthetic-fp16-stress``: a function-preserving rescaling of a checkpoint that puts its internal activations where a
# trained DPT's are reported to be -- growing through the fusion stages to ~1e6..1e8 in the head -- while the depth map
# stays the same (rel-L2 4e-7 vs the unstressed model: float rounding).  It uses the same exact-in-maths symmetries as
# fp16_safe (LayerNorm scale invariance, ReLU/conv homogeneity), with factors that are deliberately not powers of two,
# so fp16_safe cannot simply undo them; it must find its own from the probe.
# Measured on ``synthetic`` at 518x686 (4 default photos), max |x|: backbone stream 559 (storage fits, but LayerNorm's
# (x - mean)^2 reaches 3.2e5: all 25 LayerNorms overflow), neck.fusion2.projection 2.5e5, neck.fusion3.projection
# 2.7e6, head.conv1 1.2e7, head.conv2 1.0e8; depth map unchanged (max 7.8).  Also the head's last conv weights become
# ~1e-7..1e-8: subnormal or zero in FP16 (75 % of them zero), as small as a huge-activation head's must be.
STRESS_STREAM = 61.3            # backbone residual stream: LayerNorm (x - mean)^2 beyond 65504, storage still < 65504
STRESS_NECK_BASE = 3.3          # reassemble / neck-conv outputs
STRESS_FUSION_GROWTH = 9.7      # each fusion layer's stream this much larger than the previous one's
STRESS_HEAD = (1.3e6, 1.2e7)    # head.conv1 / head.conv2 output factors (head.in follows the fusion growth)


def stress_factors(model: nn.Module) -> dict:
    """{"stream": c, "neck": {group: factor}} used by ``stress_checkpoint`` (output group 1: same depth map)."""
    from .rewrites.fp16_safe_scaling import neck_groups

    neck = {}
    for g in neck_groups(model):
        if g.startswith(("reassemble", "resize")):
            neck[g] = STRESS_NECK_BASE
        elif g.startswith("fusion"):
            k = int(g[len("fusion")])
            f = STRESS_NECK_BASE * STRESS_FUSION_GROWTH ** (k + 1)
            neck[g] = f * (0.37 if ".rcu" in g else 1.0)
        elif g == "head.in":
            neck[g] = STRESS_NECK_BASE * STRESS_FUSION_GROWTH ** 5
        elif g == "head.conv1":
            neck[g] = STRESS_HEAD[0]
        elif g == "head.conv2":
            neck[g] = STRESS_HEAD[1]
    neck["output"] = 1.0
    return {"stream": STRESS_STREAM, "neck": neck}


def stress_model(model: nn.Module, *, stream: bool = True, neck: bool = True) -> nn.Module:
    """A deep copy of ``model`` rescaled by ``stress_factors`` (same depth map to float rounding)."""
    from .rewrites.fp16_safe_scaling import scale_neck, scale_stream

    m = copy.deepcopy(model).eval()
    f = stress_factors(m)
    if stream:
        scale_stream(m, f["stream"])
    if neck:
        scale_neck(m, f["neck"])
    m.fp16_stress = {"stream": f["stream"] if stream else 1.0, "neck": f["neck"] if neck else {}}
    return m


def stress_checkpoint(ckpt, *, stream: bool = True, neck: bool = True):
    """``synthetic-fp16-stress``: a copy of ``ckpt`` (any checkpoint) with FP16-overflowing internal activations."""
    import dataclasses

    return dataclasses.replace(ckpt, model=stress_model(ckpt.model, stream=stream, neck=neck),
                               name=f"{ckpt.name}-fp16-stress")


def load_for_ranges(spec: str, *, quiet: bool = False):
    """``load_checkpoint`` plus the ``*-fp16-stress`` names (works whether or not checkpoint.py registers them)."""
    from .checkpoint import load_checkpoint

    suffix = "-fp16-stress"
    if spec.endswith(suffix) and spec[: -len(suffix)] in ("synthetic", "synthetic-tiny"):
        return stress_checkpoint(load_checkpoint(spec[: -len(suffix)], quiet=quiet))
    return load_checkpoint(spec, quiet=quiet)


def run_cli(model: str, size: str, images: int = DEFAULT_IMAGES, folder: str | None = None, *, as_json: bool = False,
            quiet: bool = False) -> str:
    """``edgedepth inspect --ranges --model M --size HxW [--images N] [--json]``: the report as text or JSON."""
    from .errors import EdgedepthError
    from .preprocess import parse_size

    hw = parse_size(size)
    if images < 1:
        raise EdgedepthError("--images must be at least 1")
    ckpt = load_for_ranges(model, quiet=quiet)
    rep = {"model": {**ckpt.provenance(), "name": ckpt.name}, **probe_model(ckpt.model, hw, images, folder)}
    if as_json:
        return report_json(rep, indent=2)
    return format_ranges(rep, f"activation ranges of {ckpt.name} at {hw[0]}x{hw[1]} (PyTorch FP32, forward hooks)")
