"""LiteRT's how-to block in a release's model card (``edgedepth.release.modelcard``): runnable as written (CI runs
every code block the card shows, tests/test_model_card.py)."""

from __future__ import annotations

from ..base import normalise_lines, short_semantics


def _gpu_kwargs(opts: dict) -> str:
    """``GpuOptions`` keywords of the manifest's recommended GPU options (enforce_f32 + the flags edgedepth measured
    and sets, benchmarks/results/gpu_options.json), as Python source."""
    gpu = {k: v for k, v in (opts.get("gpu") or {"enforce_f32": True}).items() if k != "accelerator"}
    return ", ".join(f"{k}={v!r}" for k, v in gpu.items())


def how_to(example: dict, metric: bool, semantics: str | None = None) -> list[str]:
    """The intro, the Python snippet (CPU or GPU) for ``example`` (a manifest entry) and the browser paragraph.
    ``semantics``: the depth's meaning for the snippet's comment (CardContext.semantics); None: the example's own
    output semantics, shortened as the card does."""
    if semantics is None:
        semantics = short_semantics(example["output"]["semantics"])
    h, w = example["input"]["shape"][2:]
    opts = example.get("recommended_runtime_options") or {}
    threads = (opts.get("cpu") or {}).get("num_threads", "number of big cores")
    return ["```python",
            "import numpy as np",
            "from PIL import Image",
            "from ai_edge_litert.compiled_model import CompiledModel",
            "from ai_edge_litert.hardware_accelerator import HardwareAccelerator",
            "from ai_edge_litert.options import CpuOptions, GpuOptions, Options", "",
            "USE_GPU = False  # True: LiteRT's GPU accelerator (WebGPU). It needs a GPU and its driver (on Linux: a "
            "Vulkan",
            "# driver, an ICD); without them CompiledModel.from_file raises RuntimeError (\"Failed to initialize "
            "WebGPU ...\")",
            "if USE_GPU:  # enforce_f32: FP32 compute (the default precision may compute in FP16, which this model "
            "can overflow)",
            "    options = Options(hardware_accelerators=HardwareAccelerator.GPU, "
            f"gpu_options=GpuOptions({_gpu_kwargs(opts)}))",
            f"else:  # CPU (XNNPACK): num_threads = the {threads}",
            "    options = Options(hardware_accelerators=HardwareAccelerator.CPU, "
            "cpu_options=CpuOptions(num_threads=4))",
            f"model = CompiledModel.from_file(\"{example['path']}\", options=options)", "",
            f"img = Image.open(\"photo.jpg\").convert(\"RGB\")  # this file's fixed size: {h}x{w} (H x W)",
            *normalise_lines(example["input"]["normalisation"], f"({w}, {h})"),
            "inp, out = model.create_input_buffers(0), model.create_output_buffers(0)",
            "inp[0].write(x)",
            "model.run_by_index(0, inp, out)",
            f"depth = out[0].read({h * w}, np.float32).reshape({h}, {w})  # "
            + ("metres" if metric else semantics),
            *(f"{o['role']} = out[{i}].read({h * w}, np.float32).reshape({h}, {w})  # "
              + short_semantics(o["semantics"])             # a family's further outputs (DA3's confidence)
              for i, o in enumerate(example.get("outputs") or []) if i),
            "```"]
