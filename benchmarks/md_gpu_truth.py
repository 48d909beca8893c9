"""BENCHMARKS.md sections for issue 30 (GPU truth): LiteRT's GPU options measured and chosen, and the PyTorch CUDA
limit with two timers.  Data: gpu_options.json, gpu_options_compare.json, gpu_reference.json, gpu_limit_probe.json."""

from __future__ import annotations

from md_common import load

_SHORT = {"webgpu": "WebGPU file", "fp32": "FP32 file", "int8": "INT8 file"}


def _file(label: str) -> str:
    return _SHORT.get(label.split(" ")[0], label)


def section_gpu_options(L) -> None:
    g = load("gpu_options.json")
    if not g:
        return
    m, bench, corr, ch = g["method"], g["bench"]["variants"], g["correctness"], g["choice"]
    env = g["environment"]
    can = g.get("crash_canary") or {}
    L += ["## GPU: LiteRT's GPU options, measured and chosen (H200)", "",
          f"`benchmarks/gpu_options.py` on the lent H200 ({env.get('date')}, ai-edge-litert "
          f"{env['versions'].get('ai-edge-litert')}, WebGPU over Vulkan): every `GpuOptions` flag alone and the pairs "
          f"that could add up, on the release's 518×686 GPU-facing files (WebGPU file: seeded fp16 twin; FP32 file: "
          f"weights from the INT8 file; INT8 file as shipped), FP32 enforced and LiteRT's default precision; one "
          f"interleaved run, {m['rounds']} rounds × ({m['warmup']} + {m['iters']}) calls, call = input write + run + "
          f"output read. Correctness: pooled rel-L2 vs LiteRT CPU on the same file over {m['images']} photos; "
          "'correct' = finite and within 1.5× the no-flag rel-L2 of the same file and precision.", "",
          "| file | precision | flags | median ms | ÷ no flags | rel-L2 vs CPU |", "|---|---|---|---|---|---|"]
    for n, s in bench.items():
        label, prec, flags = n.split(" | ")
        base = bench.get(f"{label} | {prec} | none", s)
        c = corr.get(n, {})
        rel = f"{c['pooled_rel_l2_vs_cpu']:.2e}" if "pooled_rel_l2_vs_cpu" in c else c.get("error", "–")
        L.append(f"| {_file(label)} | {prec} | {flags} | {s['median_ms']:.2f} | "
                 f"{s['median_ms'] / base['median_ms']:.3f} | {rel} |")
    L += ["", "Geometric-mean time ratio to no flags over the six file × precision pairs: " +
          ", ".join(f"{k} {v['geomean_ratio_to_none']:.3f}{'' if v['correct'] else ' (not correct)'}"
                    for k, v in ch["scores"].items() if k != "none") + ".",
          f"**Chosen: `{ch['chosen']}`** ({ch['rule']}); edgedepth's LiteRT runner sets it on every GPU compile "
          "(`edgedepth.runtimes.litert.GPU_OPTIONS`, tested against this file). LiteRT.js exposes only "
          "`gpuOptions.precision`, so the playground has no equivalent to set."]
    if can:
        L.append(f"`{can['flag']}`: " + (f"the process died with signal {can['signal']} (segmentation fault)"
                                          if can.get("signal") == 11 else f"exit {can.get('returncode')}") +
                 " — refused by the runner with a one-line error; tests/test_gpu_options.py is the canary that "
                 "fails once LiteRT fixes it.")
    cmp_ = load("gpu_options_compare.json")
    ref = load("gpu_reference.json")
    if cmp_ and ref:
        v = cmp_["bench"]["variants"]
        e = ref["sizes"]["518x686"]["variants"]["eager-fp32"]
        rows = [(n.split(" | ")[1], n.split(" | ")[2], s) for n, s in v.items()]
        L += ["", "Same device call as the PyTorch CUDA rows below (WebGPU file, "
              f"{cmp_['method']['rounds']} × ({cmp_['method']['warmup']} + {cmp_['method']['iters']})): " +
              "; ".join(f"{p} {f}: {s['median_ms']:.2f} ms" for p, f, s in rows) +
              f". PyTorch CUDA eager FP32 in that call: {e['median_ms']:.2f} ms (CUDA events), "
              f"{e['wall_median_ms']:.2f} ms (wall clock). The WebGPU file with FP32 enforced is "
              f"{min(s['median_ms'] for p, f, s in rows if p == 'fp32') / e['median_ms']:.2f}× eager FP32; at "
              f"LiteRT's default precision {min(s['median_ms'] for p, f, s in rows if p == 'default') / e['median_ms']:.2f}×."]
    L.append("")


def section_gpu_limit(L) -> None:
    """Why the CUDA-graph row is what it is: both timers, solo vs interleaved, no_grad, no CUDA graphs."""
    g = load("gpu_reference.json")
    if not g or "solo" not in next(iter(g["sizes"].values()))["variants"].get("eager-fp32", {}):
        return
    L += ["### The device limit, two timers", "",
          "Every PyTorch CUDA row timed with CUDA events and with the host wall clock (synchronised per call), "
          "alone before the interleaved rounds ('solo') and in them, plus 100 calls synchronised once "
          "(`benchmarks/gpu_reference.py`; diagnosis arms at 518×686: no_grad instead of inference_mode, and "
          "inductor without CUDA graphs).", "",
          "| size | variant | events ms | wall ms | events ÷ wall | solo events / wall ms | 100 calls, per call ms |",
          "|---|---|---|---|---|---|---|"]
    for size, s in g["sizes"].items():
        for n, v in s["variants"].items():
            if "median_ms" not in v:
                continue
            so = v.get("solo", {})
            L.append(f"| {size} | {n} | {v['median_ms']:.2f} | {v['wall_median_ms']:.2f} | "
                     f"{v['events_over_wall']:.3f} | {so.get('median_ms', 0):.2f} / {so.get('wall_median_ms', 0):.2f} "
                     f"| {v.get('throughput_ms', 0):.2f} |")
    p = load("gpu_limit_probe.json")
    if p:
        L += ["", "Kernel profile of one compiled call (`benchmarks/gpu_limit_probe.py`, torch.profiler, 518×686): "
              + "; ".join(f"{k['name'][:60]} {k['ms_per_forward']:.2f} ms" for k in p["autocast_compiled_kernels"][:5])
              + "."]
    L.append("")
