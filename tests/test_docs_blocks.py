"""Every fenced code block of every page of the documentation site (mkdocs.yml, docs/) runs as written.

The pages are the site's (docs/ less mkdocs.yml's ``exclude_docs``: docs/hooks, docs/spikes), each with its generated
parts expanded as the build expands them (docs/hooks/generate.py), in nav order.  Per page, one fresh work folder; its
blocks run there in order, so a later block may use an earlier block's output:

- ``bash``: ``bash -euo pipefail -c BLOCK``, exit 0 within :data:`BLOCK_TIMEOUT_S`;
- ``console``: its ``$ `` lines, the same way (the other lines are their output, not compared);
- ``python``: a child of this venv's python running the block as a script, exit 0;
- ``js``: Node running the block as an ES module, exit 0;
- ``yaml`` / ``json`` / ``toml``: parsed; ``text`` (output or a synopsis): not run.  Any other language fails
  :func:`test_every_block_is_in_a_language_this_test_runs_or_parses`.

Every child gets this venv's ``bin/`` first on PATH (``edgedepth`` and ``python`` are the venv's), a temporary HOME
(so the build cache, ``~/.cache/edgedepth/builds``, is one for this session, shared by its pages) and no network for
the Hugging Face hub (``HF_HUB_OFFLINE=1``, ``HF_HOME`` temporary).  That HF_HOME holds, in huggingface_hub's cache
layout (``hub/models--OWNER--NAME/{blobs,snapshots/REV,refs/main}``), a tiny synthetic stand-in under each hub id
the pages name (:data:`HUB_STAND_INS`: ``--model small`` is ``synthetic-tiny`` saved as Depth-Anything-V2-Small-hf at
its pinned revision), so those examples run offline and fast; their numbers are the stand-in's.

An HTML comment line directly before a fence (invisible on the site; the block's text stays what a reader copies):

- ``<!-- docs-test: skip (REASON) -->``: not run (a ``bash`` block is still syntax-checked, ``bash -n``); the reason
  is required: the Hub, a Ray cluster, the network, a build of many minutes and where else it is tested;
- ``<!-- docs-test: background -->``: a long-running command (``edgedepth serve``): started, its first line of
  output read within :data:`BACKGROUND_TIMEOUT_S`, the address it prints (if any) must answer HTTP 200, then its
  process group is stopped;
- ``<!-- docs-test: file NAME -->``: a file the reader saves: written as NAME into the work folder, and a later
  block of the page must run it.

``<!-- docs-test: given NAME ... -->`` on a line of its own names what the page says the reader already has
(``my-release``, ``my-finetune``, ``my-photos``: :data:`GIVENS`); stand-ins are put into the work folder first.

Several minutes on a busy 2-core machine: marked slow.  The fine-tune guide's three commands (its 518x686 release in
every format) are skipped here: tests/test_own_model.py runs them from the guide, between its ``finetune-guide``
markers, with its own checks.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import tomllib
import urllib.request
from pathlib import Path

import pytest
import yaml

from conftest import benchmark_module
from test_docs import _hook, _pages
from test_model_card import code_blocks

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
VENV_BIN = os.path.dirname(sys.executable)      # this venv's bin/: edgedepth, python
BLOCK_TIMEOUT_S = 900                          # the slowest block: a release of a recipe cut down to one size
BACKGROUND_TIMEOUT_S = 120                     # for a background block's first line
BACKGROUND_ALIVE_S = 2                         # ... and still running this long after it
RUN = ("bash", "console", "python", "js")
PARSE = {"yaml": yaml.safe_load, "json": json.loads, "toml": tomllib.loads}
NOT_RUN = ("text",)
# Hub checkpoints the pages use, by member name: the stand-in saved under the member's hub id (at its pinned revision).
HUB_STAND_INS = {"small": "synthetic-tiny"}
UNPINNED_COMMIT = "0" * 40                     # refs/main of a member with no pinned revision (none used today)
# Variables of the caller's environment that would point a child elsewhere than its temporary HOME and HF_HOME.
DROPPED_ENV = ("EDGEDEPTH_BUILD_CACHE", "XDG_CACHE_HOME", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE",
               "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_ENDPOINT", "RAY_ADDRESS")

DIRECTIVE = re.compile(r"<!--\s*docs-test:(.*?)-->")
BLOCK_DIRECTIVE = re.compile(r"\s*(?:skip\s*\((?P<reason>.*)\)|skip|(?P<background>background)|file\s+(?P<file>\S+))\s*")
GIVEN = re.compile(r"\s*given((?:\s+[\w.-]+)+)\s*")
HUB_ID = re.compile(r"[\w.-]+/[\w.-]+(?:@\w+)?(?<!\.tflite)(?<!\.pte)(?<!\.onnx)(?<!\.pth)(?<!\.safetensors)")
URL = re.compile(r"http://(?:127\.0\.0\.1|localhost|\[::1\]):\d+/\S*")


# ------------------------------------------------------------------------------------------------ the pages' blocks

@dataclasses.dataclass(frozen=True)
class Block:
    page: str
    n: int                  # 1-based, on the page
    lang: str
    body: str
    mode: str = "run"       # run | skip | background | file
    arg: str = ""           # skip: the reason; file: the file's name

    def __str__(self) -> str:
        first = next((line for line in self.body.splitlines() if line.strip()), "")
        return f"{self.page} block {self.n} ({self.lang}: {first[:70]!r})"


def _nav_pages() -> list[str]:
    """The pages of mkdocs.yml's nav, in order."""
    config = yaml.load(open(ROOT / "mkdocs.yml", encoding="utf-8"), Loader=yaml.BaseLoader)

    def walk(item):
        if isinstance(item, str):
            yield item
        elif isinstance(item, dict):
            for v in item.values():
                yield from walk(v)
        elif isinstance(item, list):
            for v in item:
                yield from walk(v)

    return [p for p in walk(config["nav"]) if p.endswith(".md")]


def page_blocks(rel: str, text: str) -> tuple[list[Block], list[str]]:
    """(the page's fenced blocks with their directives, the names it declares ``given``), from its expanded text.

    The fences are test_model_card's :func:`code_blocks` rules (``` only, not indented, closed); a ``docs-test``
    comment is either ``given`` on a line of its own or a block directive on the line directly before a fence."""
    blocks, given, lines = [], [], text.splitlines()
    lang, body, pending = None, [], None
    for i, line in enumerate(lines):
        if lang is None:
            m = DIRECTIVE.fullmatch(line.strip())
            if m and GIVEN.fullmatch(m.group(1)):
                given += GIVEN.fullmatch(m.group(1)).group(1).split()
                continue
            if m:
                d = BLOCK_DIRECTIVE.fullmatch(m.group(1))
                assert d, f"{rel} line {i + 1}: unknown docs-test directive {line.strip()!r}"
                nxt = lines[i + 1] if i + 1 < len(lines) else ""
                assert nxt.startswith("```") and nxt.strip() != "```", (
                    f"{rel} line {i + 1}: {line.strip()!r} must be the line directly before a code fence")
                if d.group("file"):
                    pending = ("file", d.group("file"))
                elif d.group("background"):
                    pending = ("background", "")
                else:
                    pending = ("skip", (d.group("reason") or "").strip())
                continue
            assert "docs-test" not in line, f"{rel} line {i + 1}: a docs-test directive this test does not parse"
            fence = re.fullmatch(r"```(.*)", line)
            if fence:
                lang, body = fence.group(1).strip(), []
        elif line == "```":
            mode, arg = pending or ("run", "")
            blocks.append(Block(rel, len(blocks) + 1, lang, "\n".join(body) + "\n", mode, arg))
            lang, pending = None, None
        else:
            body.append(line)
    assert [(b.lang, b.body) for b in blocks] == code_blocks(text), f"{rel}: fences parsed differently"
    return blocks, given


@pytest.fixture(scope="module")
def pages() -> dict[str, tuple[list[Block], list[str]]]:
    """{page: (blocks, given)} of every page the site builds, generated parts expanded, in nav order."""
    texts = _pages()
    nav = _nav_pages()
    assert sorted(nav) == sorted(texts), "mkdocs.yml's nav and docs/ disagree (test_docs.py builds the site)"
    hook = _hook()
    return {rel: page_blocks(rel, hook.expand(texts[rel], rel)) for rel in nav}


def _all_blocks(pages) -> list[Block]:
    return [b for blocks, _ in pages.values() for b in blocks]


def test_every_block_is_in_a_language_this_test_runs_or_parses(pages):
    bad = [f"{b}: a code block in a language this test neither runs nor parses" for b in _all_blocks(pages)
           if b.lang not in RUN + tuple(PARSE) + NOT_RUN]
    assert not bad, "\n".join(bad)


def test_directives_are_well_formed(pages):
    """A skip says why; only a run language runs in the background; a saved file is run by a later block; a given
    name is one this test provides."""
    bad = []
    for rel, (blocks, given) in pages.items():
        for b in blocks:
            if b.mode == "skip" and len(b.arg) < 10:
                bad.append(f"{b}: a skip must give its reason: <!-- docs-test: skip (why) -->")
            if b.mode == "background" and b.lang != "bash":
                bad.append(f"{b}: only a bash block runs in the background")
            if b.mode == "file" and not any(b.arg in later.body for later in blocks[b.n:] if later.mode == "run"):
                bad.append(f"{b}: saved as {b.arg}, but no later block of the page runs it")
        bad += [f"{rel}: given {name!r}: not one of {sorted(GIVENS)}" for name in given if name not in GIVENS]
    assert not bad, "\n".join(bad)


def test_every_hub_checkpoint_the_pages_run_has_a_stand_in(pages):
    """A page's ``--model MEMBER`` or ``--model OWNER/NAME`` is loaded offline from :data:`HUB_STAND_INS`."""
    from edgedepth.models import MEMBERS

    ids = {m.hub_id.lower(): name for name, m in MEMBERS.items()}
    missing = []
    for b in _all_blocks(pages):
        if b.mode != "run" or b.lang not in RUN:
            continue
        for spec in re.findall(r"--model[ =](\S+)", b.body):
            member = spec if spec in MEMBERS else ids.get(spec.partition("@")[0].lower())
            if (member or HUB_ID.fullmatch(spec)) and member not in HUB_STAND_INS:
                missing.append(f"{b}: --model {spec} (add its member to HUB_STAND_INS)")
    assert not missing, "\n".join(missing)


# ------------------------------------------------------------------------------------------------ the environment

def write_hub_stand_in(hub_cache: Path, member_name: str, stand_in: str) -> Path:
    """``stand_in`` saved (``save_pretrained``) under member ``member_name``'s hub id in huggingface_hub's cache layout
    at ``hub_cache``: ``models--OWNER--NAME/blobs/ETAG`` (an LFS file's SHA-256, else its git blob hash, as the hub
    names them), ``snapshots/REV/FILE`` -> ``../../blobs/ETAG`` and ``refs/main`` = REV (the member's pinned
    revision).  Returns the snapshot folder."""
    import tempfile

    from huggingface_hub.file_download import repo_folder_name
    from huggingface_hub.utils.sha import git_hash, sha_fileobj

    from edgedepth.checkpoint import load_checkpoint
    from edgedepth.models import MEMBERS

    member = MEMBERS[member_name]
    commit = member.revision or UNPINNED_COMMIT
    repo = hub_cache / repo_folder_name(repo_id=member.hub_id, repo_type="model")
    snapshot = repo / "snapshots" / commit
    (repo / "blobs").mkdir(parents=True)
    snapshot.mkdir(parents=True)
    model = load_checkpoint(stand_in, quiet=True).model
    assert hasattr(model, "save_pretrained"), f"{stand_in}: no transformers save_pretrained: write its hub layout here"
    with tempfile.TemporaryDirectory() as saved:
        model.save_pretrained(saved)
        for name in sorted(os.listdir(saved)):
            with open(os.path.join(saved, name), "rb") as f:
                etag = sha_fileobj(f).hex() if name.endswith((".safetensors", ".bin")) else git_hash(f.read())
            shutil.copyfile(os.path.join(saved, name), repo / "blobs" / etag)
            os.symlink(os.path.join("..", "..", "blobs", etag), snapshot / name)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot


@pytest.fixture(scope="module")
def doc_env(tmp_path_factory) -> dict:
    """The children's environment: this venv first on PATH, a temporary HOME, the hub offline with the stand-ins in
    a temporary HF_HOME (checked with huggingface_hub's own cache readers)."""
    from huggingface_hub import scan_cache_dir, try_to_load_from_cache

    from edgedepth.models import MEMBERS

    home, hf_home = tmp_path_factory.mktemp("home"), tmp_path_factory.mktemp("hf-home")
    hub_cache = hf_home / "hub"          # huggingface_hub.constants.HF_HUB_CACHE for this HF_HOME
    for member, stand_in in HUB_STAND_INS.items():
        snapshot = write_hub_stand_in(hub_cache, member, stand_in)
        m = MEMBERS[member]
        found = try_to_load_from_cache(m.hub_id, "config.json", cache_dir=str(hub_cache), revision=m.revision)
        assert found == str(snapshot / "config.json"), found
    assert {r.repo_id for r in scan_cache_dir(hub_cache).repos} == {MEMBERS[m].hub_id for m in HUB_STAND_INS}
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_ENV}
    env.update(PATH=VENV_BIN + os.pathsep + os.environ.get("PATH", ""), VIRTUAL_ENV=os.path.dirname(VENV_BIN),
               HOME=str(home), HF_HOME=str(hf_home), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    return env


# ------------------------------------------------------------------------------------------------ what pages assume

def _my_release(dest: Path, env: dict) -> None:
    """A release folder: the synthetic stand-in's, as getting-started.md's quickstart builds it."""
    r = subprocess.run(["edgedepth", "release", "--model", "synthetic-tiny", "--sizes", "56x70", "--formats", "litert",
                        "--parity-images", "2", "--quiet", "--out", str(dest)], env=env, capture_output=True,
                       text=True, timeout=BLOCK_TIMEOUT_S)
    assert r.returncode == 0, r.stderr[-3000:]


def _my_finetune(dest: Path, env: dict) -> None:
    """The user's fine-tune, a ``save_pretrained`` folder: synthetic-tiny after a few optimiser steps (benchmarks/lib/
    finetune.py, as tests/test_own_model.py has it)."""
    benchmark_module("lib/finetune").finetune().save_pretrained(str(dest))


def _my_photos(dest: Path, env: dict) -> None:
    """The user's photos: two of the bundled set, small."""
    from PIL import Image

    from edgedepth.images import source_files

    dest.mkdir()
    for src in source_files()[:2]:
        Image.open(src).convert("RGB").resize((96, 72)).save(dest / (os.path.basename(src).split(".")[0] + ".png"))


GIVENS = {"my-release": _my_release, "my-finetune": _my_finetune, "my-photos": _my_photos}


@pytest.fixture(scope="module")
def givens(tmp_path_factory, doc_env):
    """put(name, work): a copy of the stand-in for ``name`` in the work folder, each made once."""
    made: dict[str, Path] = {}

    def put(name: str, work: Path) -> None:
        if name not in made:
            made[name] = tmp_path_factory.mktemp("given") / name
            GIVENS[name](made[name], doc_env)
        shutil.copytree(made[name], work / name, symlinks=True)

    return put


# ------------------------------------------------------------------------------------------------ running blocks

def _tail(r) -> str:
    return f"\n--- stdout ---\n{(r.stdout or '')[-2000:]}\n--- stderr ---\n{(r.stderr or '')[-4000:]}"


def _run(block: Block, argv: list[str], work: Path, env: dict) -> None:
    try:
        r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{block}: still running after {BLOCK_TIMEOUT_S} s", pytrace=False)
    assert r.returncode == 0, f"{block} exited {r.returncode}{_tail(r)}"


def _script(block: Block, work: Path, suffix: str) -> Path:
    """The block as a file beside the work folder (tracebacks then quote its lines; the folder stays the reader's)."""
    path = work.parent / f"{Path(block.page).stem}_block{block.n}{suffix}"
    path.write_text(block.body)
    return path


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node not found (Node 18+; `make setup` installs it)", pytrace=False)
    return node


def _console_commands(block: Block) -> str:
    commands = [line[2:] for line in block.body.splitlines() if line.startswith("$ ")]
    assert commands, f"{block}: a console block with no `$ ` command line"
    return "\n".join(commands) + "\n"


def _background(block: Block, work: Path, env: dict) -> None:
    """Start the block in its own process group, read its first line of output, fetch the address it prints (HTTP
    200), then stop the group (every process the block started, and none other)."""
    err = work.parent / f"{Path(block.page).stem}_block{block.n}.stderr"
    with open(err, "w") as stderr:
        proc = subprocess.Popen(["bash", "-euo", "pipefail", "-c", block.body], cwd=work, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=stderr, start_new_session=True)
    try:
        first: list[str] = []
        reader = threading.Thread(target=lambda: first.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(BACKGROUND_TIMEOUT_S)
        line = first[0] if first else ""
        why = f"{block}: exited {proc.returncode}" if proc.poll() is not None else f"{block}: no output line"
        assert line.strip() and proc.poll() is None, (
            f"{why} within {BACKGROUND_TIMEOUT_S} s (first line {line!r}); stderr:\n{err.read_text()[-3000:]}")
        url = URL.search(line)
        if url:
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))     # loopback: never a proxy
            with opener.open(url.group(0), timeout=30) as response:
                assert response.status == 200, f"{block}: {url.group(0)} answered {response.status}"
        try:                # a long-running command: still running a moment later
            proc.wait(timeout=BACKGROUND_ALIVE_S)
        except subprocess.TimeoutExpired:
            pass
        assert proc.poll() is None, f"{block}: exited {proc.returncode} after its first line; stderr:\n" + \
            err.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        proc.stdout.close()


def run_block(block: Block, work: Path, env: dict) -> None:
    if block.mode == "skip":
        if block.lang == "bash":        # not run, but still a valid script
            r = subprocess.run(["bash", "-n", "-c", block.body], capture_output=True, text=True)
            assert r.returncode == 0, f"{block}: not valid bash{_tail(r)}"
        return
    if block.mode == "file":
        (work / block.arg).write_text(block.body)
        return
    if block.mode == "background":
        _background(block, work, env)
    elif block.lang == "bash":
        _run(block, ["bash", "-euo", "pipefail", "-c", block.body], work, env)
    elif block.lang == "console":
        _run(block, ["bash", "-euo", "pipefail", "-c", _console_commands(block)], work, env)
    elif block.lang == "python":
        _run(block, [os.path.join(VENV_BIN, "python"), str(_script(block, work, ".py"))], work, env)
    elif block.lang == "js":
        _run(block, [_node(), str(_script(block, work, ".mjs"))], work, env)
    elif block.lang in PARSE:
        try:
            PARSE[block.lang](block.body)
        except Exception as e:  # noqa: BLE001  (each parser's own error type)
            pytest.fail(f"{block}: does not parse as {block.lang}: {e}", pytrace=False)
    else:
        assert block.lang in NOT_RUN, f"{block}: a code block in a language this test neither runs nor parses"


@pytest.mark.parametrize("page", _nav_pages())
def test_page_blocks_run_as_written(page, pages, doc_env, givens, tmp_path_factory):
    blocks, given = pages[page]
    work = tmp_path_factory.mktemp(page.replace("/", "-").removesuffix(".md")) / "work"
    work.mkdir()
    for name in given:
        givens(name, work)
    for block in blocks:
        run_block(block, work, doc_env)
