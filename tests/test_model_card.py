"""The release's model card (README.md, ``edgedepth.release.modelcard``): every fenced code block runs as written, and
the front matter is what the Hugging Face Hub accepts.

- Python blocks run in a child (this venv's python) inside a copy of the tiny release holding a ``photo.jpg``; a check
  appended after the block (the block itself is not edited) prints the depth map's shape, whether it is finite, and
  whether the block's input ``x`` holds the very pixels ``edgedepth.preprocess`` makes (exact: rounded back to uint8).
- The LiteRT block runs again with its documented switch ``USE_GPU = True``: on SwiftShader (Vulkan on the CPU), and
  with no Vulkan driver, where the card says ``from_file`` raises RuntimeError.
- js blocks run in Node as written, from the directory the block names (the folder's parent), transformers.js
  resolved through a ``node_modules`` link to web/node_modules; once per dtype the block lists.
- bibtex blocks are parse-checked only.  Any other language fails :func:`test_every_block_has_a_known_language`.

Shares the session's ``tiny_release`` (built once, ~90 s); this file adds ~30 s.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import FULL_SIZE_PHOTO, SWIFTSHADER_ICD, require_vulkan

REPO = Path(__file__).resolve().parents[1]
WEB_NODE_MODULES = REPO / "web" / "node_modules"
TJS_RUN = REPO / "tests" / "js" / "tjs_run.mjs"
RUN = ("python", "js")              # blocks that are executed
PARSE_ONLY = ("bibtex",)            # blocks that are only parse-checked
HUB_BASE_MODEL_RELATIONS = {"adapter", "merge", "quantized", "finetune"}   # huggingface.co/docs/hub/model-cards
CHECK = "CARD_CHECK "
PY_CHECK = f"""

# ---- appended by tests/test_model_card.py ----
import json as _json, numpy as _np
from edgedepth.preprocess import denormalise as _den, load_image as _load, pixels as _pixels
_d = _np.asarray(depth)
_same = bool(_np.array_equal(_den(x), _pixels(_load("photo.jpg"), tuple(x.shape[2:]))))
print({CHECK!r} + _json.dumps({{"shape": list(_d.shape), "finite": bool(_np.isfinite(_d).all()),
                                 "std": float(_d.std()), "pixels_as_edgedepth": _same}}))
"""
JS_CHECK = f"""
// ---- appended by tests/test_model_card.py ----
console.log({CHECK!r} + JSON.stringify({{ dims: predicted_depth.dims, size: [depth.width, depth.height],
  finite: Array.from(predicted_depth.data).every(Number.isFinite) }}));
"""


# ------------------------------------------------------------------------------------------------ helpers


def code_blocks(card: str) -> list[tuple[str, str]]:
    """Every fenced code block of a Markdown text: [(language, body)], in order; an unclosed fence fails."""
    blocks, lang, body = [], None, []
    for n, line in enumerate(card.splitlines(), 1):
        assert not line.lstrip().startswith("~~~") and not (line.startswith(" ") and line.lstrip().startswith("```")), (
            f"line {n}: a fence this test does not parse: {line!r}")
        if lang is None:
            m = re.fullmatch(r"```(.*)", line)
            if m:
                lang, body = m.group(1).strip(), []
        elif line == "```":
            blocks.append((lang, "\n".join(body) + "\n"))
            lang = None
        else:
            body.append(line)
    assert lang is None, f"unclosed ``` fence ({lang!r} block)"
    return blocks


def front_matter(card: str) -> dict:
    import yaml     # PyYAML (in the venv, via transformers / huggingface_hub)

    assert card.startswith("---\n"), "the card must open with YAML front matter"
    return yaml.safe_load(card[4:card.index("\n---\n", 4)])


def _check_line(out: str) -> dict:
    lines = [line for line in out.splitlines() if line.startswith(CHECK)]
    assert len(lines) == 1, out[-3000:]
    return json.loads(lines[0][len(CHECK):])


def run_python_block(code: str, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``code`` + the check, as a script beside ``cwd`` (tracebacks then quote the block's lines), run in ``cwd``."""
    script = cwd.parent / f"card_block_{abs(hash(code)) % 10**8}.py"
    script.write_text(code + PY_CHECK)
    return subprocess.run([sys.executable, str(script)], cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=env)


def _ok(r: subprocess.CompletedProcess, what: str) -> dict:
    assert r.returncode == 0, f"{what} exited {r.returncode}:\n{r.stderr[-4000:]}"
    return _check_line(r.stdout)


def _photo(dst: Path, src: str | None = None) -> None:
    from PIL import Image

    from edgedepth.samples import sample_photo

    Image.open(src or sample_photo()).convert("RGB").save(dst, quality=95)


def _release_copy(tiny_release: Path, parent: Path, name: str, photo_src: str | None = None) -> Path:
    folder = parent / name
    shutil.copytree(tiny_release, folder)
    _photo(folder / "photo.jpg", photo_src)
    return folder


def _upstream_hw(folder: Path) -> tuple[int, int]:
    """(H, W) transformers' own DPT processor, configured by the folder's preprocessor_config.json, gives photo.jpg."""
    from PIL import Image
    from transformers import AutoImageProcessor

    proc = AutoImageProcessor.from_pretrained(str(folder))
    px = proc(images=Image.open(folder / "photo.jpg").convert("RGB"), return_tensors="np")["pixel_values"]
    return tuple(px.shape[2:])


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node not found (Node 18+; `make test` installs it)", pytrace=False)
    if not (WEB_NODE_MODULES / "@huggingface" / "transformers").is_dir():
        pytest.fail("web/node_modules has no @huggingface/transformers: run `make web/node_modules/.package-lock.json`",
                    pytrace=False)
    return node


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def card(tiny_release):
    """{"manifest", "text": the card rendered from the tiny release's manifest, "blocks": its code blocks}."""
    from edgedepth.release.modelcard import render_model_card

    m = json.loads((tiny_release / "manifest.json").read_text())
    text = render_model_card(m)
    assert text == (tiny_release / "README.md").read_text(), "the release's README.md is not render_model_card(manifest)"
    return {"manifest": m, "text": text, "blocks": code_blocks(text)}


@pytest.fixture(scope="module")
def workdir(tiny_release, card, tmp_path_factory):
    """{"root": a directory holding photo.jpg and a copy of the release, "folder": that copy, named as the manifest's
    name, with photo.jpg in it}."""
    root = tmp_path_factory.mktemp("card_run")
    folder = _release_copy(tiny_release, root, card["manifest"]["name"])
    _photo(root / "photo.jpg")
    return {"root": root, "folder": folder}


def _blocks(card, lang: str) -> list[str]:
    return [b for lg, b in card["blocks"] if lg == lang]


def _kind(block: str) -> str:
    for kind, marker in (("litert", "ai_edge_litert"), ("onnxruntime", "import onnxruntime"),
                         ("openvino", "import openvino")):
        if marker in block:
            return kind
    pytest.fail(f"a python block this test does not know (add its expected depth shape):\n{block}")


def _entry(card, block: str) -> dict:
    """The manifest entry of the one model file a block opens."""
    files = {f["path"]: f for f in card["manifest"]["files"] if f.get("format") in ("tflite", "pte", "onnx")}
    used = [p for p in files if f'"{p}"' in block]
    assert len(used) == 1, f"block opens {used}, expected one model file"
    return files[used[0]]


def _by_kind(card) -> dict:
    out = {}
    for b in _blocks(card, "python"):
        out.setdefault(_kind(b), []).append(b)
    return out


# ------------------------------------------------------------------------------------------------ blocks


def test_every_block_has_a_known_language(card):
    langs = [lg for lg, _ in card["blocks"]]
    unknown = [lg for lg in langs if lg not in RUN + PARSE_ONLY]
    assert not unknown, f"code blocks in a language this test neither runs nor parses: {unknown}"
    assert {"python", "js", "bibtex"} <= set(langs), langs
    assert sorted(_by_kind(card)) == ["litert", "onnxruntime", "openvino"]
    assert all(len(v) == 1 for v in _by_kind(card).values())


def test_bibtex_blocks_parse(card):
    for b in _blocks(card, "bibtex"):
        lines = b.strip().splitlines()
        assert re.fullmatch(r"@\w+\{[\w:.-]+,", lines[0]) and lines[-1] == "}", b
        assert all(re.fullmatch(r"\s+\w+\s*=\s*\{.*\},?", line) for line in lines[1:-1]), b
        assert b.count("{") == b.count("}"), b


def _check_python(res: dict, shape: tuple[int, int], what: str) -> None:
    assert tuple(res["shape"]) == shape, (what, res)
    assert res["finite"] and res["std"] > 0, (what, res)
    assert res["pixels_as_edgedepth"], f"{what}: its x is not edgedepth.preprocess's input for photo.jpg"


def test_litert_block_runs_on_cpu(card, workdir):
    (block,) = _by_kind(card)["litert"]
    assert block.count("USE_GPU = False") == 1      # as written: the CPU
    f = _entry(card, block)
    res = _ok(run_python_block(block, workdir["folder"]), "LiteRT block")
    _check_python(res, tuple(f["output"]["shape"][1:]), "LiteRT block")


def _gpu_variant(card) -> str:
    (block,) = _by_kind(card)["litert"]
    return block.replace("USE_GPU = False", "USE_GPU = True")


def test_litert_block_gpu_variant_runs_on_swiftshader(card, workdir):
    require_vulkan()
    env = dict(os.environ)
    if not (env.get("VK_ICD_FILENAMES") or env.get("VK_DRIVER_FILES")):
        env["VK_ICD_FILENAMES"] = SWIFTSHADER_ICD
    block = _gpu_variant(card)
    res = _ok(run_python_block(block, workdir["folder"], env), "LiteRT block, USE_GPU = True")
    _check_python(res, tuple(_entry(card, block)["output"]["shape"][1:]), "LiteRT block on the GPU")


def test_litert_block_gpu_variant_without_a_driver_raises_runtimeerror(card, workdir):
    """What the block's comment promises: no GPU driver -> RuntimeError from CompiledModel.from_file."""
    block = _gpu_variant(card)
    assert "RuntimeError" in block and "Vulkan" in block
    env = {k: v for k, v in os.environ.items() if k not in ("VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES")}
    env["VK_ICD_FILENAMES"] = str(workdir["root"] / "no_such_icd.json")
    r = run_python_block(block, workdir["folder"], env)
    assert r.returncode == 1, r.stderr[-3000:]
    tb = r.stderr[r.stderr.index("Traceback"):]
    assert "CompiledModel.from_file" in tb and re.search(r"^RuntimeError\b", tb, re.M), tb[-3000:]
    assert "Failed to initialize WebGPU environment" in r.stderr


@pytest.mark.parametrize("photo", ["sample", "wide"], ids=["taller_than_wide", "wider_than_tall"])
def test_onnxruntime_block_runs_at_upstream_size(card, workdir, tiny_release, tmp_path, photo):
    """At the size transformers' DPT processor picks for the photo (both branches of its aspect-ratio rule)."""
    (block,) = _by_kind(card)["onnxruntime"]
    f = _entry(card, block)
    assert f.get("dynamic_size"), "the ONNX files are dynamic: the block sizes the photo as upstream does"
    folder = workdir["folder"] if photo == "sample" else _release_copy(tiny_release, tmp_path, "rel", FULL_SIZE_PHOTO)
    hw = _upstream_hw(folder)
    assert hw != tuple(f["output"]["shape"][1:]) and hw[0] % 14 == hw[1] % 14 == 0
    res = _ok(run_python_block(block, folder), "ONNX Runtime block")
    _check_python(res, hw, "ONNX Runtime block")


def test_openvino_block_runs_at_the_verified_size(card, workdir):
    (block,) = _by_kind(card)["openvino"]
    f = _entry(card, block)
    res = _ok(run_python_block(block, workdir["folder"]), "OpenVINO block")
    _check_python(res, tuple(f["output"]["shape"][1:]), "OpenVINO block")


def test_js_block_runs_in_node_as_written(card, workdir):
    """From the directory the block names (the folder's parent), once per dtype it lists, with no network."""
    from PIL import Image

    from edgedepth.formats.onnx.hub_files import TRANSFORMERS_JS_DTYPE

    node = _node()
    (block,) = _blocks(card, "js")
    m, root = card["manifest"], workdir["root"]
    name = m["name"]
    assert "depth.mjs" in block.splitlines()[0] and f"// {name})" in block and "directory that holds this folder" in block
    assert "env.allowRemoteModels = false" in block and "pipeline('depth-estimation'" in block
    link = root / "node_modules"
    if not link.exists():
        link.symlink_to(WEB_NODE_MODULES, target_is_directory=True)
    w, h = Image.open(root / "photo.jpg").size
    dtypes = sorted({TRANSFORMERS_JS_DTYPE[f["precision"]] for f in m["files"] if f.get("format") == "onnx"})
    assert dtypes == ["fp16", "fp32", "q8"]
    assert block.count("{ dtype: 'fp32' }") == 1 and all(f"'{d}' onnx/" in block for d in dtypes)
    for d in dtypes:
        (root / "depth.png").unlink(missing_ok=True)
        (root / "depth.mjs").write_text(block.replace("{ dtype: 'fp32' }", f"{{ dtype: '{d}' }}") + JS_CHECK)
        r = subprocess.run([node, "depth.mjs"], cwd=root, capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "NODE_PATH"})
        res = _ok(r, f"js block, dtype {d}")
        assert res["dims"] == [h, w] and res["size"] == [w, h] and res["finite"], (d, res)
        assert Image.open(root / "depth.png").size == (w, h), d


# ------------------------------------------------------------------------------------------------ front matter


@pytest.fixture(scope="module")
def hub_tasks():
    r = subprocess.run([_node(), str(TJS_RUN), "tasks"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_front_matter_is_valid_for_the_hub(card, hub_tasks):
    fm = front_matter(card["text"])
    m = card["manifest"]
    assert fm["pipeline_tag"] in hub_tasks["pipeline_types"]
    assert fm["library_name"] == "litert" and fm["library_name"] in hub_tasks["libraries"]
    assert fm["base_model_relation"] in HUB_BASE_MODEL_RELATIONS and fm["base_model_relation"] == "quantized"
    assert fm["license"] == m["model"]["license"]
    assert fm["base_model"] == m["provenance"]["base_model"]
    assert {"transformers.js", "onnx", "litert"} <= set(fm["tags"])


# ------------------------------------------------------------------------------------------------ GPU claims


def _gpu_claims(text: str, path: str) -> list[str]:
    """Lines of the card that name ``path`` and claim it runs fully on the GPU."""
    return [line for line in text.splitlines() if f"`{path}`" in line
            and ("fully on the GPU" in line or re.search(r"\| (?:\*\*)?yes(?:\*\*)? \|", line))]


def test_card_never_claims_full_gpu_delegation_that_was_not_checked(card):
    """A build with --no-gpu-check leaves gpu_fully_delegated null: the card says "not checked", never "fully on the
    GPU delegate" (manifest's recommended.*.why) nor "yes" (Files table) for those files."""
    import copy

    from edgedepth.release.build import INT8_GATE_REL_L2
    from edgedepth.release.modelcard import render_model_card
    from edgedepth.release.recommend import recommend

    m = card["manifest"]
    tfl = [f for f in m["files"] if f.get("format") == "tflite"]
    assert all(f["gpu_fully_delegated"] is True for f in tfl)
    rec = m["recommended"]["webgpu"]["path"]
    assert _gpu_claims(card["text"], rec), "the checked build's card should say so (else this test checks nothing)"

    m2 = copy.deepcopy(m)
    for f in m2["files"]:
        if f.get("format") == "tflite":
            f["gpu_fully_delegated"] = None
    m2["recommended"] = recommend(m2["files"], m2["provenance"]["recipe"]["sizes"][0], INT8_GATE_REL_L2)
    text = render_model_card(m2)
    assert "fully on the GPU delegate" not in text
    for f in tfl:
        assert not _gpu_claims(text, f["path"]), f["path"]
        row = next(line for line in text.splitlines() if line.startswith(f"| `{f['path']}` |"))
        assert "| not checked |" in row, row
    rec_row = next(line for line in text.splitlines() if line.startswith("| GPU / browser with WebGPU |"))
    assert "not checked" in rec_row, rec_row
