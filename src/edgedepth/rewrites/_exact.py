"""Weight folds whose float32 result does not depend on the CPU, its vector width or the BLAS/kernel choice.

A fold such as ``b' = W b + c`` computed with a matmul or a vectorised reduction sums in an order that depends on the
kernel (AVX2 vs AVX-512, oneDNN ISA, thread count), so the rounded float32 weights -- and every artifact built from
them -- would differ between machines.  These helpers work in float64 from float32 inputs (every product of two
float32 values is exact in float64) and sum with :func:`math.fsum`, which returns the correctly rounded sum whatever
the order; the result is rounded to float32 once.  Every step is a correctly rounded IEEE operation, so the bytes are
the same on any machine.  Cost: a Python-level loop over output rows (milliseconds for this model's layer sizes).
"""

from __future__ import annotations

import math

import numpy as np
import torch


def _f64(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).cpu().numpy()


def scale_output_rows(lin: torch.nn.Linear, scale: torch.Tensor) -> None:
    """``diag(scale) (W x + b)`` folded into ``lin`` in place: each output row of W and b times its scale (one correctly
    rounded multiply per element: CPU-independent).  A missing bias becomes zeros (LayerScale folds)."""
    lin.weight.mul_(scale[:, None])
    if lin.bias is None:
        lin.bias = torch.nn.Parameter(torch.zeros(lin.out_features, dtype=lin.weight.dtype), requires_grad=False)
    else:
        lin.bias.mul_(scale)


def exact_sum(a: np.ndarray, axis: int) -> np.ndarray:
    """Correctly rounded float64 sums of ``a`` along ``axis`` (any order gives the same result)."""
    a = np.moveaxis(np.asarray(a, np.float64), axis, -1)
    flat = a.reshape(-1, a.shape[-1])
    out = np.fromiter((math.fsum(row) for row in flat), np.float64, count=flat.shape[0])
    return out.reshape(a.shape[:-1])


def exact_matvec_add(weight: torch.Tensor, vec: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``weight @ vec + bias`` for a [out, in] weight, each output one correctly rounded sum, as float64."""
    w, v = _f64(weight), _f64(vec)
    terms = w * v[None, :]                                      # exact: float32 x float32 fits float64
    if bias is not None:
        terms = np.concatenate([terms, _f64(bias)[:, None]], axis=1)
    return torch.from_numpy(exact_sum(terms, axis=1))


def exact_center(t: torch.Tensor, dim: int) -> torch.Tensor:
    """``t - mean(t, dim)`` with an exactly rounded mean, as float64 (caller rounds to float32 once)."""
    a = _f64(t)
    mean = exact_sum(a, axis=dim) / a.shape[dim]
    return torch.from_numpy(a - np.expand_dims(mean, dim))


def _cubic_taps(n_in: int, n_out: int, scale_factor: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Source indices [n_out, 4] and weights [n_out, 4] of PyTorch's bicubic resize (A=-0.75, align_corners=False;
    size given: scale = n_in / n_out; ``scale_factor`` given, as F.interpolate passes it on: scale = 1 / scale_factor),
    computed in float64 with Python arithmetic (no FMA contraction)."""
    a = -0.75

    def near(x):        # |x| <= 1
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0

    def far(x):         # 1 < |x| < 2
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a

    scale = n_in / n_out if scale_factor is None else 1.0 / scale_factor
    idx = np.empty((n_out, 4), np.int64)
    wts = np.empty((n_out, 4), np.float64)
    for i in range(n_out):
        real = scale * (i + 0.5) - 0.5
        base = math.floor(real)
        t = real - base
        wts[i] = (far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t))
        idx[i] = [min(max(base - 1 + k, 0), n_in - 1) for k in range(4)]
    return idx, wts


def _resize_axis(x: np.ndarray, axis: int, n_out: int, scale_factor: float | None = None) -> np.ndarray:
    idx, wts = _cubic_taps(x.shape[axis], n_out, scale_factor)
    x = np.moveaxis(x, axis, -1)
    out = np.zeros(x.shape[:-1] + (n_out,), np.float64)
    for k in range(4):                                          # fixed order of elementwise IEEE ops
        out = out + x[..., idx[:, k]] * wts[:, k]
    return np.moveaxis(out, -1, axis)


def bicubic_resize(t: torch.Tensor, height: int, width: int,
                   scale_factor: tuple[float, float] | None = None) -> torch.Tensor:
    """Bicubic resize of [..., H, W] to [..., height, width] as ``F.interpolate(mode="bicubic", align_corners=False)``
    computes it, but in float64 with a fixed operation order: returns float64, equal to PyTorch's float64 result to
    ~1e-15 and the same bytes on every CPU (PyTorch's own float32 kernel differs between CPU capabilities).
    ``scale_factor`` (height, width): the factors F.interpolate was given instead of a size (DINOv2's
    ``interpolate_offset``): they, not the sizes, place the source samples."""
    sh, sw = scale_factor if scale_factor is not None else (None, None)
    x = _resize_axis(_f64(t), -2, height, sh)
    return torch.from_numpy(np.ascontiguousarray(_resize_axis(x, -1, width, sw)))
