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

from edgedepth.models import MEMBERS

_HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = os.path.join(_HERE, "depth-anything-3-small.py")
FILES = [os.path.abspath(__file__), SMALL]      # a member recipe's provenance hash covers these bytes too


def member_recipe(name: str, slug: str) -> dict:
    """Small's recipe for member ``name`` (``slug``: its recipe name, "base", "mono-large")."""
    hub_id = MEMBERS[name].hub_id
    return {**runpy.run_path(SMALL, run_name="edgedepth_recipe_base")["RECIPE"],
            "name": f"depth-anything-3-{slug}-edgedepth", "base_model": hub_id, "model": hub_id,
            "sizes": ["378x504"], "executorch": None, "onnx": None}
