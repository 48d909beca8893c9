"""The family's other members: Small's recipe (depth-anything-v2-small.py) with the member's checkpoint.

    edgedepth release --recipe recipes/depth-anything-v2-<member>.py --out DIR [--model synthetic-<...>]

Metric Small members build Small's files (all sizes, precisions, formats).  Base and Large build one size, 518x686, in
LiteRT and ONNX: at 97.5M / 335M parameters six sizes would take hours here and gigabytes on disk, and the ExecuTorch
preset is Small's browser file.  No revision is pinned for these members (transformers' conversion script names none):
the manifest records the SHA-256 of every weight file that was loaded.  Committed measurements are Small's and match
(by SHA-256) none of these files, so cards state what the build itself measured.
"""

import os
import runpy

from edgedepth.models import MEMBERS

_HERE = os.path.dirname(os.path.abspath(__file__))
SMALL = os.path.join(_HERE, "depth-anything-v2-small.py")
FILES = [os.path.abspath(__file__), SMALL]      # a member recipe's provenance hash covers these bytes too


def member_recipe(name: str) -> dict:
    m = MEMBERS[name]
    recipe = {**runpy.run_path(SMALL, run_name="edgedepth_recipe_base")["RECIPE"],
              "name": f"depth-anything-v2-{name}-edgedepth", "base_model": m.hub_id, "model": m.hub_id}
    if m.arch != MEMBERS["small"].arch:
        recipe.update(sizes=["518x686"], executorch=None)
    return recipe
