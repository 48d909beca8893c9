"""LiteRT target: module -> ``.tflite`` (litert-torch), FP32 -> dynamic INT8 (ai-edge-quantizer ``dynamic_wi8_afp32``).

Signature of every file: ``serving_default(args_0: float32[1,3,H,W]) -> output_0: float32[1,H,W]``.
Files are written via temp + rename; a failed export leaves no partial file.
"""

from __future__ import annotations

import os

import numpy as np

from ..fsutil import atomic_path
from ..progress import quiet_output as _quiet

PRECISIONS = ("fp32", "int8")


def file_name(height: int, width: int, precision: str, plain: bool = False) -> str:
    return f"depth_anything_v2_small_{height}x{width}_{precision}{'_plain' if plain else ''}.tflite"


def convert_fp32(module, height: int, width: int, path: str, *, verbose: bool = False) -> None:
    """Trace ``module`` at [1,3,H,W] and write the FP32 .tflite atomically."""
    import litert_torch
    import torch

    sample = torch.from_numpy(np.random.default_rng(0).standard_normal((1, 3, height, width), dtype=np.float32))
    with _quiet(not verbose), torch.no_grad():
        edge = litert_torch.convert(module.eval(), (sample,))
        with atomic_path(path) as tmp:
            edge.export(tmp)


def quantize_int8(fp32_path: str, path: str, *, verbose: bool = False) -> None:
    """Dynamic-range INT8 (int8 weights, float activations) from an FP32 .tflite, written atomically."""
    from ai_edge_quantizer import quantizer, recipe

    with _quiet(not verbose):
        q = quantizer.Quantizer(fp32_path)
        q.load_quantization_recipe(recipe.dynamic_wi8_afp32())
        result = q.quantize()
        with atomic_path(path) as tmp:
            result.export_model(tmp, overwrite=True)


def export(module, height: int, width: int, out_dir: str, precisions=("fp32", "int8"), *, plain: bool = False,
           verbose: bool = False, progress=None) -> dict[str, str]:
    """Export ``module`` to ``out_dir``; returns {precision: path}. INT8 is always made from the FP32 graph.

    ``progress(stage_name)`` is called as each stage starts (the CLI drives a bar with it).
    """
    progress = progress or (lambda stage: None)
    paths = {p: os.path.join(out_dir, file_name(height, width, p, plain)) for p in precisions}
    fp32 = paths.get("fp32") or os.path.join(out_dir, "." + file_name(height, width, "fp32", plain) + ".int8src")
    progress(f"convert FP32 {height}x{width}")
    convert_fp32(module, height, width, fp32, verbose=verbose)
    try:
        if "int8" in paths:
            progress("quantize INT8 (dynamic_wi8_afp32)")
            quantize_int8(fp32, paths["int8"], verbose=verbose)
    finally:
        if "fp32" not in paths and os.path.exists(fp32):
            os.remove(fp32)
    return paths
