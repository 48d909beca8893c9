"""Release recipe for Depth Anything V2 Metric Indoor Base (CC BY-NC 4.0, non-commercial; metres 0..20)."""
# How it differs from Small: _family.py.

import os
import runpy

_FAMILY = runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_family.py"))
INCLUDES, RECIPE = _FAMILY["FILES"], _FAMILY["member_recipe"]("metric-indoor-base")
