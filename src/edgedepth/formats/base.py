"""What every model-file format is: a :class:`Format` subclass in its own package (``formats/<name>/``), listed once in
``edgedepth.formats.FORMATS``.  The class owns everything about its kind of file: names, precisions, the look inside
(check, describe, text), its runners (through ``edgedepth.runtimes``), export, its recipe section, its release files
and manifest fields, its model-card cells, its browser runtime and its export command-line options.  Callers ask the
class; nothing outside ``formats/`` switches on a format's name (tests/test_architecture.py).
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, Callable

from .. import runtimes
from ..errors import EdgedepthError
from ..preprocess import parse_size


@dataclasses.dataclass
class Exported:
    """One file written by an export."""

    path: str
    format: str                 # Format.name
    precision: str
    backend: str | None         # ExecuTorch backend; None for LiteRT (the runtime picks CPU/GPU)
    rewrites: list[str]         # rewrites that changed something, in the order run
    stats: dict                 # format-specific export facts (e.g. ExecuTorch delegation counts)


@dataclasses.dataclass(frozen=True)
class CliOption:
    """An export option only one format takes: added to ``edgedepth export`` once; ``default`` is "not given"."""

    flag: str
    kwargs: dict

    @property
    def dest(self) -> str:
        return self.flag.lstrip("-").replace("-", "_")


@dataclasses.dataclass(frozen=True)
class ReleaseStep:
    """What a format's release step gets from the build (``edgedepth.release.build``): the checkpoint, the staging
    folder, the recipe's sizes, the progress ``step``, ``entry(path, exported, size_text, rel=None, gpu_check=False)``
    (opens, GPU-checks, parity-gates the file and returns its manifest entry) and ``write_text(rel, text)``."""

    ckpt: Any
    staging: str
    sizes: tuple[str, ...]
    rewrites: str
    step: Callable[[str], None]
    entry: Callable[..., dict]
    write_text: Callable[[str, str], None]
    gpu_check: bool
    model_name: str | None = None       # the user's own model's release name (config.json names it); None: upstream's
    inputs: str | None = None           # the folder of the files of the job this one comes ``after`` (Job.after)
    input_entries: tuple = ()           # and that job's manifest entries


@dataclasses.dataclass(frozen=True)
class Job:
    """One piece of a release: an export of a format at one size and the files it makes, each opened, GPU-checked and
    parity-gated.  ``precisions``: the files it makes (empty: every precision of the recipe part); ``after``: the
    label of the job of the same release whose files it starts from (a precision quantised from that job's FP32 file:
    the graph is converted once, and the long conversion and each quantisation run on different workers).  A build
    runs independent jobs in any order, anywhere, and a job only once the one it comes ``after`` has finished
    (``edgedepth.release.jobs``); ``stages``: how many times it calls ``step``."""

    format: str                 # Format.name
    size: str                   # "HxW"
    variant: str = ""           # "" or what else sets this export apart ("uint8 pixel input")
    stages: int = 1
    precisions: tuple[str, ...] = ()
    after: str = ""
    feeds: bool = False         # other jobs start from its files (and the PyTorch outputs its gate computed)

    @property
    def label(self) -> str:
        return " ".join(filter(None, (self.format, self.size, self.variant, ",".join(self.precisions))))


def precision_jobs(fmt: str, size: str, precisions, per_file: int, variant: str = "", independent=()) -> list[Job]:
    """The jobs of one export at ``size``, a job per precision in ``precisions``' order (the manifest's): the FP32
    file's, and each other precision's ``after`` it (made from its FP32 file) or, for those in ``independent``,
    exported on its own; each 1 + ``per_file`` stages.  Without an FP32 file to start from, one job makes every
    precision (its ``precisions`` empty: the recipe part's own)."""
    if "fp32" not in precisions:
        return [Job(fmt, size, variant, 1 + len(precisions) * per_file)]
    head = Job(fmt, size, variant, 1 + per_file, ("fp32",),
               feeds=any(p != "fp32" and p not in independent for p in precisions))
    return [head if p == "fp32" else Job(fmt, size, variant, 1 + per_file, (p,),
                                         "" if p in independent else head.label) for p in precisions]


def list_option(flag: str, text: str, allowed) -> list[str]:
    """A comma-separated command-line option checked against ``allowed`` (deduplicated, order kept)."""
    items = [p.strip().lower() for p in text.split(",") if p.strip()]
    bad = [p for p in items if p not in allowed]
    if bad or not items:
        raise EdgedepthError(f"{flag} {text!r}: choose from {', '.join(allowed)} (comma-separated)")
    return list(dict.fromkeys(items))


def check_sizes(field: str, sizes) -> None:
    """A recipe's list of "HxW" sizes: one-line errors for none or for anything not HxW in multiples of 14."""
    if not sizes:
        raise EdgedepthError(f"recipe field {field!r} lists no size")
    for s in sizes:
        parse_size(s)


def short_semantics(semantics: str) -> str:
    """An output's manifest semantics for a code comment, parenthesised details and what follows the first ";"
    dropped: "relative depth, larger = farther" of "relative depth, larger = farther (exp head, > 0); ...",
    "confidence of the depth, >= 1, larger = more confident" of "... >= 1 (exp + 1 head), larger = ...; ..."."""
    import re

    return re.sub(r" \([^)]*\)", "", semantics).split(";")[0].strip()


def recommends(entry: dict, runtime: str) -> bool:
    """Whether a manifest entry's ``recommended_runtime_options`` name ``runtime`` ("transformers.js": the ONNX files
    transformers.js loads, with their config.json beside them)."""
    return runtime in (entry.get("recommended_runtime_options") or {})


def normalise_lines(n: dict, target: str) -> list[str]:
    """Python lines: ``img`` (PIL RGB) -> float32 ``x`` [1, 3, H, W] as the files expect (bicubic, /255, mean/std)."""
    return [f"x = np.asarray(img.resize({target}, Image.Resampling.BICUBIC), np.float32) / 255",
            f"x = (x - {n['mean']}) / {n['std']}  # ImageNet mean and std",
            "x = np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)  # NCHW [1, 3, H, W]"]


def recipe_field(d: dict, key: str, kind, where: str):
    """``d[key]``, checked to be a ``kind``; one-line errors naming the recipe and the field."""
    if key not in d:
        raise EdgedepthError(f"recipe {where}: missing field {key!r}")
    if not isinstance(d[key], kind):
        raise EdgedepthError(f"recipe {where}: field {key!r} should be {getattr(kind, '__name__', kind)}")
    return d[key]


@dataclasses.dataclass(frozen=True)
class CardContext:
    """What a format's model-card snippets read besides its own manifest entries."""

    name: str                   # the release's name: the folder transformers.js loads, the Hub repository's name
    metric: bool                # depth in metres (else relative)
    example: dict | None        # the card's example file: the FP32 float-input .tflite of the first size
    semantics: str = "relative inverse depth, larger = closer"  # the output's meaning, short (a code comment's)
    gate: bool = False          # the build ran its parity gate (manifest parity_method.build_gate: images > 0)
    not_gated: tuple[str, ...] = ()     # files the gate could not run here (build_gate.not_gated)

    def gated(self, path: str) -> bool:
        """Whether the build's parity gate checked the file ``path`` (and it passed: the build fails otherwise)."""
        return self.gate and path not in self.not_gated

    def checked_at(self, entry: dict) -> str:
        """What the build did with a dynamic-size file at the size its entry records, as the card words it:
        "parity-gated at 28x42", "parity-gated and timed at 518x686", or "neither parity-gated nor timed (default
        size 28x42)"; timed: the entry carries committed latency rows."""
        how = [w for w, done in (("parity-gated", self.gated(entry["path"])), ("timed", bool(entry.get("latency"))))
               if done]
        return f"{' and '.join(how)} at {entry['size']}" if how else \
            f"neither parity-gated nor timed (default size {entry['size']})"


class Format:
    """A model-file format (subclass per package; one instance in ``FORMATS``)."""

    name: str = ""                      # manifest "format" and the package's name: "tflite", "pte", "onnx"
    suffix: str = ""                    # ".tflite"
    target_name: str = ""               # `export --target` and the recipe section: "litert", "executorch", "onnx"
    title: str = ""                     # in prose: "LiteRT"
    precisions: tuple[str, ...] = ()
    default_precisions: tuple[str, ...] = ()
    has_gpu_check: bool = False         # compiles on LiteRT's GPU accelerator to check delegation
    dynamic_size: bool = False          # export can leave height/width symbolic (--dynamic-size)
    export_backends: tuple[str, ...] = ()   # what export's `backends` may name (ExecuTorch delegates); () = none
    browser_runtime: str | None = None  # the playground's runtime for it, if any
    notice: str = ""                    # its "Modifications" lines in a release's NOTICE (present files only)
    hub_layout: bool = False            # release files in the onnx-community layout (ORT / OpenVINO / transformers.js)
    recipe_required: bool = False       # a recipe must have its section
    side_files: tuple[tuple[str, str], ...] = ()   # (file name, manifest "format") of text files its release writes
    cli_options: tuple[CliOption, ...] = ()        # its own `edgedepth export` options

    # -- the file ---------------------------------------------------------------------------------------------------
    @property
    def backends(self) -> tuple[str, ...]:
        """The --backend values its files run on here (edgedepth.runtimes.RUNTIMES)."""
        return runtimes.backends_of(self.name)

    def check(self, path: str):
        raise NotImplementedError

    def describe(self, path: str) -> dict:
        raise NotImplementedError

    def format_text(self, info: dict) -> str:
        raise NotImplementedError

    def open_runner(self, path: str, backend: str = "cpu", threads: int = 2, size: tuple[int, int] | None = None):
        raise NotImplementedError

    def gpu_check(self, path: str, info: dict, **kw) -> dict | None:
        """Compile on the GPU accelerator alone (child process); None for formats without a GPU check here."""
        return None

    def output_names(self, roles: tuple[str, ...]) -> list[str]:
        """The names its files give outputs of these roles (``ModelFamily.outputs``, in the files' order): by default
        the roles themselves (ExecuTorch's manifest names: "depth", "confidence")."""
        return list(roles)

    # -- export -----------------------------------------------------------------------------------------------------
    def export_options(self, args: argparse.Namespace) -> dict:
        """Its own options' values from the export command line (only the ones given)."""
        return {o.dest: getattr(args, o.dest) for o in self.cli_options
                if getattr(args, o.dest, o.kwargs.get("default")) != o.kwargs.get("default")}

    def check_options(self, precisions, options: dict) -> None:
        """One-line error for options this format does not take (before a checkpoint is loaded)."""
        unknown = set(options) - {o.dest for o in self.cli_options}
        if unknown:
            raise EdgedepthError(f"{self.title} files take no {', '.join(sorted(unknown))} option")

    def export_stages(self, precisions, options: dict) -> int:
        """How many progress stages :meth:`export` reports (the CLI's bar total)."""
        raise NotImplementedError

    def export(self, model, height: int, width: int, out_dir: str, *, precisions, rewrites="default",
               verbose: bool = False, progress=None, stem: str, **options) -> list[Exported]:
        raise NotImplementedError

    # -- a release --------------------------------------------------------------------------------------------------
    def recipe_part(self, section: dict, where: str):
        """Its recipe section (``RECIPE[target_name]``) checked into an immutable value; one-line errors naming it."""
        raise NotImplementedError

    def release_jobs(self, part, sizes, *, gate: bool, gpu_check: bool) -> list[Job]:
        """Its release's independent jobs, in the order their files are listed (``sizes``: the recipe's)."""
        raise NotImplementedError

    def release_job(self, part, job: Job, rs: ReleaseStep) -> tuple[list[dict], dict]:
        """Export, check and gate one job's files into ``rs.staging``: (manifest entries, {size: rewrites applied})."""
        raise NotImplementedError

    def release_entry(self, art, exported: Exported, size_text: str, io) -> dict:
        """Its manifest fields for one file (``io(h, w, ...)``: the I/O contract)."""
        raise NotImplementedError

    def runs_here(self, exported: Exported) -> bool:
        """Whether this machine's Python runtime runs the file (the release's parity gate)."""
        return True

    card_order: int = 0                 # where its snippets come in the card's "How to run" (LiteRT's example first)

    def card_delegation(self, entry: dict) -> str:
        """The model card's "delegation" cell for one of its manifest entries."""
        return ""

    def card_how_to(self, files: list[dict], ctx: CardContext) -> list[str]:
        """Its part of the card's "How to run" (Markdown lines; code blocks run as written in CI) for its entries."""
        return []

    def card_sizes_note(self, files: list[dict], ctx: CardContext) -> str:
        """A sentence the card adds to its input sizes for its entries ("" for none)."""
        return ""
