"""BENCHMARKS section: transformers.js' preprocessing vs ours (results/transformers_js_preprocessing.json, from
benchmarks/tjs_preprocessing.py)."""

from __future__ import annotations

from md_common import load
from md_peers import env_line

# (summary key, label, format): the rows of the table; Pearson's worst is its minimum, the others' their maximum
ROWS = [
    ("pixel_values_rel_l2", "`pixel_values`, rel-L2 (transformers.js vs Pillow bicubic, same H×W)", ".3f"),
    ("pixel_steps_mean", "`pixel_values`, mean \\|Δ\\| in uint8 steps", ".2f"),
    ("pixel_steps_max", "`pixel_values`, max \\|Δ\\| in uint8 steps", ".0f"),
    ("map_rel_l2", "depth map from each's pixels (ORT, model resolution), rel-L2", ".3f"),
    ("map_pearson", "the same, Pearson", ".4f"),
    ("pipeline_vs_predict_rel_l2", "transformers.js pipeline vs `edgedepth predict` (photo size), rel-L2", ".3f"),
    ("resize_kernel_only_rel_l2", "… of which the map's resize alone (bilinear vs bicubic), rel-L2", ".3f"),
]


def _cell(s: dict | None, key: str, fmt: str) -> str:
    if not s:
        return "–"
    m = s[key]
    return f"{format(m['median'], fmt)} / {format(m['worst'], fmt)}"


def section_tjs_preprocessing(L: list[str]) -> None:
    r = load("transformers_js_preprocessing.json")
    if not r:
        return
    s, e = r["summary"], r["environment"]
    node = e.get("node", {})
    n_down = (s.get("downscaled") or {}).get("pixel_values_rel_l2", {}).get("n", 0)
    n_up = (s.get("upscaled") or {}).get("pixel_values_rel_l2", {}).get("n", 0)
    scales = [row["scale"] for row in r["rows"]]
    up_same = all(row["upstream_python_same_size"] for row in r["rows"])
    up_max = max((row["upstream_python_vs_ours_max_abs"] or 0.0) for row in r["rows"])
    check = max(row["pipeline_vs_ort_on_its_pixels_rel_l2"] for row in r["rows"])
    L += ["## transformers.js: its preprocessing vs ours (same ONNX file)", "",
          f"`benchmarks/tjs_preprocessing.py`, {r['image_set']['count']} photos of the "
          f"{'default image set' if r['image_set']['source'] == 'default' else 'folder ' + r['image_set']['source']} "
          f"(model side ÷ photo side {min(scales):.2f}–{max(scales):.2f}), the full synthetic model as one "
          "dynamic-size "
          f"FP32 ONNX file. transformers.js {node.get('@huggingface/transformers', '?')} in Node "
          f"(onnxruntime-node {node.get('onnxruntime-node', '?')}, sharp {node.get('sharp', '?')} / libvips "
          f"{node.get('libvips', '?')}) picks upstream's size (518 px, aspect ratio kept, multiples of 14) and resizes "
          "with sharp's affine bicubic, without antialiasing; edgedepth (like upstream's Python processor"
          + (f", same size on every photo, max |Δ| {up_max:.1e}" if up_same else "") +
          ") uses Pillow's bicubic at that size. Cells: median / worst over the photos, then by direction.", "",
          "| comparison | all | model side < photo side | model side ≥ photo side |", "|---|---|---|---|"]
    for key, label, fmt in ROWS:
        L.append(f"| {label} | {_cell(s['all'], key, fmt)} | {_cell(s.get('downscaled'), key, fmt)} "
                 f"({n_down}) | {_cell(s.get('upscaled'), key, fmt)} ({n_up}) |")
    a = s["all"]
    L += ["", f"The pixels transformers.js feeds the model differ from ours (median rel-L2 "
              f"{a['pixel_values_rel_l2']['median']:.3f}, up to {a['pixel_steps_max']['worst']:.0f} uint8 steps at "
              f"edges) and so do the maps (median rel-L2 {a['map_rel_l2']['median']:.3f}, worst Pearson "
              f"{a['map_pearson']['worst']:.4f}); the rest of its pipeline matches (it is ONNX Runtime on its own "
              f"pixels resized bilinearly, within {check:.0e}; bilinear instead of bicubic accounts for "
              f"{a['resize_kernel_only_rel_l2']['median']:.3f}). To get edgedepth's numbers from transformers.js, feed "
              "the model `edgedepth.preprocess`'s `pixel_values` (or a photo already at the model's size, which it "
              "does not resize); otherwise accept a difference of this size: it is the preprocessing, not the ONNX "
              "file. Synthetic weights make the map rows indicative only (the pixel rows do not depend on the model); "
              "in browsers transformers.js resizes with canvas `drawImage` instead of sharp (not measured).", "",
          env_line(e) + "; " + ", ".join(f"{k} {v}" for k, v in sorted(node.items())) + ".", ""]
