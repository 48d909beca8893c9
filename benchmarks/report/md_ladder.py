"""BENCHMARKS.md section "Precision ladder" (issue 16), from results/precision_ladder.json (used by
make_benchmarks_md.py), its size-error-latency plot docs/precision_ladder.png and the README summary line."""

from __future__ import annotations

from md_common import load

PLOT = "docs/precision_ladder.png"
LABEL_OFFSET = {"int8": (6, -10), "static-int8": (6, 6), "a16w8": (-70, 6), "static-int8-all": (6, 4)}
ORDER = ("fp32", "fp16", "int8", "int4", "static-int8", "a16w8", "int4-all4", "static-int8-all")


def _rows(rep):
    return [(p, rep["rows"][p]) for p in ORDER if p in rep["rows"]]


def _gpu(p, rep):
    """H200 cell: FP32-enforced / default-precision medians, or why there is none."""
    h = (rep.get("h200") or {}).get("rows", {}).get(p)
    if not h:
        return "not measured"
    if h.get("gpu"):
        return f"{h['gpu']['median_ms']:.2f} / {h['gpu-fp16']['median_ms']:.2f}"
    if h.get("validation_errors"):
        return f"compiles, then invalid WebGPU shader ({h['validation_error'][:70]}…): output garbage"
    return f"no: {(h.get('error') or '')[:90]}"


def _e(v):
    return "–" if v is None else f"{v:.2e}"


def section_precision_ladder(L):
    rep = load("precision_ladder.json")
    if not rep:
        return
    pm, cm = rep["parity_method"], rep["cpu_method"]
    h200 = rep.get("h200") or {}
    fp32 = rep["rows"]["fp32"]
    L += ["## Precision ladder (518×686)", "",
          f"Every LiteRT precision edgedepth writes (`export --precision`, ai-edge-quantizer recipes on the optimised "
          f"FP32 graph) and two alternatives considered (not shipped). `benchmarks/precision_ladder.py`, "
          f"{rep['date']}, synthetic model. Parity: LiteRT CPU vs PyTorch FP32 on the {pm['images']}-image default set "
          f"(a16w8: {pm['slow_rows_images'].get('a16w8')} images — it runs on LiteRT's reference int16 kernels); static "
          f"files calibrated on {pm['calibration']}. CPU: one interleaved run, {cm['rounds']} rounds × "
          f"({cm['warmup']} + {cm['iters']}), {rep['environment'].get('cpu')}, {rep['environment'].get('threads')} "
          f"threads (a16w8 timed alone, 3 calls). GPU: compile on the GPU accelerator alone (SwiftShader here, the H200 "
          f"there), H200 medians FP32-enforced / default precision from one interleaved run "
          f"({h200.get('method', {}).get('rounds', '?')} × ({h200.get('method', {}).get('warmup', '?')} + "
          f"{h200.get('method', {}).get('iters', '?')}); timing twins: same graphs, seeded weights).", "",
          "| precision | MB | ÷ FP32 size | ops | pooled rel-L2 | p95 rel-L2 | Pearson | AbsRel (aligned) | δ<1.25 | "
          "CPU ms | ÷ FP32 CPU | SwiftShader GPU | H200 GPU ms (FP32 / default) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for p, r in _rows(rep):
        par = r.get("parity", {})
        lat = r.get("cpu_latency", {}).get("median_ms")
        sw = r["gpu_swiftshader"]
        swc = ("invalid shader" if sw.get("validation_errors") else "fully delegated") if sw["fully_delegated"] else \
            ("crash (abort)" if "crashed" in (sw["error"] or "") else "no (INT16 unsupported)"
             if "INT16" in str(sw) or "not supported" in (sw["error"] or "") else (sw["error"] or "no")[:40])
        name = f"**{p}**" if r["shipped"] else f"{p} (considered)"
        L.append(f"| {name} | {r['bytes'] / 1e6:.2f} | {r['bytes'] / fp32['bytes']:.2f} | {r['ops']} | "
                 f"{_e(par.get('pooled_rel_l2'))} | {_e(par.get('p95_rel_l2'))} | "
                 f"{par['pearson']:.5f} | {_e(par.get('aligned_absrel'))} | {par['aligned_delta1']:.4f} | "
                 f"{lat:.0f} | {lat / fp32['cpu_latency']['median_ms']:.2f} | {swc} | {_gpu(p, rep)} |"
                 if "pearson" in par else
                 f"| {name} | {r['bytes'] / 1e6:.2f} | {r['bytes'] / fp32['bytes']:.2f} | {r['ops']} | "
                 f"{par.get('error', '–')} | | | | | {lat or '–'} | | {swc} | {_gpu(p, rep)} |")
    L += ["", "What each precision is:", ""]
    L += [f"- `{p}`: {r['summary']}" for p, r in _rows(rep)]
    L += ["", f"![size, error and latency per precision]({PLOT})", ""]
    L += _findings(rep) + [""]


def _findings(rep) -> list[str]:
    R, h = rep["rows"], (rep.get("h200") or {}).get("rows", {})
    out = ["Reading it:", ""]
    f16 = R.get("fp16")
    if f16 and h.get("fp16", {}).get("gpu") and h.get("fp32", {}).get("gpu"):
        ratio = h["fp16"]["gpu"]["median_ms"] / h["fp32"]["gpu"]["median_ms"]
        out.append(f"- FP16 weights: {f16['bytes'] / 1e6:.2f} MB ({f16['bytes'] / R['fp32']['bytes']:.0%} of FP32), "
                   f"H200 FP32-enforced {ratio:.3f}× the FP32 file's time; CPU "
                   f"{f16['cpu_latency']['median_ms'] / R['fp32']['cpu_latency']['median_ms']:.2f}× (float32 compute "
                   f"after {f16['op_histogram'].get('DEQUANTIZE')} DEQUANTIZE ops on constants). The remaining float32 "
                   "bytes are the frozen position embedding (1813×384, 2.8 MB), which ai-edge-quantizer's FLOAT_CASTING "
                   "does not cover (it casts FC / CONV / TRANSPOSE_CONV / EMBEDDING_LOOKUP weights only).")
    if "int4" in R:
        out.append(f"- INT4 (FC blockwise {rep['int4_block']}, convolutions int8): {R['int4']['bytes'] / 1e6:.2f} MB. "
                   "LiteRT's GPU accelerator aborts the process compiling a blockwise-int4 FULLY_CONNECTED (SwiftShader "
                   "and H200; canary test). 4-bit channelwise everywhere (`int4-all4`) is "
                   f"{R['int4-all4']['bytes'] / 1e6:.2f} MB and runs on the GPU, at "
                   f"{R['int4-all4']['parity'].get('pooled_rel_l2', float('nan')) / max(R['int4']['parity'].get('pooled_rel_l2', 1e-9), 1e-9):.1f}× "
                   "the int4 file's error: 4-bit convolutions are what costs (measured while choosing the recipe).")
    if "static-int8" in R and "int8" in R:
        s, d = R["static-int8"]["cpu_latency"]["median_ms"], R["int8"]["cpu_latency"]["median_ms"]
        extra = R["static-int8"]["ops"] - R["fp32"]["ops"]
        out.append(f"- Static INT8 (FC / CONV_2D with int8 activations, calibrated): CPU {s:.0f} ms = {s / d:.2f}× "
                   f"dynamic INT8's {d:.0f} ms — the ≤ 0.6× goal is not met. On this CPU "
                   f"({rep['environment'].get('cpu')}, AVX2, no VNNI) XNNPACK's static int8 GEMMs are no faster than "
                   f"the dynamic ones, and the {extra} QUANTIZE / DEQUANTIZE ops around them cost what int8 activations "
                   "save elsewhere (attention BATCH_MATMULs, LayerNorms and GELUs stay float). Its error is "
                   f"{R['static-int8']['parity']['pooled_rel_l2'] / R['int8']['parity']['pooled_rel_l2']:.1f}× dynamic "
                   "INT8's.")
    if "static-int8-all" in R:
        a = R["static-int8-all"]
        out.append(f"- `static_wi8_ai8` on every op (`static-int8-all`, the first static recipe): rel-L2 "
                   f"{a['parity']['pooled_rel_l2']:.2f}, CPU {a['cpu_latency']['median_ms']:.0f} ms — XNNPACK takes "
                   "none of the int8 LayerNorm / SOFTMAX / GELU / BATCH_MATMUL and LiteRT runs them on reference kernels. "
                   "On the GPU it reports full delegation, then a generated WGSL shader fails to parse (\"cannot assign "
                   "'vec4<f32>' to 'vec4<i32>'\", SwiftShader and H200) and the output is garbage — `gpu_check` reports "
                   "the validation errors; canary test. Hence the FC/CONV-only recipe.")
    if "a16w8" in R:
        out.append(f"- a16w8 (int16 activations): the GPU delegate has no INT16 tensors; on the CPU it runs on "
                   f"reference kernels ({R['a16w8']['cpu_latency']['median_ms'] / 1e3:.0f} s a call here).")
    return out


def plot() -> None:
    rep = load("precision_ladder.json")
    if not rep:
        return
    import matplotlib
    import matplotlib.ticker

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from edgedepth.fsutil import atomic_path

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    rows = [(p, r) for p, r in _rows(rep) if "pooled_rel_l2" in r.get("parity", {})]
    for ax, key, label in ((axes[0], "cpu", "CPU ms (LiteRT, 2 threads)"), (axes[1], "gpu", "H200 GPU ms (FP32 enforced)")):
        for p, r in rows:
            if key == "cpu":
                t = r["cpu_latency"]["median_ms"]
            else:
                g = (rep.get("h200") or {}).get("rows", {}).get(p, {}).get("gpu")
                if not g:
                    continue
                t = g["median_ms"]
            mb = r["bytes"] / 1e6
            ref = rep["rows"]["fp32"]["cpu_latency"]["median_ms"] if key == "cpu" else \
                (rep.get("h200") or {})["rows"]["fp32"]["gpu"]["median_ms"]
            ax.scatter(mb, r["parity"]["pooled_rel_l2"], s=40 + 80 * min(t / ref, 4.0),   # size: time ÷ FP32's, capped
                       c="tab:blue" if r["shipped"] else "tab:gray", alpha=0.7)
            ax.annotate(f"{p} {t:.0f} ms" if key == "cpu" else f"{p} {t:.1f} ms", (mb, r["parity"]["pooled_rel_l2"]),
                        fontsize=7, xytext=LABEL_OFFSET.get(p, (5, 4)), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("file size, MB")
        ax.set_ylabel("pooled rel-L2 vs PyTorch FP32 (110 images)")
        ax.set_title(f"marker size = {label} ÷ FP32's (capped at 4)", fontsize=9)
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3, which="both")
    fig.suptitle("Precision ladder, 518×686 (synthetic weights): smaller and closer is better; grey = considered")
    fig.tight_layout()
    with atomic_path(PLOT) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def summary_lines() -> list[str]:
    rep = load("precision_ladder.json")
    if not rep:
        return []
    R, h = rep["rows"], (rep.get("h200") or {}).get("rows", {})
    parts = []
    for p in ("fp32", "fp16", "int8", "int4", "static-int8"):
        r = R.get(p)
        if r and "pooled_rel_l2" in r.get("parity", {}):
            g = h.get(p, {}).get("gpu")
            parts.append(f"{p} {r['bytes'] / 1e6:.1f} MB, rel-L2 {r['parity']['pooled_rel_l2']:.1e}, CPU "
                         f"{r['cpu_latency']['median_ms']:.0f} ms" + (f", H200 {g['median_ms']:.1f} ms" if g else ""))
    return [f"- Precision ladder (518×686, `benchmarks/precision_ladder.py`, {rep['date']}; parity on "
            f"{rep['parity_method']['images']} images): " + "; ".join(parts) + "."]
