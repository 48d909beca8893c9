"""BENCHMARKS.md sections for the peer comparison (used by make_benchmarks_md.py): which rewrites help ONNX Runtime,
every runtime side by side per CPU, and "Which file on which runtime" across CPU / GPU / browser."""

from __future__ import annotations

import glob
import json
import os

from facts import marker
from md_common import R, gpu_limit_pair, load, webgpu_file_row




def _peer_reports() -> list[dict]:
    return [{**load(os.path.basename(p)), "_file": os.path.basename(p)}
            for p in sorted(glob.glob(os.path.join(R, "peers_cpu_*.json")))]


def _where(rep: dict) -> str:
    env = rep["environment"]
    isa = "/".join(i for i in env.get("cpu_isa", []) if i in ("avx2", "avx512f", "amx_tile"))
    return f"{env.get('cpu')} ({isa}), {rep['threads']} of {env.get('cores')} cores"


def section_onnx_rewrites(L):
    a = load("onnx_rewrites.json")
    if not a:
        return
    m = a["method"]
    L += ["## Which rewrites help ONNX Runtime", "",
          f"Each cumulative prefix of the rewrite pipeline exported to FP32 ONNX at {a['size'][0]}×{a['size'][1]} "
          f"(`benchmarks/onnx_rewrites.py`), ONNX Runtime CPU, {a['environment']['threads']} threads, one interleaved "
          f"run ({m['rounds']} rounds × ({m['warmup']} + {m['iters']})). rel-L2 against PyTorch FP32 and against a "
          f"float64 run (PyTorch FP32's own: {a['torch_fp32_rel_l2_vs_float64']:.2e}). "
          "`edgedepth export --target onnx` keeps the prefix marked ✓.", "",
          "| step | ops | median ms | ÷ plain | round medians ms | rel-L2 vs PyTorch FP32 | vs float64 | kept |",
          "|---|---|---|---|---|---|---|---|"]
    from edgedepth.formats.onnx import DEFAULT_REWRITES

    for s in a["steps"]:
        kept = "✓" if set(s["rewrites"]) <= set(DEFAULT_REWRITES) else ""
        L.append(f"| {s['step']} | {s['ops']} | {s['median_ms']:.0f} | {s['over_plain']:.3f} | "
                 f"{' / '.join(f'{v:.0f}' for v in s['round_medians_ms'])} | {s['rel_l2_vs_torch_fp32']:.2e} | "
                 f"{s['rel_l2_vs_float64']:.2e} | {kept} |")
    L += ["", env_line(a["environment"]), ""]


def env_line(env):
    v = env.get("versions", {})
    return (f"Machine: {env.get('cpu')}, {env.get('cores')} cores (measured {env.get('date')}); "
            + ", ".join(f"{k} {val}" for k, val in sorted(v.items())))


def section_peers(L):
    reps = _peer_reports()
    if not reps:
        return
    L += ["## Peers side by side (CPU)", "",
          "`benchmarks/peers.py`: every file edgedepth writes (**ours**) next to what a user would run without it "
          "(**peer**), 518×686, one interleaved run per machine; same input (a bundled photo), same timed call "
          "(input write + synchronous invoke + output read). Parity: pooled rel-L2 against PyTorch FP32 on the "
          "first photos of the bundled set. *Limit*: the model's 83.7 G MACs at the FP32 GEMM rate PyTorch reaches on "
          "the same cores in the same run (`torch.mm` 2048³) — no FP32 runtime does much better.", ""]
    for rep in reps:
        m, rows, s = rep["method"], rep["rows"], rep["summary"]
        lim = s.get("device_limit") or {}
        L += [f"### {rep['tag']}: {_where(rep)}", "",
              f"{m['rounds']} rounds × ({m['warmup']} + {m['iters']}) calls; parity on {rep['image_set']['count']} "
              f"photos.", "",
              "| | runtime and file | precision | median ms | IQR ms | ÷ fastest ours (same precision) | rel-L2 vs PyTorch FP32 |",
              "|---|---|---|---|---|---|---|"]
        best = {p: min((r["median_ms"] for r in rows.values() if r.get("median_ms") and r["side"] == "ours"
                        and r["precision"] == p), default=None) for p in ("fp32", "int8")}
        for p in ("fp32", "int8"):
            for k, r in sorted(((k, r) for k, r in rows.items() if r["precision"] == p),
                               key=lambda kr: kr[1].get("median_ms") or 1e12):
                if not r.get("median_ms"):
                    L.append(f"| {r['side']} | {r['label']} | {p.upper()} | – | – | – | not run: {r['error']} |")
                    continue
                par = (r.get("parity") or {}).get("pooled_rel_l2_vs_pytorch_fp32")
                par = f"{par:.2e}" if par is not None else (r.get("transport") or "–")
                prec = {"<Type: 'float32'>": "f32"}.get(r.get("inference_precision"), r.get("inference_precision"))
                L.append(f"| {r['side']} | {r['label']}{f' (inference precision {prec})' if prec else ''} | "
                         f"{p.upper()} | {r['median_ms']:.0f} | {r['iqr_ms']:.0f} | "
                         f"{r['median_ms'] / best[p]:.2f} | {par} |" if best[p] else "")
        if lim:
            L.append(f"| limit | {lim['model_gmac']:.1f} G MACs at {lim['gemm_gflops']:.0f} GFLOP/s "
                     f"({lim['gemm']}) | FP32 | {lim['fp32_limit_ms']:.0f} | – | "
                     f"{lim['fp32_limit_ms'] / best['fp32']:.2f} | – |" if best["fp32"] else "")
        L.append("")
        for p in ("fp32", "int8"):
            if p in s:
                g = s[p]
                L.append(f"- {p.upper()}: fastest of ours `{g['fastest_ours']}` {g['ours_ms']:.0f} ms ÷ fastest peer "
                         f"`{g['fastest_peer']}` {g['peer_ms']:.0f} ms = **{g['ours_over_peer']:.2f}** "
                         f"(goal ≤ {rep['goal_ours_over_peer']:.2f}: {'met' if g['goal_met'] else '**not met**'}).")
        for p in ("fp32", "int8"):
            if f"onnx_{p}_ours_over_plain" in s:
                L.append(f"- ONNX Runtime {p.upper()}: edgedepth's .onnx ÷ plain torch.onnx export = "
                         f"**{s[f'onnx_{p}_ours_over_plain']:.3f}**.")
        if lim.get("fastest_fp32_over_limit"):
            L.append(f"- Fastest FP32 row ÷ the GEMM limit: {lim['fastest_fp32_over_limit']:.2f}.")
        L += ["", env_line(rep["environment"]), ""]


def which_file_rows() -> list[str]:
    """Per target: the fastest correct artifact, its ratio to the best peer and to the device limit."""
    out = []
    for rep in _peer_reports():
        s, rows = rep["summary"], rep["rows"]
        lim = (s.get("device_limit") or {}).get("fp32_limit_ms")
        for p in ("fp32", "int8"):
            if p not in s:
                continue
            g = s[p]
            r = rows[g["fastest_ours"]]
            to_lim = f"{g['ours_ms'] / lim:.2f}" if lim and p == "fp32" else "–"
            out.append(f"| x86 CPU: {_where(rep)} | {p.upper()} | {r['label']} | {g['ours_ms']:.0f} ms | "
                       f"{rows[g['fastest_peer']]['label']} {g['peer_ms']:.0f} ms | **{g['ours_over_peer']:.2f}** | "
                       f"{to_lim} | {marker(rep['_file'])} |")
    gpu = load("gpu_reference.json")
    h = load("h200.json")
    att = (load("gpu_attribution.json") or {}).get("bench_models")
    lp = gpu_limit_pair()
    if lp:
        # issue 30: the WebGPU file (chosen GPU flags, FP32 enforced) and PyTorch CUDA in one device call, both timers
        (ms, flags), e, (best, b) = lp["ours"]["fp32"], lp["eager"], lp["limit"]
        out.append(f"| GPU: {lp['gpu']} (LiteRT WebGPU over Vulkan) | FP32 | release WebGPU file "
                   f"`depth_anything_v2_small_518x686_fp16_u8in.tflite` (FP32 enforced, `{flags}`; seeded twin) | "
                   f"{ms:.1f} ms | PyTorch CUDA eager FP32 {e['median_ms']:.1f} ms events / "
                   f"{e['wall_median_ms']:.1f} ms wall (same device call) | **{ms / e['median_ms']:.2f}** | "
                   f"{ms / b['median_ms']:.2f} (vs {best} {b['median_ms']:.2f} ms events / "
                   f"{b['wall_median_ms']:.2f} ms wall; transformers {lp['transformers']}) | "
                   f"{marker(lp['files'][0])} |")
        gpu = None
    wf, wref = load("gpu_webgpu_file_gpu.json"), load("gpu_reference_webgpu_file.json")
    if gpu and wf and wref:  # the release's WebGPU file and PyTorch CUDA timed in one device call (issue 15)
        f = webgpu_file_row(wf)
        ref = {k: v["median_ms"] for k, v in wref["sizes"]["518x686"]["variants"].items() if v.get("median_ms")}
        ms, best = f["median_ms"]["call"], min(ref, key=ref.get)
        out.append(f"| GPU: NVIDIA H200 (LiteRT WebGPU over Vulkan) | FP32 | release WebGPU file "
                   f"`{f['stands_for']['file']}` (FP32 enforced) | {ms:.1f} ms | PyTorch CUDA eager FP32 "
                   f"{ref['eager-fp32']:.1f} ms (same device call) | **{ms / ref['eager-fp32']:.2f}** | "
                   f"{ms / ref[best]:.2f} (vs {best} {ref[best]:.2f} ms) | {marker('gpu_webgpu_file_gpu.json')} |")
        gpu = None
    if gpu and ((h and h.get("bench")) or att):
        try:
            if att and "model_shipped [gpu]" in att["variants"]:     # the current shipped graph (issue 15)
                ours = (att["variants"]["model_shipped [gpu]"]["median_ms"], "518x686 FP32 .tflite (shipped rewrites)")
            else:
                ours = min(((v["median_ms"], n) for n, v in h["bench"]["variants"].items()
                            if "_fp32" in n and n.endswith("[gpu]")), default=None)  # [gpu-fp16] is not FP32
            ref = {k: v for k, v in gpu["sizes"]["518x686"]["variants"].items() if v.get("median_ms")}
            best = min(((v["median_ms"], k) for k, v in ref.items()), default=None)
            fp32 = ref.get("eager-fp32")
            if ours and best and fp32:
                label = ours[1] if ours[1].startswith("518x686") else f"`{ours[1].split(' ')[0]}`"
                out.append(f"| GPU: NVIDIA H200 (LiteRT WebGPU over Vulkan) | FP32 | {label} | "
                           f"{ours[0]:.1f} ms | PyTorch CUDA eager FP32 {fp32['median_ms']:.1f} ms | "
                           f"**{ours[0] / fp32['median_ms']:.2f}** | {ours[0] / best[0]:.2f} (vs {best[1]} "
                           f"{best[0]:.2f} ms) | {marker('h200.json')} |")
        except (KeyError, TypeError):
            pass
    pl = load("playground_latency.json")
    if pl:
        for n, r in pl.get("files", {}).items():
            if n.endswith("_fp32.tflite"):
                ow = (pl.get("browser") or {}).get("variants", {}).get("ortweb-wasm:fp32") or {}
                js = r['litertjs_wasm_median_ms']
                peer, ratio = ((f"ONNX Runtime Web wasm {ow['median_ms']:.0f} ms", f"**{js / ow['median_ms']:.2f}**")
                               if ow.get("median_ms") else ("ONNX Runtime Web: not measured", "–"))
                out.append(f"| Browser (headless chromium, wasm, this CPU) | FP32 | LiteRT.js `{n}` | "
                           f"{js:.0f} ms | {peer} | {ratio} | "
                           f"{js / r['ai_edge_litert_cpu_median_ms']:.1f}× native LiteRT | "
                           f"{marker('playground_latency.json')} |")
                break
    return [r for r in out if r]


def section_which_file(L):
    rows = which_file_rows()
    if not rows:
        return
    L += ["## Which file on which runtime", "",
          "The fastest correct artifact edgedepth makes for each target, against the fastest peer path on the same "
          "machine in the same run, and against the device limit (CPU: the model's MACs at the measured FP32 GEMM "
          "rate; GPU: the fastest PyTorch CUDA mode on the same GPU in the same device call). Ratios < 1 favour "
          "edgedepth.", "",
          "| target | precision | fastest of ours | median | fastest peer | ours ÷ peer | ours ÷ limit | measured |",
          "|---|---|---|---|---|---|---|---|", *rows, ""]


def summary_lines() -> list[str]:
    """README bullets: per CPU, fastest of ours vs fastest peer (FP32, INT8) and our .onnx vs a plain export."""
    S = []
    for rep in _peer_reports():
        s, rows = rep["summary"], rep["rows"]
        parts = []
        for p in ("fp32", "int8"):
            if p in s:
                g = s[p]
                parts.append(f"{p.upper()} {rows[g['fastest_ours']]['label']} {g['ours_ms']:.0f} ms vs "
                             f"{rows[g['fastest_peer']]['label']} {g['peer_ms']:.0f} ms → **{g['ours_over_peer']:.2f}**"
                             + ("" if g["goal_met"] else f" (goal ≤ {rep['goal_ours_over_peer']} not met)"))
        onnx = [f"{p.upper()} {s[f'onnx_{p}_ours_over_plain']:.2f}" for p in ("fp32", "int8")
                if f"onnx_{p}_ours_over_plain" in s]
        S.append(f"- Peers, {_where(rep)} (518×686, one interleaved run): fastest of ours ÷ fastest peer: "
                 + "; ".join(parts) + (f". Our `.onnx` ÷ plain `torch.onnx` export in ONNX Runtime: {', '.join(onnx)}."
                                       if onnx else "."))
    rows = [r for r in which_file_rows() if r.startswith("| GPU")]
    if rows:
        c = [x.strip() for x in rows[0].strip("|").split("|")]
        gpu = c[0].split("GPU: ", 1)[1].split(" (", 1)[0]      # the card the row names
        S.append(f"- GPU ({gpu}): LiteRT GPU FP32 {c[3]} vs {c[4]} (÷ {c[5].strip('*')}); ÷ the fastest PyTorch "
                 f"CUDA mode: {c[6]}.")
    return S
