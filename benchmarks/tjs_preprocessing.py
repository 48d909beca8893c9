"""transformers.js' preprocessing vs ours: how much the pixels it feeds the model, and the depth it returns, differ from
``edgedepth``'s on the same photo and the same ONNX file.

transformers.js (``@huggingface/transformers`` 4.3.2 in Node, ``tests/js/tjs_run.mjs``) resizes with sharp (libvips
``affine``, bicubic, no antialiasing); ``edgedepth.preprocess`` (and upstream's Python DPTImageProcessor, PIL backend)
with Pillow's bicubic, which antialiases when it shrinks.  For each photo of the default image set (first ``--n``
views, spread over the sources by ``edgedepth.images.image_set``; or ``--images FOLDER``):

1. transformers.js' ``pixel_values`` (its own size: 518 px, aspect ratio kept, multiples of 14) against ours at the
   same H x W: rel-L2, and mean / max difference in uint8 steps after denormalising; and upstream's Python processor
   against ours (the same resize: a float-rounding check).
2. The full synthetic model, exported once as a dynamic-size FP32 ONNX file, on Python ONNX Runtime: the map from our
   pixels against the map from transformers.js' pixels (model resolution): rel-L2 and Pearson.
3. The transformers.js pipeline (``pipeline('depth-estimation')``, fp32, the same file) against
   ``edgedepth.predict.predict`` (what ``edgedepth predict --raw`` runs) at the same H x W: both at the photo's size
   (transformers.js resizes the map bilinearly, edgedepth bicubically); split into the resize kernel alone (our map,
   bilinear vs bicubic) and a check that the pipeline is ORT on its own pixels resized bilinearly (FP32 noise).

Synthetic weights: the map differences are indicative only (a trained model's sensitivity to its input differs).

    .venv/bin/python benchmarks/tjs_preprocessing.py [--n 22] [--images FOLDER] [--dir out/tjs_preprocessing]

The export (~1 min) is cached in --dir.  Needs Node and web/node_modules (``make setup``).
Writes benchmarks/results/transformers_js_preprocessing.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from edgedepth.verify.parity import rel_l2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TJS_RUN = os.path.join(ROOT, "tests", "js", "tjs_run.mjs")
SIZE = "518x686"          # the size the dynamic file is exported, checked and timed at by edgedepth


def pearson(a, b) -> float:
    return float(np.corrcoef(np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel())[0, 1])


def tjs(*args, threads: int) -> dict:
    r = subprocess.run(["node", TJS_RUN, *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, "EDGEDEPTH_TJS_THREADS": str(threads)})
    if r.returncode:
        raise SystemExit(f"tjs_run {args[0]}: {r.stderr.strip()[-2000:]}")
    return json.loads(r.stdout)


def model_folder(work: str) -> tuple[str, str]:
    """(transformers.js model folder, the ONNX file in it): the full synthetic model exported once with dynamic height
    and width by the CLI, with the release's config.json / preprocessor_config.json (``formats.onnx.hub_files``)."""
    from edgedepth.checkpoint import load_checkpoint
    from edgedepth.formats.onnx import hub_files

    export = os.path.join(work, "export")
    onnx = os.path.join(export, f"depth_anything_v2_small_{SIZE}_fp32_dynamic.onnx")
    if not os.path.isfile(onnx):
        print("export (synthetic, dynamic size, fp32)", file=sys.stderr, flush=True)
        r = subprocess.run([sys.executable, "-m", "edgedepth", "export", "--model", "synthetic", "--target", "onnx",
                            "--dynamic-size", "--precision", "fp32", "--size", SIZE, "--out", export, "--quiet"])
        if r.returncode or not os.path.isfile(onnx):
            raise SystemExit(f"export failed (exit {r.returncode}); expected {onnx}")
    folder = os.path.join(work, "tjs", "synthetic")
    os.makedirs(os.path.join(folder, "onnx"), exist_ok=True)
    with open(os.path.join(folder, hub_files.CONFIG), "w") as f:
        f.write(hub_files.config_json(load_checkpoint("synthetic", quiet=True).model))
    with open(os.path.join(folder, hub_files.PREPROCESSOR_CONFIG), "w") as f:
        f.write(hub_files.preprocessor_config_json())
    target = os.path.join(folder, hub_files.ONNX_LAYOUT["fp32"])
    if os.path.exists(target):
        os.remove(target)
    try:
        os.link(onnx, target)
    except OSError:
        shutil.copyfile(onnx, target)
    return folder, target


def summary(rows: list[dict], key: str, worst=max) -> dict:
    v = np.array([r[key] for r in rows], np.float64)
    return {"median": float(np.median(v)), "mean": float(v.mean()), "worst": float(worst(v)), "n": int(v.size)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=22, help="photos of the image set (spread over its sources)")
    ap.add_argument("--images", default=None, help="a folder of photos instead of the default image set")
    ap.add_argument("--dir", default="out/tjs_preprocessing", help="work folder (the export is cached here)")
    ap.add_argument("--threads", type=int, default=2, help="ONNX Runtime threads, Python and Node")
    ap.add_argument("--out", default="benchmarks/results/transformers_js_preprocessing.json")
    a = ap.parse_args()

    import torch
    from transformers.models.dpt.image_processing_pil_dpt import DPTImageProcessorPil

    from edgedepth.formats import onnx as ox
    from edgedepth.fsutil import sha256_file
    from edgedepth.images import image_set, image_set_hash
    from edgedepth.predict import predict
    from edgedepth.preprocess import denormalise, preprocess
    from edgedepth.verify.bench import environment

    os.makedirs(a.dir, exist_ok=True)
    versions = tjs("versions", threads=a.threads)
    folder, onnx = model_folder(a.dir)
    upstream = DPTImageProcessorPil.from_pretrained(folder)
    items = image_set(a.images, limit=a.n)
    runners: dict[tuple[int, int], object] = {}

    def bilinear(y, size):       # transformers.js' interpolate_4d: ONNX Resize linear, half-pixel, no antialias
        t = torch.from_numpy(np.ascontiguousarray(y, np.float32)).reshape(1, 1, *np.shape(y)[-2:])
        return torch.nn.functional.interpolate(t, size=size, mode="bilinear", align_corners=False)[0, 0].numpy()

    rows = []
    with tempfile.TemporaryDirectory(prefix="tjs-pre-", dir=a.dir) as tmp:
        for i, it in enumerate(items, 1):
            img = it.load()
            stem = f"p{i:03d}"
            png = os.path.join(tmp, f"{stem}.png")             # lossless: Node and Python read the same pixels
            img.save(png)
            depth_npy, pv_npy = os.path.join(tmp, f"{stem}_tjs.npy"), os.path.join(tmp, f"{stem}_pv.npy")
            info = tjs("pipeline", folder, "fp32", png, depth_npy, pv_npy, threads=a.threads)
            x_tjs, d_tjs = np.load(pv_npy), np.load(depth_npy)
            size = tuple(x_tjs.shape[-2:])
            x_ours = preprocess(img, size)
            x_up = upstream(img, return_tensors="np")["pixel_values"].astype(np.float32)
            steps = np.abs(denormalise(x_tjs).astype(np.int16) - denormalise(x_ours).astype(np.int16))
            if size not in runners:
                runners[size] = ox.open_runner(onnx, "cpu", a.threads, size=size)
            r = runners[size]
            m_ours, m_tjs = r.run(x_ours)[0], r.run(x_tjs)[0]
            pred_dir = os.path.join(tmp, f"{stem}_predict")
            predict([png], r, pred_dir, raw=True)
            d_pred = np.load(os.path.join(pred_dir, f"{stem}_depth.npy"))
            hw = (img.height, img.width)
            row = {
                "id": it.id, "photo_hw": list(hw), "model_hw": list(size),
                "scale": round(size[0] / img.height, 4),
                "pixel_values_rel_l2": rel_l2(x_tjs, x_ours),
                "pixel_steps_mean": float(steps.mean()), "pixel_steps_max": int(steps.max()),
                "pixels_differing_share": float((steps > 0).mean()),
                "upstream_python_same_size": list(x_up.shape[-2:]) == list(size),
                "upstream_python_vs_ours_max_abs": (float(np.abs(x_up - x_ours).max())
                                                    if x_up.shape == x_ours.shape else None),
                "map_rel_l2": rel_l2(m_tjs, m_ours), "map_pearson": pearson(m_tjs, m_ours),
                "pipeline_vs_predict_rel_l2": rel_l2(d_tjs, d_pred),
                "pipeline_vs_predict_pearson": pearson(d_tjs, d_pred),
                "resize_kernel_only_rel_l2": rel_l2(bilinear(m_ours, hw), d_pred),
                "pipeline_vs_ort_on_its_pixels_rel_l2": rel_l2(d_tjs, bilinear(m_tjs, hw)),
                "tjs_depth_size": info["depth_size"],
            }
            rows.append(row)
            print(f"{i:3d}/{len(items)} {it.id:28s} {img.width}x{img.height} -> {size[1]}x{size[0]} "
                  f"(x{row['scale']:.2f}): pixels {row['pixel_values_rel_l2']:.3f} "
                  f"(mean {row['pixel_steps_mean']:.2f}, max {row['pixel_steps_max']} steps), map "
                  f"{row['map_rel_l2']:.3f} r={row['map_pearson']:.4f}, "
                  f"vs predict {row['pipeline_vs_predict_rel_l2']:.3f}",
                  file=sys.stderr, flush=True)
    for r in runners.values():
        r.close()

    down = [r for r in rows if r["scale"] < 1]
    up = [r for r in rows if r["scale"] >= 1]
    keys = {"pixel_values_rel_l2": max, "pixel_steps_mean": max, "pixel_steps_max": max, "map_rel_l2": max,
            "map_pearson": min, "pipeline_vs_predict_rel_l2": max, "pipeline_vs_predict_pearson": min,
            "resize_kernel_only_rel_l2": max, "pipeline_vs_ort_on_its_pixels_rel_l2": max}
    env = environment(a.threads)
    env["node"] = versions
    out = {
        "kind": "edgedepth.transformers_js_preprocessing",
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "model": {"name": "synthetic", "file": os.path.basename(onnx), "sha256": sha256_file(onnx),
                  "note": "seeded synthetic weights: map differences are indicative only"},
        "method": (
            "Per photo: transformers.js pipeline('depth-estimation', fp32, Node, onnxruntime-node CPU) on the photo "
            "saved as PNG, with its processor's pixel_values (sharp affine bicubic, no antialias; its own size: 518 px "
            "keep-aspect-ratio, multiples of 14). Ours: edgedepth.preprocess (Pillow bicubic) at the same HxW; "
            "upstream: "
            "transformers' DPTImageProcessorPil with the same preprocessor_config.json. Maps: Python onnxruntime "
            f"{env['versions'].get('onnxruntime')} CPU EP, {a.threads} threads, on the same dynamic-size FP32 file, "
            "at model resolution. Pipeline vs edgedepth.predict.predict (what `edgedepth predict --raw` runs; bicubic "
            "resize to the photo) at the photo's size; resize_kernel_only: our map resized bilinearly (as "
            "transformers.js) vs predict; pipeline_vs_ort_on_its_pixels: the pipeline vs Python ORT on "
            "transformers.js' "
            "pixel_values resized bilinearly (float32, PyTorch align_corners=False). rel-L2 = ||a-b|| / ||b|| with b "
            "ours; pixel steps after denormalising both to uint8."),
        "image_set": {"source": a.images or "default", "count": len(items), "sha256": image_set_hash(items),
                      "ids": [it.id for it in items]},
        "environment": env,
        "summary": {"all": {k: summary(rows, k, w) for k, w in keys.items()},
                    "downscaled": {k: summary(down, k, w) for k, w in keys.items()} if down else None,
                    "upscaled": {k: summary(up, k, w) for k, w in keys.items()} if up else None},
        "rows": rows,
    }
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    s = out["summary"]["all"]
    print(f"wrote {a.out}: {len(rows)} photos; pixel_values rel-L2 median {s['pixel_values_rel_l2']['median']:.3f} "
          f"(worst {s['pixel_values_rel_l2']['worst']:.3f}); map rel-L2 median {s['map_rel_l2']['median']:.3f}, "
          f"Pearson worst {s['map_pearson']['worst']:.4f}")


if __name__ == "__main__":
    main()
