"""Release recipe for Depth Anything V2 Small: what to build, declared once.

    python recipes/depth-anything-v2-small.py --out out/depth-anything-v2-small [--model synthetic]
    edgedepth release --recipe recipes/depth-anything-v2-small.py --out DIR

Same recipe + same checkpoint + the pinned versions (constraints.txt) -> byte-identical files.
"""

import glob
import os

_RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks", "results")

RECIPE = {
    "name": "depth-anything-v2-small-edgedepth",
    "base_model": "depth-anything/Depth-Anything-V2-Small-hf",
    "model": "depth-anything/Depth-Anything-V2-Small-hf@5426e4f0f36572d16453bbda7a8389317b1bef99",
    # (height x width), multiples of the 14-pixel patch; 518x686 is what a 640x480 photo becomes in the HF processor.
    # 252x252 stands in for the requested 256x256: 256 is not a multiple of 14 (DINOv2 would drop the last 4 pixels and
    # the depth map would come out 252x252, breaking the [1,H,W] contract).
    "sizes": ["518x686", "686x518", "518x518", "392x518", "252x252", "224x224"],
    "rewrites": "default",                      # edgedepth.rewrites.PIPELINE, exact rewrites only
    # fp16 = float16 weights, float32 compute: half the download, for the GPU / browser (benchmarks/precision_ladder.py)
    # pixel_input: also at the first size, files taking the resized uint8 RGB pixels (normalised in the graph): a
    # quarter of the bytes to write per call, the WebGPU file (H200: benchmarks/gpu_floor.py, BENCHMARKS.md)
    "litert": {"precisions": ["fp32", "fp16", "int8"], "pixel_input": ["fp16"]},
    # ExecuTorch: the 224x224 preset mirrors the published WebGPU .pte; XNNPACK runs here, WebGPU is lowering only
    "executorch": {"sizes": ["224x224"], "backends": ["xnnpack", "webgpu"], "precisions": ["fp32"]},
    # ONNX at the first size, in the onnx-community / transformers.js layout: onnx/model.onnx, onnx/model_fp16.onnx,
    # onnx/model_quantized.onnx (FP16 = weights and compute in float16 with the fp16_safe rewrite; INT8 = quantize_dynamic)
    "onnx": {"precisions": ["fp32", "fp16", "int8"]},
    "parity": {"images": 8, "backend": "cpu"},  # build gate, default bundled image set (values -> build-report.json)
    # committed benchmark data; parity/latency rows are embedded only for files whose sha256 matches a measured file
    "parity_data": [os.path.join(_RESULTS, "release_cpu_parity.json"), os.path.join(_RESULTS, "precision_ladder.json"),
                    os.path.join(_RESULTS, "webgpu_file_cpu_parity.json")],   # the uint8-input WebGPU file
    "latency_data": [os.path.join(_RESULTS, f"release_cpu_latency_{s}.json")
                     for s in ("518x686", "686x518", "518x518", "392x518", "252x252", "224x224")]
    + sorted(glob.glob(os.path.join(_RESULTS, "peers_cpu_*.json")))  # ours vs the fastest peer, per CPU
    + [os.path.join(_RESULTS, "precision_ladder.json"),   # every precision at 518x686, + H200 GPU medians
       os.path.join(_RESULTS, "playground_latency.json"),   # LiteRT.js wasm: decides the playground's wasm file
       os.path.join(_RESULTS, "gpu_webgpu_file_gpu.json"),   # H200 WebGPU call of the WebGPU files (timing twins)
       os.path.join(_RESULTS, "gpu_webgpu_file_gpu-fp16.json")],
}

if __name__ == "__main__":
    import sys

    from edgedepth.cli import main

    sys.exit(main(["release", "--recipe", __file__, *sys.argv[1:]]))
