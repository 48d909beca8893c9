"""Depth for photos: image -> model input -> depth -> resized back to the photo's size -> PNG / .npy / 16-bit PNG.

The model input has the file's size, except for a dynamic-size ONNX file: there each photo gets the size upstream's
image processor gives it (its folder's ``preprocessor_config.json``: 518 px, aspect ratio kept, multiples of 14), as
transformers and transformers.js run it, unless a size is chosen (``--size``).

Relative models: inverse depth, normalised per photo.  Metric models (``edgedepth.models``): metres end to end.  A model
with a confidence or sky output (Depth Anything 3: ``ModelFamily.outputs_of``) also gives ``<stem>_confidence.png`` /
``<stem>_sky.png`` (grey, min-max per photo, brighter = larger) and, with ``raw``, the ``.npy`` (the values as they
are)."""

from __future__ import annotations

import functools
import os
import sys

import numpy as np

from .errors import EdgedepthError
from .fsutil import atomic_path, check_output_path, ensure_writable_dir, made_dir
from .preprocess import MAX_PIXELS, MAX_SIDE, PATCH, Processor, load_image, model_input

COLORMAP = "inferno"  # perceptually uniform; bright = near (inverse depth)
_SLICE = 1 << 20      # values per slice in the photo-sized element-wise maps below (temporaries stay ~10 MB)


def resize_depth(depth: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """[1,h,w] or [h,w] depth -> [H,W] float32, bicubic like HF's post_process_depth_estimation."""
    import torch

    d = torch.from_numpy(np.ascontiguousarray(depth, np.float32)).reshape(1, 1, *depth.shape[-2:])
    return torch.nn.functional.interpolate(d, size=size, mode="bicubic", align_corners=False)[0, 0].numpy()


def _scaled(depth: np.ndarray, lo: float, hi: float) -> np.ndarray:
    return np.zeros_like(depth) if hi - lo <= 0 else (depth - lo) / (hi - lo)


def normalise(depth: np.ndarray) -> np.ndarray:
    """Min-max to [0, 1] (a constant map becomes all zeros rather than NaN)."""
    return _scaled(depth, float(np.min(depth)), float(np.max(depth)))


def _sliced(a: np.ndarray, fn, dtype, tail: tuple = ()) -> np.ndarray:
    """``fn`` (element-wise) over ``a`` a slice at a time, into one new ``dtype`` array of shape ``a.shape + tail``:
    the same values as ``fn(a)``, with temporaries the size of a slice instead of the photo."""
    flat = np.ascontiguousarray(a).reshape(-1)
    out = np.empty((flat.size, *tail), dtype)
    for i in range(0, flat.size, _SLICE):
        out[i:i + _SLICE] = fn(flat[i:i + _SLICE])
    return out.reshape(*np.shape(a), *tail)


@functools.lru_cache(maxsize=None)
def _lut8(name: str) -> np.ndarray:
    """Colormap ``name`` as a uint8 RGB table in matplotlib's own order (its N colours, then under, over and bad),
    each entry rounded as matplotlib's float RGBA always was here: ``(c * 255 + 0.5)`` truncated."""
    from matplotlib import colormaps

    cmap = colormaps[name]
    lut = np.vstack([cmap(np.arange(cmap.N)), cmap.get_under(), cmap.get_over(), cmap.get_bad()])
    return (lut[:, :3] * 255 + 0.5).astype(np.uint8)


def _lut_index(x: np.ndarray, n: int) -> np.ndarray:
    """matplotlib's ``Colormap.__call__`` index rule: floats -> ``int(x * N)`` (computed in x's dtype) with x == 1 ->
    N - 1; below 0 -> under (N), at/above N -> over (N + 1), NaN -> bad (N + 2); integers index directly."""
    xa = x * n if x.dtype.kind == "f" else x.copy()
    if x.dtype.kind == "f":
        xa[xa == n] = n - 1
    under, over, bad = xa < 0, xa >= n, np.isnan(xa)
    with np.errstate(invalid="ignore"):
        idx = xa.astype(int)
    idx[under], idx[over], idx[bad] = n, n + 1, n + 2
    return idx


def colorize(depth: np.ndarray) -> np.ndarray:
    """[H,W] depth -> uint8 RGB [H,W,3] through the perceptual colormap: min-max normalised, then matplotlib's colour
    for each value, bit for bit, through a uint8 table a slice at a time (~4 bytes per pixel besides the result, where
    matplotlib's float64 RGBA needs ~80)."""
    depth = np.asarray(depth)
    lut = _lut8(COLORMAP)
    n, lo, hi = len(lut) - 3, float(np.min(depth)), float(np.max(depth))
    return _sliced(depth, lambda d: lut.take(_lut_index(_scaled(d, lo, hi), n), axis=0, mode="clip"), np.uint8, (3,))


def _save_png(path: str, array: np.ndarray, mode: str | None = None) -> None:
    from PIL import Image

    with atomic_path(path) as tmp:
        Image.fromarray(array, mode).save(tmp, format="PNG")


def metres_png16(depth_m: np.ndarray) -> tuple[np.ndarray, float]:
    """Metres -> uint16 millimetres (the KITTI/NYU-style depth PNG); returns (image, share of pixels clipped at 65.535 m)."""
    clipped = [0]

    def to_mm(d):
        mm = np.rint(np.clip(np.asarray(d, np.float64), 0, None) * 1000.0)     # exact in float64
        clipped[0] += int(np.count_nonzero(mm > 65535))
        return np.minimum(mm, 65535).astype(np.uint16)

    out = _sliced(np.asarray(depth_m), to_mm, np.uint16)
    return out, clipped[0] / max(1, out.size)


def colour_bar(rgb: np.ndarray, lo: float, hi: float, ticks: int = 5) -> np.ndarray:
    """``rgb`` with a labelled vertical colour bar on its right: near (``lo`` m, bright) at the top, ``hi`` m below."""
    from matplotlib import colormaps
    from PIL import Image, ImageDraw, ImageFont

    h, w = rgb.shape[:2]
    font = ImageFont.load_default(size=max(10, h // 40))
    labels = [f"{lo + (hi - lo) * i / (ticks - 1):.2f} m" for i in range(ticks)]
    bar_w, pad = max(12, w // 40), max(4, w // 160)
    text_w = max(int(font.getlength(t)) for t in labels) + pad
    canvas = Image.new("RGB", (w + 2 * pad + bar_w + text_w + pad, h), "white")
    canvas.paste(Image.fromarray(rgb), (0, 0))
    ramp = (colormaps[COLORMAP](np.linspace(1.0, 0.0, h))[:, :3] * 255 + 0.5).astype(np.uint8)   # top = near
    canvas.paste(Image.fromarray(np.repeat(ramp[:, None], bar_w, axis=1)), (w + pad, 0))
    draw = ImageDraw.Draw(canvas)
    for i, t in enumerate(labels):
        y = round((h - 1) * i / (ticks - 1))
        draw.line([(w + pad + bar_w, y), (w + pad + bar_w + pad // 2, y)], fill="black")
        anchor = "lt" if i == 0 else "lb" if i == ticks - 1 else "lm"
        draw.text((w + 2 * pad + bar_w, y), t, fill="black", font=font, anchor=anchor)
    return np.asarray(canvas)


# The further outputs predict writes beside the depth (roles of ModelFamily.outputs_of), each as a grey map
MAPS = ("confidence", "sky")


def output_names(stem: str, raw: bool, roles: tuple[str, ...] = ()) -> list[str]:
    """The file names predict writes for a photo named ``stem`` (in write order): the one place they are made."""
    names = [f"{stem}_depth.png"] + ([f"{stem}_depth.npy", f"{stem}_depth16.png"] if raw else [])
    for role in roles:
        names += [f"{stem}_{role}.png"] + ([f"{stem}_{role}.npy"] if raw else [])
    return names


def write_outputs(depth: np.ndarray, stem: str, out_dir: str, raw: bool, metric: bool = False,
                  larger_is_farther: bool = False) -> list[str]:
    """Relative depth: colour PNG (bright = near, per-photo min-max, whichever way the model's output grows:
    ``larger_is_farther``), with ``raw`` the float .npy and a min-max 16-bit PNG of the output as it is.  Metric depth
    (metres): colour PNG with a colour bar labelled in metres, with ``raw`` the .npy in metres and a 16-bit PNG in
    millimetres (clipped at 65.535 m; a note on stderr says how much)."""
    written = []
    png, *raws = (os.path.join(out_dir, n) for n in output_names(stem, raw))
    if metric:      # bright = near, as for relative (inverse) depth
        _save_png(png, colour_bar(colorize(-depth), float(depth.min()), float(depth.max())))
    else:
        _save_png(png, colorize(-depth if larger_is_farther else depth))
    written.append(png)
    if raw:
        npy, png16 = raws
        with atomic_path(npy) as tmp, open(tmp, "wb") as f:
            np.save(f, np.asarray(depth, np.float32))
        if metric:
            mm, clipped = metres_png16(depth)
            if clipped:
                print(f"note: {png16}: {clipped:.1%} of pixels are beyond 65.535 m and clipped (the .npy keeps them)",
                      file=sys.stderr)
            _save_png(png16, mm)
        else:
            lo, hi = float(np.min(depth)), float(np.max(depth))
            _save_png(png16, _sliced(depth, lambda d: (_scaled(d, lo, hi) * 65535 + 0.5).astype(np.uint16), np.uint16))
        written += [npy, png16]
    return written


def write_map(values: np.ndarray, role: str, stem: str, out_dir: str, raw: bool) -> list[str]:
    """[H,W] further output (photo-sized; ``role`` one of :data:`MAPS`) -> ``<stem>_<role>.png``: 8-bit grey, min-max
    per photo, larger = brighter (more confident, more sky); with ``raw`` also ``<stem>_<role>.npy`` (float32, the
    values as they are)."""
    png, *raws = (os.path.join(out_dir, n) for n in output_names(stem, raw, (role,))[1 + 2 * raw:])
    lo, hi = float(np.min(values)), float(np.max(values))
    _save_png(png, _sliced(values, lambda c: (_scaled(c, lo, hi) * 255 + 0.5).astype(np.uint8), np.uint8), "L")
    written = [png]
    if raw:
        npy, = raws
        with atomic_path(npy) as tmp, open(tmp, "wb") as f:
            np.save(f, np.asarray(values, np.float32))
        written.append(npy)
    return written


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path))[0]


def _identity(path: str) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def validate_inputs(images: list[str], out_dir: str, max_pixels: int = MAX_PIXELS, *, raw: bool = False,
                    roles: tuple[str, ...] = (), overwrite: bool = False) -> None:
    """Check every image (at most ``max_pixels`` pixels each), the output folder and every file the run will write,
    up front, before a model is loaded or anything is run: no two inputs may give one output name, no output may be
    one of the inputs (not even with ``overwrite``), every output must be absent or (with ``overwrite``) a regular
    file (:func:`fsutil.check_output_path`)."""
    ensure_writable_dir(out_dir)
    stems: dict[str, str] = {}
    for p in images:
        load_image(p, max_pixels)
        stem = _stem(p)
        if stem in stems:
            raise EdgedepthError(f"inputs {stems[stem]!r} and {p!r} share the name {stem!r}: their outputs would "
                                 "overwrite each other; rename one")
        stems[stem] = p
    inputs = {_identity(p): p for p in images}      # by file identity: symlinks and hard links too
    for stem in stems:
        for name in output_names(stem, raw, roles):
            out = check_output_path(os.path.join(out_dir, name))
            hit = inputs.get(_identity(out)) if os.path.lexists(out) else None
            if hit is not None:
                raise EdgedepthError(f"output {out!r} would overwrite the input {hit!r}: choose another output "
                                     "folder")
            if os.path.lexists(out) and not overwrite:
                raise EdgedepthError(f"output {out!r} exists: pass --overwrite to replace it, or choose another "
                                     "output folder")


def photo_size(processor: Processor, orig: tuple[int, int], path: str) -> tuple[int, int]:
    """The size a dynamic-size file runs the photo ``path`` (``orig``: its (height, width)) at: ``processor``'s (the
    file's ``preprocessor_config.json``: :meth:`Processor.model_size`); a note on stderr where that differs from
    upstream's own size (a side beyond what edgedepth runs)."""
    size, upstream = processor.model_size(*orig), processor.size_for(*orig)
    if size != upstream:
        print(f"note: {path!r}: the processor's size {upstream[0]}x{upstream[1]} is outside {PATCH}..{MAX_SIDE} px a "
              f"side; running it at {size[0]}x{size[1]} (same aspect ratio; --size chooses another)", file=sys.stderr)
    return size


def predict(images: list[str], runner, out_dir: str, raw: bool = False, progress=None,
            max_depth: float | None = None, max_pixels: int = MAX_PIXELS, larger_is_farther: bool = False,
            overwrite: bool = False) -> list[str]:
    """Run ``runner`` on each image (checked first with :func:`validate_inputs`); returns the written paths.
    ``max_depth``: the model is metric (metres, 0..max_depth): outputs in metres, see :func:`write_outputs`;
    ``larger_is_farther``: a relative model whose output grows with distance (``Member.larger_is_farther``).
    A runner with a ``processor`` (a dynamic-size file: ``formats.onnx.PhotoSizedRunner``) runs each photo at its
    own size (:func:`photo_size`, as transformers does); any other at its one ``input_shape``.  Either way the maps
    are resized back to the photo's size.
    A runner with a ``confidence`` or ``sky`` output (``output_names``) also gives :func:`write_map`'s files.
    Existing outputs are replaced only with ``overwrite`` (never an input: :func:`validate_inputs`).
    An output folder this call creates is removed again if it fails before writing anything."""
    with made_dir(out_dir):
        maps = [r for r in getattr(runner, "output_names", ()) if r in MAPS]
        validate_inputs(images, out_dir, max_pixels, raw=raw, roles=tuple(maps), overwrite=overwrite)
        fixed = (int(runner.input_shape[2]), int(runner.input_shape[3]))
        processor = getattr(runner, "processor", None)      # a dynamic-size file: each photo at its own size
        written = []
        for p in images:
            img = load_image(p, max_pixels)
            orig = (img.height, img.width)
            size = fixed if processor is None else photo_size(processor, orig, p)
            x = model_input(img, size, getattr(runner, "input_dtype", "float32"))
            del img
            out = runner.run_all(x) if maps else {"depth": runner.run(x)}
            depth = resize_depth(out["depth"], orig)
            if max_depth is not None:       # bicubic resizing may overshoot the head's 0..max_depth range
                depth = np.clip(depth, 0.0, max_depth, out=depth)
            stem = _stem(p)
            written += write_outputs(depth, stem, out_dir, raw, max_depth is not None, larger_is_farther)
            for role in maps:
                written += write_map(resize_depth(out[role], orig), role, stem, out_dir, raw)
            if progress:
                progress(p)
    return written
