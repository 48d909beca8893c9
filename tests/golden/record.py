"""Golden SHA-256s of the synthetic releases: record them (only when the bytes are meant to change) and check a build.

    python tests/golden/record.py all             # rebuild both releases (~15-25 min on 2 cores) and record everything
    python tests/golden/record.py full DIR        # DIR from `make demo` (the synthetic full-size release)
    python tests/golden/record.py tiny DIR        # DIR built with tests/test_release.py's ARGS
    python tests/golden/record.py family DIR      # DIR built with FAMILY_ARGS (every member's tiny stand-in, serial)
    python tests/golden/record.py state           # state-dict digests of the synthetic checkpoints, raw and rewritten
    python tests/golden/record.py check DIR [--json PATH]   # compare a synthetic full-size release with its goldens
                                                            # (make demo; --json: the result as data)

Writes tests/golden/release_sha256.json (atomically), keeping the other sections.  Every file of a release is recorded
except ``build-report.json`` (what the building machine measured).  The tests rebuild and compare on whatever machine
runs them (tiny release: every file; full release: the 518x686 and 224x224 presets, all their formats), so a CPU on
which a number comes out differently fails CI, and so does a golden nobody re-recorded.
"""

import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PATH = os.path.join(HERE, "release_sha256.json")
RECIPE = os.path.join(ROOT, "recipes", "depth-anything-v2-small.py")
TINY_ARGS = ["--model", "synthetic-tiny", "--sizes", "28x42", "--parity-images", "2", "--quiet"]
FULL_SECTION, TINY_SECTION = "synthetic release", "synthetic-tiny release"
# every member of both families from its tiny stand-in, LiteRT, one size (tests/test_cluster.py builds it on Ray)
FAMILY_ARGS = ["--family", "depth-anything-v2,depth-anything-3", "--synthetic", "tiny", "--sizes", "28x42",
               "--formats", "litert", "--parity-images", "1", "--no-gpu-check", "--quiet"]
FAMILY_SECTION = "synthetic-tiny family"
UNRECORDED = {"build-report.json"}    # machine-dependent by design (see edgedepth.release.build)


def _sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _cpu():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


def release_files(folder) -> list[str]:
    """Relative paths of every recorded file of a release folder, subfolders included ("onnx/model.onnx")."""
    names = (os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs)
    return sorted(n for n in names if os.path.basename(n) not in UNRECORDED)


def hashes(folder) -> dict:
    return {n: _sha(os.path.join(folder, n)) for n in release_files(folder)}


STATE_DICTS = {"synthetic": None, "synthetic rewritten 518x686": (518, 686),
               "synthetic-tiny": None, "synthetic-tiny rewritten 56x70": (56, 70)}


def state_dicts() -> dict:
    """Digests of the synthetic checkpoints' state dicts, raw and after the default rewrites (no conversion)."""
    from edgedepth.checkpoint import load_checkpoint, state_dict_digest
    from edgedepth.rewrites import apply_rewrites

    out = {}
    for key, size in STATE_DICTS.items():
        model = load_checkpoint(key.split()[0], quiet=True).model
        out[key] = state_dict_digest(apply_rewrites(model, *size)[0] if size else model)
    return out


def compare(folder, golden: dict) -> dict:
    """{"match", "differ", "no_golden", "missing"}: lists of relative paths of ``folder`` against ``golden``."""
    got = hashes(folder)
    return {"match": sorted(n for n in got if golden.get(n) == got[n]),
            "differ": sorted(n for n in got if n in golden and golden[n] != got[n]),
            "no_golden": sorted(n for n in got if n not in golden),
            "missing": sorted(n for n in golden if n not in got)}


def _isa() -> list[str]:
    flags = next((line.split(":", 1)[1].split() for line in open("/proc/cpuinfo") if line.startswith("flags")), [])
    return [f for f in ("avx2", "fma", "avx512f", "avx512_vnni", "amx_tile") if f in flags]


def check(folder, json_path=None) -> int:
    """Print how a synthetic full-size release compares with the goldens (``json_path``: also append the result to
    that JSON history); 0 when every file matches."""
    data = json.load(open(PATH))
    res = compare(folder, data[FULL_SECTION]["sha256"])
    total = len(res["match"]) + len(res["differ"]) + len(res["no_golden"])
    print(f"{len(res['match'])} of {total} files equal their golden SHA-256 (recorded on "
          f"{data[FULL_SECTION].get('recorded_on', '?')}; this machine: {_cpu()})")
    for key, says in (("differ", "DIFFERS from its golden"), ("no_golden", "has no golden"),
                      ("missing", "has a golden but was not built")):
        for n in res[key]:
            print(f"  {n}: {says}")
    ok = bool(total) and len(res["match"]) == total and not res["missing"]
    if json_path:
        _append_run(json_path, {"date": _today(), "cpu": _cpu(), "cpu_isa": _isa(), "files": total,
                                "goldens": f"recorded on {data[FULL_SECTION].get('recorded_on')}",
                                "matching": len(res["match"]), **{k: res[k] for k in ("differ", "no_golden", "missing")}})
    return 0 if ok else 1


def _today() -> str:
    import datetime

    return datetime.date.today().isoformat()


def _append_run(path, run: dict) -> None:
    """Add one check to the JSON history at ``path`` (benchmarks/results/release_golden_check.json keeps them all)."""
    hist = json.load(open(path)) if os.path.isfile(path) else {
        "kind": "edgedepth.golden_check_history",
        "what": "the synthetic full-size release (recipes/depth-anything-v2-small.py --model synthetic, every file but "
                "build-report.json) against tests/golden/release_sha256.json", "runs": []}
    hist["runs"].append(run)
    _write_json(path, hist)


def _write_json(path, data) -> None:
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", dir=os.path.dirname(os.path.abspath(path)))
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _build(out, *args) -> None:
    cmd = [sys.executable, "-m", "edgedepth", "release", "--recipe", RECIPE, "--out", out, *args]
    subprocess.run(cmd, check=True, cwd=ROOT)


def record(kind, folder=None) -> None:
    data = json.load(open(PATH)) if os.path.isfile(PATH) else {}
    if kind == "state":
        data["state_dicts"] = state_dicts()
    elif kind == "tiny":
        data[TINY_SECTION] = {"args": TINY_ARGS, "recorded_on": _cpu(), "sha256": hashes(folder)}
    elif kind == "family":      # {member/path: sha256} of every member folder
        data[FAMILY_SECTION] = {"args": FAMILY_ARGS, "recorded_on": _cpu(), "executor": "serial",
                                "sha256": hashes(folder)}
    elif kind == "full":
        m = json.load(open(os.path.join(folder, "manifest.json")))
        data[FULL_SECTION] = {"recorded_on": _cpu(), "sha256": hashes(folder),
                              "state_dict_sha256": m["provenance"]["checkpoint"]["state_dict_sha256"]}
    else:
        raise SystemExit(f"record.py: unknown section {kind!r} (state, tiny, family, full)")
    _write_json(PATH, data)


def main(argv) -> int:
    if argv[:1] == ["check"] and len(argv) == 4 and argv[2] == "--json":
        return check(argv[1], argv[3])
    if not argv or argv[0] not in ("all", "full", "tiny", "family", "state", "check") or \
            (argv[0] in ("full", "tiny", "family", "check") and len(argv) != 2):
        print(__doc__, file=sys.stderr)
        return 2
    if argv[0] == "check":
        return check(argv[1])
    if argv[0] == "all":
        with tempfile.TemporaryDirectory(prefix="edgedepth-goldens-") as tmp:
            _build(os.path.join(tmp, "tiny"), *TINY_ARGS)
            _build(os.path.join(tmp, "full"), "--model", "synthetic", "--quiet")
            record("tiny", os.path.join(tmp, "tiny"))
            record("full", os.path.join(tmp, "full"))
        record("state")
        return 0
    record(*argv)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
