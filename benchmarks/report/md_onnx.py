"""BENCHMARKS section: dynamic vs static ONNX files (results/onnx_dynamic.json, benchmarks/onnx_dynamic.py)."""

from __future__ import annotations

from md_common import load
from md_peers import env_line


def section_onnx_dynamic(L: list[str]) -> None:
    a = load("onnx_dynamic.json")
    if not a:
        return
    m = a["method"]
    h, w = a["size"]
    L += ["## Dynamic-size ONNX files (what transformers.js needs) vs static", "",
          f"`benchmarks/onnx_dynamic.py`: the full synthetic model at {h}×{w}, FP32 and INT8 (`quantize_dynamic`), each "
          "exported static (position embedding frozen for the size) and with dynamic height and width (the release's "
          f"`onnx/` files: the embedding resized in the graph). One interleaved run, {m['rounds']} rounds × "
          f"({m['warmup']} + {m['iters']}) calls, {m['threads']} threads, per call {m['per_call']}; OpenVINO reshapes "
          "the dynamic file to static shapes before compiling (edgedepth's runner does).", "",
          "| runtime | precision | static ms | dynamic ms | dynamic ÷ static | round medians static / dynamic |",
          "|---|---|---|---|---|---|"]
    for r in a["rows"]:
        rounds = (" / ".join(f"{v:.0f}" for v in r["static_round_medians_ms"]) + " — "
                  + " / ".join(f"{v:.0f}" for v in r["dynamic_round_medians_ms"]))
        L.append(f"| {r['runtime']} | {r['precision'].upper()} | {r['static_ms']:.0f} | {r['dynamic_ms']:.0f} | "
                 f"**{r['dynamic_over_static']:.3f}** | {rounds} |")
    where = a.get("onnxruntime_fp32_where_from") or {}
    if where:
        L += ["", "Where an ONNX Runtime FP32 difference comes from (same run, ÷ the static file): "
              + "; ".join(f"{k.removeprefix('cpu fp32 ')} **{v['over_static']:.3f}**" for k, v in where.items())
              + " — free-dimension overrides fix `height`/`width` when the session is created (static shapes, same "
              "graph: what edgedepth's runner does with a dynamic file); the static export of the dynamic graph keeps "
              "the position-embedding resize in the graph."]
        fixed = where.get("cpu fp32 dynamic, free dims fixed", {}).get("over_static")
        ort32 = next((r["dynamic_over_static"] for r in a["rows"] if r["runtime"] == "onnxruntime"
                      and r["precision"] == "fp32"), None)
        if fixed is not None and ort32 is not None:
            L += ["", f"So the cost is ONNX Runtime planning with symbolic shapes, not the graph: fixed at session "
                  f"creation the dynamic file runs at {fixed:.3f}× the static one, so the release ships the dynamic "
                  f"files only; left symbolic (transformers.js, a size per photo) ONNX Runtime takes {ort32:.2f}× — "
                  "the price of one file for every aspect ratio."]
    files = a["files"]
    L += ["", "Ops: " + ", ".join(f"{k} {v['ops']}" for k, v in files.items()) + ".", "",
          "Parity of the dynamic FP32 file (ONNX Runtime) at other sizes, one random input each:", "",
          "| size | rel-L2 vs PyTorch FP32 | vs float64 | PyTorch FP32 vs float64 |", "|---|---|---|---|"]
    for p in a["parity_dynamic_fp32"]:
        L.append(f"| {p['size'][0]}×{p['size'][1]} | {p['rel_l2_vs_torch_fp32']:.2e} | {p['rel_l2_vs_float64']:.2e} | "
                 f"{p['torch_fp32_rel_l2_vs_float64']:.2e} |")
    L += ["", env_line(a["environment"]), ""]


def summary_lines() -> list[str]:
    """README bullets: dynamic ÷ static ONNX per runtime; transformers.js's preprocessing vs ours."""
    S = []
    a = load("onnx_dynamic.json")
    if a:
        S.append(f"- Dynamic-size `.onnx` (the release's `onnx/`, what transformers.js needs) ÷ static, "
                 f"{a['size'][0]}×{a['size'][1]}, one interleaved run on {a['environment'].get('cpu')}: "
                 + ", ".join(f"{r['runtime']} {r['precision'].upper()} {r['dynamic_over_static']:.2f}"
                             for r in a["rows"])
                 + (f"; ONNX Runtime FP32 with `height`/`width` fixed at session creation (what edgedepth's runner "
                    f"does) {a['onnxruntime_fp32_where_from']['cpu fp32 dynamic, free dims fixed']['over_static']:.3f}"
                    if a.get("onnxruntime_fp32_where_from") else "") + ".")
    t = load("transformers_js_preprocessing.json")
    if t:
        s = t["summary"]["all"]
        S.append(f"- transformers.js's own resize vs PIL bicubic ({s['pixel_values_rel_l2']['n']} photos): "
                 f"`pixel_values` rel-L2 median {s['pixel_values_rel_l2']['median']:.3f} (worst "
                 f"{s['pixel_values_rel_l2']['worst']:.2f}); depth maps {s['map_rel_l2']['median']:.3f} "
                 f"({s['map_rel_l2']['worst']:.2f}) — fed the same pixels, it matches ONNX Runtime "
                 f"({s['pipeline_vs_ort_on_its_pixels_rel_l2']['worst']:.0e}).")
    return S
