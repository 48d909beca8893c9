"""Depth for photos: image -> model input -> depth -> resized back to the photo's size -> PNG / .npy / 16-bit PNG."""

from __future__ import annotations

import os

import numpy as np

from .errors import EdgedepthError
from .fsutil import atomic_path, ensure_writable_dir
from .preprocess import load_and_preprocess, load_image

COLORMAP = "inferno"  # perceptually uniform; bright = near (inverse depth)


def resize_depth(depth: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """[1,h,w] or [h,w] depth -> [H,W] float32, bicubic like HF's post_process_depth_estimation."""
    import torch

    d = torch.from_numpy(np.ascontiguousarray(depth, np.float32)).reshape(1, 1, *depth.shape[-2:])
    return torch.nn.functional.interpolate(d, size=size, mode="bicubic", align_corners=False)[0, 0].numpy()


def normalise(depth: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1] (a constant map becomes all zeros rather than NaN)."""
    lo, hi = float(np.min(depth)), float(np.max(depth))
    return np.zeros_like(depth) if hi - lo <= 0 else (depth - lo) / (hi - lo)


def colorize(depth: np.ndarray) -> np.ndarray:
    """[H,W] depth -> uint8 RGB [H,W,3] through the perceptual colormap."""
    from matplotlib import colormaps

    return (colormaps[COLORMAP](normalise(depth))[..., :3] * 255 + 0.5).astype(np.uint8)


def _save_png(path: str, array: np.ndarray, mode: str | None = None) -> None:
    from PIL import Image

    with atomic_path(path) as tmp:
        Image.fromarray(array, mode).save(tmp, format="PNG")


def write_outputs(depth: np.ndarray, stem: str, out_dir: str, raw: bool) -> list[str]:
    written = []
    png = os.path.join(out_dir, f"{stem}_depth.png")
    _save_png(png, colorize(depth))
    written.append(png)
    if raw:
        npy = os.path.join(out_dir, f"{stem}_depth.npy")
        with atomic_path(npy) as tmp, open(tmp, "wb") as f:
            np.save(f, depth.astype(np.float32))
        png16 = os.path.join(out_dir, f"{stem}_depth16.png")
        _save_png(png16, (normalise(depth) * 65535 + 0.5).astype(np.uint16))
        written += [npy, png16]
    return written


def validate_inputs(images: list[str], out_dir: str) -> None:
    """Check every image and the output folder up front, before a model is loaded or anything is run."""
    ensure_writable_dir(out_dir)
    stems = set()
    for p in images:
        load_image(p)
        stem = os.path.splitext(os.path.basename(p))[0]
        if stem in stems:
            raise EdgedepthError(f"two inputs share the name {stem!r}; their outputs would overwrite each other")
        stems.add(stem)


def predict(images: list[str], runner, out_dir: str, raw: bool = False, progress=None) -> list[str]:
    """Run ``runner`` on each image (checked first with :func:`validate_inputs`); returns the written paths."""
    validate_inputs(images, out_dir)
    size = (int(runner.input_shape[2]), int(runner.input_shape[3]))
    written = []
    for p in images:
        x, orig = load_and_preprocess(p, size)
        depth = resize_depth(runner.run(x), orig)
        written += write_outputs(depth, os.path.splitext(os.path.basename(p))[0], out_dir, raw)
        if progress:
            progress(p)
    return written
