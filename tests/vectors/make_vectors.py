"""Regenerate the playground's preprocessing test vectors (run from the repo root):

    .venv/bin/python tests/vectors/make_vectors.py

Writes small synthetic images and what ``edgedepth.preprocess`` makes of them: the resized uint8 RGB image (raw,
HWC) for the small sizes, the full float32 NCHW tensor for the first one, and SHA-256 of both for every case, in
``index.json``. The browser's implementation (web/preprocess.js) must reproduce them exactly
(tests/test_playground.py). Deterministic: same bytes on every run.
"""

from __future__ import annotations

import hashlib
import io
import json
import os

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))


def scene(w: int, h: int, seed: int) -> np.ndarray:
    """Gradients, a sinusoid, hard-edged shapes (bicubic overshoot -> clipping) and a patch of noise; uint8 HxWx3."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 255 * x / max(w - 1, 1)
    g = 255 * y / max(h - 1, 1)
    b = 127.5 + 127.5 * np.sin(x / 3.1 + y / 5.3)
    img = np.stack([r, g, b], -1)
    img[h // 5: h // 2, w // 6: w // 2] = (255, 255, 255)
    img[(x - 0.7 * w) ** 2 + (y - 0.6 * h) ** 2 < (0.18 * min(w, h)) ** 2] = (0, 0, 0)
    img[::7, :] = (250, 10, 20)
    ph, pw = max(h // 4, 1), max(w // 4, 1)
    img[h - ph:, :pw] = rng.integers(0, 256, (ph, pw, 3))
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def png_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def cases():
    yield "rgb_97x61.png", Image.fromarray(scene(97, 61, 1), "RGB"), (56, 70), True   # downscale both ways
    yield "gray_31x23.png", Image.fromarray(scene(31, 23, 2)[..., 1], "L"), (56, 70), False  # upscale, grayscale
    yield "rgb_40x120.png", Image.fromarray(scene(40, 120, 3), "RGB"), (56, 70), False  # up in x, down in y
    yield "rgb_300x200.png", Image.fromarray(scene(300, 200, 4), "RGB"), (56, 70), False  # strong downscale
    yield "rgb_160x120.png", Image.fromarray(scene(160, 120, 5), "RGB"), (518, 686), False  # the default size
    yield "rgb_120x160.png", Image.fromarray(scene(120, 160, 6), "RGB"), (518, 686), False  # portrait: vertical first


def main() -> None:
    from edgedepth.preprocess import load_image, preprocess

    index = {"about": "edgedepth preprocessing vectors: image -> PIL bicubic uint8 (HWC RGB) -> float32 NCHW tensor. "
                      "Made by make_vectors.py; checked by tests/test_playground.py.", "cases": []}
    for name, img, (h, w), keep_tensor in cases():
        path = os.path.join(HERE, name)
        with open(path, "wb") as f:
            f.write(png_bytes(img))
        src = load_image(path)  # the exact path the CLI takes
        rgb = np.asarray(src.resize((w, h), Image.Resampling.BICUBIC), dtype=np.uint8)
        x = preprocess(src, (h, w))
        case = {"image": name, "image_size": [src.height, src.width], "size": [h, w],
                "uint8_sha256": hashlib.sha256(rgb.tobytes()).hexdigest(),
                "tensor_sha256": hashlib.sha256(x.astype("<f4").tobytes()).hexdigest()}
        if h * w <= 56 * 70:
            u8 = f"{os.path.splitext(name)[0]}.{h}x{w}.u8"
            rgb.tofile(os.path.join(HERE, u8))
            case["uint8"] = u8
        if keep_tensor:
            f32 = f"{os.path.splitext(name)[0]}.{h}x{w}.f32"
            x.astype("<f4").tofile(os.path.join(HERE, f32))
            case["tensor"] = f32
        index["cases"].append(case)
    with open(os.path.join(HERE, "index.json"), "w") as f:
        json.dump(index, f, indent=2)
        f.write("\n")


if __name__ == "__main__":
    main()
