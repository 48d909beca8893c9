"""Seeded weights that are the same bytes on every CPU (for synthetic stand-ins of any family)."""

from __future__ import annotations

import numpy as np
import torch


def normal_like(rng, shape, std: float, mean: float = 0.0) -> torch.Tensor:
    """Seeded approximately-normal float32 values that are the same bytes on every CPU.

    Irwin-Hall: the sum of 12 uniforms minus 6 (mean 0, std 1, bounded by +-6).  numpy's uniform doubles are exact
    conversions of the generator's integers and the sum runs in a fixed order of elementwise IEEE adds, then one
    rounding to float32 -- unlike ``torch.randn``, whose float32 kernel gives different values under AVX2 and the
    default CPU capability (measured), or any sampler that calls libm.
    """
    n = int(np.prod(shape)) if len(shape) else 1
    u = rng.random((12, n))
    z = u[0]
    for k in range(1, 12):
        z = z + u[k]
    return torch.from_numpy(((z - 6.0) * std + mean).astype(np.float32).reshape(shape))


def on_grid(v: float, digits: int = 3) -> float:
    """Round to ``digits`` significant decimal digits: a float64 forward pass differs between CPUs by ~1e-15 relative,
    far below this grid, so the rounded value is the same on every machine."""
    return float(f"{v:.{digits - 1}e}")
