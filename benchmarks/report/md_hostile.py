"""BENCHMARKS section: what hostile or careless input costs a user, before and after (results/hostile_inputs.json)."""

from __future__ import annotations

import re

from md_common import load

LABELS = {
    "predict_photo_9400x9400": "`predict` a 9400×9400 photo (88 MP)",
    "predict_photo_12000x12000": "`predict` a 12000×12000 photo (144 MP)",
    "predict_photo_12000x12000_cap_raised": "the same photo; after: with `--max-pixels 200000000`",
    "predict_bomb_30000x30000": "`predict` a 30000×30000 PNG bomb",
    "predict_hub_id_no_network": "`predict --model OWNER/NAME` not cached, network accepts but never answers",
    **{f"export_ctrl_c_during_conversion+{d}s": f"Ctrl-C {d} s after `export`'s conversion starts"
       for d in ("0", "0.3", "0.5", "1")},
    "release_into_folder_with_user_file": "`release --out` a folder holding `thesis.txt`",
}


def _cell(r: dict) -> str:
    if r.get("killed_after_cap"):
        return f"still running after {r['seconds']:.0f} s (killed)"
    said = r["said"].replace("|", "\\|")
    said = said if len(said) <= 90 else said[:87] + "…"
    left = r.get("files_in_output") or []
    left = left if len(left) <= 3 else [f"{len(left)} files"]
    if "user_file_kept" in r:
        left = [f"thesis.txt {'kept' if r['user_file_kept'] else '**deleted**'}"] + [n for n in left if n != "thesis.txt"]
    extra = f"; after SIGINT {r['seconds_from_sigint_to_exit']:.1f} s" if "seconds_from_sigint_to_exit" in r else ""
    return (f"exit {r['exit_code']}, {r['seconds']:.1f} s, {r['peak_rss_gb']:.2f} GB{extra}; "
            f"in the folder: {', '.join(left) if left else 'nothing'}"
            + (f"; says “{said}”" if said.startswith("edgedepth") else f"; stderr ends “{said}”" if said else ""))


def section_hostile(L: list[str]) -> None:
    r = load("hostile_inputs.json")
    if not r:
        return
    L += ["## Hostile input: what a careless user costs", "",
          f"`benchmarks/hostile_inputs.py`, one run on {r['cpu']} ({r['date']}), each case as a child process with the "
          f"code of commit {r['before']} (before the first round of fixes) and of this tree (after). Method: {r['method']}"
          + (f" (re-run {', '.join(x['date'] for x in r['re_runs'])}: the Ctrl-C rows)" if r.get("re_runs") else "")
          + ". "
          "Every case is also a test in `tests/bad_input/` (single runs: seconds are orders of magnitude).", "",
          "| case | before | after |", "|---|---|---|"]
    for name, sides in r["cases"].items():
        L.append(f"| {LABELS.get(name, name)} | {_cell(sides['before'])} | {_cell(sides['after'])} |")
    L.append("")


_WORK = re.compile(r"/tmp/edgedepth-hostile-[^/]+/(?:(?:before|after)-[a-z]+-[a-z0-9_]+/)?")


def _item_cell(r: dict) -> str:
    if "skipped" in r:
        return f"not run ({r['skipped']})"
    if r.get("exit_code") is None:          # a case made of several measurements: its outcome says it all
        return r["outcome"].replace("|", "\\|")
    said = _WORK.sub("…/", r.get("said", "")).replace("|", "\\|")     # the run's temp folders say nothing
    said = said if len(said) <= 90 else said[:87] + "…"
    killed = " (killed)" if r.get("killed_after_cap") else ""
    return (f"exit {r['exit_code']}, {r['seconds']:.1f} s{killed}; {r['outcome']}"
            + (f"; says “{said}”" if said.startswith("edgedepth") else ""))


def section_hostile_items(L: list[str]) -> None:
    r = load("hostile_inputs_items.json")
    if not r:
        return
    L += ["## Hostile paths, signals and load: the second round", "",
          f"`benchmarks/hostile_inputs.py --set items`, one run on {r['cpu']} ({r['date']}"
          f"{', as root' if r.get('root') else ''}), each case with the code of commit {r['before']} (before) and of "
          f"this tree (after). Method: {r['method']}. Every case is also a test in `tests/bad_input/`.", "",
          "| # | case | before | after |", "|---|---|---|---|"]
    for sides in r["cases"].values():
        L.append(f"| {sides['item']} | {sides['what']} | {_item_cell(sides['before'])} | {_item_cell(sides['after'])} |")
    L.append("")
