"""ONNX's how-to blocks in a release's model card (``edgedepth.release.modelcard``): ONNX Runtime, OpenVINO and
transformers.js, runnable as written (CI runs every code block the card shows, tests/test_model_card.py)."""

from __future__ import annotations

from ..base import CardContext, normalise_lines, recommends, short_semantics
from .hub_files import TRANSFORMERS_JS_DTYPE, UPSTREAM_SIDE


def onnx_blocks(onnx_files: list[dict], metric: bool, semantics: str = "relative inverse depth, larger = closer",
                ctx: CardContext | None = None) -> list[str]:
    """``semantics``: the depth's meaning, short (``CardContext.semantics``), for the snippets' comments; ``ctx``: what
    the build checked (a dynamic file's size: parity-gated and/or timed there); None: nothing."""
    o = next((f for f in onnx_files if f["precision"] == "fp32"), onnx_files[0])
    vh, vw = o["input"]["shape"][2:]
    dyn = bool(o.get("dynamic_size"))
    ctx = ctx or CardContext("", metric, None)
    own = "the size the build checked" if ctx.gated(o["path"]) or o.get("latency") else "the files' default size"
    n = o["input"]["normalisation"]
    opts = o.get("recommended_runtime_options") or {}
    names = ", ".join(f"`{f['path']}` {f['precision'].upper()}" for f in onnx_files)
    what = "metres" if metric else semantics.removesuffix(", larger = closer")
    outs = o.get("outputs") or [o["output"]]
    layout = ("the onnx-community / transformers.js layout" if recommends(o, "transformers.js")
              else "onnx-community's names")
    L = [f"ONNX (`onnx/`, {layout}: {names}): input `{o['input']['name']}` float32 `[1, 3, H, W]`, "
         + ("outputs " + ", ".join(f"`{x['name']}` `[1, H, W]`" for x in outs) + " (in that order)" if len(outs) > 1
            else f"output `{o['output']['name']}` `[1, H, W]`") + ", same normalisation; "
         + (f"height and width: any multiples of 14 ({ctx.checked_at(o)})."
            if dyn else f"a fixed size, {o['size']}.")]
    if opts.get("onnxruntime") or opts.get("openvino"):
        named = (("ONNX Runtime", opts.get("onnxruntime")), ("OpenVINO", opts.get("openvino")))
        L[0] += " Runtime options (`manifest.json`): " + "; ".join(f"{k}: {v}" for k, v in named if v) + "."
    L += ["", "ONNX Runtime" + (", at upstream's size for the photo:" if dyn else ":"), "", "```python",
          "import numpy as np",
          "import onnxruntime as ort",
          "from PIL import Image", "",
          "img = Image.open(\"photo.jpg\").convert(\"RGB\")"]
    if dyn:
        side = UPSTREAM_SIDE
        L += [f"# upstream's sizing (preprocessor_config.json): of the two scales that bring a side to {side}, the one",
              "# nearer 1 (aspect ratio kept), then both sides rounded to multiples of 14",
              "w, h = img.size",
              f"s = {side} / w if abs(1 - {side} / w) < abs(1 - {side} / h) else {side} / h",
              f"H, W = round(h * s / 14) * 14, round(w * s / 14) * 14  # or {own}: H, W = {vh}, {vw}"]
    else:
        L += [f"H, W = {vh}, {vw}  # the files' fixed size"]
    L += [*normalise_lines(n, "(W, H)"),
          "so = ort.SessionOptions()",
          "so.intra_op_num_threads = 4  # the number of big cores",
          f"session = ort.InferenceSession(\"{o['path']}\", so, providers=[\"CPUExecutionProvider\"])",
          *_read(f"session.run(None, {{\"{o['input']['name']}\": x}})", "outputs", outs, what),
          "```", "", *_openvino(o, dyn, own, outs, what)]
    return L


def _openvino(o: dict, dyn: bool, own: str, outs: list[dict], what: str) -> list[str]:
    """The OpenVINO snippet: a dynamic file reshaped to a static size first."""
    vh, vw = o["input"]["shape"][2:]
    L = ["OpenVINO" + (f" (CPU), reshaped to a static size ({own}):" if dyn else " (CPU):"), "",
         "```python",
         "import numpy as np",
         "import openvino as ov",
         "from PIL import Image", "",
         f"H, W = {vh}, {vw}" + ("  # any multiples of 14 work" if dyn else ""),
         "core = ov.Core()",
         f"model = core.read_model(\"{o['path']}\")"]
    if dyn:
        L += [f"model.reshape({{\"{o['input']['name']}\": [1, 3, H, W]}})"]
    return L + ["# f32: left to itself OpenVINO computes in bf16 on CPUs with AMX / AVX512-BF16",
                "compiled = core.compile_model(model, \"CPU\", {\"INFERENCE_PRECISION_HINT\": \"f32\"})",
                "img = Image.open(\"photo.jpg\").convert(\"RGB\")",
                *normalise_lines(o["input"]["normalisation"], "(W, H)"),
                *_read("compiled(x)", "result", outs, what),
                "```", ""]


def _read(call: str, var: str, outs: list[dict], what: str) -> list[str]:
    """The snippet's last lines: the depth of ``call`` (``depth = call[0][0]``, one output, as ever), or, with more
    outputs (Depth Anything 3's confidence), ``var = call`` then each output by its role."""
    if len(outs) == 1:
        return [f"depth = {call}[0][0]  # [H, W], {what}"]
    return [f"{var} = {call}", f"depth = {var}[0][0]  # [H, W], {what}",
            *(f"{x['role']} = {var}[{i}][0]  # [H, W], {short_semantics(x['semantics'])}"
              for i, x in enumerate(outs) if i)]


def js_block(name: str, onnx_files: list[dict]) -> list[str]:
    """The transformers.js snippet: this folder loaded by its release name ``name`` (the manifest's name, which is also
    the Hub repository's name part when published), from the folder's parent; then the Hub form of the same call."""
    dtypes = {TRANSFORMERS_JS_DTYPE[f["precision"]]: f["path"] for f in onnx_files
              if f["precision"] in TRANSFORMERS_JS_DTYPE}
    first = "fp32" if "fp32" in dtypes else next(iter(dtypes))
    choice = ", ".join(f"'{d}' {p}" for d, p in dtypes.items())
    return [f"transformers.js (Node 18+), with this folder saved as `{name}/` (the release's name: the model id "
            "below); in a browser: the same calls, with `env.localModelPath` the URL of the folder's parent:", "",
            "```js",
            f"// depth.mjs, saved beside this folder ({name}/) and photo.jpg; in that",
            "// directory: `npm i @huggingface/transformers`, then `node depth.mjs`.",
            "import { env, pipeline } from '@huggingface/transformers';", "",
            "env.allowRemoteModels = false;  // local files only: nothing is downloaded",
            "env.localModelPath = './';      // model ids are folders under the current directory",
            f"// dtype: {choice}",
            f"const estimator = await pipeline('depth-estimation', '{name}', {{ dtype: '{first}' }});",
            "const { predicted_depth, depth } = await estimator('photo.jpg');",
            "// predicted_depth: a Tensor [height, width] at the photo's size; depth: the same as an 8-bit grey "
            "RawImage",
            "await depth.save('depth.png');",
            "```", "",
            f"From the Hugging Face Hub, once published as `USER/{name}` (`edgedepth publish . USER/{name}`, see "
            "Publish; USER: your Hub user or organisation): leave out the two `env` lines and load "
            f"`pipeline('depth-estimation', 'USER/{name}', {{ dtype: '{first}' }})`.", "",
            "transformers.js resizes with its own image library (sharp in Node, the canvas in a browser), not with "
            "Pillow's bicubic like the Python snippets above and edgedepth, so its `pixel_values` differ from theirs "
            "whenever the photo is resized, and the depth maps differ accordingly (edgedepth measures by how much: "
            "`benchmarks/results/transformers_js_preprocessing.json` in its repository). For the same "
            "pixels, make `pixel_values` as the Python "
            "snippets do and run the model on them: `const model = await AutoModelForDepthEstimation.from_pretrained("
            f"'{name}', {{ dtype: '{first}' }}); const {{ predicted_depth }} = await model({{ pixel_values: new "
            "Tensor('float32', data, [1, 3, H, W]) });` (predicted_depth `[1, H, W]`); or accept the difference.", ""]
