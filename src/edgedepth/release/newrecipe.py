"""``edgedepth recipe new``: a commented release recipe for the user's own checkpoint (a fine-tune), written from the
recipe edgedepth carries for the family member it is built on (same sizes and formats), so that a release of it needs
no copying or editing of ours.  The text is checked by :func:`edgedepth.release.recipe.from_dict` before it is
returned: what ``recipe new`` prints, ``release --recipe`` accepts.
"""

from __future__ import annotations

import json
import os
import pprint
import re
import runpy

from ..errors import EdgedepthError
from ..formats import FORMATS
from ..models.base import checked_max_depth
from .recipe import checked_base_model, checked_name, from_dict, recipe_path

HEADER = '''"""Release recipe for {name}:
your own {title} checkpoint, written by `edgedepth recipe new`.

    edgedepth release --recipe {file} --out {name}
    edgedepth verify {name}
    edgedepth publish {name} OWNER/{name} --dry-run

A recipe is Python that `edgedepth release` runs: keep it with your checkpoint.  Same recipe + same checkpoint + the
pinned versions -> byte-identical files.
"""

RECIPE = {{
    # The release's name: its folder's and its Hub repository's.
    "name": {name_lit},
    # The Hub model these files are converted from (your model's repository, OWNER/NAME), or None for a checkpoint
    # that is not on the Hub: the card's base_model (its Hub model tree) names it.
    "base_model": {base_model_lit},
    # Your checkpoint: a save_pretrained folder, an official-format .pth / .safetensors file, or OWNER/NAME[@REV].
    "model": {model_lit},
'''

MAX_DEPTH = '''    # The head of a .pth / .safetensors file (not in its weights): metres of a metric head, or "relative".
    "max_depth": {max_depth},
'''

PARITY = '''    # The build's parity gate: N photos of the bundled set, or a folder of your own photos (relative to this file;
    # the card records the set's SHA-256, never the photos).
    "parity": {{"images": {images}, "backend": "cpu"}},
}}
'''


def default_name(model: str) -> str:
    """A release name from the checkpoint's folder or file name: ``./runs/My Fine-tune.pth`` -> ``my-fine-tune-edgedepth``."""
    stem = os.path.splitext(os.path.basename(os.path.normpath(model)))[0] if os.path.exists(model) else \
        model.split("@")[0].split("/")[-1]
    slug = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-._") or "my-model"
    return slug[:80] + "-edgedepth"


def new_recipe(model: str, *, file: str = "my-recipe.py", name: str | None = None, base_model: str | None = None,
               max_depth=None, images: str | int = 8) -> str:
    """The recipe text for checkpoint ``model`` (loaded once to learn its family member; a local path is written
    absolute, so the recipe works from any folder)."""
    from ..checkpoint import load_checkpoint

    max_depth = None if max_depth is None else checked_max_depth(max_depth, "--max-depth")
    ckpt = load_checkpoint(model, quiet=True, max_depth=max_depth)
    member = ckpt.member
    if member is None or ckpt.is_synthetic:
        raise EdgedepthError(f"--model {model}: " + ("a synthetic stand-in is not a checkpoint of your own; its "
                             "recipes are edgedepth's" if member else "matches no member's architecture"),
                             option="model")
    carried = runpy.run_path(recipe_path(os.path.splitext(os.path.basename(ckpt.family.recipe_file(member)))[0]),
                             run_name="edgedepth_recipe")["RECIPE"]
    name = checked_name(name or default_name(model), "--name", option="name")
    where = os.path.abspath(model) if os.path.exists(model) else model
    title = f"{ckpt.family.card_title} {ckpt.family.member_title(member.name)}"
    text = HEADER.format(name=name, title=title, file=file, name_lit=_lit(name), model_lit=_lit(where),
                         base_model_lit=_lit(checked_base_model(base_model, "--base-model")))
    if max_depth is not None:
        text += MAX_DEPTH.format(max_depth=_lit(max_depth))
    text += _formats(carried) + PARITY.format(images=_lit(images))
    ns: dict = {}
    exec(compile(text, file, "exec"), ns)       # noqa: S102  (our own text: checked as release will read it)
    from_dict(ns["RECIPE"], path=os.path.abspath(file))
    return text


def _lit(value) -> str:
    """A Python literal of a str, number or None, strings in double quotes (as the rest of the recipe)."""
    return json.dumps(value) if isinstance(value, str) else repr(value)


def _formats(carried: dict) -> str:
    """The sizes and every format's section of the member's own recipe, as literals."""
    lines = ["    # Sizes (HEIGHTxWIDTH, multiples of 14) and formats: those of edgedepth's recipe for this member.\n",
             f"    \"sizes\": {carried['sizes']!r},\n", "    \"rewrites\": \"default\",\n"]
    for fmt in FORMATS:
        if carried.get(fmt.target_name):
            body = pprint.pformat(carried[fmt.target_name], width=100, sort_dicts=False)
            lines.append(f"    {fmt.target_name!r}: {body},\n".replace("'", '"'))
    return "".join(lines)
