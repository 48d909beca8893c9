"""Which build of the shipped files each committed report measured, and which of several measurements of one number a
reader is shown.

The shipped files are the synthetic V2 Small release's, by their golden SHA-256s (tests/golden/release_sha256.json).
A report *measured* a shipped file where it names that file (a ``file`` / ``name`` / ``path`` field, or the key of the
object holding its SHA-256) next to a SHA-256 or an op count:

- ``current``: every shipped file it names is the shipped build (same SHA-256; or, where it kept no SHA-256, the
  shipped op count);
- ``earlier``: it names a shipped file with another SHA-256 or op count -- an earlier build (another graph where the op
  count differs from the shipped one's, else other weights): its numbers are history, and every page section and
  headline row made from it says so (:func:`banner`, :func:`marker`);
- ``none``: it names no shipped file (other members, tiny stand-ins, peers' files, GPU twins named by what they stand
  for are counted by that name).

Several records of one number (the same shipped file, machine and backend: ``edgedepth.verify.records``) are shown by
one rule, the release's own: the newest dated record (``records.newest_latency``); the others are listed as history
on the Benchmarks "Where the numbers come from" page (:func:`ledger_page`).
"""

from __future__ import annotations

import glob
import json
import os
import re

from md_common import R


def load(name: str):
    """benchmarks/results/NAME as a dict, or None; unlike ``md_common.load`` not counted as a report a page section
    was made from (this module reads every report to judge one)."""
    p = os.path.join(R, name)
    if not os.path.isfile(p):
        return None
    with open(p, encoding="utf-8") as f:
        return json.load(f)

GOLDEN = "tests/golden/release_sha256.json"
SHIPPED_SECTION = "synthetic release"
_SHA = re.compile(r"[0-9a-f]{64}")
_NAME_FIELDS = ("file", "name", "path")
# reports that measured a shipped file without naming it: kind -> its (file name, sha256 or None, ops or None)
_UNNAMED = {
    "edgedepth.rewrite_ablation": lambda d: [("depth_anything_v2_small_518x686_fp32.tflite",
                                              d["steps"][-1].get("sha256"), d["steps"][-1].get("ops"))],
}


def shipped() -> dict[str, str]:
    """{file name: golden SHA-256} of the shipped (synthetic V2 Small) release."""
    with open(GOLDEN, encoding="utf-8") as f:
        return json.load(f)[SHIPPED_SECTION]["sha256"]


def _named(report, key: str = "") -> list[tuple[str, str | None, int | None]]:
    """(file name, sha256 or None, ops or None) of every object of ``report`` that names a file and says which build
    (a SHA-256 or an op count)."""
    out = []
    if isinstance(report, dict):
        sha = report.get("sha256") if isinstance(report.get("sha256"), str) and _SHA.fullmatch(report["sha256"]) \
            else None
        ops = report.get("ops") if isinstance(report.get("ops"), int) else None
        name = next((report[f] for f in _NAME_FIELDS if isinstance(report.get(f), str)), None) or key
        if sha or ops:
            out.append((os.path.basename(name.split(" ")[0]), sha, ops))
        for k, v in report.items():
            out += _named(v, k)
    elif isinstance(report, list):
        for v in report:
            out += _named(v, key)
    return out


def shipped_ops() -> dict[str, int]:
    """{shipped file name: op count} from the committed reports that measured the shipped build with its op count."""
    golden, out = shipped(), {}
    for path in sorted(glob.glob(os.path.join(R, "*.json"))):
        for name, sha, ops in _named(load(os.path.basename(path))):
            if ops and sha and golden.get(name) == sha:
                out.setdefault(name, ops)
    return out


def graph_of(report: dict, golden: dict[str, str] | None = None, ops: dict[str, int] | None = None) -> dict:
    """{"status": "current" | "earlier" | "none", "files": {name: what was measured}} of ``report`` (see the module
    docstring); ``golden`` / ``ops``: the shipped files' SHA-256s and op counts (default: the committed ones)."""
    golden = shipped() if golden is None else golden
    ops = shipped_ops() if ops is None else ops
    seen = _named(report) + [t for t in _UNNAMED.get(report.get("kind"), lambda d: [])(report)]
    files, earlier = {}, False
    for name, sha, n in seen:
        if name not in golden:
            continue
        if sha == golden[name] or (sha is None and n is not None and n == ops.get(name)):
            files.setdefault(name, "shipped build")
            continue
        earlier = True
        if n is not None and ops.get(name) and n != ops[name]:
            files[name] = f"an earlier graph ({n} ops; the shipped file has {ops[name]})"
        else:
            files[name] = "an earlier build (other weights or rewrites, same op count)" if n else "an earlier build"
    return {"status": "earlier" if earlier else "current" if files else "none", "files": files}


def _listed(files: dict[str, str], most: int = 3) -> str:
    """The files of ``files`` not measured as shipped, with what was measured: the first ``most``, then how many
    more."""
    old = [f"`{f}`: {w}" for f, w in sorted(files.items()) if w != "shipped build"]
    return "; ".join(old[:most]) + (f"; and {len(old) - most} more shipped file names" if len(old) > most else "")


def _date(report: dict) -> str | None:
    return report.get("date") or (report.get("environment") or {}).get("date")


def banner(names, golden=None, ops=None) -> str | None:
    """The line a page section opens with when one of the reports ``names`` it was made from measured an earlier build
    of a shipped file (None when none did)."""
    notes = []
    for n in sorted(set(names)):
        rep = load(n)
        if not isinstance(rep, dict):
            continue
        g = graph_of(rep, golden, ops)
        if g["status"] == "earlier":
            what = _listed(g["files"])
            notes.append(f"`{n}` ({_date(rep) or 'undated'}) measured {what}")
    if not notes:
        return None
    return ("> **History, not the shipped files:** " + "; ".join(notes)
            + ". The shipped files' own numbers: [Where the numbers come from](docs/benchmarks/sources.md).")


def marker(name: str, golden=None, ops=None) -> str:
    """A headline cell's note for the report ``name``: its date, and "earlier build" where it measured one."""
    rep = load(name) or {}
    g = graph_of(rep, golden, ops)
    date = _date(rep) or "undated"
    if g["status"] != "earlier":
        return date
    graphs = {w for w in g["files"].values() if w.startswith("an earlier graph")}
    return f"{date}, earlier build ({'older graph' if graphs else 'other weights'})"


RECIPE = "recipes/depth-anything-v2-small.py"


def record_paths() -> list[str]:
    """Every committed report with records, in the order the rule reads them: those the shipped recipe does not list
    first, then the recipe's ``latency_data`` in its order (on one date the later path wins: the card's choice)."""
    from edgedepth.release import load_recipe

    own = [os.path.relpath(p) for p in load_recipe(RECIPE).latency_data]
    every = sorted(p for p in glob.glob(os.path.join(R, "*.json")) if "records" in (load(os.path.basename(p)) or {}))
    return [p for p in every if p not in own] + own


def ledger(paths=None) -> tuple[dict, dict]:
    """(shown, history) latency rows of the shipped files, by file name: the release's rule over every committed
    record (``records.newest_latency``), restricted to the shipped SHA-256s."""
    from edgedepth.verify import records

    paths = paths or record_paths()
    by_sha = {sha: name for name, sha in shipped().items()}
    kept, left = records.newest_latency(paths)
    return ({by_sha[s]: rows for s, rows in kept.items() if s in by_sha},
            {by_sha[s]: rows for s, rows in left.items() if s in by_sha})


def _machine(r: dict) -> str:
    if r.get("gpu_adapter"):
        return r["gpu_adapter"].split(" (")[0].split(",")[0]
    return f"{r.get('cpu') or 'CPU'}, {r['threads']} threads" if r.get("threads") else (r.get("cpu") or "CPU")


def ledger_page() -> str:
    """docs/benchmarks/sources.md: per shipped file, the number shown for each machine and backend (newest record)
    with its history, then every committed report: its date, machine and whether it measured the shipped build."""
    shown, history = ledger()
    L = ["# Where the numbers come from", "",
         "Every number on these pages comes from a JSON report in `benchmarks/results/` with its date and machine. "
         "Where several reports timed the same shipped file on the same machine and backend, the newest is the one "
         "shown (the model card and `manifest.json` use the same rule); the others are listed as history. A report "
         "that measured an earlier build of a shipped file (an older graph or other weights) is history wherever it "
         "is quoted: its sections open with a note saying so.", "",
         "## The shipped files' latencies", "",
         "| file | backend | machine | median | date | source | history (same file, machine, backend) |",
         "|---|---|---|---|---|---|---|"]
    for name in sorted(shown):
        for r in shown[name]:
            old = [h for h in history.get(name, []) if h["backend"] == r["backend"]
                   and h["machine"].split(" (")[0].split(",")[0] == _machine(r)]
            past = "; ".join(f"{h['median_ms']:g} ms ({h['date'] or 'undated'}, `{h['source']}`)" for h in old)
            L.append(f"| `{name}` | {r['backend']}{' (timing twin)' if r.get('timing_twin') else ''} | "
                     f"{_machine(r)} | {r['median_ms']:g} ms | {r['date']} | `{r['source']}` | {past or '–'} |")
    golden, ops = shipped(), shipped_ops()
    L += ["", "## Every report", "",
          "| report | date | machine | measured the shipped build? |", "|---|---|---|---|"]
    for path in sorted(glob.glob(os.path.join(R, "*.json"))):
        n = os.path.basename(path)
        rep = load(n)
        if not isinstance(rep, dict):
            continue
        g = graph_of(rep, golden, ops)
        env = rep.get("environment") or {}
        machine = env.get("gpu") or rep.get("device") or rep.get("cpu") or env.get("cpu") or "–"
        what = {"current": "yes", "none": "no shipped file measured",
                "earlier": "**no**: " + _listed(g["files"])}[g["status"]]
        L.append(f"| `{n}` | {_date(rep) or 'undated'} | {str(machine).split(',')[0]} | {what} |")
    return "\n".join(L) + "\n"
