"""Release folder: recipe -> exported files + manifest.json + generated model card + LICENSE/NOTICE.

The folder is built in a staging folder beside the target and renamed into place only when complete.  Everything the
manifest lists, and the manifest itself, is a function of (recipe, checkpoint, pinned versions, committed benchmark
data) and the same bytes on any x86-64 machine: no timestamps, no hostnames, no measured float.  Measurements depend on
the machine (parity at FP32 noise level moves with the CPU's kernels; latency always), so a build only *gates* on parity
(:func:`parity_gate`) and writes what it measured to ``build-report.json`` -- beside the manifest, not listed in it, and
ignored by ``verify``.  The manifest and model card carry parity and latency from committed benchmark JSON, and only
for files whose SHA-256 matches the file that was measured.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os

from .. import formats, interrupt
from ..errors import EdgedepthError
from ..images import image_set, image_set_hash
from ..models import APACHE, member_of_hub_id
from ..preprocess import preprocess
from ..runtimes import REFERENCE_BACKEND
from ..verify import records
from ..verify.bench import environment
from ..verify.parity import rel_l2
from ..verify.validate import validate
from ..verify.worst import side_by_side, worst_images
from . import hub, manifest as mf, outdir
from .modelcard import LOCAL_IMAGES, LOCAL_MODEL, release_family, render_model_card
from .recipe import Recipe
from .recommend import recommend

PRESET_SIZES = ["518x686", "686x518", "518x518", "392x518", "252x252", "224x224"]
BUILD_REPORT = mf.BUILD_REPORT
# Parity gate of a build (tolerance policy, tests/README.md): FP32 files within FP32_GATE_FACTOR x PyTorch FP32's own
# rel-L2 against a float64 run of the same checkpoint on the same image (measured in the build); quantised files within
# INT8_GATE_REL_L2, a quantisation-level bound (measured ~3e-2) that FP32 rounding cannot reach.
FP32_GATE_FACTOR = 10.0
INT8_GATE_REL_L2 = 0.1


def _versions() -> dict:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for pkg in ("edgedepth", "torch", "transformers", "litert-torch", "litert-converter", "ai-edge-litert",
                "ai-edge-quantizer", "executorch", "onnx", "onnxscript", "onnxruntime", "numpy"):
        with contextlib.suppress(PackageNotFoundError):
            out[pkg] = version(pkg)
    return out


def fp32_noise(module, x) -> float:
    """PyTorch FP32's own rel-L2 against a float64 run of the same module on ``x``: the scale of FP32 rounding."""
    return fp32_noise_by_output(module, x)["depth"]


def fp32_noise_by_output(module, x) -> dict[str, float]:
    """:func:`fp32_noise` of each output ``module`` returns ({role: rel-L2}; a ``DepthModule``'s ``outputs`` name a
    tuple's maps: Depth Anything 3's depth and confidence)."""
    import copy

    import torch

    with torch.inference_mode():
        y32 = module(torch.from_numpy(x))
        y64 = copy.deepcopy(module).double()(torch.from_numpy(x).double())
    pairs = zip(y32, y64) if isinstance(y32, tuple) else [(y32, y64)]
    return {role: rel_l2(a.numpy(), b.numpy()) for role, (a, b) in zip(getattr(module, "outputs", ("depth",)), pairs)}


def parity_gate(precision: str, rel_l2: float, noise: float) -> tuple[float, bool]:
    """(bound, passed) for a file's pooled rel-L2 against PyTorch FP32 (see FP32_GATE_FACTOR)."""
    bound = FP32_GATE_FACTOR * noise if precision == "fp32" else INT8_GATE_REL_L2
    return bound, rel_l2 <= bound


_round_metrics = records.round_metrics      # the build report's parity values, rounded as records are


def stage_count(recipe: Recipe, *, gpu_check: bool = True) -> int:
    """How many times ``build`` calls ``progress``: the progress bar's total (keep in step with build's ``step`` calls)."""
    gate = recipe.parity_images != 0
    n = 2 + _licence_note(recipe)          # load (+ licence note), manifest
    n += sum(fmt.release_stages(part, recipe.sizes, gate=gate, gpu_check=gpu_check) for fmt, part in recipe.parts)
    if gate and recipe.parity_folder:      # each gated file's worst photo, pictured
        n += sum(fmt.release_stages(part, recipe.sizes, gate=True, gpu_check=False)
                 - fmt.release_stages(part, recipe.sizes, gate=False, gpu_check=False) for fmt, part in recipe.parts)
    return n


def _licence_note(recipe: Recipe) -> bool:
    """Whether the build names a non-commercial licence as a stage: the recipe's base model is a member's under one
    (a model of the user's own gets it from the card and NOTICE)."""
    member = member_of_hub_id(recipe.base_model or "")
    return member is not None and member.license != APACHE


def build(recipe: Recipe, out_dir: str, *, gpu_check: bool = True, progress=None, force: bool = False) -> dict:
    """Build the release folder ``out_dir`` from ``recipe`` (overrides applied: ``Recipe.with_overrides``); returns the
    manifest dict.  Steps: 1 load the checkpoint, 2 each format's files (``Format.release_files``, in ``FORMATS``
    order; each file parity-gated as it is made), 3 manifest, card, licence, notice, build report; all in a staging
    folder swapped in atomically at the end.  ``force``: replace an earlier release even where its files were changed
    or added to."""
    from ..checkpoint import DepthModule, load_checkpoint

    step = interrupt.checking(progress)      # every stage start is a point where a swallowed Ctrl-C stops
    sizes = list(recipe.sizes)
    with outdir.staged(out_dir, force=force) as staging:      # checks, locks, swaps atomically; out_dir untouched on failure
        step(f"load {recipe.model}")                                                          # 1
        ckpt = load_checkpoint(recipe.model, max_depth=recipe.max_depth)
        formats.check_exportable(ckpt.model)
        model_info, base_model = _model_info(ckpt, recipe)
        if model_info["license"] != "apache-2.0" and _licence_note(recipe):
            step(f"licence of {model_info['family_member']}: {model_info['license']} (non-commercial use only)")
        io = _io(ckpt.family, ckpt.outputs, model_info["output_semantics"])
        items = image_set(recipe.parity_folder, limit=recipe.parity_images) if recipe.parity_images != 0 else []
        gate = _Gate(DepthModule(ckpt.model, ckpt.outputs), items, step, staging if recipe.parity_folder else None)
        measured = (records.read(recipe.latency_data, "latency"),      # committed measurement records
                    records.read(recipe.parity_data, "parity", backend=REFERENCE_BACKEND))
        entry = lambda path, exported, text, rel=None, gpu_check=False: _entry(  # noqa: E731
            path, exported, text, io, gate, step, gpu_check, rel, ckpt.outputs)
        rs = formats.ReleaseStep(ckpt, staging, tuple(sizes), recipe.rewrites, step, entry,
                                 lambda rel, text: _write_text(os.path.join(staging, rel), text), gpu_check,
                                 recipe.name if model_info.get("user_model") else None)
        entries, rewrite_reports = [], {}
        for fmt, part in recipe.parts:                                                         # 2
            files, reports = fmt.release_files(part, rs)
            entries += files
            rewrite_reports = rewrite_reports or reports        # the first format's (LiteRT's): {size: rewrites}
        entries = [_with_measurements(e, *measured) for e in entries]    # committed records matching the bytes
        step("manifest, model card, license")                                                  # 3
        manifest = _manifest(recipe, ckpt, (model_info, base_model), entries, rewrite_reports, items)
        _write_folder_texts(staging, manifest, gate)
    return mf.load(out_dir)


def _manifest(recipe: Recipe, ckpt, lineage: tuple[dict, str | None], entries: list[dict], rewrite_reports: dict,
              items) -> dict:
    """manifest.json's content (its files: the model files; the text files are added once written).  ``lineage``:
    (the manifest's "model", the base model) from :func:`_model_info`."""
    model_info, base_model = lineage
    sizes = list(recipe.sizes)
    # latency: one dated row per (file, machine, backend), the newest; the rows left out are named beside them
    newest, left_out = records.newest_latency(recipe.latency_data)
    entries = [{**e, "latency": newest.get(e["sha256"], []),
                **({"latency_left_out": left_out[e["sha256"]]} if e["sha256"] in left_out else {})} for e in entries]
    # what a rebuild must pass again: the CLI's overrides of the recipe, and --no-gpu-check where files that have a GPU
    # check were built without it (their entries then carry no gpu_fully_delegated)
    overrides = _published_overrides(recipe, ckpt)
    if any(formats.entry_format(e).has_gpu_check and "gpu_fully_delegated" not in e for e in entries):
        overrides["gpu_check"] = False
    # files the parity gate could not run on this machine's runtimes (ExecuTorch WebGPU): the card must not say they
    # passed it
    not_gated = [e["path"] for e in entries if items and not (fmt := formats.entry_format(e)).runs_here(
        formats.Exported(e["path"], fmt.name, e["precision"], e.get("backend"), [], {}))]
    return {
        "name": recipe.name,
        "model": model_info,
        "files": entries,
        "recommended": recommend(entries, sizes[0], INT8_GATE_REL_L2),
        "provenance": {
            "checkpoint": _published_checkpoint(ckpt),
            "base_model": base_model,
            "recipe": {"name": recipe.name, **({"file": os.path.basename(recipe.path)} if recipe.path else {}),
                       **({} if not recipe.path or _is_carried(recipe.path) else {"carried": False}),
                       "sha256": recipe.sha256, "sizes": sizes, "overrides": overrides},
            "rewrites": rewrite_reports, "versions": _versions(),
        },
        "parity_method": {
            "reference": f"PyTorch eager ({ckpt.family.implementation}) FP32 on the same preprocessed inputs, CPU",
            "metric": "pooled relative L2 over all images; per-image max/p95; Pearson; AbsRel and delta<1.25 after "
                      "least-squares scale-and-shift alignment",
            "backend": "ai_edge_litert CompiledModel / executorch.runtime, CPU, 2 threads",
            "per_file": "`parity`: committed benchmark data (edgedepth validate), only for files whose sha256 matches",
            "build_gate": {
                "images": {"count": len(items), "sha256": image_set_hash(items) if items else None,
                           "set": "the builder's own photos" if recipe.parity_folder else
                           "default (bundled natural photos, deterministic views)"},
                "fp32": f"pooled rel-L2 <= {FP32_GATE_FACTOR:g} x PyTorch FP32's own rel-L2 vs float64 (same build)",
                "quantized": f"pooled rel-L2 <= {INT8_GATE_REL_L2:g}",
                "not_gated": not_gated,
                "measured_values": f"{BUILD_REPORT} (machine-dependent, not listed in this manifest)"}},
    }


def _published_checkpoint(ckpt) -> dict:
    """The checkpoint's provenance as published: a local checkpoint by its files' names and SHA-256s and its state
    dict's, never its path."""
    from ..checkpoint import state_dict_digest

    ck = ckpt.provenance()
    if ckpt.source == "local":
        ck["name"] = "a local checkpoint"
    return {**ck, "state_dict_sha256": state_dict_digest(ckpt.model)}


def _published_overrides(recipe: Recipe, ckpt) -> dict:
    """:attr:`Recipe.overrides` as a published file records them: a local checkpoint or photo folder as the
    placeholders the card explains (their SHA-256s are published beside them)."""
    o = recipe.overrides
    if "model" in o and ckpt.source == "local":
        o["model"] = LOCAL_MODEL
    if o.get("parity_folder"):
        o["parity_folder"] = LOCAL_IMAGES
    return o


def _is_carried(path: str) -> bool:
    """Whether ``path`` is a recipe edgedepth carries (the Rebuild line names it by name), not the user's file."""
    from .. import resources

    own = resources.path("recipes", os.path.basename(path))
    return os.path.isfile(own) and os.path.samefile(own, path)


def _write_folder_texts(staging: str, manifest: dict, gate: "_Gate") -> None:
    """manifest.json, then the card generated from it, LICENSE, NOTICE, .gitattributes (model files to Git LFS on the
    Hub: :mod:`.hub`), the manifest again with those listed, and the build report (this machine's measurements, not
    listed)."""
    mf.write(staging, manifest)
    _write_text(os.path.join(staging, "README.md"), render_model_card(mf.load(staging)))
    _write_text(os.path.join(staging, "LICENSE"), _license_text(manifest["model"]["license"]))
    _write_text(os.path.join(staging, "NOTICE"), _notice_text(manifest))
    hub.write_gitattributes(staging)
    mf.write(staging, manifest | {"files": manifest["files"] + _text_entries(staging)})
    _write_text(os.path.join(staging, BUILD_REPORT), json.dumps(gate.summary(), indent=2, sort_keys=True) + "\n")


class _Gate:
    """Build-time parity on this machine: fails the build when a file is out of tolerance; values go to the report.
    Every output of the file is gated (``reference``: a ``DepthModule`` with the family's ``outputs``): the depth, and
    Depth Anything 3's confidence, each by its own FP32 noise."""
    def __init__(self, reference, items, step, pictures: str | None = None):
        self.reference, self.items, self.step = reference, items, step
        self.pictures = pictures        # a folder for each file's worst photo side by side (the user's own photos)
        self.noise: dict[str, dict[str, float]] = {}    # {size: {role: PyTorch FP32 vs float64 rel-L2}}
        self.report: dict[str, dict] = {}

    def check(self, art, precision: str, size: tuple[int, int], rel: str | None = None) -> None:
        """Parity of ``art`` (a :class:`formats.Artifact`: not described or hashed again) on the CPU."""

        if not self.items:
            return
        rel = rel or art.name
        key = f"{size[0]}x{size[1]}"
        if key not in self.noise:
            self.noise[key] = fp32_noise_by_output(self.reference, preprocess(self.items[0].load(), size))
        self.step(f"parity {rel} ({len(self.items)} images)")
        (row,) = validate([art], [REFERENCE_BACKEND], self.reference, self.items)
        if row["status"] != "ok":
            raise EdgedepthError(f"parity gate: {rel} failed on the CPU: {row['error']}")
        report = self.report.setdefault(rel, {})
        report["worst_images"] = worst_images(row)
        if self.pictures:
            self.step(f"worst photo of {rel}")
            worst = next(it for it in self.items if it.id == report["worst_images"][0]["image"])
            name = mf.WORST_PNG[0] + rel.replace("/", "_") + mf.WORST_PNG[1]
            side_by_side(art, self.reference, worst, size, os.path.join(self.pictures, name))
            report["worst_picture"] = name
        for role, metrics in {"depth": row["metrics"], **row.get("output_metrics", {})}.items():
            got = metrics["pooled_rel_l2"]
            bound, ok = parity_gate(precision, got, self.noise[key][role])
            report["parity_cpu" if role == "depth" else f"parity_cpu_{role}"] = {**_round_metrics(metrics),
                                                                                  "gate_bound": bound}
            if not ok:
                what = rel if role == "depth" else f"{rel}'s {role}"
                raise EdgedepthError(f"parity gate: {what} is {got:.3e} from PyTorch FP32 (bound {bound:.3e}); "
                                     "not released")

    def summary(self) -> dict:
        return {"kind": "edgedepth.build_report", "environment": environment(threads=2),
                "pytorch_fp32_vs_float64_rel_l2": {k: v["depth"] for k, v in self.noise.items()},
                **({"pytorch_fp32_vs_float64_rel_l2_by_output": self.noise}
                   if any(len(v) > 1 for v in self.noise.values()) else {}),
                "files": self.report,
                "note": "measured on the building machine; not part of the reproducible release (see manifest.json)"}


def _io(family, roles: tuple[str, ...], semantics: str):
    """``io(h, w, *names, fmt=..., **kw)``: :func:`manifest.io_contract` with the member's depth semantics and, for a
    model with more outputs than the depth (``roles``: ``Checkpoint.outputs``), those outputs as ``fmt``'s files name
    them, described by ``family.output_texts``."""
    def io(h: int, w: int, *names, fmt=None, **kw) -> dict:
        named = zip(roles, fmt.output_names(roles)) if fmt is not None else ()
        more = [{"role": r, "name": n, "semantics": family.output_texts[r]} for r, n in list(named)[1:]]
        return mf.io_contract(h, w, *names, semantics=semantics, more_outputs=more, **kw)
    return io


def _entry(path: str, exported, text: str, io, gate: "_Gate", step, gpu_check: bool = False, rel: str | None = None,
           roles: tuple[str, ...] = ("depth",)):
    """A model file's manifest entry: opened (described and hashed) once, its format's fields, the GPU check (formats
    that have one, when asked) and the parity gate (files this machine's runtime runs) on that one Artifact.
    ``roles``: the outputs the file must have (``Checkpoint.outputs``), which its entry describes."""
    art = formats.open_artifact(path)
    rel = rel or art.name
    if len(art.info["outputs"]) != len(roles):
        raise EdgedepthError(f"{rel}: {len(art.info['outputs'])} outputs, but its family's files have "
                             f"{len(roles)} ({', '.join(roles)}); not released")
    entry = art.format.release_entry(art, exported, text, functools.partial(io, fmt=art.format))
    if gpu_check and art.format.has_gpu_check:
        step(f"GPU check {rel}")
        g = art.gpu_check()
        if g.get("gpu_hazards"):
            raise EdgedepthError(f"{rel}: {g['gpu_hazards']} ops LiteRT's GPU accelerator computes wrongly although "
                                 "it delegates them (inspect shows them); not released")
        entry["gpu_fully_delegated"] = g["fully_delegated"]
        gate.report[rel] = {"gpu_check": {"adapter": (g["adapter"] or "").split(",")[0] or None, "error": g["error"]}}
    if art.format.runs_here(exported):
        gate.check(art, exported.precision, art.size, rel)
    return mf.artifact_entry(art, rel, **entry)


def _with_measurements(entry: dict, latency: dict, parity: dict) -> dict:
    return {**entry, "latency": latency.get(entry["sha256"], []), "parity": parity.get(entry["sha256"], [])}


def _text_entries(folder: str) -> list[dict]:
    """The card, licence, notice, .gitattributes and (with ONNX files) the transformers config files."""
    texts = (("README.md", "model card"), ("LICENSE", "license"), ("NOTICE", "notice"),
             (hub.GITATTRIBUTES, "git attributes"))
    return [mf.file_entry(folder, n, format=kind) for n, kind in texts + tuple(t for f in formats.FORMATS
                                                                                 for t in f.side_files)
            if os.path.exists(os.path.join(folder, n))]


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _model_info(ckpt, recipe: Recipe) -> tuple[dict, str | None]:
    """(the manifest's "model": what the files compute and under which licence, the base model).  The family member
    gives the architecture, output and licence; the lineage is :func:`_lineage`'s."""
    m = ckpt.member
    if m is None:
        raise EdgedepthError(f"{ckpt.name}: not a known {ckpt.family.card_title if ckpt.family else 'model'} "
                             "architecture, so its licence and output are unknown; release one of edgedepth.models' "
                             "members")
    base_model, own = _lineage(ckpt, recipe, m)
    info = {"family_member": m.name, "hub_id": m.hub_id, "kind": m.kind, "max_depth_m": m.max_depth,
            "license": m.license, "output_semantics": m.output_semantics}
    # a relative output that grows with distance (Depth Anything 3): the playground colours -depth; absent for V2
    return info | ({"larger_is_farther": True} if m.larger_is_farther else {}) | ({"user_model": True} if own else {}), \
        base_model


def _lineage(ckpt, recipe: Recipe, m) -> tuple[str | None, bool]:
    """(base model, whether the checkpoint is the user's own model).  A synthetic stand-in or the member's own hub
    checkpoint is the upstream model: the recipe must be that member's.  Any other checkpoint (a folder, a file,
    another hub id) is the user's own model -- unless ``--base-model`` names the member's upstream id, the user's word
    that it holds those weights: its base model is ``--base-model`` (or the recipe's, when not the member's; a hub id
    it was loaded from; else none).  Overriding a recipe's checkpoint with another one without saying what it is
    (``--name``) is refused: published as is, a fine-tune would be listed as a conversion of the upstream model."""
    upstream_id = m.hub_id.lower()
    base = recipe.base_model
    if ckpt.is_synthetic or (ckpt.source == "hf" and ckpt.name.lower() == upstream_id):
        if (base or "").lower() != upstream_id:
            own = ckpt.family.recipe_file(m)        # recipes are named after the member
            hint = f"use {own}" if os.path.isfile(os.path.join(os.path.dirname(recipe.path or "."),
                                                               os.path.basename(own))) else "no recipe releases it yet"
            raise EdgedepthError(f"recipe {os.path.basename(recipe.path) or recipe.name} is for {base}, but "
                                 f"--model {ckpt.name} is {m.name} ({m.hub_id}): {hint}")
        return base, False
    if (base or "").lower() == upstream_id:
        if "base_model" in recipe.given:
            return base, False
        if dict(recipe.declared).get("model") != recipe.model and "name" not in recipe.given:
            raise EdgedepthError(
                f"--model {ckpt.name} is not the recipe's checkpoint ({dict(recipe.declared).get('model')}): say what "
                f"it is -- your own model (e.g. a fine-tune): --name NAME [--base-model OWNER/NAME, the Hub model it "
                f"is]; {m.hub_id}'s own weights: --base-model {m.hub_id}", option="model")
        base = ckpt.name if ckpt.source == "hf" else None
    return base, True


CC_BY_NC_TEXT = """Creative Commons Attribution-NonCommercial 4.0 International (CC BY-NC 4.0)

The model weights these files are derived from are licensed by their authors under CC BY-NC 4.0:
https://creativecommons.org/licenses/by-nc/4.0/legalcode

You may share and adapt them for NON-COMMERCIAL purposes only, giving appropriate credit (see the model card's
citation), providing a link to the licence and indicating if changes were made (see NOTICE).  The full legal code is
at the address above (edgedepth builds offline and does not bundle it).
"""


def _license_text(license_id: str = "apache-2.0") -> str:
    if license_id == "cc-by-nc-4.0":
        return CC_BY_NC_TEXT
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return open(os.path.join(package, "data", "LICENSE-Apache-2.0.txt"), encoding="utf-8").read()


def _notice_text(manifest: dict) -> str:
    p = manifest["provenance"]
    ck = p["checkpoint"]
    src = f"{ck['name']}@{ck.get('revision')}" if ck["source"] == "hf" else (
        f"synthetic weights ({ck['name']}, seed {ck.get('seed')}) — NOT the trained model" if ck["source"] == "synthetic"
        else ck["name"])
    sizes = sorted({s for r in p["rewrites"].values() for s in r})
    info = manifest.get("model") or {}
    member = info.get("family_member", "small")
    family = release_family(info)[0]
    licence = ("licensed under the Apache License, Version 2.0" if info.get("license", "apache-2.0") == "apache-2.0"
               else "licensed under CC BY-NC 4.0 (non-commercial use only)")
    upstream = f"{family.card_title} {family.member_title(member)}"
    if info.get("user_model"):      # the user's own model: named first, the upstream family and licence credited
        src = f"a local checkpoint, state dict sha256 {ck['state_dict_sha256']}" if ck["source"] == "local" else src
        head = (f"This folder contains files derived from {manifest['name']} "
                f"(base model: {p['base_model'] or 'an unpublished checkpoint'}), a model of the\n{upstream} "
                f"architecture. {upstream} ({info['hub_id']}) is by its authors,\n{licence}; files derived from its "
                "weights carry the same licence.\n\n")
    else:
        head = f"This folder contains files derived from {upstream}\n(base model: {p['base_model']}), {licence}.\n\n"
    return (
        head + f"Weights used: {src}\n\n"
        "Modifications (made by edgedepth, " + p["versions"].get("edgedepth", "?") + "):\n"
        + "".join(fmt.notice for fmt in formats.FORMATS
                  if any(f.get("format") == fmt.name for f in manifest["files"]))
        + "- graph rewrites before conversion, each exact up to float rounding unless stated in the model card:\n"
        + "".join(f"  - {name}\n" for name in sizes)
        + f"- fixed input sizes {family.size_notice}.\n"
    )
