"""Where a build's jobs run: :class:`Serial` (this process, one after another: the default) or :class:`RayCluster`
(Ray tasks on a cluster, each declaring the CPU and memory it needs).  Both run the same function
(``jobs.run_job``) and yield (task, result, folder with its files) as jobs finish; the build puts outputs together in
the recipe's order, so where and in which order jobs ran never changes a byte.

A Ray worker loads the checkpoint itself from the recipe's spec (a Hub id, a stand-in, or a path every node has) and
checks its state-dict SHA-256 against the driver's; the gate's photos travel in Ray's object store and the files come
back through it, so the cluster needs no shared folder.  A job whose worker dies is retried on another worker
(``MAX_RETRIES``); a job that fails (a converter error, a parity gate) fails the build at once with its one line.
Ctrl-C / SIGTERM cancel every job; a Ray instance the build started is stopped with it.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import socket
import threading
from typing import Any, Callable, Iterable, Iterator

from .. import extras, interrupt
from ..errors import EdgedepthError
from ..fsutil import write_bytes_atomic
from .jobs import JobSpec, checkpoint_for, run_job

MAX_RETRIES = 3         # a job's worker died (killed, out of memory, node lost): Ray runs it again elsewhere
WAIT_S = 0.5            # how often the driver looks up from waiting (Ctrl-C, progress)


@dataclasses.dataclass
class Task:
    """A job to run: ``index`` says where its files go in the build; ``ckpt``: the driver's loaded checkpoint (the
    serial executor's; a Ray worker loads its own); ``items``: the gate's photos; ``after``: the index of the job whose
    files it starts from (``Job.after``), given to the executor before it."""

    index: Any
    spec: JobSpec
    ckpt: Any
    items: list
    after: Any = None


def _inputs(t: Task, finished) -> tuple[str, dict] | None:
    """(folder, result) of the finished job ``t`` comes after (``finished(index)``: a ``graph.Output``)."""
    if t.after is None:
        return None
    out = finished(t.after)
    if out is None:
        raise EdgedepthError(f"job {t.spec.job.label} was started before job {t.spec.job.after} finished")
    return out.folder, out.result


class Serial:
    """Every job in this process, one after another, reporting each job's stages to ``step``."""

    name = "serial"

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def describe(self) -> dict:
        return {"executor": self.name, "nodes": 1, "host": socket.gethostname()}

    def run(self, tasks: Iterable[Task], workdir: Callable[[Task], str], step, started=None,
            finished=lambda index: None) -> Iterator:
        """Each task in the order given (one that comes after another is given after it)."""
        for t in tasks:
            if started:
                started(t)
            folder = workdir(t)
            yield t, run_job(t.spec, t.ckpt, t.items, folder, step, _inputs(t, finished)), folder


class RayCluster:
    """Jobs as Ray tasks: on the cluster at ``address`` (``ray start`` made it), else on a local Ray instance this
    build starts and stops (``num_cpus``: its CPUs; default all)."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None):
        self.address, self.num_cpus, self._ray = address, num_cpus, None
        if address:
            _check_reachable(address)       # before any work

    def __enter__(self):
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")     # no usage report from a build
        ray = extras.require("ray")
        kw = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                  configure_logging=True)
        ours = _signal_handlers()
        try:
            if self.address:
                ray.init(address=self.address, **kw)
            else:       # "local": a new instance, never a cluster started earlier on this machine
                ray.init(address="local", num_cpus=self.num_cpus, **kw)
        except (ConnectionError, RuntimeError, ValueError) as e:
            raise EdgedepthError(f"Ray cluster {self.address or '(local)'}: {' '.join(str(e).split())[:300]}") from None
        finally:
            _restore(ours)      # Ray's own SIGTERM handler aborts the process: Ctrl-C / SIGTERM stay ours
        self._ray = ray
        return self

    def __exit__(self, *exc):
        if self._ray is not None:
            self._ray.shutdown()        # a local instance: its processes stop; a cluster: disconnects
        return False

    def describe(self) -> dict:
        nodes = [n for n in self._ray.nodes() if n.get("Alive")]
        return {"executor": self.name, "address": self.address or "local", "nodes": len(nodes),
                "cpus": sum(n["Resources"].get("CPU", 0) for n in nodes)}

    def _check_fits(self, t: Task, most: int) -> None:
        """A job no node has the memory for (``most``: the largest node's) would wait forever: one line instead."""
        if t.spec.memory > most:
            raise EdgedepthError(f"job {t.spec.release} {t.spec.job.label} needs {t.spec.memory / 2**30:.1f} GiB "
                                 f"of memory and no node of the Ray cluster has more than {most / 2**30:.1f} GiB")

    def run(self, tasks: Iterable[Task], workdir: Callable[[Task], str], step, started=None,
            finished=lambda index: None) -> Iterator:
        """Submit each task as ``tasks`` gives it (the workers start while later ones are still being planned), then
        yield them as they finish.  A task that comes after another gets that task's result as an argument: Ray
        starts it once the other has finished and hands it the files (from the object store, to any node); after a
        job found in the build cache, the driver puts that job's files there."""
        ray = self._ray
        most = max((n["Resources"].get("memory", 0) for n in ray.nodes() if n.get("Alive")), default=0)
        remote = ray.remote(_remote_job)
        photos: dict[int, Any] = {}       # one copy of each release's photos in the object store
        refs: dict = {}
        by_index: dict = {}
        pending: list = []
        try:
            for t in tasks:
                self._check_fits(t, most)
                if id(t.items) not in photos:
                    photos[id(t.items)] = ray.put(_held(t.items))
                upstream = () if t.after is None else (by_index.get(t.after) or ray.put(_blobs(t, finished)),)
                ref = remote.options(num_cpus=1, memory=t.spec.memory, max_retries=MAX_RETRIES,
                                     retry_exceptions=False,
                                     name=" ".join(filter(None, ("edgedepth", t.spec.release, t.spec.job.label)))
                                     ).remote(t.spec, photos[id(t.items)], *upstream)
                refs[ref], by_index[t.index] = t, ref
                pending.append(ref)
                if started:
                    started(t)
            while pending:
                done, pending = ray.wait(pending, num_returns=1, timeout=WAIT_S)
                interrupt.check()
                for ref in done:
                    t = refs[ref]
                    result, blobs = self._result(ref, t)
                    folder = workdir(t)
                    _write_files(folder, blobs)
                    yield t, result, folder
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise

    def _result(self, ref, t: Task):
        ray = self._ray
        what = f"{t.spec.release + ' ' if t.spec.release else ''}{t.spec.job.label}"
        try:
            return ray.get(ref)
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if isinstance(getattr(e, "cause", None), BaseException) else e
            if isinstance(cause, EdgedepthError):
                raise EdgedepthError(f"{what}: {cause}") from None
            first = (str(cause).strip().splitlines() or [""])[-1]
            raise EdgedepthError(f"{what}: {type(cause).__name__}: {first[:300]}") from None
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError,
                ray.exceptions.OutOfMemoryError) as e:
            raise EdgedepthError(f"{what}: its worker died {MAX_RETRIES + 1} times "
                                 f"({type(e).__name__}); not released") from None


CONNECT_TIMEOUT_S = 10.0


def _signal_handlers() -> dict:
    """This process's Python handlers of the signals that end a command (``interrupt.SIGNALS``)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.getsignal(s) for s in interrupt.SIGNALS}


def _restore(handlers: dict) -> None:
    for s, h in handlers.items():
        if h is not None:
            signal.signal(s, h)


def _check_reachable(address: str) -> None:
    """One line when nothing answers at a cluster's ``HOST:PORT`` (``ray.init`` would retry for many minutes)."""
    host, _, port = address.split("://")[-1].rpartition(":")
    if address == "auto" or not host:
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except (OSError, ValueError) as e:
        raise EdgedepthError(f"Ray cluster {address}: nothing answers there ({getattr(e, 'strerror', None) or e}); "
                             "start it with `ray start --head`, or leave --ray-address out for a local Ray") from None


@dataclasses.dataclass(frozen=True)
class _HeldImage:
    """A gate photo carried by value (a worker on another node has not the file): ``id`` and the RGB pixels."""

    id: str
    pixels: Any

    def load(self):
        from PIL import Image

        return Image.fromarray(self.pixels.copy(), "RGB")


def _held(items) -> list[_HeldImage]:
    import numpy as np

    return [_HeldImage(it.id, np.asarray(it.load().convert("RGB"))) for it in items]


def _blobs(t: Task, finished) -> tuple[dict, dict[str, bytes]]:
    """What a Ray task returns, for the finished job ``t`` comes after: its result and its files' bytes."""
    folder, result = _inputs(t, finished)
    return result, _read_files(folder, result["files"])


def _read_files(folder: str, rels) -> dict[str, bytes]:
    """{rel: bytes} of the files ``rels`` under ``folder`` (a job's files, to go through Ray's object store)."""
    out = {}
    for rel in rels:
        with open(os.path.join(folder, rel), "rb") as f:
            out[rel] = f.read()
    return out


def _write_files(folder: str, blobs: dict[str, bytes]) -> None:
    """``blobs`` ({rel: bytes}, :func:`_read_files`) written under ``folder``, each atomically."""
    for rel, data in blobs.items():
        os.makedirs(os.path.dirname(os.path.join(folder, rel)), exist_ok=True)
        write_bytes_atomic(os.path.join(folder, rel), data)


def _remote_job(spec: JobSpec, items, upstream=None) -> tuple[dict, dict[str, bytes]]:
    """A Ray task: the job in a temporary folder of this worker, its files returned as bytes; ``upstream``: what the
    job it comes after returned (its files are written beside the job's folder first)."""
    import tempfile

    import ray

    ckpt = checkpoint_for(spec)
    with tempfile.TemporaryDirectory(prefix="edgedepth-job-") as root:
        after, work = None, os.path.join(root, "job")
        os.makedirs(work)
        if upstream is not None:
            after = (os.path.join(root, "after"), upstream[0])
            _write_files(after[0], upstream[1])
        result = run_job(spec, ckpt, items, work, lambda name: None, after)
        blobs = _read_files(work, result["files"])
    result["ran"]["node"] = ray.get_runtime_context().get_node_id()[:12]
    return result, blobs
