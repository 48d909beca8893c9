"""The files that make a release folder a transformers / transformers.js model folder: ``config.json``,
``preprocessor_config.json`` and the ``onnx/`` names (onnx-community's layout).

transformers.js (``pipeline('depth-estimation', folder, {dtype})``) reads ``config.json`` for the model class
(``model_type: depth_anything``), ``preprocessor_config.json`` for its image processor and picks
``onnx/model.onnx`` (fp32), ``onnx/model_fp16.onnx`` (fp16) or ``onnx/model_quantized.onnx`` (q8) by ``dtype``.
The preprocessor is upstream's (Depth-Anything-V2-*-hf): keep the aspect ratio, 518 px, sides rounded to multiples
of 14; it needs the ONNX files' dynamic height and width.  Both JSON files are written with sorted keys, so they are the
same bytes on every machine.
"""

from __future__ import annotations

import json

from ...preprocess import MEAN, PATCH, STD

CONFIG = "config.json"
PREPROCESSOR_CONFIG = "preprocessor_config.json"
# A release's ONNX files in onnx-community's layout (what transformers.js and the Hub's tooling look for), and the
# transformers.js dtype that picks each.
ONNX_LAYOUT = {"fp32": "onnx/model.onnx", "fp16": "onnx/model_fp16.onnx", "int8": "onnx/model_quantized.onnx"}
TRANSFORMERS_JS_DTYPE = {"fp32": "fp32", "fp16": "fp16", "int8": "q8"}
ARCHITECTURE = "DepthAnythingForDepthEstimation"
UPSTREAM_SIDE = 518     # the checkpoints' processor: size 518x518 with keep_aspect_ratio and ensure_multiple_of 14


def _dumps(d: dict) -> str:
    return json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def config_json(model, name: str | None = None) -> str:
    """The checkpoint's own transformers config (``model.config``), with its architecture named (synthetic configs
    have none; the Hub and transformers' Auto classes read it); ``name``: the user's own model's release name, as
    ``_name_or_path`` (None: upstream's files, which name none)."""
    d = model.config.to_dict()
    d["architectures"] = [ARCHITECTURE]
    d.pop("_name_or_path", None)        # a local path or hub id of the loading machine: not the file's business
    if name:
        d["_name_or_path"] = name
    return _dumps(d)


def preprocessor_config_json() -> str:
    """Upstream's DPTImageProcessor settings for Depth Anything V2 (what ``edgedepth.preprocess`` implements at a fixed
    size): bicubic (PIL resample 3), /255, ImageNet mean/std, 518 px keeping the aspect ratio, multiples of 14."""
    return _dumps({
        "do_normalize": True, "do_pad": False, "do_rescale": True, "do_resize": True,
        "ensure_multiple_of": PATCH, "image_mean": list(MEAN), "image_processor_type": "DPTImageProcessor",
        "image_std": list(STD), "keep_aspect_ratio": True, "resample": 3, "rescale_factor": 1 / 255,
        "size": {"height": UPSTREAM_SIDE, "width": UPSTREAM_SIDE}, "size_divisor": None,
    })
