"""Release recipe for Depth Anything 3 Base (Apache-2.0; ViT-B, 102M parameters).

    python recipes/depth-anything-3-base.py --out out/depth-anything-3-base --model synthetic-da3-base
    edgedepth release --recipe recipes/depth-anything-3-base.py --out DIR --model synthetic-da3-tiny-base --sizes 28x42
"""
# How it differs from Small: _da3_family.py (one size, 378x504, LiteRT only).

import os
import runpy

_FAMILY = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_da3_family.py"))
INCLUDES, RECIPE = _FAMILY["FILES"], _FAMILY["member_recipe"]("da3-base")

if __name__ == "__main__":
    import sys

    from edgedepth.cli import main

    sys.exit(main(["release", "--recipe", __file__, *sys.argv[1:]]))
