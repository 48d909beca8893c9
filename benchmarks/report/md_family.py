"""BENCHMARKS.md section "Model family" (issue 17), from results/family.json (used by make_benchmarks_md.py)."""

from __future__ import annotations

from md_common import load


def _pair(a, b, fmt) -> str:
    return " / ".join("—" if v is None else format(v, fmt) for v in (a, b))


def _sw(f) -> str:
    g = f["gpu_swiftshader"]
    return ("invalid ‡" if g.get("validation_errors") else "yes") if g["fully_delegated"] else "**no**"


def _h200(rep, name, backend):
    """H200 medians FP32 / INT8 file; "—" where not measured; why not, where it did not compile or validate."""
    def one(h):
        if not h:
            return "—"
        if h.get(backend):
            return f"{h[backend]['median_ms']:.1f}"
        return "invalid pipeline" if h.get("validation_errors") else f"no ({(h.get('error') or '?')[:60]})"
    rows = (rep.get("h200") or {}).get("rows", {})
    return " / ".join(one(rows.get(f"{name}.{p}")) for p in ("fp32", "int8"))


# PyTorch CUDA on the same H200 (benchmarks/gpu_reference.py), per member: Small's is the issue-15 run
TORCH_CUDA = {"synthetic": "gpu_reference.json", "synthetic-base": "gpu_reference_synthetic-base.json",
              "synthetic-large": "gpu_reference_synthetic-large.json"}


def _torch_cuda(name: str) -> str:
    """'eager FP32 / fastest variant (name)' medians at 518x686, or "—" where not measured."""
    rep = load(TORCH_CUDA[name]) if name in TORCH_CUDA else None
    v = ((rep or {}).get("sizes", {}).get("518x686") or {}).get("variants", {})
    if "eager-fp32" not in v:
        return "—"
    best = min((k for k in v if "median_ms" in v[k]), key=lambda k: v[k]["median_ms"])
    return f"{v['eager-fp32']['median_ms']:.1f} / {v[best]['median_ms']:.1f} ({best})"


def _build(b) -> str:
    """'export s / peak RSS GiB' of the optimised export (plain in brackets), or why it failed."""
    def one(r):
        if not r:
            return "—"
        if "error" in r:
            return f"**failed** ({r['error']}, peak {r.get('peak_rss_mib', r['peak_rss_mib_wait4']) / 1024:.1f} GiB)"
        return f"{r['export_s'] / 60:.1f} min / {r['peak_rss_mib'] / 1024:.1f} GiB"
    return f"{one(b.get('optimised'))} ({one(b.get('plain'))})"


def _output(r) -> str:
    return f"metric, 0–{r['max_depth']} m" if r["kind"] == "metric" else "relative"


def section_family(L):
    rep = load("family.json")
    if not rep:
        return
    pm, cm, env = rep["parity_method"], rep["cpu_method"], rep["environment"]
    hm = (rep.get("h200") or {}).get("method", {})
    rows = [(n, rep["rows"][n]) for n in rep["members"] if n in rep["rows"]]
    h200 = (f"({hm.get('rounds')} × ({hm.get('warmup')} + {hm.get('iters')})); timing twins: same graphs, seeded "
            "weights" if hm else "(not measured yet)")
    L += ["## Model family (518×686)", "",
          f"Every Depth Anything V2 member edgedepth exports, as its synthetic stand-in (exact architecture, seeded "
          f"realistic weights: graph, ops, delegation, latency, parity and export cost transfer to the trained "
          f"checkpoint; depth quality does not). `benchmarks/family.py`, {rep['date']}. Ops: plain FP32 (no rewrites) "
          f"→ optimised FP32 / INT8. GPU: compiled on LiteRT's GPU accelerator alone (SwiftShader), optimised FP32 / "
          f"INT8; the plain FP32 files in brackets. rel-L2: pooled, LiteRT CPU vs PyTorch FP32 of the same member on "
          f"{pm['images']} images spread over the bundled photos (`image_set(limit=N)`); in brackets the float64 "
          f"floor = PyTorch FP32 vs PyTorch float64 of the same member (first 2 images): what FP32 rounding alone "
          f"costs. CPU: medians of one interleaved run over all {2 * len(rows)} files, {cm['rounds']} rounds × "
          f"({cm['warmup']} warm-up + {cm['iters']} timed calls) — few because a Large call takes seconds — "
          f"{env.get('cpu')}, {env.get('threads')} threads. H200: FP32-enforced and default-precision medians of one "
          f"interleaved run {h200}. PyTorch CUDA: the same synthetic model on the same H200 "
          "(`benchmarks/gpu_reference.py`: eager FP32 with TF32 off, and the fastest of eager TF32 / FP16 autocast / "
          "torch.compile CUDA graphs FP16, device-resident input, CUDA events; not measured for the metric heads, "
          "whose backbone and neck are Small's; transformers 5.24 on the device's torch 2.11, so the compiled rows "
          "ran with the attention mask that keeps fused attention out — not the device limit, see \"The device "
          "limit, two timers\"). Export: wall time of the export itself (imports and checkpoint load "
          "excluded) / "
          f"peak RSS of the exporting process, optimised FP32 + INT8 (plain FP32 in brackets), one member at a time "
          f"on this {env.get('cores')}-core machine.", "",
          "| member | licence | output | params | ops plain → FP32 / INT8 | MB FP32 / INT8 | SwiftShader FP32 / INT8 "
          "(plain) | rel-L2 FP32 / INT8 (float64 floor) | CPU ms FP32 / INT8 | H200 ms FP32-enforced, FP32 / INT8 | "
          "H200 ms default precision | PyTorch CUDA H200 ms eager FP32 / fastest | export / peak RSS (plain) |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for n, r in rows:
        f = r["files"]
        par = [f[p].get("parity", {}).get("pooled_rel_l2") for p in ("fp32", "int8")]
        lat = [f[p].get("cpu_latency", {}).get("median_ms") for p in ("fp32", "int8")]
        L.append(f"| `{n}` ({r['member']}) | {r['license']} | {_output(r)} | {r['params'] / 1e6:.1f} M | "
                 f"{f['fp32_plain']['ops']} → {f['fp32']['ops']} / {f['int8']['ops']} | "
                 f"{_pair(f['fp32']['bytes'] / 1e6, f['int8']['bytes'] / 1e6, '.1f')} | "
                 f"{_sw(f['fp32'])} / {_sw(f['int8'])} ({_sw(f['fp32_plain'])}) | {_pair(*par, '.1e')} "
                 f"({r['float64_floor']['pooled_rel_l2']:.1e}) | {_pair(*lat, '.0f')} | {_h200(rep, n, 'gpu')} | "
                 f"{_h200(rep, n, 'gpu-fp16')} | {_torch_cuda(n)} | {_build(r['build'])} |")
    errs = {(f["fp32_plain"]["gpu_swiftshader"].get("error") or "")[:120] for _, r in rows for f in [r["files"]]}
    errs.discard("")
    L += [""] + ([f"Plain FP32 on the GPU accelerator: {'; '.join(sorted(errs))}.", ""] if errs else [])
    for n, r in rows:
        v = {p: f["gpu_swiftshader"] for p, f in r["files"].items() if f["gpu_swiftshader"].get("validation_errors")}
        if v:
            L += [f"‡ `{n}` on SwiftShader: " + "; ".join(
                f"{p} {'fully delegated' if g['fully_delegated'] else 'not fully delegated'}, then "
                f"{g['validation_errors']} WebGPU validation errors" for p, g in v.items()) +
                f" (first: \"{next(iter(v.values()))['validation_error']}\"): the output is not usable on that "
                "adapter.", ""]
    split_wide_conv_lines(L)


def split_wide_conv_lines(L) -> None:
    """V2 Large before / after ``split_wide_conv`` (results/delegation_v2_large.json, benchmarks/da3_delegation.py)."""
    r = load("delegation_v2_large.json")
    if not r:
        return
    runs = {x["rewrites"]: x for x in r["runs"]}
    a, b = runs.get("default_without_split_wide_conv"), runs.get("default")
    if not (a and b):
        return

    def gpu(x: dict) -> str:
        g = x["gpu"]
        if g.get("validation_errors") is not None or g.get("fully_delegated"):
            return f"{g.get('validation_errors') or 0} WebGPU validation errors"
        return f"no answer from SwiftShader ({g.get('error')})"
    L += [f"`split_wide_conv` on `synthetic-large` 518×686 (`{r['command']}`, {r['date']}, {r['machine']['cpu']}): "
          f"{a['ops']} → {b['ops']} ops, LiteRT CPU vs PyTorch FP32 rel-L2 {a['rel_l2']['cpu_vs_torch']:.1e} → "
          f"{b['rel_l2']['cpu_vs_torch']:.1e}; GPU accelerator: before, {gpu(a)}; after, {gpu(b)}. The files in the "
          "table above predate the rewrite.", ""]


def summary_lines() -> list[str]:
    """One README line: every member's ops, delegation and latency (from results/family.json)."""
    rep = load("family.json")
    if not rep:
        return []
    h = (rep.get("h200") or {}).get("rows", {})
    parts = []
    for n in rep["members"]:
        r = rep["rows"].get(n)
        if not r:
            continue
        f, g = r["files"], (h.get(f"{n}.fp32") or {}).get("gpu")
        parts.append(f"{r['member']} {f['fp32_plain']['ops']} → {f['fp32']['ops']} ops, FP32 rel-L2 "
                     f"{f['fp32']['parity']['pooled_rel_l2']:.1e}, CPU {f['fp32']['cpu_latency']['median_ms']:.0f} ms"
                     + (f", H200 {g['median_ms']:.1f} ms" if g else ""))
    return [f"- Model family (518×686 FP32, `benchmarks/family.py`, {rep['date']}; every optimised FP32/INT8 file fully "
            "on the H200's GPU accelerator, valid (Large exceeds SwiftShader's 8192-texel texture limit); details in "
            "BENCHMARKS.md \"Model family\"): " + "; ".join(parts) + "."]
