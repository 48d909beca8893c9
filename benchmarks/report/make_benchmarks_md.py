"""Generate the benchmark pages (docs/benchmarks/*.md, one per topic, with their plots), BENCHMARKS.md (the topics'
answers, pointing to the pages) and the README's measured block from the JSON in benchmarks/results/ (never edit
them by hand).

    .venv/bin/python benchmarks/report/make_benchmarks_md.py
"""

from __future__ import annotations

import json
import os
import sys

from edgedepth.verify.reports import bench_markdown, validate_markdown
from md_browser import section_playground
from md_common import R, load
from md_da3 import (gpu_summary_lines as da3_gpu_summary, section_da3, section_da3_gpu, section_da3_vs_v2,
                    summary_lines as da3_summary, vs_v2_summary_lines as da3_vs_v2_summary)
from md_family import section_family, summary_lines as family_summary
from md_gpu import plot as gpu_plot, section_gpu_attribution, summary_lines as gpu_summary
from md_gpu_truth import (section_browser_h200, section_cpu_int8_xeon, section_gpu_hazards, section_gpu_limit,
                          section_gpu_options, section_webcam_gpu_frames, section_webcam_overlap,
                          summary_lines as truth_summary)
from md_hostile import section_hostile, section_hostile_items
from md_onnx import section_onnx_dynamic, summary_lines as onnx_summary
from md_packaging import (section_cluster_builds, section_cluster_builds_small, section_finetune_formats,
                          section_job_costs, section_predict_dynamic, section_python_versions, section_wheel)
from md_ladder import plot as ladder_plot, section_precision_ladder, summary_lines as ladder_summary
from md_peers import (section_onnx_rewrites, section_peers, section_which_file, summary_lines as peer_summary,
                      which_file_rows)
from md_tjs import section_tjs_preprocessing
from pages import DOCS, Topic, documents, nav_problem, orphans

P = "depth_anything_v2_small_518x686"



def env_line(env):
    v = env.get("versions", {})
    when = f" (measured {env['date']})" if env.get("date") else ""
    return (f"Machine: {env.get('cpu')}, {env.get('cores')} cores{when}; " +
            ", ".join(f"{k} {val}" for k, val in sorted(v.items())))


def section_ops(L):
    files = {k: load(f"inspect_{P}_{k}.json") for k in ("fp32_plain", "fp32", "int8_plain", "int8")}
    if not all(files.values()):
        return
    L += ["## Op count and GPU delegation (full synthetic model, 518×686)", "",
          "From `edgedepth inspect --json` (GPU check: compiled on LiteRT's GPU accelerator alone, SwiftShader Vulkan on "
          "this CPU machine).", "",
          "| file | ops | fully on GPU | ops falling back | GPU compile error |", "|---|---|---|---|---|"]
    for k, info in files.items():
        g = info["gpu"]
        L.append(f"| `{info['file']}` | {info['ops']} | {'yes' if g['fully_delegated'] else '**no**'} | "
                 f"{g['cpu_ops'] if g['cpu_ops'] is not None else '–'} | {g['error'] or '–'} |")
    ops = sorted(set(files["fp32_plain"]["op_histogram"]) | set(files["fp32"]["op_histogram"]),
                 key=lambda o: (-files["fp32_plain"]["op_histogram"].get(o, 0), o))   # ties by name: stable output
    L += ["", "Op histogram, FP32, plain → optimised:", "", "| op | plain | optimised | Δ |", "|---|---|---|---|"]
    for o in ops:
        a, b = files["fp32_plain"]["op_histogram"].get(o, 0), files["fp32"]["op_histogram"].get(o, 0)
        L.append(f"| {o} | {a} | {b} | {b - a:+d} |")
    L.append(f"| **total** | **{files['fp32_plain']['ops']}** | **{files['fp32']['ops']}** | "
             f"**{files['fp32']['ops'] - files['fp32_plain']['ops']:+d}** |")
    L += ["", "FULLY_CONNECTED variants (the LiteRT #9481 pattern is `keep_num_dims=False rank 3->2`):", ""]
    for k in ("fp32_plain", "fp32"):
        L.append(f"- {k}: " + "; ".join(f"{n}× {v}" for v, n in files[k]["fc_variants"].items()))
    L.append("")


def section_ablation(L):
    a = load("rewrite_ablation.json")
    if not a:
        return
    m = a["method"]
    L += ["## Effect of each rewrite (cumulative, FP32, 518×686)", "",
          f"Each row adds one rewrite to the pipeline (`benchmarks/rewrite_ablation.py`). CPU latency: ai_edge_litert, "
          f"2 threads, {m['rounds']} interleaved rounds × ({m['warmup']} warm-up + {m['iters']} timed calls), all "
          "prefixes in one run.", "",
          "| step | ops | Δ ops | fully on GPU | CPU median ms | ÷ plain |", "|---|---|---|---|---|---|"]
    base_ops, base_ms = a["steps"][0]["ops"], a["steps"][0]["cpu_median_ms"]
    prev = base_ops
    for s in a["steps"]:
        L.append(f"| {s['label']} | {s['ops']} | {s['ops'] - prev:+d} | {'yes' if s['gpu_fully_delegated'] else 'no'} | "
                 f"{s['cpu_median_ms']:.0f} | {s['cpu_median_ms'] / base_ms:.3f} |")
        prev = s["ops"]
    L += ["", env_line(a["environment"]), ""]


def section_cpu_latency(L):
    b = load("cpu_latency.json")
    if not b:
        return
    v = b["variants"]
    def med(name):
        return next(s["median_ms"] for n, s in v.items() if n == name)
    L += ["## CPU latency (full synthetic model, 518×686)", "",
          "`edgedepth bench … --torch synthetic --threads 2` — variants interleaved within each round (order rotated "
          "per round); timed call = input write + synchronous invoke + output read; compile excluded.", "",
          bench_markdown(b, baseline=f"{P}_fp32_plain.tflite"), ""]
    try:
        r32 = med(f"{P}_fp32.tflite") / med(f"{P}_fp32_plain.tflite")
        r8 = med(f"{P}_int8.tflite") / med(f"{P}_int8_plain.tflite")
        L += [f"**Optimised ÷ plain (same run): FP32 {r32:.3f}, INT8 {r8:.3f}.**", ""]
    except StopIteration:
        pass
    L += ["![CPU latency](docs/cpu_latency.png)", "", env_line(b["environment"]), ""]


def _floor_rows(v: dict, precs, label) -> list[str]:
    """Table rows plain / optimised / floor per precision; ``label(key, stats)`` names the row."""
    rows = []
    for prec in precs:
        plain = v[f"{prec}_plain"]["median_ms"]
        for k in (f"{prec}_plain", prec, f"{prec}_floor"):
            s = v[k]
            rows.append(f"| {label(k, s)} | {s['ops']} | {s['median_ms']:.0f} | {s['p25_ms']:.0f}–{s['p75_ms']:.0f} | "
                        f"{s['median_ms'] / plain:.3f} |")
    return rows


def section_latency_floor(L):
    f = load("latency_floor.json")
    if not f:
        return
    v, r, m = f["variants"], f["ratios"], f["method"]
    L += ["## How low can optimised ÷ plain go on this CPU? (latency floor)", "",
          "An exact rewrite can remove layout and elementwise work but not arithmetic: every file below has the same "
          f"**{v['fp32']['macs']['total'] / 1e9:.2f} G multiply-accumulates** (" +
          ", ".join(f"{k} {n / 1e9:.2f} G" for k, n in v["fp32"]["macs"].items() if k != "total") +
          ", counted by `edgedepth inspect`). The *floor* file is a timing device, not a model: the optimised graph with "
          "every encoder layer cut down to its GEMMs, attention core (BATCH_MATMUL, SOFTMAX, BATCH_MATMUL), GELU and "
          "residual ADDs — no LayerNorm, no head transposes — stem and DPT head unchanged "
          "(`benchmarks/latency_floor.py`). Its time is what any exact rewrite of the encoder could at best approach "
          f"with these XNNPACK kernels. ai_edge_litert CPU, 2 threads, {m['rounds']} interleaved rounds × "
          f"({m['warmup']} warm-up + {m['iters']} timed calls), all {len(v)} files in one run.", "",
          "| file | ops | median ms | IQR ms | ÷ plain (same precision) |", "|---|---|---|---|---|"]
    precs = [p for p in ("fp32", "int8") if p in r]
    L += _floor_rows(v, precs, lambda k, s: f"`{s['file']}`")
    t = f["target_ratio"]
    both = lambda key, fmt: ", ".join(f"{p.upper()} {format(r[p][key], fmt)}" for p in precs)   # noqa: E731
    L += ["", f"**Optimised ÷ plain: {both('optimised_over_plain', '.3f')}. Floor ÷ plain: "
              f"{both('floor_over_plain', '.3f')}** (target {t}). Optimised ÷ floor: {both('optimised_over_floor', '.3f')}; "
              f"the floor sustains {both('gmac_per_s_floor', '.0f')} G MAC/s on 2 threads."]
    miss = [p.upper() for p in precs if r[p]["floor_over_plain"] > t]
    if miss:
        L += ["", f"For {' and '.join(miss)} the floor itself is above {t}× the plain graph: on this CPU no exact "
                  "rewrite of the encoder can reach the target; only less arithmetic (a different model or precision) "
                  "could."]
    L += ["", env_line(f["environment"]), ""]
    d = load("cpu_h200_host.json")
    if d:
        dv, dm, e = d["variants"], d["method"], d["environment"]
        L += ["### The same three graphs on a second CPU (the lent H200 machine's host)", "",
              f"`benchmarks/devices/cpu_device.py`: {e.get('cpu')} ({e.get('cores')} cores, AVX-512"
              f"{' + AMX' if e.get('cpu_flags_amx') else ''}), ai_edge_litert CPU with 2 threads, {dm['rounds']} "
              f"interleaved rounds × ({dm['warmup']} + {dm['iters']}). Timing twins travelled (the 64 MiB transfer "
              "limit): seeded random int8 weights, FP32 rebuilt from them — same graphs and arithmetic, so the same "
              "time for plain and optimised. The floor row is shown for completeness but is weaker evidence there: "
              "with random weights and no LayerNorm its activations are not normalised.", "",
              "| variant | ops | median ms | IQR ms | ÷ plain |", "|---|---|---|---|---|"]
        dr = d["ratios"]
        L += _floor_rows(dv, [p for p in ("fp32", "int8") if p in dr], lambda k, s: k)
        L += ["", f"**Optimised ÷ plain on that CPU: FP32 {dr['fp32']['optimised_over_plain']:.3f}, INT8 "
                  f"{dr['int8']['optimised_over_plain']:.3f}.**", "", env_line(e), ""]


def section_parity_floor(L):
    f = load("parity_floor.json")
    if not f:
        return
    r = f["results"]
    L += ["## How close to PyTorch can an FP32 file be? (parity floor)", "",
          f"The same checkpoint (`{f['model']['name'] if isinstance(f['model'], dict) else f['model']}`) in float64 "
          "(PyTorch `model.double()`) is the truth; PyTorch FP32 and the plain "
          "and optimised `.tflite` (ai_edge_litert CPU) are compared with it and with each other "
          f"(`benchmarks/parity_floor.py`, every {f['image_set']['every']}th image of the default set: "
          f"{f['image_set']['count']} images, pooled rel-L2).", "",
          "| output | vs | pooled rel-L2 | max per image |", "|---|---|---|---|"]
    for k, m in r.items():
        a, b = k.split(" vs ")
        L.append(f"| {a} | {b} | {m['pooled_rel_l2']:.2e} | {m['max_rel_l2']:.2e} |")
    t = r["pytorch_fp32 vs float64"]["pooled_rel_l2"]
    L += ["", f"PyTorch FP32 is itself {t:.2e} away from the float64 result; the optimised file is "
              f"{r['fp32 vs float64']['pooled_rel_l2']:.2e} away (plain: {r['fp32_plain vs float64']['pooled_rel_l2']:.2e}). "
              f"Its distance to PyTorch FP32 ({r['fp32 vs pytorch_fp32']['pooled_rel_l2']:.2e}; plain "
              f"{r['fp32_plain vs pytorch_fp32']['pooled_rel_l2']:.2e}) is "
              f"{'below' if r['fp32 vs pytorch_fp32']['pooled_rel_l2'] < t else 'above'} PyTorch's own FP32 rounding "
              "error for this model, so at this level a bound against PyTorch FP32 measures summation order, not "
              "correctness.", "", env_line(f["environment"]), ""]


def section_parity(L, name, title, plot=None, note=None):
    r = load(name)
    if not r:
        return
    L += [f"## {title}", ""] + ([note, ""] if note else []) + [validate_markdown(r), ""]
    if plot:
        L += [f"![parity]({plot})", ""]
    L += [env_line(r["environment"]), ""]


def section_reproducibility(L):
    r = load("reproducibility.json")
    if not r:
        return
    L += ["## Reproducibility across CPUs", "",
          f"What is compared: {r['what']}. Golden: {r['golden']}. The tests also rebuild the tiny release and the "
          "full-size 518×686 files under other kernels and compare their SHA-256s (README, \"Reproducibility\").", "",
          "| date | CPU | ISA | torch | kernels | matches golden |", "|---|---|---|---|---|---|"]
    for run in r["runs"]:
        L.append(f"| {run['date']} | {run['cpu']} | {', '.join(run['cpu_isa'])} | {run['torch']} | "
                 f"{'; '.join(run['torch_cpu_capability'])} | {'yes' if run['matches_golden'] else '**no**'} |")
    L += ["", f"Not yet checked across CPUs: {r['not_checked_across_cpus']}.", ""]
    g = load("release_golden_check.json")
    if g:
        L += ["### Every file of the synthetic release against its golden", "",
              f"What is compared: {g['what']} (`tests/golden/record.py check`; `make demo` runs it).", "",
              "| date | CPU | goldens | files matching | differ | no golden |", "|---|---|---|---|---|---|"]
        for run in g["runs"]:
            L.append(f"| {run['date']} | {run['cpu']} ({', '.join(run['cpu_isa'])}) | {run['goldens']} | "
                     f"{run['matching']} of {run['files']} | {len(run['differ'])} | {len(run['no_golden'])} |")
        L += [""] + [f"{run['date']}: {run['finding']}" for run in g["runs"] if run.get("finding")] + [""]


def section_h200(L):
    h = load("h200.json")
    if not h:
        return
    env = h["environment"]
    L += ["## NVIDIA H200 (lent GPU machine), LiteRT GPU accelerator over Vulkan", "",
          f"Adapter (from LiteRT's log): `{env.get('gpu_adapter')}`. Files: the optimised INT8 file as built, and the "
          "optimised FP32 graph rebuilt there from a weight-stripped copy with weights from the INT8 twin (dequantised; "
          "`edgedepth.formats.tflite.transport`) because a call carries at most 64 MiB — same graph and ops, weights rounded to 8 bits.",
          "", "| file | ops | fully on GPU (GPU alone) | error |", "|---|---|---|---|"]
    for n, f in h["files"].items():
        L.append(f"| {n} | {f['ops']} | {'yes' if f['gpu']['fully_delegated'] else '**no**'} | {f['gpu']['error'] or '–'} |")
    if h.get("bench"):
        b = {"backend": "gpu", "input_shape": None, "environment": {"threads": "–", "cpu": env.get("gpu_adapter")},
             **h["bench"]}
        b["input_shape"] = "[1, 3, 518, 686]"
        L += ["", "Latency (`gpu` = enforce_f32, `gpu-fp16` = LiteRT's default precision policy), interleaved:", "",
              bench_markdown(b), ""]
    if h.get("parity"):
        L += [f"GPU vs LiteRT CPU on the same machine and file, {h['image_set']['count']} images "
              f"(set sha256 `{h['image_set']['sha256'][:12]}…`):", "",
              "| comparison | pooled rel-L2 | max rel-L2 | Pearson | AbsRel (aligned) |", "|---|---|---|---|---|"]
        for k, m in h["parity"].items():
            if "error" in m:
                L.append(f"| {k} | **failed**: {m['error']} | | | |")
            else:
                L.append(f"| {k} | {m['pooled_rel_l2']:.2e} | {m['max_rel_l2']:.2e} | {m['pearson']:.6f} | "
                         f"{m['aligned_absrel']:.2e} |")
        L.append("")


def section_fp16(L):
    f = load("fp16_h200.json")
    if not f:
        return
    env = f["environment"]
    L += ["## FP16-safe build under LiteRT's default GPU precision (H200, `benchmarks/devices/fp16_device.py`)", "",
          "Model: `synthetic-fp16-stress` (the synthetic model exactly rescaled so its depth map is unchanged while "
          "internal activations overflow FP16 the way trained DPT heads do: head.conv2 reaches ~1e8, every LayerNorm "
          "variance overflows). `opt` = the default rewrites; `safe` = `opt` + `fp16_safe` (exact power-of-two "
          "rescaling, 0 extra ops). Reference: LiteRT CPU (FP32) of the same file on the same machine; "
          f"{f['image_set'].get('count') if isinstance(f.get('image_set'), dict) else '?'} images. Adapter: "
          f"`{env.get('gpu_adapter')}`.", "",
          "| comparison | pooled rel-L2 | constant maps | non-finite |", "|---|---|---|---|"]
    for k, m in f["parity"].items():
        if isinstance(m, dict):
            L.append(f"| {k} | {m['pooled_rel_l2']:.2e} | {m.get('constant_map_images', '–')}/{m['images']} | "
                     f"{m.get('nonfinite_frac', 0):.3f} |")
        else:
            L.append(f"| {k} | **{m}** | | |")
    b = {"backend": "gpu", "input_shape": "[1, 3, 518, 686]",
         "environment": {"threads": "–", "cpu": env.get("gpu_adapter")}, **f["bench"]}
    L += ["", bench_markdown(b), "",
          "For scale: the non-stressed synthetic model under default precision is 1.3e-2 from its CPU result on the same "
          "GPU (H200 section above) — that is FP16 arithmetic itself, which rescaling cannot remove.", ""]


_GPU_REF = {"eager-fp32": ("eager", "FP32, TF32 off"), "eager-tf32": ("eager", "TF32"),
            "eager-fp16-autocast": ("eager", "FP16 autocast"),
            "compile-cudagraphs-fp16": ('`torch.compile(mode="reduce-overhead")` (CUDA graphs)', "FP16 autocast"),
            "compile-cudagraphs-fp16-flash": ('`torch.compile(mode="reduce-overhead")` (CUDA graphs), SDPA held to '
                                              "flash", "FP16 autocast")}
_GPU_REF_SCALING = ("eager-fp32", "eager-tf32", "eager-fp16-autocast", "compile-cudagraphs-fp16")   # size paragraph


def _px(size: str) -> int:
    return int(size.split("x")[0]) * int(size.split("x")[1])


def section_gpu_reference(L):
    g = load("gpu_reference.json")
    if not g:
        return
    env, m, h = g["environment"], g["method"], load("h200.json")
    L += ["## GPU: PyTorch CUDA and LiteRT on the same H200 (transformers 5.24 with its attention mask)", "",
          f"The same synthetic model in PyTorch CUDA on the same GPU (`benchmarks/gpu_reference.py`): {env.get('gpu')}, "
          f"driver {env.get('driver')}, CUDA {env.get('cuda_runtime')}, torch {env['versions'].get('torch')}, "
          f"transformers {env['versions'].get('transformers')}. Input: `{g['input']['image']}` of the default set; "
          f"{m['rounds']} interleaved rounds × ({m['warmup']} warm-up + {m['iters']} timed calls), order rotated; timed "
          "call = forward on a GPU-resident input between CUDA events, synchronised per call (compile excluded). "
          "Its compiled rows ran with the attention mask transformers 5.24 builds on the device's torch 2.11 under "
          "torch.compile (math attention, no fused kernels): the device limit is measured without it below (\"The "
          "device limit, two timers\"), and every ÷ limit figure comes from there; the last column here is only "
          "the ratio to this table's fastest row. "
          "rel-L2 of PyTorch rows: against a float64 CPU run of the same model on the same input. LiteRT rows (WebGPU "
          "accelerator over Vulkan, H200 section above) time input write + invoke + output read and compare with "
          "LiteRT CPU over the image set; the host copies PyTorch leaves out cost "
          + ", ".join(f"{k} {s['host_io_ms']:.2f} ms" for k, s in g["sizes"].items()) + " there (pageable H2D + D2H)."
          + (" Measured on: " + ", ".join(f"{k} {s['date']}" for k, s in g["sizes"].items()) + "."
             if all("date" in s for s in g["sizes"].values()) else ""),
          "", "| size | runtime | precision | median ms | IQR ms | rel-L2 | vs | ÷ best PyTorch CUDA |",
          "|---|---|---|---|---|---|---|---|"]
    for size, s in g["sizes"].items():
        ok = {n: v for n, v in s["variants"].items() if "median_ms" in v}
        best = min((v["median_ms"] for v in ok.values()), default=None)
        for n, v in s["variants"].items():
            how, prec = _GPU_REF.get(n, (n, "?"))
            if n not in ok:
                L.append(f"| {size} | PyTorch CUDA {how} | {prec} | **failed**: {v.get('error')} | | | | |")
                continue
            L.append(f"| {size} | PyTorch CUDA {how} | {prec} | {v['median_ms']:.2f} | {v['p25_ms']:.2f}–"
                     f"{v['p75_ms']:.2f} | {v['rel_l2_vs_float64']:.2e} | float64 | {v['median_ms'] / best:.2f} |")
        lite = {n: v for n, v in ((h or {}).get("bench") or {}).get("variants", {}).items()
                if f"_{size}_" in n} if best else {}
        for n, v in lite.items():
            par = h.get("parity", {}).get(n.replace("[gpu]", "[gpu vs cpu]").replace("[gpu-fp16]", "[gpu-fp16 vs cpu]"))
            prec = "default (may compute FP16)" if n.endswith("[gpu-fp16]") else "FP32 enforced"
            rel = f"{par['pooled_rel_l2']:.2e} | LiteRT CPU, same file" if par else "– | –"
            L.append(f"| {size} | LiteRT GPU (Vulkan), `{n.rsplit(' [', 1)[0]}` | {prec} | {v['median_ms']:.2f} | "
                     f"{v['p25_ms']:.2f}–{v['p75_ms']:.2f} | {rel} | {v['median_ms'] / best:.2f} |")
    L.append("")
    sz = [k for k, s in g["sizes"].items() if all("median_ms" in s["variants"].get(n, {}) for n in _GPU_REF_SCALING)]
    if len(sz) > 1:
        lo, hi = min(sz, key=_px), max(sz, key=_px)
        ms = lambda k, n: g["sizes"][k]["variants"][n]["median_ms"]   # noqa: E731
        e, c = "eager-fp32", "compile-cudagraphs-fp16"
        L += [f"From {lo} to {hi} ({_px(hi) / _px(lo):.1f}× the pixels) eager FP32 grows {ms(hi, e) / ms(lo, e):.2f}× "
              f"({ms(lo, e):.1f} → {ms(hi, e):.1f} ms), the CUDA-graph row {ms(hi, c) / ms(lo, c):.2f}× "
              f"({ms(lo, c):.2f} → {ms(hi, c):.2f} ms): eager time is mostly the host launching kernels one by one, "
              "not GPU work (consistent with FP16 autocast, which adds cast kernels, being no faster eagerly). The "
              "compiled FP16 row, with launches replayed as one graph, is the closest of these to the device's limit "
              "for this graph. First-call (compile) times are in the JSON.", ""]
    L += [env_line(env), ""]


def section_executorch(L):
    e = load("executorch.json")
    if not e:
        return
    L += ["## ExecuTorch (`benchmarks/executorch_measure.py`, full synthetic model)", "",
          f"executorch {e['executorch']}, torch {e['torch']}; latency: {e['threads']} threads, median of {e['iters']} "
          f"calls after {e['warmup']} warm-ups (sequential); the interleaved re-run below is the one to compare variants "
          "with. rel-L2 vs PyTorch eager on one seeded input.", "",
          "| size | variant | backend | precision | delegated / outside nodes | fully delegated | MB | rel-L2 | median ms |",
          "|---|---|---|---|---|---|---|---|---|"]
    for size, variants in e["sizes"].items():
        for name, v in variants.items():
            if not isinstance(v, dict):
                L.append(f"| {size} | {name.replace('_', ' ')}: **{v}** | | | | | | | |")
                continue
            if name == "pytorch-eager":
                L.append(f"| {size} | PyTorch eager | – | fp32 | – | – | – | – | {v['latency']['median_ms']:.0f} |")
                continue
            lat = v.get("latency", {}).get("median_ms")
            rel = v.get("rel_l2_vs_pytorch")
            L.append(f"| {size} | {name} | {v.get('backend')} | {v.get('precision')} | {v.get('delegated_nodes')} / "
                     f"{v.get('non_delegated_nodes')} | {'yes' if v.get('fully_delegated') else 'no'} | "
                     f"{v.get('bytes', 0) / 1e6:.1f} | {'–' if rel is None else f'{rel:.2e}'} | "
                     f"{'not runnable here' if lat is None else f'{lat:.0f}'} |")
    for size in ("518x686", "224x224"):
        b = load(f"executorch_interleaved_{size}.json")
        if b:
            b = {"backend": "cpu", "input_shape": size, **b}
            b.setdefault("environment", {"threads": e["threads"], "cpu": "this machine"})
            L += ["", f"Interleaved, {size}:", "", bench_markdown(b)]
    L += ["", "WebGPU/Vulkan `.pte` files lower to one Vulkan-delegated subgraph (the WebGPU partitioner is a thin wrapper: "
          "the two files are byte-identical); the ExecuTorch Python runtime registers only XNNPACK, so they cannot be run "
          "here.", ""]


def ops_lines() -> list[str]:
    """Op counts plain → optimised and GPU delegation of the four 518×686 files (README bullets, graph page)."""
    ins = {k: load(f"inspect_{P}_{k}.json") for k in ("fp32_plain", "fp32", "int8_plain", "int8")}
    if not all(ins.values()):
        return []
    def gpu(i):
        g = i["gpu"]
        return "fully on GPU" if g["fully_delegated"] else f"not fully on GPU ({g['error']})"
    return [f"- Ops (FP32, 518×686): plain **{ins['fp32_plain']['ops']}** → optimised **{ins['fp32']['ops']}**.",
            f"- GPU accelerator alone (SwiftShader): plain FP32 {gpu(ins['fp32_plain'])}; plain INT8 "
            f"{gpu(ins['int8_plain'])}; optimised FP32 {gpu(ins['fp32'])}; optimised INT8 {gpu(ins['int8'])}."]


def cpu_latency_lines() -> list[str]:
    """CPU latency, optimised ÷ plain, from cpu_latency.json (README bullet, CPU page)."""
    b = load("cpu_latency.json")
    if not b:
        return []
    v = b["variants"]
    try:
        r32 = v[f"{P}_fp32.tflite"]["median_ms"] / v[f"{P}_fp32_plain.tflite"]["median_ms"]
        r8 = v[f"{P}_int8.tflite"]["median_ms"] / v[f"{P}_int8_plain.tflite"]["median_ms"]
    except KeyError:
        return []
    return [f"- CPU latency, optimised ÷ plain (2 threads, one interleaved run, {b['method']['rounds']} rounds): "
            f"FP32 **{r32:.3f}**, INT8 **{r8:.3f}** (medians {v[f'{P}_fp32.tflite']['median_ms']:.0f} / "
            f"{v[f'{P}_fp32_plain.tflite']['median_ms']:.0f} ms and {v[f'{P}_int8.tflite']['median_ms']:.0f} / "
            f"{v[f'{P}_int8_plain.tflite']['median_ms']:.0f} ms)."]


def floor_lines() -> list[str]:
    """The CPU latency floor, from latency_floor.json (README bullet, CPU page)."""
    fl = load("latency_floor.json")
    if not (fl and {"fp32", "int8"} <= set(fl["ratios"])):
        return []
    r = fl["ratios"]
    return [f"- CPU latency floor (a graph with the same 83.7 G MACs and no LayerNorm/layout ops; "
            f"separate {fl['method']['rounds']}-round run): floor ÷ plain FP32 **{r['fp32']['floor_over_plain']:.3f}**, "
            f"INT8 **{r['int8']['floor_over_plain']:.3f}**; optimised ÷ plain in the same run "
            f"{r['fp32']['optimised_over_plain']:.3f} / {r['int8']['optimised_over_plain']:.3f} (ratios move by "
            "several % between runs on this shared 2-core VM). "
            + (f"A {fl['target_ratio']}× goal is below the floor on this CPU." if min(
                r[p]["floor_over_plain"] for p in ("fp32", "int8")) > fl["target_ratio"] else "")]


def parity_lines() -> list[str]:
    """FP32 accuracy against float64 and parity vs PyTorch of the two shipped files (README bullets, parity page)."""
    S = []
    pf = load("parity_floor.json")
    if pf:
        r = pf["results"]
        S.append(f"- FP32 accuracy against a float64 run of the same model ({pf['image_set']['count']} images): "
                 f"PyTorch FP32 {r['pytorch_fp32 vs float64']['pooled_rel_l2']:.2e}, plain .tflite "
                 f"{r['fp32_plain vs float64']['pooled_rel_l2']:.2e}, optimised .tflite "
                 f"{r['fp32 vs float64']['pooled_rel_l2']:.2e}.")
    pc = load("parity_cpu.json")
    if pc:
        for r in pc["results"]:
            if r["artifact"] in (f"{P}_fp32.tflite", f"{P}_int8.tflite") and r["metrics"]:
                S.append(f"- Parity vs PyTorch, `{r['artifact']}` on CPU, {pc['image_set']['count']} images: pooled "
                         f"rel-L2 **{r['metrics']['pooled_rel_l2']:.2e}**.")
    return S


def h200_lines() -> list[str]:
    """The H200 LiteRT GPU timings of h200.json (README bullet)."""
    h = load("h200.json")
    if not (h and h.get("bench")):
        return []
    ops = sorted({f["ops"] for f in h.get("files", {}).values()})
    return [f"- H200 ({h['environment'].get('gpu_adapter', '?').split(',')[0]}; {h['environment'].get('date', 'Dec 2026')}, "
            f"graph of {'/'.join(map(str, ops))} ops, `benchmarks/devices/h200_run.py`): " + "; ".join(
        f"{n} {s['median_ms']:.1f} ms" for n, s in h["bench"]["variants"].items()) + "."]


def readme_summary() -> list[str]:
    """The README's headline table: per target, the fastest file edgedepth makes, its time on the named machine and
    that time ÷ the fastest way without edgedepth in the same run (the rows of the Benchmarks "Which file" page)."""
    rows = which_file_rows()
    if not rows:
        return []
    return ["| target | precision | fastest of ours | median | fastest without edgedepth | ours ÷ it | ours ÷ limit | "
            "measured |", "|---|---|---|---|---|---|---|---|", *rows, "",
            "Synthetic full-size model (real architecture, seeded weights), 518×686. \"Earlier build\": that run timed "
            "an earlier build of the file (the comparison is its own; the shipped file's newest numbers: [Where the "
            "numbers come from](docs/benchmarks/sources.md)). Method and every other measurement: "
            "[Benchmarks](docs/benchmarks/index.md)."]


def readme_with(lines: list[str]) -> str:
    """README.md with its measured block replaced by ``lines`` (unchanged when it has no block)."""
    start, end = "<!-- measured:start -->", "<!-- measured:end -->"
    text = open("README.md").read()
    if start not in text or end not in text:
        return text
    head, rest = text.split(start, 1)
    _, tail = rest.split(end, 1)
    block = "\n".join(["", "_Generated from `benchmarks/results/*.json` by `benchmarks/report/make_benchmarks_md.py`._", ""]
                      + lines + [""])
    return head + start + block + end + tail


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def which_file_answer() -> list[str]:
    """Per target, the fastest file edgedepth makes and its time ÷ the fastest peer's (md_peers.which_file_rows)."""
    per_target: dict[str, list[str]] = {}
    for row in which_file_rows():
        target, prec, ours, ms, _, ratio = _cells(row)[:6]
        ours = ours.split(" (")[0]
        runtime, _, file = ours.partition(", ")          # "LiteRT, edgedepth .tflite": the runtime, then the file
        per_target.setdefault(target.replace(": ", " ", 1), []).append(
            f"{prec} {f'{file} on {runtime}' if file else ours} {ms} ({ratio.strip('*')}×)")
    if not per_target:
        return []
    return ["The fastest file edgedepth makes for each target, its median time and, in brackets, that time ÷ the "
            "fastest path without edgedepth on the same machine in the same run (below 1: edgedepth is faster). "
            + "; ".join(f"{t}: {', '.join(v)}" for t, v in per_target.items()) + "."]


def _truth(*prefixes: str) -> list[str]:
    """The md_gpu_truth summary bullets that start with one of ``prefixes``, in the order of ``prefixes``."""
    lines = truth_summary()
    return [s for p in prefixes for s in lines if s.removeprefix("- ").startswith(p)]


def browser_answer() -> list[str]:
    """The browser row of which_file_rows (headless Chromium, wasm, this CPU), then the real-GPU and webcam bullets."""
    rows = [_cells(r) for r in which_file_rows() if r.startswith("| Browser")]
    first = [f"In headless Chromium on this CPU (wasm), {c[2]} takes {c[3]}: {c[5].strip('*')}× {c[4]}, "
             f"{c[6]}." for c in rows[:1]]
    return first + _truth("Playground on the", "Webcam frames computed on the GPU")


def _parity_section(name: str, title: str, plot: str | None = None, note=None):
    """A section function for section_parity (``note`` may be a function: made when the section is)."""
    return lambda L: section_parity(L, name, title, plot, note() if callable(note) else note)


def _swiftshader_note() -> str:
    return ("The full-size files compile fully on SwiftShader, but a full-size GPU run fails there when LiteRT locks the "
            "tensor buffer (the row below says so; a software Vulkan driver, not the graph: the same file runs on the "
            "H200). GPU parity on SwiftShader is therefore measured on synthetic-tiny in the tests "
            "(`tests/test_rewrites.py::test_tiny_gpu_fp32_and_int8`, within the FP32-noise tolerance of tests/README.md "
            f"with enforce_f32), and on {(load('h200.json') or {}).get('image_set', {}).get('count', '?')} images of the "
            "default set on the H200 below.")


# The benchmark pages (docs/benchmarks/<page>.md), in the order of the site's nav and of BENCHMARKS.md: each opens
# with its answer (made from the JSON its sections read; [] opens it with its first table), then its sections.
TOPICS = (
    Topic("which-file", "Which file on which runtime", which_file_answer, (section_which_file,)),
    Topic("graph", "Op counts, GPU delegation and rewrites", ops_lines, (section_ops, section_ablation)),
    Topic("cpu", "CPU latency", lambda: cpu_latency_lines() + floor_lines(),
          (section_cpu_latency, section_latency_floor, section_executorch, section_peers, section_onnx_rewrites,
           section_onnx_dynamic, section_predict_dynamic, section_cpu_int8_xeon)),
    Topic("parity", "Parity and reproducibility", parity_lines,
          (_parity_section("parity_cpu.json", "Parity vs PyTorch on CPU (default image set)", "docs/parity_cpu.png"),
           section_parity_floor,
           _parity_section("release_cpu_parity.json", "Parity of the release files (synthetic release, CPU)",
                           note="Every CPU-runnable file of `make demo`'s release folder, 22 images of the default set "
                                "(`benchmarks/release_parity.sh`). A rebuild's manifest and model card embed these rows "
                                "for files whose SHA-256 matches."),
           section_reproducibility)),
    Topic("gpu", "GPU (H200, H100)", lambda: _truth("Device limit", "A LiteRT"),
          (_parity_section("parity_swiftshader.json",
                           "Parity vs PyTorch on the GPU accelerator (SwiftShader, CPU machine)", note=_swiftshader_note),
           section_h200, section_fp16, section_gpu_reference, section_gpu_limit, section_gpu_options,
           section_gpu_hazards, section_gpu_attribution)),
    Topic("precision", "Precision ladder", ladder_summary, (section_precision_ladder,)),
    Topic("family", "Model family and Depth Anything 3", lambda: family_summary() + da3_vs_v2_summary(),
          (section_family, section_da3, section_da3_vs_v2, section_da3_gpu)),
    Topic("browser", "Browser and webcam", browser_answer,
          (section_playground, section_browser_h200, section_webcam_overlap, section_webcam_gpu_frames,
           section_tjs_preprocessing)),
    Topic("packaging", "Packaging, hostile input and cluster builds", lambda: [],
          (section_wheel, section_python_versions, section_finetune_formats, section_cluster_builds,
           section_cluster_builds_small, section_job_costs, section_hostile, section_hostile_items)),
)

NOTES = ["Results dated before 2026-12-03 used the earlier synthetic init (`torch.randn`, whose values depend on the "
         "CPU); from 2026-12-03 the synthetic weights are CPU-independent (state-dict SHA-256 `6ed8f296b306…`). Same "
         "architecture, same distributions: op counts and delegation are identical, latency and parity comparable.", ""]


def render(plots: bool = True) -> dict[str, str]:
    """{path: text} of BENCHMARKS.md and the pages of docs/benchmarks/ (``plots``: also (re)draw the PNGs)."""
    if plots:
        gpu_plot()
        ladder_plot()
    extras = [open(os.path.join(R, f)).read() + "\n" for f in sorted(os.listdir(R))
              if f.startswith("extra_") and f.endswith(".md")]
    return documents(list(TOPICS), NOTES, extras)


def main():
    """Write BENCHMARKS.md, the pages of docs/benchmarks/ (removing any it no longer makes), the plots and the README's
    measured block; ``--check``: write nothing, exit 1 naming every file that differs from what the JSON in
    benchmarks/results/ makes, every page it does not make, and a nav of mkdocs.yml without the pages
    (tests/test_architecture.py runs it)."""
    check = sys.argv[1:] == ["--check"]
    docs = render(plots=not check) | {"README.md": readme_with(readme_summary())}
    nav = nav_problem(list(TOPICS))
    if check:
        stale = [n for n, want in docs.items() if not os.path.isfile(n) or open(n).read() != want]
        left = orphans(docs)
        if stale or left or nav:
            print("\n".join([f"{n} differs from benchmarks/results/" for n in stale]
                            + [f"{n} is not a page the generator makes" for n in left] + ([nav] if nav else [])
                            + ["run benchmarks/report/make_benchmarks_md.py"]), file=sys.stderr)
            sys.exit(1)
        return
    os.makedirs(DOCS, exist_ok=True)
    for n, text in docs.items():
        with open(n, "w") as f:
            f.write(text)
    for n in orphans(docs):
        os.remove(n)
        print(f"removed {n} (not a page the generator makes)")
    print(f"wrote {', '.join(n for n in docs if n != 'README.md')} and the README's measured block")
    if nav:
        print(nav, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
