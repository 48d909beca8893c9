"""edgedepth as a user gets it: ``python -m build`` (sdist, then the wheel from the sdist), installed by pip into a
fresh venv outside the repository (conftest ``installed_wheel``), run from an empty folder outside it.

- the wheel and the sdist carry the recipes, the committed records the recipes read and the playground with exactly
  the browser files it serves (setup.py's bundle list), so nothing needs the repository or npm at run time;
- the metadata: version, summary, Requires-Python, classifiers, and Requires-Dist = the pinned requirements, every
  third-party module edgedepth imports brought by a requirement (core or the extra edgedepth.extras names);
- the newcomer path with the installed console script: ``--version``, ``release`` with the default recipe it carries
  (tiny model; test_release checks those bytes equal the checkout's build), ``verify``, ``predict`` (the recommended
  .tflite and the dynamic ONNX), ``serve`` with Chromium loading the page and running the tiny file;
- a module of an optional stack that is missing: one line naming the extra, exit 2.

Dependencies of the fresh venv are this venv's (same pins, not downloaded again): what a full ``pip install
'edgedepth[all]'`` from the registry resolves to is checked by its own metadata test, not by a download here.
"""

from __future__ import annotations

import ast
import email.parser
import importlib.util
import json
import os
import re
import subprocess
import sys
import tarfile
import time
import zipfile

import pytest
from packaging.specifiers import SpecifierSet

from conftest import OTHER_KERNELS, ROOT, TINY_RELEASE_ARGS, assert_one_line_error

import edgedepth
from edgedepth import extras

PHOTO = os.path.join(ROOT, "tests", "vectors", "rgb_97x61.png")


def _setup_module():
    spec = importlib.util.spec_from_file_location("edgedepth_setup", os.path.join(ROOT, "setup.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)        # __name__ is not __main__: defines the bundle list, runs no setup()
    return mod


def _metadata(wheel) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def _pins(path: str) -> dict[str, str]:
    """{normalised name: 'name==version'} of a requirements file's pins."""
    out = {}
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            name = re.split(r"[=<>!~\[ ]", line)[0]
            out[_norm(name)] = line
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_wheel_and_sdist_carry_the_bundle(installed_wheel):
    expected = _setup_module().bundled_files(ROOT)
    assert "recipes/depth-anything-v2-small.py" in expected and "web/index.html" in expected
    assert any(p.endswith("litert_wasm_internal.wasm") for p in expected)
    assert any(p.startswith("web/node_modules/@huggingface/transformers/node_modules/onnxruntime-web/dist/")
               for p in expected)
    with zipfile.ZipFile(installed_wheel.wheel) as z:
        names = set(z.namelist())
        for rel in expected:     # byte for byte what the checkout has
            assert z.read(f"edgedepth/_bundled/{rel}") == open(os.path.join(ROOT, rel), "rb").read(), rel
    bundled = {n.removeprefix("edgedepth/_bundled/") for n in names if n.startswith("edgedepth/_bundled/")}
    assert bundled == set(expected)
    assert not any(n.endswith(".map") or "/.bin/" in n for n in names)
    with tarfile.open(installed_wheel.sdist) as t:
        top = t.getnames()[0].split("/")[0]
        in_sdist = {n.removeprefix(top + "/") for n in t.getnames()}
    assert set(expected) <= in_sdist and {"setup.py", "pyproject.toml", "LICENSE", "README.md"} <= in_sdist
    # the installed package serves the bundled page and finds the bundled recipe, nowhere else
    code = ("import edgedepth.resources as r, edgedepth.serve as s, edgedepth.release.recipe as c; "
            "print(r.installed(), s.web_dir(), c.default_recipe(), c.recipe_path('depth-anything-3-small'))")
    r = subprocess.run([str(installed_wheel.venv / "bin" / "python"), "-c", code], capture_output=True, text=True,
                       cwd=installed_wheel.home, env=installed_wheel.env(), timeout=120)
    assert r.returncode == 0, r.stderr
    installed, *paths = r.stdout.split()
    assert installed == "True" and all(p.startswith(str(installed_wheel.venv)) for p in paths), paths
    # a recipe by a name it does not carry: one line listing the names it does
    r = installed_wheel.run("release", "--recipe", "depth-anything-v2-smal", "--out", installed_wheel.home / "x")
    assert_one_line_error(r, "no recipe named 'depth-anything-v2-smal'", "depth-anything-3-small, ")
    assert not (installed_wheel.home / "x").exists()


def test_metadata_pins_every_dependency(installed_wheel):
    meta = _metadata(installed_wheel.wheel)
    assert meta["Name"] == "edgedepth" and meta["Version"] == edgedepth.__version__
    assert "LiteRT" in meta["Summary"] and "ONNX" in meta["Summary"] and "ExecuTorch" in meta["Summary"]
    # Requires-Python: the widest range of versions the pinned stack resolved on (benchmarks/python_versions.py)
    rows = json.load(open(os.path.join(ROOT, "benchmarks", "results", "python_versions.json")))["rows"]
    ok = [r["python"] for r in rows if r["resolves"]]
    assert f"{sys.version_info.major}.{sys.version_info.minor}" in ok
    assert SpecifierSet(meta["Requires-Python"]) == SpecifierSet(f">={ok[0]},<3.{int(ok[-1].split('.')[1]) + 1}")
    assert all(r["resolves"] == (r["python"] in ok) for r in rows) and len(ok) == int(ok[-1][2:]) - int(ok[0][2:]) + 1
    classifiers = meta.get_all("Classifier")
    assert {f"Programming Language :: Python :: {v}" for v in ok} <= set(classifiers)
    assert meta["License-Expression"] == "Apache-2.0"
    requires = meta.get_all("Requires-Dist")
    core = {_norm(re.split(r"[=<>!~ ;\[]", r)[0]): r for r in requires if "extra ==" not in r}
    by_extra: dict[str, set[str]] = {}
    for r in requires:
        m = re.search(r'extra == "([^"]+)"', r)
        if m:
            by_extra.setdefault(m.group(1), set()).add(_norm(re.split(r"[=<>!~ ;\[]", r)[0]))
    assert set(by_extra) == set(extras.EXTRAS) | {"all"}
    pins = _pins(os.path.join(ROOT, "requirements.txt"))
    for name, req in core.items():      # every requirement exact, and the same pin as requirements.txt
        assert req.replace(" ", "") == pins[name].replace(" ", ""), (req, pins[name])
    for extra, names in by_extra.items():
        for name in names - {"edgedepth"}:
            assert name in pins, (extra, name)
    # every third-party module edgedepth imports comes with a requirement: core, or the extra extras.py names
    from importlib.metadata import packages_distributions

    dists = packages_distributions()
    src = os.path.join(ROOT, "src", "edgedepth")
    stdlib = set(sys.stdlib_module_names)
    modules = set()
    for d, _, fs in os.walk(src):
        for f in fs:
            if f.endswith(".py"):
                for node in ast.walk(ast.parse(open(os.path.join(d, f)).read())):
                    if isinstance(node, ast.Import):
                        modules.update(a.name.split(".")[0] for a in node.names)
                    elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                        modules.add(node.module.split(".")[0])
    modules -= stdlib | {"edgedepth", "__future__"}
    for mod in sorted(modules):
        owners = {_norm(d) for d in dists.get(mod, [])}
        extra = next((e for e, (mods, _) in extras.EXTRAS.items() if mod in mods), None)
        if extra is None:
            assert owners & set(core), f"{mod} (from {owners}) is imported but not a core requirement"
        else:
            assert owners & (by_extra[extra] | {"depth-anything-3"}), f"{mod}: extra {extra!r} does not bring {owners}"
    # the extras' modules really are what those distributions provide
    for extra, (mods, _) in extras.EXTRAS.items():
        for mod in mods:
            assert {_norm(d) for d in dists.get(mod, [])} & (by_extra[extra] | {"depth-anything-3"}), (extra, mod)


def test_the_newcomer_path_from_the_wheel(installed_wheel, wheel_release, tmp_path):
    """--version, release (done by the wheel_release fixture), verify, predict on the .tflite and on the dynamic
    ONNX, all with the installed console script in a folder outside the repository."""
    w = installed_wheel
    r = w.run("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"edgedepth {edgedepth.__version__}", r
    r = w.run("verify", wheel_release)
    assert r.returncode == 0, r.stdout + r.stderr
    m = json.loads((wheel_release / "manifest.json").read_text())
    cpu = m["recommended"]["cpu"]["path"]
    for model in (wheel_release / cpu, wheel_release / "onnx" / "model.onnx"):
        out = w.home / f"maps_{model.suffix[1:]}"
        r = w.run("predict", PHOTO, "--model", model, "-o", out, "--quiet")
        assert r.returncode == 0, r.stderr
        assert sorted(os.listdir(out)) == ["rgb_97x61_depth.png"], r.stdout


def test_serve_from_the_wheel_runs_the_tiny_file_in_chromium(installed_wheel, wheel_release):
    """The installed ``edgedepth serve`` (page and browser runtimes from the wheel, no npm, no EDGEDEPTH_WEB_DIR):
    Chromium loads the page, verifies and runs the recommended wasm file and asks nothing of any other host."""
    from playwright.sync_api import sync_playwright

    from edgedepth.serve import CHROMIUM, chromium_args, wait_in_page

    proc = subprocess.Popen([str(installed_wheel.venv / "bin" / "edgedepth"), "serve", str(wheel_release),
                             "--port", "0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=installed_wheel.home, env=installed_wheel.env())
    try:
        url, deadline, printed = None, time.monotonic() + 60, []
        while url is None and time.monotonic() < deadline:
            printed.append(proc.stdout.readline())
            assert printed[-1] or proc.poll() is None, f"serve exited: {printed}"
            m = re.search(r"http://127\.0\.0\.1:\d+/", printed[-1])
            url = m.group(0) if m else None
        assert url, "serve printed no address within 60 s"
        requests = []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=chromium_args(webgpu=False))
            try:
                page = browser.new_page()
                page.on("request", lambda q: requests.append(q.url))
                page.goto(f"{url}?backend=wasm")
                wait_in_page(page, "window.edgedepth && edgedepth.state !== 'starting'", 60)
                page.set_input_files("#file", PHOTO)
                wait_in_page(page, "edgedepth.runs > 0 || edgedepth.state === 'error'", 120)
                st = page.evaluate("({state: edgedepth.state, errors: edgedepth.errors, artifact: edgedepth.artifact,"
                                   " backend: edgedepth.backend, runs: edgedepth.runs})")
            finally:
                browser.close()
    finally:
        proc.terminate()
        printed.append(proc.communicate(timeout=30)[0])
    assert "note:" not in "".join(printed), printed    # ONNX Runtime Web and transformers.js came with the wheel too
    assert st["state"] != "error" and not st["errors"] and st["runs"] >= 1 and st["backend"] == "wasm", st
    assert st["artifact"].endswith(".tflite"), st
    assert any("/vendor/@litertjs/core/wasm/" in u for u in requests), requests
    assert all(u.startswith((url, "data:", "blob:")) for u in requests), [u for u in requests if not u.startswith(url)]


@pytest.mark.parametrize("module, model, extra", [
    ("onnxscript", ["export", "--model", "synthetic-tiny", "--size", "28x42", "--target", "onnx"], "onnx"),
    ("executorch", ["export", "--model", "synthetic-tiny", "--size", "28x42", "--target", "executorch"], "executorch"),
    ("depth_anything_3", ["export", "--model", "synthetic-da3-tiny", "--size", "28x28"], "da3"),
    ("ray", ["release", "--model", "synthetic-tiny", "--sizes", "28x42", "--executor", "ray"], "cluster"),
])
def test_a_missing_extra_is_one_line_naming_it(tmp_path, module, model, extra):
    """The optional stack hidden from the interpreter (None in sys.modules: the import fails as if not installed)."""
    code = (f"import sys; sys.modules[{module!r}] = None; from edgedepth.cli import main; "
            f"sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([sys.executable, "-c", code, *model, "--out", str(tmp_path / "out"), "--quiet"],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert_one_line_error(r, f"comes with the {extra!r} extra")
    assert not (tmp_path / "out").exists()
