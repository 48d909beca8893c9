"""Depth Anything V2 checkpoints as its official repository writes them: plain PyTorch state dicts
(``depth_anything_v2_vits.pth``, ``depth_anything_v2_metric_hypersim_vits.pth``, ...) of its own modules, and the
metric fine-tuning script's ``{"model": state_dict, "optimizer": ..., "epoch": ..., "previous_best": ...}`` (keys
``module.``-prefixed under DistributedDataParallel); also ``.safetensors`` files holding the same keys.

The official model is a DINOv2 ViT (``pretrained.``: fused ``attn.qkv``, LayerScale ``ls1.gamma``) and a DPT head
(``depth_head.``: ``projects``, ``resize_layers``, ``scratch.layerN_rn``, ``scratch.refinenetN``, ``output_conv1/2``);
transformers' ``DepthAnythingForDepthEstimation`` holds the same tensors under its own names, the qkv weight split
into q/k/v and the refinenets in reverse order (:func:`to_transformers`, :func:`to_official`; what transformers' own
``convert_depth_anything_to_hf.py`` does, written here for the installed transformers' module names).  No tensor is
dropped or added either way (``mask_token`` is in both).

Which head a file has cannot be read from its weights: the relative (ReLU) and metric (sigmoid x max_depth) heads have
the same tensors.  The official file names say it (:func:`head_of`); any other file needs ``max_depth``.  Files are
read with ``torch.load(weights_only=True)``: tensors and plain containers, never code.
"""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING

from ...errors import EdgedepthError
from ...fsutil import open_input, regular_file
from ..base import checked_max_depth
from .members import MEMBERS, SYNTHETIC, Arch

if TYPE_CHECKING:
    from torch import nn

# Every architecture a file may have: the members' and the stand-ins' (a file saved from synthetic-tiny loads back)
ARCHS: tuple[Arch, ...] = tuple(dict.fromkeys([m.arch for m in MEMBERS.values()] + [a for _, a in SYNTHETIC.values()]))
QKV = ("q_proj", "k_proj", "v_proj")      # transformers' split of the fused attn.qkv, in its order
DDP_PREFIX = "module."
# The official names of the released files: head -> how the name says it (relative: no "metric" in it)
RELATIVE_NAME = re.compile(r"depth_anything_v2_vit[sblg]")
METRIC_NAMES = {"metric_hypersim": 20, "metric_vkitti": 80}      # Hypersim indoor 20 m, Virtual KITTI 2 outdoor 80 m


def _names(layers: int) -> dict[str, str | tuple[str, str, str]]:
    """Official name -> transformers name (a (q, k, v) triple for a fused qkv) of every tensor of a model with
    ``layers`` blocks, in the official model's order."""
    out: dict = {"pretrained.cls_token": "backbone.embeddings.cls_token",
                 "pretrained.pos_embed": "backbone.embeddings.position_embeddings",
                 "pretrained.mask_token": "backbone.embeddings.mask_token"}

    def layer(official: str, hf: str, params=("weight", "bias")) -> None:
        out.update({f"{official}.{p}": f"{hf}.{p}" for p in params})

    layer("pretrained.patch_embed.proj", "backbone.embeddings.patch_embeddings.projection")
    for n in range(layers):
        o, h = f"pretrained.blocks.{n}.", f"backbone.encoder.layer.{n}."
        layer(o + "norm1", h + "norm1")
        out.update({f"{o}attn.qkv.{p}": tuple(f"{h}attention.{x}.{p}" for x in QKV) for p in ("weight", "bias")})
        layer(o + "attn.proj", h + "attention.o_proj")
        out[o + "ls1.gamma"] = h + "layer_scale1.lambda1"
        layer(o + "norm2", h + "norm2")
        layer(o + "mlp.fc1", h + "mlp.fc1")
        layer(o + "mlp.fc2", h + "mlp.fc2")
        out[o + "ls2.gamma"] = h + "layer_scale2.lambda1"
    layer("pretrained.norm", "backbone.layernorm")
    for i in range(4):
        layer(f"depth_head.projects.{i}", f"neck.reassemble_stage.layers.{i}.projection")
    for i in (0, 1, 3):         # stage 2's factor is 1: an identity, no weights
        layer(f"depth_head.resize_layers.{i}", f"neck.reassemble_stage.layers.{i}.resize")
    for i in range(4):
        layer(f"depth_head.scratch.layer{i + 1}_rn", f"neck.convs.{i}", ("weight",))      # no bias
    for r in range(1, 5):       # refinenet4 fuses the deepest stage first: transformers' fusion layer 0
        o, h = f"depth_head.scratch.refinenet{r}.", f"neck.fusion_stage.layers.{4 - r}."
        layer(o + "out_conv", h + "projection")
        for u in (1, 2):
            for c in (1, 2):
                layer(f"{o}resConfUnit{u}.conv{c}", f"{h}residual_layer{u}.convolution{c}")
    layer("depth_head.scratch.output_conv1", "head.conv1")
    layer("depth_head.scratch.output_conv2.0", "head.conv2")      # .1 a ReLU, .3 the head's last activation
    layer("depth_head.scratch.output_conv2.2", "head.conv3")
    return out


def _layers(state: dict, prefix: str) -> int:
    """How many blocks the keys ``PREFIX<n>.`` number (the highest n + 1; 0 for none)."""
    found = {int(m.group(1)) for k in state if (m := re.match(re.escape(prefix) + r"(\d+)\.", k))}
    return max(found) + 1 if found else 0


def _key(k) -> str:
    """A key as it shows in a one-line message (a file's keys are arbitrary strings)."""
    return repr(k[:200] + ("..." if len(k) > 200 else ""))


def to_official(model_or_state) -> dict:
    """The official state dict (names and the fused qkv of the official repository) of a transformers
    ``DepthAnythingForDepthEstimation`` or its state dict: every tensor, the same values (qkv concatenated)."""
    import torch

    state = model_or_state.state_dict() if hasattr(model_or_state, "state_dict") else dict(model_or_state)
    names = _names(_layers(state, "backbone.encoder.layer."))
    used = [h for v in names.values() for h in (v if isinstance(v, tuple) else (v,))]
    known = set(used)
    missing = next((h for h in used if h not in state), None)
    extra = next((k for k in state if k not in known), None)
    if missing or extra:
        raise EdgedepthError("not a transformers Depth Anything V2 state dict: " +
                             (f"no {_key(missing)}" if missing else f"{_key(extra)} is not one of its tensors"))
    return {o: torch.cat([state[x].detach() for x in h]) if isinstance(h, tuple) else state[h].detach()
            for o, h in names.items()}


@functools.cache
def expected_shapes(arch: Arch) -> dict[str, tuple[int, ...]]:
    """Official name -> shape of every tensor of ``arch`` (transformers' model built on the meta device: no memory)."""
    import torch
    from transformers import DepthAnythingForDepthEstimation

    from .synthetic import model_config

    with torch.device("meta"):
        model = DepthAnythingForDepthEstimation(model_config(arch))
    return {k: tuple(v.shape) for k, v in to_official(model).items()}


def _mismatch(state: dict, expected: dict) -> str | None:
    """The first difference of ``state`` from ``expected`` (its order, then the file's): a missing key, a shape."""
    for k, shape in expected.items():
        if k not in state:
            return f"missing key {_key(k)}"
        if tuple(state[k].shape) != shape:
            return f"{_key(k)}: shape {tuple(state[k].shape)}, expected {shape}"
    extra = next((k for k in state if k not in expected), None)
    return f"extra key {_key(extra)}" if extra is not None else None


def _arch_name(a: Arch) -> str:
    name = next((m.name for m in MEMBERS.values() if m.arch == a), None) or \
        next(n for n, (_, x) in SYNTHETIC.items() if x == a)
    return f"{name}'s, hidden size {a.hidden_size}, {a.num_hidden_layers} blocks"


def arch_of(state: dict, where: str = "state dict") -> Arch:
    """The architecture (:data:`ARCHS`) whose official state dict ``state`` is, every key and shape; else one
    EdgedepthError line naming the first difference from the closest one."""
    for a in ARCHS:
        if _mismatch(state, expected_shapes(a)) is None:
            return a

    def fit(a: Arch) -> int:
        return sum(1 for k, s in expected_shapes(a).items() if k in state and tuple(state[k].shape) == s)

    closest = max(ARCHS, key=fit)       # the first of the best
    raise EdgedepthError(f"{where} is not a Depth Anything V2 state dict of an architecture edgedepth knows "
                         f"(closest: {_arch_name(closest)}): {_mismatch(state, expected_shapes(closest))}",
                         option="model")


def official_state(obj, where: str = "state dict") -> dict:
    """The official state dict in ``obj``: ``obj`` itself, or the training script's ``obj["model"]``; a ``module.``
    prefix on every key (DistributedDataParallel) is removed.  Anything but tensors under string keys is one line."""
    import torch

    if isinstance(obj, dict) and isinstance(obj.get("model"), dict):
        obj = obj["model"]
    if not isinstance(obj, dict) or not obj:
        raise EdgedepthError(f"{where} holds {'an empty dict' if isinstance(obj, dict) else type(obj).__name__}, "
                             "not a state dict (or a training checkpoint {'model': state_dict, ...})", option="model")
    bad = next((k for k in obj if not isinstance(k, str)), None)
    if bad is not None:
        raise EdgedepthError(f"{where}: key {bad!r} is a {type(bad).__name__}, not a tensor's name", option="model")
    bad = next((k for k, v in obj.items() if not isinstance(v, torch.Tensor)), None)
    if bad is not None:
        raise EdgedepthError(f"{where}: {_key(bad)} holds a {type(obj[bad]).__name__}, not a tensor", option="model")
    if all(k.startswith(DDP_PREFIX) for k in obj):
        obj = {k[len(DDP_PREFIX):]: v for k, v in obj.items()}
    return obj


def to_transformers(state: dict, arch: Arch | None = None, *, where: str = "state dict") -> dict:
    """transformers' state dict of an official one (or of a training checkpoint holding one: :func:`official_state`):
    the same tensors renamed, the fused qkv split (copies).  ``arch``: already checked (:func:`arch_of`), else it is
    checked here; a state dict of no known architecture is one EdgedepthError line naming its first difference."""
    state = official_state(state, where)
    arch = arch or arch_of(state, where)
    out = {}
    for o, h in _names(arch.num_hidden_layers).items():
        if isinstance(h, tuple):
            out.update({name: part.clone() for name, part in zip(h, state[o].chunk(3))})
        else:
            out[h] = state[o]
    return out


def head_of(path: str, max_depth=None) -> int | float | None:
    """The metric head's max_depth in metres, or None for a relative head: ``max_depth`` (metres, or "relative")
    when given, else what an official file name says (``depth_anything_v2_vits.pth`` relative,
    ``..._metric_hypersim_...`` 20 m, ``..._metric_vkitti_...`` 80 m); any other name is one EdgedepthError line."""
    if max_depth is not None:
        value = checked_max_depth(max_depth)
        return None if value == "relative" else value
    name = os.path.basename(path)
    metric = [m for key, m in METRIC_NAMES.items() if key in name]
    if len(metric) == 1:
        return metric[0]
    if not metric and RELATIVE_NAME.match(name) and "metric" not in name:
        return None
    raise EdgedepthError(
        f"checkpoint file {path!r}: its head cannot be told from its weights (relative and metric heads have the same "
        "tensors) nor from its name (official: depth_anything_v2_vits.pth, depth_anything_v2_metric_hypersim_vits.pth"
        ", depth_anything_v2_metric_vkitti_vitl.pth); pass --max-depth METRES for a metric head or --max-depth "
        "relative (in Python: max_depth=METRES or \"relative\")", option="max_depth")


def _why(e: Exception) -> str:
    """An exception in a few words: its type and first sentence."""
    text = " ".join(str(e).split()).split(". ")[0][:200]
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def read_file(path: str) -> tuple[object, str]:
    """What a checkpoint file holds, and its format: "safetensors" (told by its header) or "pth" (``torch.load``,
    weights only: tensors and plain containers; a file that needs any other class is refused, never run)."""
    path = regular_file(path, "checkpoint file")
    with open_input(path, "checkpoint file") as f:
        head = f.read(9)
    where = f"checkpoint file {path!r}"
    if not head:
        raise EdgedepthError(f"{where} is empty", option="model")
    if len(head) == 9 and head[8:] == b"{":        # safetensors: an 8-byte header length, then the JSON header
        import safetensors.torch

        try:
            return safetensors.torch.load_file(path), "safetensors"
        except Exception as e:  # noqa: BLE001  (SafetensorError: truncated or garbled; OSError)
            raise EdgedepthError(f"{where} is not a readable safetensors file ({_why(e)})", option="model") from None
    import pickle
    import warnings

    import torch

    try:
        with warnings.catch_warnings():     # "Detected pickle protocol 4": plain pickles load all the same
            warnings.simplefilter("ignore")
            return torch.load(path, map_location="cpu", weights_only=True), "pth"
    except pickle.UnpicklingError as e:     # weights_only refused a class: the file wants code run
        what = re.search(r"GLOBAL ([\w.]+)", str(e))
        raise EdgedepthError(f"{where} needs Python objects other than tensors to load"
                             f"{' (' + what.group(1) + ')' if what else ''}: refused (checkpoint files are loaded as "
                             "weights only; no code in one is run)", option="model") from None
    except Exception as e:  # noqa: BLE001  (a truncated zip, not a PyTorch file at all, OSError)
        raise EdgedepthError(f"{where} is not a readable PyTorch checkpoint ({_why(e)})", option="model") from None


def _is_official(obj) -> bool:
    """Whether ``obj`` looks like an official state dict (or a training checkpoint of one): its keys are the
    official model's (``pretrained.`` / ``depth_head.``, perhaps ``module.``-prefixed)."""
    if isinstance(obj, dict) and isinstance(obj.get("model"), dict):
        obj = obj["model"]
    return isinstance(obj, dict) and any(
        isinstance(k, str) and k.removeprefix(DDP_PREFIX).startswith(("pretrained.", "depth_head.")) for k in obj)


def load(path: str, max_depth=None) -> tuple[nn.Module, str] | None:
    """``(eval-mode DepthAnythingForDepthEstimation, format)`` of an official checkpoint file (:func:`read_file`),
    strictly loaded (every tensor, every shape); None for a file of other keys (not this family's).  ``max_depth``:
    the head (:func:`head_of`).  Every problem is one EdgedepthError line."""
    import torch
    from transformers import DepthAnythingForDepthEstimation

    from .synthetic import model_config

    obj, fmt = read_file(path)
    if not _is_official(obj):
        return None
    where = f"checkpoint file {path!r}"
    state = official_state(obj, where)
    arch = arch_of(state, where)
    metres = head_of(path, max_depth)
    bad = next((k for k, v in state.items() if not v.is_floating_point()), None)
    if bad is not None:
        raise EdgedepthError(f"{where}: {_key(bad)} holds {state[bad].dtype} values, not weights", option="model")
    with torch.device("meta"):      # no initialisation: every tensor is loaded below (the model has no buffers)
        model = DepthAnythingForDepthEstimation(model_config(arch, metres))
    model = model.to_empty(device="cpu")
    model.load_state_dict(to_transformers(state, arch, where=where), strict=True)
    return model.eval(), fmt
