"""What the BENCHMARKS.md generators share: the results folder and its JSON loader."""

from __future__ import annotations

import json
import os

R = "benchmarks/results"


def load(name: str):
    """benchmarks/results/NAME as a dict, or None when it was not measured."""
    p = os.path.join(R, name)
    return json.load(open(p)) if os.path.isfile(p) else None
