"""A release build as independent jobs: each (format, size, variant) export of a recipe (:class:`formats.base.Job`)
with its files' checks, run anywhere, in any order, and their outputs put together by ``build`` in the recipe's order.

A job is a pure function of its :class:`JobSpec` plus the checkpoint's weights and the gate's photos, which the spec
names by SHA-256: it writes its files into an empty folder and returns their manifest entries, the rewrites it applied,
what its gate measured and their SHA-256s (:func:`run_job`).  :func:`cache_key` is its content address (the build
cache, :mod:`.cache`): the spec, the weights, the photos, the pinned versions of every converter and quantiser and the
digest of edgedepth's own code, so no change to any of them can reuse stale bytes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import platform
import resource
import socket
import time
from typing import Any

from .. import formats, interrupt
from ..errors import EdgedepthError
from ..fsutil import sha256_file
from .gate import Gate, file_entry, io_of

# The packages whose code touches a release's bytes (their versions: the manifest's provenance and every cache key)
VERSIONED = ("edgedepth", "torch", "transformers", "litert-torch", "litert-converter", "ai-edge-litert",
             "ai-edge-quantizer", "executorch", "onnx", "onnxscript", "onnxruntime", "numpy")


def versions() -> dict:
    """{package: version} of :data:`VERSIONED` (those installed)."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in VERSIONED:
        with contextlib.suppress(PackageNotFoundError):
            out[pkg] = version(pkg)
    return out


@functools.lru_cache(maxsize=1)
def source_digest() -> str:
    """SHA-256 over edgedepth's own Python files (names and bytes): a code change is a new cache key even where the
    version string is not bumped."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    h = hashlib.sha256()
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            h.update(os.path.relpath(path, root).encode() + b"\0" + sha256_file(path).encode() + b"\n")
    return h.hexdigest()


@dataclasses.dataclass(frozen=True)
class JobSpec:
    """Everything a job computes from besides the weights and the photos (named here by their SHA-256s): picklable,
    the same on every node.  ``model``/``max_depth``: how a worker loads the checkpoint again (checked against
    ``state_dict_sha256``); ``release``: the release it belongs to (a family build's member; "" for one release)."""

    release: str
    job: formats.Job
    part: Any                       # the format's recipe part (Format.recipe_part)
    model: str
    max_depth: float | str | None
    state_dict_sha256: str
    stem: str                       # what the files are named after (the member)
    rewrites: str
    gpu_check: bool
    images_sha256: str | None       # the gate's photos (None: not gated)
    pictures: bool                  # each gated file's worst photo, pictured (the builder's own photos)
    semantics: str                  # the member's output semantics (the files' I/O contract)
    model_name: str | None          # a user model's release name (config.json names it)
    memory: int = 0                 # bytes a worker must have free for it (:func:`memory_bytes`)

    @property
    def format(self):
        return formats.NAMES[self.job.format]

    @property
    def key(self) -> str:
        return cache_key(self)


def cache_key(spec: JobSpec) -> str:
    """The job's content address: what it computes from, and the code and versions it computes with."""
    fields = dataclasses.asdict(spec)
    for where in ("release", "model", "memory"):        # where it is filed or loaded from, not what it is
        fields.pop(where)
    payload = {"spec": fields, "versions": versions(), "edgedepth_source": source_digest(),
               "python": platform.python_version(), "machine": platform.machine()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


# What a job declares (an estimate, on the safe side): the libraries' own ~2 GiB (a worker running tiny jobs peaks at
# 0.8-2.1 GiB: benchmarks/results/cluster_builds.json) plus the eager model, its rewritten copy, the exported program
# and the converter's buffers, a few times the FP32 weights.  Measured at full size (benchmarks/results/job_costs.json,
# a job's whole process): peaks at 32-94 % of this, the most V2 Large's ONNX FP16 export (11.1 of 11.7 GiB: its own
# fp16_safe graph) and FP32 jobs (10.1-10.4 GiB); a precision quantised from an FP32 file peaks far lower
BASE_MEMORY = 3 << 30
WEIGHT_FACTOR = 7


def memory_bytes(params: int) -> int:
    """The memory a job of a ``params``-parameter model declares (Ray does not schedule it where that is not free)."""
    return BASE_MEMORY + WEIGHT_FACTOR * 4 * params


def work_estimate(spec: JobSpec) -> float:
    """A job's cost relative to other jobs, only to start the longest first: the weights it converts (what its
    declared memory adds to the base) x the pixels of its size x its progress steps (files exported and gated)."""
    h, w = (int(v) for v in spec.job.size.split("x"))
    return (spec.memory - BASE_MEMORY) * h * w * spec.job.stages


def mask_outputs(ckpt) -> dict[str, float]:
    """The checkpoint's outputs that are used as masks, with their thresholds (``ModelFamily.mask_outputs``)."""
    masks = getattr(ckpt.family, "mask_outputs", None) or {}
    return {role: masks[role] for role in ckpt.outputs if role in masks}


_LOADED: dict = {}      # a worker's checkpoint: the last one it loaded (a Large model is 1.3 GB)


def checkpoint_for(spec: JobSpec):
    """The checkpoint of ``spec`` in this process, loaded once; a different one than the build planned with (another
    file at that path on this node) is one line, not a release of other weights."""
    from ..checkpoint import load_checkpoint, state_dict_digest

    key = (spec.model, spec.max_depth)
    if key not in _LOADED:
        _LOADED.clear()
        ckpt = load_checkpoint(spec.model, quiet=True, max_depth=spec.max_depth)
        _LOADED[key] = (ckpt, state_dict_digest(ckpt.model))
    ckpt, digest = _LOADED[key]
    if digest != spec.state_dict_sha256:
        raise EdgedepthError(f"checkpoint {spec.model} on {socket.gethostname()} has state dict {digest[:12]}…, not "
                             f"the {spec.state_dict_sha256[:12]}… the build planned with: give every node the same "
                             "checkpoint")
    return ckpt


def run_job(spec: JobSpec, ckpt, items, workdir: str, step, after: tuple[str, dict] | None = None) -> dict:
    """Run one job into the empty folder ``workdir`` (``items``: the gate's photos, [] for none; ``step``: progress;
    ``after``: the folder and result of the job it comes after, ``Job.after``: its files, manifest entries and the
    PyTorch outputs its gate computed, which this job's gate uses instead of computing them again).  Returns
    {"entries", "rewrites", "report", "noise", "files": {path: sha256}, "ran": where and how long, and for a job
    others start from ("feeds") "references": its gate's PyTorch outputs (:func:`encode_references`)}."""
    if spec.job.after and after is None:
        raise EdgedepthError(f"job {spec.job.label} starts from the files of job {spec.job.after}, which it was not "
                             "given")
    from ..checkpoint import DepthModule

    t0, c0 = time.perf_counter(), time.process_time()
    gate = Gate(DepthModule(ckpt.model, ckpt.outputs), items if spec.images_sha256 else [], step,
                workdir if spec.pictures else None, mask_outputs(ckpt))
    if after and after[1].get("references"):
        gate.references.update(decode_references(after[1]["references"]))
    io = io_of(ckpt.family, ckpt.outputs, spec.semantics)
    entry = lambda path, exported, text, rel=None, gpu_check=False: file_entry(  # noqa: E731
        path, exported, text, io, gate, step, gpu_check, rel, ckpt.outputs)
    rs = formats.ReleaseStep(ckpt, workdir, (spec.job.size,), spec.rewrites, step, entry,
                             lambda rel, text: _write_text(os.path.join(workdir, rel), text), spec.gpu_check,
                             spec.model_name, *((after[0], tuple(after[1]["entries"])) if after else ()))
    entries, rewrites = spec.format.release_job(spec.part, spec.job, rs)
    interrupt.check()
    files = {rel: sha256_file(os.path.join(workdir, rel)) for rel in files_in(workdir)}
    ran = {"host": socket.gethostname(), "pid": os.getpid(), "seconds": round(time.perf_counter() - t0, 2),
           "cpu_seconds": round(time.process_time() - c0, 2),
           "process_peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)}
    return {"entries": entries, "rewrites": rewrites, "report": gate.report, "noise": gate.noise, "files": files,
            "ran": ran, **({"references": encode_references(gate.references)} if spec.job.feeds else {})}


def encode_references(refs: dict) -> dict:
    """A gate's PyTorch outputs {((h, w), image id): {role: array}} as JSON (the build cache files a job's result as
    JSON): {"HxW|image id|role": [shape, base64 of float32 bytes]}."""
    import base64

    import numpy as np

    out = {}
    for ((h, w), image), roles in sorted(refs.items()):
        for role, a in roles.items():
            a = np.ascontiguousarray(a, dtype=np.float32)
            out[f"{h}x{w}|{image}|{role}"] = [list(a.shape), base64.b64encode(a.tobytes()).decode("ascii")]
    return out


def decode_references(data: dict) -> dict:
    """:func:`encode_references` undone."""
    import base64

    import numpy as np

    refs: dict = {}
    for key, (shape, b64) in data.items():
        size, image, role = key.split("|", 2)
        h, w = (int(v) for v in size.split("x"))
        refs.setdefault(((h, w), image), {})[role] = np.frombuffer(base64.b64decode(b64), np.float32).reshape(shape)
    return refs


def files_in(folder: str) -> list[str]:
    """The regular files under ``folder``, as sorted "/"-separated relative paths (a job's output)."""
    out = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for n in names:
            path = os.path.join(root, n)
            if os.path.isfile(path) and not os.path.islink(path):
                out.append(os.path.relpath(path, folder).replace(os.sep, "/"))
    return sorted(out)


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
