"""BENCHMARKS section and README line: Depth Anything 3 on LiteRT's GPU delegate, rewrite set by rewrite set
(results/da3_delegation.json, benchmarks/da3_delegation.py)."""

from __future__ import annotations

from md_common import load

LABELS = {"none": "none (plain)", "static_rope_only": "`da3_static_rope` only",
          "previous_default": "first three `da3_*` rewrites", "default": "**default** (all `da3_*` rewrites)"}


def _row(r: dict) -> str:
    model = f"{r['model']} {r['size']}"
    if not r.get("converted"):
        return f"| {model} | {LABELS.get(r['rewrites'], r['rewrites'])} | does not convert: {r['error'][:60]}… | | | | | |"
    g, rl = r.get("gpu") or {}, r.get("rel_l2") or {}
    where = f"{g.get('gpu_ops')} / {g.get('cpu_ops')}" + (" (full)" if g.get("fully_delegated") else "")
    gpu_cpu = rl.get("gpu_vs_cpu")
    return (f"| {model} | {LABELS.get(r['rewrites'], r['rewrites'])} | {r['ops']} | {r['gpu_hazards']} | {where} | "
            f"{'–' if gpu_cpu is None else f'{gpu_cpu:.1e}'} | {rl.get('cpu_vs_torch', float('nan')):.1e} | "
            f"{r['file_bytes'] / 1e6:.1f} MB |")


def section_da3(L: list[str]) -> None:
    r = load("da3_delegation.json")
    if not r:
        return
    m = r["machine"]
    L += ["## Depth Anything 3 on LiteRT's GPU delegate (issue 31)", "",
          f"`{r['command']}`, {r['date']}, {m['cpu']} ({m['cores']} cores), "
          + ", ".join(f"{k} {v}" for k, v in sorted(r["versions"].items()))
          + f". GPU: {r['gpu_mode']} on {r['gpu_adapter'][0].split(',')[0]}; CPU: {r['cpu_runner']}; input: "
          f"{r['input']}; reference: {r['torch_reference']}. ops on GPU / CPU as the GPU accelerator alone places "
          "them; GPU-vs-CPU only for fully delegated files (the check compiles for the GPU alone); hazards: ops the "
          "LiteRT GPU delegate takes but computes wrongly (`benchmarks/gpu_hazards.py`).", "",
          "| model | rewrites | ops | GPU hazards | ops GPU / CPU | rel-L2 GPU vs CPU | rel-L2 CPU vs PyTorch | file |",
          "|---|---|---|---|---|---|---|---|"]
    L += [_row(x) for x in r["runs"]] + [""]


def summary_lines() -> list[str]:
    """One README line: the default rewrites' file for each model measured."""
    r = load("da3_delegation.json")
    if not r:
        return []
    parts = [f"{x['model']} {x['size']}: {x['ops']} ops, {x['gpu']['gpu_ops']} on the GPU / {x['gpu']['cpu_ops']} on "
             f"the CPU, {x['gpu_hazards']} hazards, GPU vs CPU rel-L2 {x['rel_l2']['gpu_vs_cpu']:.1e}"
             for x in r["runs"] if x.get("rewrites") == "default" and x.get("converted") and x.get("gpu")
             and x["rel_l2"].get("gpu_vs_cpu") is not None]
    return [f"- Depth Anything 3 on LiteRT's GPU delegate (SwiftShader, `benchmarks/da3_delegation.py`, {r['date']}): "
            + "; ".join(parts) + "."] if parts else []
