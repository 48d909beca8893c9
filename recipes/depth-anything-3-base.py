"""Release recipe for Depth Anything 3 Base (Apache-2.0; ViT-B, 102M parameters): Small's recipe
(depth-anything-3-small.py) with Base's checkpoint, at one size.

    python recipes/depth-anything-3-base.py --out out/depth-anything-3-base --model synthetic-da3-base
    edgedepth release --recipe recipes/depth-anything-3-base.py --out DIR --model synthetic-da3-tiny-base --sizes 28x42

One size, 378x504 (what the package's input processor makes of a 640x480 photo), in LiteRT only: at 4x Small's
parameters four sizes would take an hour here and a gigabyte on disk, and Small's 224x224 ExecuTorch preset is the
browser's file.  Committed measurements are Small's and match (by SHA-256) none of these files, so the card states what
the build itself measured.
"""

import os
import runpy

_SMALL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "depth-anything-3-small.py")
INCLUDES = [os.path.abspath(__file__), _SMALL]     # the provenance hash covers Small's recipe bytes too
RECIPE = {**runpy.run_path(_SMALL, run_name="edgedepth_recipe_base")["RECIPE"],
          "name": "depth-anything-3-base-edgedepth", "base_model": "depth-anything/DA3-BASE",
          "model": "depth-anything/DA3-BASE", "sizes": ["378x504"], "executorch": None, "onnx": None}

if __name__ == "__main__":
    import sys

    from edgedepth.cli import main

    sys.exit(main(["release", "--recipe", __file__, *sys.argv[1:]]))
