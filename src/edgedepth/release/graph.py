"""Run the jobs of one or more releases (``build.Plan``) as one graph: each looked up in the build cache first, the
others in an executor (:mod:`.executors`), each finished job filed in the cache as it lands, so a build that is
killed resumes from what it finished.  Outputs come back indexed by (release, job), never by completion order.

Plans may come one at a time (a family loads one member's checkpoint after another): each plan's jobs go to the
executor as soon as it is planned, so workers start while the driver loads the next member; on an executor of several
slots a plan's jobs start longest first (the longest chain of ``jobs.work_estimate`` from each job on), so the last to
finish is a short one.  A job that comes after another (``Job.after``: a precision made from an FP32 file) goes to
the executor after it, and runs once it has finished (or with the cached one's files)."""

from __future__ import annotations

import dataclasses
import os
import shutil
import time
from typing import Callable, Iterable


@dataclasses.dataclass
class Output:
    """A finished job: the folder holding its files, its result (``jobs.run_job``), whether it came from the cache
    (``cached``) or was filed in it (``filed``; both: its folder is the cache's, to copy from, never to move)."""

    folder: str
    result: dict
    cached: bool = False
    filed: bool = False


@dataclasses.dataclass
class JobCounts:
    """The graph's progress: jobs in all, done (built or cached), cached, in flight (submitted, not finished) and
    running (in flight, at most as many as the executor has slots: Ray queues the rest)."""

    total: int
    done: int = 0
    cached: int = 0
    in_flight: int = 0
    slots: int = 1

    @property
    def running(self) -> int:
        return min(self.in_flight, self.slots)


def run_graph(plans: Iterable, executor, cache, step: Callable[[str], None],
              jobs_progress: Callable[[JobCounts], None] | None = None,
              total: int | None = None) -> tuple[list[list[Output]], dict]:
    """Every job of ``plans`` (a list, or plans made as they are asked for; each with its ``staging`` set: finished
    jobs land beside it) -> (outputs per plan in its jobs' order, where they ran: the executor's description, wall
    time, cache hits).  ``total``: the jobs in all, where known before the plans are made (the progress bar's)."""
    from .executors import Task

    t0 = time.perf_counter()
    seen, outputs = [], {}
    described = executor.describe()
    counts = JobCounts(total=total or 0, slots=int(described.get("cpus", 1)))
    report = jobs_progress or (lambda c: None)

    def tasks():
        for pi, p in enumerate(plans):
            seen.append(p)
            counts.total += 0 if total else len(p.specs)
            todo = []
            at = {spec.job.label: si for si, spec in enumerate(p.specs)}
            for si, spec in enumerate(p.specs):
                hit = cache.get(spec.key) if cache else None
                if hit:
                    outputs[pi, si] = Output(hit[0], hit[1], cached=True)
                    counts.done, counts.cached = counts.done + 1, counts.cached + 1
                    for _ in range(p.stages[si]):
                        step(f"cached: {spec.job.label}")
                else:
                    after = (pi, at[spec.job.after]) if spec.job.after else None
                    todo.append(Task((pi, si), spec, p.ckpt, p.items, after))
            report(counts)
            yield from _order(todo, counts.slots > 1)

    def workdir(t) -> str:
        folder = os.path.join(os.path.dirname(seen[t.index[0]].staging), "jobs", str(t.index[1]))
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        return folder

    def started(t) -> None:
        counts.in_flight += 1
        report(counts)

    def finished(index) -> Output | None:
        return outputs.get(index)

    for t, result, folder in executor.run(tasks(), workdir, step, started, finished):
        out = Output(folder, result)
        if cache:
            out = Output(cache.put(t.spec.key, folder, result), result, filed=True)
        outputs[t.index] = out
        counts.done, counts.in_flight = counts.done + 1, counts.in_flight - 1
        report(counts)
    if cache:
        cache.evict(keep={s.key for p in seen for s in p.specs})
    where = {**described, "wall_s": round(time.perf_counter() - t0, 2), "jobs": counts.total,
             "cached": counts.cached, **({"cache": cache.root} if cache else {})}
    return [[outputs[pi, si] for si in range(len(p.specs))] for pi, p in enumerate(seen)], where


def _order(tasks: list, longest_first: bool) -> list:
    """``tasks`` in the order they go to the executor: each after the one it comes after (``Task.after``); when
    ``longest_first``, chains (a task and those after it) by their longest path of work estimates, longest first,
    else in the recipe's order.  (A task whose predecessor is not in ``tasks`` was cached: it heads its own chain.)"""
    from .jobs import work_estimate

    own = {t.index: work_estimate(t.spec) for t in tasks}
    head = {t.index: t.after if t.after in own else t.index for t in tasks}
    chain = {h: own[h] + max((own[t.index] for t in tasks if head[t.index] == h and t.index != h), default=0)
             for h in set(head.values())}

    def key(t):
        follows = head[t.index] != t.index
        return (-chain[head[t.index]], head[t.index], follows, -own[t.index]) if longest_first else (follows, t.index)

    return sorted(tasks, key=key)
