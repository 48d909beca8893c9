"""The release's model card (README.md, ``edgedepth.release.modelcard``): every fenced code block runs as written, and
the front matter is what the Hugging Face Hub accepts.

- Python blocks run in a child (this venv's python) inside a copy of the tiny release holding a ``photo.jpg``; a check
  appended after the block (the block itself is not edited) prints the depth map's shape, whether it is finite, and
  whether the block's input ``x`` holds the very pixels ``edgedepth.preprocess`` makes (exact: rounded back to uint8).
- The LiteRT block runs again with its documented switch ``USE_GPU = True``: on SwiftShader (Vulkan on the CPU), and
  with no Vulkan driver, where the card says ``from_file`` raises RuntimeError.
- js blocks run in Node as written (the README's own text, unchanged), from the directory the block names (the folder's
  parent), the folder named as ``make demo`` names it (scripts/demo.sh: the release's name), transformers.js resolved
  through a ``node_modules`` link to web/node_modules; then once per other dtype the block lists.
- The claims the card makes are its numbers': the Rebuild line is the command the tiny release was built with
  (conftest's arguments), latency rows are dated, sourced and one per (file, machine, backend), and a quantised file
  is called faster than FP32 only where the rows it shows say so.
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

from conftest import FULL_SIZE_PHOTO, SWIFTSHADER_ICD, TINY_RELEASE_ARGS, TINY_RELEASE_RECIPE, require_vulkan

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "scripts" / "demo.sh"
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


def demo_release_folder() -> str:
    """The name of the release folder ``make demo`` writes (scripts/demo.sh: ``REL="$OUT/NAME"``), checked to be what
    its recipe command builds (``--out "$REL"``)."""
    text = DEMO.read_text()
    (name,) = re.findall(r'^REL="\$OUT/([^"/]+)"', text, re.M)
    assert re.search(r'^\$BIN/python recipes/depth-anything-v2-small\.py .*--out "\$REL"$', text, re.M), text
    return name


@pytest.fixture(scope="module")
def workdir(tiny_release, card, tmp_path_factory):
    """{"root": a directory holding photo.jpg and a copy of the release, "folder": that copy, named as make demo names
    its release folder (the release's name), with photo.jpg in it}."""
    root = tmp_path_factory.mktemp("card_run")
    folder = _release_copy(tiny_release, root, demo_release_folder())
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


def test_make_demo_names_its_folder_as_the_card_loads_it(card):
    """make demo's release folder is named by the release's name (the recipe's), the model id the card's
    transformers.js snippet loads: a demo user's folder works with the snippet as written."""
    from edgedepth.release import load_recipe

    name = card["manifest"]["name"]
    assert demo_release_folder() == name == load_recipe(str(REPO / TINY_RELEASE_RECIPE)).name
    (block,) = _blocks(card, "js")
    assert f"pipeline('depth-estimation', '{name}', {{ dtype: 'fp32' }})" in block
    assert f"this folder saved as `{name}/`" in card["text"]


def test_js_block_runs_in_node_as_written(card, workdir):
    """The README's js block, unchanged, as depth.mjs in the folder's parent (the folder named as make demo names it,
    photo.jpg beside it), with no network; then once per other dtype the block lists."""
    from PIL import Image

    from edgedepth.formats.onnx.hub_files import TRANSFORMERS_JS_DTYPE

    node = _node()
    m, root, folder = card["manifest"], workdir["root"], workdir["folder"]
    name = m["name"]
    assert folder.name == name
    (block,) = [b for lg, b in code_blocks((folder / "README.md").read_text()) if lg == "js"]   # the file's own text
    first = block.splitlines()[0]
    assert first.startswith("// depth.mjs") and f"beside this folder ({name}/) and photo.jpg" in first, block
    assert "env.allowRemoteModels = false" in block and "env.localModelPath = './'" in block
    link = root / "node_modules"
    if not link.exists():
        link.symlink_to(WEB_NODE_MODULES, target_is_directory=True)
    w, h = Image.open(root / "photo.jpg").size
    dtypes = sorted({TRANSFORMERS_JS_DTYPE[f["precision"]] for f in m["files"] if f.get("format") == "onnx"})
    assert dtypes == ["fp16", "fp32", "q8"]
    assert block.count("{ dtype: 'fp32' }") == 1 and all(f"'{d}' onnx/" in block for d in dtypes)
    for d in ["fp32"] + [d for d in dtypes if d != "fp32"]:       # fp32: the block exactly as written
        (root / "depth.png").unlink(missing_ok=True)
        code = block if d == "fp32" else block.replace("{ dtype: 'fp32' }", f"{{ dtype: '{d}' }}")
        (root / "depth.mjs").write_text(code + JS_CHECK)
        r = subprocess.run([node, "depth.mjs"], cwd=root, capture_output=True, text=True, timeout=120,
                           env={k: v for k, v in os.environ.items() if k != "NODE_PATH"})
        res = _ok(r, f"js block, dtype {d}")
        assert res["dims"] == [h, w] and res["size"] == [w, h] and res["finite"], (d, res)
        assert Image.open(root / "depth.png").size == (w, h), d


def test_card_names_the_hub_repository_and_publish(card):
    """The Hub form of the snippet and the Publish section name the repository USER/<release name>."""
    name, text = card["manifest"]["name"], card["text"]
    assert f"`pipeline('depth-estimation', 'USER/{name}', {{ dtype: 'fp32' }})`" in text
    pub = text[text.index("## Publish"):]
    pub = pub[:pub.index("\n## ", 1)]
    assert f"`edgedepth publish . USER/{name} --dry-run`" in pub and f"`edgedepth publish . USER/{name}`" in pub


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


# ------------------------------------------------------------------------------------------------ claims


def _rebuild_command(text: str) -> list[str]:
    import shlex

    (line,) = [ln for ln in text.splitlines() if ln.startswith("- Rebuild: ")]
    (cmd,) = re.findall(r"`(edgedepth release [^`]+)`", line)
    return shlex.split(cmd)


def _release_args(argv: list[str]) -> dict:
    """What decides a release's bytes in a `release` command line, as edgedepth's own parser reads it."""
    from edgedepth.cli import build_parser

    from edgedepth.release.recipe import recipe_path

    a = build_parser().parse_args(argv)
    assert a.command == "release"
    return {**{k: getattr(a, k) for k in ("model", "sizes", "parity_images", "no_gpu_check")},
            "recipe": os.path.realpath(recipe_path(a.recipe))}      # a recipe's name or its path: the same file


def test_rebuild_line_is_the_command_the_release_was_built_with(card):
    """The card's Rebuild line, parsed back by the CLI's parser, is conftest's build of the tiny release (recipe,
    model, sizes, parity images, GPU check), with --out the release's name: no option left out."""
    argv = _rebuild_command(card["text"])
    assert argv[:2] == ["edgedepth", "release"] and argv[-2:] == ["--out", card["manifest"]["name"]], argv
    built = ["release", "--recipe", TINY_RELEASE_RECIPE, "--out", "anywhere", *TINY_RELEASE_ARGS]
    assert _release_args(argv[1:]) == _release_args(built)
    assert card["manifest"]["provenance"]["recipe"]["overrides"] == {
        "model": "synthetic-tiny", "sizes": ["28x42"], "parity_images": 2}


def test_rebuild_line_carries_every_override(card):
    """--no-gpu-check and a local model path (quoted) reach the Rebuild line; a build without overrides has none."""
    import copy

    from edgedepth.release.modelcard import render_model_card

    m = copy.deepcopy(card["manifest"])
    m["provenance"]["recipe"]["overrides"] = {"model": "/data/my ckpt", "sizes": ["28x42", "56x70"],
                                              "parity_images": 0, "gpu_check": False}
    assert _rebuild_command(render_model_card(m))[2:] == [
        "--recipe", "depth-anything-v2-small", "--model", "/data/my ckpt", "--sizes", "28x42,56x70",
        "--parity-images", "0", "--no-gpu-check", "--out", m["name"]]
    m["provenance"]["recipe"]["overrides"] = {}
    assert _rebuild_command(render_model_card(m))[2:] == ["--recipe", "depth-anything-v2-small", "--out", m["name"]]


def test_card_does_not_depend_on_the_output_folder(card, tiny_release):
    """The tiny release was built into a folder named "release": the card names the release, never its folder."""
    assert tiny_release.name != card["manifest"]["name"]
    assert str(tiny_release) not in card["text"] and f"`{tiny_release.name}" not in card["text"]


def test_parity_gate_claim_names_the_files_it_did_not_run(card):
    """ExecuTorch's WebGPU file does not run on this machine's Python runtime: the card does not say it passed the
    gate."""
    not_gated = card["manifest"]["parity_method"]["build_gate"]["not_gated"]
    assert not_gated == ["depth_anything_v2_small_224x224_webgpu_fp32.pte"]
    line = next(ln for ln in card["text"].splitlines() if "passed the build's parity gate" in ln)
    assert line.startswith(f"Every file but `{not_gated[0]}` passed") and f"Not gated: `{not_gated[0]}`" in line


def test_synthetic_note_says_what_the_stand_in_is(card):
    """synthetic-tiny is not the member's architecture: the note does not claim it is; the full-size stand-in's does."""
    import copy

    from edgedepth.release.modelcard import render_model_card

    assert "exact architecture" not in card["text"] and "`synthetic-tiny` is a reduced stand-in" in card["text"]
    m = copy.deepcopy(card["manifest"])
    m["provenance"]["checkpoint"]["name"] = "synthetic"
    assert "They have the exact architecture" in render_model_card(m)


def _rows(ms: float, p25: float, p75: float, source: str = "run.json", **kw) -> dict:
    return {"backend": "cpu", "median_ms": ms, "p25_ms": p25, "p75_ms": p75, "threads": 2, "cpu": "Test CPU",
            "gpu_adapter": None, "method": {"rounds": 3, "warmup": 1, "iters": 5}, "source": source,
            "date": "2026-01-02", **kw}


def _with_latency(card, fp32_row: dict, int8_row: dict) -> str:
    import copy

    from edgedepth.release.modelcard import render_model_card

    m = copy.deepcopy(card["manifest"])
    for f in m["files"]:
        if f.get("format") == "tflite" and f["input"]["dtype"] == "float32":
            f["latency"] = {"fp32": [fp32_row], "int8": [int8_row]}.get(f["precision"], [])
    return render_model_card(m)


def _int8_line(text: str) -> str:
    (line,) = [ln for ln in text.splitlines() if ln.startswith("- LiteRT INT8 files against the FP32 file")]
    return line


def test_latency_rows_are_dated_sourced_and_name_the_machine(card):
    text = _with_latency(card, _rows(100.0, 98.0, 102.0), _rows(80.0, 79.0, 81.0))
    table = [ln for ln in text.splitlines() if ln.startswith("| `depth_anything_v2_small_28x42_")
             and "| cpu |" in ln]
    assert len(table) == 2
    for ln in table:
        assert "| Test CPU, 2 threads | 2026-01-02 | `run.json` |" in ln, ln
    assert "only the newest is shown" in text


def test_int8_is_called_faster_only_where_the_rows_show_it(card):
    """Faster: INT8's IQR wholly below FP32's (same run); overlapping: "not measurably faster"; above: slower; rows of
    two runs: not compared.  The old blanket claim is gone."""
    faster = _int8_line(_with_latency(card, _rows(100.0, 98.0, 102.0), _rows(80.0, 79.0, 81.0)))
    assert "on Test CPU, 2 threads (cpu): 28x42 1.25× faster (80.0 vs 100.0 ms)" in faster, faster
    same = _int8_line(_with_latency(card, _rows(100.0, 95.0, 105.0), _rows(98.0, 96.0, 103.0)))
    assert "28x42 not measurably faster (98.0 vs 100.0 ms, IQRs overlap)" in same and "× faster" not in same, same
    slower = _int8_line(_with_latency(card, _rows(100.0, 98.0, 102.0), _rows(120.0, 110.0, 130.0)))
    assert "28x42 1.20× slower (120.0 vs 100.0 ms)" in slower and "faster" not in slower, slower
    apart = _int8_line(_with_latency(card, _rows(100.0, 98.0, 102.0), _rows(80.0, 79.0, 81.0, source="other.json")))
    assert "never timed in one run, so not compared" in apart, apart
    assert re.search(r": \d+% of its bytes; ", _int8_line(card["text"]))
    assert "speed: not measured for these files" in _int8_line(card["text"])
    assert "trade accuracy for size and CPU speed" not in card["text"]


def test_newest_latency_keeps_one_row_per_file_machine_backend(tmp_path):
    """Of two records of one (file, machine, backend) the newer date wins; on the same date the later-listed file;
    undated records are never shown; other thread counts are other machines."""
    from edgedepth.verify import records

    sha = "a" * 64

    def report(name, *recs):
        p = tmp_path / name
        p.write_text(json.dumps({"records": [
            {"sha256": sha, "kind": "latency", "backend": "cpu", "threads": t, "cpu": "Test CPU", "gpu_adapter": None,
             "method": None, "source": name, **({"date": d} if d else {}), "median_ms": ms, "p25_ms": None,
             "p75_ms": None} for t, d, ms in recs]}))
        return str(p)

    a = report("a.json", (2, "2026-01-03", 10.0), (16, "2026-01-01", 3.0))
    b = report("b.json", (2, "2026-01-02", 11.0), (16, "2026-01-01", 4.0))
    c = report("c.json", (2, None, 12.0))
    kept, left = records.newest_latency([a, b, c])
    got = {(records.machine(r), r["source"], r["date"]) for r in kept[sha]}
    assert got == {("Test CPU, 2 threads", "a.json", "2026-01-03"), ("Test CPU, 16 threads", "b.json", "2026-01-01")}
    assert list(kept[sha][0])[8:10] == ["source", "date"]
    assert {(r["source"], r["kept"]["source"]) for r in left[sha]} == {
        ("b.json", "a.json"), ("a.json", "b.json"), ("c.json", "a.json")}
