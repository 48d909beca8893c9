"""The newcomer path from the wheel, measured: what the wheel carries and how long each step takes.

    .venv/bin/python benchmarks/wheel_path.py [--out results/wheel_path.json]

Steps, each timed once (wall clock, this machine; orders of magnitude on a shared 2-core machine):
``python -m build --no-isolation`` (sdist, then the wheel from it) -> a fresh venv outside the repository -> ``pip
install --no-deps`` of the wheel (its dependencies: this venv's site-packages on its path, the same pins) ->
``edgedepth --version`` -> ``edgedepth release`` with the default recipe the wheel carries (tiny model) -> ``verify`` ->
``predict`` on the recommended .tflite and on the dynamic ONNX -> ``publish --dry-run`` -> ``serve`` answering the page
and one vendored runtime file.  Also: the wheel's and the sdist's bytes, and the bundle by part (recipes, records,
playground page, each browser runtime).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile

from lib import wheel as wheel_lib
from lib.machine import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TINY = ["--model", "synthetic-tiny", "--sizes", "28x42", "--parity-images", "2", "--quiet"]
PARTS = [("recipes", "recipes/"), ("committed records", "benchmarks/results/"),
         ("LiteRT.js", "web/node_modules/@litertjs/"),
         ("transformers.js (+ its ONNX Runtime Web wasm)", "web/node_modules/@huggingface/"),
         ("ONNX Runtime Web", "web/node_modules/onnxruntime-web/"), ("playground page", "web/")]


def _timed(rows: list, step: str, cmd: list[str], **kw) -> subprocess.CompletedProcess:
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, **kw)
    rows.append({"step": step, "seconds": round(time.perf_counter() - t, 2), "exit": r.returncode})
    print(f"{step:40s} {rows[-1]['seconds']:7.1f} s  exit {r.returncode}", flush=True)
    if r.returncode:
        raise SystemExit(f"{step} failed: {r.stderr[-2000:]}")
    return r


def _bundle_parts(wheel: str) -> list[dict]:
    with zipfile.ZipFile(wheel) as z:
        infos = [(i.filename.removeprefix("edgedepth/_bundled/"), i.file_size, i.compress_size)
                 for i in z.infolist() if i.filename.startswith("edgedepth/_bundled/")]
        code = [(i.file_size, i.compress_size) for i in z.infolist() if not i.filename.startswith("edgedepth/_bundled/")]
    out = [{"part": "edgedepth (code, metadata)", "files": len(code), "bytes": sum(a for a, _ in code),
            "compressed_bytes": sum(b for _, b in code)}]
    for part, prefix in PARTS:
        mine = [x for x in infos if x[0].startswith(prefix) and not any(
            x[0].startswith(p) for q, p in PARTS if p != prefix and p.startswith(prefix))]
        out.append({"part": part, "files": len(mine), "bytes": sum(x[1] for x in mine),
                    "compressed_bytes": sum(x[2] for x in mine)})
    return out


def main(argv=None) -> int:
    from edgedepth.fsutil import write_bytes_atomic

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "results", "wheel_path.json"))
    args = ap.parse_args(argv)
    steps: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        dist, venv, home = (os.path.join(tmp, n) for n in ("dist", "venv", "home"))
        os.mkdir(home)
        _timed(steps, "python -m build (sdist, wheel from it)", wheel_lib.build_command(ROOT, dist))
        wheel = next(os.path.join(dist, n) for n in os.listdir(dist) if n.endswith(".whl"))
        sdist = next(os.path.join(dist, n) for n in os.listdir(dist) if n.endswith(".tar.gz"))
        t = time.perf_counter()
        wheel_lib.make_venv(venv)
        steps.append({"step": "python -m venv (fresh, outside the repo)", "seconds": round(time.perf_counter() - t, 2),
                      "exit": 0})
        exe = os.path.join(venv, "bin", "edgedepth")
        kw = {"cwd": home, "env": wheel_lib.user_env(venv)}
        _timed(steps, "pip install --no-deps the wheel", wheel_lib.install_command(venv, wheel), **kw)
        version = _timed(steps, "edgedepth --version", [exe, "--version"], **kw).stdout.strip()
        rel = os.path.join(home, "depth-anything-v2-small-edgedepth")
        _timed(steps, "edgedepth release (default recipe, tiny)", [exe, "release", "--out", rel, *TINY], **kw)
        _timed(steps, "edgedepth verify", [exe, "verify", rel], **kw)
        m = json.load(open(os.path.join(rel, "manifest.json")))
        photo = os.path.join(ROOT, "tests", "vectors", "rgb_97x61.png")
        _timed(steps, "edgedepth predict (.tflite)", [exe, "predict", photo, "--model",
                                                      os.path.join(rel, m["recommended"]["cpu"]["path"]), "-o",
                                                      os.path.join(home, "a"), "--quiet"], **kw)
        _timed(steps, "edgedepth predict (dynamic ONNX)", [exe, "predict", photo, "--model",
                                                           os.path.join(rel, "onnx", "model.onnx"), "-o",
                                                           os.path.join(home, "b"), "--quiet"], **kw)
        dry = _timed(steps, "edgedepth publish --dry-run", [exe, "publish", rel, "you/depth-anything-v2-small-edgedepth",
                                                            "--dry-run"], **kw)
        t = time.perf_counter()
        srv = subprocess.Popen([exe, "serve", rel, "--port", "0", "--quiet"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, **kw)
        try:
            url = re.search(r"http://127\.0\.0\.1:\d+/", srv.stdout.readline()).group(0)
            page = urllib.request.urlopen(url, timeout=30).read()
            wasm = urllib.request.urlopen(url + "vendor/@litertjs/core/wasm/litert_wasm_internal.wasm",
                                          timeout=60).read()
        finally:
            srv.terminate()
            notes = srv.communicate(timeout=30)[1]
        steps.append({"step": "edgedepth serve: page + a LiteRT.js wasm", "seconds": round(time.perf_counter() - t, 2),
                      "exit": 0, "page_bytes": len(page), "wasm_bytes": len(wasm),
                      "notes": [l for l in notes.splitlines() if "note:" in l]})
        record = {"what": "the newcomer path from the wheel: what it carries, how long each step takes",
                  "method": __doc__.split("\n\n", 2)[2].strip().replace("\n", " "),
                  "date": datetime.date.today().isoformat(), "cpu": cpu_name(), "cores": os.cpu_count(),
                  "machine": platform.machine(), "python": platform.python_version(), "version": version,
                  "commit": subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                           text=True).stdout.strip(),
                  "wheel": {"name": os.path.basename(wheel), "bytes": os.path.getsize(wheel),
                            "parts": _bundle_parts(wheel)},
                  "sdist": {"name": os.path.basename(sdist), "bytes": os.path.getsize(sdist)},
                  "published_files": sum("-> http" in l for l in dry.stdout.splitlines()), "steps": steps}
    write_bytes_atomic(args.out, (json.dumps(record, indent=2) + "\n").encode())
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
