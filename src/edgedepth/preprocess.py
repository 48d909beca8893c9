"""The one image -> tensor contract, used by every command (the playground mirrors it with shared test vectors).

Identical to HF ``DPTImageProcessor`` for Depth-Anything-V2 (PIL backend) at a fixed export size:
RGB -> bicubic resize (PIL, on uint8) to exactly H x W -> /255 -> (x - mean) / std -> float32 NCHW [1, 3, H, W].
Images are first brought to 8-bit RGB the way a user expects: EXIF orientation applied, 16-bit scaled (not clipped),
alpha dropped, grayscale/palette/CMYK converted.
"""

from __future__ import annotations

import os

import numpy as np

from .errors import EdgedepthError

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
PATCH = 14
DEFAULT_SIZE = (518, 686)  # (height, width): what a 640x480 photo becomes in the HF processor


def parse_size(text: str) -> tuple[int, int]:
    """'518x686' -> (518, 686) as (height, width); both must be positive multiples of the 14-pixel patch."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        h, w = (int(p) for p in parts)
    except ValueError:
        raise EdgedepthError(f"size {text!r}: expected HEIGHTxWIDTH, multiples of {PATCH}, e.g. 518x686",
                             option="size") from None
    if h <= 0 or w <= 0 or h % PATCH or w % PATCH:
        raise EdgedepthError(f"size {text!r}: height and width must be positive multiples of {PATCH} (e.g. 518x686)",
                             option="size")
    return h, w


def load_image(path: str):
    """Open any photo as an 8-bit RGB PIL image, or raise a one-line EdgedepthError naming the problem."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    if not os.path.exists(path):
        raise EdgedepthError(f"image {path!r} does not exist")
    if os.path.isdir(path):
        raise EdgedepthError(f"image {path!r} is a folder, not an image file")
    if os.path.getsize(path) == 0:
        raise EdgedepthError(f"image {path!r} is empty (0 bytes)")
    try:
        img = Image.open(path)
        img.load()
    except UnidentifiedImageError:
        raise EdgedepthError(f"{path!r} is not an image PIL can read") from None
    except (OSError, SyntaxError, ValueError) as e:
        raise EdgedepthError(f"image {path!r} is corrupt or truncated: {e}") from None
    img = ImageOps.exif_transpose(img)
    if img.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        a = np.asarray(img, dtype=np.float64)
        hi = 65535.0 if img.mode.startswith("I;16") or a.max() > 255 else 255.0
        img = Image.fromarray(np.clip(np.round(a * (255.0 / hi)), 0, 255).astype(np.uint8), "L")
    elif img.mode == "RGBA" or img.mode == "LA" or (img.mode == "P" and "transparency" in img.info):
        img = img.convert("RGBA").convert("RGB")  # alpha dropped, as HF's convert_rgb does
    return img.convert("RGB") if img.mode != "RGB" else img


def pixels(img, size: tuple[int, int]) -> np.ndarray:
    """8-bit RGB PIL image -> uint8 [1, 3, H, W]: the bicubic resize alone (the input of ``--input-dtype uint8``
    files, which normalise in the graph)."""
    from PIL import Image

    h, w = size
    resized = img.resize((w, h), Image.Resampling.BICUBIC)
    return np.ascontiguousarray(np.asarray(resized, dtype=np.uint8).transpose(2, 0, 1)[None])


def normalise(px: np.ndarray) -> np.ndarray:
    """uint8 [1, 3, H, W] pixels (:func:`pixels`) -> float32 [1, 3, H, W]: /255, ImageNet mean/std."""
    x = px.astype(np.float32) * np.float32(1 / 255)
    x = (x - np.asarray(MEAN, np.float32).reshape(1, 3, 1, 1)) / np.asarray(STD, np.float32).reshape(1, 3, 1, 1)
    return np.ascontiguousarray(x)


def preprocess(img, size: tuple[int, int]) -> np.ndarray:
    """8-bit RGB PIL image -> float32 [1, 3, H, W], the model input."""
    return normalise(pixels(img, size))


def denormalise(x: np.ndarray) -> np.ndarray:
    """float32 [1, 3, H, W] model input -> the uint8 pixels it was made from (:func:`normalise` inverted, rounded)."""
    m, s = (np.asarray(v, np.float32).reshape(1, 3, 1, 1) for v in (MEAN, STD))
    return np.clip(np.round((np.asarray(x, np.float32) * s + m) * 255), 0, 255).astype(np.uint8)


def model_input(img, size: tuple[int, int], dtype: str = "float32") -> np.ndarray:
    """What a file takes (its runner's ``input_dtype``): the normalised tensor, or for "uint8" (``_u8in`` files, which
    normalise in the graph) the resized pixels."""
    return pixels(img, size) if dtype == "uint8" else preprocess(img, size)


def load_and_preprocess(path: str, size: tuple[int, int], dtype: str = "float32") -> tuple[np.ndarray, tuple[int, int]]:
    """Image file -> (model input, original (height, width)); ``dtype``: see :func:`model_input`."""
    img = load_image(path)
    return model_input(img, size, dtype), (img.height, img.width)
