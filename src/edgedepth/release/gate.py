"""A release file's checks as a build job makes it: opened once, its manifest entry, the GPU check and the parity gate
(:class:`Gate`: against PyTorch FP32 on this machine, every output by its own FP32 noise).  Measured values go to the
build report; the gate only decides whether the file is released.
"""

from __future__ import annotations

import functools
import os

from .. import formats
from ..errors import EdgedepthError
from ..preprocess import preprocess
from ..runtimes import REFERENCE_BACKEND
from ..verify import records
from ..verify.bench import environment
from ..verify.parity import rel_l2
from ..verify.validate import validate
from ..verify.worst import side_by_side, worst_images
from . import manifest as mf

# Parity gate of a build (tolerance policy, tests/README.md): FP32 files within FP32_GATE_FACTOR x PyTorch FP32's own
# rel-L2 against a float64 run of the same checkpoint on the same image (measured in the build); quantised files within
# INT8_GATE_REL_L2, a quantisation-level bound (measured ~3e-2) that FP32 rounding cannot reach.
FP32_GATE_FACTOR = 10.0
INT8_GATE_REL_L2 = 0.1
# An output used as a mask (``ModelFamily.mask_outputs``: Depth Anything 3's sky score, which the package thresholds):
# a quantised file's is gated on the share of pixels on the other side of the threshold than PyTorch FP32's, since a
# rel-L2 of a map that is zero almost everywhere measures its few non-zero pixels, not the mask.
MASK_GATE_FLIPPED = 0.01




def fp32_noise(module, x) -> float:
    """PyTorch FP32's own rel-L2 against a float64 run of the same module on ``x``: the scale of FP32 rounding."""
    return fp32_noise_by_output(module, x)["depth"]


def fp32_noise_by_output(module, x) -> dict[str, float]:
    """:func:`fp32_noise` of each output ``module`` returns ({role: rel-L2}; a ``DepthModule``'s ``outputs`` name a
    tuple's maps: Depth Anything 3's depth and confidence)."""
    import copy

    import torch

    with torch.inference_mode():
        y32 = module(torch.from_numpy(x))
        y64 = copy.deepcopy(module).double()(torch.from_numpy(x).double())
    pairs = zip(y32, y64) if isinstance(y32, tuple) else [(y32, y64)]
    return {role: rel_l2(a.numpy(), b.numpy()) for role, (a, b) in zip(getattr(module, "outputs", ("depth",)), pairs)}


def parity_gate(precision: str, rel_l2: float, noise: float) -> tuple[float, bool]:
    """(bound, passed) for a file's pooled rel-L2 against PyTorch FP32 (see FP32_GATE_FACTOR)."""
    bound = FP32_GATE_FACTOR * noise if precision == "fp32" else INT8_GATE_REL_L2
    return bound, rel_l2 <= bound


def gate_texts(masks: dict[str, float]) -> dict:
    """The manifest's words for the gate of a release whose files have the mask outputs ``masks`` (role ->
    threshold; none: the gate has no such rule and the manifest no such field)."""
    return {"masks": "; ".join(f"{role} (a mask at >= {t:g}): quantised files' share of pixels on the other side of "
                               f"the threshold <= {MASK_GATE_FLIPPED:g}" for role, t in masks.items())} if masks else {}


_round_metrics = records.round_metrics      # the build report's parity values, rounded as records are




class Gate:
    """Build-time parity on this machine: fails the build when a file is out of tolerance; values go to the report.
    Every output of the file is gated (``reference``: a ``DepthModule`` with the family's ``outputs``): the depth, and
    Depth Anything 3's confidence, each by its own FP32 noise."""
    def __init__(self, reference, items, step, pictures: str | None = None, masks: dict[str, float] | None = None):
        self.reference, self.items, self.step = reference, items, step
        self.masks = masks or {}        # outputs used as masks: role -> threshold (ModelFamily.mask_outputs)
        # PyTorch's outputs per (size, photo): computed once for every file of the job (and handed on to the jobs that
        # start from its files: jobs.run_job)
        self.references: dict = {}
        self.pictures = pictures        # a folder for each file's worst photo side by side (the user's own photos)
        self.noise: dict[str, dict[str, float]] = {}    # {size: {role: PyTorch FP32 vs float64 rel-L2}}
        self.report: dict[str, dict] = {}

    def check(self, art, precision: str, size: tuple[int, int], rel: str | None = None) -> None:
        """Parity of ``art`` (a :class:`formats.Artifact`: not described or hashed again) on the CPU."""

        if not self.items:
            return
        rel = rel or art.name
        key = f"{size[0]}x{size[1]}"
        if precision == "fp32" and key not in self.noise:     # only an FP32 file's bound needs it (a float64 run)
            self.noise[key] = fp32_noise_by_output(self.reference, preprocess(self.items[0].load(), size))
        self.step(f"parity {rel} ({len(self.items)} images)")
        (row,) = validate([art], [REFERENCE_BACKEND], self.reference, self.items, masks=self.masks,
                          references=self.references)
        if row["status"] != "ok":
            raise EdgedepthError(f"parity gate: {rel} failed on the CPU: {row['error']}")
        report = self.report.setdefault(rel, {})
        report["worst_images"] = worst_images(row)
        if self.pictures:
            self.step(f"worst photo of {rel}")
            worst = next(it for it in self.items if it.id == report["worst_images"][0]["image"])
            name = mf.WORST_PNG[0] + rel.replace("/", "_") + mf.WORST_PNG[1]
            side_by_side(art, self.reference, worst, size, os.path.join(self.pictures, name))
            report["worst_picture"] = name
        for role, metrics in {"depth": row["metrics"], **row.get("output_metrics", {})}.items():
            mask = role in self.masks and precision != "fp32"
            got = metrics["mask_flipped"] if mask else metrics["pooled_rel_l2"]
            bound, ok = (MASK_GATE_FLIPPED, got <= MASK_GATE_FLIPPED) if mask else \
                parity_gate(precision, got, self.noise.get(key, {}).get(role, float("nan")))
            report["parity_cpu" if role == "depth" else f"parity_cpu_{role}"] = {**_round_metrics(metrics),
                                                                                  "gate_bound": bound}
            if not ok:
                what = rel if role == "depth" else f"{rel}'s {role}"
                how = (f"{got:.2%} of pixels on the other side of {self.masks[role]:g} than PyTorch FP32 (bound "
                       f"{bound:.0%})") if mask else f"{got:.3e} from PyTorch FP32 (bound {bound:.3e})"
                raise EdgedepthError(f"parity gate: {what} is {how}; not released")


def build_report(noise: dict[str, dict[str, float]], files: dict[str, dict], jobs: list[dict]) -> dict:
    """``build-report.json``: what the build's jobs measured (``noise``: {size: {role: PyTorch FP32 vs float64}};
    ``files``: each file's GPU check, parity and worst photos) and where and how long each job ran (a cached job: when
    it was built)."""
    return {"kind": "edgedepth.build_report", "environment": environment(threads=2),
            "pytorch_fp32_vs_float64_rel_l2": {k: v["depth"] for k, v in noise.items()},
            **({"pytorch_fp32_vs_float64_rel_l2_by_output": noise} if any(len(v) > 1 for v in noise.values()) else {}),
            "files": files, "jobs": jobs,
            "note": "measured on the building machine; not part of the reproducible release (see manifest.json)"}


def io_of(family, roles: tuple[str, ...], semantics: str):
    """``io(h, w, *names, fmt=..., **kw)``: :func:`manifest.io_contract` with the member's depth semantics and, for a
    model with more outputs than the depth (``roles``: ``Checkpoint.outputs``), those outputs as ``fmt``'s files name
    them, described by ``family.output_texts``."""
    def io(h: int, w: int, *names, fmt=None, **kw) -> dict:
        named = zip(roles, fmt.output_names(roles)) if fmt is not None else ()
        more = [{"role": r, "name": n, "semantics": family.output_texts[r]} for r, n in list(named)[1:]]
        return mf.io_contract(h, w, *names, semantics=semantics, more_outputs=more, **kw)
    return io


def file_entry(path: str, exported, text: str, io, gate: "Gate", step, gpu_check: bool = False, rel: str | None = None,
           roles: tuple[str, ...] = ("depth",)):
    """A model file's manifest entry: opened (described and hashed) once, its format's fields, the GPU check (formats
    that have one, when asked) and the parity gate (files this machine's runtime runs) on that one Artifact.
    ``roles``: the outputs the file must have (``Checkpoint.outputs``), which its entry describes."""
    art = formats.open_artifact(path)
    rel = rel or art.name
    if len(art.info["outputs"]) != len(roles):
        raise EdgedepthError(f"{rel}: {len(art.info['outputs'])} outputs, but its family's files have "
                             f"{len(roles)} ({', '.join(roles)}); not released")
    entry = art.format.release_entry(art, exported, text, functools.partial(io, fmt=art.format))
    if gpu_check and art.format.has_gpu_check:
        step(f"GPU check {rel}")
        g = art.gpu_check()
        if g.get("gpu_hazards"):
            raise EdgedepthError(f"{rel}: {g['gpu_hazards']} ops LiteRT's GPU accelerator computes wrongly although "
                                 "it delegates them (inspect shows them); not released")
        entry["gpu_fully_delegated"] = g["fully_delegated"]
        gate.report[rel] = {"gpu_check": {"adapter": (g["adapter"] or "").split(",")[0] or None, "error": g["error"]}}
    if art.format.runs_here(exported):
        gate.check(art, exported.precision, art.size, rel)
    return mf.artifact_entry(art, rel, **entry)


