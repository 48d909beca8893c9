"""One number per fact: which build of the shipped files each committed report measured (benchmarks/report/facts.py),
the note every page section and headline row made from an earlier build carries, and the one rule that picks the
number shown where several reports timed the same file on the same machine and backend."""

import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks", "report"))

import facts  # noqa: E402
import md_common  # noqa: E402

A, B = "a" * 64, "b" * 64
GOLDEN = {"m_518x686_fp32.tflite": A, "m_518x686_int8.tflite": B}
OPS = {"m_518x686_fp32.tflite": 457}


@pytest.mark.parametrize("report, status, what", [
    ({"rows": {"x": {"file": "m_518x686_fp32.tflite", "sha256": A, "ops": 457}}}, "current", "shipped build"),
    ({"variants": {"m_518x686_fp32.tflite": {"sha256": A}}}, "current", "shipped build"),       # named by its key
    ({"rows": {"x": {"file": "m_518x686_fp32.tflite", "sha256": "c" * 64, "ops": 397}}}, "earlier",
     "an earlier graph (397 ops; the shipped file has 457)"),
    ({"variants": {"fp32": {"file": "m_518x686_fp32.tflite", "ops": 397}}}, "earlier", "an earlier graph"),
    ({"variants": {"fp32": {"file": "m_518x686_fp32.tflite", "ops": 457}}}, "current", "shipped build"),
    ({"rows": {"x": {"file": "m_518x686_fp32.tflite", "sha256": "c" * 64}}}, "earlier", "an earlier build"),
    ({"files": {"twin": {"sha256": "d" * 64, "stands_for": {"file": "m_518x686_int8.tflite", "sha256": B}}}},
     "current", "shipped build"),                                      # a GPU timing twin counts as what it stands for
    ({"rows": {"x": {"file": "other_fp32.tflite", "sha256": "c" * 64, "ops": 1}}}, "none", None),
])
def test_graph_of_a_report(report, status, what):
    g = facts.graph_of(report, GOLDEN, OPS)
    assert g["status"] == status
    if what:
        assert any(w.startswith(what) for w in g["files"].values()), g


@pytest.fixture
def results(tmp_path, monkeypatch):
    """A results folder of two reports (one of the shipped build, one of an earlier graph) and its golden file."""
    folder = tmp_path / "results"
    folder.mkdir()
    (folder / "new.json").write_text(json.dumps(
        {"date": "2026-12-05", "rows": {"x": {"file": "m_518x686_fp32.tflite", "sha256": A, "ops": 457}}}))
    (folder / "old.json").write_text(json.dumps(
        {"date": "2026-12-02", "rows": {"x": {"file": "m_518x686_fp32.tflite", "sha256": "c" * 64, "ops": 397}}}))
    golden = tmp_path / "golden.json"
    golden.write_text(json.dumps({facts.SHIPPED_SECTION: {"sha256": GOLDEN}}))
    for module in (facts, md_common):
        monkeypatch.setattr(module, "R", str(folder))
    monkeypatch.setattr(facts, "GOLDEN", str(golden))
    return folder


def test_a_section_from_an_earlier_build_opens_with_a_note_and_a_headline_cell_says_so(results):
    from pages import Topic

    def old_section(L):
        md_common.load("old.json")
        L += ["## Old numbers", "", "| a | b |"]

    def new_section(L):
        md_common.load("new.json")
        L += ["## New numbers", "", "| a | b |"]

    def marked_section(L):          # a row marked by facts.marker: judging it reads every report, counted as none
        md_common.load("new.json")
        L += ["## Marked", "", f"| {facts.marker('old.json')} |"]

    body = Topic("t", "T", lambda: [], (old_section, new_section, marked_section)).body()
    notes = [i for i, line in enumerate(body) if line.startswith("> **History, not the shipped files:**")]
    assert len(notes) == 1 and body.index("## Old numbers") < notes[0] < body.index("## New numbers")
    assert "397 ops; the shipped file has 457" in body[notes[0]] and "old.json` (2026-12-02)" in body[notes[0]]
    assert facts.marker("old.json") == "2026-12-02, earlier build (older graph)"
    assert facts.marker("new.json") == "2026-12-05"


def test_the_committed_pages_mark_every_section_made_from_an_earlier_build():
    """The headline's CPU rows come from runs of an earlier graph: the which-file page says so, and so does the
    README's table, row by row."""
    peers = [n for n in os.listdir(os.path.join(ROOT, "benchmarks", "results")) if n.startswith("peers_cpu_")]
    earlier = [n for n in peers if facts.graph_of(md_common.load(n))["status"] == "earlier"]
    page = open(os.path.join(ROOT, "docs", "benchmarks", "which-file.md"), encoding="utf-8").read()
    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    for n in earlier:
        assert f"`{n}` (" in page.split("> **History, not the shipped files:**", 1)[-1]
    cpu_rows = [line for line in readme.splitlines() if line.startswith("| x86 CPU:")]
    assert cpu_rows and all(("earlier build" in line) == bool(earlier) for line in cpu_rows)


def test_the_numbers_page_shows_what_the_model_card_shows():
    """The ledger's shown row for each shipped file, machine and backend is the one the release's manifest embeds
    (the same rule over the same records: the newest, the recipe's later path on one date)."""
    from edgedepth.release import load_recipe
    from edgedepth.verify import records

    shown, _ = facts.ledger()
    kept, _ = records.newest_latency(load_recipe(os.path.join(ROOT, facts.RECIPE)).latency_data)
    by_name = {v: k for k, v in facts.shipped().items()}
    card = {(by_name[s], r["backend"], records.machine(r)): (r["median_ms"], r["source"], r["date"])
            for s, rows in kept.items() if s in by_name for r in rows}
    ours = {(n, r["backend"], records.machine(r)): (r["median_ms"], r["source"], r["date"])
            for n, rows in shown.items() for r in rows}
    assert card and {k: ours[k] for k in card} == card
