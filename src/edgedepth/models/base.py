"""What a model family is: the seam every family package fills (``models/<family>/``), and what loading one returns.

A family owns everything that depends on its architecture: its members (hub ids, licences, output kind), how a
checkpoint of it is loaded and recognised, its synthetic stand-ins, its input normalisation and patch size, and the
structure the rewrites walk (:meth:`ModelFamily.encoder_layers`).  Nothing outside ``models/`` names a family: callers
ask :mod:`edgedepth.models` for the family of a model, a spec or a file.
"""

from __future__ import annotations

import abc
import dataclasses
import os
import re
from typing import TYPE_CHECKING

from ..errors import EdgedepthError

if TYPE_CHECKING:      # torch is imported by the families' loaders only: the CLI and the server start without it
    from torch import nn

APACHE = "apache-2.0"           # licence ids, as the model cards' metadata spells them
CC_BY_NC = "cc-by-nc-4.0"


@dataclasses.dataclass(frozen=True)
class Member:
    """One released checkpoint of a family."""

    name: str                   # short name, unique over all families: "small", "metric-indoor-small", ...
    hub_id: str
    arch: object                # the family's own architecture record
    license: str                # SPDX-like id: "apache-2.0", "cc-by-nc-4.0"
    kind: str = "relative"      # "relative" | "metric" (metres, 0..max_depth) | "metric-focal" (metres x focal: DA3)
    max_depth: int | None = None        # metres, metric members only
    revision: str | None = None         # pinned where we can name it
    family: str = ""            # the family's name (set by the family's member table)
    semantics: str | None = None        # what the output is, when the family's head is not V2's (see output_semantics)
    larger_is_farther: bool = False     # relative output that grows with distance (DA3's exp head; V2's is inverse)

    @property
    def is_metric(self) -> bool:
        return self.kind == "metric"

    @property
    def file_stem(self) -> str:
        """Exported files are named ``<stem>_<H>x<W>_<precision>...``: ``depth_anything_v2_metric_indoor_small``."""
        return self.family + "_" + self.name.replace("-", "_")

    @property
    def output_semantics(self) -> str:
        if self.semantics:
            return self.semantics
        if self.is_metric:
            return f"metric depth in metres, 0..{self.max_depth:g} (sigmoid x max_depth head)"
        return "relative inverse depth, larger = closer"


@dataclasses.dataclass
class Checkpoint:
    """A loaded checkpoint: the eval-mode model plus where it came from (for provenance) and its family."""

    model: nn.Module
    source: str                 # "hf", "local", "synthetic"
    name: str                   # what the user passed, normalised
    revision: str | None = None
    seed: int | None = None
    weight_files: dict[str, str] = dataclasses.field(default_factory=dict)  # file name -> sha256
    format: str = "hf"          # what was read: "hf" (a hub id or checkpoint folder; a stand-in), "pth", "safetensors"
    family: "ModelFamily | None" = dataclasses.field(default=None, repr=False, compare=False)

    @property
    def is_synthetic(self) -> bool:
        return self.source == "synthetic"

    @property
    def member(self) -> Member | None:
        """The family member this is (or stands in for); None for an architecture no member has."""
        return self.family.member_of(self) if self.family else None

    @property
    def file_stem(self) -> str:
        """What exported files are named after: the member (``depth_anything_v2_metric_indoor_small``)."""
        return self.member.file_stem if self.member else self.family.name

    @property
    def is_metric(self) -> bool:
        return self.family.is_metric(self.model)

    @property
    def outputs(self) -> tuple[str, ...]:
        """What its exported files output, "depth" first (:meth:`ModelFamily.outputs_of`)."""
        return self.family.outputs_of(self.model) if self.family else ("depth",)

    def provenance(self) -> dict:
        d = {"source": self.source, "name": self.name}
        if self.revision:
            d["revision"] = self.revision
        if self.seed is not None:
            d["seed"] = self.seed
        if self.weight_files:
            d["weight_files"] = dict(sorted(self.weight_files.items()))
        if self.format != "hf":     # only then: every other checkpoint's provenance stays as it was
            d["format"] = self.format
        return d


class ModelFamily(abc.ABC):
    """One architecture family.  A new family is one package under ``models/`` with a subclass of this, plus one
    entry in :data:`edgedepth.models.FAMILIES`."""

    name: str                   # file stems and the rewrites' ``FAMILIES``: "depth_anything_v2"
    title: str                  # for messages and the card: "Depth Anything V2"
    model_types: tuple[str, ...]        # config.json ``model_type`` values of its checkpoints
    members: dict[str, Member]
    synthetic: dict[str, tuple[str, object]]    # synthetic name -> (member name it stands in for, architecture)
    mean: tuple[float, float, float]    # input normalisation after /255
    std: tuple[float, float, float]
    patch: int                  # H and W must be multiples of it
    export_blocker: str | None = None   # why its models cannot be exported yet (None: they can)
    # What a release's card and NOTICE say about it (edgedepth.release: generated from manifest.json, which names the
    # member; these are the family's constant texts)
    card_title: str = ""        # its published name: "Depth Anything V2"
    hub_tag: str = ""           # the card's Hub tag: "depth-anything-v2"
    paper: str = ""             # the paper's address
    citation: str = ""          # the BibTeX its authors ask for
    implementation: str = ""    # the PyTorch code the parity reference runs: "transformers"
    size_notice: str = ""       # NOTICE: what a fixed input size does to the graph (after "fixed input sizes ")
    fp16_note: str = ""         # the card's limitation on FP16 compute (after "...under its default precision; ")
    # What its exported files output, in the files' order: "depth" first (the member's output_semantics), then any
    # other map the head computes, each [1, H, W] float32 (runners' run_all keys; the manifest's "outputs" roles);
    # per model / member where they differ: outputs_of, member_outputs
    outputs: tuple[str, ...] = ("depth",)
    output_texts: dict[str, str] = {}   # what each output after the depth is (the manifest's semantics, the card)
    # outputs that are used as a mask: role -> the threshold the upstream package applies (a quantised file's such
    # output is gated on the share of pixels that land on the other side of it, not on its rel-L2)
    mask_outputs: dict[str, float] = {}
    # Single checkpoint files it loads (load_file): their suffixes, and what they are in words for messages
    file_suffixes: tuple[str, ...] = ()
    file_hint: str = ""         # "an official Depth Anything V2 state dict (.pth, .safetensors)"

    def outputs_of(self, model: nn.Module) -> tuple[str, ...]:
        """What ``model``'s exported files output (roles, in order: :attr:`outputs` unless its members differ)."""
        return self.outputs

    def member_outputs(self, member: Member) -> tuple[str, ...]:
        """What ``member``'s exported files output (:meth:`outputs_of` for a file with no model at hand)."""
        return self.outputs

    @abc.abstractmethod
    def owns_model(self, model: nn.Module) -> bool:
        """Whether ``model`` (loaded or rewritten) is of this family."""

    @abc.abstractmethod
    def load_synthetic(self, name: str, seed: int) -> Checkpoint:
        """The stand-in ``name`` (a key of :attr:`synthetic`): the member's architecture, seeded realistic weights."""

    @abc.abstractmethod
    def load_pretrained(self, path_or_id: str, revision: str | None, source: str) -> Checkpoint:
        """A hub checkpoint (``source="hf"``) or a local folder (``"local"``) of this family."""

    @abc.abstractmethod
    def member_of(self, ckpt: Checkpoint) -> Member | None:
        """The member a loaded checkpoint is, or stands in for."""

    @abc.abstractmethod
    def is_metric(self, model: nn.Module) -> bool:
        """Whether the model's output is metric depth (metres)."""

    @abc.abstractmethod
    def encoder_layers(self, model: nn.Module):
        """The transformer blocks the rewrites walk (for the original and the rewritten backbone)."""

    def load_file(self, path: str, max_depth) -> Checkpoint | None:
        """A single checkpoint file (``source="local"``; its suffix is one of :attr:`file_suffixes`), or None when it
        is not this family's.  ``max_depth``: the head where the file cannot say (metres, "relative" or None)."""
        return None

    def owns_config(self, config: dict) -> bool:
        """Whether a checkpoint folder's config.json (parsed: an object) is one of this family's checkpoints; by
        default, when its ``model_type`` is one of :attr:`model_types`."""
        model_type = config.get("model_type")
        return isinstance(model_type, str) and model_type in self.model_types

    def config_hint(self) -> str:
        """What this family's config.json holds, for the error that names every family's: "model_type 'x'"."""
        return "model_type " + " or ".join(map(repr, self.model_types))

    def member_title(self, member_name: str) -> str:
        """The member in prose, after :attr:`card_title`: "Small", "Metric Indoor Small"."""
        return member_name.replace("-", " ").title()

    def card_about(self, info: dict) -> str:
        """The card's description of the member (``info``: the manifest's "model"), after "<title> <member>: "."""
        return f"predicting {info['output_semantics']} from one RGB image"

    def recipe_file(self, member: Member) -> str:
        """The member's release recipe, named after its file stem: ``recipes/depth-anything-v2-small.py``."""
        return "recipes/" + member.file_stem.replace("_", "-") + ".py"

    def member_of_file_name(self, path: str) -> Member | None:
        """The member an exported file's name says it came from (``<stem>_<H>x<W>_...``), or None (renamed file)."""
        m = re.match(r"([a-z0-9_]+?)_\d+x\d+_", os.path.basename(path))
        return next((x for x in self.members.values() if m and x.file_stem == m.group(1)), None)


def checked_max_depth(value, what: str = "max_depth") -> int | float | str:
    """A checkpoint file's head as given (``--max-depth``, a recipe's ``max_depth``): metres of a metric head (a
    positive number, or its text), or "relative"; anything else is one EdgedepthError line starting with ``what``."""
    if value == "relative":
        return value
    try:
        metres = float(value) if not isinstance(value, bool) else float("nan")
    except (TypeError, ValueError):
        metres = float("nan")
    if not 0 < metres < float("inf"):
        raise EdgedepthError(f"{what} {value!r}: metres of a metric head (a positive number), or relative",
                             option="max_depth")
    return int(metres) if metres.is_integer() else metres
