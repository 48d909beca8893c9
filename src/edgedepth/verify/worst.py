"""Where a file disagrees with PyTorch on a user's own photos: the worst images of a validate row, and for the worst
one a side-by-side picture (the photo as the model saw it, PyTorch's depth, the file's depth, |difference|).

The picture's rel-L2 is computed as :func:`edgedepth.verify.validate.validate` computes it (the same inputs, the same
CPU runner, one :class:`ParityAccumulator` image), so on a deterministic runtime it equals the row's per-image value.
"""

from __future__ import annotations

import os

import numpy as np

from .. import formats
from ..errors import EdgedepthError
from ..fsutil import atomic_path, ensure_writable_dir
from ..predict import COLORMAP
from ..preprocess import normalise, pixels
from ..runtimes import REFERENCE_BACKEND
from ..runtimes.torch import TorchRunner
from .parity import ParityAccumulator

PNG_SUFFIX = ".worst.png"
DIFF_COLORMAP = "magma"      # depth panels: predict's COLORMAP, as `edgedepth predict` pictures a depth map


def worst_images(row: dict, k: int = 5) -> list[dict]:
    """The ``k`` images with the largest rel-L2 in a validate row (its ``per_image_rel_l2``):
    ``[{"image": id, "rel_l2": value}]``, largest first, equal values by image id.  A row without per-image values (a
    file that did not compile or run) has none."""
    if k < 1:
        raise EdgedepthError(f"worst images: k must be at least 1, not {k!r}")
    per = row.get("per_image_rel_l2") or {}
    # NaN/inf (a non-finite output) sort first: they are the worst of all
    ranked = sorted(per.items(), key=lambda kv: (not np.isnan(kv[1]), -kv[1] if np.isfinite(kv[1]) else -np.inf,
                                                 kv[0]))
    return [{"image": i, "rel_l2": float(v)} for i, v in ranked[:k]]


def png_name(artifact_name: str) -> str:
    """``<artifact file name>.worst.png``; a name that is not one plain file name (a path separator, NUL, ``.``,
    ``..``, empty) is one EdgedepthError line: the picture must land in the report's folder and nowhere else."""
    seps = {"/", "\\", os.sep, os.altsep} - {None}
    if not isinstance(artifact_name, str) or artifact_name in ("", ".", "..") or "\0" in artifact_name or \
            any(s in artifact_name for s in seps):
        raise EdgedepthError(f"artifact name {artifact_name!r} is not a plain file name (no path separators): "
                             "refusing to name a worst-image picture after it")
    return artifact_name + PNG_SUFFIX


def _model_input(item, size) -> tuple[np.ndarray, np.ndarray]:
    """(normalised model input, resized uint8 pixels) of ``item`` at ``size``: validate's two inputs."""
    px = pixels(item.load(), size)
    return normalise(px), px


def _outputs(art, module, item, size, threads: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(resized pixels, PyTorch's depth, the file's depth on the CPU) for one image; as validate chooses it, a
    uint8-input file takes the resized pixels, every other file the normalised tensor."""
    x, px = _model_input(item, size)
    ref = TorchRunner(module, size).run(x)
    runner = art.open_runner(backend=REFERENCE_BACKEND, threads=threads)
    try:
        y = runner.run(px if getattr(runner, "input_dtype", "float32") == "uint8" else x)
    finally:
        runner.close()
    return px, np.asarray(ref), np.asarray(y)


def _rel_l2(y: np.ndarray, ref: np.ndarray) -> float:
    """One image's rel-L2, by validate's own accumulator (bit for bit its ``per_image_rel_l2`` value)."""
    acc = ParityAccumulator()
    acc.add(y, ref)
    return float(acc.per_image[0])


def _figure(px, ref, y, title: str):
    """The four panels in a row: photo, PyTorch, file (both on PyTorch's 1st-99th percentile range), |difference|
    (its own 99th percentile; its max in the title)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    h, w = px.shape[-2:]
    ref2, y2 = ref.reshape(h, w), y.reshape(h, w)
    diff = np.abs(y2.astype(np.float64) - ref2.astype(np.float64))
    # colour scales from the 1st-99th percentiles (a few extreme pixels would turn the rest to one colour)
    lo, hi = (float(v) for v in np.nanpercentile(ref2, [1, 99])) if np.isfinite(ref2).any() else (0.0, 1.0)
    hi = hi if hi > lo else lo + 1.0
    dmax = float(np.nanmax(diff)) if np.isfinite(diff).any() else float("nan")
    d99 = float(np.nanpercentile(diff, 99)) if np.isfinite(diff).any() else 1.0
    pw, ph = 3.0 * w / h, 3.0
    fig, axes = plt.subplots(1, 4, figsize=(4 * pw, ph + 0.6))
    panels = [(px[0].transpose(1, 2, 0), None, "photo as the model saw it"),
              (ref2, dict(cmap=COLORMAP, vmin=lo, vmax=hi), f"PyTorch depth (1-99 %: {lo:.3g}..{hi:.3g})"),
              (y2, dict(cmap=COLORMAP, vmin=lo, vmax=hi), "file depth (PyTorch's scale)"),
              (diff, dict(cmap=DIFF_COLORMAP, vmin=0.0, vmax=d99 if d99 > 0 else (dmax if dmax > 0 else 1.0)),
               f"|difference|, max {dmax:.3g} (scale: 99 %)")]
    for ax, (img, kw, name) in zip(axes, panels):
        ax.imshow(img, **(kw or {}))
        ax.set_title(name, fontsize=9)
        ax.set_axis_off()
    fig.suptitle(title, fontsize=10)
    fig.subplots_adjust(left=0.01, right=0.99, bottom=0.02, top=ph / (ph + 0.6) - 0.02, wspace=0.04)
    return fig, plt


def side_by_side(art, module, item, size, path, *, threads: int = 2) -> dict:
    """Run one image (``item``, an ImageItem) through the file (``art``, an Artifact, on the CPU at ``threads``) and
    through the PyTorch reference ``module`` (a DepthModule) at ``size`` (H, W), and write one PNG at ``path``
    (atomically): the photo as the model saw it, PyTorch's depth, the file's depth (both colour-mapped on PyTorch's
    range), |difference| (its own range, its max in the title); the title names the file, the image and the rel-L2.
    -> ``{"image": id, "rel_l2": value, "png": basename}``."""
    size = (int(size[0]), int(size[1]))
    px, ref, y = _outputs(art, module, item, size, threads)
    rel = _rel_l2(y, ref)
    fig, plt = _figure(px, ref, y, f"{art.name}  —  {item.id}: rel-L2 vs PyTorch {rel:.3e}")
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=100, format="png")
    finally:
        plt.close(fig)
    return {"image": item.id, "rel_l2": rel, "png": os.path.basename(os.fspath(path))}


def _by_name(artifacts) -> dict:
    """{file name: Artifact} of ``artifacts`` (paths or Artifact values)."""
    arts = [a if isinstance(a, formats.Artifact) else formats.open_artifact(a) for a in artifacts]
    return {a.name: a for a in arts}


def worst_report(rows: list[dict], artifacts, module, items, folder: str, *, k: int = 5, threads: int = 2) -> dict:
    """For every CPU row of validate's ``rows`` that ran: its ``k`` worst images, and the side-by-side picture of its
    worst one written to ``folder`` as ``<artifact file name>.worst.png``.  ``artifacts``: the files validated (paths
    or Artifact values), ``module``: the reference DepthModule, ``items``: the ImageItems validated.
    -> ``{artifact name: {"worst": worst_images(row, k), "png": png name}}``, in the rows' order."""
    arts, by_id = _by_name(artifacts), {it.id: it for it in items}
    cpu = [r for r in rows if r.get("backend") == REFERENCE_BACKEND and r.get("per_image_rel_l2")]
    names = [png_name(r["artifact"]) for r in cpu]      # every name checked before anything is written
    if len(set(names)) != len(names):
        dup = next(n for n in names if names.count(n) > 1)
        raise EdgedepthError(f"two validated files are named {dup[:-len(PNG_SUFFIX)]!r}: their worst-image pictures "
                             "would overwrite each other; validate them separately")
    ensure_writable_dir(folder)
    summary: dict = {}
    for r, name in zip(cpu, names):
        art = arts.get(r["artifact"])
        if art is None or art.sha256 != r.get("sha256", art.sha256):
            raise EdgedepthError(f"worst images: the validated file {r['artifact']!r} is not among the files given")
        worst = worst_images(r, k)
        item = by_id.get(worst[0]["image"])
        if item is None:
            raise EdgedepthError(f"worst images: image {worst[0]['image']!r} of {r['artifact']!r} is not among the "
                                 "images given")
        side_by_side(art, module, item, r.get("size") or art.size, os.path.join(folder, name), threads=threads)
        summary[r["artifact"]] = {"worst": worst, "png": name}
    return summary
