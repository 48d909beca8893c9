"""What the BENCHMARKS.md generators share: the results folder and its JSON loader."""

from __future__ import annotations

import json
import os

R = "benchmarks/results"


def load(name: str):
    """benchmarks/results/NAME as a dict, or None when it was not measured."""
    p = os.path.join(R, name)
    return json.load(open(p)) if os.path.isfile(p) else None


def webgpu_file_row(run: dict) -> dict:
    """The release's WebGPU file (``*_fp16_u8in.tflite``) among a ``gpu_floor.py`` run's files (by ``stands_for``)."""
    return next(f for f in run["files"].values()
                if (f.get("stands_for") or {}).get("file", "").endswith("_fp16_u8in.tflite"))
