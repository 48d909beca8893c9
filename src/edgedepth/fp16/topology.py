"""The one stage topology of Depth Anything V2 for FP16 work: scale groups (sets of activations that must share one
scale factor), every neck/head activation in forward order, and how to fold per-group factors into weights and biases
without adding an op.  Used by the probe (``edgedepth.fp16.probe``: which group each measured activation belongs to),
the ``fp16_safe`` rewrite (power-of-two factors: exact) and ``edgedepth.fp16.stress`` (arbitrary positive factors: same
function to float rounding, different internal magnitudes).

Why a factor can be moved around exactly:

- DINOv2's residual stream is written only by linear maps (patch conv, CLS/position constants, LayerScale'd ``o_proj``
  and ``fc2``) and read only by LayerNorms, and LN(c*x; eps*c^2) == LN(x; eps) for c > 0.  So the whole stream can carry
  a factor c: every writer's output is multiplied by c, every LayerNorm's eps by c^2.  Nothing else changes.
- The DPT neck and head are affine convolutions, ReLUs, bilinear resizes and additions.  ReLU(c*x) == c*ReLU(x) for
  c > 0 and the resizes are linear, so each activation can carry its own factor provided that the two inputs of every
  addition carry the same one.  A conv whose input carries a and whose output should carry b gets W*b/a and bias*b.

Groups (names used in plans and reports):

  stream                 the backbone residual stream (embeddings, every layer's residual, attention/MLP branch outputs)
  reassemble{j}          reassemble projection j output (j = 0..3; factor-1 stage: its resize is Identity, same group)
  resize{j}              reassemble resize j output (ConvTranspose2d / strided Conv2d), where it is not Identity
  fusion{k}              fusion layer k's stream: neck conv 3-k output, the fused input from layer k-1, both residual
                         units' outputs (k = 0..3)
  fusion{k}.rcu{r}       inside residual unit r of fusion layer k: convolution1 output (r = 1 only for k >= 1)
  head.in                fusion layer 3's projection output (the head's input)
  head.conv1, head.conv2 the head's first two convolutions' outputs
  output                 head.conv3 output (and the depth map after the final ReLU)
"""

from __future__ import annotations

import math

import torch
from torch import nn

from ..checkpoint import encoder_layers
from ..models import DEPTH_ANYTHING_V2

FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose DINOv2 + DPT structure the scale groups below follow

FIXED = "backbone.out"   # the backbone's LayerNorm'd features: scale-free by construction (input of the neck)


def neck_parts(model: nn.Module) -> dict:
    """The neck/head modules, whichever reassemble implementation is in place."""
    stage = model.neck.reassemble_stage
    # Structural, not by class (this package does not import edgedepth.rewrites): the token_reassemble rewrite's
    # TokenReassemble keeps its projections and resizes in ModuleLists ``proj`` / ``resize``; transformers'
    # DepthAnythingReassembleStage has ``layers``, each with ``.projection`` and ``.resize``.
    if hasattr(stage, "proj"):
        projs, resizes = list(stage.proj), list(stage.resize)
    else:
        projs, resizes = [l.projection for l in stage.layers], [l.resize for l in stage.layers]
    return {"projs": projs, "resizes": resizes, "convs": list(model.neck.convs),
            "fusion": list(model.neck.fusion_stage.layers), "head": model.head}


def _is_identity(m: nn.Module) -> bool:
    return isinstance(m, nn.Identity)


def neck_points(model: nn.Module) -> list[tuple[str, nn.Module, str | None, str]]:
    """Every neck/head activation in forward order: (label, module, input group, output group).

    The module's output is the activation.  Input group None: the output of a composite module (a residual unit, the
    head) whose factor follows from its parts -- a measuring point, not a conv/linear to fold factors into; every
    other entry is an edge (see ``neck_edges``).
    """
    p = neck_parts(model)
    n = len(p["projs"])
    pts: list[tuple[str, nn.Module, str | None, str]] = []
    for j in range(n):
        pts.append((f"neck.reassemble{j}.projection", p["projs"][j], FIXED, f"reassemble{j}"))
        if not _is_identity(p["resizes"][j]):
            pts.append((f"neck.reassemble{j}.resize", p["resizes"][j], f"reassemble{j}", f"resize{j}"))
    for j in range(n):
        src = f"reassemble{j}" if _is_identity(p["resizes"][j]) else f"resize{j}"
        pts.append((f"neck.conv{j}", p["convs"][j], src, f"fusion{n - 1 - j}"))
    for k, layer in enumerate(p["fusion"]):
        units = [(1, layer.residual_layer1), (2, layer.residual_layer2)] if k > 0 else [(2, layer.residual_layer2)]
        for r, unit in units:
            pts.append((f"neck.fusion{k}.rcu{r}.conv1", unit.convolution1, f"fusion{k}", f"fusion{k}.rcu{r}"))
            pts.append((f"neck.fusion{k}.rcu{r}.conv2", unit.convolution2, f"fusion{k}.rcu{r}", f"fusion{k}"))
            pts.append((f"neck.fusion{k}.rcu{r}.out", unit, None, f"fusion{k}"))
        out = f"fusion{k + 1}" if k + 1 < len(p["fusion"]) else "head.in"
        pts.append((f"neck.fusion{k}.projection", layer.projection, f"fusion{k}", out))
    h = p["head"]
    pts += [("head.conv1", h.conv1, "head.in", "head.conv1"), ("head.conv2", h.conv2, "head.conv1", "head.conv2"),
            ("head.conv3", h.conv3, "head.conv2", "output"), ("output", h, None, "output")]
    return pts


def neck_edges(model: nn.Module) -> list[tuple[str, nn.Module, str, str]]:
    """(label, module with .weight/.bias, input group, output group) for every conv/linear of the neck and head."""
    return [(label, mod, a, b) for label, mod, a, b in neck_points(model) if a is not None]


def neck_groups(model: nn.Module) -> list[str]:
    seen = []
    for _, _, a, b in neck_edges(model):
        for g in (a, b):
            if g != FIXED and g not in seen:
                seen.append(g)
    return seen


def stream_writers(model: nn.Module) -> list[tuple[nn.Module, str]]:
    """(module, attribute) pairs whose values are multiplied by the stream factor."""
    emb = model.backbone.embeddings
    out = [(emb.patch_embeddings.projection, "weight"), (emb.patch_embeddings.projection, "bias")]
    if hasattr(emb, "cls_pos"):                                   # FrozenEmbeddings
        out += [(emb, "cls_pos"), (emb, "patch_pos")]
    else:                                                         # transformers' Dinov2Embeddings
        out += [(emb, "cls_token"), (emb, "position_embeddings")]
        if getattr(emb, "mask_token", None) is not None:
            out.append((emb, "mask_token"))
    for layer in encoder_layers(model):
        for ls_name, lin in (("layer_scale1", layer.attention.o_proj), ("layer_scale2", layer.mlp.fc2)):
            ls = getattr(layer, ls_name)
            if hasattr(ls, "lambda1"):
                out.append((ls, "lambda1"))
            else:
                out.append((lin, "weight"))
                if lin.bias is not None:
                    out.append((lin, "bias"))
    return out


def stream_readers(model: nn.Module) -> list[nn.Module]:
    """The LayerNorms that read the stream (their eps is multiplied by factor^2)."""
    bb = model.backbone
    norms = [n for l in encoder_layers(model) for n in (l.norm1, l.norm2)]
    if getattr(bb, "apply_layernorm", getattr(getattr(bb, "config", None), "apply_layernorm", True)):
        norms.append(bb.layernorm)
    return norms


def is_power_of_two(x: float) -> bool:
    if not (x > 0 and math.isfinite(x)):
        return False
    m, _ = math.frexp(x)
    return m == 0.5


@torch.no_grad()
def _mul(t: torch.Tensor, f: float) -> None:
    if is_power_of_two(f):
        t.mul_(f)                                                 # exact in binary floating point
    else:
        t.copy_((t.double() * f).to(t.dtype))                     # one rounding


@torch.no_grad()
def scale_stream(model: nn.Module, factor: float) -> int:
    """Multiply the backbone residual stream by ``factor`` (in place on ``model``); returns tensors changed."""
    if factor == 1.0:
        return 0
    changed = 0
    for mod, attr in stream_writers(model):
        _mul(getattr(mod, attr), factor)
        changed += 1
    for norm in stream_readers(model):
        norm.eps = float(norm.eps) * factor * factor               # exact for a power of two (no subnormals here)
        changed += 1
    return changed


@torch.no_grad()
def scale_neck(model: nn.Module, factors: dict[str, float]) -> int:
    """Give each neck/head group its factor (missing groups: 1) by folding into weights/biases, in place."""
    unknown = set(factors) - set(neck_groups(model))
    if unknown:
        raise ValueError(f"unknown neck/head scale group(s) {sorted(unknown)}; known: {neck_groups(model)}")
    changed = 0
    for _, mod, a, b in neck_edges(model):
        fa = 1.0 if a == FIXED else float(factors.get(a, 1.0))
        fb = float(factors.get(b, 1.0))
        if fb / fa != 1.0:
            _mul(mod.weight, fb / fa)
            changed += 1
        if mod.bias is not None and fb != 1.0:
            _mul(mod.bias, fb)
            changed += 1
    return changed
