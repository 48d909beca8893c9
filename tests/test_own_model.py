"""A checkpoint of the user's own (a stand-in fine-tune: synthetic-tiny after a few optimiser steps, benchmarks/lib/
finetune.py): the fine-tune guide's three commands (docs/guides/finetune.md) run as written, the release names the user's model and credits upstream,
no local path reaches a published file, the gate runs on the user's photos, and the lineage is never guessed."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, assert_one_line_error, benchmark_module, run_cli

stand_in = benchmark_module("lib/finetune")      # finetune(), save_all(): one way, for this test and the benchmark

PUBLISHED_TEXT = ("README.md", "NOTICE", "manifest.json", "config.json")


@pytest.fixture(scope="module")
def own(tmp_path_factory):
    """A work folder as the guide's user has it: ``my-finetune/`` (save_pretrained of the stand-in fine-tune), the
    same weights as official-format files beside it, and ``my-photos/`` (three photos, one odd flat one)."""
    from PIL import Image

    from edgedepth.images import source_files

    work = tmp_path_factory.mktemp("own model with spaces")
    paths = stand_in.save_all(stand_in.finetune(), str(work / "formats"))
    shutil.copytree(paths["hf"], work / "my-finetune")
    photos = work / "my-photos"
    photos.mkdir()
    for src in source_files()[:2]:
        Image.open(src).convert("RGB").resize((96, 72)).save(photos / (os.path.basename(src).split(".")[0] + ".png"))
    Image.new("RGB", (80, 64), (128, 128, 128)).save(photos / "flat.png")
    return work, paths


GUIDE = os.path.join("docs", "guides", "finetune.md")


def _guide_block() -> str:
    """The guide's block between its finetune-guide markers (a docs-test directive may sit before the fence)."""
    text = open(os.path.join(ROOT, GUIDE), encoding="utf-8").read()
    m = re.search(r"<!-- finetune-guide:start -->\s*(?:<!--.*?-->\s*)?```bash\n(.*?)```\s*<!-- finetune-guide:end -->",
                  text, re.S)
    assert m, f"{GUIDE} has no finetune-guide block"
    return m.group(1)


@pytest.fixture(scope="module")
def guide(own):
    """The guide's three commands, as written, one bash script in the work folder (edgedepth from this venv)."""
    work, _ = own
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", _guide_block()], cwd=work, capture_output=True,
                       text=True, timeout=1500, env=env)
    assert r.returncode == 0, r.stderr[-3000:]
    return work, r


def test_guide_runs_as_written(guide):
    work, r = guide
    assert list((work / "exported").glob("*.tflite")), "export wrote no file"
    assert subprocess.run([sys.executable, "-m", "edgedepth", "verify", str(work / "my-depth")]).returncode == 0
    assert "https://huggingface.co/me/my-depth" in r.stdout      # the dry run: where each file would go


def test_release_names_the_users_model_and_credits_upstream(guide):
    work, _ = guide
    rel = work / "my-depth"
    m = json.loads((rel / "manifest.json").read_text())
    assert m["name"] == "my-depth" and m["provenance"]["base_model"] == "me/my-depth"
    assert m["model"]["user_model"] is True and m["model"]["hub_id"] == "depth-anything/Depth-Anything-V2-Small-hf"
    card = (rel / "README.md").read_text()
    assert "\nbase_model: me/my-depth\nbase_model_relation: quantized\n" in card and "\n# my-depth\n" in card
    assert "`my-depth` is converted from [`me/my-depth`](https://huggingface.co/me/my-depth)" in card
    assert "Upstream release: [`depth-anything/Depth-Anything-V2-Small-hf`]" in card
    assert "base_model: depth-anything" not in card
    notice = (rel / "NOTICE").read_text()
    assert notice.startswith("This folder contains files derived from my-depth (base model: me/my-depth)")
    assert "Depth Anything V2 Small (depth-anything/Depth-Anything-V2-Small-hf) is by its authors" in notice
    assert json.loads((rel / "config.json").read_text())["_name_or_path"] == "my-depth"
    assert m["provenance"]["checkpoint"]["name"] == "a local checkpoint"


def test_no_local_path_in_a_published_file(guide):
    """Neither the work folder's path nor the checkpoint's or photos' folder names reach a listed file; the Rebuild
    line says PATH / DIR and what they stand for."""
    work, _ = guide
    rel = work / "my-depth"
    m = json.loads((rel / "manifest.json").read_text())
    for f in [*(e["path"] for e in m["files"]), "manifest.json"]:
        data = (rel / f).read_bytes()
        for secret in (str(work), "my-finetune", "my-photos", os.path.basename(str(work))):
            assert secret.encode() not in data, (f, secret)
    card = (rel / "README.md").read_text()
    rebuild = next(ln for ln in card.splitlines() if ln.startswith("- Rebuild:"))
    argv = shlex.split(re.search(r"`(edgedepth release [^`]*)`", rebuild).group(1))
    assert argv[argv.index("--model") + 1] == "PATH" and argv[argv.index("--images") + 1] == "DIR"
    assert argv[argv.index("--name") + 1] == "my-depth" and argv[argv.index("--base-model") + 1] == "me/my-depth"
    assert "`PATH` is the checkpoint whose state dict SHA-256 is above" in rebuild


def test_gate_ran_on_the_users_photos(guide):
    """The card names the set by SHA-256; the report lists each gated file's worst photos and pictures the worst."""
    from edgedepth.images import image_set, image_set_hash

    work, _ = guide
    rel = work / "my-depth"
    m = json.loads((rel / "manifest.json").read_text())
    gate = m["parity_method"]["build_gate"]["images"]
    assert gate["count"] == 3 and gate["set"] == "the builder's own photos"
    assert gate["sha256"] == image_set_hash(image_set(str(work / "my-photos")))
    assert gate["sha256"][:16] in (rel / "README.md").read_text()
    report = json.loads((rel / "build-report.json").read_text())
    gated = {k: v for k, v in report["files"].items() if "parity_cpu" in v}
    assert gated
    for name, v in gated.items():
        worst = v["worst_images"]
        assert [w["image"] for w in worst] and {w["image"] for w in worst} <= {"astronaut.png", "camera.png", "flat.png"}
        assert worst == sorted(worst, key=lambda w: (-w["rel_l2"], w["image"]))
        assert (rel / v["worst_picture"]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", name


@pytest.fixture(scope="module")
def trimmed(tmp_path_factory):
    """The default recipe cut to one LiteRT FP32 file (fast builds of the lineage cases)."""
    path = tmp_path_factory.mktemp("recipe") / "trimmed.py"
    path.write_text("import runpy\n"
                    f"RECIPE = {{**runpy.run_path({os.path.join(ROOT, 'recipes/depth-anything-v2-small.py')!r})"
                    "['RECIPE'], 'litert': {'precisions': ['fp32']}, 'onnx': None, 'executorch': None}\n")
    return path


FAST = ("--sizes", "28x42", "--parity-images", "0", "--no-gpu-check", "--quiet")


def test_another_checkpoint_without_a_name_is_refused(own, trimmed, tmp_path):
    """Overriding the recipe's checkpoint with one of the user's, saying nothing: refused, not labelled upstream."""
    work, _ = own
    r = run_cli("release", "--recipe", trimmed, "--model", work / "my-finetune", "--out", tmp_path / "x", *FAST)
    assert_one_line_error(r, "is not the recipe's checkpoint", "--name NAME", "--base-model depth-anything/")
    assert not (tmp_path / "x").exists()


def test_every_format_gives_the_same_files(own, trimmed, tmp_path):
    """The fine-tune as a folder, an official .pth (named by convention), a training checkpoint and a safetensors
    file: byte-identical model files; no base model named = none claimed; each file named by its SHA-256."""
    work, paths = own
    digests = {}
    for kind, extra in (("hf", ()), ("pth", ()), ("training", ("--max-depth", "relative")), ("safetensors", ())):
        out = tmp_path / kind
        r = run_cli("release", "--recipe", trimmed, "--model", paths[kind], "--name", "mine", "--out", out,
                    *extra, *FAST)
        assert r.returncode == 0, r.stderr[-2000:]
        assert run_cli("verify", out).returncode == 0
        m = json.loads((out / "manifest.json").read_text())
        assert m["name"] == "mine" and m["model"]["user_model"]
        digests[kind] = {f["path"]: f["sha256"] for f in m["files"] if f["path"].endswith(".tflite")}
        ck = m["provenance"]["checkpoint"]
        if kind != "hf":
            assert list(ck["weight_files"]) == [os.path.basename(paths[kind])]
        assert m["provenance"]["base_model"] is None
        card = (out / "README.md").read_text()
        assert "\nbase_model" not in card and "converted from a checkpoint not on the Hub" in card
        assert "(base model: an unpublished checkpoint)" in (out / "NOTICE").read_text()
    assert len({json.dumps(d, sort_keys=True) for d in digests.values()}) == 1, digests


def test_upstream_weights_by_the_users_word(own, trimmed, tmp_path):
    """--base-model naming the member's upstream id: the user says the folder holds those weights -- today's
    upstream card, the recipe's name."""
    work, _ = own
    out = tmp_path / "up"
    r = run_cli("release", "--recipe", trimmed, "--model", work / "my-finetune", "--base-model",
                "depth-anything/Depth-Anything-V2-Small-hf", "--out", out, *FAST)
    assert r.returncode == 0, r.stderr[-2000:]
    m = json.loads((out / "manifest.json").read_text())
    assert m["name"] == "depth-anything-v2-small-edgedepth" and "user_model" not in m["model"]
    assert m["provenance"]["recipe"]["overrides"]["base_model"] == "depth-anything/Depth-Anything-V2-Small-hf"


def test_recipe_new_builds_the_users_release(own, tmp_path):
    """`recipe new` prints a recipe that `release --recipe` takes: the user's name, the checkpoint, the member's
    formats; the Rebuild line names the recipe by its file."""
    from edgedepth.release.recipe import load_recipe

    work, _ = own
    r = run_cli("recipe", "new", "--model", work / "my-finetune", "--base-model", "me/my-depth")
    assert r.returncode == 0, r.stderr[-2000:]
    recipe = tmp_path / "my-recipe.py"
    recipe.write_text(r.stdout)
    loaded = load_recipe(str(recipe))
    assert loaded.name == "my-finetune-edgedepth" and loaded.base_model == "me/my-depth"
    assert loaded.model == str(work / "my-finetune") and len(loaded.sizes) == 6
    assert [f.target_name for f, _ in loaded.parts] == ["litert", "executorch", "onnx"]
    # a user's edit, as the recipe invites: one LiteRT file (every format's build is tested elsewhere)
    recipe.write_text(r.stdout + 'RECIPE.update(litert={"precisions": ["fp32"]}, executorch=None, onnx=None)\n')
    out = tmp_path / "rel"
    b = run_cli("release", "--recipe", recipe, "--out", out, *FAST)
    assert b.returncode == 0, b.stderr[-2000:]
    card = (out / "README.md").read_text()
    assert "`edgedepth release --recipe my-recipe.py --sizes 28x42 --parity-images 0 --no-gpu-check " \
           "--out my-finetune-edgedepth`" in card


@pytest.mark.parametrize("args,fragments", [
    (("--name", "a/b"), ("--name 'a/b'", "letters, digits")),
    (("--name", "ok", "--base-model", "nobody"), ("--base-model 'nobody'", "OWNER/NAME")),
    (("--name", "ok", "--max-depth", "-3"), ("--max-depth '-3'", "(a positive number), or relative")),
], ids=["name", "base-model", "max-depth"])
def test_bad_lineage_options(own, trimmed, tmp_path, args, fragments):
    work, _ = own
    r = run_cli("release", "--recipe", trimmed, "--model", work / "my-finetune", "--out", tmp_path / "x", *args, *FAST)
    assert_one_line_error(r, *fragments)
    assert not (tmp_path / "x").exists()


def test_photos_folder_with_a_link_outside_is_refused(own, trimmed, tmp_path):
    from edgedepth.images import source_files

    work, _ = own
    photos = tmp_path / "photos"
    photos.mkdir()
    os.symlink(source_files()[0], photos / "outside.png")
    r = run_cli("release", "--recipe", trimmed, "--model", work / "my-finetune", "--name", "x", "--images", photos,
                "--out", tmp_path / "x", "--sizes", "28x42", "--no-gpu-check", "--quiet")
    assert_one_line_error(r, "'outside.png' is a symlink to", "outside the folder")
    assert not (tmp_path / "x").exists()
