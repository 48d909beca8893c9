"""The release folder's README.md (a Hugging Face model card), generated from manifest.json only.

Every number in the card comes from the manifest; nothing is typed by hand.
"""

from __future__ import annotations

import dataclasses
import os
import shlex

from ..version import __version__
from ..formats import FORMATS, entry_format
from ..formats.base import CardContext, recommends, short_semantics
from ..models import DEFAULT_FAMILY, MEMBERS, Member, ModelFamily, family_of_member, member_of_hub_id
from ..verify.records import machine


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _e(x) -> str:
    return "–" if x is None else f"{x:.2e}"


def _area(size: str) -> tuple[int, int]:
    h, w = (int(v) for v in size.split("x"))
    return h * w, h


def _sizes_text(models: list[dict], ctx: CardContext) -> str:
    fixed = sorted({f["size"] for f in models if not f.get("dynamic_size")}, key=_area)
    t = f"fixed per `.tflite` / `.pte` file (in its name and the Files table: {', '.join(fixed)})."
    return t + "".join(fmt.card_sizes_note([f for f in models if entry_format(f) is fmt], ctx) for fmt in FORMATS)


def _how_to_run(c: "_Card") -> list[str]:
    """Each format's snippets (``Format.card_how_to``), in the card's order (``Format.card_order``)."""
    L = ["## How to run", "",
         "Each Python snippet runs as written inside this folder, with a photo named `photo.jpg` in it"
         + (f" (the transformers.js one: from the folder's parent, this folder saved as `{c.m['name']}/`; see its "
            "first lines)." if c.js else "."), ""]
    for fmt in sorted(FORMATS, key=lambda f: f.card_order):
        files = [f for f in c.models if entry_format(f) is fmt]
        L += fmt.card_how_to(files, c.ctx) if files else []
    return L


def _publish(c: "_Card") -> list[str]:
    """How this folder becomes the Hub model repository whose name is the release's (the transformers.js Hub form)."""
    repo = f"USER/{c.m['name']}"
    return ["## Publish", "",
            f"On the Hugging Face Hub this release is the model repository `{repo}` (USER: your Hub user or "
            f"organisation; `{c.m['name']}`: the release's name). From inside this folder:", "",
            f"- `edgedepth publish . {repo} --dry-run` lists each file and its address on the Hub and uploads "
            "nothing;",
            f"- then `edgedepth publish . {repo}` uploads the files `manifest.json` lists (`--create` for a repository "
            "that does not exist yet).", ""]


@dataclasses.dataclass(frozen=True)
class _Card:
    """What every section of the card reads, derived once from the manifest."""

    m: dict
    models: list[dict]          # .tflite, .pte and .onnx entries
    onnx_files: list[dict]
    tflites: list[dict]
    example: dict | None        # the FP32 float-input .tflite of the first size: the one the snippets run
    info: dict                  # the manifest's "model": family member, kind, licence, output semantics
    synthetic: bool
    family: ModelFamily         # the member's family: the card's title, paper, citation, tag
    member: Member | None       # None: a member this edgedepth does not know (the family's defaults then)

    @property
    def prov(self) -> dict:
        return self.m["provenance"]

    @property
    def metric(self) -> bool:
        return self.info["kind"] == "metric"

    @property
    def js(self) -> bool:
        """ONNX files transformers.js loads (dynamic size, a transformers config beside them): its tag and snippet."""
        return any(recommends(f, "transformers.js") for f in self.onnx_files)

    @property
    def nc(self) -> bool:
        return self.info["license"] != "apache-2.0"

    @property
    def gate(self) -> dict:
        return self.m.get("parity_method", {}).get("build_gate", {})

    @property
    def ctx(self) -> CardContext:
        """What the formats' card parts read: the release's name, the example, and what the build's gate checked."""
        return CardContext(self.m["name"], self.metric, self.example, short_semantics(self.info["output_semantics"]),
                           gate=bool(self.gate.get("images", {}).get("count")),
                           not_gated=tuple(self.gate.get("not_gated") or ()))


def _card(m: dict) -> _Card:
    prov = m["provenance"]
    models = [f for f in m["files"] if entry_format(f)]
    tflites = [f for f in models if entry_format(f).has_gpu_check]      # the LiteRT files: the card's example and GPU rows
    first_size = prov["recipe"]["sizes"][0]
    floats = [f for f in tflites if f["input"]["dtype"] == "float32"] or tflites
    example = next((f for f in floats if f["precision"] == "fp32" and f["size"] == first_size),
                   next((f for f in floats if f["precision"] == "fp32"), floats[0] if floats else None))
    info = m.get("model") or {"family_member": "small", "kind": "relative", "license": "apache-2.0",
                              "output_semantics": "relative inverse depth, larger = closer"}
    family, member = release_family(info)
    return _Card(m, models, [f for f in models if entry_format(f).hub_layout], tflites, example, info,
                 prov["checkpoint"]["source"] == "synthetic", family, member)


def release_family(info: dict) -> tuple[ModelFamily, Member | None]:
    """The family and member a manifest's "model" names (by hub id, else member name); an unknown member: the
    default family, None."""
    member = (member_of_hub_id(info["hub_id"]) if info.get("hub_id") else None) \
        or MEMBERS.get(info.get("family_member", "small"))
    return (family_of_member(member) if member else DEFAULT_FAMILY), member


def _front_matter(c: _Card) -> list[str]:
    # base_model_relation, one of the Hub's documented values (adapter, merge, quantized, finetune): "quantized" -- every
    # file holds the base model's own weights, converted (LiteRT, ExecuTorch, ONNX) and in part quantised (FP16, INT8)
    # with no training; "finetune" would claim training, "adapter" / "merge" describe other constructions.
    # The user's own model with no base model named (an unpublished checkpoint): no lineage claimed
    lineage = [f"base_model: {c.prov['base_model']}", "base_model_relation: quantized"] if c.prov["base_model"] else []
    L = ["---", f"license: {c.info['license']}", *lineage,
         "library_name: litert", "pipeline_tag: depth-estimation", "tags:", "  - depth-estimation",
         f"  - {c.family.hub_tag}", "  - litert", "  - tflite", "  - webgpu", "  - on-device"] \
        + (["  - onnx"] if c.onnx_files else []) + (["  - transformers.js"] if c.js else []) \
        + ["---", "", f"# {c.m['name']}", ""]
    if c.synthetic:
        L += ["> **These files were built from synthetic (seeded random) weights, not the trained checkpoint.** "
              + _synthetic_architecture(c), ""]
    if c.nc:
        L += ["> **Licence: CC BY-NC 4.0 — non-commercial use only** (the upstream weights' licence; see `LICENSE`).", ""]
    return L


def _synthetic_architecture(c: _Card) -> str:
    """The synthetic note's claim about the architecture: the member's own (``synthetic``: same graph, op counts,
    sizes of files) or a reduced stand-in (``synthetic-tiny``), from the family's table of synthetic names."""
    name = c.prov["checkpoint"]["name"]
    stand_in = c.family.synthetic.get(name)
    if c.member is not None and stand_in is not None and stand_in[1] == c.member.arch:
        return ("They have the exact architecture, graph, op counts and delegation of the real model, and their parity "
                "numbers are real, but their depth maps are meaningless. Rebuild with the real checkpoint to publish.")
    return (f"`{name}` is a reduced stand-in, not the real model's architecture: the files' sizes, op counts and any "
            "latency are not the real model's, and their depth maps are meaningless; their parity numbers are real "
            "measurements of these files. Rebuild with the real checkpoint to publish.")


def _about(c: _Card) -> list[str]:
    info, prov = c.info, c.prov
    member = c.family.member_title(info["family_member"])
    about = f"[{c.family.card_title}]({c.family.paper}) {member}: {c.family.card_about(info)}."
    if info.get("user_model"):      # the user's own model, on the upstream member's architecture (credited)
        base = prov["base_model"]
        about = (f"`{c.m['name']}` is converted from " + (_hub_link(base) if base else "a checkpoint not on the Hub")
                 + f" (state dict SHA-256 `{prov['checkpoint']['state_dict_sha256']}`), a model of the "
                 f"{c.family.card_title} {member} architecture, predicting {info['output_semantics']}. Upstream: "
                 f"{about} Upstream release: {_hub_link(info['hub_id'])}.")
    else:
        about += f" Base model: {_hub_link(prov['base_model'])}."
    L = ["## About the model", "", about, "",
         "## What changed in this conversion", "",
         "Converted from PyTorch to LiteRT with litert-torch after graph rewrites meant to let every op run on LiteRT's "
         "GPU (WebGPU) delegate and to remove redundant work (whether each file did compile fully on the GPU is in the "
         "Files table); each rewrite is meant to be exact up to float rounding"
         + ("; the FP32 files this build could run passed its parity gate at that level (Parity below)."
            if c.ctx.gate else "; this build ran no parity gate (0 parity images), so that is not checked here.")
         + " Rewrites applied:", ""]
    names = sorted({n for r in prov["rewrites"].values() for n in r})
    L += [f"- `{n}`" for n in names] + [""]
    quant = {f["precision"]: f["quantization"] for f in c.tflites if f.get("quantization")}
    if quant:
        L += ["Other precisions are made from the rewritten FP32 graph with `ai-edge-quantizer` recipes:", ""]
        L += [f"- {p}: {q}" for p, q in quant.items()] + [""]
    return L


def _hub_link(repo_id: str) -> str:
    return f"[`{repo_id}`](https://huggingface.co/{repo_id.split('@')[0]})"


def _which_file(c: _Card) -> list[str]:
    rec = c.m.get("recommended") or {}
    if not rec:
        return []
    uses = {"webgpu": "GPU / browser with WebGPU", "cpu": "CPU (native LiteRT)",
            "wasm": "browser without WebGPU (LiteRT.js wasm)", "smallest": "smallest download"}
    return ["## Which file to use", "", "| use | file | why |", "|---|---|---|"] \
        + [f"| {label} | `{rec[k]['path']}` | {rec[k]['why']} |" for k, label in uses.items() if k in rec] + [""]


def _inputs_outputs(c: _Card) -> list[str]:
    if not c.example:
        return []
    i, o = c.example["input"], c.example["output"]
    n = i["normalisation"]
    L = ["## Inputs and outputs", "",
         "| | name | shape | dtype | meaning |", "|---|---|---|---|---|",
         f"| input | `{i['name']}` | `[1, 3, H, W]` | {i['dtype']} | {n['color']}, ×{n['scale']}, minus mean "
         f"{n['mean']}, divided by std {n['std']}, {i['layout']}; resize the photo to H×W ({n['resize']}) |",
         *_output_rows(c.example), "",
         "H×W: " + _sizes_text(c.models, c.ctx) + " Signature `serving_default` (.tflite). Resize the "
         + ("outputs" if c.example.get("outputs") else "output") + " back to the photo's size for display.", ""]
    pixel_files = [f for f in c.tflites if f["input"]["dtype"] == "uint8"]
    if pixel_files:
        names = ", ".join(f"`{f['path']}`" for f in pixel_files)
        L += [f"Files ending `_u8in.tflite` ({names}) take the resized "
              "RGB pixels instead: input uint8 `[1, 3, H, W]`, values 0..255 as resized, NCHW; the graph scales and "
              "normalises (same mean/std). A quarter of the bytes to write per call: what the GPU files are for. "
              "Python: `x = np.ascontiguousarray(np.asarray(img, np.uint8).transpose(2, 0, 1)[None])`.", ""]
    return L


def _output_rows(example: dict) -> list[str]:
    """The I/O table's output rows: the depth, or every output in the file's order (a manifest ``outputs`` list: Depth
    Anything 3's depth and confidence) with its index; each format names them its own way (the Files' manifest)."""
    outs = example.get("outputs")
    if not outs:
        o = example["output"]
        return [f"| output | `{o['name']}` | `[1, H, W]` | {o['dtype']} | {o['semantics']} |"]
    return [f"| output {i} ({o['role']}) | `{o['name']}` | `[1, H, W]` | {o['dtype']} | {o['semantics']} |"
            for i, o in enumerate(outs)]


def _files(c: _Card) -> list[str]:
    L = ["## Files", "", "| file | size | precision | input H×W | ops | fully on GPU / delegation | SHA-256 |",
         "|---|---|---|---|---|---|---|"]
    for f in c.models:
        size = f"any multiples of 14 ({c.ctx.checked_at(f)})" if f.get("dynamic_size") else f["size"]
        L.append(f"| `{f['path']}` | {_mb(f['bytes'])} | {f['precision']} | {size} | {f.get('ops', '–')} | "
                 f"{entry_format(f).card_delegation(f)} | `{f['sha256']}` |")
    return L + [""]


def _parity(c: _Card) -> list[str]:
    meth = c.m.get("parity_method", {})
    gate = meth.get("build_gate", {})
    rows = [(f, p) for f in c.models for p in f.get("parity", [])]
    L = ["## Parity with PyTorch", ""]
    if gate.get("images", {}).get("count"):
        img = gate["images"]
        skipped = [p for p in gate.get("not_gated") or [] if any(f["path"] == p for f in c.models)]
        report, _, why = gate["measured_values"].partition(" ")
        L += [("Every file" if not skipped else "Every file but " + ", ".join(f"`{p}`" for p in skipped))
              + f" passed the build's parity gate against {meth.get('reference')} on {img['count']} images "
              f"({img.get('set')}; set SHA-256 `{(img.get('sha256') or '')[:16]}…`): FP32 files {gate['fp32']}; "
              f"quantised files {gate['quantized']}"
              + (f" (their {gate['masks']})" if gate.get("masks") else "")
              + f". The values the build measured are in `{report}` {why}."
              + (f" Not gated: {', '.join(f'`{p}`' for p in skipped)} (the building machine's Python runtimes do "
                 "not run {})." .format("it" if len(skipped) == 1 else "them") if skipped else ""), ""]
    else:
        L += ["This build ran no parity gate (0 parity images).", ""]
    if rows:
        L += [f"Measured on the exact files above (matched by SHA-256; committed benchmark data). Metric: "
              f"{meth.get('metric')}.", "",
              "| file | images | pooled rel-L2 | max rel-L2 | Pearson | AbsRel (aligned) | δ<1.25 | CPU, threads |",
              "|---|---|---|---|---|---|---|---|"]
        for f, p in rows:
            L.append(f"| `{f['path']}` | {p['images']} | {_e(p['pooled_rel_l2'])} | {_e(p['max_rel_l2'])} | "
                     f"{p['pearson']:.6f} | {_e(p['aligned_absrel'])} | {p['aligned_delta1']:.4f} | "
                     f"{p.get('cpu')}, {p.get('threads')} |")
    else:
        L += ["No committed parity measurement matches these exact files (parity is shown only for files whose SHA-256 "
              "matches the file that was measured)."]
    return L + [""]


def _latency_row(f: dict, r: dict) -> str:
    mt = r["method"]
    peer = r.get("fastest_peer")
    vs = f"{peer['label']} {peer['median_ms']:.0f} ms (÷ {r['median_ms'] / peer['median_ms']:.2f})" if peer else "–"
    iqr = f"{r['p25_ms']:.1f}–{r['p75_ms']:.1f}" if r.get("p25_ms") is not None else "–"
    twin = " †" if r.get("timing_twin") else ""
    return (f"| `{f['path']}` | {r['backend']}{twin} | {r['median_ms']:.1f} | {iqr} | {machine(r)} | "
            f"{r.get('date') or '–'} | `{r['source']}` | {mt['rounds']} × ({mt['warmup']} + {mt['iters']}) | {vs} |")


def _latency(c: _Card) -> list[str]:
    lat = [(f, r) for f in c.models for r in f.get("latency", [])]
    L = ["## Latency", ""]
    if not lat:
        return L + ["No latency measured for these exact files (latency is read from committed benchmark data and shown "
                    "only for files whose SHA-256 matches the file that was timed)."]
    L += ["Measured on the exact files above (matched by SHA-256). Method: interleaved rounds × (warm-up + timed "
          "calls), timed = input write + synchronous invoke + output read; compile and preprocessing excluded. "
          "*Machine*: the GPU adapter, or the CPU at the run's thread count. *Source*: the measurement record's file "
          "under `benchmarks/results/` in edgedepth's repository, dated by its run.", "",
          "*Fastest peer*: the fastest path without edgedepth's files (plain LiteRT / `torch.onnx` exports in "
          "LiteRT, ONNX Runtime, OpenVINO; PyTorch eager), same precision, same machine, same run.", "",
          "| file | backend | median ms | IQR ms | machine | date | source | rounds × (warm-up + timed) "
          "| fastest peer |",
          "|---|---|---|---|---|---|---|---|---|"]
    L += [_latency_row(f, r) for f, r in lat]
    left = [(f, r) for f in c.models for r in f.get("latency_left_out", [])]
    L += ["", "One row per file, machine and backend: where committed records time the same file on the same machine "
          "and backend, only the newest is shown (by date; on the same date, the record the recipe lists later)"
          + ("; left out here: " + "; ".join(
              f"`{f['path']}` {r['backend']} on {r['machine']}, {r['median_ms']:.1f} ms in `{r['source']}` "
              f"({r.get('date') or 'undated'}; shown: `{r['kept']['source']}`, {r['kept']['date']})"
              if r.get("kept") else
              f"`{f['path']}` {r['backend']} on {r['machine']}, {r['median_ms']:.1f} ms in `{r['source']}` (undated)"
              for f, r in left) + "." if left else ".")]
    if any(r.get("timing_twin") for _, r in lat):
        L += ["", "† timed on a timing twin of the file: the same graph and ops with seeded weights (a call to the "
              "lent GPU carries at most 64 MiB); GPU latency does not depend on the weights' values."]
    return L


def _span(values: list[float], fmt: str) -> str:
    lo, hi = min(values), max(values)
    return format(lo, fmt) if format(lo, fmt) == format(hi, fmt) else f"{format(lo, fmt)}–{format(hi, fmt)}"


def _speed(pairs: list[tuple[dict, dict]], name: str) -> str:
    """``name`` against FP32 in time, from the Latency table's rows: per machine and backend, for each size where both
    files were timed in one run (same source), "k× faster" only where its interquartile range lies wholly below FP32's,
    "k× slower" where wholly above, else "not measurably faster" (the ranges overlap)."""
    verdicts: dict[tuple[str, str], list[str]] = {}
    for q, f in pairs:
        rows = {(r["source"], machine(r), r["backend"]): r for r in f.get("latency", [])}
        for r in q.get("latency", []):
            base = rows.get((r["source"], machine(r), r["backend"]))
            if base is None:
                continue
            key = (machine(r), r["backend"])
            nums = f"{r['median_ms']:.1f} vs {base['median_ms']:.1f} ms"
            if None in (r.get("p25_ms"), r.get("p75_ms"), base.get("p25_ms"), base.get("p75_ms")):
                v = f"{q['size']} not compared ({nums}, no IQR recorded)"
            elif r["p75_ms"] < base["p25_ms"]:
                v = f"{q['size']} {base['median_ms'] / r['median_ms']:.2f}× faster ({nums})"
            elif r["p25_ms"] > base["p75_ms"]:
                v = f"{q['size']} {r['median_ms'] / base['median_ms']:.2f}× slower ({nums})"
            else:
                v = f"{q['size']} not measurably faster ({nums}, IQRs overlap)"
            verdicts.setdefault(key, []).append(v)
    if not verdicts:
        timed = any(q.get("latency") for q, _ in pairs) and any(f.get("latency") for _, f in pairs)
        return (f"speed: {name} and FP32 files of one size were never timed in one run, so not compared" if timed
                else "speed: not measured for these files")
    return "speed against FP32 (same run, Latency table): " + "; ".join(
        f"on {m} ({b}): " + ", ".join(vs) for (m, b), vs in verdicts.items())


def _accuracy(c: _Card, pairs: list[tuple[dict, dict]]) -> str:
    """Pooled rel-L2 against PyTorch of the files and their FP32 twins, from the Parity table's rows measured in one
    record (same source); else what the build's gate bounds."""
    got = []
    for q, f in pairs:
        base = {r["source"]: r for r in f.get("parity", [])}
        got += [(r["pooled_rel_l2"], base[r["source"]]["pooled_rel_l2"]) for r in q.get("parity", [])
                if r["source"] in base and r.get("pooled_rel_l2") is not None
                and base[r["source"]].get("pooled_rel_l2") is not None]
    if got:
        return (f"pooled rel-L2 against PyTorch {_span([a for a, _ in got], '.1e')} where FP32's is "
                f"{_span([b for _, b in got], '.1e')} (Parity table, same record)")
    if all(c.ctx.gated(q["path"]) for q, _ in pairs):
        return f"accuracy: within the build's parity gate ({c.gate['quantized']}), not in a committed record"
    return "accuracy: not measured for these files"


def _against_fp32(c: _Card) -> list[str]:
    """Per format and quantised precision, what its files trade against the FP32 file of the same size and input
    (bytes, parity, latency), each from the numbers in the card's tables."""
    L = []
    for fmt in sorted(FORMATS, key=lambda f: f.card_order):
        files = [f for f in c.models if entry_format(f) is fmt and f["input"]["dtype"] == "float32"]
        fp32 = {(f["size"], f.get("backend")): f for f in files if f["precision"] == "fp32"}
        for p in sorted({f["precision"] for f in files} - {"fp32"}):
            pairs = [(f, fp32[f["size"], f.get("backend")]) for f in files
                     if f["precision"] == p and (f["size"], f.get("backend")) in fp32]
            if not pairs:
                continue
            name = f"{fmt.title} {p.upper()}"
            L.append(f"- {name} files against the FP32 file of the same size: "
                     f"{_span([q['bytes'] / f['bytes'] for q, f in pairs], '.0%')} of its bytes; "
                     f"{_accuracy(c, pairs)}; {_speed(pairs, name)}.")
    return L


def _limitations(c: _Card) -> list[str]:
    info, onnx_files = c.info, c.onnx_files
    dyn = [f for f in onnx_files if f.get("dynamic_size")]
    L = ["", "## Limitations", "",
         "- `.tflite` and `.pte`" + (" and `.onnx`" if onnx_files and not dyn else "") + " files: a fixed input size "
         "per file (the position embedding is frozen for that size: "
         + ", ".join(sorted({f["size"] for f in c.models if not f.get("dynamic_size")}, key=_area))
         + "); pick the file matching your aspect ratio or resize to it."
         + (f" The ONNX files take any height and width that are multiples of 14 ({c.ctx.checked_at(dyn[0])} only)."
            if dyn else ""),
         (f"- Metric depth in metres, clipped to 0..{info.get('max_depth_m')} m by the head; "
          + ("check it on your scenes and cameras." if info.get("user_model") else
             f"trained on {'indoor (Hypersim)' if 'indoor' in info['family_member'] else 'outdoor (Virtual KITTI 2)'} "
             "scenes: other scenes and cameras need checking.") if c.metric else
          "- Metres only with your camera's focal length: metres = output x focal / 300, focal in pixels at the "
          "file's input size (mean of fx and fy; the model's README); without it the depth is relative."
          if info["kind"] == "metric-focal" else
          "- Relative depth: scale and shift are unknown; do not read metres from it."),
         "- LiteRT's GPU delegate may compute in FP16 under its default precision; " + c.family.fp16_note
         + ". Set `enforce_f32=True` (see `recommended_runtime_options` in `manifest.json`).",
         *_against_fp32(c)]
    if c.synthetic:
        L += ["- Built from synthetic weights: depth output is meaningless (see the note at the top)."]
    return L


def _recipe_file(c: _Card) -> str:
    """The recipe that rebuilds the folder: the member's (recipes are named after it), else the default recipe's."""
    return c.family.recipe_file(c.member or DEFAULT_FAMILY.members["small"])


# The recipe's CLI overrides a release records (``provenance.recipe.overrides``) as `edgedepth release` options, in
# the order the Rebuild line gives them.
_REBUILD_OPTIONS = (("model", "--model", str), ("max_depth", "--max-depth", str), ("name", "--name", str),
                    ("base_model", "--base-model", lambda v: v or "none"), ("sizes", "--sizes", ",".join),
                    ("formats", "--formats", ",".join),
                    ("parity_folder", "--images", str),
                    ("parity_images", "--parity-images", lambda v: None if v is None else str(v)))   # None: --images


def rebuild_argv(m: dict, recipe_file: str) -> list[str]:
    """The `edgedepth release` command that rebuilds the release ``m`` (a manifest) byte for byte: its recipe by the
    name edgedepth carries it under (``recipe_file``'s stem: the same from a checkout and from the wheel), every
    override the build used, and ``--out`` the release's name (the folder's path does not change a byte)."""
    o = m["provenance"]["recipe"].get("overrides") or {}
    carried = m["provenance"]["recipe"].get("carried", True)     # the user's own recipe file: by its file name
    name = os.path.splitext(os.path.basename(recipe_file))[0] if carried else os.path.basename(recipe_file)
    argv = ["edgedepth", "release", "--recipe", name]
    for key, flag, text in _REBUILD_OPTIONS:
        if key in o and text(o[key]) is not None:
            argv += [flag, text(o[key])]
    if o.get("gpu_check") is False:
        argv.append("--no-gpu-check")
    return argv + ["--out", m["name"]]


def _provenance(c: _Card) -> list[str]:
    prov = c.prov
    ck, v = prov["checkpoint"], prov["versions"]
    recipe_file = "recipes/" + prov["recipe"]["file"] if prov["recipe"].get("file") else _recipe_file(c)
    gpu_checked = (prov["recipe"].get("overrides") or {}).get("gpu_check") is not False and c.tflites
    return ["", "## Provenance", "",
            f"- Checkpoint: {ck['name']}" + (f" @ `{ck['revision']}`" if ck.get("revision") else "")
            + (f" (synthetic, seed {ck['seed']})" if c.synthetic else ""),
            *(["- Weight files: " + ", ".join(f"`{k}` sha256 `{h}`" for k, h in ck["weight_files"].items())]
              if ck.get("weight_files") else []),
            f"- Recipe: `{prov['recipe']['name']}` sha256 `{prov['recipe']['sha256']}`, sizes "
            + ", ".join(prov["recipe"]["sizes"]),
            "- Versions: " + ", ".join(f"{k} {val}" for k, val in sorted(v.items())),
            *([f"- Checkpoint state dict sha256 `{ck['state_dict_sha256']}`"] if ck.get("state_dict_sha256") else []),
            f"- Rebuild: with edgedepth {__version__} and the pinned versions (`constraints.txt`) installed, "
            f"`{shlex.join(rebuild_argv(c.m, recipe_file))}` gives byte-identical files, manifest and card on any "
            "x86-64 machine"
            + (" with a Vulkan driver for the GPU delegation check (without one the Files table's GPU column differs)"
               if gpu_checked else "")
            + _placeholders(prov)
            + f"; `edgedepth verify {shlex.quote(c.m['name'])}` checks the folder against `manifest.json`.",
            "", "## Citation", "", "```bibtex", c.family.citation, "```", "", "## License", "",
            ("CC BY-NC 4.0, non-commercial use only" if c.nc else "Apache-2.0")
            + " (see `LICENSE`); modifications are listed in `NOTICE`.", ""]


# What a published file says instead of a path of the building machine (the Rebuild line's placeholders)
LOCAL_MODEL, LOCAL_IMAGES = "PATH", "DIR"


def _placeholders(prov: dict) -> str:
    """What the Rebuild line's placeholders stand for (a local checkpoint or photo folder: never its path)."""
    o = prov["recipe"].get("overrides") or {}
    said = ([f"`{o['model']}` is the checkpoint whose state dict SHA-256 is above"] if o.get("model") == LOCAL_MODEL else []) \
        + ([f"`{o['parity_folder']}` the photos whose set SHA-256 is in Parity"] if o.get("parity_folder") else [])
    return f" ({'; '.join(said)})" if said else ""


def render_model_card(m: dict) -> str:
    """The card, section by section (each a function of the manifest-derived :class:`_Card`)."""
    c = _card(m)
    how = _how_to_run(c) + _publish(c) if c.example else []
    return "\n".join(_front_matter(c) + _about(c) + _which_file(c) + _inputs_outputs(c) + _files(c) + how
                     + _parity(c) + _latency(c) + _limitations(c) + _provenance(c))
