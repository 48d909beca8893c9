"""Release recipe for Depth Anything 3 Small (monocular: one view -> depth), the same release code as V2's.

    python recipes/depth-anything-3-small.py --out out/depth-anything-3-small --model synthetic-da3-small
    edgedepth release --recipe recipes/depth-anything-3-small.py --out DIR --model synthetic-da3-tiny --sizes 28x42

``model`` below is the hub's folder as the package writes it (config.json + model.safetensors;
edgedepth.models.depth_anything_3.weights); ``--model PATH`` takes such a folder on disk.  Without the hub, build with
``--model synthetic-da3-small`` (the exact architecture, seeded weights) or ``synthetic-da3-tiny`` (tests).
Same recipe + same checkpoint + the pinned versions (constraints.txt) -> byte-identical files.
"""

RECIPE = {
    "name": "depth-anything-3-small-edgedepth",
    "base_model": "depth-anything/DA3-SMALL",
    # The bare hub id, no revision: this repository cannot reach the hub to read one; pin
    # "depth-anything/DA3-SMALL@<commit>" once a build has loaded it, as the V2 recipe does (the manifest records the
    # SHA-256 of every weight file loaded either way).
    "model": "depth-anything/DA3-SMALL",
    # (height x width), multiples of the 14-pixel patch.  The package's input processor resizes the long side to 504
    # (process_res=504, upper_bound_resize): a 640x480 photo becomes 378x504, a portrait one 504x378; 518x518 is the
    # ViT position embedding's native 37x37 grid (the only size the package does not interpolate it for).
    "sizes": ["378x504", "504x378", "504x504", "518x518"],
    "rewrites": "default",                      # edgedepth.rewrites.PIPELINE (the da3_* rewrites for this family)
    # fp16 = float16 weights, float32 compute; int8 = dynamic-range INT8 weights.  pixel_input: at the first size, a
    # file taking the resized uint8 RGB pixels (normalised in the graph), as V2's WebGPU file.
    "litert": {"precisions": ["fp32", "fp16", "int8"], "pixel_input": ["fp16"]},
    # ExecuTorch: one small XNNPACK FP32 preset (DA3's INT8 .pte is refused; WebGPU lowering is V2's preset only)
    "executorch": {"sizes": ["224x224"], "backends": ["xnnpack"], "precisions": ["fp32"]},
    # ONNX at the first size, fixed (DA3's frozen position embedding and static RoPE refuse a dynamic size), in
    # onnx-community's names (onnx/model.onnx, onnx/model_quantized.onnx); no config.json: transformers.js has no DA3
    # class.  No FP16 ONNX yet: the fp16_safe rewrite knows V2's activations only.
    "onnx": {"precisions": ["fp32", "int8"]},
    "parity": {"images": 8, "backend": "cpu"},  # build gate, default bundled image set (values -> build-report.json)
    # no parity_data / latency_data: nothing has been measured for these files yet
}

if __name__ == "__main__":
    import sys

    from edgedepth.cli import main

    sys.exit(main(["release", "--recipe", __file__, *sys.argv[1:]]))
