"""Depth Anything 3's other members: Small's recipe (depth-anything-3-small.py) with the member's checkpoint, at one
size in LiteRT only.

    edgedepth release --recipe recipes/depth-anything-3-<member>.py --out DIR [--model synthetic-da3-<...>]

One size, 378x504 (what the package's input processor makes of a 640x480 photo): at 4x (Base) to 14x (the ViT-L
members) Small's parameters four sizes would take hours here and gigabytes on disk, and Small's 224x224 ExecuTorch
preset is the browser's file.  Committed measurements are Small's and match (by SHA-256) none of these files, so the
card states what the build itself measured.
"""

import os
import runpy

from edgedepth.models import MEMBERS, family_of_member

_HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = os.path.join(_HERE, "depth-anything-3-small.py")
FILES = [os.path.abspath(__file__), SMALL]      # a member recipe's provenance hash covers these bytes too


def member_recipe(name: str) -> dict:
    """Small's recipe for member ``name``, named after the member's recipe file (``ModelFamily.recipe_file``)."""
    m = MEMBERS[name]
    stem = os.path.splitext(os.path.basename(family_of_member(m).recipe_file(m)))[0]   # depth-anything-3-mono-large
    return {**runpy.run_path(SMALL, run_name="edgedepth_recipe_base")["RECIPE"],
            "name": f"{stem}-edgedepth", "base_model": m.hub_id, "model": m.hub_id,
            "sizes": ["378x504"], "executorch": None, "onnx": None}
