"""Release recipe for Depth Anything 3 Metric Large (DA3METRIC-LARGE, Apache-2.0; ViT-L with a DPT head:
metres = depth x focal / 300; + sky).

    python recipes/depth-anything-3-metric-large.py --out out/depth-anything-3-metric-large \
      --model synthetic-da3-metric-large
    edgedepth release --recipe recipes/depth-anything-3-metric-large.py --out DIR --model synthetic-da3-tiny-metric \
      --sizes 28x42
"""
# How it differs from Small: _da3_family.py (one size, 378x504, LiteRT only).

import os
import runpy

_FAMILY = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_da3_family.py"))
INCLUDES, RECIPE = _FAMILY["FILES"], _FAMILY["member_recipe"]("da3metric-large")

if __name__ == "__main__":
    import sys

    from edgedepth.cli import main

    sys.exit(main(["release", "--recipe", __file__, *sys.argv[1:]]))
