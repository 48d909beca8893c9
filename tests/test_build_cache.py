"""The build cache (edgedepth.release.cache) and the jobs it files (edgedepth.release.jobs): entries are whole or
absent, checked before use, shared safely by concurrent writers, capped by size; a job's key changes with anything
its bytes depend on; a re-run with one size added builds only that size's job; a build killed after a job landed
resumes from it.  The same bytes as the goldens throughout (tests/golden/release_sha256.json)."""

import dataclasses
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import run_cli
from edgedepth.errors import EdgedepthError

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
from record import PATH as GOLDEN_PATH, TINY_SECTION  # noqa: E402

KEY = "ab" + "0" * 62


def _job_folder(tmp_path, name="files", data=b"model bytes"):
    import hashlib

    folder = tmp_path / name
    (folder / "onnx").mkdir(parents=True)
    (folder / "m.tflite").write_bytes(data)
    (folder / "onnx" / "model.onnx").write_bytes(data[::-1])
    files = {"m.tflite": hashlib.sha256(data).hexdigest(), "onnx/model.onnx": hashlib.sha256(data[::-1]).hexdigest()}
    return folder, {"files": files, "entries": [], "ran": {}}


def test_put_get_and_checked_before_use(tmp_path):
    from edgedepth.release.cache import BuildCache

    cache = BuildCache(str(tmp_path / "c"))
    assert cache.get(KEY) is None
    folder, result = _job_folder(tmp_path)
    path = cache.put(KEY, str(folder), result)
    assert not (folder / "m.tflite").exists()               # moved in, not copied
    got = cache.get(KEY)
    assert got and got[0] == path and got[1]["files"] == result["files"]
    with open(os.path.join(path, "m.tflite"), "r+b") as f:   # one byte changed: never trusted, removed
        f.write(b"M")
    assert cache.get(KEY) is None and not os.path.exists(path)


@pytest.mark.parametrize("damage", ["no job.json", "truncated job.json", "file missing", "symlinked file",
                                    "other key", "path escapes"])
def test_partial_or_foreign_entries_are_rebuilt(tmp_path, damage):
    from edgedepth.release.cache import ENTRY, BuildCache

    cache = BuildCache(str(tmp_path / "c"))
    folder, result = _job_folder(tmp_path)
    path = cache.put(KEY, str(folder), result)
    entry = os.path.join(path, ENTRY)
    if damage == "no job.json":
        os.remove(entry)
    elif damage == "truncated job.json":
        data = open(entry, "rb").read()
        open(entry, "wb").write(data[: len(data) // 2])
    elif damage == "file missing":
        os.remove(os.path.join(path, "onnx", "model.onnx"))
    elif damage == "symlinked file":
        outside = tmp_path / "outside"
        outside.write_bytes(open(os.path.join(path, "m.tflite"), "rb").read())
        os.remove(os.path.join(path, "m.tflite"))
        os.symlink(outside, os.path.join(path, "m.tflite"))
    else:
        r = json.load(open(entry))
        if damage == "other key":
            r["key"] = "cd" + "0" * 62
        else:
            r["files"]["../../escape"] = r["files"].pop("m.tflite")
        json.dump(r, open(entry, "w"))
    assert cache.get(KEY) is None and not os.path.exists(path)
    folder, result = _job_folder(tmp_path, "again")
    cache.put(KEY, str(folder), result)
    assert cache.get(KEY) is not None
    assert os.path.exists(tmp_path / "outside") if damage == "symlinked file" else True   # never followed, never removed


def _writer(root, tmp, i, q):
    from edgedepth.release.cache import BuildCache

    cache = BuildCache(root)
    folder, result = _job_folder(tmp, f"w{i}", data=b"same bytes" * 10000)
    q.put(cache.put(KEY, str(folder), result))


def test_concurrent_writers_of_one_entry(tmp_path):
    from edgedepth.release.cache import BuildCache

    root = str(tmp_path / "c")
    BuildCache(root)
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=_writer, args=(root, tmp_path, i, q)) for i in range(4)]
    for p in ps:
        p.start()
    for p in ps:
        p.join(120)
    paths = {q.get(timeout=5) for _ in ps}
    assert len(paths) == 1 and all(p.exitcode == 0 for p in ps)
    assert BuildCache(root).get(KEY) is not None
    assert os.listdir(os.path.join(root, "tmp")) == []       # the losers' copies are gone


def test_lru_cap(tmp_path):
    from edgedepth.release.cache import BuildCache

    cache = BuildCache(str(tmp_path / "c"), max_bytes=25_000)
    keys = [f"{i:02x}" + "1" * 62 for i in range(3)]
    for i, k in enumerate(keys):
        folder, result = _job_folder(tmp_path, f"f{i}", data=bytes([i]) * 5000)     # 10 kB an entry
        cache.put(k, str(folder), result)
        os.utime(cache.path(k), (1000 + i, 1000 + i))
    cache.get(keys[0])              # used now: the newest
    assert cache.evict() == 1
    assert cache.get(keys[1]) is None and cache.get(keys[0]) and cache.get(keys[2])


def test_key_follows_what_the_bytes_depend_on():
    from edgedepth.release.build import plan
    from edgedepth.release.jobs import cache_key
    from edgedepth.release import load_recipe

    recipe = load_recipe(None).with_overrides(model="synthetic-tiny", sizes=["28x42", "56x70"], parity_images=1)
    specs = plan(recipe, gpu_check=False).specs
    keys = [s.key for s in specs]
    assert len(set(keys)) == len(keys)                          # every job its own address
    s = specs[0]
    assert cache_key(dataclasses.replace(s, release="elsewhere", model="/another/path", memory=1)) == s.key
    for change in (dict(state_dict_sha256="0" * 64), dict(rewrites="none"), dict(gpu_check=True),
                   dict(images_sha256=None), dict(model_name="mine"), dict(semantics="metres"), dict(stem="x")):
        assert cache_key(dataclasses.replace(s, **change)) != s.key, change


TINY = ["--model", "synthetic-tiny", "--formats", "litert", "--parity-images", "2", "--no-gpu-check", "--quiet"]


def _tiny_golden() -> dict:
    with open(GOLDEN_PATH) as f:
        return json.load(f)[TINY_SECTION]["sha256"]


def _hashes(folder) -> dict:
    import hashlib

    return {n: hashlib.sha256(open(os.path.join(folder, n), "rb").read()).hexdigest()
            for n in os.listdir(folder) if n.endswith(".tflite")}


def test_added_size_builds_only_its_job_and_killed_build_resumes(tmp_path):
    """28x42 built (the golden release's size) and killed (SIGKILL) once its first job is filed; the re-run resumes
    from the cache; a re-run with 56x70 added builds only 56x70's job.  LiteRT files equal the tiny goldens."""
    cache = str(tmp_path / "cache")
    cmd = [sys.executable, "-m", "edgedepth", "release", *TINY, "--sizes", "28x42", "--cache", cache]
    p = subprocess.Popen(cmd + ["--out", str(tmp_path / "killed")], stderr=subprocess.DEVNULL)
    end = time.time() + 600
    while time.time() < end and p.poll() is None and not _entries(cache):
        time.sleep(0.2)
    assert _entries(cache) == 1 and p.poll() is None, "the first job was not filed while the build ran"
    p.send_signal(signal.SIGKILL)
    p.wait()
    r = run_cli("release", *TINY, "--sizes", "28x42", "--cache", cache, "--out", tmp_path / "a",
                "--summary", tmp_path / "a.json")
    assert r.returncode == 0, r.stderr
    jobs = _jobs(tmp_path / "a.json")
    # the killed build's job (the first to run: 28x42's FP32 export), then those it did not finish
    assert [(j["job"], j["cached"]) for j in jobs] == [
        ("tflite 28x42 fp32", True), ("tflite 28x42 fp16", False), ("tflite 28x42 int8", False),
        ("tflite 28x42 uint8 pixel input", False)]
    golden = _tiny_golden()
    assert _hashes(tmp_path / "a") == {n: golden[n] for n in _hashes(tmp_path / "a")}
    r = run_cli("release", *TINY, "--sizes", "28x42,56x70", "--cache", cache, "--out", tmp_path / "b",
                "--summary", tmp_path / "b.json")
    assert r.returncode == 0, r.stderr
    assert [(j["job"], j["cached"]) for j in _jobs(tmp_path / "b.json")] == [
        (f"tflite {s}", s.startswith("28x42")) for s in ("28x42 fp32", "28x42 fp16", "28x42 int8",
                                                           "28x42 uint8 pixel input", "56x70 fp32", "56x70 fp16",
                                                           "56x70 int8")]
    assert {n: h for n, h in _hashes(tmp_path / "b").items() if "28x42" in n} == _hashes(tmp_path / "a")
    r = run_cli("release", *TINY, "--sizes", "28x42,56x70", "--cache", cache, "--out", tmp_path / "c", "--dry-run")
    assert r.returncode == 0 and "7 jobs, 7 in the build cache" in r.stdout, r.stdout
    assert not os.path.exists(tmp_path / "c")


def _entries(cache) -> int:
    return sum(len(os.listdir(os.path.join(cache, d))) for d in os.listdir(cache) if d != "tmp") \
        if os.path.isdir(cache) else 0


def _jobs(path) -> list[dict]:
    with open(path) as f:
        return [j for r in json.load(f)["releases"] for j in r["jobs"]]


def test_no_cache_and_bad_options(tmp_path):
    r = run_cli("release", *TINY, "--sizes", "28x42", "--cache-size", "lots", "--out", tmp_path / "x")
    assert r.returncode == 2 and r.stderr.strip().splitlines()[-1].startswith("edgedepth: error: --cache-size")
    r = run_cli("release", "--family", "depth-anything-4", "--out", tmp_path / "y")
    assert r.returncode == 2 and "--family 'depth-anything-4': choose from depth-anything-v2" in r.stderr
    r = run_cli("release", "--family", "depth-anything-3", "--model", "synthetic", "--out", tmp_path / "y")
    assert r.returncode == 2 and "--model names one release" in r.stderr
    assert not os.path.exists(tmp_path / "x") and not os.path.exists(tmp_path / "y")


class _Recording:
    """An executor of ``cpus`` slots that runs nothing: it records the order tasks reach it and what had been planned
    by then (``planned``: the plans a generator has made so far)."""

    def __init__(self, cpus: int, planned: list):
        self.cpus, self.planned, self.got = cpus, planned, []

    def describe(self) -> dict:
        return {"executor": "recording", "nodes": 1, "cpus": self.cpus}

    def run(self, tasks, workdir, step, started=None, finished=None):
        self.got += [(t.index, len(self.planned)) for t in tasks]
        yield from ()


def _fake_plans(tmp_path, planned: list):
    """Two releases of three jobs each (sizes in the recipe's order: small, large, middle) made one at a time."""
    from edgedepth.formats.base import Job
    from edgedepth.release.build import Plan
    from edgedepth.release.jobs import JobSpec, memory_bytes

    for r in ("a", "b"):
        specs = [JobSpec(r, Job("tflite", size, stages=3), None, "m", None, "0" * 64, "m", "default", False, None,
                         False, "relative", None, memory_bytes(1000)) for size in ("28x42", "280x420", "56x70")]
        p = Plan(None, None, ({}, None), [], specs, [3, 3, 3], staging=str(tmp_path / r / "staging"))
        planned.append(p)
        yield p


@pytest.mark.parametrize("cpus", [1, 2])
def test_jobs_go_out_as_each_plan_is_made_longest_first(tmp_path, cpus):
    """Each plan's jobs reach the executor before the next plan is made (workers start while the driver loads the
    next member); with several slots a plan's jobs go longest first, with one (serial) in the recipe's order."""
    from edgedepth.release.graph import run_graph

    planned = []
    ex = _Recording(cpus, planned)
    with pytest.raises(KeyError):          # the recording executor finishes nothing: no outputs to put together
        run_graph(_fake_plans(tmp_path, planned), ex, None, lambda name: None)
    order = [1, 2, 0] if cpus > 1 else [0, 1, 2]
    assert ex.got == [((0, i), 1) for i in order] + [((1, i), 2) for i in order]


def test_a_job_made_from_another_goes_out_after_it(tmp_path):
    """Precisions quantised from an FP32 file (``Job.after``) reach the executor after that file's job, whatever the
    estimates: longest chain first with two slots (the big size's chain, then the small one's), heads first with one."""
    from edgedepth.formats.base import precision_jobs
    from edgedepth.release.build import Plan
    from edgedepth.release.graph import run_graph
    from edgedepth.release.jobs import JobSpec, memory_bytes

    jobs = precision_jobs("tflite", "28x42", ("fp32", "fp16", "int8"), 1) + \
        precision_jobs("tflite", "280x420", ("int8", "fp32"), 1)
    assert [(j.label, j.after) for j in jobs] == [
        ("tflite 28x42 fp32", ""), ("tflite 28x42 fp16", "tflite 28x42 fp32"), ("tflite 28x42 int8", "tflite 28x42 fp32"),
        ("tflite 280x420 int8", "tflite 280x420 fp32"), ("tflite 280x420 fp32", "")]
    for cpus, order in ((1, [0, 4, 1, 2, 3]), (2, [4, 3, 0, 1, 2])):
        specs = [JobSpec("a", j, None, "m", None, "0" * 64, "m", "default", False, None, False, "relative", None,
                         memory_bytes(1000)) for j in jobs]
        ex = _Recording(cpus, [])
        with pytest.raises(KeyError):
            run_graph([Plan(None, None, ({}, None), [], specs, [2] * 5, staging=str(tmp_path / "s"))], ex, None,
                      lambda name: None)
        assert [i for (_, i), _ in ex.got] == order


class _Failing:
    """An executor that takes every task (so every member's folder is staged) and then fails, as a job would."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def describe(self) -> dict:
        return {"executor": "failing", "nodes": 1}

    def run(self, tasks, workdir, step, started=None, finished=None):
        from edgedepth.errors import EdgedepthError

        assert list(tasks)
        raise EdgedepthError("a job failed")
        yield


@pytest.mark.parametrize("existed", [False, True])
def test_failed_family_build_leaves_out_as_it_was(tmp_path, existed):
    """A family build that fails after staging its members removes the OUT folder it made (empty by then: each
    member's staging is gone), and leaves one that existed before, with what the user had in it."""
    from edgedepth.errors import EdgedepthError
    from edgedepth.release.family import build_family, member_recipes

    out = tmp_path / "zoo"
    if existed:
        out.mkdir()
        (out / "notes.txt").write_text("mine")
    recipes = member_recipes("depth-anything-v2", synthetic="tiny", sizes=["28x42"], parity_images=0)[:2]
    with pytest.raises(EdgedepthError, match="a job failed"):
        build_family(recipes, str(out), gpu_check=False, executor=_Failing())
    if existed:
        assert sorted(os.listdir(out)) == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    else:
        assert not os.path.lexists(out)
    assert sorted(os.listdir(tmp_path)) == (["zoo"] if existed else [])


def test_a_job_made_from_another_reuses_its_files_and_pytorch_outputs(tmp_path, monkeypatch):
    """The int8 job starts from the FP32 job's file and gates against the PyTorch outputs that job's gate computed
    (handed on in its result): PyTorch does not run again, and the int8 file is the one a whole export makes."""
    from edgedepth.release import load_recipe
    from edgedepth.release.build import plan
    from edgedepth.release.jobs import decode_references, run_job
    from edgedepth.runtimes.torch import TorchRunner

    r = load_recipe("recipes/depth-anything-v2-small.py").with_overrides(
        model="synthetic-tiny", sizes=["28x42"], parity_images=2, formats=["litert"])
    p = plan(r, gpu_check=False)
    labels = [s.job.label for s in p.specs]
    head, dep = p.specs[labels.index("tflite 28x42 fp32")], p.specs[labels.index("tflite 28x42 int8")]
    assert head.job.feeds and dep.job.after == head.job.label and not dep.job.feeds
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = run_job(head, p.ckpt, p.items, str(tmp_path / "a"), lambda n: None)
    refs = decode_references(first["references"])
    assert sorted(img for _, img in refs) == sorted(it.id for it in p.items)

    def no_pytorch(*a, **k):
        raise AssertionError("PyTorch ran again")

    monkeypatch.setattr(TorchRunner, "run_all", no_pytorch)
    second = run_job(dep, p.ckpt, p.items, str(tmp_path / "b"), lambda n: None, (str(tmp_path / "a"), first))
    assert list(second["files"]) == ["depth_anything_v2_small_28x42_int8.tflite"] and "references" not in second
    assert second["report"]["depth_anything_v2_small_28x42_int8.tflite"]["parity_cpu"]["pooled_rel_l2"] > 0
    with pytest.raises(EdgedepthError, match="starts from the files of job tflite 28x42 fp32"):
        run_job(dep, p.ckpt, p.items, str(tmp_path / "c"), lambda n: None)
