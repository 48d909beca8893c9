"""Activation-range reports: text table and strict JSON of a ``probe_model`` report, and ``run_cli``, the library
side of ``edgedepth inspect --ranges``."""

from __future__ import annotations

import json
import math

from ..checkpoint import load_checkpoint
from ..errors import EdgedepthError
from ..preprocess import parse_size
from . import FP16_MAX
from .probe import DEFAULT_IMAGES, PRECISION_LOSS, probe_model, summarize
from .topology import FAMILIES


def report_json(report, **kw) -> str:
    """JSON text of a report with non-finite floats as strings ("inf", "nan"): strict JSON for other tools."""
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


def run_cli(model: str, size: str, images: int = DEFAULT_IMAGES, folder: str | None = None, *, as_json: bool = False,
            quiet: bool = False) -> str:
    """``edgedepth inspect --ranges --model M --size HxW [--images N] [--json]``: the report as text or JSON.

    ``model``: any ``load_checkpoint`` name, including the ``-fp16-stress`` variants; ``size``: ``HEIGHTxWIDTH``.
    """
    hw = parse_size(size)
    if images < 1:
        raise EdgedepthError(f"the range probe needs at least 1 calibration image (got {images})")
    ckpt = load_checkpoint(model, quiet=quiet)
    if ckpt.family.name not in FAMILIES:
        raise EdgedepthError(f"inspect --ranges knows the structure of {', '.join(FAMILIES)} models, not of "
                             f"{ckpt.family.title} ({ckpt.name})", option="model")
    rep = {"model": {**ckpt.provenance(), "name": ckpt.name}, **probe_model(ckpt.model, hw, images, folder)}
    if as_json:
        return report_json(rep, indent=2)
    return format_ranges(rep, f"activation ranges of {ckpt.name} at {hw[0]}x{hw[1]} (PyTorch FP32, forward hooks)")
