"""MkDocs hook: the documentation's reference parts, generated from the code at build time.

A page holds a marker line ``<!-- generated: NAME -->``; :func:`on_page_markdown` replaces it with the Markdown that
``GENERATORS[NAME]`` makes from edgedepth itself, so the site cannot drift from the code:

- ``cli``: every sub-command of ``edgedepth`` (:func:`edgedepth.cli.build_parser`), every option, its help, choices
  and default (:func:`cli_markdown`);
- ``models``: the model families, their members and synthetic stand-ins (:data:`edgedepth.models.FAMILIES`);
- ``formats``: file formats, their precisions and backends (:data:`edgedepth.formats.FORMATS`);
- ``rewrites``: the rewrite pipeline's order, defaults, families and requirements (:data:`edgedepth.rewrites.PIPELINE`);
- ``limits``: input sizes, the pixel cap and the parity gate's bounds (``edgedepth.preprocess``, ``release.gate``);
- ``manifest``: manifest.json's fixed parts (``edgedepth.release.manifest``, ``release.hub``);
- ``recipes``: the recipes edgedepth carries (``recipes/``).

An unknown marker fails the build.  Registered under ``hooks:`` in mkdocs.yml; the tests import this file and call
the generators directly.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import re

MARKER = re.compile(r"^<!-- generated: ([a-z]+) -->[ \t]*$", re.MULTILINE)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# ---------------------------------------------------------------------------------------------------- Markdown bits

def _escape(text: str) -> str:
    """``text`` for a Markdown table cell: code spans kept as they are (Python-Markdown's tables leave a pipe inside
    one alone), HTML, emphasis characters and pipes escaped outside them."""
    parts = re.split(r"(`[^`]*`)", " ".join(str(text).split()))
    return "".join(part if i % 2 else (part.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
                                       .replace("*", r"\*").replace("_", r"\_").replace("[", r"\[")
                                       .replace("|", r"\|"))
                   for i, part in enumerate(parts))


def _code(text) -> str:
    """``text`` as an inline code span (for a table cell too)."""
    text = str(text)
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell or "" for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------------------- the CLI

def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command words, parser, help) of every command below ``parser``, depth first, in the parser's order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield path + (name,), sub, helps.get(name)
                yield from _commands(sub, path + (name,))


def _is_shown(action: argparse.Action) -> bool:
    """Options and arguments the reference lists: all but -h/--help (every command has it) and sub-command slots."""
    return not isinstance(action, (argparse._HelpAction, argparse._SubParsersAction))


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The action's help as ``--help`` prints it (``%(default)s`` and the like expanded)."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    params = {k: v for k, v in vars(action).items() if v is not argparse.SUPPRESS}
    params["prog"] = parser.prog
    if params.get("choices") is not None:
        params["choices"] = ", ".join(map(str, params["choices"]))
    return action.help % params


def _value(action: argparse.Action) -> str:
    """What the option takes: its metavar, its choices, or nothing (a flag)."""
    if action.nargs == 0:
        return ""
    if action.metavar:
        word = action.metavar
    elif action.choices:
        word = "{" + ",".join(map(str, action.choices)) + "}"
    else:
        word = action.dest.upper() if action.option_strings else action.dest
    return {"?": f"[{word}]", "*": f"[{word} ...]", "+": f"{word} [{word} ...]"}.get(action.nargs, word)


def _default(action: argparse.Action) -> str:
    if not action.option_strings:          # a positional: required unless it may be left out
        return "" if action.nargs in ("?", "*") else "required"
    if action.required:
        return "required"
    if action.default is None or action.default == argparse.SUPPRESS:
        return ""
    if action.nargs == 0:
        return "off" if action.default is False else _code(action.default)
    return _code(action.default)


SYNOPSIS_WIDTH = 80      # what a Material content column shows without scrolling


def _synopsis(words: tuple[str, ...], parser: argparse.ArgumentParser) -> str:
    """``edgedepth CMD ARG... [--option VALUE] ...`` (positionals first, then options in the parser's order), wrapped
    at ``SYNOPSIS_WIDTH`` with continuation lines indented under the first argument."""
    shown = [a for a in parser._actions if _is_shown(a)]
    parts = [_value(a) for a in shown if not a.option_strings]
    for a in shown:
        if a.option_strings:
            flag = " ".join(x for x in (a.option_strings[-1], _value(a)) if x)
            parts.append(flag if a.required else f"[{flag}]")
    head = " ".join(("edgedepth", *words))
    lines, line = [], head
    for part in parts:
        if len(line) + 1 + len(part) > SYNOPSIS_WIDTH and line.strip() != head:
            lines.append(line)
            line = " " * len(head)
        line += " " + part
    return "\n".join(lines + [line])


REPEATS = {"?": "optional", "*": "any number", "+": "one or more"}    # a positional's nargs, in words


def _option_rows(parser: argparse.ArgumentParser, actions) -> list[list[str]]:
    """Table rows: option strings (a positional: its name), what it takes, default, help."""
    rows = []
    for a in actions:
        if a.option_strings:
            name, takes = ", ".join(_code(s) for s in a.option_strings), _code(_value(a)) if _value(a) else ""
        else:
            name, takes = _code(a.metavar or a.dest), REPEATS.get(a.nargs, "")
        rows.append([name, takes, _default(a), _escape(_help(parser, a))])
    return rows


def _command_markdown(words: tuple[str, ...], parser: argparse.ArgumentParser, help_text: str | None) -> str:
    out = [f"## `edgedepth {' '.join(words)}`", ""]
    text = parser.description or help_text        # the description, where a command has one, says more
    if text:
        out += [_escape(text[0].upper() + text[1:]).rstrip(".") + ".", ""]
    if any(isinstance(a, argparse._SubParsersAction) for a in parser._actions):
        return "\n".join(out + ["Sub-commands: see below.", ""])
    out += ["```text", _synopsis(words, parser), "```", ""]
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if _is_shown(a)]
        if not actions:
            continue
        title = {"positional arguments": "Arguments", "options": "Options"}.get(group.title, group.title)
        first = "Argument" if group.title == "positional arguments" else "Option"
        out += [f"**{title[0].upper() + title[1:]}**", "",
                _table([first, "Value", "Default", "Description"], _option_rows(parser, actions)), ""]
    return "\n".join(out)


def cli_parser() -> argparse.ArgumentParser:
    """The real ``edgedepth`` parser, as the command line builds it."""
    from edgedepth.cli import build_parser

    return build_parser()


def cli_markdown(parser: argparse.ArgumentParser | None = None) -> str:
    """Markdown for every command of ``parser`` (default: :func:`cli_parser`): per command a ``## `edgedepth CMD```
    heading, its help, a synopsis and a table of its arguments and options (help text, choices, default)."""
    parser = parser or cli_parser()
    top = [a for a in parser._actions if _is_shown(a)]
    out = ["Every command also takes `-h` / `--help`. Options of `edgedepth` itself:", "",
           _table(["Option", "Value", "Default", "Description"], _option_rows(parser, top)), ""]
    for words, sub, help_text in _commands(parser):
        out.append(_command_markdown(words, sub, help_text))
    return "\n".join(out)


# ------------------------------------------------------------------------------------ models, formats and rewrites

def models_markdown() -> str:
    """Per family: its members (the ``--model`` short names) and the synthetic stand-ins of each."""
    from edgedepth.models import FAMILIES

    out = []
    for family in FAMILIES:
        stand_ins: dict[str, list[str]] = {}
        for name, (member, _) in family.synthetic.items():
            stand_ins.setdefault(member, []).append(_code(name))
        rows = [[_code(name), _code(m.hub_id), _escape(m.license), _escape(m.output_semantics),
                 ", ".join(stand_ins.get(name, []))] for name, m in family.members.items()]
        out += [f"**{family.card_title}**", "",
                _table(["`--model`", "Hub checkpoint", "Licence", "Output", "Synthetic stand-ins"], rows), ""]
    return "\n".join(out)


def formats_markdown() -> str:
    """One row per file format: its ``--target``, suffix, precisions (default ones), and ``--backend`` values."""
    from edgedepth import formats

    rows = [[_escape(f.title), _code(f.target_name), _code(f.suffix), ", ".join(_code(p) for p in f.precisions),
             ", ".join(_code(p) for p in f.default_precisions), ", ".join(_code(b) for b in f.backends)]
            for f in formats.FORMATS]
    return _table(["Format", "`--target`", "File", "Precisions", "Default precisions", "`--backend`"], rows)


def backends_markdown() -> str:
    from edgedepth import formats
    from edgedepth.runtimes import BACKENDS

    return _table(["`--backend`", "What runs the file"],
                  [[_code(b.name), _escape(b.help)] for b in BACKENDS.values() if b.name in formats.BACKENDS])


def rewrites_markdown() -> str:
    """The pipeline in the order it runs: on by default or not, which families, which rewrites must run first."""
    from edgedepth.models import FAMILIES
    from edgedepth.rewrites import PIPELINE

    titles = {f.name: f.card_title for f in FAMILIES}
    rows = [[str(i), _code(r.name), "yes" if r.default else "no", ", ".join(titles.get(f, f) for f in r.families),
             ", ".join(_code(q) for q in r.requires)] for i, r in enumerate(PIPELINE, 1)]
    return _table(["#", "Rewrite", "On by default", "Model families", "Needs first"], rows)


# ------------------------------------------------------------------------------------------- constants and schemas

def _test_constant(name: str):
    """A module-level constant of tests/conftest.py, read without importing the tests."""
    tree = ast.parse(open(os.path.join(ROOT, "tests", "conftest.py"), encoding="utf-8").read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in node.targets):
            return ast.literal_eval(node.value)
    raise LookupError(f"tests/conftest.py defines no {name}")


def limits_markdown() -> str:
    from edgedepth import preprocess
    from edgedepth.release import gate

    h, w = preprocess.DEFAULT_SIZE
    rows = [
        ["Default input size (`--size`)", _code(f"{h}x{w}"), "`edgedepth.preprocess.DEFAULT_SIZE`"],
        ["Sizes must be multiples of", _code(preprocess.PATCH), "`edgedepth.preprocess.PATCH` (the ViT patch)"],
        ["Largest side of `--size`", _code(preprocess.MAX_SIDE), "`edgedepth.preprocess.MAX_SIDE`"],
        ["Largest photo (`--max-pixels` default)", _code(preprocess.MAX_PIXELS), "`edgedepth.preprocess.MAX_PIXELS`"],
        ["Release gate, FP32 files: pooled rel-L2 at most this × PyTorch FP32's own",
         _code(f"{gate.FP32_GATE_FACTOR:g}"), "`edgedepth.release.gate.FP32_GATE_FACTOR`"],
        ["Release gate, quantised files: pooled rel-L2 at most", _code(f"{gate.INT8_GATE_REL_L2:g}"),
         "`edgedepth.release.gate.INT8_GATE_REL_L2`"],
        ["Tests: error at most this × PyTorch FP32's own (same run)", _code(f"{_test_constant('FP32_NOISE_FACTOR'):g}"),
         "`FP32_NOISE_FACTOR` in `tests/conftest.py`"],
    ]
    return _table(["What", "Value", "Defined in"], rows)


def manifest_markdown() -> str:
    """manifest.json's fixed values: schema version, file names, the input normalisation blocks, housekeeping."""
    from edgedepth.release import hub
    from edgedepth.release import manifest as mf

    def block(title: str, value: dict) -> list[str]:
        """``value`` as JSON, one key a line (each value on its key's line)."""
        lines = [f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in value.items()]
        return [f"**{title}**", "", "```json", "{\n" + ",\n".join(lines) + "\n}", "```", ""]

    rows = [["`schema_version`", _code(mf.SCHEMA_VERSION)], ["Manifest file", _code(mf.MANIFEST)],
            ["Build report (not listed)", _code(mf.BUILD_REPORT)],
            ["Git attributes (listed)", _code(hub.GITATTRIBUTES)],
            ["Default output semantics", _escape(mf.OUTPUT_SEMANTICS)]]
    out = [_table(["What", "Value"], rows), ""]
    out += block("`input.normalisation` of a float32-input file", mf.INPUT_NORMALISATION)
    out += block("`input.normalisation` of a uint8-input file (`*_u8in`)", mf.PIXEL_INPUT)
    out += block("What a Hub copy may add and still verify (`edgedepth.release.hub.HOUSEKEEPING`)",
                 {k: list(v) if isinstance(v, tuple) else v for k, v in hub.HOUSEKEEPING.items()})
    return "\n".join(out)


def recipes_markdown() -> str:
    """The recipes edgedepth carries (``recipes/NAME.py``, what ``release --recipe NAME`` finds), with the member each
    builds."""
    from edgedepth import resources

    folder = resources.path("recipes")
    names = sorted(n[:-3] for n in os.listdir(folder) if n.endswith(".py") and not n.startswith("_"))
    rows = []
    for name in names:
        doc = ast.get_docstring(ast.parse(open(os.path.join(folder, name + ".py"), encoding="utf-8").read())) or ""
        what = re.match(r"Release recipe for ([^(:]+)", doc)
        rows.append([_code(name), _escape(what.group(1).strip()) if what else ""])
    return _table(["`--recipe`", "Builds"], rows)


GENERATORS = {
    "cli": cli_markdown,
    "models": models_markdown,
    "formats": formats_markdown,
    "backends": backends_markdown,
    "rewrites": rewrites_markdown,
    "limits": limits_markdown,
    "manifest": manifest_markdown,
    "recipes": recipes_markdown,
}


@functools.lru_cache(maxsize=None)
def generated(name: str) -> str:
    return GENERATORS[name]().rstrip("\n")


def expand(markdown: str, where: str = "page") -> str:
    """``markdown`` with every marker line replaced by its generated Markdown (unknown marker: ValueError)."""
    def sub(m: re.Match) -> str:
        if m.group(1) not in GENERATORS:
            raise ValueError(f"{where}: unknown marker <!-- generated: {m.group(1)} --> "
                             f"(known: {', '.join(GENERATORS)})")
        return generated(m.group(1))

    return MARKER.sub(sub, markdown)


def on_page_markdown(markdown: str, *, page, config, files) -> str:
    from mkdocs.exceptions import PluginError

    try:
        return expand(markdown, page.file.src_uri)
    except ValueError as e:
        raise PluginError(str(e)) from None
