"""BENCHMARKS.md section "Browser": LiteRT.js and ONNX Runtime Web in headless chromium against their native runtimes,
from benchmarks/results/playground_latency.json (benchmarks/playground_latency.py)."""

from __future__ import annotations

from md_common import load

ENGINES = {"litertjs": "LiteRT.js", "ortweb": "ONNX Runtime Web", "ai_edge_litert": "Python ai_edge_litert",
           "onnxruntime": "Python onnxruntime"}


def _ms(v) -> str:
    return "–" if v is None else (f"{v:.0f}" if v >= 100 else f"{v:.1f}")


def _variant_name(v: dict) -> str:
    where = {"wasm": "wasm", "cpu": "CPU", "webgpu": f"WebGPU, {v.get('adapter_kind') or 'adapter'}"}[v["backend"]]
    n = v.get("threads")
    threads = f", {n} thread{'s' if n > 1 else ''}" if n and v["backend"] != "webgpu" else ""
    iso = " (page not cross-origin isolated)" if v.get("cross_origin_isolated") is False else ""
    return f"{ENGINES.get(v['engine'], v['engine'])} {where}{threads}{iso}"


def _legacy(L, pl):
    """The per-file table of records written before the interleaved browser block existed."""
    L += [pl["method"] + ".", "", "| file | LiteRT.js wasm median ms (p25–p75) | ai_edge_litert CPU median ms (p25–p75) | "
          "ratio | rel-L2 between them |", "|---|---|---|---|---|"]
    for n, r in pl["files"].items():
        a, b = r["litertjs_wasm_median_ms"], r["ai_edge_litert_cpu_median_ms"]
        L.append(f"| `{n}` | {a:.0f} ({r['litertjs_p25_p75'][0]:.0f}–{r['litertjs_p25_p75'][1]:.0f}) | {b:.0f} "
                 f"({r['py_p25_p75'][0]:.0f}–{r['py_p25_p75'][1]:.0f}) | {a / b:.1f}× | {r['rel_l2']:.1e} |")


def section_playground(L):
    pl = load("playground_latency.json")
    if not pl:
        return
    b = pl.get("browser")
    L += ["## Browser: LiteRT.js and ONNX Runtime Web vs their native runtimes (`benchmarks/playground_latency.py`)", ""]
    if not b:
        _legacy(L, pl)
    else:
        V = b["variants"]
        js = V.get("litertjs-wasm:fp32", {})
        ow = V.get("ortweb-wasm:fp32", {})
        ck = b.get("checkpoint") or {}
        builds = ", ".join(sorted({w for v in V.values() for w in v.get("wasm_fetched") or []}))
        L += [f"Method: {b['method']}. Input size {b['size']}"
              + (f", {ck.get('source')} weights ({ck.get('name')}): latency and parity only" if ck.get("source") else "")
              + f". CPU: {b.get('cpu')}, {b.get('cores')} cores. The pages are cross-origin isolated: "
              f"{'yes' if js.get('cross_origin_isolated') else 'no'}; LiteRT.js threaded relaxed-SIMD build: "
              f"{'yes' if js.get('litertjs_threaded_relaxed_simd_build') else 'no'}; wasm binaries fetched: {builds}. "
              "Ratio = browser median ÷ the native runtime's median on the same file (in brackets: the same ratio "
              "within each round, robust to a load that changes between rounds); rel-L2 = ‖y − y_native‖ / "
              "‖y_native‖ on the same input. Cores busy = CPU time of the runtime's processes (all chromium "
              "processes for a page, the Python process for a native runtime) ÷ wall time over its slots, warm-ups "
              "included: how many of the cores it kept working." + (" **The machine was shared with other heavy jobs during this run.**"
                                                 if b.get("machine", {}).get("shared") else ""), "",
              "| variant | file | median ms | IQR ms (p25–p75) | n | ratio to native (per round) | rel-L2 vs native | "
              "cores busy |",
              "|---|---|---|---|---|---|---|---|"]
        for v in V.values():
            iqr = "–" if v.get("iqr_ms") is None or v["n"] < 3 else f"{_ms(v['iqr_ms'])} ({_ms(v['p25_ms'])}–{_ms(v['p75_ms'])})"
            ratio = f"{v['ratio_to_reference']:.2f}×" if v.get("ratio_to_reference") else "–"
            if v.get("ratio_per_round"):
                ratio += f" ({' / '.join(f'{q:.2f}' for q in v['ratio_per_round'])})"
            rl = f"{v['rel_l2_vs_reference']:.1e}" if "rel_l2_vs_reference" in v else "–"
            note = f" ({v['error']})" if v.get("error") else ""
            busy = f"{v['cores_busy']:.2f}" if v.get("cores_busy") is not None and v["n"] else "–"
            L.append(f"| {_variant_name(v)} | `{v['file']}` | {_ms(v.get('median_ms'))}{note} | {iqr} | {v['n']} | "
                     f"{ratio} | {rl} | {busy} |")
        L.append("")
        for c in b.get("comparisons", []):
            L.append(f"- {c['what']}: rel-L2 {c['rel_l2']:.1e}" +
                     (f", median ratio {c['ratio_median_a_over_b']:.2f}×" if "ratio_median_a_over_b" in c else ""))
        if js.get("median_ms") and ow.get("median_ms"):
            L.append(f"- LiteRT.js wasm ÷ ONNX Runtime Web wasm (FP32): **{js['median_ms'] / ow['median_ms']:.2f}×**")
        splits = [(k, v) for k, v in V.items() if v.get("split_median_ms")]
        if splits:
            L += ["", "LiteRT.js per-call split (medians, ms: write = `new Tensor` from the page's Float32Array, run = "
                  "`model.run`, read = `toTypedArray()` copy back):", ""]
            for _, v in splits:
                s = v["split_median_ms"]
                tot = s["write"] + s["run"] + s["read"]
                L.append(f"- {_variant_name(v)} `{v['file']}`: write {_ms(s['write'])}, run {_ms(s['run'])} "
                         f"({100 * s['run'] / tot:.1f} %), read {_ms(s['read'])}"
                         + (" (on WebGPU `run` only queues the work: the wait for it is in read)"
                            if v["backend"] == "webgpu" else ""))
        if b.get("failures"):
            L += ["", "Failed: " + "; ".join(f"{k}: {e}" for k, e in b["failures"].items())]
    by = {r.get("precision"): r for r in pl["files"].values() if r.get("size") == (b or {}).get("size", r.get("size"))}
    V = (b or {}).get("variants", {})
    r1 = lambda k: (V.get(k, {}).get("round_medians_ms") or [None])[0]   # noqa: E731 - first round: same load
    if all(r1(k) for k in ("litertjs-wasm:fp16", "litertjs-wasm:fp32", "ai_edge_litert-cpu:fp16",
                           "ai_edge_litert-cpu:fp32")):
        L += ["", f"In the same (first) round, the FP16-weight file takes "
                  f"{r1('litertjs-wasm:fp16') / r1('litertjs-wasm:fp32'):.1f}× the FP32 file's time in LiteRT.js wasm "
                  f"(natively {r1('ai_edge_litert-cpu:fp16') / r1('ai_edge_litert-cpu:fp32'):.2f}×), "
                  "so a release recommends FP32 for wasm and the FP16-weight file only for WebGPU (`recommended` in "
                  "`manifest.json`, which the playground follows)."]
    elif "fp16" in by and "fp32" in by:
        q = by["fp16"]["litertjs_wasm_median_ms"] / by["fp32"]["litertjs_wasm_median_ms"]
        L += ["", f"The FP16-weight file takes {q:.1f}× the FP32 file's time in LiteRT.js wasm (natively "
                  f"{by['fp16']['ai_edge_litert_cpu_median_ms'] / by['fp32']['ai_edge_litert_cpu_median_ms']:.2f}×), "
                  "so a release recommends FP32 for wasm and the FP16-weight file only for WebGPU (`recommended` in "
                  "`manifest.json`, which the playground follows)."]
    L.append("")
    _webcam(L)


def _webcam(L):
    w = load("webcam_fps.json")
    if not w:
        return
    L += ["### Webcam mode (`benchmarks/webcam_fps.py`)", "",
          f"Method: {w['method']}. CPU: {w['cpu']}, {w['cores']} cores; {w['date']}"
          + (" (the machine was shared with other heavy jobs)" if w["machine"]["shared"] else "") + ".", "",
          "| runtime | file | smoothing | frames/s (per round) | frame ms | model ms | preprocessing ms | other ms |",
          "|---|---|---|---|---|---|---|---|"]
    for r in w["variants"].values():
        sm = r["smoothing"] or {}
        smooth = f"on, weight {sm['alpha']:.2f}" if sm.get("on") else "off"
        per = " / ".join(f"{f:.2f}" for f in r["fps_per_round"])
        L.append(f"| {r['runtime']} {r['backend'].split(' ')[0] if r['backend'] else ''} | `{r['file']}` | {smooth} | "
                 f"**{r['fps']:.2f}** ({per}) | {_ms(r['frame_ms_median'])} | {_ms(r['model_ms_median'])} | "
                 f"{_ms(r['preprocess_ms_median'])} | {_ms(r['other_ms_median'])} |")
    rows = list(w["variants"].values())
    share = max((r["frame_ms_median"] - r["model_ms_median"]) / r["frame_ms_median"] for r in rows)
    L += ["", f"Preprocessing + everything else is at most {100 * share:.0f} % of a frame in every row: the model is the "
          "frame."]
    on = next((r for r in rows if (r["smoothing"] or {}).get("on")), None)
    off = next((r for r in rows if on and r["file"] == on["file"] and not (r["smoothing"] or {}).get("on")), None)
    if on and off:
        L[-1] += (f" Smoothing on vs off, same file: frame {_ms(on['frame_ms_median'])} vs {_ms(off['frame_ms_median'])}"
                  f" ms, of which other {_ms(on['other_ms_median'])} vs {_ms(off['other_ms_median'])} ms (the EMA's "
                  "cost is within that part's noise).")
    L += ["On this 2-core CPU's wasm only the smallest size gives several frames per second; the 518×686 file is for "
          "WebGPU on a real GPU (not measurable here: the only adapter is SwiftShader).", ""]
