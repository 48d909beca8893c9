"""Checkpoint loading: HF id@revision, a local HF folder, or seeded synthetic weights.

The model contract (written once, here):
  input   ``pixel_values``  float32 [1, 3, H, W], RGB, /255, ImageNet mean/std (see preprocess.py), H and W multiples of 14
  output  ``depth``         float32 [1, H, W], relative inverse depth (larger = closer), >= 0 (ReLU head)

``synthetic`` is the exact Depth-Anything-V2-Small architecture (24,785,089 parameters) with seeded *realistic* weights:
non-zero biases, LayerScale values away from 1, LayerNorm scales away from 1.  HF's own init (zero biases, unit scales)
lets the converter constant-fold patterns that real weights produce (716 vs 748 ops), so it would hide exactly the op
patterns the rewrites target.  ``synthetic-tiny`` keeps every structural feature (4 output stages, reassemble factors
4/2/1/0.5, position-embedding interpolation, DPT head) at tiny widths for fast tests.
"""

from __future__ import annotations

import dataclasses
import os
import sys

import numpy as np
import torch
from torch import nn

from .errors import EdgedepthError
from .family import MEMBERS, SYNTHETIC, UNKNOWN_STEM, Member, member_of_config, member_of_hub_id
from .fsutil import sha256_file
from .variants import register_variant, split_variant  # noqa: F401  (register_variant: re-exported for callers)

DEFAULT_HF_ID = "depth-anything/Depth-Anything-V2-Small-hf"
DEFAULT_REVISION = "5426e4f0f36572d16453bbda7a8389317b1bef99"
DEFAULT_MODEL = f"{DEFAULT_HF_ID}@{DEFAULT_REVISION}"
SYNTHETIC_SEED = 0
SYNTHETIC_WARNING = (
    "WARNING: synthetic weights (seeded random, not trained): depth maps from this model are meaningless; "
    "use --model HF_ID@REV or a local HF folder for real depth"
)

# Synthetic names -> (family member, architecture): edgedepth.family (Small @ 5426e4f0 and its relatives).
_ARCH = SYNTHETIC


@dataclasses.dataclass
class Checkpoint:
    """A loaded checkpoint: the eval-mode HF model plus where it came from (for provenance)."""

    model: nn.Module
    source: str                 # "hf", "local", "synthetic"
    name: str                   # what the user passed, normalised
    revision: str | None = None
    seed: int | None = None
    weight_files: dict[str, str] = dataclasses.field(default_factory=dict)  # file name -> sha256

    @property
    def is_synthetic(self) -> bool:
        return self.source == "synthetic"

    @property
    def member(self) -> Member | None:
        """The Depth Anything V2 family member this is (or stands in for); None for an unknown architecture."""
        if self.source == "synthetic":
            return MEMBERS[SYNTHETIC[self.name][0]]
        return (member_of_hub_id(self.name) if self.source == "hf" else None) or member_of_config(self.model.config)

    @property
    def file_stem(self) -> str:
        """What exported files are named after: the member (``depth_anything_v2_metric_indoor_small``)."""
        return self.member.file_stem if self.member else UNKNOWN_STEM

    @property
    def is_metric(self) -> bool:
        return getattr(self.model.config, "depth_estimation_type", "relative") == "metric"

    def provenance(self) -> dict:
        d = {"source": self.source, "name": self.name}
        if self.revision:
            d["revision"] = self.revision
        if self.seed is not None:
            d["seed"] = self.seed
        if self.weight_files:
            d["weight_files"] = dict(sorted(self.weight_files.items()))
        return d


def synthetic_config(kind: str = "synthetic"):
    """DepthAnythingConfig of a synthetic name: its family member's architecture and head (edgedepth.family)."""
    from transformers import DepthAnythingConfig, Dinov2Config

    member_name, a = _ARCH[kind]
    member = MEMBERS[member_name]
    backbone = Dinov2Config(
        hidden_size=a.hidden_size, num_hidden_layers=a.num_hidden_layers, num_attention_heads=a.num_attention_heads,
        mlp_ratio=4, patch_size=14, image_size=518, out_features=[f"stage{i}" for i in a.out_indices],
        reshape_hidden_states=False, apply_layernorm=True, layerscale_value=1.0,
    )
    metric = dict(depth_estimation_type="metric", max_depth=member.max_depth) if member.is_metric else \
        dict(depth_estimation_type="relative")
    return DepthAnythingConfig(
        backbone_config=backbone, fusion_hidden_size=a.fusion_hidden_size, neck_hidden_sizes=list(a.neck_hidden_sizes),
        reassemble_factors=[4, 2, 1, 0.5], reassemble_hidden_size=a.hidden_size,
        head_hidden_size=a.head_hidden_size, **metric,
    )


def _normal_like(rng, shape, std: float, mean: float = 0.0) -> torch.Tensor:
    """Seeded approximately-normal float32 values that are the same bytes on every CPU.

    Irwin-Hall: the sum of 12 uniforms minus 6 (mean 0, std 1, bounded by +-6).  numpy's uniform doubles are exact
    conversions of the generator's integers and the sum runs in a fixed order of elementwise IEEE adds, then one
    rounding to float32 -- unlike ``torch.randn``, whose float32 kernel gives different values under AVX2 and the
    default CPU capability (measured), or any sampler that calls libm.
    """
    n = int(np.prod(shape)) if len(shape) else 1
    u = rng.random((12, n))
    z = u[0]
    for k in range(1, 12):
        z = z + u[k]
    return torch.from_numpy(((z - 6.0) * std + mean).astype(np.float32).reshape(shape))


def _on_grid(v: float, digits: int = 3) -> float:
    """Round to ``digits`` significant decimal digits: a float64 forward pass differs between CPUs by ~1e-15 relative,
    far below this grid, so the rounded value is the same on every machine."""
    return float(f"{v:.{digits - 1}e}")


@torch.no_grad()
def _realistic_init(model: nn.Module, seed: int) -> None:
    """Overwrite every parameter with seeded values shaped like trained ones (nothing zero, nothing exactly one).

    CPU-independent by construction: values from :func:`_normal_like`; the head calibration below runs in float64 on
    bundled photos and keeps only two numbers rounded to a coarse grid, applied with correctly rounded float32 ops.
    """
    rng = np.random.Generator(np.random.PCG64(seed))

    def rnd(shape, std, mean=0.0):
        return _normal_like(rng, tuple(shape), std, mean)

    for name, p in model.named_parameters():
        if "lambda1" in name:                                   # LayerScale: trained DINOv2 values are ~0.01..1
            p.copy_(rnd(p.shape, 0.05, 0.2))
        elif ("norm" in name) and name.endswith("weight"):       # LayerNorm gamma
            p.copy_(rnd(p.shape, 0.1, 1.0))
        elif name.endswith("bias"):
            p.copy_(rnd(p.shape, 0.02))
        elif "position_embeddings" in name or "cls_token" in name or "mask_token" in name:
            p.copy_(rnd(p.shape, 0.02))
        else:                                                   # conv / linear weights: fan-in scaled
            fan_in = p[0].numel() if p.dim() > 1 else p.numel()
            p.copy_(rnd(p.shape, 1.0 / fan_in ** 0.5))
    # Make the relative head produce a varied, mostly positive map on photos, as a trained head does (with random
    # weights the final ReLU would zero much of it): standardise conv3's output over CALIBRATION_PHOTOS bundled photos
    # and shift it so that its 5th percentile sits at +0.25 (measured: 70-100 % positive pixels on other photos).
    head = model.head
    size = (224, 224) if model.config.backbone_config.hidden_size > 64 else (56, 70)
    feats = []
    hook = head.conv3.register_forward_hook(lambda m, i, o: feats.append(o.detach().flatten()))
    model.double()
    try:
        for x in _calibration_photos(size):
            model(pixel_values=torch.from_numpy(x).double())
    finally:
        model.float()
        hook.remove()
    z = torch.cat(feats) - head.conv3.bias.detach().double()
    std = _on_grid(max(float(z.std()), 1e-12))
    q05 = _on_grid(float(torch.quantile(z / std, 0.05)))
    head.conv3.weight.copy_((head.conv3.weight.double() / std).float())       # one IEEE division, one rounding
    if getattr(model.config, "depth_estimation_type", "relative") == "metric":
        # metric head: sigmoid(conv3) x max_depth; centre the logits at -1 (about a quarter of max_depth), unit spread
        q50 = _on_grid(float(torch.quantile(z / std, 0.5)))
        head.conv3.bias.copy_(torch.full_like(head.conv3.bias, -1.0 - q50))
    else:
        head.conv3.bias.copy_(torch.full_like(head.conv3.bias, 0.25 - q05))


CALIBRATION_PHOTOS = 8


def _calibration_photos(size: tuple[int, int]):
    """CALIBRATION_PHOTOS views spread over the bundled default image set, preprocessed at ``size`` (deterministic:
    Pillow's integer resampling and elementwise float32 normalisation)."""
    from .images import image_set
    from .preprocess import preprocess

    items = image_set()
    step = max(1, len(items) // CALIBRATION_PHOTOS)
    return [preprocess(it.load(), size) for it in items[::step][:CALIBRATION_PHOTOS]]


def state_dict_digest(model: nn.Module) -> str:
    """SHA-256 over the state dict (names, dtypes, shapes, raw bytes, in name order): the checkpoint's identity."""
    import hashlib

    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        t = t.detach().contiguous().cpu()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}\n".encode())
        h.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.view(torch.int16).numpy().tobytes())
    return h.hexdigest()


def load_synthetic(kind: str = "synthetic", seed: int = SYNTHETIC_SEED) -> Checkpoint:
    from transformers import DepthAnythingForDepthEstimation

    torch.manual_seed(seed)
    model = DepthAnythingForDepthEstimation(synthetic_config(kind)).eval()
    _realistic_init(model, seed)
    return Checkpoint(model=model, source="synthetic", name=kind, seed=seed)


def _check_model_type(folder: str) -> None:
    """A checkpoint folder of another architecture is a one-line error, not a half-initialised model."""
    import json

    try:
        with open(os.path.join(folder, "config.json"), encoding="utf-8") as f:
            config = json.load(f)
    except (OSError, ValueError) as e:
        raise EdgedepthError(f"{folder!r}: config.json is unreadable ({type(e).__name__})", option="model") from None
    if not isinstance(config, dict):
        kind = {list: "array", str: "string", bool: "boolean", type(None): "null"}.get(type(config), "number")
        raise EdgedepthError(f"{folder!r}: config.json holds a JSON {kind}, not an object "
                             "({\"model_type\": \"depth_anything\", ...})", option="model")
    model_type = config.get("model_type")
    if model_type != "depth_anything":
        raise EdgedepthError(f"{folder!r} holds a {model_type!r} checkpoint, not Depth Anything "
                             "(config.json model_type must be 'depth_anything')", option="model")


HUB_PROBE_TIMEOUT_S = 3.0


def _hub_unreachable() -> str | None:
    """None when the Hugging Face hub answers an HTTP request within :data:`HUB_PROBE_TIMEOUT_S`; else why not.

    The endpoint is the one huggingface_hub uses (``HF_ENDPOINT``), through the proxy urllib picks for it, if any;
    ``HF_HUB_OFFLINE`` counts as no network.  An HTTP answer of any status counts as reachable; a refused or failed
    connection, or one that is accepted but never answered (a captive or dead proxy), does not.  Without this, a hub
    id with no network meant ~30 s of huggingface_hub's retries, or a hang, before the error."""
    import threading
    import urllib.error
    import urllib.request

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    where = f"the hub {constants.ENDPOINT}"
    outcome: list = []

    def probe() -> None:        # in a thread: name resolution has no timeout of its own
        try:
            req = urllib.request.Request(constants.ENDPOINT, method="HEAD")
            urllib.request.urlopen(req, timeout=HUB_PROBE_TIMEOUT_S).close()
            outcome.append(None)
        except urllib.error.HTTPError:          # it answered (401, 404, 5xx): the network works
            outcome.append(None)
        except Exception as e:  # noqa: BLE001  (URLError, timeouts, resets, a garbled reply: no usable hub)
            reason = getattr(e, "reason", None) or e
            outcome.append(getattr(reason, "strerror", None) or str(reason) or type(reason).__name__)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(HUB_PROBE_TIMEOUT_S + 0.5)
    if not outcome:
        return f"{where} did not answer within {HUB_PROBE_TIMEOUT_S:g} s"
    return None if outcome[0] is None else f"{where} cannot be reached ({outcome[0]})"


def _load_pretrained(path_or_id: str, revision: str | None, source: str) -> Checkpoint:
    from transformers import DepthAnythingForDepthEstimation

    if source == "local":
        _check_model_type(path_or_id)
    offline = _hub_unreachable() if source == "hf" else None   # then only the local cache, at once, no retries
    try:
        model = DepthAnythingForDepthEstimation.from_pretrained(path_or_id, revision=revision,
                                                                **({"local_files_only": True} if offline else {}))
        model = model.eval()
    except (ValueError, KeyError, TypeError) as e:     # a cached hub checkpoint of another architecture
        raise EdgedepthError(f"{path_or_id}: not a Depth Anything checkpoint ({str(e).splitlines()[0][:200]})",
                             option="model") from None
    except OSError as e:
        if source == "local":
            raise EdgedepthError(f"cannot load a checkpoint from folder {path_or_id!r}: {str(e).splitlines()[0]}") from e
        if offline:
            from huggingface_hub import constants

            raise EdgedepthError(
                f"cannot load {path_or_id}{'@' + revision if revision else ''} from the Hugging Face hub (no network: "
                f"{offline}; not in the local cache {constants.HF_HUB_CACHE}); download it elsewhere and pass the "
                "folder with --model PATH, or use --model synthetic") from None
        raise EdgedepthError(
            f"cannot load {path_or_id}@{revision} from the Hugging Face hub (no network and not in the local cache); "
            "download it elsewhere and pass the folder with --model PATH, or use --model synthetic"
        ) from e
    files = {}
    folder = path_or_id if source == "local" else None
    if folder is None:
        try:
            from huggingface_hub import snapshot_download

            folder = snapshot_download(path_or_id, revision=revision, local_files_only=True)
        except Exception:  # provenance is best effort when the cache layout is unusual
            folder = None
    if folder:
        for fn in sorted(os.listdir(folder)):
            if fn.endswith((".safetensors", ".bin")):
                files[fn] = sha256_file(os.path.join(folder, fn))
    return Checkpoint(model=model, source=source, name=path_or_id, revision=revision, weight_files=files)


def load_checkpoint(spec: str = DEFAULT_MODEL, *, quiet: bool = False) -> Checkpoint:
    """Load a family member by short name (``metric-indoor-small`` = its hub id, pinned where known), ``HF_ID[@REV]``,
    a local HF folder, or a synthetic stand-in (``edgedepth.family.SYNTHETIC``); ``synthetic...<suffix>`` for a
    registered variant suffix (``edgedepth.variants``, e.g. ``-fp16-stress`` from ``edgedepth.fp16``)."""
    if spec in MEMBERS and not os.path.isdir(spec):
        m = MEMBERS[spec]
        spec = f"{m.hub_id}@{m.revision}" if m.revision else m.hub_id
    base, variant = split_variant(spec)
    if variant is not None and base in _ARCH:   # only the synthetic names: a hub id or folder may end in anything
        return variant(load_checkpoint(base, quiet=quiet))
    if spec in _ARCH:
        ckpt = load_synthetic(spec)
        if not quiet:
            print(SYNTHETIC_WARNING, file=sys.stderr)
        return ckpt
    if os.path.isdir(spec):
        if not os.path.isfile(os.path.join(spec, "config.json")):
            raise EdgedepthError(f"{spec!r} is a folder but has no config.json: not a Hugging Face checkpoint folder")
        return _load_pretrained(spec, None, "local")
    if os.path.isfile(spec):
        raise EdgedepthError(f"model {spec!r}: expected a checkpoint (HF_ID[@REV], a folder, synthetic), not a file",
                             option="model")
    hf_id, _, rev = spec.partition("@")
    if hf_id.count("/") != 1:
        raise EdgedepthError(
            f"model {spec!r}: not a folder, not a synthetic name ({', '.join(_ARCH)}), and not a hub id of the form "
            "OWNER/NAME[@REV]", option="model")
    return _load_pretrained(hf_id, rev or None, "hf")


def encoder_layers(model: nn.Module):
    """The transformer blocks, whether the backbone is transformers' Dinov2Backbone or our EdgeBackbone."""
    bb = model.backbone
    return bb.layers if hasattr(bb, "layers") else bb.encoder.layer


class DepthModule(nn.Module):
    """pixel_values [1,3,H,W] -> relative inverse depth [1,H,W]; the traced/exported signature of every target."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
        return self.model(pixel_values=pixel_values).predicted_depth
