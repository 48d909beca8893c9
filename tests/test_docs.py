"""The documentation site (mkdocs.yml, docs/): it builds strict, its CLI reference is the real parser's, every link and
image of the built site resolves, and its pages name only options and models that exist, never an issue number."""

import argparse
import html.parser
import importlib.util
import os
import posixpath
import re
import subprocess
import sys
import urllib.parse

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
MKDOCS_YML = os.path.join(ROOT, "mkdocs.yml")


def _hook():
    """docs/hooks/generate.py, the MkDocs hook that generates the reference parts."""
    spec = importlib.util.spec_from_file_location("edgedepth_docs_generate", os.path.join(DOCS, "hooks", "generate.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _excluded() -> list[str]:
    """docs/ folders mkdocs.yml keeps out of the site (``exclude_docs``), as relative prefixes."""
    config = yaml.load(open(MKDOCS_YML, encoding="utf-8"), Loader=yaml.BaseLoader)   # tags (none today) as text
    return [p.strip().strip("/") + "/" for p in config.get("exclude_docs", "").splitlines() if p.strip()]


def _pages() -> dict[str, str]:
    """{path relative to docs/: text} of every Markdown page of the site."""
    excluded = _excluded()
    pages = {}
    for dirpath, _, files in os.walk(DOCS):
        for name in files:
            rel = os.path.relpath(os.path.join(dirpath, name), DOCS).replace(os.sep, "/")
            if name.endswith(".md") and not any(rel.startswith(p) for p in excluded):
                pages[rel] = open(os.path.join(dirpath, name), encoding="utf-8").read()
    return pages


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """``mkdocs build --strict`` into a temporary folder: (folder, everything it printed, return code)."""
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")     # Material's end-of-life banner: not a build warning
    r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(out)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    return str(out), r.stdout + r.stderr, r.returncode


def test_site_builds_strict_without_warnings(site):
    folder, log, rc = site
    assert rc == 0, log[-4000:]
    warnings = [line for line in log.splitlines() if re.match(r"\s*(WARNING|ERROR)\b", line)]
    assert not warnings, "\n".join(warnings)
    left = [f for f, text in _built_html(folder).items() if "<!-- generated:" in text]
    assert not left, f"marker lines not replaced in {left}"


# ------------------------------------------------------------------------------------------ the CLI reference

def _walk(parser: argparse.ArgumentParser, words=()):
    """{command words: [option strings and positional names]} of every command below ``parser`` (help left out)."""
    found = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[words + (name,)] = [s for a in sub._actions if not isinstance(
                    a, (argparse._HelpAction, argparse._SubParsersAction))
                    for s in (a.option_strings or [a.metavar or a.dest])]
                found |= _walk(sub, words + (name,))
    return found


def _sections(markdown: str) -> dict[str, str]:
    """{"edgedepth CMD": its section} of the generated reference."""
    parts = re.split(r"^## `(edgedepth [^`]+)`$", markdown, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def test_cli_reference_lists_every_option_of_the_real_parser(site):
    from edgedepth.cli import build_parser

    commands = _walk(build_parser())
    assert ("export",) in commands and ("recipe", "new") in commands and ("serve",) in commands
    markdown = _hook().cli_markdown()
    sections = _sections(markdown)
    assert set(sections) == {"edgedepth " + " ".join(w) for w in commands}
    missing = [f"edgedepth {' '.join(words)} {opt}" for words, options in commands.items() for opt in options
               if f"`{opt}`" not in sections["edgedepth " + " ".join(words)]]
    assert not missing, f"not in the CLI reference: {missing}"
    assert "`--version`" in markdown.split("\n## ")[0]
    page = open(os.path.join(site[0], "reference", "cli", "index.html"), encoding="utf-8").read()
    absent = [opt for options in commands.values() for opt in options if f"<code>{opt}</code>" not in page]
    assert not absent, f"options missing from the built page: {sorted(set(absent))}"


def test_cli_reference_shows_help_choices_and_defaults():
    md = _sections(_hook().cli_markdown())
    export = md["edgedepth export"]
    assert "`{litert,executorch,onnx}`" in export and "| `litert` |" in export     # choices, default
    assert "| `--out` | `OUT` | required |" in export
    assert "%(default)" not in "".join(md.values())                               # help text expanded
    assert "| `--port` | `PORT` | `8000` |" in md["edgedepth serve"]


# ------------------------------------------------------------------------------------------ the built site

class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            if name in ("href", "src") and value:
                self.links.append(value)
            if name == "id" and value:
                self.ids.add(value)


def _built_html(folder: str) -> dict[str, str]:
    out = {}
    for dirpath, _, files in os.walk(folder):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(dirpath, name)
                out[os.path.relpath(path, folder).replace(os.sep, "/")] = open(path, encoding="utf-8").read()
    return out


def test_every_internal_link_and_image_resolves(site):
    folder = site[0]
    pages = _built_html(folder)
    parsed = {}
    for rel, text in pages.items():
        parsed[rel] = p = _Links()
        p.feed(text)
    broken = []
    for rel, p in parsed.items():
        for link in p.links:
            url = urllib.parse.urlsplit(link)
            if url.scheme or url.netloc or link.startswith(("mailto:", "data:", "javascript:")):
                continue
            path = urllib.parse.unquote(url.path)
            if path.startswith("/"):      # root-relative (404.html: the site served at its root)
                target = posixpath.normpath(path.lstrip("/") or ".")
            else:
                target = posixpath.normpath(posixpath.join(posixpath.dirname(rel), path)) if path else rel
            if path.endswith("/") or os.path.isdir(os.path.join(folder, target)):
                target = posixpath.normpath(posixpath.join(target, "index.html"))
            if target.startswith("../") or not os.path.isfile(os.path.join(folder, target)):
                broken.append(f"{rel}: {link} (no {target})")
            elif url.fragment and target in parsed and url.fragment not in parsed[target].ids:
                broken.append(f"{rel}: {link} (no id {url.fragment!r} in {target})")
    assert not broken, "\n".join(broken)
    assert any("screenshot.png" in link for link in parsed["index.html"].links)


# ------------------------------------------------------------------------------------------ the pages' text

ISSUE_REF = re.compile(r"\b(?:issues?|PR|pull request|bug)\s*#?\s*\d+|(?<![\w&/#])#\d+\b", re.IGNORECASE)


def test_no_page_names_an_issue(site):
    hits = [f"{rel}: {m.group(0)!r}" for rel, text in _pages().items() for m in ISSUE_REF.finditer(text)]
    for rel, text in _built_html(site[0]).items():     # generated text too (help strings, docstrings)
        article = re.search(r"<article.*?</article>", text, re.DOTALL)
        plain = re.sub(r"<[^>]+>", " ", article.group(0)) if article else ""
        hits += [f"site/{rel}: {m.group(0)!r}" for m in ISSUE_REF.finditer(plain)]
    assert not hits, "\n".join(hits)


# Options of other tools that the pages' commands use (pip, npm, hf, git).
OTHER_TOOLS = {"--no-deps", "--index-url", "--prefix", "--ignore-scripts", "--local-dir", "--help"}
PLACEHOLDER_MODELS = {"my-finetune", "CHECKPOINT"}


def test_pages_name_only_options_and_models_that_exist():
    from edgedepth.cli import build_parser
    from edgedepth.models import MEMBERS, SYNTHETIC

    parser = build_parser()
    options = {o for opts in _walk(parser).values() for o in opts} | OTHER_TOOLS
    options |= {o for a in parser._actions for o in a.option_strings}        # edgedepth's own: --version
    models = set(MEMBERS) | set(SYNTHETIC) | {s + "-fp16-stress" for s in SYNTHETIC} | PLACEHOLDER_MODELS
    bad = []
    for rel, text in _pages().items():
        # The benchmark pages are generated from the measurement records: the options they quote are the measuring
        # scripts' (benchmarks/*.py), pip's and Chromium's; their models and stand-ins are checked below all the same.
        measured = rel.startswith("benchmarks/")
        bad += [f"{rel}: option {o}" for o in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text)
                if o not in options and not measured]
        bad += [f"{rel}: model {m}" for m in re.findall(r"--model ([\w.-]+)(?=[\s`])", text)
                if m not in models and not m.isupper()]
        bad += [f"{rel}: stand-in {m}" for m in re.findall(r"(?<![\w-])synthetic(?:-[a-z0-9]+)*", text)
                if m != "synthetic" and m not in models]
    assert not bad, "\n".join(bad)


def test_recipe_example_is_a_valid_recipe():
    from edgedepth.release.recipe import from_dict

    text = _pages()["reference/recipe.md"]
    code = re.search(r"```python\n(.*?)```", text, re.DOTALL).group(1)
    namespace: dict = {"__name__": "edgedepth_recipe"}
    exec(compile(code, "recipe.md", "exec"), namespace)
    recipe = from_dict(namespace["RECIPE"])
    assert recipe.formats == ("litert", "executorch", "onnx")


def test_unknown_marker_fails_the_build():
    with pytest.raises(ValueError, match="unknown marker"):
        _hook().expand("text\n<!-- generated: nothing -->\n")


# ------------------------------------------------------------------------------------------ a look at it

SHOTS = {"home": "index.html", "benchmarks": "benchmarks/which-file/index.html"}


def screenshots(folder: str, out_dir: str) -> dict:
    """The built site's home and its "Which file" benchmarks page rendered in headless Debian chromium (served from
    ``folder`` on 127.0.0.1): {name: (png path, the page's <h1>, the nav tab labels)}."""
    import http.server
    import threading
    from functools import partial

    from playwright.sync_api import sync_playwright

    from edgedepth.serve import CHROMIUM, chromium_args

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), partial(Quiet, directory=folder))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    got = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=chromium_args())
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for name, path in SHOTS.items():
                page.goto(f"http://127.0.0.1:{srv.server_port}/{path}", wait_until="load")
                png = os.path.join(out_dir, f"site-{name}.png")
                page.screenshot(path=png)
                got[name] = (png, page.inner_text("article h1"), page.locator(".md-tabs__link").all_inner_texts())
            browser.close()
    finally:
        srv.shutdown()
    return got


def test_home_and_a_benchmarks_page_render(site, tmp_path):
    """The built site renders in Chromium: the Material theme's tabs are there, each page shows its title, and the
    screenshot is a rendered page (many colours), not a blank or unstyled one."""
    if not os.path.exists("/usr/bin/chromium"):
        pytest.fail("Debian chromium is missing (make setup installs it)")
    import numpy as np
    from PIL import Image

    folder, log, rc = site
    assert rc == 0, log[-2000:]
    got = screenshots(folder, str(tmp_path))
    assert got["home"][1].strip() and "Which file" in got["benchmarks"][1], got
    for name, (png, _, tabs) in got.items():
        assert {"Getting started", "Guides", "Reference", "Benchmarks"} <= {t.strip() for t in tabs}, (name, tabs)
        pixels = np.asarray(Image.open(png).convert("RGB"))
        assert pixels.shape[:2] == (900, 1280)
        assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50, f"{name}: the page looks blank"
