"""Parity metrics: how far an export's depth is from the PyTorch reference, on the same preprocessed inputs.

- pooled relative L2 = sqrt(sum_i ||y_i - r_i||^2) / sqrt(sum_i ||r_i||^2) over all images (the published metric);
- per-image rel-L2 (max, p95), Pearson correlation of all pixels;
- after least-squares scale-and-shift alignment of y to r in inverse-depth space (the standard for relative depth):
  AbsRel = mean(|y' - r| / r) and delta<1.25 = mean(max(y'/r, r/y') < 1.25), over pixels where r > eps.
"""

from __future__ import annotations

import numpy as np

EPS = 1e-6


class ParityAccumulator:
    """Feed (output, reference) pairs image by image; ``summary()`` gives the metrics as a dict of floats.
    ``threshold``: the output is used as a mask (score >= threshold): ``mask_flipped`` is the share of pixels on the
    other side of it than the reference's."""

    def __init__(self, threshold: float | None = None):
        self.threshold = threshold
        self._flipped = 0
        self.err2 = 0.0
        self.ref2 = 0.0
        self.per_image: list[float] = []
        self.max_abs = 0.0
        self._sx = self._sy = self._sxx = self._syy = self._sxy = 0.0
        self._n = 0
        self._absrel_sum = 0.0
        self._delta_hits = 0
        self._valid = 0
        self.identical_images = 0

    def add(self, y: np.ndarray, r: np.ndarray) -> None:
        y = np.asarray(y, np.float64).ravel()
        r = np.asarray(r, np.float64).ravel()
        if y.shape != r.shape:
            raise ValueError(f"shape mismatch {y.shape} vs {r.shape}")
        d = y - r
        e2, r2 = float(d @ d), float(r @ r)
        self.err2 += e2
        self.ref2 += r2
        self.per_image.append(np.sqrt(e2 / r2) if r2 > 0 else (0.0 if e2 == 0 else np.inf))
        self.max_abs = max(self.max_abs, float(np.max(np.abs(d))) if d.size else 0.0)
        self.identical_images += int(np.array_equal(y, r))
        self._n += y.size
        if self.threshold is not None:
            self._flipped += int(np.count_nonzero((y >= self.threshold) != (r >= self.threshold)))
        self._sx += y.sum(); self._sy += r.sum()
        self._sxx += y @ y; self._syy += r2; self._sxy += y @ r
        s, t = align_scale_shift(y, r)
        ya = s * y + t
        m = r > EPS
        if m.any():
            self._absrel_sum += float(np.sum(np.abs(ya[m] - r[m]) / r[m]))
            ratio = np.maximum(ya[m] / r[m], r[m] / np.maximum(ya[m], EPS))
            self._delta_hits += int(np.sum((ya[m] > 0) & (ratio < 1.25)))
            self._valid += int(m.sum())

    def summary(self) -> dict:
        n = self._n
        cov = self._sxy / n - (self._sx / n) * (self._sy / n)
        vx = self._sxx / n - (self._sx / n) ** 2
        vy = self._syy / n - (self._sy / n) ** 2
        pearson = float(cov / np.sqrt(vx * vy)) if vx > 0 and vy > 0 else (1.0 if vx == vy == 0 else 0.0)
        per = np.asarray(self.per_image)
        return {
            "images": len(self.per_image),
            "pooled_rel_l2": float(np.sqrt(self.err2 / self.ref2)) if self.ref2 > 0 else float("nan"),
            "max_rel_l2": float(per.max()) if per.size else float("nan"),
            "p95_rel_l2": float(np.percentile(per, 95)) if per.size else float("nan"),
            "max_abs_diff": self.max_abs,
            "pearson": min(1.0, pearson),
            "aligned_absrel": self._absrel_sum / self._valid if self._valid else float("nan"),
            "aligned_delta1": self._delta_hits / self._valid if self._valid else float("nan"),
            "identical_images": self.identical_images,
            **({"mask_flipped": self._flipped / n if n else float("nan")} if self.threshold is not None else {}),
        }


def align_scale_shift(y: np.ndarray, r: np.ndarray) -> tuple[float, float]:
    """Least-squares (s, t) minimising ||s*y + t - r||^2."""
    y = np.asarray(y, np.float64).ravel()
    r = np.asarray(r, np.float64).ravel()
    a = np.stack([y, np.ones_like(y)], 1)
    (s, t), *_ = np.linalg.lstsq(a, r, rcond=None)
    return float(s), float(t)


def rel_l2(y, r) -> float:
    """||y - r|| / ||r|| in float64 over all elements (one image's pooled rel-L2; the benchmarks' one definition)."""
    y, r = np.asarray(y, np.float64).ravel(), np.asarray(r, np.float64).ravel()
    if y.shape != r.shape:
        raise ValueError(f"shape mismatch {y.shape} vs {r.shape}")
    return float(np.linalg.norm(y - r) / np.linalg.norm(r))
