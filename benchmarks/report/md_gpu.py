"""BENCHMARKS.md section "Where the GPU time goes" (issue 15), from results/gpu_attribution.json (used by
make_benchmarks_md.py), and its bar chart docs/gpu_attribution.png."""

from __future__ import annotations

import json
import os

from md_common import R, load, webgpu_file_row

PLOT = "docs/gpu_attribution.png"
MODES = (("gpu", "FP32 enforced"), ("gpu-fp16", "default precision (FP16)"))



def _t(a, key, mode):
    v = a["bench"]["variants"].get(f"{key} [{mode}]")
    return v["median_ms"] if v else None


def per_copy(a, piece, mode):
    """(ms per copy, how) — the k1/k2 difference where the piece has two chain lengths, else the whole file."""
    reps = sorted(int(k) for k in a["index"]["pieces"][piece]["reps"])
    if len(reps) == 1:
        return _t(a, f"{piece}_x{reps[0]}", mode), "whole file (incl. I/O)"
    k1, k2 = reps[0], reps[-1]
    t1, t2 = _t(a, f"{piece}_x{k1}", mode), _t(a, f"{piece}_x{k2}", mode)
    if t1 is None or t2 is None:
        return None, "not timed"
    return (t2 - t1) / (k2 - k1), f"(t×{k2} − t×{k1}) ÷ {k2 - k1}"


def macs_per_copy(a, piece):
    reps = a["index"]["pieces"][piece]["reps"]
    ks = sorted(int(k) for k in reps)
    m = [reps[str(k)]["macs"]["total"] for k in ks]
    return m[0] if len(ks) == 1 else (m[-1] - m[0]) / (ks[-1] - ks[0])


def attribution_rows(a):
    """(label, piece, copies in the model) — how the whole model decomposes."""
    layers = a["index"]["dims"]["layers"]
    return [("per-call floor: model-sized input write + output read + sync", "call_model_io", 1),
            ("stem (patch conv, CLS, position; incl. the floor)", "stem", 1),
            ("encoder layer", "block", layers),
            ("· attention half", "attention_half", layers),
            ("·· attention core on [1,h,N,d] (2 BATCH_MATMUL + SOFTMAX)", "attention_core_rank4", layers),
            ("··· SOFTMAX alone", "softmax", layers),
            ("· MLP half", "mlp_half", layers),
            ("·· fc1 + fc2 (FULLY_CONNECTED pair)", "fc_pair", layers),
            ("·· GELU", "gelu", layers),
            ("LayerNorm (2 per layer)", "layernorm", 2 * layers),
            ("neck + head (DPT; incl. a token-sized floor)", "neck_head", 1),
            ("per-call floor: token-sized file, one ADD", "call_tokens", 1)]


def _fmt(v, f="{:.2f}"):
    return "–" if v is None else f.format(v)


def section_gpu_attribution(L):
    a = load("gpu_attribution.json")
    if not a:
        return
    env, idx, m = a["environment"], a["index"], a["bench"]["method"]
    d = idx["dims"]
    whole = {mode: _t(a, "model_shipped", mode) for mode, _ in MODES}
    L += ["## Where the GPU time goes (H200, LiteRT WebGPU)", "",
          f"LiteRT's Python API has no per-op GPU profiler, so `benchmarks/gpu_attribution.py` cuts the optimised "
          f"{idx['model']} model ({idx['size'][0]}×{idx['size'][1]}: {d['tokens']} tokens × {d['d_model']}, "
          f"{d['heads']} heads of {d['head_dim']}, {d['layers']} layers) into pieces, converts each as a chain of k1 and "
          "k2 copies and times both on the GPU: per copy = (t×k2 − t×k1) ÷ (k2 − k1), which cancels the input write, "
          "output read and dispatch overhead the two files share. Weights are seeded stand-ins (latency only). "
          f"Adapter: {env.get('gpu_adapter')}. One interleaved run: {m['rounds']} rounds × ({m['warmup']} warm-up + "
          f"{m['iters']} timed), order rotated; a call = input write + run + output read.", ""]
    if os.path.isfile(PLOT):
        L += [f"![where the GPU time goes]({PLOT})", ""]
    L += ["| piece | how | GMAC per copy | copies in model | FP32 ms per copy | FP32 ms in model | share of whole | "
          "TFLOP/s | FP16 ms per copy |", "|---|---|---|---|---|---|---|---|---|"]
    for label, piece, n in attribution_rows(a):
        if piece not in idx["pieces"]:
            continue
        t32, how = per_copy(a, piece, "gpu")
        t16, _ = per_copy(a, piece, "gpu-fp16")
        gmac = macs_per_copy(a, piece) / 1e9
        share = None if t32 is None or not whole["gpu"] else n * t32 / whole["gpu"]
        tflops = None if not t32 or t32 <= 0 or not gmac else 2 * gmac / t32
        L.append(f"| {label} | {how} | {gmac:.2f} | {n} | {_fmt(t32, '{:.3f}')} | {_fmt(None if t32 is None else n * t32)} "
                 f"| {_fmt(share, '{:.0%}')} | {_fmt(tflops, '{:.1f}')} | {_fmt(t16, '{:.3f}')} |")
    est = {mode: _estimate(a, mode) for mode, _ in MODES}
    L += [f"| **whole model, shipped file** | whole file | {idx['models']['shipped']['macs']['total'] / 1e9:.2f} | 1 | "
          f"{_fmt(whole['gpu'])} | {_fmt(whole['gpu'])} | 100% | "
          f"{_fmt(2 * idx['models']['shipped']['macs']['total'] / 1e9 / whole['gpu'] if whole['gpu'] else None, '{:.1f}')} "
          f"| {_fmt(whole['gpu-fp16'])} |",
          f"| stem + {d['layers']} layers + neck/head − one token floor (sum of pieces) | | | | | {_fmt(est['gpu'])} | "
          f"{_fmt(est['gpu'] / whole['gpu'] if est['gpu'] and whole['gpu'] else None, '{:.0%}')} | | {_fmt(est['gpu-fp16'])} |",
          ""]
    L += _reading(a) + [""]
    _floor(L)
    _formulations(L, a)
    _model_variants(L, a)


def _floor(L):
    """The per-call floor split into its parts (benchmarks/gpu_floor.py)."""
    f = load("gpu_floor.json")
    if not f:
        return
    parts = ["call", "write", "run+read", "run x4 + read, per run"]
    L += [f"The per-call floor, split (`benchmarks/gpu_floor.py`; {f['method']}; call = write + run + read as in "
          "every figure above; run+read = the input already on the GPU; run x4 + read = four runs queued, one read, "
          "per run):", "",
          "| file | in / out MB | " + " | ".join(f"{p} ms" for p in parts) + " |", "|---|---|" + "---|" * len(parts)]
    for lab, r in f["files"].items():
        m = r["median_ms"]
        L.append(f"| {lab} | {r['input_mb']:.1f} / {r['output_mb']:.1f} | " + " | ".join(f"{m[p]:.2f}" for p in parts)
                 + " |")
    shipped, tiny = f["files"].get("shipped model"), f["files"].get("tiny [1,8] ADD")
    if shipped and tiny:
        m = shipped["median_ms"]
        L += ["", f"Writing the {shipped['input_mb']:.1f} MB input is {m['write']:.2f} ms of the shipped file's "
              f"{m['call']:.2f} ms call, and a call of the tiny file costs {tiny['median_ms']['call']:.2f} ms (dispatch +"
              f" wait, no data). `run_by_index` returns before the GPU finishes (the tiny file's queued runs take "
              f"{tiny['median_ms']['run x4 + read, per run']:.2f} ms each): with the input already on the GPU the "
              f"model takes {m['run+read']:.2f} ms per call and {m['run x4 + read, per run']:.2f} ms per run when runs "
              "are queued back to back — the figure to hold against PyTorch's CUDA-event time, which leaves host "
              "copies out.", ""]
    _uint8_input(L)
    _webgpu_file(L)


def _uint8_input(L):
    """The shipped graph with a uint8 pixel input (`export --input-dtype uint8`) against the float32 one."""
    runs = [(load(f"gpu_floor_u8in_{k}.json"), label) for k, label in (("fp32", "FP32 enforced"),
                                                                        ("default", "default precision (FP16)"))]
    runs = [(r, label) for r, label in runs if r]
    if not runs:
        return
    L += ["The same graph taking uint8 pixels (`edgedepth export --input-dtype uint8`: the 1.1 MB of resized RGB, "
          "normalised in the graph) against the shipped float32 input, one interleaved run per precision "
          f"({runs[0][0]['method'].split('; ', 1)[-1]}; timing twins, seeded weights):", "",
          "| GPU precision | float32 input ms | uint8 input ms | saved ms | ratio |", "|---|---|---|---|---|"]
    for r, label in runs:
        f = {k: v["median_ms"]["call"] for k, v in r["files"].items()}
        a, b = f["shipped model"], f["shipped model, uint8 input (--input-dtype uint8)"]
        L.append(f"| {label} | {a:.2f} | {b:.2f} | {a - b:.2f} | {b / a:.3f} |")
    L.append("")
    ref = load("gpu_reference_u8in_call.json")       # PyTorch CUDA in the same device call, right after
    if ref:
        v = ref["sizes"]["518x686"]["variants"]
        L += ["PyTorch CUDA on the same GPU in the same device call (`gpu_reference.py`, CUDA events, host copies "
              "excluded): " + ", ".join(f"{k} {x['median_ms']:.2f} ms" for k, x in v.items()) + ".", ""]
    c = load("uint8_input_cpu.json")
    if c:
        v = c["bench"]["variants"]
        f32, u8 = (next(r for n, r in v.items() if n.endswith("_u8in.tflite") == want) for want in (False, True))
        par = {r["artifact"].endswith("_u8in.tflite"): r["metrics"]["pooled_rel_l2"] for r in c["validate"]["results"]}
        env, m = c["bench"]["environment"], c["bench"]["method"]
        L += [f"On the CPU ({env.get('cpu')}, {env.get('threads')} threads, one interleaved run, {m['rounds']} × "
              f"({m['warmup']} + {m['iters']})): the uint8-input file takes "
              f"{u8['median_ms']:.0f} ms vs {f32['median_ms']:.0f} ms ({u8['median_ms'] / f32['median_ms']:.2f}×); "
              f"parity vs PyTorch FP32 on {c['validate']['image_set']['count']} images {par[True]:.2e} vs "
              f"{par[False]:.2e} for the float-input file (pooled rel-L2; the float64 floor is in \"Parity floor\").", ""]


def _webgpu_file(L):
    """The release's WebGPU file (fp16 weights, uint8 input) against the files it replaces, both GPU precisions and
    PyTorch CUDA in one device call (gpu_floor.py --files ... then gpu_reference.py)."""
    runs = {b: load(f"gpu_webgpu_file_{b}.json") for b, _ in MODES}
    ref = load("gpu_reference_webgpu_file.json")
    if not all(runs.values()) or not ref:
        return
    a = runs["gpu"]
    L += ["### The release's WebGPU file (H200)", "",
          "The release now ships its WebGPU file with fp16 weights *and* a uint8 pixel input "
          "(`recommended.webgpu` in the manifest; the playground feeds it the pixels). Timing twins of the release files "
          f"(same graphs, seeded weights), one device call: FP32 enforced, then default precision, each "
          f"{a['method'].split('; ', 1)[-1]}, then PyTorch CUDA on the same GPU. call = write + run + read; per queued "
          "run = four runs back to back, one read (the GPU's compute for one inference).", "",
          "| file (synthetic release) | input MB | FP32 call ms | FP32 per queued run ms | default call ms | "
          "default per queued run ms |", "|---|---|---|---|---|---|"]
    d = runs["gpu-fp16"]["files"]
    for lab, f in a["files"].items():
        name = (f.get("stands_for") or {}).get("file") or "depth_anything_v2_small_518x686_fp32.tflite"
        m, n = f["median_ms"], d[lab]["median_ms"]
        L.append(f"| `{name}` | {f['input_mb']:.1f} | {m['call']:.2f} | {m['run x4 + read, per run']:.2f} | "
                 f"{n['call']:.2f} | {n['run x4 + read, per run']:.2f} |")
    v = {k: x["median_ms"] for k, x in ref["sizes"]["518x686"]["variants"].items()}
    host = ref["sizes"]["518x686"].get("host_io_ms")
    new = webgpu_file_row(a)
    old = next(f for f in a["files"].values() if (f.get("stands_for") or {}).get("file", "").endswith("_fp16.tflite"))
    c, q, o = new["median_ms"]["call"], new["median_ms"]["run x4 + read, per run"], old["median_ms"]["call"]
    L += ["", "PyTorch CUDA, same device call (CUDA events, host copies excluded; they cost "
          f"{host:.2f} ms apart): " + ", ".join(f"{k} {x:.2f} ms" for k, x in v.items()) + ".", "",
          f"Reading it: the WebGPU file's call takes {c:.2f} ms against {o:.2f} ms for the fp16-weight float-input file "
          f"it replaces ({c / o:.2f}×); its GPU compute (per queued run) is {q:.2f} ms against PyTorch eager FP32's "
          f"{v['eager-fp32']:.2f} ms ({q / v['eager-fp32']:.2f}×), and a whole call including the input write and the "
          f"read-back is {c / v['eager-fp32']:.2f}× PyTorch eager FP32 without its host copies "
          f"({c / (v['eager-fp32'] + host):.2f}× with them). Weights in fp16 cost nothing under FP32 enforcement (the "
          "delegate dequantises them once). This loan's host was slower than the one of the uint8 table above (PyTorch "
          "eager TF32 and FP16 autocast came out slower than FP32: launch-bound), which is why only ratios inside one "
          "call are compared.", ""]
    par = load("webgpu_file_cpu_parity.json")
    if par:
        r = {x["artifact"]: x["metrics"]["pooled_rel_l2"] for x in par["results"]}
        u8 = next(n for n in r if n.endswith("_u8in.tflite"))
        f = next(n for n in r if not n.endswith("_u8in.tflite"))
        L += [f"Parity (`edgedepth validate`, LiteRT CPU, {par['image_set']['count']} images of the default set, "
              f"{par['environment'].get('cpu')}): `{u8}` {r[u8]:.2e} pooled rel-L2 vs PyTorch FP32, `{f}` {r[f]:.2e}: "
              "the in-graph normalisation adds nothing measurable; the difference from FP32 is the fp16 weights.", ""]


def _reading(a) -> list[str]:
    """What the table says, in numbers from the same file."""
    t = lambda p: per_copy(a, p, "gpu")[0]  # noqa: E731
    layers = a["index"]["dims"]["layers"]
    whole, floor = _t(a, "model_shipped", "gpu"), t("call_model_io")
    core, fc, ln, gelu = t("attention_core_rank4"), t("fc_pair"), t("layernorm"), t("gelu")
    if None in (whole, floor, core, fc, ln, gelu):
        return []
    out = [f"Reading it: of the shipped file's {whole:.1f} ms, about {floor:.1f} ms is the per-call floor (writing the "
           f"{_mb(a, 'call_model_io')} input, reading the depth map back, waiting for the GPU) and "
           f"{layers * core:.1f} ms the {layers} attention cores' BATCH_MATMULs and SOFTMAX "
           f"({2 * macs_per_copy(a, 'attention_core_rank4') / 1e9 / core:.1f} TFLOP/s "
           f"FP32-equivalent); the MLP's two FULLY_CONNECTEDs take {layers * fc:.1f} ms in all. LayerNorm "
           f"({2 * layers * ln:.2f} ms for 24) and GELU ({layers * gelu:.2f} ms) cost almost nothing: the delegate "
           "links elementwise ops into the neighbouring kernel, so op count is not dispatch count. FP16 compute "
           "shortens the matmul pieces by 10–35 % and not the floor."]
    g = load("gpu_reference.json")
    ref = ((g or {}).get("sizes") or {}).get("518x686", {})
    e = ref.get("variants", {}).get("eager-fp32", {}).get("median_ms")
    if e:
        out.append(f"\nPyTorch's CUDA-event timing leaves the host copies out ({ref['host_io_ms']:.2f} ms there): "
                   f"without its floor the LiteRT file computes for ≈ {whole - floor:.1f} ms, against PyTorch eager "
                   f"FP32's {e:.1f} ms on the same GPU.")
    return out


def _mb(a, piece) -> str:
    shape = a["index"]["pieces"][piece]["reps"]["1"]["input"]
    n = 1
    for v in shape:
        n *= v
    return f"{n * 4 / 1e6:.1f} MB"


def _estimate(a, mode):
    """stem file + layers x block + neck/head file - the token-sized floor both whole files carry."""
    parts = [per_copy(a, p, mode)[0] for p in ("stem", "block", "neck_head", "call_tokens")]
    if any(p is None for p in parts):
        return None
    return parts[0] + a["index"]["dims"]["layers"] * parts[1] + parts[2] - parts[3]


def _formulations(L, a):
    idx = a["index"]["pieces"]
    h, hd = a["index"]["dims"]["heads"], a["index"]["dims"]["head_dim"]
    rows = [("fc_pair", "MLP pair as rank-3 FULLY_CONNECTED (shipped)"),
            ("fc_pair_2d", "MLP pair as rank-2 FULLY_CONNECTED on [N, D]"),
            ("fc_pair_conv1x1", "MLP pair as 1×1 CONV_2D on [1, N, 1, D]"),
            ("attention_core", f"attention core on rank-3 [{h}, N, {hd}] (before `rank4_attention`)"),
            ("attention_core_rank4", f"attention core on rank-4 [1, {h}, N, {hd}] (`rank4_attention`)"),
            ("attention_core_heads", f"attention core head by head on [1, N, {hd}] slices")]
    L += ["Same arithmetic, other formulations (per copy, by differencing):", "",
          "| formulation | ops per copy | FP32 ms | FP16 ms |", "|---|---|---|---|"]
    _formulation_rows(L, a, rows)
    # Later, separate runs (`run --only ...`): their rows compare only with each other (each has its own shipped row).
    _formulation_rows(L, load("gpu_attribution_vt.json"), [
        ("attention_core_rank4", "separate run: rank-4 core as shipped"),
        ("attention_core_rank4_vt", "separate run: rank-4 core, attn @ v as (vᵀ attnᵀ)ᵀ")])
    _formulation_rows(L, load("gpu_attribution_attention.json"), [
        ("attention_core_rank4", "run 3: rank-4 core as shipped (K transposed per core)"),
        ("attention_fixedkv_adjy", "run 3: rank-4 core, K = V fixed, Kᵀ transposed once for the chain"),
        ("attention_core_rank4_splitk2", "run 3: rank-4 core, attn @ v split over 2 key chunks + ADD"),
        ("attention_core_rank4_splitk4", "run 3: rank-4 core, attn @ v split over 4 key chunks + ADDs"),
        ("softmax_rank4", f"run 3: SOFTMAX alone on rank-4 [1, {h}, N, N]")])
    _formulation_rows(L, load("gpu_attribution_fc_heads.json"), [
        ("attention_core_rank4", "run 4: rank-4 core as shipped"),
        ("attention_core_fc_heads", f"run 4: head by head on [N, {hd}], q kᵀ as FULLY_CONNECTED with runtime weights")])
    L.append("")
    r3 = load("gpu_attribution_attention.json")
    if r3:
        t = {p: per_copy(r3, p, "gpu")[0] for p in ("attention_core_rank4", "attention_fixedkv_adjy",
                                                     "attention_core_rank4_splitk2", "attention_core_rank4_splitk4",
                                                     "softmax_rank4")}
        if all(v is not None for v in t.values()):
            best = min(v for k, v in t.items() if k != "softmax_rank4")
            L += [f"Run 3 (FP32): the best alternative core takes {best / t['attention_core_rank4']:.2f}× the shipped "
                  f"one; SOFTMAX is {t['softmax_rank4'] / t['attention_core_rank4'] * 100:.0f} % of a core and "
                  f"dropping the per-core Kᵀ TRANSPOSE changes a core by "
                  f"{(t['attention_fixedkv_adjy'] / t['attention_core_rank4'] - 1) * 100:+.0f} %, so the two BATCH_MATMULs "
                  f"(≈ {t['attention_core_rank4'] - t['softmax_rank4']:.2f} ms per layer) are the delegate's kernel "
                  "cost: no graph formulation tried here changes it.", ""]


def _formulation_rows(L, a, rows):
    """One table row per (piece, label) of attribution record ``a`` that has the piece: ops and ms per copy."""
    if not a:
        return
    for piece, label in rows:
        if piece not in a["index"]["pieces"] or per_copy(a, piece, "gpu")[0] is None:
            continue        # not in this run
        reps = a["index"]["pieces"][piece]["reps"]
        ks = sorted(int(k) for k in reps)
        ops = (reps[str(ks[-1])]["ops"] - reps[str(ks[0])]["ops"]) / (ks[-1] - ks[0])
        L.append(f"| {label} | {ops:.0f} | {_fmt(per_copy(a, piece, 'gpu')[0], '{:.3f}')} | "
                 f"{_fmt(per_copy(a, piece, 'gpu-fp16')[0], '{:.3f}')} |")


def _model_variants(L, a):
    b = a.get("bench_models")
    if not b:
        return
    models = a["index"]["models"]
    t = lambda key, mode: (b["variants"].get(f"{key} [{mode}]") or {}).get("median_ms")  # noqa: E731
    base = {mode: t("model_shipped", mode) for mode, _ in MODES}
    m = b["method"]
    L += [f"Whole model, one rewrite set each (a second interleaved run, {m['rounds']} rounds × ({m['warmup']} + "
          f"{m['iters']})); \"int8\" = the dynamic-INT8 file of the shipped set (weights dequantised on the GPU):", "",
          "| rewrite set | ops | FP32 ms | ÷ shipped | FP16 ms | ÷ shipped | fully on GPU |", "|---|---|---|---|---|---|---|"]
    rows = [(name, f"model_{name}", f["ops"]) for name, f in models.items()]
    rows += [(f"{name} int8", f"model_{name} int8", f["int8_ops"]) for name, f in models.items() if f.get("int8_file")]
    for name, key, ops in rows:
        v = {mode: t(key, mode) for mode, _ in MODES}
        r = {mode: (v[mode] / base[mode] if v[mode] and base[mode] else None) for mode, _ in MODES}
        full = all((a["files"].get(key) or {}).get(mode, {}).get("fully_accelerated") for mode, _ in MODES)
        label = _label(name)
        L.append(f"| {label} | {ops} | {_fmt(v['gpu'])} | {_fmt(r['gpu'], '{:.3f}')} | {_fmt(v['gpu-fp16'])} | "
                 f"{_fmt(r['gpu-fp16'], '{:.3f}')} | {'yes' if full else 'NO'} |")
    L.append("")
    _cpu_side(L)


def _label(name: str) -> str:
    return name.replace("shipped", "shipped ", 1).replace("+", "+ ").replace("-", "− ").replace("  ", " ")


def _cpu_side(L):
    c = load("gpu_rewrites_cpu.json")
    if not c:
        return
    m, env = c["bench"]["method"], c["environment"]
    v = c["bench"]["variants"]
    L += [f"The same rewrite sets on the CPU (`gpu_attribution.py cpu`: real weights, LiteRT CPU, {c['threads']} threads, "
          f"{env.get('cpu')}, one interleaved run, {m['rounds']} rounds × ({m['warmup']} + {m['iters']}); rel-L2 "
          f"against PyTorch FP32 on `{c['image']}`):", "",
          "| file | ops | CPU median ms | ÷ shipped | rel-L2 vs PyTorch FP32 |", "|---|---|---|---|---|"]
    for name, f in c["files"].items():
        prec = name.rsplit(" ", 1)[1]
        base = v.get(f"shipped {prec}", {}).get("median_ms")
        t = v.get(name, {}).get("median_ms")
        L.append(f"| {_label(name)} | {f['ops']} | {_fmt(t, '{:.0f}')} | {_fmt(t / base if t and base else None, '{:.3f}')} | "
                 f"{f['rel_l2_vs_pytorch_fp32']:.2e} |")
    L.append("")


def plot(path=PLOT):
    """Horizontal bars: FP32 ms each piece costs in the whole model, next to the whole file's time."""
    a = load("gpu_attribution.json")
    if not a:
        return
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [(label.lstrip("· "), piece, n) for label, piece, n in attribution_rows(a)
            if piece in ("call_model_io", "attention_core_rank4", "fc_pair", "gelu", "layernorm")]
    vals = [(label, n * (per_copy(a, piece, "gpu")[0] or 0)) for label, piece, n in rows]
    whole = _t(a, "model_shipped", "gpu")
    other = whole - sum(v for _, v in vals) if whole else None
    if other is not None:
        vals.append(("rest (stem, QKV/o_proj, residual adds, layout ops, neck/head)", other))
    fig, ax = plt.subplots(figsize=(8, 3.2), dpi=100)
    ax.barh([v[0] for v in vals][::-1], [v[1] for v in vals][::-1], color="#4477aa")
    ax.set_xlabel(f"ms of the whole file's {whole:.1f} ms (H200, LiteRT GPU, FP32)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fig.savefig(path + ".tmp.png", metadata={"Software": None})
    plt.close(fig)
    os.replace(path + ".tmp.png", path)


def summary_lines() -> list[str]:
    """README headline: the shipped file on the H200 vs PyTorch CUDA, and what the GPU rewrite bought."""
    a, g = load("gpu_attribution.json"), load("gpu_reference.json")
    b = (a or {}).get("bench_models")
    if not b:
        return []
    t = lambda key, mode: (b["variants"].get(f"{key} [{mode}]") or {}).get("median_ms")  # noqa: E731
    ship, before = t("model_shipped", "gpu"), t("model_shipped-rank4_attention", "gpu")
    ship16 = t("model_shipped", "gpu-fp16")
    out = (f"- H200 GPU, LiteRT WebGPU, 518×686 (`benchmarks/gpu_attribution.py`, one interleaved run): shipped FP32 "
           f"file **{ship:.1f} ms** FP32 enforced, {ship16:.1f} ms default precision")
    if before:
        out += f"; {before:.1f} ms without `rank4_attention` ({ship / before:.3f}×)"
    ref = ((g or {}).get("sizes") or {}).get("518x686", {}).get("variants", {})
    if "median_ms" in ref.get("eager-fp32", {}):
        out += (f". PyTorch CUDA on the same GPU: eager FP32 {ref['eager-fp32']['median_ms']:.1f} ms, eager TF32 "
                f"{ref['eager-tf32']['median_ms']:.1f} ms, compile + CUDA graphs FP16 "
                f"{ref['compile-cudagraphs-fp16']['median_ms']:.1f} ms (with transformers' attention mask, which "
                "kept fused attention out: the device limit is below)")
    return [out + "."]
