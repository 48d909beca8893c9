"""The release folder's README.md (a Hugging Face model card), generated from manifest.json only.

Every number in the card comes from the manifest; nothing is typed by hand.
"""

from __future__ import annotations

PAPER = "https://arxiv.org/abs/2406.09414"
CITATION = """@article{depth_anything_v2,
  title={Depth Anything V2},
  author={Yang, Lihe and Kang, Bingyi and Huang, Zilong and Zhao, Zhen and Xu, Xiaogang and Feng, Jiashi and Zhao, Hengshuang},
  journal={arXiv:2406.09414},
  year={2024}
}"""


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"


def _e(x) -> str:
    return "–" if x is None else f"{x:.2e}"


def render_model_card(m: dict) -> str:
    prov = m["provenance"]
    ck = prov["checkpoint"]
    synthetic = ck["source"] == "synthetic"
    models = [f for f in m["files"] if f.get("format") in ("tflite", "pte", "onnx")]
    onnx_files = [f for f in models if f["format"] == "onnx"]
    tflites = [f for f in models if f["format"] == "tflite"]
    first_size = prov["recipe"]["sizes"][0]
    floats = [f for f in tflites if f["input"]["dtype"] == "float32"] or tflites
    example = next((f for f in floats if f["precision"] == "fp32" and f["size"] == first_size),
                   next((f for f in floats if f["precision"] == "fp32"), floats[0] if floats else None))
    pixel_files = [f for f in tflites if f["input"]["dtype"] == "uint8"]
    info = m.get("model") or {"family_member": "small", "kind": "relative", "license": "apache-2.0"}
    metric = info["kind"] == "metric"
    member = info["family_member"].replace("-", " ").title()
    nc = info["license"] != "apache-2.0"
    L = ["---", f"license: {info['license']}", f"base_model: {prov['base_model']}", "library_name: litert",
         "pipeline_tag: depth-estimation", "tags:", "  - depth-estimation", "  - depth-anything-v2", "  - litert",
         "  - tflite", "  - webgpu", "  - on-device"] + (["  - onnx", "  - transformers.js"] if onnx_files else []) \
        + ["---", "", f"# {m['name']}", ""]
    if synthetic:
        L += ["> **These files were built from synthetic (seeded random) weights, not the trained checkpoint.** They have the",
              "> exact architecture, graph, op counts and delegation of the real model, and their parity numbers are real,",
              "> but their depth maps are meaningless. Rebuild with the real checkpoint to publish.", ""]
    if nc:
        L += ["> **Licence: CC BY-NC 4.0 — non-commercial use only** (the upstream weights' licence; see `LICENSE`).", ""]
    about = ("a DINOv2-S ViT backbone with a DPT head, 24.8M parameters, predicting relative inverse depth from one RGB "
             "image" if info["family_member"] == "small" else
             f"a DINOv2 ViT backbone with a DPT head, predicting {info['output_semantics']} from one RGB image")
    L += ["## About the model", "",
          f"[Depth Anything V2]({PAPER}) {member}: {about}. Base model: "
          f"[`{prov['base_model']}`](https://huggingface.co/{prov['base_model'].split('@')[0]}).", "",
          "## What changed in this conversion", "",
          "Converted from PyTorch to LiteRT with litert-torch after graph rewrites that make every op run on LiteRT's GPU "
          "(WebGPU) delegate and remove redundant work; each rewrite is exact up to float rounding (parity below). "
          "Rewrites applied:", ""]
    names = sorted({n for r in prov["rewrites"].values() for n in r})
    L += [f"- `{n}`" for n in names] + [""]
    quant = {f["precision"]: f["quantization"] for f in tflites if f.get("quantization")}
    if quant:
        L += ["Other precisions are made from the rewritten FP32 graph with `ai-edge-quantizer` recipes:", ""]
        L += [f"- {p}: {q}" for p, q in quant.items()] + [""]
    rec = m.get("recommended") or {}
    if rec:
        L += ["## Which file to use", "", "| use | file | why |", "|---|---|---|"]
        uses = {"webgpu": "GPU / browser with WebGPU", "cpu": "CPU (native LiteRT)",
                "wasm": "browser without WebGPU (LiteRT.js wasm)", "smallest": "smallest download"}
        L += [f"| {label} | `{rec[k]['path']}` | {rec[k]['why']} |" for k, label in uses.items() if k in rec] + [""]
    if example:
        i, o = example["input"], example["output"]
        n = i["normalisation"]
        L += ["## Inputs and outputs", "",
              "| | name | shape | dtype | meaning |", "|---|---|---|---|---|",
              f"| input | `{i['name']}` | `[1, 3, H, W]` | {i['dtype']} | {n['color']}, ×{n['scale']}, minus mean "
              f"{n['mean']}, divided by std {n['std']}, {i['layout']}; resize the photo to H×W ({n['resize']}) |",
              f"| output | `{o['name']}` | `[1, H, W]` | {o['dtype']} | {o['semantics']} |", "",
              "Signature `serving_default`. Resize the output back to the photo's size for display.", ""]
        if pixel_files:
            names = ", ".join(f"`{f['path']}`" for f in pixel_files)
            L += [f"Files ending `_u8in.tflite` ({names}) take the resized "
                  "RGB pixels instead: input uint8 `[1, 3, H, W]`, values 0..255 as resized, NCHW; the graph scales and "
                  "normalises (same mean/std). A quarter of the bytes to write per call: what the GPU files are for. "
                  "Python: `x = np.ascontiguousarray(np.asarray(img, np.uint8).transpose(2, 0, 1)[None])`.", ""]
    L += ["## Files", "", "| file | size | precision | input H×W | ops | fully on GPU / delegation | SHA-256 |",
          "|---|---|---|---|---|---|---|"]
    for f in models:
        if f["format"] == "onnx":
            gpu = "runtime's choice (ONNX Runtime / OpenVINO / transformers.js)"
        elif f["format"] == "pte":
            d = f["delegation"]
            gpu = (f"{f['backend']}: all {d['delegated_nodes']} nodes delegated" if d["fully_delegated"] else
                   f"{f['backend']}: {d['delegated_nodes']} delegated, {d['non_delegated_nodes']} on portable kernels")
        else:
            gpu = {True: "yes", False: "**no**", None: "not checked"}[f.get("gpu_fully_delegated")]
        L.append(f"| `{f['path']}` | {_mb(f['bytes'])} | {f['precision']} | {f['size']} | {f.get('ops', '–')} | {gpu} | "
                 f"`{f['sha256']}` |")
    L += [""]
    if example:
        h, w = example["input"]["shape"][2:]
        L += ["## How to run", "", "Python ([`ai-edge-litert`](https://pypi.org/project/ai-edge-litert/)):", "", "```python",
              "import numpy as np",
              "from PIL import Image",
              "from ai_edge_litert.compiled_model import CompiledModel",
              "from ai_edge_litert.hardware_accelerator import HardwareAccelerator",
              "from ai_edge_litert.options import GpuOptions, Options", "",
              f"model = CompiledModel.from_file(\"{example['path']}\", options=Options(",
              "    hardware_accelerators=HardwareAccelerator.GPU,",
              "    gpu_options=GpuOptions(enforce_f32=True)))  # FP32 compute: the default precision may use FP16",
              f"img = Image.open(\"photo.jpg\").convert(\"RGB\").resize(({w}, {h}), Image.Resampling.BICUBIC)",
              "x = (np.asarray(img, np.float32) / 255 - [0.485, 0.456, 0.406]) / [0.229, 0.224, 0.225]",
              "x = np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)",
              "inp, out = model.create_input_buffers(0), model.create_output_buffers(0)",
              "inp[0].write(x)", "model.run_by_index(0, inp, out)",
              f"depth = out[0].read({h * w}, np.float32).reshape({h}, {w})  # "
              + ("metres" if metric else "relative inverse depth"), "```", "",
              "Browser ([`@litertjs/core`](https://www.npmjs.com/package/@litertjs/core)): `loadLiteRt(wasmDir)`, then "
              "`loadAndCompile(bytes, {accelerator: 'webgpu'})` (or `'wasm'`) and `model.run(tensor)`; verify each file's "
              "SHA-256 against `manifest.json` before use. `edgedepth serve .` runs a playground that does exactly this.", ""]
        if onnx_files:
            o = onnx_files[0]
            oh, ow = o["input"]["shape"][2:]
            L += [f"ONNX (`onnx/`, the onnx-community / transformers.js layout: `model.onnx` FP32, `model_fp16.onnx`, "
                  f"`model_quantized.onnx` = q8): input `{o['input']['name']}` float32 `[1, 3, {oh}, {ow}]`, output "
                  f"`{o['output']['name']}` `[1, {oh}, {ow}]`, same normalisation. ONNX Runtime: "
                  "`onnxruntime.InferenceSession(\"onnx/model.onnx\").run(None, {\"pixel_values\": x})[0]`; OpenVINO: "
                  "`openvino.Core().compile_model(\"onnx/model.onnx\", \"CPU\", {\"INFERENCE_PRECISION_HINT\": \"f32\"})`. "
                  f"The input size is static: resize photos to {oh}×{ow} (transformers.js users: set the processor's "
                  "size to it and `keep_aspect_ratio` off).", ""]
        if any(f["format"] == "pte" for f in models):
            L += ["ExecuTorch: load the `.pte` with `executorch.runtime` (XNNPACK files) or the ExecuTorch WebGPU runtime "
                  "(WebGPU/Vulkan-delegated files, which the Python runtime cannot run).", ""]
    meth = m.get("parity_method", {})
    gate = meth.get("build_gate", {})
    rows = [(f, p) for f in models for p in f.get("parity", [])]
    L += ["## Parity with PyTorch", ""]
    if gate.get("images", {}).get("count"):
        img = gate["images"]
        L += [f"Every file passed the build's parity gate against {meth.get('reference')} on {img['count']} images "
              f"({img.get('set')}; set SHA-256 `{(img.get('sha256') or '')[:16]}…`): FP32 files {gate['fp32']}; "
              f"quantised files {gate['quantized']}. The values the build measured are in `{gate['measured_values']}`.",
              ""]
    if rows:
        L += [f"Measured on the exact files above (matched by SHA-256; committed benchmark data). Metric: "
              f"{meth.get('metric')}.", "",
              "| file | images | pooled rel-L2 | max rel-L2 | Pearson | AbsRel (aligned) | δ<1.25 | CPU, threads |",
              "|---|---|---|---|---|---|---|---|"]
        for f, p in rows:
            L.append(f"| `{f['path']}` | {p['images']} | {_e(p['pooled_rel_l2'])} | {_e(p['max_rel_l2'])} | "
                     f"{p['pearson']:.6f} | {_e(p['aligned_absrel'])} | {p['aligned_delta1']:.4f} | "
                     f"{p.get('cpu')}, {p.get('threads')} |")
    else:
        L += ["No committed parity measurement matches these exact files (parity is shown only for files whose SHA-256 "
              "matches the file that was measured)."]
    L += [""]
    lat = [(f, r) for f in models for r in f.get("latency", [])]
    L += ["## Latency", ""]
    if lat:
        L += ["Measured on the exact files above (matched by SHA-256). Method: interleaved rounds × (warm-up + timed "
              "calls), timed = input write + synchronous invoke + output read; compile and preprocessing excluded.", "",
              "*Fastest peer*: the fastest path without edgedepth's files (plain LiteRT / `torch.onnx` exports in "
              "LiteRT, ONNX Runtime, OpenVINO; PyTorch eager), same precision, same machine, same run.", "",
              "| file | backend | median ms | IQR ms | threads | device | rounds × (warm-up + timed) | fastest peer |",
              "|---|---|---|---|---|---|---|---|"]
        for f, r in lat:
            dev = r.get("gpu_adapter") or r.get("cpu")
            mt = r["method"]
            peer = r.get("fastest_peer")
            vs = f"{peer['label']} {peer['median_ms']:.0f} ms (÷ {r['median_ms'] / peer['median_ms']:.2f})" if peer else "–"
            iqr = f"{r['p25_ms']:.1f}–{r['p75_ms']:.1f}" if r.get("p25_ms") is not None else "–"
            twin = " †" if r.get("timing_twin") else ""
            L.append(f"| `{f['path']}` | {r['backend']}{twin} | {r['median_ms']:.1f} | {iqr} | "
                     f"{r.get('threads') or '–'} | {dev} | {mt['rounds']} × ({mt['warmup']} + {mt['iters']}) | {vs} |")
        if any(r.get("timing_twin") for _, r in lat):
            L += ["", "† timed on a timing twin of the file: the same graph and ops with seeded weights (a call to the "
                  "lent GPU carries at most 64 MiB); GPU latency does not depend on the weights' values."]
    else:
        L += ["No latency measured for these exact files (latency is read from committed benchmark data and shown only "
              "for files whose SHA-256 matches the file that was timed)."]
    L += ["", "## Limitations", "",
          "- Fixed input size per file (the position embedding is frozen for that size); pick the file matching your "
          "aspect ratio or resize.",
          (f"- Metric depth in metres, clipped to 0..{info.get('max_depth_m')} m by the head; trained on "
           f"{'indoor (Hypersim)' if 'indoor' in info['family_member'] else 'outdoor (Virtual KITTI 2)'} scenes: "
           "other scenes and cameras need checking." if metric else
           "- Relative depth: scale and shift are unknown; do not read metres from it."),
          "- LiteRT's GPU delegate may compute in FP16 under its default precision; this model's DPT head can overflow "
          "FP16. Set `enforce_f32=True` (see `recommended_runtime_options` in `manifest.json`).",
          "- Quantised files (INT8, FP16 weights) trade accuracy for size and CPU speed (see parity)."]
    if synthetic:
        L += ["- Built from synthetic weights: depth output is meaningless (see the note at the top)."]
    v = prov["versions"]
    L += ["", "## Provenance", "",
          f"- Checkpoint: {ck['name']}" + (f" @ `{ck['revision']}`" if ck.get("revision") else "")
          + (f" (synthetic, seed {ck['seed']})" if synthetic else ""),
          *(["- Weight files: " + ", ".join(f"`{k}` sha256 `{h}`" for k, h in ck["weight_files"].items())]
            if ck.get("weight_files") else []),
          f"- Recipe: `{prov['recipe']['name']}` sha256 `{prov['recipe']['sha256']}`, sizes "
          + ", ".join(prov["recipe"]["sizes"]),
          "- Versions: " + ", ".join(f"{k} {val}" for k, val in sorted(v.items())),
          *([f"- Checkpoint state dict sha256 `{ck['state_dict_sha256']}`"] if ck.get("state_dict_sha256") else []),
          "- Rebuild: `python recipes/depth-anything-v2-small.py --out DIR` (edgedepth) gives byte-identical files, "
          "manifest and card on any x86-64 machine with the same checkpoint and the pinned versions; "
          "`edgedepth verify DIR` checks a folder against `manifest.json`.",
          "", "## Citation", "", "```bibtex", CITATION, "```", "", "## License", "",
          ("CC BY-NC 4.0, non-commercial use only" if nc else "Apache-2.0")
          + " (see `LICENSE`); modifications are listed in `NOTICE`.", ""]
    return "\n".join(L)
