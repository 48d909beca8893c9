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
A precision made from an FP32 file (``Job.after``) is a job of its own that starts once that file's job has finished;
a kind measured before jobs were split per precision counts as one job of its measured cost.  It list-schedules them,
longest chain first, onto W identical workers (:func:`list_schedule`): a projection from measured costs, not a
measurement, and without the driver's own time (loading each member's checkpoint, putting its folder together;
benchmarks/cluster_builds.py measures it on the tiny family).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

from cluster_builds import WORKERS, _commit
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
import json, os, resource, sys, tempfile, time
from edgedepth.release import load_recipe
from edgedepth.release.build import plan
recipe, model, size, index, keep, after = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), *sys.argv[5:7]
r = load_recipe(recipe).with_overrides(model=model, sizes=[size])
p = plan(r, gpu_check=False)
from edgedepth.release.jobs import run_job
spec = p.specs[index]
from edgedepth.errors import EdgedepthError
upstream = (after, json.load(open(after + ".result.json"))) if after else None
with tempfile.TemporaryDirectory() as d:
    work = keep or d
    t, c = time.perf_counter(), time.process_time()
    try:
        res, failed = run_job(spec, p.ckpt, p.items, work, lambda n: None, upstream), None
    except EdgedepthError as e:       # the job's own outcome (a parity gate): its cost up to there, and why
        res, failed = {"entries": []}, str(e)
    if keep:                          # what later jobs of this kind start from (Job.after): files and result
        json.dump(res, open(keep + ".result.json", "w"))
    print(json.dumps({"job": spec.job.label, "format": spec.job.format, "variant": spec.job.variant,
                      "precisions": list(spec.job.precisions), "after": spec.job.after,
                      "pytorch_outputs_handed_on": bool(upstream and upstream[1].get("references")),
                      "seconds": round(time.perf_counter() - t, 2),
                      "cpu_seconds": round(time.process_time() - c, 2),
                      "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                      "declared_memory_gib": round(spec.memory / 2**30, 2),
                      "bytes": sum(e["bytes"] for e in res["entries"]), **({"failed": failed} if failed else {})}))
"""


def _jobs_of(recipe: str, model: str, size: str) -> list[list]:
    """[label, after] of each job of ``recipe`` at ``size``."""
    code = ("import json, sys; from edgedepth.release import load_recipe; from edgedepth.release.build import plan; "
            "p = plan(load_recipe(sys.argv[1]).with_overrides(model=sys.argv[2], sizes=[sys.argv[3]], parity_images=0),"
            " gpu_check=False); print(json.dumps([[s.job.label, s.job.after] for s in p.specs]))")
    r = subprocess.run([sys.executable, "-c", code, recipe, model, size], capture_output=True, text=True, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def measure(kind: str, tiny: bool, threads: int, only: str = "") -> list[dict]:
    """Each job of ``kind`` (whose label contains ``only``) alone in a fresh process; a job made from another job's
    files (``Job.after``) is measured from that job's kept output (which runs first, measured too)."""
    import tempfile

    recipe, full, small = KINDS[kind]
    model = small if tiny else full
    from edgedepth.release import load_recipe

    size = "28x42" if tiny else load_recipe(recipe).sizes[0]
    rows = []
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    jobs = _jobs_of(recipe, model, size)
    heads = {after for _, after in jobs if after}
    wanted = [i for i, (label, _) in enumerate(jobs) if any(o in label for o in only.split(","))]
    wanted = sorted(set(wanted) | {i for i, (label, _) in enumerate(jobs) if label in heads
                                   and any(jobs[j][1] == label for j in wanted)})
    with tempfile.TemporaryDirectory(prefix="job-costs-") as keep:
        kept = {}
        for i in wanted:
            label, after = jobs[i]
            folder = os.path.join(keep, str(i)) if label in heads else ""
            if folder:
                os.makedirs(folder)
                kept[label] = folder
            r = subprocess.run([sys.executable, "-c", ONE, recipe, model, size, str(i), folder, kept.get(after, "")],
                               capture_output=True, text=True, env=env)
            if r.returncode:
                raise SystemExit(f"{kind} {label}: {r.stderr[-1500:]}")
            rows.append({"kind": kind, "model": model, "size": size, **json.loads(r.stdout.strip().splitlines()[-1])})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def zoo_jobs() -> list[list]:
    """[member, recipe name, format, variant, size, precisions, after] of every job of every member's recipe."""
    code = """
import json
from edgedepth.release.family import member_recipes
out = []
for name, r in member_recipes("depth-anything-v2,depth-anything-3"):
    for fmt, part in r.parts:
        for job in fmt.release_jobs(part, r.sizes, gate=True, gpu_check=False):
            out.append([name, r.name, job.format, job.variant, job.size, list(job.precisions), job.after])
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


def _row_key(r: dict) -> tuple:
    """(kind, format, variant, precisions) of a measured row; a row of a job that made every precision of its export
    at once (measured before jobs were split per precision) has precisions "*"."""
    if "format" in r:
        return r["kind"], r["format"], r["variant"], ",".join(r["precisions"]) or "*"
    fmt, _, rest = r["job"].split(" ", 2) + [""] * (r["job"].count(" ") < 2)
    return r["kind"], fmt, rest, "*"


def list_schedule(jobs: list[dict], workers: int) -> float:
    """Wall time of ``jobs`` ({id, cost, after: id or None}) on ``workers`` identical workers: whenever a worker is
    free it takes the ready job (its ``after`` finished) heading the longest remaining chain (list scheduling with
    precedence, as the build orders its jobs; a projection, not a measurement)."""
    import heapq

    by = {j["id"]: j for j in jobs}
    follow = {}
    for j in jobs:
        if j["after"] is not None:
            follow.setdefault(j["after"], []).append(j["id"])
    rank = {i: by[i]["cost"] + max((by[k]["cost"] for k in follow.get(i, ())), default=0.0) for i in by}
    ready = [(-rank[i], i) for i in by if by[i]["after"] is None]
    heapq.heapify(ready)
    running, free, now, end = [], workers, 0.0, 0.0      # running: (finish time, id)
    while ready or running:
        while ready and free:
            _, i = heapq.heappop(ready)
            heapq.heappush(running, (now + by[i]["cost"], i))
            free -= 1
        now, i = heapq.heappop(running)
        free, end = free + 1, max(end, now)
        for k in follow.get(i, ()):
            heapq.heappush(ready, (-rank[k], k))
    return end


def project(rows: list[dict]) -> dict:
    """Every zoo job with its kind's measured cost: split jobs (a precision after its FP32 job) where that kind was
    measured split, else the kind's unsplit job (every precision of the export in one job, as measured before)."""
    cost = {_row_key(r): r["cpu_seconds"] for r in rows}
    jobs, missing, left_out, unsplit = [], set(), 0, set()
    ids, zoo = {}, zoo_jobs()
    for member, recipe_name, fmt, variant, size, precisions, after in zoo:
        kind = kind_of(recipe_name)
        key = (kind, fmt, variant, ",".join(precisions) or "*")
        whole = (kind, fmt, variant, "*")
        label = " ".join(filter(None, (fmt, size, variant, ",".join(precisions))))
        if key in cost:
            c, dep = cost[key], ids.get((member, after))
        elif whole in cost:         # measured unsplit: the head job carries the export's whole cost
            c, dep = (cost[whole], None) if "fp32" in precisions or not precisions else (0.0, None)
            unsplit.add(whole)
        else:
            missing.add(key)
            left_out += 1
            continue
        ids[member, label] = len(jobs)
        name = " ".join(f"{kind} {label.replace(size, '')}".split())
        jobs.append({"id": len(jobs), "cost": c, "after": dep, "name": name})
    jobs = [j for j in jobs if j["cost"] > 0 or j["after"] is not None]
    longest = max(jobs, key=lambda j: j["cost"])
    chains = {}
    for j in jobs:
        chains[j["id"]] = j["cost"] + (chains.get(j["after"], 0.0) if j["after"] is not None else 0.0)
    crit = max(chains, key=chains.get)
    return {"zoo_jobs": len(zoo), "jobs": len(jobs), "jobs_left_out": left_out, "unmeasured_kinds": sorted(map(list, missing)),
            "unsplit_kinds": sorted(map(list, unsplit)),
            "job_seconds": round(sum(j["cost"] for j in jobs), 1), "longest_job_s": longest["cost"],
            "longest_job": longest["name"], "critical_path_s": round(chains[crit], 1),
            "critical_path_ends_with": next(j["name"] for j in jobs if j["id"] == crit),
            "workers": [{"workers": w, "projected_wall_s": round(list_schedule(jobs, w), 1)} for w in WORKERS]}


def _merged(rows: list[dict]) -> list[dict]:
    """``rows`` of several reports, a later measurement of the same job replacing an earlier one, and a job measured
    split per precision replacing the same export measured as one job."""
    last = {}
    for r in rows:
        last[r["kind"], r["job"]] = r
    split = {_row_key(r)[:3] for r in last.values() if _row_key(r)[3] != "*"}
    return [r for r in last.values() if _row_key(r)[3] != "*" or _row_key(r)[:3] not in split]


def _report(rows: list[dict], tiny: bool, threads: int) -> dict:
    return {"kind": "edgedepth.job_costs", "date": datetime.date.today().isoformat(), "cpu": cpu_name(),
            "cores": os.cpu_count(), "python": platform.python_version(), "commit": _commit(), "tiny": tiny,
            "threads": threads,
            "rows": rows, "zoo": project(rows),
            "method": f"each job alone in a fresh process with OMP_NUM_THREADS={threads} (as a num_cpus=1 Ray task; "
                      "run_job; parity gate on the recipe's photos, no GPU check; a precision made from an FP32 "
                      "file starts from that job's kept output); peak RSS = the process's ru_maxrss; projection: "
                      "every recipe job with its kind's measured CPU seconds (a job on a dedicated single-CPU worker; "
                      "wall seconds here include the other lane's contention; a kind measured before its jobs were "
                      "split per precision counts as one job of its measured cost), list-scheduled onto W identical "
                      "workers, a job only once the job it comes after has finished, the longest chain first (a "
                      "projection, not a measurement)"}


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
    ap.add_argument("--only", default="", help="only the jobs whose label contains one of these (comma-separated), and those they start from")
    ap.add_argument("--merge", nargs="+", metavar="JSON", help="merge the rows of these reports into --out")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    out = args.out or os.path.join(HERE, "results", "job_costs_tiny.json" if args.tiny else "job_costs.json")
    if args.merge:
        parts = [json.load(open(p)) for p in args.merge]
        rows = _merged([row for part in parts for row in part["rows"]])
        report = _report(rows, parts[0]["tiny"], parts[0]["threads"])
        report["date"] = max(part["date"] for part in parts)
        report["commit"] = ",".join(sorted({part["commit"] for part in parts}))     # what the rows measured
    else:
        rows = []
        for kind in args.kinds.split(","):
            rows += measure(kind, args.tiny, args.threads, args.only)
            report = _report(rows, args.tiny, args.threads)
            _write(out, report)
    _write(out, report)
    print(json.dumps(report["zoo"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
