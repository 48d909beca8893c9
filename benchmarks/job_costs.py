"""What each kind of release job costs at full size, and what the whole zoo would take on 1..256 workers.

    .venv/bin/python benchmarks/job_costs.py [--kinds v2-small,v2-large,...] [--out benchmarks/results/job_costs.json]
    .venv/bin/python benchmarks/job_costs.py --tiny      # the same on the tiny stand-ins (a check of the script)
    .venv/bin/python benchmarks/job_costs.py --merge a.json b.json   # one report from lanes run side by side

Every job of one representative member per architecture (its recipe, its full-size synthetic stand-in: the real
architecture, seeded weights; the recipe's first size) runs alone in a fresh process (``edgedepth.release.jobs
.run_job``, parity gate on the recipe's photos, no GPU check): wall seconds, CPU seconds, and the process's peak RSS
(``ru_maxrss``: the interpreter, the libraries and the loaded checkpoint included, as on a worker). Each job runs with
``OMP_NUM_THREADS=1`` (``--threads``), as Ray runs a ``num_cpus=1`` task, so two lanes (``--kinds``, ``--out``) can run
side by side on two cores and be merged. The report is rewritten after every kind: a stopped run keeps what it measured.

The projection lists every job of every member's recipe (``release --family ... --dry-run``'s jobs) with the measured
cost of its kind: its CPU seconds, what it takes on a dedicated single-CPU worker (wall seconds here also count the
other lanes' contention); a job at a smaller size than the one measured is given the measured cost, an upper bound.
It schedules them longest first onto the least loaded of W identical workers (benchmarks/cluster_builds.py
``lpt_makespan``): a projection from measured costs, not a measurement, and without the driver's own time (loading
each member's checkpoint, putting its folder together; benchmarks/cluster_builds.py measures it on the tiny family).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

from cluster_builds import WORKERS, _commit, lpt_makespan
from lib.machine import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))

# kind -> (recipe, full-size stand-in, tiny stand-in): one member per architecture
KINDS = {
    "v2-small": ("depth-anything-v2-small", "synthetic", "synthetic-tiny"),
    "v2-base": ("depth-anything-v2-base", "synthetic-base", "synthetic-tiny-base"),
    "v2-large": ("depth-anything-v2-large", "synthetic-large", "synthetic-tiny-large"),
    "da3-small": ("depth-anything-3-small", "synthetic-da3-small", "synthetic-da3-tiny"),
    "da3-base": ("depth-anything-3-base", "synthetic-da3-base", "synthetic-da3-tiny-base"),
    "da3-large": ("depth-anything-3-mono-large", "synthetic-da3-mono-large", "synthetic-da3-tiny-mono"),
}
ONE = """
import json, resource, sys, tempfile, time
from edgedepth.release import load_recipe
from edgedepth.release.build import plan
recipe, model, size, index = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
r = load_recipe(recipe).with_overrides(model=model, sizes=[size])
p = plan(r, gpu_check=False)
from edgedepth.release.jobs import run_job
spec = p.specs[index]
from edgedepth.errors import EdgedepthError
with tempfile.TemporaryDirectory() as d:
    t, c = time.perf_counter(), time.process_time()
    try:
        res, failed = run_job(spec, p.ckpt, p.items, d, lambda n: None), None
    except EdgedepthError as e:       # the job's own outcome (a parity gate): its cost up to there, and why
        res, failed = {"entries": []}, str(e)
    print(json.dumps({"job": spec.job.label, "seconds": round(time.perf_counter() - t, 2),
                      "cpu_seconds": round(time.process_time() - c, 2),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "declared_memory_gib": round(spec.memory / 2**30, 2),
                      "bytes": sum(e["bytes"] for e in res["entries"]), **({"failed": failed} if failed else {})}))
"""


def _jobs_of(recipe: str, model: str, size: str) -> list[str]:
    code = ("import json, sys; from edgedepth.release import load_recipe; from edgedepth.release.build import plan; "
            "p = plan(load_recipe(sys.argv[1]).with_overrides(model=sys.argv[2], sizes=[sys.argv[3]], parity_images=0),"
            " gpu_check=False); print(json.dumps([s.job.label for s in p.specs]))")
    r = subprocess.run([sys.executable, "-c", code, recipe, model, size], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(kind: str, tiny: bool, threads: int) -> list[dict]:
    recipe, full, small = KINDS[kind]
    model = small if tiny else full
    from edgedepth.release import load_recipe

    size = "28x42" if tiny else load_recipe(recipe).sizes[0]
    rows = []
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    for i, label in enumerate(_jobs_of(recipe, model, size)):
        r = subprocess.run([sys.executable, "-c", ONE, recipe, model, size, str(i)], capture_output=True, text=True,
                           env=env)
        if r.returncode:
            raise SystemExit(f"{kind} {label}: {r.stderr[-1500:]}")
        rows.append({"kind": kind, "model": model, "size": size, **json.loads(r.stdout.strip().splitlines()[-1])})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def zoo_jobs() -> list[tuple[str, str, str]]:
    """(member, kind, job label minus its size) of every job of every member's recipe (both families)."""
    code = """
import json
from edgedepth.release.family import member_recipes
out = []
for name, r in member_recipes("depth-anything-v2,depth-anything-3"):
    for fmt, part in r.parts:
        for job in fmt.release_jobs(part, r.sizes, gate=True, gpu_check=False):
            out.append([name, r.name, job.format, job.variant, job.size])
print(json.dumps(out))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def kind_of(recipe_name: str) -> str:
    """The measured kind whose architecture a member's recipe has."""
    for kind, (recipe, _, _) in KINDS.items():
        if recipe_name == recipe + "-edgedepth":
            return kind
    arch = {"depth-anything-v2-metric-indoor-small": "v2-small", "depth-anything-v2-metric-outdoor-small": "v2-small",
            "depth-anything-v2-metric-indoor-base": "v2-base", "depth-anything-v2-metric-outdoor-base": "v2-base",
            "depth-anything-v2-metric-indoor-large": "v2-large", "depth-anything-v2-metric-outdoor-large": "v2-large",
            "depth-anything-3-metric-large": "da3-large"}
    return arch[recipe_name.removesuffix("-edgedepth")]


def project(rows: list[dict]) -> dict:
    cost = {(r["kind"], r["job"].split(" ", 2)[0], r["job"].split(" ", 2)[2] if r["job"].count(" ") > 1 else ""):
            r["cpu_seconds"] for r in rows}
    jobs, missing, left_out = [], set(), 0
    for _member, recipe_name, fmt, variant, _size in zoo_jobs():
        key = (kind_of(recipe_name), fmt, variant)
        if key in cost:
            jobs.append((cost[key], f"{key[0]} {fmt} job {variant}".strip()))
        else:
            missing.add(key)
            left_out += 1
    longest = max(jobs)
    return {"jobs": len(jobs), "jobs_left_out": left_out, "unmeasured_kinds": sorted(map(list, missing)),
            "job_seconds": round(sum(c for c, _ in jobs), 1), "longest_job_s": longest[0], "longest_job": longest[1],
            "workers": [{"workers": w, "projected_wall_s": round(lpt_makespan([c for c, _ in jobs], w), 1)}
                        for w in WORKERS]}


def _report(rows: list[dict], tiny: bool, threads: int) -> dict:
    return {"kind": "edgedepth.job_costs", "date": datetime.date.today().isoformat(), "cpu": cpu_name(),
            "cores": os.cpu_count(), "python": platform.python_version(), "commit": _commit(), "tiny": tiny,
            "threads": threads,
            "rows": rows, "zoo": project(rows),
            "method": f"each job alone in a fresh process with OMP_NUM_THREADS={threads} (as a num_cpus=1 Ray task; "
                      "run_job; parity gate on the recipe's photos, no GPU check); peak RSS = the process's ru_maxrss; "
                      "projection: LPT of every recipe job's measured kind cost (its CPU seconds: a job on a "
                      "dedicated single-CPU worker; wall seconds here include the other lane's contention) onto W "
                      "identical workers (a projection, not a measurement)"}


def _write(path: str, report: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kinds", default=",".join(KINDS))
    ap.add_argument("--tiny", action="store_true", help="the tiny stand-ins at 28x42 (checks the script)")
    ap.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of each job's process")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="merge the rows of these reports into --out")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    out = args.out or os.path.join(HERE, "results", "job_costs_tiny.json" if args.tiny else "job_costs.json")
    if args.merge:
        parts = [json.load(open(p)) for p in args.merge]
        rows = [row for part in parts for row in part["rows"]]
        report = _report(rows, parts[0]["tiny"], parts[0]["threads"])
        report["date"] = max(part["date"] for part in parts)
        report["commit"] = ",".join(sorted({part["commit"] for part in parts}))     # what the rows measured
    else:
        rows = []
        for kind in args.kinds.split(","):
            rows += measure(kind, args.tiny, args.threads)
            report = _report(rows, args.tiny, args.threads)
            _write(out, report)
    _write(out, report)
    print(json.dumps(report["zoo"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
