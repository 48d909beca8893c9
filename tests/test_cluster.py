"""Release builds as Ray tasks on a real two-node cluster here (tests/ray_scenario.py, in its own network, PID and
mount namespaces: loopback only, and every process it starts dies with it).

One run (~6 minutes on 2 cores) checks: the tiny family built on two single-CPU nodes, with a worker killed mid-job,
equals the serial build byte for byte (its goldens, tests/golden/release_sha256.json "synthetic-tiny family"); a
re-run with the same cache builds nothing and gives the same bytes; a job that fails on every attempt fails the build
once with one line; SIGTERM during a build on a Ray instance the build started exits 143 and leaves no Ray process,
no release folder and no work folder.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
from record import FAMILY_SECTION, PATH as GOLDEN_PATH, compare  # noqa: E402


def _host_ray_pids() -> set[int]:
    out = subprocess.run(["pgrep", "-f", "raylet|gcs_server|ray::"], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.fail("the cluster test needs root and unshare (network namespaces keep Ray on loopback)")
    work = str(tmp_path_factory.mktemp("ray"))
    before = _host_ray_pids()
    r = subprocess.run(["unshare", "--net", "--pid", "--mount-proc", "--kill-child", sys.executable,
                        os.path.join(HERE, "ray_scenario.py"), work], capture_output=True, text=True, timeout=1800)
    left = _host_ray_pids() - before
    for _ in range(60):         # the namespace's processes are killed as its first process exits: give them time
        if not left:
            break
        time.sleep(0.5)
        left = _host_ray_pids() - before
    assert r.returncode == 0, r.stderr[-3000:]
    with open(os.path.join(work, "results.json")) as f:
        return work, json.load(f), left


def _golden() -> dict:
    with open(GOLDEN_PATH) as f:
        return json.load(f)[FAMILY_SECTION]["sha256"]


def _summary(path: str) -> list[dict]:
    with open(path) as f:
        s = json.load(f)
    assert s["executor"]["executor"] == "ray" and s["executor"]["nodes"] == 2, s["executor"]
    return [j for r in s["releases"] for j in r["jobs"]]


def test_ray_family_equals_serial_with_a_worker_killed(scenario):
    work, res, _ = scenario
    cold = res["cold"]
    assert cold["rc"] == 0, cold["stderr"]
    assert cold["killed"], "no job was seen running to kill"
    got = compare(os.path.join(work, "cold"), _golden())
    assert got["differ"] == got["missing"] == got["no_golden"] == [] and got["match"], got
    jobs = _summary(os.path.join(work, "cold.json"))
    assert not any(j["cached"] for j in jobs)
    assert len({j["node"] for j in jobs}) == 2, "jobs ran on one node only"
    assert "verified" in cold["stdout"] and "DIFFER" not in cold["stdout"]


def test_cached_rerun_builds_nothing(scenario):
    work, res, _ = scenario
    assert res["cached"]["rc"] == 0, res["cached"]["stderr"]
    jobs = _summary(os.path.join(work, "cached.json"))
    assert jobs and all(j["cached"] for j in jobs)
    got = compare(os.path.join(work, "cached"), _golden())
    assert got["differ"] == got["missing"] == got["no_golden"] == [] and got["match"], got


def test_precisions_rebuilt_from_cached_fp32_files(scenario):
    """With only the FP32 jobs in the cache, the precisions made from their files run on the cluster from those files
    (put in Ray's object store by the driver) and give the golden bytes."""
    work, res, _ = scenario
    part = res["partial"]
    assert part["rc"] == 0 and part["dropped"] > 0, part
    jobs = _summary(os.path.join(work, "partial.json"))
    rebuilt = [j for j in jobs if not j["cached"]]
    assert len(rebuilt) == part["dropped"] and all(j["job"].endswith(("fp16", "int8")) for j in rebuilt), rebuilt
    got = compare(os.path.join(work, "partial"), _golden())
    assert got["differ"] == got["missing"] == got["no_golden"] == [] and got["match"], got


def test_deterministic_failure_fails_once_with_one_line(scenario):
    _, res, _ = scenario
    out = res["deterministic"]["stdout"]
    assert out.startswith("ERROR "), res["deterministic"]
    line = out.split(" ", 2)[2].strip()
    assert "\n" not in line and "the build planned with" in line and "tflite 28x42" in line


def test_sigterm_cancels_and_leaves_nothing(scenario):
    work, res, left = scenario
    s = res["sigterm"]
    assert s["job_running_at_sigterm"], s
    assert s["rc"] == 143, s["stderr"]
    assert s["stderr"].strip().splitlines()[-1].startswith("edgedepth: terminated"), s["stderr"]
    assert s["left"] == [], s["left"]            # the local Ray instance the build started is gone
    assert not s["folder"] and s["beside"] == [], s
    assert left == set(), f"Ray processes outlived the test: {left}"
