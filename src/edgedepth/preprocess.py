"""The one image -> tensor contract, used by every command (the playground mirrors it with shared test vectors).

Identical to HF ``DPTImageProcessor`` for Depth-Anything-V2 (PIL backend) at a fixed export size:
RGB -> bicubic resize (PIL, on uint8) to exactly H x W -> /255 -> (x - mean) / std -> float32 NCHW [1, 3, H, W].
Images are first brought to 8-bit RGB the way a user expects: EXIF orientation applied, 16-bit scaled (not clipped),
alpha dropped, grayscale/palette/CMYK converted.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import threading

import numpy as np

from .errors import EdgedepthError
from .fsutil import open_input

MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)
PATCH = 14
DEFAULT_SIZE = (518, 686)  # (height, width): what a 640x480 photo becomes in the HF processor
# Largest model side: 100 patches.  A 1400x1400 input has T = 100*100+1 = 10001 tokens; one DINOv2-Small attention
# layer then holds 6 heads x T^2 float32 = 2.4 GB of scores (ViT-L: 16 heads, 6.4 GB) while exporting or running in
# PyTorch, and that grows with the 4th power of the side (140000x140000 would need ~10^17 bytes).
MAX_SIDE = 1400
# Largest photo by default, in pixels: above every common camera (48-50 MP phones, 61 MP full frame, 102 MP medium
# format); predict's peak is ~11 bytes per pixel over the runtime's own (README "Limits"): ~1.3 GB at this cap.  A header
# claiming more (a "decompression bomb": 30000x30000 in 875 KB of PNG) is refused before anything is decoded.
MAX_PIXELS = 120_000_000
_PIL_LIMIT = threading.Lock()


@dataclasses.dataclass(frozen=True)
class Processor:
    """The resize settings of HF's ``DPTImageProcessor`` (a ``preprocessor_config.json``): the size each photo is run
    at by a file with dynamic height and width, as transformers and transformers.js pick it.  The rest of the
    processor (bicubic, /255, ImageNet mean/std) is :func:`preprocess`'s, checked by :meth:`from_config`."""
    height: int                 # ``size``: the target each side is scaled towards
    width: int
    keep_aspect_ratio: bool
    multiple: int               # ``ensure_multiple_of``

    def size_for(self, height: int, width: int) -> tuple[int, int]:
        """(H, W) for a ``height`` x ``width`` photo, exactly as transformers' ``get_resize_output_image_size`` (dpt):
        with ``keep_aspect_ratio``, of the scales that bring the height or the width to its target, the one nearer 1
        (the width's only when strictly nearer), for both sides; then each side rounded to the nearest multiple
        (Python's round: a half to the even multiple).  Upstream's floor/ceil branches never apply (no max, min 0)."""
        sh, sw = self.height / height, self.width / width
        if self.keep_aspect_ratio:
            if abs(1 - sw) < abs(1 - sh):
                sh = sw
            else:
                sw = sh
        return round(sh * height / self.multiple) * self.multiple, round(sw * width / self.multiple) * self.multiple

    def model_size(self, height: int, width: int) -> tuple[int, int]:
        """:meth:`size_for`, brought within what edgedepth runs (multiples of ``PATCH``, each side ``PATCH`` ..
        ``MAX_SIDE``): a side above ``MAX_SIDE`` (a panorama) scales both down, keeping the aspect ratio; a side
        below ``PATCH`` (upstream would give 0 for a strip a few pixels high) becomes ``PATCH``.  Equal to
        :meth:`size_for` for every photo within those bounds (aspect ratios up to ~2.7 at 518)."""
        h, w = self.size_for(height, width)
        if h > MAX_SIDE and h >= w:
            h, w = MAX_SIDE, round(w * MAX_SIDE / h / PATCH) * PATCH
        elif w > MAX_SIDE:
            h, w = round(h * MAX_SIDE / w / PATCH) * PATCH, MAX_SIDE
        return max(PATCH, h), max(PATCH, w)

    @classmethod
    def from_config(cls, d: object, where: str) -> "Processor":
        """The settings of a ``preprocessor_config.json`` (parsed): missing resize keys take ``DPTImageProcessor``'s
        own defaults (size 384x384, keep_aspect_ratio false, ensure_multiple_of 1), as transformers reads the file;
        a setting that changes the pixels in a way :func:`preprocess` does not (no resize, another resample, mean,
        std or scale, padding) is one line, since edgedepth's map would then not be the processor's."""
        if not isinstance(d, dict):
            raise EdgedepthError(f"{where}: not a JSON object")
        size = d.get("size", {"height": 384, "width": 384})
        if _whole(size):
            size = {"height": size, "width": size}
        if not (isinstance(size, dict) and all(_whole(size.get(k)) and size[k] > 0 for k in ("height", "width"))):
            raise EdgedepthError(f"{where}: size {size!r} is not {{\"height\": H, \"width\": W}} (positive whole numbers)")
        keep, multiple = d.get("keep_aspect_ratio", False), d.get("ensure_multiple_of", 1)
        if not isinstance(keep, bool) or not _whole(multiple) or multiple < 1:
            raise EdgedepthError(f"{where}: keep_aspect_ratio {keep!r} / ensure_multiple_of {multiple!r}: expected "
                                 "true/false and a whole number, at least 1")
        if multiple % PATCH:
            raise EdgedepthError(f"{where}: ensure_multiple_of {multiple}: the model takes sides that are multiples "
                                 f"of {PATCH}")
        expected = {"do_resize": True, "resample": 3, "do_rescale": True, "rescale_factor": 1 / 255,
                    "do_normalize": True, "image_mean": list(MEAN), "image_std": list(STD), "do_pad": False}
        for key, value in expected.items():
            if key in d and d[key] != value:
                raise EdgedepthError(f"{where}: {key} {d[key]!r}: edgedepth's preprocessing has {value!r} (bicubic, "
                                     "/255, ImageNet mean/std, no padding); its depth would not be this processor's")
        return cls(int(size["height"]), int(size["width"]), keep, int(multiple))


def _whole(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool)


def parse_size(text: str) -> tuple[int, int]:
    """'518x686' -> (518, 686) as (height, width); both positive multiples of the 14-pixel patch, at most MAX_SIDE."""
    parts = text.lower().replace("×", "x").split("x")
    try:
        h, w = (int(p) for p in parts)
    except ValueError:
        raise EdgedepthError(f"size {text!r}: expected HEIGHTxWIDTH, multiples of {PATCH}, e.g. 518x686",
                             option="size") from None
    if h <= 0 or w <= 0 or h % PATCH or w % PATCH:
        raise EdgedepthError(f"size {text!r}: height and width must be positive multiples of {PATCH} (e.g. 518x686)",
                             option="size")
    if max(h, w) > MAX_SIDE:
        raise EdgedepthError(f"size {text!r}: each side is at most {MAX_SIDE} pixels ({MAX_SIDE // PATCH} patches; "
                             "attention memory grows with the 4th power of the side)", option="size")
    return h, w


@contextlib.contextmanager
def _pil_limit_lifted():
    """PIL's own decompression-bomb check (a warning above 89 MP, an error above 179 MP) off for one open and decode,
    restored after (a lock keeps it to that one open): :func:`_opened` applies ``max_pixels`` to the header instead,
    before anything is decoded, and names the limit."""
    from PIL import Image

    with _PIL_LIMIT:
        saved, Image.MAX_IMAGE_PIXELS = Image.MAX_IMAGE_PIXELS, None
        try:
            yield
        finally:
            Image.MAX_IMAGE_PIXELS = saved


@contextlib.contextmanager
def _opened(path: str, max_pixels: int):
    """``path`` opened by PIL (header read, nothing decoded) and checked against ``max_pixels``, for a block: the file
    is read through :func:`edgedepth.fsutil.open_input` (a FIFO, device or /proc file is one line, never a hang) and
    closed after the block.  One-line errors."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(max_pixels, bool) or not isinstance(max_pixels, (int, np.integer)) or max_pixels < 1:
        raise EdgedepthError(f"max_pixels {max_pixels!r}: must be a whole number of pixels, at least 1",
                             option="max_pixels")
    with open_input(path, "image") as f:
        if os.fstat(f.fileno()).st_size == 0:
            raise EdgedepthError(f"image {path!r} is empty (0 bytes)")
        try:
            img = Image.open(f)
        except UnidentifiedImageError:
            raise EdgedepthError(f"{path!r} is not an image PIL can read") from None
        except (OSError, SyntaxError, ValueError) as e:
            raise EdgedepthError(f"image {path!r} is corrupt or truncated: {e}") from None
        w, h = img.size
        if w * h > max_pixels:
            img.close()
            raise EdgedepthError(f"max_pixels {max_pixels} ({max_pixels / 1e6:g} megapixels) exceeded: image {path!r} "
                                 f"is {w}x{h} ({w * h / 1e6:.1f} megapixels); raise the limit for a genuine photo this "
                                 "large", option="max_pixels")
        yield img


def image_size(path: str, max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """(width, height) from the header alone, with :func:`load_image`'s checks except a full decode."""
    with _pil_limit_lifted(), _opened(path, max_pixels) as img:
        return img.size


def load_image(path: str, max_pixels: int = MAX_PIXELS):
    """Open any photo as an 8-bit RGB PIL image, or raise a one-line EdgedepthError naming the problem; a photo of more
    than ``max_pixels`` pixels is refused from its header, before it is decoded."""
    from PIL import Image, ImageOps

    with _pil_limit_lifted(), _opened(path, max_pixels) as img:
        try:
            img.load()      # the first frame, decoded while the file is open
        except (OSError, SyntaxError, ValueError) as e:
            raise EdgedepthError(f"image {path!r} is corrupt or truncated: {e}") from None
    img = ImageOps.exif_transpose(img)
    if img.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        img = Image.fromarray(_to_uint8(np.asarray(img), img.mode.startswith("I;16")), "L")
    elif img.mode == "RGBA" or img.mode == "LA" or (img.mode == "P" and "transparency" in img.info):
        img = img.convert("RGBA").convert("RGB")  # alpha dropped, as HF's convert_rgb does
    return img.convert("RGB") if img.mode != "RGB" else img


def _to_uint8(a: np.ndarray, sixteen_bit: bool) -> np.ndarray:
    """16-bit/32-bit/float gray -> uint8, scaled (not clipped) from 0..65535 (or 0..255 when nothing is above 255);
    float64 arithmetic a slice of rows at a time, so memory stays near the photo's own size."""
    hi = 65535.0 if sixteen_bit or a.max() > 255 else 255.0
    out = np.empty(a.shape, np.uint8)
    step = max(1, (1 << 20) // max(1, a.shape[1]))
    for r in range(0, a.shape[0], step):
        out[r:r + step] = np.clip(np.round(a[r:r + step].astype(np.float64) * (255.0 / hi)), 0, 255).astype(np.uint8)
    return out


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


def load_and_preprocess(path: str, size: tuple[int, int], dtype: str = "float32",
                        max_pixels: int = MAX_PIXELS) -> tuple[np.ndarray, tuple[int, int]]:
    """Image file -> (model input, original (height, width)); ``dtype``: see :func:`model_input`; ``max_pixels``: see
    :func:`load_image`."""
    img = load_image(path, max_pixels)
    return model_input(img, size, dtype), (img.height, img.width)
