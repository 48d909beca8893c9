"""FP16 emulation of a PyTorch model (weights and every op output rounded to float16) and its error against FP32:
how far LiteRT's default GPU precision can land, measured without a GPU.

``emulate_fp16`` runs a model with every op's output and every weight rounded to FP16 (FP32 arithmetic inside each op:
TFLite-GPU's F32_F16 mode; a lower bound for full-FP16 arithmetic), the way to check a build without a GPU;
``compare`` / ``fp16_error`` measure the result against the FP32 reference (``fp32_outputs``).
"""

from __future__ import annotations

import copy

import numpy as np
import torch
from torch import nn

from ..checkpoint import DepthModule
from .parity import ParityAccumulator
from ..fp16 import FP16_MAX


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
    m = DepthModule(fp16_weights(model)).eval()
    outs = []
    for x in inputs:
        t = torch.from_numpy(np.ascontiguousarray(x, np.float32)).half().float()
        with _FP16Storage():
            outs.append(m(t).numpy().copy())
    return outs


@torch.no_grad()
def fp32_outputs(model: nn.Module, inputs) -> list[np.ndarray]:
    m = DepthModule(model).eval()
    return [m(torch.from_numpy(np.ascontiguousarray(x, np.float32))).numpy() for x in inputs]


def compare(outputs: list[np.ndarray], refs: list[np.ndarray]) -> dict:
    """Pooled rel-L2 etc. (edgedepth.parity); non-finite outputs counted, then read as 0 / +-65504."""
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
