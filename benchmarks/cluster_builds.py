"""Release builds as Ray tasks: the tiny family serial vs on a two-node Ray cluster vs a fully cached re-run, Ray's own
overhead per job, and the whole-graph wall time on more workers simulated from the measured job costs.

    sudo .venv/bin/python benchmarks/cluster_builds.py [--out benchmarks/results/cluster_builds.json]
    sudo .venv/bin/python benchmarks/cluster_builds.py --release small    # -> results/cluster_builds_small.json

Runs itself again inside new network, PID and mount namespaces (``unshare``; root): only loopback exists there, so the
cluster -- ``ray start --head`` and a second node, one CPU each, on this machine -- never listens on a real interface
(../shared/NOTES.md), and every process it starts dies with it.  In one run, one after another on the same machine:

1. **overhead**: connecting a driver (``ray.init``), an empty task's round trip (median of 40), and a task returning
   1 / 16 / 64 MB of bytes (the way a job's files come back), median of 5 each;
2. **tiny family** (tests/golden/record.py ``FAMILY_ARGS``: every V2 and DA3 member's tiny stand-in, LiteRT, one size):
   serial (``--executor serial``), on the cluster (``--executor ray``; a fresh build cache), then the same command
   again (every job from that cache); wall time of the ``edgedepth release`` process, and each job's own seconds;
3. **simulation**: the graph's wall time on 1, 4, 16, 64 and 256 workers from the serial run's job costs (longest job
   first onto the least loaded worker) plus the serial run's driver time (loading, assembly, verify) -- a projection
   from measured costs, stated as such, not a measurement.

``--release small``: the full V2 Small release instead (its recipe on the full-size synthetic stand-in, no GPU check),
without its last size: serial (build cache A), on the cluster (a fresh cache B), then serially again with the last
size added, from cache A (only the added size's job should run).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

from lib.machine import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _golden_record():
    """tests/golden/record.py (the family's arguments are the goldens'), loaded from its file."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("record", os.path.join(ROOT, "tests", "golden", "record.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


FAMILY_ARGS = _golden_record().FAMILY_ARGS

PORT = 6391
WORKERS = (1, 4, 16, 64, 256)
SMALL_RECIPE = os.path.join(ROOT, "recipes", "depth-anything-v2-small.py")
SMALL_METHOD = ("one run on this machine, one variant after another: the V2 Small release (its recipe, the full-size "
                "synthetic stand-in, no GPU check) without its last size built serially (build cache A), on a Ray "
                "cluster of two single-CPU nodes on this machine (loopback only, in a network namespace; a fresh "
                "cache B), then serially with the last size added, from cache A; wall time of the edgedepth release "
                "process")
METHOD = ("one run on this machine, one variant after another: the tiny family (every V2 and DA3 member's tiny "
          "stand-in, LiteRT, 28x42, parity gate on 1 photo, no GPU check) built serially, on a Ray cluster of two "
          "single-CPU nodes on this machine (loopback only, in a network namespace; a fresh build cache), and again "
          "from that cache; wall time of the edgedepth release process; Ray overhead: driver connect, empty-task round "
          "trip (median of 40), a task returning N MB (median of 5)")


def lpt_makespan(costs: list[float], workers: int) -> float:
    """Wall time of independent jobs of ``costs`` seconds on ``workers`` identical workers, longest job first onto
    the least loaded worker (LPT list scheduling: within 4/3 of the optimum)."""
    loads = [0.0] * workers
    for c in sorted(costs, reverse=True):
        loads[loads.index(min(loads))] += c
    return max(loads)


def simulate(jobs: list[dict], driver_s: float) -> list[dict]:
    costs = [j["seconds"] for j in jobs]
    return [{"workers": w, "projected_wall_s": round(lpt_makespan(costs, w) + driver_s, 1),
             "critical_path_s": round(max(costs) + driver_s, 1)} for w in WORKERS]


def _overhead(env: dict) -> dict:
    code = f"""
import json, statistics, time, ray
t = time.perf_counter(); ray.init(address="127.0.0.1:{PORT}", log_to_driver=False); connect = time.perf_counter() - t
@ray.remote(num_cpus=1)
def empty(): return None
@ray.remote(num_cpus=1)
def blob(n): return b"x" * n
ray.get(empty.remote())
rt = []
for _ in range(40):
    t = time.perf_counter(); ray.get(empty.remote()); rt.append(time.perf_counter() - t)
out = {{"connect_s": round(connect, 3), "empty_task_round_trip_ms": round(statistics.median(rt) * 1e3, 2)}}
for mb in (1, 16, 64):
    ts = []
    for _ in range(5):
        t = time.perf_counter(); ray.get(blob.remote(mb << 20)); ts.append(time.perf_counter() - t)
    out[f"return_{{mb}}mb_ms"] = round(statistics.median(ts) * 1e3, 1)
print(json.dumps(out))
"""
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def _small_args(all_sizes: bool) -> list[str]:
    import runpy

    sizes = runpy.run_path(SMALL_RECIPE)["RECIPE"]["sizes"]
    return ["--recipe", SMALL_RECIPE, "--model", "synthetic", "--no-gpu-check",
            "--sizes", ",".join(sizes if all_sizes else sizes[:-1])]


def _release(label: str, work: str, env: dict, *extra, args=FAMILY_ARGS) -> dict:
    out, summary = os.path.join(work, label), os.path.join(work, f"{label}.json")
    t = time.perf_counter()
    r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "edgedepth"), "release", *args, *extra,
                        "--out", out, "--summary", summary], env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(f"{label}: {r.stderr[-2000:]}")
    with open(summary) as f:
        s = json.load(f)
    jobs = [{"release": rel.get("release", ""), **{k: j.get(k) for k in ("job", "cached", "seconds", "cpu_seconds",
                                                                      "node", "process_peak_rss_mb")}}
            for rel in s["releases"] for j in rel["jobs"]]
    return {"variant": label, "wall_s": round(wall, 1), "graph_wall_s": s["executor"]["wall_s"],
            "executor": s["executor"], "jobs": jobs, "files_sha256": _files(s)}


def _files(summary: dict) -> str:
    """One SHA-256 over every release's manifest file list (path + SHA-256): equal builds give equal values."""
    import hashlib

    entries, family = [], len(summary["releases"]) > 1
    for rel in summary["releases"]:     # a family's member names; one release's label is its folder's name: left out
        with open(os.path.join(rel["folder"], "manifest.json")) as f:
            entries += [(rel["release"] if family else "", e["path"], e["sha256"]) for e in json.load(f)["files"]]
    return hashlib.sha256(json.dumps(sorted(entries)).encode()).hexdigest()


def inside(work: str, what: str) -> dict:
    """The measurements, inside the namespaces."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "EDGEDEPTH_BUILD_CACHE": "off", "HOME": home,
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": os.urandom(32).hex()}
    env.pop("RAY_ADDRESS", None)
    ray = os.path.join(os.path.dirname(sys.executable), "ray")
    for args in (["--head", "--include-dashboard=false", "--disable-usage-stats", "--port", str(PORT)],
                 ["--address", f"127.0.0.1:{PORT}"]):
        subprocess.run([ray, "start", "--num-cpus", "1", *args], env=env, check=True, capture_output=True)
    try:
        overhead = _overhead(env)
        addr, cache = ["--executor", "ray", "--ray-address", f"127.0.0.1:{PORT}"], ["--cache", os.path.join(work, "c")]
        if what == "small":
            first, cold = _small_args(False), ["--cache", os.path.join(work, "a")]
            runs = [_release("serial", work, env, *cold, args=first),
                    _release("ray", work, env, *addr, *cache, args=first),
                    _release("serial_size_added", work, env, *cold, args=_small_args(True))]
        else:
            runs = [_release("serial", work, env, "--no-cache"), _release("ray", work, env, *addr, *cache),
                    _release("ray_cached", work, env, *addr, *cache)]
    finally:
        subprocess.run([ray, "stop", "--force"], env=env, capture_output=True)
    return {"overhead": overhead, "runs": runs}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", choices=("tiny-family", "small"), default="tiny-family")
    ap.add_argument("--out", default=None)
    ap.add_argument("--inside", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.inside:
        with open(os.path.join(args.inside, "inside.json"), "w") as f:
            json.dump(inside(args.inside, args.release), f)
        return 0
    name = "cluster_builds_small.json" if args.release == "small" else "cluster_builds.json"
    args.out = args.out or os.path.join(HERE, "results", name)
    import tempfile

    with tempfile.TemporaryDirectory(prefix="edgedepth-cluster-") as work:
        subprocess.run(["unshare", "--net", "--pid", "--mount-proc", "--kill-child", sys.executable,
                        os.path.abspath(__file__), "--inside", work, "--release", args.release], check=True)
        with open(os.path.join(work, "inside.json")) as f:
            got = json.load(f)
    runs = {r["variant"]: r for r in got["runs"]}
    serial = runs["serial"]
    base = {"date": datetime.date.today().isoformat(), "cpu": cpu_name(), "cores": os.cpu_count(),
            "python": platform.python_version(), "commit": _commit(), "overhead": got["overhead"], "runs": got["runs"],
            "speedup_ray_vs_serial": round(serial["wall_s"] / runs["ray"]["wall_s"], 2),
            "ray_files_equal_serial": runs["ray"]["files_sha256"] == serial["files_sha256"]}
    if args.release == "small":
        added = runs["serial_size_added"]
        report = {"kind": "edgedepth.cluster_builds_small", **base, "method": SMALL_METHOD,
                  "size_added_vs_cold": round(added["wall_s"] / serial["wall_s"], 3),
                  "size_added_jobs_built": [j["job"] for j in added["jobs"] if not j["cached"]]}
    else:
        driver = serial["wall_s"] - sum(j["seconds"] for j in serial["jobs"])
        report = {"kind": "edgedepth.cluster_builds", **base, "method": METHOD, "family_args": FAMILY_ARGS,
                  "cached_vs_cold": round(runs["ray_cached"]["wall_s"] / runs["ray"]["wall_s"], 3),
                  "driver_s": round(driver, 1), "simulation": simulate(serial["jobs"], driver),
                  "simulation_note": "projected from the serial run's measured job seconds (LPT onto identical "
                                     "workers) plus its driver time; not a measurement"}
    with open(args.out, "w") as f:
        f.write(json.dumps(report, indent=2) + "\n")
    print(json.dumps({k: v for k, v in report.items() if k not in ("runs", "method")}, indent=1))
    return 0


def _commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
    return r.stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
