"""The pipeline's shape, checked: import layers (import-linter contract in pyproject.toml), one place for formats."""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "src", "edgedepth")


def test_import_layers_contract():
    """No import loop and no upward import (cli -> api/serve -> release -> verify -> formats -> runtimes -> rewrites
    -> fp16 -> checkpoint -> models -> data -> basics), function-level imports included."""
    lint = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    assert os.path.isfile(lint), "import-linter is not installed (requirements.txt pins it; run `make setup`)"
    r = subprocess.run([lint, "--config", os.path.join(ROOT, "pyproject.toml")], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "1 kept, 0 broken" in r.stdout


def test_every_module_is_in_a_layer():
    """A new top-level module or package must be placed in the contract, or it escapes the check."""
    import tomllib

    layers = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))["tool"]["importlinter"]["contracts"][0][
        "layers"]
    named = {m.strip() for layer in layers for m in layer.split("|")}
    present = {f"edgedepth.{n[:-3] if n.endswith('.py') else n}" for n in os.listdir(SRC)
               if (n.endswith(".py") and n != "__init__.py") or os.path.isfile(os.path.join(SRC, n, "__init__.py"))}
    assert present - named == set(), f"modules outside the layer contract: {sorted(present - named)}"


def test_no_file_extension_switch_outside_the_format_registry():
    """Only edgedepth.formats knows file formats: no endswith(".tflite"/".pte") dispatch elsewhere."""
    pattern = re.compile(r"""endswith\(\(?["'](\.tflite|\.pte)""")
    offenders = []
    for dirpath, _, files in os.walk(SRC):
        if os.path.relpath(dirpath, SRC).split(os.sep)[0] == "formats":
            continue
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(dirpath, f)
                for i, line in enumerate(open(path, encoding="utf-8"), 1):
                    if pattern.search(line):
                        offenders.append(f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_no_format_name_switch_outside_the_format_registry():
    """Code outside edgedepth.formats asks a Format's capabilities and methods (dynamic_size, export_backends,
    browser_runtime, has_gpu_check, notice, hub_layout, card_delegation, release_files, ...) instead of comparing with
    its name ("tflite", "pte", "onnx"): issue 29."""
    from edgedepth.formats import FORMATS

    names = "|".join(f.name for f in FORMATS)
    pattern = re.compile(rf"""(==|!=)\s*["']({names})["']|\bin\s*\(\s*["']({names})["']""")
    offenders = []
    for dirpath, _, files in os.walk(SRC):
        if os.path.relpath(dirpath, SRC).split(os.sep)[0] == "formats":
            continue
        for f in files:
            path = os.path.join(dirpath, f)
            if f.endswith(".py"):
                offenders += [f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}"
                              for i, line in enumerate(open(path, encoding="utf-8"), 1) if pattern.search(line)]
    assert not offenders, "\n".join(offenders)


def test_formats_are_packages_listed_once():
    """Adding a format is one package under formats/ plus one entry in formats.FORMATS (issue 29 item 1): every package
    there is listed, named as its Format, implements the whole Format seam (no method left to the base class's
    NotImplementedError), and its recipe section, CLI options and suffix are its own."""
    import inspect

    from edgedepth import formats
    from edgedepth.formats.base import Format

    packages = {n for n in os.listdir(os.path.join(SRC, "formats"))
                if os.path.isfile(os.path.join(SRC, "formats", n, "__init__.py"))}
    assert packages == {f.name for f in formats.FORMATS}
    abstract = [n for n, v in vars(Format).items()
                if inspect.isfunction(v) and "raise NotImplementedError" in inspect.getsource(v)]
    assert abstract, "the seam lost its abstract methods: this test would check nothing"
    for f in formats.FORMATS:
        assert type(f).__module__ == f"edgedepth.formats.{f.name}", type(f)
        missing = [n for n in abstract if getattr(type(f), n) is getattr(Format, n)]
        assert not missing, f"{f.name} does not implement {missing}"
    for attr in ("name", "suffix", "target_name", "title"):
        values = [getattr(f, attr) for f in formats.FORMATS]
        assert all(values) and len(set(values)) == len(values), (attr, values)
    flags = [o.flag for f in formats.FORMATS for o in f.cli_options]
    assert len(flags) == len(set(flags)), flags


def test_model_families_are_packages_listed_once():
    """Adding a family is one package under models/ plus one entry in models.FAMILIES (issue 29 item 4): every
    package there is listed, each family implements the whole ModelFamily seam, member and stand-in names are unique
    over all families, and only models/ imports a family package (others name families by models.DEPTH_ANYTHING_V2
    ...); no code outside models/ compares with a family's name or model_type."""
    import edgedepth.models as models
    from edgedepth.models.base import ModelFamily

    packages = {n for n in os.listdir(os.path.join(SRC, "models"))
                if os.path.isfile(os.path.join(SRC, "models", n, "__init__.py"))}
    assert packages == {type(f).__module__.rsplit(".", 1)[-1] for f in models.FAMILIES}
    assert all(isinstance(f, ModelFamily) and not getattr(type(f), "__abstractmethods__", None) for f in models.FAMILIES)
    assert sum(len(f.members) for f in models.FAMILIES) == len(models.MEMBERS)
    assert sum(len(f.synthetic) for f in models.FAMILIES) == len(models.SYNTHETIC)
    names = "|".join(re.escape(x) for f in models.FAMILIES for x in (f.name, *f.model_types))
    switch = re.compile(rf"""(==|!=)\s*["']({names})["']|\bin\s*\(\s*["']({names})["']""")
    family_import = re.compile(r"(from|import)\s+(edgedepth|\.+)\.?models\.(?!base\b|_)\w+")
    offenders = []
    for dirpath, _, files in os.walk(SRC):
        for f in (f for f in files if f.endswith(".py")):
            path = os.path.join(dirpath, f)
            rel = os.path.relpath(path, SRC)
            for i, line in enumerate(open(path, encoding="utf-8"), 1):
                if rel.startswith("models" + os.sep):
                    continue
                if switch.search(line) or family_import.search(line):
                    offenders.append(f"{rel}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_no_backend_name_switch_outside_runtimes_and_formats():
    """Code outside runtimes/ and formats/ asks a backend's capabilities (``runtimes.BACKENDS[name].gpu``,
    ``.reduced_precision``, ``REFERENCE_BACKEND``) instead of comparing its name or prefix (issue 29 item 3)."""
    from edgedepth.runtimes import BACKENDS

    names = "|".join(re.escape(b) for b in BACKENDS)
    pattern = re.compile(rf"""(==|!=)\s*["']({names})["']|\bin\s*\(\s*["']({names})["']|startswith\(["']gpu""")
    offenders = []
    for dirpath, _, files in os.walk(SRC):
        if os.path.relpath(dirpath, SRC).split(os.sep)[0] in ("runtimes", "formats"):
            continue
        for f in (f for f in files if f.endswith(".py")):
            path = os.path.join(dirpath, f)
            offenders += [f"{os.path.relpath(path, ROOT)}:{i}: {line.strip()}"
                          for i, line in enumerate(open(path, encoding="utf-8"), 1) if pattern.search(line)]
    assert not offenders, "\n".join(offenders)


def test_light_entry_points_do_not_import_torch():
    """The CLI (its --help and every user error), the playground server and the manifest check start without torch
    (~1 s): the model families load torch only when a model is loaded."""
    code = ("import sys, edgedepth.cli, edgedepth.serve, edgedepth.release.manifest, edgedepth.models, edgedepth.formats; "
            "heavy = [m for m in ('torch', 'transformers', 'depth_anything_3') if m in sys.modules]; "
            "assert not heavy, heavy")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]


def test_runtime_registry_is_keyed_by_format_and_backend():
    """Adding a runtime is one module under runtimes/ plus one Runtime line (issue 29 item 3): every entry names a
    registered format, a known backend and an importable runner class; every format runs on at least the reference
    backend, and its backends are the registry's."""
    import importlib

    from edgedepth import formats, runtimes

    names = {f.name for f in formats.FORMATS}
    for (fmt, backend), rt in runtimes.RUNTIMES.items():
        assert fmt in names and backend in runtimes.BACKENDS, (fmt, backend)
        module, cls = rt.runner.split(":")
        assert hasattr(importlib.import_module(f"edgedepth.runtimes.{module}"), cls), rt.runner
    for f in formats.FORMATS:
        assert runtimes.REFERENCE_BACKEND in f.backends and f.backends == runtimes.backends_of(f.name)


def test_benchmarks_do_not_put_src_on_sys_path():
    """Benchmark scripts import edgedepth as installed (``make setup``) or from PYTHONPATH set by their device glue
    (benchmarks/devices/device_env.sh, peers_device.sh): none edits sys.path to reach src/ (issue 29 item 5); every
    subfolder (devices/, report/, lib/) included."""
    bench = os.path.join(ROOT, "benchmarks")
    scripts = sorted(os.path.relpath(os.path.join(d, f), ROOT) for d, _, files in os.walk(bench) for f in files
                     if f.endswith(".py"))
    assert any(s.startswith(os.path.join("benchmarks", "devices", "")) for s in scripts), scripts
    offenders = [f"{s}:{i}: {line.strip()}" for s in scripts
                 for i, line in enumerate(open(os.path.join(ROOT, s), encoding="utf-8"), 1)
                 if re.search(r"sys\.path\.insert|sys\.path\[:0\]|sys\.path\.append", line) and "SITE" not in line]
    assert not offenders, "\n".join(offenders)


MAX_FUNCTION_LINES = 60     # issue 29: orchestrators as numbered steps, one function per section/command


def test_no_long_function_in_src():
    """Every function in src/ fits on a screen (<= MAX_FUNCTION_LINES lines, decorators and docstring included)."""
    import ast

    long = []
    for dirpath, _, files in os.walk(SRC):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                for node in ast.walk(ast.parse(open(path, encoding="utf-8").read())):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        n = node.end_lineno - node.lineno + 1
                        if n > MAX_FUNCTION_LINES:
                            long.append(f"{os.path.relpath(path, SRC)}:{node.lineno} {node.name} ({n} lines)")
    assert not long, "functions over the limit: " + "; ".join(long)


def _check_generated(root: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, os.path.join("benchmarks", "report", "make_benchmarks_md.py"), "--check"],
                          cwd=root, capture_output=True, text=True, timeout=300)


def test_generated_docs_match_the_measurements():
    """BENCHMARKS.md, the benchmark pages of the site (docs/benchmarks/*.md) and the README's measured block are what
    benchmarks/report/make_benchmarks_md.py makes from the JSON in benchmarks/results/ (``--check`` writes nothing),
    and mkdocs.yml's nav lists every page: a result committed without regenerating, or prose edited by hand, fails
    here."""
    r = _check_generated(ROOT)
    assert r.returncode == 0, r.stderr[-2000:]


def test_generated_docs_check_names_a_stale_or_orphan_page(tmp_path):
    """``--check`` names a page edited by hand and a page of docs/benchmarks/ that the generator no longer makes
    (run on a copy of what it reads and writes)."""
    import shutil

    for folder in ("benchmarks/report", "benchmarks/results", "docs/benchmarks", "tests/golden", "recipes"):
        shutil.copytree(os.path.join(ROOT, folder), tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    plots = [os.path.join("docs", n) for n in os.listdir(os.path.join(ROOT, "docs")) if n.endswith(".png")]
    for name in ("BENCHMARKS.md", "README.md", "mkdocs.yml", *plots):      # a section shows its plot where it exists
        shutil.copy(os.path.join(ROOT, name), tmp_path / name)
    assert _check_generated(str(tmp_path)).returncode == 0
    page = tmp_path / "docs" / "benchmarks" / "cpu.md"
    page.write_text(page.read_text() + "edited by hand\n")
    (tmp_path / "docs" / "benchmarks" / "old-topic.md").write_text("# A topic the generator dropped\n")
    r = _check_generated(str(tmp_path))
    assert r.returncode == 1
    assert "docs/benchmarks/cpu.md differs" in r.stderr and "docs/benchmarks/old-topic.md is not a page" in r.stderr
