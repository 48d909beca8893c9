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
import hashlib
import json
import os
import shutil

from .. import formats, interrupt
from ..errors import EdgedepthError
from ..images import image_set, image_set_hash
from ..models import APACHE, member_of_hub_id
from ..preprocess import parse_size, preprocess
from ..runtimes import BACKENDS as RUNTIME_BACKENDS, REFERENCE_BACKEND
from ..verify.bench import environment
from ..verify.validate import validate
from . import hub_files, manifest as mf, outdir
from .modelcard import render_model_card
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


def _committed_rows(paths, rows_of) -> dict[str, list[dict]]:
    """sha256 -> rows from committed report JSON files; ``rows_of(report, path)`` yields (sha256, row) pairs."""
    rows: dict[str, list[dict]] = {}
    for p in paths:
        if os.path.isfile(p):
            for sha, row in rows_of(json.load(open(p)), p):
                rows.setdefault(sha, []).append(row)
    return rows


def _parity_rows(paths: list[str]) -> dict[str, list[dict]]:
    """sha256 -> CPU parity rows from committed ``edgedepth validate --json`` reports."""
    def rows_of(rep, p):
        if rep.get("kind") == "edgedepth.precision_ladder":
            yield from _ladder_parity(rep, p)
            return
        for r in rep.get("results", []):
            if r.get("sha256") and r.get("metrics") and r.get("backend") == REFERENCE_BACKEND:
                yield r["sha256"], {
                    **_round_metrics(r["metrics"]), "backend": REFERENCE_BACKEND, "threads": rep["environment"].get("threads"),
                    "cpu": rep["environment"].get("cpu"), "reference": rep.get("reference", {}).get("name"),
                    "image_set_sha256": rep.get("image_set", {}).get("sha256"), "source": os.path.basename(p)}

    return _committed_rows(paths, rows_of)


def fp32_noise(module, x) -> float:
    """PyTorch FP32's own rel-L2 against a float64 run of the same module on ``x``: the scale of FP32 rounding."""
    import copy

    import numpy as np
    import torch

    with torch.inference_mode():
        y32 = module(torch.from_numpy(x)).double()
        y64 = copy.deepcopy(module).double()(torch.from_numpy(x).double())
    return float(np.linalg.norm((y32 - y64).numpy()) / np.linalg.norm(y64.numpy()))


def parity_gate(precision: str, rel_l2: float, noise: float) -> tuple[float, bool]:
    """(bound, passed) for a file's pooled rel-L2 against PyTorch FP32 (see FP32_GATE_FACTOR)."""
    bound = FP32_GATE_FACTOR * noise if precision == "fp32" else INT8_GATE_REL_L2
    return bound, rel_l2 <= bound


def _latency_rows(paths: list[str]) -> dict[str, list[dict]]:
    """sha256 -> latency rows from committed ``edgedepth bench --json`` reports and ``benchmarks/peers.py`` reports
    (whose rows also carry the fastest peer path of the same precision, same machine, same run)."""
    def rows_of(rep, p):
        if rep.get("kind") == "edgedepth.peers":
            yield from _peer_latency_rows(rep, p)
            return
        if rep.get("kind") == "edgedepth.precision_ladder":
            yield from _ladder_latency(rep, p)
            return
        if rep.get("kind") == "edgedepth.gpu_floor":            # benchmarks/gpu_floor.py: H200 timing twins
            yield from _gpu_floor_rows(rep, p)
            return
        if rep.get("kind") == "edgedepth.playground_latency":   # LiteRT.js wasm in headless chromium
            for f in rep["files"].values():
                if f.get("sha256"):
                    lo, hi = f["litertjs_p25_p75"]
                    yield f["sha256"], {
                        "backend": "litertjs-wasm", "median_ms": round(f["litertjs_wasm_median_ms"], 1),
                        "p25_ms": round(lo, 1), "p75_ms": round(hi, 1), "threads": f["runtime"].get("threads"),
                        "cpu": rep.get("cpu"), "gpu_adapter": None, "method": rep["method_counts"],
                        "source": os.path.basename(p)}
            return
        for v in rep.get("variants", {}).values():
            if v.get("sha256"):
                yield v["sha256"], {
                    "backend": rep.get("backend"), "median_ms": round(v["median_ms"], 2),
                    "p25_ms": round(v["p25_ms"], 2), "p75_ms": round(v["p75_ms"], 2),
                    "threads": rep["environment"].get("threads"), "cpu": rep["environment"].get("cpu"),
                    "gpu_adapter": rep["environment"].get("gpu_adapter"),
                    "method": {k: rep["method"][k] for k in ("rounds", "warmup", "iters")},
                    "source": os.path.basename(p)}

    return _committed_rows(paths, rows_of)


def _peer_latency_rows(rep: dict, p: str):
    env, rows = rep["environment"], rep["rows"]
    for r in rows.values():
        best = rep["summary"].get(r["precision"], {}).get("fastest_peer")
        if r["side"] == "ours" and r.get("sha256") and r.get("median_ms") and best:
            yield r["sha256"], {
                "backend": r["runner"], "median_ms": round(r["median_ms"], 2), "p25_ms": round(r["p25_ms"], 2),
                "p75_ms": round(r["p75_ms"], 2), "threads": rep["threads"], "cpu": env.get("cpu"), "gpu_adapter": None,
                "method": {k: rep["method"][k] for k in ("rounds", "warmup", "iters")}, "source": os.path.basename(p),
                "fastest_peer": {"label": rows[best]["label"], "median_ms": round(rows[best]["median_ms"], 2)}}


def _gpu_floor_rows(rep: dict, p: str):
    """GPU rows of ``benchmarks/gpu_floor.py`` for the release files its timing twins stand for (same graph, seeded
    weights: ``stands_for``); the call median (write + run + read), FP32 enforced or default precision."""
    backend = RUNTIME_BACKENDS.get(rep.get("backend"))
    fp32 = bool(backend and backend.gpu and not backend.reduced_precision)
    for f in rep["files"].values():
        if (f.get("stands_for") or {}).get("sha256") and "method_counts" in rep:
            ms = round(f["median_ms"]["call"], 2)
            yield f["stands_for"]["sha256"], {
                "backend": rep["backend"], "median_ms": ms, "p25_ms": None, "p75_ms": None, "threads": None,
                "cpu": None, "gpu_adapter": rep.get("device"), "method": rep["method_counts"],
                "source": os.path.basename(p), "timing_twin": True, **({"h200_gpu_fp32_median_ms": ms} if fp32 else {})}


def _ladder_parity(rep: dict, p: str):
    """CPU parity rows (110 images) of ``benchmarks/precision_ladder.py``'s report, per file sha256."""
    env = rep["environment"]
    for r in rep["rows"].values():
        if "pooled_rel_l2" in r.get("parity", {}):
            yield r["sha256"], {**_round_metrics(r["parity"]), "backend": "cpu", "threads": env.get("threads"),
                                "cpu": env.get("cpu"), "reference": rep["parity_method"]["reference"],
                                "image_set_sha256": rep["parity_method"]["image_set_sha256"],
                                "source": os.path.basename(p)}


def _ladder_latency(rep: dict, p: str):
    """CPU latency rows of the same report (+ the H200 GPU median of the graph, FP32 enforced, when measured)."""
    env, h200 = rep["environment"], rep.get("h200", {}).get("rows", {})
    for name, r in rep["rows"].items():
        if r.get("cpu_latency"):
            v = r["cpu_latency"]
            gpu = (h200.get(name) or {}).get("gpu")
            yield r["sha256"], {
                "backend": "cpu", "median_ms": round(v["median_ms"], 2), "p25_ms": round(v["p25_ms"], 2),
                "p75_ms": round(v["p75_ms"], 2), "threads": env.get("threads"), "cpu": env.get("cpu"),
                "gpu_adapter": None, "method": {k: rep["cpu_method"][k] for k in ("rounds", "warmup", "iters")},
                "source": os.path.basename(p),
                **({"h200_gpu_fp32_median_ms": round(gpu["median_ms"], 2)} if gpu else {})}


def _round_metrics(m: dict) -> dict:
    return {k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in m.items()}


def stage_count(recipe: Recipe, *, gpu_check: bool = True) -> int:
    """How many times ``build`` calls ``progress``: the progress bar's total (keep in step with build's ``step`` calls)."""
    gate = recipe.parity_images != 0
    member = member_of_hub_id(recipe.base_model)
    n = 2 + (member is not None and member.license != APACHE)          # load (+ licence note), manifest
    n += len(recipe.sizes) * (1 + len(recipe.litert_precisions) * (gpu_check + gate))
    if recipe.litert_pixel_input:
        n += 1 + len(recipe.litert_pixel_input) * (gpu_check + gate)
    et = recipe.executorch
    if et:
        n += len(et.sizes) * (1 + len(et.precisions) * ("xnnpack" in et.backends) * gate)
    if recipe.onnx_precisions:
        n += 1 + len(recipe.onnx_precisions) * gate
    return n


def build(recipe: Recipe, out_dir: str, *, gpu_check: bool = True, progress=None) -> dict:
    """Build the release folder ``out_dir`` from ``recipe`` (overrides applied: ``Recipe.with_overrides``); returns the
    manifest dict.  Steps: 1 load the checkpoint, 2 LiteRT files per size, 3 ExecuTorch files, 4 ONNX files (each file
    parity-gated as it is made), 5 manifest, card, licence, notice, build report; all in a staging folder swapped in
    atomically at the end."""
    from ..checkpoint import DepthModule, load_checkpoint

    step = interrupt.checking(progress)      # every stage start is a point where a swallowed Ctrl-C stops
    sizes = list(recipe.sizes)
    with outdir.staged(out_dir) as staging:      # checks, locks, swaps atomically; out_dir untouched on failure
        step(f"load {recipe.model}")                                                          # 1
        ckpt = load_checkpoint(recipe.model)
        model_info = _model_info(ckpt, recipe)
        if model_info["license"] != "apache-2.0":
            step(f"licence of {model_info['family_member']}: {model_info['license']} (non-commercial use only)")
        io = lambda h, w, *names, **kw: mf.io_contract(h, w, *names, semantics=model_info["output_semantics"], **kw)  # noqa: E731
        items = image_set(limit=recipe.parity_images) if recipe.parity_images else []
        gate = _Gate(DepthModule(ckpt.model), items, step)
        measured = (_latency_rows(recipe.latency_data), _parity_rows(recipe.parity_data))
        entries, rewrite_reports = _litert_entries(recipe, ckpt, gate, staging, step, io, gpu_check)     # 2
        if recipe.executorch:                                                                  # 3
            entries += _executorch_entries(recipe.executorch, ckpt, gate, staging, step, io)
        if recipe.onnx_precisions:                                                             # 4
            entries += _onnx_entries(recipe.onnx_precisions, sizes[0], ckpt, gate, staging, step, io)
        entries = [_with_measurements(e, *measured) for e in entries]    # committed records matching the bytes
        step("manifest, model card, license")                                                  # 5
        manifest = _manifest(recipe, ckpt, model_info, entries, rewrite_reports, items)
        _write_folder_texts(staging, manifest, gate)
    return mf.load(out_dir)


def _litert_entries(recipe: Recipe, ckpt, gate: "_Gate", staging: str, step, io, gpu_check: bool):
    """The .tflite files of every size (+ the uint8-input GPU files at the first size), GPU-checked and parity-gated as
    they are made: (manifest entries, {size: rewrites applied})."""
    sizes = list(recipe.sizes)
    entries, rewrite_reports = [], {}
    for text in sizes:
        h, w = parse_size(text)
        step(f"rewrites + export {text}")
        files = formats.export(ckpt.model, h, w, staging, target_name="litert", precisions=recipe.litert_precisions,
                               rewrites=recipe.rewrites, stem=ckpt.file_stem)
        rewrite_reports[text] = files[0].rewrites
        if recipe.litert_pixel_input and text == sizes[0]:   # the GPU files: uint8 pixels in (formats.tflite)
            step(f"rewrites + export {text}, uint8 pixel input")
            files += formats.export(ckpt.model, h, w, staging, target_name="litert",
                                    precisions=recipe.litert_pixel_input, rewrites=recipe.rewrites,
                                    stem=ckpt.file_stem, input_dtype="uint8")
        entries += [_entry(f.path, f, text, io, gate, step, gpu_check) for f in files]
    return entries, rewrite_reports


def _manifest(recipe: Recipe, ckpt, model_info: dict, entries: list[dict], rewrite_reports: dict, items) -> dict:
    """manifest.json's content (its files: the model files; the text files are added once written)."""
    from ..checkpoint import state_dict_digest

    sizes = list(recipe.sizes)
    return {
        "name": recipe.name,
        "model": model_info,
        "files": entries,
        "recommended": recommend(entries, sizes[0], INT8_GATE_REL_L2),
        "provenance": {
            "checkpoint": {**ckpt.provenance(), "state_dict_sha256": state_dict_digest(ckpt.model)},
            "base_model": recipe.base_model,
            "recipe": {"name": recipe.name, "sha256": recipe.sha256, "sizes": sizes},
            "rewrites": rewrite_reports, "versions": _versions(),
        },
        "parity_method": {
            "reference": "PyTorch eager (transformers) FP32 on the same preprocessed inputs, CPU",
            "metric": "pooled relative L2 over all images; per-image max/p95; Pearson; AbsRel and delta<1.25 after "
                      "least-squares scale-and-shift alignment",
            "backend": "ai_edge_litert CompiledModel / executorch.runtime, CPU, 2 threads",
            "per_file": "`parity`: committed benchmark data (edgedepth validate), only for files whose sha256 matches",
            "build_gate": {
                "images": {"count": len(items), "sha256": image_set_hash(items) if items else None,
                           "set": "default (bundled natural photos, deterministic views)"},
                "fp32": f"pooled rel-L2 <= {FP32_GATE_FACTOR:g} x PyTorch FP32's own rel-L2 vs float64 (same build)",
                "quantized": f"pooled rel-L2 <= {INT8_GATE_REL_L2:g}",
                "measured_values": f"{BUILD_REPORT} (machine-dependent, not listed in this manifest)"}},
    }


def _write_folder_texts(staging: str, manifest: dict, gate: "_Gate") -> None:
    """manifest.json, then the card generated from it, LICENSE, NOTICE, the manifest again with those listed, and the
    build report (this machine's measurements, not listed)."""
    mf.write(staging, manifest)
    _write_text(os.path.join(staging, "README.md"), render_model_card(mf.load(staging)))
    _write_text(os.path.join(staging, "LICENSE"), _license_text(manifest["model"]["license"]))
    _write_text(os.path.join(staging, "NOTICE"), _notice_text(manifest))
    mf.write(staging, manifest | {"files": manifest["files"] + _text_entries(staging)})
    _write_text(os.path.join(staging, BUILD_REPORT), json.dumps(gate.summary(), indent=2, sort_keys=True) + "\n")


class _Gate:
    """Build-time parity on this machine: fails the build when a file is out of tolerance; values go to the report."""
    def __init__(self, reference, items, step):
        self.reference, self.items, self.step = reference, items, step
        self.noise: dict[str, float] = {}
        self.report: dict[str, dict] = {}

    def check(self, art, precision: str, size: tuple[int, int], rel: str | None = None) -> None:
        """Parity of ``art`` (a :class:`formats.Artifact`: not described or hashed again) on the CPU."""

        if not self.items:
            return
        rel = rel or art.name
        key = f"{size[0]}x{size[1]}"
        if key not in self.noise:
            self.noise[key] = fp32_noise(self.reference, preprocess(self.items[0].load(), size))
        self.step(f"parity {rel} ({len(self.items)} images)")
        (row,) = validate([art], [REFERENCE_BACKEND], self.reference, self.items)
        if row["status"] != "ok":
            raise EdgedepthError(f"parity gate: {rel} failed on the CPU: {row['error']}")
        got = row["metrics"]["pooled_rel_l2"]
        bound, ok = parity_gate(precision, got, self.noise[key])
        self.report.setdefault(rel, {})["parity_cpu"] = {**_round_metrics(row["metrics"]), "gate_bound": bound}
        if not ok:
            raise EdgedepthError(f"parity gate: {rel} is {got:.3e} from PyTorch FP32 (bound {bound:.3e}); not released")

    def summary(self) -> dict:
        return {"kind": "edgedepth.build_report", "environment": environment(threads=2),
                "pytorch_fp32_vs_float64_rel_l2": self.noise, "files": self.report,
                "note": "measured on the building machine; not part of the reproducible release (see manifest.json)"}


def _entry(path: str, exported, text: str, io, gate: "_Gate", step, gpu_check: bool = False, rel: str | None = None):
    """A model file's manifest entry: opened (described and hashed) once, its format's fields, the GPU check (formats
    that have one, when asked) and the parity gate (files this machine's runtime runs) on that one Artifact."""
    art = formats.open_artifact(path)
    rel = rel or art.name
    entry = art.format.module.release_entry(art, exported, text, io)
    if gpu_check and art.format.gpu_check:
        step(f"GPU check {rel}")
        g = art.gpu_check()
        if g.get("gpu_hazards"):
            raise EdgedepthError(f"{rel}: {g['gpu_hazards']} ops LiteRT's GPU accelerator computes wrongly although "
                                 "it delegates them (inspect shows them); not released")
        entry["gpu_fully_delegated"] = g["fully_delegated"]
        gate.report[rel] = {"gpu_check": {"adapter": (g["adapter"] or "").split(",")[0] or None, "error": g["error"]}}
    if art.format.module.runs_here(exported):
        gate.check(art, exported.precision, art.size, rel)
    return mf.artifact_entry(art, rel, **entry)


def _with_measurements(entry: dict, latency: dict, parity: dict) -> dict:
    return {**entry, "latency": latency.get(entry["sha256"], []), "parity": parity.get(entry["sha256"], [])}


def _executorch_entries(cfg, ckpt, gate: _Gate, staging: str, step, io) -> list[dict]:
    """ExecuTorch .pte files per the recipe; XNNPACK files pass the parity gate (the runtime here runs only XNNPACK)."""
    entries = []
    for text in cfg.sizes:
        h, w = parse_size(text)
        step(f"ExecuTorch {text}: {', '.join(cfg.backends)}")
        files = formats.export(ckpt.model, h, w, staging, target_name="executorch", precisions=cfg.precisions,
                               backends=cfg.backends, stem=ckpt.file_stem)
        entries += [_entry(f.path, f, text, io, gate, step) for f in files]
    return entries


def _onnx_entries(precisions, text: str, ckpt, gate: _Gate, staging: str, step, io) -> list[dict]:
    """ONNX files with dynamic height and width in the onnx-community / transformers.js layout (``ONNX_LAYOUT``, with
    ``config.json`` and ``preprocessor_config.json``), parity-gated on ONNX Runtime (CPU) at the release's first size
    (the size the files record as edgedepth's)."""
    h, w = parse_size(text)
    step(f"ONNX {text}: {', '.join(precisions)}")
    work = os.path.join(staging, ".onnx-export")
    files = formats.export(ckpt.model, h, w, work, target_name="onnx", precisions=precisions, dynamic=True)
    entries = []
    for f in files:
        rel = hub_files.ONNX_LAYOUT[f.precision]
        os.makedirs(os.path.dirname(os.path.join(staging, rel)), exist_ok=True)
        os.replace(f.path, os.path.join(staging, rel))
        entries.append(_entry(os.path.join(staging, rel), f, text, io, gate, step, rel=rel))
    shutil.rmtree(work, ignore_errors=True)
    _write_text(os.path.join(staging, hub_files.CONFIG), hub_files.config_json(ckpt.model))
    _write_text(os.path.join(staging, hub_files.PREPROCESSOR_CONFIG), hub_files.preprocessor_config_json())
    return entries


def _text_entries(folder: str) -> list[dict]:
    """The card, licence, notice and (with ONNX files) the transformers config files."""
    return [mf.file_entry(folder, n, format=fmt) for n, fmt in
            (("README.md", "model card"), ("LICENSE", "license"), ("NOTICE", "notice"),
             (hub_files.CONFIG, "transformers config"), (hub_files.PREPROCESSOR_CONFIG, "preprocessor config"))
            if os.path.exists(os.path.join(folder, n))]


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def _model_info(ckpt, recipe: Recipe) -> dict:
    """What the files compute and under which licence: the family member (edgedepth.models), which must be the one
    the recipe is for (its card, licence and measured data are that member's)."""
    m = ckpt.member
    if m is None:
        raise EdgedepthError(f"{ckpt.name}: not a known Depth Anything V2 architecture, so its licence and output "
                             "are unknown; release one of edgedepth.models' members")
    if m.hub_id.lower() != recipe.base_model.lower():
        own = os.path.join("recipes", m.file_stem.replace("_", "-") + ".py")   # recipes are named after the stem
        hint = f"use {own}" if os.path.isfile(os.path.join(os.path.dirname(recipe.path or "."), os.path.basename(own))) \
            else "no recipe releases it yet"
        raise EdgedepthError(f"recipe {os.path.basename(recipe.path) or recipe.name} is for {recipe.base_model}, but "
                             f"--model {ckpt.name} is {m.name} ({m.hub_id}): {hint}")
    return {"family_member": m.name, "hub_id": m.hub_id, "kind": m.kind, "max_depth_m": m.max_depth,
            "license": m.license, "output_semantics": m.output_semantics}


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
    licence = ("licensed under the Apache License, Version 2.0" if info.get("license", "apache-2.0") == "apache-2.0"
               else "licensed under CC BY-NC 4.0 (non-commercial use only)")
    return (
        f"This folder contains files derived from Depth Anything V2 {member.replace('-', ' ').title()}\n"
        f"(base model: {p['base_model']}), {licence}.\n\n"
        f"Weights used: {src}\n\n"
        "Modifications (made by edgedepth, " + p["versions"].get("edgedepth", "?") + "):\n"
        + "".join(fmt.notice for fmt in formats.FORMATS.values()
                  if any(f.get("format") == fmt.name for f in manifest["files"]))
        + "- graph rewrites before conversion, each exact up to float rounding unless stated in the model card:\n"
        + "".join(f"  - {name}\n" for name in sizes)
        + "- fixed input sizes (position embedding interpolated once per size, bicubic, as transformers does).\n"
    )
