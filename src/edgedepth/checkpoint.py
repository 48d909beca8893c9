"""Checkpoint loading: a family member's short name, HF id@revision, a local HF folder, or seeded synthetic weights.

Which family a checkpoint belongs to, and everything that depends on it (members, architecture, synthetic stand-ins,
normalisation), lives in :mod:`edgedepth.models`; this module dispatches to it and holds what every family shares:
the export wrapper :class:`DepthModule` and the state-dict digest.

The default model's contract (Depth Anything V2, :mod:`edgedepth.models.depth_anything_v2`):
  input   ``pixel_values``  float32 [1, 3, H, W], RGB, /255, ImageNet mean/std (see preprocess.py), H and W multiples of 14
  output  ``depth``         float32 [1, H, W], relative inverse depth (larger = closer), >= 0 (ReLU head)

``synthetic`` is the exact Depth-Anything-V2-Small architecture (24,785,089 parameters) with seeded *realistic* weights
(:mod:`edgedepth.models.depth_anything_v2.synthetic`); ``synthetic-tiny`` keeps every structural feature (4 output
stages, reassemble factors 4/2/1/0.5, position-embedding interpolation, DPT head) at tiny widths for fast tests.
"""

from __future__ import annotations

import json
import os
import sys

import torch
from torch import nn

from .errors import EdgedepthError
from .fsutil import open_input, regular_file
from .models import (DEFAULT_HF_ID, DEFAULT_MODEL, DEFAULT_REVISION, MEMBERS, SYNTHETIC, Checkpoint,  # noqa: F401
                     config_hints, encoder_layers, family_of_config, family_of_hub_id, family_of_synthetic, file_hints,
                     load_file)
from .variants import register_variant, split_variant  # noqa: F401  (register_variant: re-exported for callers)

SYNTHETIC_SEED = 0
MAX_CONFIG_BYTES = 16 << 20       # far above any config.json; a bigger one is not read into memory
SYNTHETIC_WARNING = (
    "WARNING: synthetic weights (seeded random, not trained): depth maps from this model are meaningless; "
    "use --model HF_ID@REV or a local HF folder for real depth"
)


def _folder_family(folder: str):
    """The family of a checkpoint folder, from its config.json (``model_type``, or the depth-anything-3 package's
    ``model_name``); another architecture, or an unreadable config, is a one-line error, not a half-initialised
    model."""
    with open_input(os.path.join(folder, "config.json"), "checkpoint file") as f:    # a FIFO: one line, not a hang
        try:
            config = json.loads(f.read(MAX_CONFIG_BYTES + 1).decode("utf-8"))
        except (OSError, ValueError, RecursionError) as e:
            raise EdgedepthError(f"{folder!r}: config.json is unreadable ({type(e).__name__})",
                                 option="model") from None
    if not isinstance(config, dict):
        kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(config), "number")
        raise EdgedepthError(f"{folder!r}: config.json holds a JSON {kind}, not an object "
                             "({\"model_type\": \"depth_anything\", ...})", option="model")
    family = family_of_config(config)
    if family is None:
        raise EdgedepthError(f"{folder!r} holds a {config.get('model_type')!r} checkpoint, not Depth Anything "
                             f"(config.json needs {config_hints()})", option="model")
    return family


def load_checkpoint(spec: str = DEFAULT_MODEL, *, quiet: bool = False, max_depth=None) -> Checkpoint:
    """Load a family member by short name (``metric-indoor-small`` = its hub id, pinned where known), ``HF_ID[@REV]``,
    a local HF folder, a checkpoint file (:func:`edgedepth.models.load_file`: the official Depth Anything V2
    ``.pth``), or a synthetic stand-in (``edgedepth.models.SYNTHETIC``); ``synthetic...<suffix>`` for a registered
    variant suffix (``edgedepth.variants``, e.g. ``-fp16-stress`` from ``edgedepth.fp16``).  ``max_depth``: a
    checkpoint file's head where its name does not say it (metres of a metric head, or "relative")."""
    if max_depth is not None and not _names_a_file(spec):
        raise EdgedepthError(f"max_depth applies to a .pth/.safetensors checkpoint file, not to {spec!r} (a folder's "
                             "config.json has max_depth; a member, hub id or stand-in has its own head)", option="max_depth")
    if spec in MEMBERS and not os.path.isdir(spec):
        m = MEMBERS[spec]
        spec = f"{m.hub_id}@{m.revision}" if m.revision else m.hub_id
    base, variant = split_variant(spec)
    if variant is not None and base in SYNTHETIC:   # only the synthetic names: a hub id or folder may end in anything
        return variant(load_checkpoint(base, quiet=quiet))
    if spec in SYNTHETIC:
        ckpt = family_of_synthetic(spec).load_synthetic(spec, SYNTHETIC_SEED)
        if not quiet:
            print(SYNTHETIC_WARNING, file=sys.stderr)
        return ckpt
    if os.path.isdir(spec):
        if not os.path.lexists(os.path.join(spec, "config.json")):
            raise EdgedepthError(f"{spec!r} is a folder but has no config.json: not a Hugging Face checkpoint folder")
        return _folder_family(spec).load_pretrained(spec, None, "local")
    if os.path.lexists(spec):
        regular_file(spec, "model")     # a FIFO, device or /proc file: says what it is
        ckpt = load_file(spec, max_depth)
        if ckpt is None:
            raise EdgedepthError(f"model {spec!r}: expected a checkpoint (HF_ID[@REV], a folder, synthetic, or "
                                 f"{file_hints()}), not this file", option="model")
        return ckpt
    hf_id, _, rev = spec.partition("@")
    if hf_id.count("/") != 1:
        raise EdgedepthError(
            f"model {spec!r}: not a folder, not a synthetic name ({', '.join(SYNTHETIC)}), and not a hub id of the form "
            "OWNER/NAME[@REV]", option="model")
    return family_of_hub_id(hf_id).load_pretrained(hf_id, rev or None, "hf")


def _names_a_file(spec: str) -> bool:
    """Whether :func:`load_checkpoint` reads ``spec`` as a checkpoint file (not a member, stand-in or folder)."""
    if (spec in MEMBERS and not os.path.isdir(spec)) or spec in SYNTHETIC or split_variant(spec)[0] in SYNTHETIC:
        return False
    return os.path.lexists(spec) and not os.path.isdir(spec)


def state_dict_digest(model: nn.Module) -> str:
    """SHA-256 over the state dict (names, dtypes, shapes, raw bytes, in name order): the checkpoint's identity."""
    import hashlib

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().contiguous().cpu()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.view(torch.int16).numpy().tobytes())
    return h.hexdigest()


# The model output's attribute of each exported output (ModelFamily.outputs): depth is every family's predicted_depth
OUTPUT_ATTRS = {"depth": "predicted_depth", "confidence": "confidence", "sky": "sky"}


class DepthModule(nn.Module):
    """pixel_values [1,3,H,W] -> depth [1,H,W] (a transformers depth-estimation model's ``predicted_depth``); the
    traced/exported signature of every target.  Its qualified name is part of every exported file's tensor names.

    ``outputs``: what it returns (``ModelFamily.outputs``, "depth" first): ``("depth",)`` (the default, and every V2
    file) returns the depth tensor alone, exactly as ever; more names return a tuple of [1,H,W] maps in that order
    (Depth Anything 3's files: depth, confidence; ``rewrites.prepare`` passes the family's)."""

    def __init__(self, model: nn.Module, outputs: tuple[str, ...] = ("depth",)):
        super().__init__()
        outputs = tuple(outputs)
        unknown = [o for o in outputs if o not in OUTPUT_ATTRS]
        if not outputs or outputs[0] != "depth" or unknown:
            raise ValueError(f"DepthModule outputs {outputs}: 'depth' first, then any of {list(OUTPUT_ATTRS)[1:]}")
        self.model = model
        self.outputs = outputs

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        if self.outputs == ("depth",):      # V2's trace, unchanged: its files stay byte-identical
            return self.model(pixel_values=pixel_values).predicted_depth
        out = self.model(pixel_values=pixel_values)
        return tuple(getattr(out, OUTPUT_ATTRS[name]) for name in self.outputs)
