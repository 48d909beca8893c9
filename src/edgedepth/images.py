"""Image sets for validation: the default offline set of natural photos, or a user's folder.

Default set: 11 photos bundled with widely used Python packages (scikit-image 0.26.0, matplotlib), each expanded into 10
deterministic views (full frame, four 75 % corner crops, 60 % and 80 % centre crops, mirrored full frame and mirrored
80 % centre, the lower half) = 110 inputs.  The set is identified by a SHA-256 over every source file's hash and
every view's spec, so two runs can be checked to have used the same inputs.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import os

from .errors import EdgedepthError
from .fsutil import regular_file, sha256_file
from .preprocess import MAX_PIXELS, image_size, load_image

# (package, relative path, description, license/credit) — the package's own docs state these licenses.
SOURCES = [
    ("skimage", "data/astronaut.png", "astronaut Eileen Collins (NASA)", "public domain (NASA)"),
    ("skimage", "data/camera.png", "man with a camera (grayscale)", "CC0 (Lav Varshney)"),
    ("skimage", "data/chelsea.png", "Chelsea the cat", "CC0 (Stefan van der Walt)"),
    ("skimage", "data/coffee.png", "coffee cup", "CC0 (Rachel Michetti)"),
    ("skimage", "data/rocket.jpg", "Falcon 9 launch (SpaceX)", "public domain (SpaceX)"),
    ("skimage", "data/motorcycle_left.png", "motorcycle, Middlebury 2014 stereo (left)",
     "Middlebury 2014 stereo dataset (Scharstein et al.), as redistributed by scikit-image"),
    ("skimage", "data/motorcycle_right.png", "motorcycle, Middlebury 2014 stereo (right)",
     "Middlebury 2014 stereo dataset (Scharstein et al.), as redistributed by scikit-image"),
    ("skimage", "data/brick.png", "brick wall (grayscale texture)", "CC0 (cc0textures.com)"),
    ("skimage", "data/grass.png", "grass (grayscale texture)", "CC0 (cc0textures.com)"),
    ("skimage", "data/gravel.png", "gravel (grayscale texture)", "CC0 (cc0textures.com)"),
    ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg", "Grace Hopper portrait (US Navy)", "public domain (US Navy)"),
]

# (name, (left, top, right, bottom) as fractions, mirror)
VIEWS = [
    ("full", (0.0, 0.0, 1.0, 1.0), False),
    ("tl75", (0.0, 0.0, 0.75, 0.75), False),
    ("tr75", (0.25, 0.0, 1.0, 0.75), False),
    ("bl75", (0.0, 0.25, 0.75, 1.0), False),
    ("br75", (0.25, 0.25, 1.0, 1.0), False),
    ("c60", (0.2, 0.2, 0.8, 0.8), False),
    ("c80", (0.1, 0.1, 0.9, 0.9), False),
    ("full-mirror", (0.0, 0.0, 1.0, 1.0), True),
    ("c80-mirror", (0.1, 0.1, 0.9, 0.9), True),
    ("bottom-half", (0.0, 0.5, 1.0, 1.0), False),
]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp", ".tif", ".tiff", ".gif")


@dataclasses.dataclass(frozen=True)
class ImageItem:
    id: str            # stable name, e.g. "chelsea/c60"
    path: str
    view: tuple | None = None   # (box fractions, mirror) or None for "as is"
    license: str | None = None
    max_pixels: int | None = None   # a photo above this is refused (preprocess.load_image); None: the default cap

    def load(self):
        """8-bit RGB PIL image of this item (view applied)."""
        from PIL import ImageOps

        img = load_image(self.path, self.max_pixels or MAX_PIXELS)
        if self.view is None:
            return img
        (l, t, r, b), mirror = self.view
        w, h = img.size
        img = img.crop((round(l * w), round(t * h), round(r * w), round(b * h)))
        return ImageOps.mirror(img) if mirror else img


def source_files() -> list[str]:
    """Paths of the default set's source photos (to copy them to another machine)."""
    return [os.path.join(_package_dir(pkg), rel) for pkg, rel, _d, _l in SOURCES]


def _package_dir(pkg: str) -> str:
    import importlib

    try:
        return os.path.dirname(importlib.import_module(pkg).__file__)
    except ImportError:
        raise EdgedepthError(f"the default image set needs the package {pkg!r}; run `make setup`") from None


def default_image_set(root: str | None = None) -> list[ImageItem]:
    """The 110 views; source files come from their packages, or from ``root`` (a flat folder of copies, e.g. on a
    machine without scikit-image) — the set's hash is the same either way, as it hashes file contents."""
    items = []
    for pkg, rel, _desc, lic in SOURCES:
        path = os.path.join(root, os.path.basename(rel)) if root else os.path.join(_package_dir(pkg), rel)
        if not os.path.lexists(path):
            raise EdgedepthError(f"default image {path!r} is missing from the installed {pkg} package")
        regular_file(path, "default image")
        stem = os.path.splitext(os.path.basename(rel))[0]
        for name, box, mirror in VIEWS:
            items.append(ImageItem(f"{stem}/{name}", path, (box, mirror), lic))
    return items


def folder_image_set(folder: str, max_pixels: int | None = None) -> list[ImageItem]:
    """A folder's photos, each checked up front from its header (readable, at most ``max_pixels``: None, the default
    cap) before anything slow runs."""
    if not os.path.isdir(folder):
        raise EdgedepthError(f"images {folder!r} is not a folder", option="images")
    files = sorted(f for f in os.listdir(folder) if f.lower().endswith(IMAGE_EXTENSIONS))
    if not files:
        raise EdgedepthError(f"images {folder!r} holds no images ({', '.join(IMAGE_EXTENSIONS)})", option="images")
    items = [ImageItem(f, os.path.join(folder, f), max_pixels=max_pixels) for f in files]
    inside = os.path.realpath(folder)
    for it in items:
        real = os.path.realpath(it.path)
        if os.path.commonpath([inside, real]) != inside:     # a link out of the folder: nothing outside is read
            raise EdgedepthError(f"images {folder!r}: {os.path.basename(it.path)!r} is a symlink to {real!r}, "
                                 "outside the folder; copy the photo into it", option="images")
        image_size(it.path, max_pixels or MAX_PIXELS)
    return items


def image_set(folder: str | None = None, limit: int | None = None, max_pixels: int | None = None) -> list[ImageItem]:
    """The default set, or ``folder``'s photos (each at most ``max_pixels``); ``limit``: N of them, spread over all
    sources."""
    items = folder_image_set(folder, max_pixels) if folder else default_image_set()
    if limit is not None:
        if limit < 1:
            raise EdgedepthError("limit must be at least 1", option="limit")
        # spread a limited selection over all sources rather than taking the first photo's views
        step = max(1, len(items) // limit)
        items = (items[::step] + [i for i in items if i not in items[::step]])[:limit]
    return items


@functools.lru_cache(maxsize=None)
def _file_sha256(path: str) -> str:
    return sha256_file(path)


def image_set_hash(items: list[ImageItem]) -> str:
    """SHA-256 over (id, source-file hash, view) of every item, in order."""
    h = hashlib.sha256()
    for it in items:
        h.update(f"{it.id}\t{_file_sha256(it.path)}\t{it.view}\n".encode())
    return h.hexdigest()

