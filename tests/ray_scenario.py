"""Release builds on real Ray clusters, run by tests/test_cluster.py inside new network, PID and mount namespaces:

    unshare --net --pid --mount-proc --kill-child python tests/ray_scenario.py WORK

Only loopback exists in the namespace, so every Ray server listens on 127.0.0.1 (../shared/NOTES.md), and every
process started here dies with the namespace, also when this script or the test fails.  Phases, each result written
to WORK/results.json:

1. ``sigterm``: a build on a local Ray instance the build starts; SIGTERM to the driver while a job runs -> exit 143,
   no Ray process left, no release folder, no work folder.
2. a cluster: ``ray start --head`` and a second node (``ray start --address``), one CPU each;
   ``deterministic``: a job that fails on every attempt (a checkpoint other than the planned one) fails the build once
   with its one line; ``cold``: the tiny family (golden FAMILY_ARGS) with one worker killed (SIGKILL) mid-job;
   ``cached``: the same build again with the same cache; ``partial``: again after the precisions made from FP32
   files are dropped from the cache (the driver hands each the cached FP32 job's file through the object store).
"""

import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "golden"))
from record import FAMILY_ARGS  # noqa: E402

BIN = os.path.dirname(sys.executable)
PORT = 6390
TINY = ["--model", "synthetic-tiny", "--sizes", "28x42", "--formats", "litert", "--parity-images", "1",
        "--no-gpu-check", "--quiet"]


def ray_processes() -> list[str]:
    """Command lines of this namespace's Ray processes (workers, raylet, GCS)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cmd.startswith("ray::") or "raylet" in cmd or "gcs_server" in cmd or "ray/_private" in cmd:
            out.append(f"{pid} {cmd[:120]}")
    return out


def running_job(timeout: float, min_age: float = 0.0) -> tuple[int, str] | None:
    """(pid, title) of a Ray worker running an edgedepth job for at least ``min_age`` s, within ``timeout`` s."""
    seen: dict[int, float] = {}
    end = time.time() + timeout
    while time.time() < end:
        for line in ray_processes():
            pid, cmd = line.split(" ", 1)
            if cmd.startswith("ray::edgedepth"):
                first = seen.setdefault(int(pid), time.time())
                if time.time() - first >= min_age:
                    return int(pid), cmd.strip()
        time.sleep(0.2)
    return None


def edgedepth(*args, env) -> subprocess.Popen:
    return subprocess.Popen([os.path.join(BIN, "edgedepth"), "release", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(p: subprocess.Popen, timeout: float = 900) -> dict:
    out, err = p.communicate(timeout=timeout)
    return {"rc": p.returncode, "stdout": out[-3000:], "stderr": err[-3000:]}


def sigterm_phase(work: str, env: dict) -> dict:
    out = os.path.join(work, "sigterm")
    p = edgedepth(*TINY, "--no-cache", "--executor", "ray", "--out", out, env=env)
    job = running_job(240)
    p.send_signal(signal.SIGTERM)
    res = finish(p, 120)
    time.sleep(3)
    return {**res, "job_running_at_sigterm": job is not None, "left": ray_processes(),
            "folder": os.path.exists(out), "beside": sorted(n for n in os.listdir(work) if "sigterm" in n)}


def deterministic_phase(env: dict) -> dict:
    """A job whose checkpoint is not the planned one, on the cluster: one EdgedepthError, once."""
    code = f"""
import dataclasses, time
from edgedepth.errors import EdgedepthError
from edgedepth.release.build import plan
from edgedepth.release import load_recipe
from edgedepth.release.executors import RayCluster, Task
p = plan(load_recipe(None).with_overrides(model="synthetic-tiny", sizes=["28x42"], parity_images=0,
         formats=["litert"]), gpu_check=False)
spec = dataclasses.replace(p.specs[0], state_dict_sha256="0" * 64)
t0 = time.time()
with RayCluster("127.0.0.1:{PORT}") as ex:
    try:
        list(ex.run([Task(0, spec, None, [])], lambda t: "/nonexistent", lambda name: None))
        print("NO ERROR")
    except EdgedepthError as e:
        print("ERROR", round(time.time() - t0, 1), str(e))
"""
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    return {"rc": r.returncode, "stdout": r.stdout[-2000:], "stderr": r.stderr[-2000:]}


def drop_derived(cache: str) -> int:
    """Remove the build cache's entries of the precisions made from an FP32 file (their job.json lists no FP32
    file), keeping the FP32 jobs' entries; returns how many were removed."""
    import shutil

    n = 0
    for sub in os.listdir(cache):
        for key in os.listdir(os.path.join(cache, sub)) if sub != "tmp" else ():
            with open(os.path.join(cache, sub, key, "job.json")) as f:
                precisions = {e["precision"] for e in json.load(f)["entries"]}
            if "fp32" not in precisions and not any("u8in" in k for k in os.listdir(os.path.join(cache, sub, key))):
                shutil.rmtree(os.path.join(cache, sub, key))
                n += 1
    return n


def cluster_phases(work: str, env: dict) -> dict:
    ray = os.path.join(BIN, "ray")
    for args in (["--head", "--include-dashboard=false", "--disable-usage-stats", "--port", str(PORT)],
                 ["--address", f"127.0.0.1:{PORT}"]):
        r = subprocess.run([ray, "start", "--num-cpus", "1", *args], env=env, capture_output=True, text=True)
        if r.returncode:
            raise SystemExit(f"ray start {' '.join(args)}: {r.stderr[-2000:]}")
    res = {"deterministic": deterministic_phase(env)}
    cache, addr = os.path.join(work, "cache"), ["--executor", "ray", "--ray-address", f"127.0.0.1:{PORT}"]
    p = edgedepth(*FAMILY_ARGS, *addr, "--cache", cache, "--out", os.path.join(work, "cold"),
                  "--summary", os.path.join(work, "cold.json"), env=env)
    killed = running_job(600, min_age=3.0)
    if killed:
        os.kill(killed[0], signal.SIGKILL)
    res["cold"] = {**finish(p), "killed": killed}
    p = edgedepth(*FAMILY_ARGS, *addr, "--cache", cache, "--out", os.path.join(work, "cached"),
                  "--summary", os.path.join(work, "cached.json"), env=env)
    res["cached"] = finish(p)
    res["partial"] = {"dropped": drop_derived(cache)}
    p = edgedepth(*FAMILY_ARGS, *addr, "--cache", cache, "--out", os.path.join(work, "partial"),
                  "--summary", os.path.join(work, "partial.json"), env=env)
    res["partial"].update(finish(p))
    subprocess.run([ray, "stop", "--force"], env=env, capture_output=True)
    return res


def main(work: str) -> int:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    # the test's own token for every node and driver (Ray 2.60 authenticates cluster traffic), and a home of its own
    # (a local Ray writes ~/.ray/auth_token)
    home = os.path.join(work, "home")
    os.makedirs(home)
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "EDGEDEPTH_BUILD_CACHE": "off", "HOME": home,
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": os.urandom(32).hex()}
    env.pop("RAY_ADDRESS", None)
    results = {"sigterm": sigterm_phase(work, env)}
    results.update(cluster_phases(work, env))
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
