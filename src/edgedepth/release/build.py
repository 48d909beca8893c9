"""Release folder: recipe -> exported files + manifest.json + generated model card + LICENSE/NOTICE.

The folder is built in a staging folder beside the target and renamed into place only when complete.  Everything the
manifest lists, and the manifest itself, is a function of (recipe, checkpoint, pinned versions, committed benchmark
data) and the same bytes on any x86-64 machine: no timestamps, no hostnames, no measured float.  Measurements depend on
the machine (parity at FP32 noise level moves with the CPU's kernels; latency always), so a build only *gates* on parity
(:func:`parity_gate`) and writes what it measured to ``build-report.json`` -- beside the manifest, not listed in it, and
ignored by ``verify``.  The manifest and model card carry parity and latency from committed benchmark JSON, and only
for files whose SHA-256 matches the file that was measured.

A build is a :class:`Plan` of independent jobs (:mod:`.jobs`: one export each, with its files' checks) that
:func:`.graph.run_graph` runs -- here one after another, or on a Ray cluster (:mod:`.executors`), each looked up
first in the build cache (:mod:`.cache`) -- and one assembly step that puts their outputs together in the recipe's
order (:func:`assemble`): the same bytes whichever way the jobs ran.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil

from .. import formats, interrupt
from ..errors import EdgedepthError
from ..images import image_set, image_set_hash
from ..models import APACHE, member_of_hub_id
from ..runtimes import REFERENCE_BACKEND
from ..verify import records
from . import graph, hub, manifest as mf, outdir
from .gate import (FP32_GATE_FACTOR, INT8_GATE_REL_L2, build_report, fp32_noise, fp32_noise_by_output,  # noqa: F401
                   gate_texts, io_of as _io, parity_gate)
from .jobs import JobSpec, mask_outputs, memory_bytes, versions as _versions
from .modelcard import LOCAL_IMAGES, LOCAL_MODEL, release_family, render_model_card
from .recipe import Recipe
from .recommend import recommend

PRESET_SIZES = ["518x686", "686x518", "518x518", "392x518", "252x252", "224x224"]
BUILD_REPORT = mf.BUILD_REPORT


def stage_count(recipe: Recipe, *, gpu_check: bool = True) -> int:
    """How many times ``build`` calls ``progress``: the progress bar's total (keep in step with build's ``step`` calls;
    a job found in the build cache makes its stages at once)."""
    return 2 + _licence_note(recipe) + sum(n for *_, n in _jobs(recipe, gpu_check))     # + load (+ licence), manifest


def job_count(recipe: Recipe) -> int:
    """How many jobs :func:`plan` lists for ``recipe``, without loading its checkpoint (a progress bar's total)."""
    return len(_jobs(recipe, False))


def _jobs(recipe: Recipe, gpu_check: bool) -> list[tuple]:
    """[(format, its recipe part, job, the job's progress steps)] of ``recipe``, in the manifest's order; a recipe with
    its own photos adds a step per gated file (its worst photo, pictured)."""
    gate = recipe.parity_images != 0
    out = []
    for fmt, part in recipe.parts:
        jobs = fmt.release_jobs(part, recipe.sizes, gate=gate, gpu_check=gpu_check)
        pictured = [0] * len(jobs)
        if gate and recipe.parity_folder:
            gated, plain = (fmt.release_jobs(part, recipe.sizes, gate=g, gpu_check=False) for g in (True, False))
            pictured = [g.stages - p.stages for g, p in zip(gated, plain)]
        out += [(fmt, part, job, job.stages + extra) for job, extra in zip(jobs, pictured)]
    return out


def _licence_note(recipe: Recipe) -> bool:
    """Whether the build names a non-commercial licence as a stage: the recipe's base model is a member's under one
    (a model of the user's own gets it from the card and NOTICE)."""
    member = member_of_hub_id(recipe.base_model or "")
    return member is not None and member.license != APACHE


@dataclasses.dataclass
class Plan:
    """One release of a build's job graph: its recipe, loaded checkpoint, gate photos and jobs (``specs``, in the
    order the manifest lists their files; ``stages``: each one's progress steps); ``staging``: where it is put
    together."""

    recipe: Recipe
    ckpt: object
    lineage: tuple[dict, str | None]        # (the manifest's "model", the base model): _model_info
    items: list
    specs: list[JobSpec]
    stages: list[int]
    staging: str = ""


def plan(recipe: Recipe, *, gpu_check: bool = True, release: str = "", step=lambda name: None) -> Plan:
    """Load the checkpoint of ``recipe`` and list its jobs (``release``: its name in a family build)."""
    from ..checkpoint import load_checkpoint, state_dict_digest

    ckpt = load_checkpoint(recipe.model, max_depth=recipe.max_depth)
    formats.check_exportable(ckpt.model)
    model_info, base_model = _model_info(ckpt, recipe)
    if model_info["license"] != "apache-2.0" and _licence_note(recipe):
        step(f"licence of {model_info['family_member']}: {model_info['license']} (non-commercial use only)")
    items = image_set(recipe.parity_folder, limit=recipe.parity_images) if recipe.parity_images != 0 else []
    digest, images = state_dict_digest(ckpt.model), image_set_hash(items) if items else None
    model = os.path.abspath(recipe.model) if os.path.exists(recipe.model) else recipe.model   # a worker's cwd differs
    pictures = bool(items and recipe.parity_folder)
    memory = memory_bytes(sum(p.numel() for p in ckpt.model.parameters()))
    specs, stages = [], []
    for _, part, job, n in _jobs(recipe, gpu_check):
        specs.append(JobSpec(release, job, part, model, recipe.max_depth, digest, ckpt.file_stem, recipe.rewrites,
                             gpu_check, images, pictures, model_info["output_semantics"],
                             recipe.name if model_info.get("user_model") else None, memory))
        stages.append(n)
    return Plan(recipe, ckpt, (model_info, base_model), items, specs, stages)


def build(recipe: Recipe, out_dir: str, *, gpu_check: bool = True, progress=None, force: bool = False,
          executor=None, cache=None, jobs_progress=None) -> dict:
    """Build the release folder ``out_dir`` from ``recipe`` (overrides applied: ``Recipe.with_overrides``); returns the
    manifest dict.  Steps: 1 load the checkpoint, 2 each format's jobs (``Format.release_jobs``: files exported,
    GPU-checked and parity-gated; in ``executor``, default this process, each looked up first in ``cache``, a
    :class:`.cache.BuildCache`), 3 manifest, card, licence, notice, build report; all in a staging folder swapped in
    atomically at the end.  ``force``: replace an earlier release even where its files were changed or added to.
    ``progress(stage)``: each stage (of a serial build); ``jobs_progress``: a :class:`.graph.JobCounts` callback."""
    from .executors import Serial

    step = interrupt.checking(progress)      # every stage start is a point where a swallowed Ctrl-C stops
    with outdir.staged(out_dir, force=force) as staging:      # checks, locks, swaps atomically; out_dir untouched on failure
        step(f"load {recipe.model}")                                                          # 1
        p = plan(recipe, gpu_check=gpu_check, step=step)
        p.staging = staging
        with (executor or Serial()) as ex:                                                     # 2
            outputs, where = graph.run_graph([p], ex, cache, step, jobs_progress)
        assemble(p, outputs[0], step, where)                                                   # 3
    return mf.load(out_dir)


def assemble(p: Plan, outputs: list, step, where: dict | None = None) -> dict:
    """Put a plan's job outputs (``graph.Output``, in ``p.specs`` order) into its staging folder with the manifest,
    card, licence, notice and build report; returns the manifest."""
    entries, by_format, files_report, noise, jobs = [], {}, {}, {}, []
    for spec, out in zip(p.specs, outputs):
        for rel in out.result["files"]:
            dst = os.path.join(p.staging, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            (shutil.copyfile if out.cached or out.filed else os.replace)(os.path.join(out.folder, rel), dst)
        entries += out.result["entries"]
        by_format.setdefault(spec.job.format, {}).update(out.result["rewrites"])
        files_report |= out.result["report"]
        for size, roles in out.result["noise"].items():
            noise.setdefault(size, roles)
        jobs.append({"job": spec.job.label, "key": spec.key, "cached": out.cached, **out.result["ran"]})
    interrupt.check()
    # the first format's (LiteRT's) rewrites per size
    rewrite_reports = next((by_format[f.name] for f, _ in p.recipe.parts if by_format.get(f.name)), {})
    measured = (records.read(p.recipe.latency_data, "latency"),      # committed measurement records
                records.read(p.recipe.parity_data, "parity", backend=REFERENCE_BACKEND))
    entries = [_with_measurements(e, *measured) for e in entries]    # committed records matching the bytes
    step("manifest, model card, license")
    manifest = _manifest(p.recipe, p.ckpt, p.lineage, entries, rewrite_reports, p.items)
    _write_folder_texts(p.staging, manifest, build_report(noise, files_report, jobs) | {"executor": where or {}})
    return manifest


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
                **gate_texts(mask_outputs(ckpt)),
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


def _write_folder_texts(staging: str, manifest: dict, report: dict) -> None:
    """manifest.json, then the card generated from it, LICENSE, NOTICE, .gitattributes (model files to Git LFS on the
    Hub: :mod:`.hub`), the manifest again with those listed, and the build report (this machine's measurements, not
    listed)."""
    mf.write(staging, manifest)
    _write_text(os.path.join(staging, "README.md"), render_model_card(mf.load(staging)))
    _write_text(os.path.join(staging, "LICENSE"), _license_text(manifest["model"]["license"]))
    _write_text(os.path.join(staging, "NOTICE"), _notice_text(manifest))
    hub.write_gitattributes(staging)
    mf.write(staging, manifest | {"files": manifest["files"] + _text_entries(staging)})
    _write_text(os.path.join(staging, BUILD_REPORT), json.dumps(report, indent=2, sort_keys=True) + "\n")


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
