"""A release recipe: a Python file defining ``RECIPE`` (a dict), read into a typed, validated :class:`Recipe`.

A recipe is code: :func:`load_recipe` executes it (like ``setup.py``), so run only recipes you trust.  The default
recipe is this checkout's ``recipes/depth-anything-v2-small.py`` (:func:`default_recipe`), never a file of the current
folder.  Every field is checked once, here, with a one-line error naming the field; the build and the CLI only see the
typed object.  The recipe file's SHA-256 goes into the manifest's provenance.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import runpy

from typing import Any

from .. import resources
from ..errors import EdgedepthError
from ..formats import FORMATS
from ..formats.base import recipe_field
from ..preprocess import parse_size
from ..fsutil import read_input
from ..models.base import checked_max_depth


@dataclasses.dataclass(frozen=True)
class Recipe:
    name: str
    base_model: str
    model: str                                  # checkpoint spec (HF_ID@REV, folder, synthetic...)
    sizes: tuple[str, ...]                      # "HxW", multiples of the 14-pixel patch
    rewrites: str                               # "default": edgedepth.rewrites.PIPELINE defaults
    parts: tuple[tuple[Any, Any], ...]          # (Format, its section checked by Format.recipe_part), FORMATS order
    parity_images: int | None                   # how many photos gate the build (0: none; None: all of parity_folder)
    parity_data: tuple[str, ...] = ()           # committed `edgedepth validate --json` reports (matched by sha256)
    latency_data: tuple[str, ...] = ()          # committed `edgedepth bench --json` reports (matched by sha256)
    path: str = ""
    sha256: str = ""
    declared: tuple[tuple[str, Any], ...] = ()  # the file's own (field, value) of every overridable field
    parity_folder: str | None = None            # the user's photos gate the build (None: the bundled set)
    max_depth: float | str | None = None        # a .pth checkpoint's head: metres (metric) or "relative"
    given: frozenset = frozenset()              # fields the user set on the command line (even to the file's value)

    @property
    def formats(self) -> tuple[str, ...]:
        """The target names of its formats (``Format.target_name``), in ``FORMATS`` order."""
        return tuple(fmt.target_name for fmt, _ in self.parts)

    @property
    def overrides(self) -> dict[str, Any]:
        """{field: value} of the overridable fields (``OVERRIDABLE``) that differ from the recipe file's own values
        or that the user gave (``with_overrides``): what a rebuild must pass again (the release's provenance records
        it, with local paths replaced: ``edgedepth.release.build``)."""
        out = {k: getattr(self, k) for k, v in self.declared if getattr(self, k) != v or k in self.given}
        return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}

    def with_overrides(self, *, model: str | None = None, sizes: list[str] | None = None,
                       parity_images: int | None = None, name: str | None = None, base_model: str | None = None,
                       images: str | None = None, max_depth: float | str | None = None,
                       formats: list[str] | None = None) -> "Recipe":
        """The recipe with the CLI's overrides applied (validated like the file's own values; ``sizes`` None: the
        recipe's, a list: those, at least one, none twice; ``base_model`` "none": no base model; ``formats``: the recipe's
        formats to keep, by target name)."""
        given = {k for k, v in (("name", name), ("base_model", base_model), ("max_depth", max_depth)) if v is not None}
        r = dataclasses.replace(
            self, model=model or self.model,
            sizes=self.sizes if sizes is None else checked_sizes(sizes, "sizes", option="sizes"),
            parity_images=(None if images is not None else self.parity_images) if parity_images is None
            else parity_images,
            name=self.name if name is None else checked_name(name, "--name", option="name"),
            base_model=self.base_model if base_model is None else checked_base_model(base_model, "--base-model"),
            parity_folder=self.parity_folder if images is None else images,
            max_depth=self.max_depth if max_depth is None else checked_max_depth(max_depth, "--max-depth"),
            given=self.given | given, parts=self.parts if formats is None else self._kept(formats))
        if r.parity_images is not None and r.parity_images < 0:
            raise EdgedepthError(f"parity images {r.parity_images}: must be >= 0")
        return r

    def _kept(self, names: list[str]) -> tuple:
        names = [n.strip().lower() for n in names if n.strip()]
        bad = [n for n in names if n not in self.formats]
        if bad or not names:
            raise EdgedepthError(f"--formats {','.join(names) or '(none)'}: this recipe makes "
                                 f"{', '.join(self.formats)} (comma-separated, at least one)", option="formats")
        return tuple((fmt, part) for fmt, part in self.parts if fmt.target_name in names)

    def part(self, fmt):
        """The recipe's section for ``fmt`` (a Format), or None when it has none."""
        return dict(self.parts).get(fmt)


_REPO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")


def checked_name(name, what: str, option: str | None = None) -> str:
    """A release's name: the folder's and the Hub repository's (letters, digits, ``-``, ``_``, ``.``; at most 96)."""
    if not isinstance(name, str) or not _REPO_NAME.match(name) or ".." in name or name.endswith(".git"):
        raise EdgedepthError(f"{what} {name!r}: a release name is what its Hub repository will be called: letters, "
                             "digits, '-', '_' and '.', at most 96, e.g. my-depth-model", option=option)
    return name


def checked_base_model(repo_id, what: str) -> str | None:
    """A Hub model id ``OWNER/NAME`` the files were converted from; "none" (or None): no base model (an unpublished
    checkpoint)."""
    if repo_id is None or repo_id == "none":
        return None
    owner, _, name = repo_id.partition("/") if isinstance(repo_id, str) else ("", "", "")
    if not (owner and _REPO_NAME.match(owner) and _REPO_NAME.match(name)):
        raise EdgedepthError(f"{what} {repo_id!r}: a Hugging Face model id OWNER/NAME (the model these files are "
                             "converted from), or none", option=what.strip("-").replace("-", "_") or None)
    return repo_id


def checked_sizes(sizes, what: str, option: str | None = None) -> tuple[str, ...]:
    """``sizes`` ("HxW" strings) as canonical "HxW", or one EdgedepthError line (starting with ``what``): no size, an
    empty or malformed one, or one size twice ("28x42", "28X42" and " 28x42" are one size)."""
    if not isinstance(sizes, (list, tuple)) or all(isinstance(s, str) and not s.strip() for s in sizes):
        raise EdgedepthError(f"{what}: no size given (a list of HxW, e.g. 518x686)", option=option)
    seen: dict[tuple[int, int], str] = {}
    for s in sizes:
        if not isinstance(s, str) or not s.strip():
            raise EdgedepthError(f"{what}: {s!r} is not a size (HxW, e.g. 518x686)", option=option)
        try:
            hw = parse_size(s)
        except EdgedepthError as e:
            raise EdgedepthError(f"{what}: {e}", option=option) from None
        if hw in seen:
            raise EdgedepthError(f"{what}: {seen[hw]!r} and {s!r} are the same size, listed twice", option=option)
        seen[hw] = s
    return tuple(f"{h}x{w}" for h, w in seen)


def _parts(d: dict, where: str) -> tuple:
    """Each format's section (``RECIPE[Format.target_name]``), checked by the format itself."""
    parts = []
    for fmt in FORMATS:
        if fmt.recipe_required:
            recipe_field(d, fmt.target_name, dict, where)
        if d.get(fmt.target_name):
            parts.append((fmt, fmt.recipe_part(recipe_field(d, fmt.target_name, dict, where), where)))
    return tuple(parts)


def from_dict(d: dict, *, path: str = "", sha256: str = "") -> Recipe:
    """Validate a RECIPE dict (see recipes/depth-anything-v2-small.py) into a :class:`Recipe`."""
    where = os.path.basename(path) or "RECIPE"
    parts = _parts(d, where)
    rewrites = d.get("rewrites", "default")
    if rewrites != "default":
        raise EdgedepthError(f"recipe {where}: rewrites {rewrites!r}: only 'default' is supported")
    model = recipe_field(d, "model", str, where)
    sizes = checked_sizes(recipe_field(d, "sizes", list, where), f"recipe {where}: sizes")
    images = recipe_field(d, "parity", dict, where).get("images")
    folder = _recipe_folder(images, path) if isinstance(images, str) else None
    parity_images = None if folder else int(recipe_field(d["parity"], "images", int, where))
    name = checked_name(recipe_field(d, "name", str, where), f"recipe {where}: name")
    base_model = checked_base_model(d.get("base_model"), f"recipe {where}: base_model")
    max_depth = checked_max_depth(d["max_depth"], f"recipe {where}: max_depth") if "max_depth" in d else None
    r = Recipe(
        name=name, base_model=base_model,
        model=model, sizes=sizes, rewrites=rewrites, parts=parts, parity_images=parity_images,
        parity_data=tuple(d.get("parity_data", [])),
        latency_data=tuple(d.get("latency_data", [])),
        path=path, sha256=sha256, parity_folder=folder, max_depth=max_depth,
        declared=(("model", model), ("sizes", sizes), ("parity_images", parity_images), ("name", name),
                  ("base_model", base_model), ("parity_folder", folder), ("max_depth", max_depth),
                  ("formats", tuple(fmt.target_name for fmt, _ in parts))))
    return r


def _recipe_folder(images: str, path: str) -> str:
    """A recipe's ``parity.images`` folder: relative to the recipe file's folder (where a user keeps both)."""
    return os.path.join(os.path.dirname(os.path.abspath(path)), images) if path else images


def default_recipe() -> str:
    """``recipes/depth-anything-v2-small.py`` of this installation (:mod:`edgedepth.resources`: the wheel's bundle or
    the checkout), never the current folder's."""
    return resources.path("recipes", "depth-anything-v2-small.py")


def _run(path: str) -> dict:
    """Execute the recipe file; anything it raises (SystemExit included) is one EdgedepthError line."""
    try:
        return runpy.run_path(path, run_name="edgedepth_recipe")
    except EdgedepthError:
        raise
    except SystemExit as e:
        code = "" if e.code is None else repr(e.code)
        raise EdgedepthError(f"recipe {path!r} stopped with sys.exit({code}) instead of defining RECIPE") from None
    except Exception as e:
        raise EdgedepthError(f"recipe {path!r} raised {type(e).__name__}: {' '.join(str(e).split())[:300]}") from None


_RECIPE_NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")


def recipe_path(path_or_name: str | None) -> str:
    """A recipe file's path: ``None`` is :func:`default_recipe`; a bare name such as ``depth-anything-3-small`` that
    is not a file here is that recipe of this installation (``recipes/NAME.py``: the same name works from a checkout
    and from the wheel, whatever the current folder); anything else is a path, as given."""
    if path_or_name is None:
        return default_recipe()
    if _RECIPE_NAME.match(path_or_name) and not os.path.lexists(path_or_name):
        own = resources.path("recipes", path_or_name + ".py")
        if os.path.isfile(own):
            return own
        names = sorted(n[:-3] for n in os.listdir(resources.path("recipes")) if n.endswith(".py") and n[0] != "_")
        raise EdgedepthError(f"no recipe named {path_or_name!r} (a file of that name does not exist either); "
                             f"recipes edgedepth carries: {', '.join(names)}")
    return path_or_name


def load_recipe(path: str | None = None) -> Recipe:
    """Run the recipe file (Python: it is executed; default: :func:`default_recipe`; a bare name: :func:`recipe_path`)
    and validate its RECIPE dict."""
    if path is None or _RECIPE_NAME.match(path):
        path = recipe_path(path)
        if not os.path.isfile(path):
            raise EdgedepthError(f"the default recipe {path!r} is missing (this edgedepth was installed without "
                                 "its recipes): pass a recipe file, or reinstall edgedepth from its wheel")
    data = read_input(path, "recipe")      # a FIFO, device or /proc file: one line, never a hang
    ns = _run(path)
    if not isinstance(ns.get("RECIPE"), dict):
        raise EdgedepthError(f"recipe {path!r} defines no RECIPE dict")
    for inc in ns.get("INCLUDES", ()):     # recipes built on another recipe: its bytes are part of the provenance
        try:
            data += read_input(inc, "included file")
        except EdgedepthError as e:
            raise EdgedepthError(f"recipe {path!r}: {e}") from None
        except TypeError as e:
            raise EdgedepthError(f"recipe {path!r}: cannot read included file {inc!r}: {e}") from None
    return from_dict(ns["RECIPE"], path=path, sha256=hashlib.sha256(data).hexdigest())
