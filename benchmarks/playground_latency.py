"""Browser latency of the playground (web/) against the native runtimes, on one release folder (issue 18).

What is timed, on the same preprocessed input (the playground's own preprocessing of ``--photo``; the pages and Python
all get that one tensor, checked bit for bit):

* ``litertjs-wasm``   LiteRT.js (``@litertjs/core``) on wasm/XNNPACK in headless Debian chromium, on the release's
                      FP32 ``.tflite`` of ``--size`` (and the ``--extra`` precisions' files), the page's threads (2 here);
* ``ortweb-wasm``     ONNX Runtime Web on its wasm (CPU) execution provider, on the ``.onnx`` of the same size and
                      precision (``onnx/model.onnx`` for FP32), with the page's thread count (= LiteRT.js's);
* ``ai_edge_litert``  Python ``ai_edge_litert`` CPU, 2 threads (``edgedepth.runtimes.litert.LiteRTRunner``), each
                      ``.tflite`` above: the native reference of LiteRT.js;
* ``onnxruntime``     Python ``onnxruntime`` CPU, 2 threads (``edgedepth.runtimes.onnxruntime.OrtRunner``), the
                      ``.onnx`` above: the native reference of ORT-web;
* ``--webgpu``        LiteRT.js and ORT-web on WebGPU, which in this headless chromium is the *software adapter
                      (SwiftShader)* (``--enable-unsafe-webgpu``, the flag tests/test_playground.py uses): a CPU
                      emulation of a GPU, not a GPU number; a few calls only, after the wasm rounds. The adapter the
                      page reports is what the JSON and the labels say (``adapter_kind``).
* ``--webgpu-standalone``  the WebGPU variants alone (no wasm rounds, no Python timing; files the manifest lists),
                      with ``--chromium``/``--chromium-args`` for a browser on a real GPU: benchmarks/devices/browser_device.sh.

Method: every variant is loaded first (one page per browser variant, one process-local runner per native one). Then
``--rounds`` interleaved rounds; the order of the variants is rotated by one each round; in its slot a variant makes
``--warmup`` untimed calls then ``--iters`` timed calls. A call = write the input tensor + run + read the output back
(the page's ``edgedepth.benchmark()``, exactly what the playground shows as latency; preprocessing excluded). For
LiteRT.js the page also splits each call into write (``new Tensor``), run (``model.run``) and read (``toTypedArray``)
(``benchmark({split: true})``). Medians, p25/p75 (IQR) and each browser variant's ratio to its native reference are
reported; rel-L2 = ||a - b|| / ||b|| (float64) between the outputs of the same input: LiteRT.js vs Python LiteRT,
ORT-web vs Python ORT, and ORT-web vs LiteRT.js. Per page it records the threads each runtime runs with
(``edgedepth.runtime``), whether the page is cross-origin isolated, which wasm binaries it fetched (the threaded
relaxed-SIMD LiteRT.js build is ``litert_wasm_threaded_internal.wasm``; web/runtimes/litert.js loads it when the page is isolated
and the browser supports threads and relaxed SIMD) and the backend that actually ran (a WebGPU request can fall back).
The machine's load average and any other heavy job (``--busy-pattern``) seen before and after are recorded: a shared
machine is said so in the JSON.

Output: ``benchmarks/results/playground_latency.json`` (``--out``). Its ``files`` rows (one per ``.tflite`` timed on
LiteRT.js wasm, keyed by file name, with sha256/precision/size/``litertjs_wasm_median_ms``/``litertjs_p25_p75``/
``ai_edge_litert_cpu_median_ms``/``py_p25_p75``/``rel_l2``/``runtime``) keep the schema that
``edgedepth.release.build`` and benchmarks/report/make_benchmarks_md.py read; other files' rows already there are kept. The
``browser`` block holds every variant of this run, the comparisons and the method.

    .venv/bin/python benchmarks/playground_latency.py out/release --rounds 3 --warmup 1 --iters 3 [--webgpu]

Set-up as for tests/test_playground.py: ``npm ci --prefix web``, ``pip install playwright``, /usr/bin/chromium.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

from edgedepth.verify.parity import rel_l2

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "playground_latency.json")
PHOTO = os.path.join(ROOT, "tests", "vectors", "rgb_160x120.png")
THREADS = 2
SOFTWARE_ADAPTER = "software adapter (SwiftShader)"


def page_array(page, name: str) -> np.ndarray:
    """The typed array ``window.edgedepth.<name>`` of the page as numpy: float32, or uint8 for a one-byte array (the
    input of a ``_u8in`` file, an RGBA frame)."""
    got = page.evaluate(f"""() => {{ const a = window.edgedepth.{name};
        const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength); let s = '';
        for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode.apply(null, u.subarray(i, i + 0x8000));
        return {{b64: btoa(s), u8: a.BYTES_PER_ELEMENT === 1}}; }}""")
    return np.frombuffer(base64.b64decode(got["b64"]), dtype="u1" if got["u8"] else "<f4").copy()


def adapter_kind(name: str | None, fallback: bool | None) -> str:
    """How a WebGPU adapter is named in labels and the JSON: what the page reports (``edgedepth.adapter``: vendor,
    architecture, device, description of ``adapter.info``), SwiftShader keeping its historical wording."""
    if fallback and "swiftshader" in (name or "").lower():
        return SOFTWARE_ADAPTER
    if fallback:
        return f"software adapter ({name or 'unnamed'})"
    return f"hardware adapter ({name})" if name else "hardware adapter"


# ---------------------------------------------------------------------------------------------------- statistics

def stats(ms: list[float]) -> dict:
    a = np.asarray(ms, np.float64)
    if not len(a):
        return {"n": 0, "median_ms": None, "p25_ms": None, "p75_ms": None, "iqr_ms": None}
    p25, med, p75 = (float(v) for v in np.percentile(a, [25, 50, 75]))
    return {"n": int(len(a)), "median_ms": med, "p25_ms": p25, "p75_ms": p75, "iqr_ms": p75 - p25,
            "min_ms": float(a.min()), "max_ms": float(a.max())}


_TICK = os.sysconf("SC_CLK_TCK")


def _proc_stat(pid: str) -> tuple[int, str, float] | None:
    """(ppid, comm, utime + stime in s) of a process, from /proc."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            head, rest = f.read().rsplit(")", 1)
    except OSError:
        return None
    fields = rest.split()
    return int(fields[1]), head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / _TICK


def browser_cpu_s() -> float:
    """CPU seconds used so far by the chromium processes under this process (browser, renderers, GPU process)."""
    procs = {}
    for pid in os.listdir("/proc"):
        if pid.isdigit() and (st := _proc_stat(pid)):
            procs[int(pid)] = st
    mine, todo = set(), [os.getpid()]
    while todo:
        p = todo.pop()
        kids = [q for q, st in procs.items() if st[0] == p and q not in mine]
        mine.update(kids)
        todo += kids
    return sum(procs[q][2] for q in mine if "chrom" in procs[q][1].lower())


def own_cpu_s() -> float:
    t = os.times()
    return t.user + t.system


def add_round_ratios(records: dict, iters: int) -> None:
    """Per round: each interleaved variant's median (its ``iters`` timed calls of that round) and, where it has a
    native reference, the paired ratio of the two medians of the same round: robust to a load that changes from one
    round to the next (a shared machine), which the all-calls ratio is not."""
    for r in records.values():
        if r.get("backend") != "webgpu" and r.get("calls_ms"):
            c = r["calls_ms"]
            r["round_medians_ms"] = [float(np.median(c[i:i + iters])) for i in range(0, len(c), iters)]
    for r in records.values():
        ref = records.get(r.get("reference") or "", {})
        if r.get("round_medians_ms") and ref.get("round_medians_ms"):
            r["ratio_per_round"] = [a / b for a, b in zip(r["round_medians_ms"], ref["round_medians_ms"])]


def machine_load(pattern: str) -> dict:
    """Load average and the other heavy jobs running now (pgrep -f PATTERN, this process excluded)."""
    try:
        out = subprocess.run(["pgrep", "-af", pattern], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        out = ""
    jobs = [line for line in out.splitlines() if line and int(line.split()[0]) != os.getpid()]
    return {"loadavg_1_5_15": [round(v, 2) for v in os.getloadavg()], "other_heavy_jobs": jobs}


def wait_quiet(pattern: str, max_s: float, poll_s: float = 60) -> dict:
    """Wait (up to max_s) until no job matches ``pattern``. Returns what was seen."""
    t0 = time.time()
    while True:
        now = machine_load(pattern)
        if not now["other_heavy_jobs"] or time.time() - t0 >= max_s:
            return {**now, "waited_s": round(time.time() - t0), "quiet": not now["other_heavy_jobs"]}
        print(f"waiting for a quiet machine ({len(now['other_heavy_jobs'])} heavy job(s): "
              f"{now['other_heavy_jobs'][0][:80]}) ...", flush=True)
        time.sleep(poll_s)


# ---------------------------------------------------------------------------------------------------- variants

class Variant:
    key: str
    label: str
    engine: str             # litertjs | ortweb | ai_edge_litert | onnxruntime
    backend: str            # wasm | webgpu | cpu
    reference: str | None = None   # key of the native variant this one is compared with

    def __init__(self, entry: dict):
        self.entry = entry
        self.calls: list[float] = []
        self.split: list[dict] = []
        self.info: dict = {}
        self.output: np.ndarray | None = None
        self.error: str | None = None

    cpu_clock = staticmethod(own_cpu_s)

    def measure(self, warmup: int, iters: int) -> None:
        """warmup + iters calls; also the CPU time the runtime's processes used over the wall time (cores busy)."""
        c, t = self.cpu_clock(), time.perf_counter()
        self._measure(warmup, iters)
        self.cpu_s = getattr(self, "cpu_s", 0.0) + self.cpu_clock() - c
        self.wall_s = getattr(self, "wall_s", 0.0) + time.perf_counter() - t

    def _measure(self, warmup: int, iters: int) -> None:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def record(self) -> dict:
        e = self.entry
        r = {"label": self.label, "engine": self.engine, "backend": self.backend, "file": e["path"],
             "sha256": e["sha256"], "precision": e.get("precision"), "size": e.get("size"), **stats(self.calls),
             "calls_ms": [round(v, 2) for v in self.calls], **self.info}
        if self.split:
            r["split_median_ms"] = {k: float(np.median([s[k] for s in self.split])) for k in ("write", "run", "read")}
            r["split_ms"] = [{k: round(v, 2) for k, v in s.items()} for s in self.split]
        if getattr(self, "wall_s", 0):
            r["cores_busy"] = round(self.cpu_s / self.wall_s, 2)   # CPU s / wall s over its timed slots
        if self.error:
            r["error"] = self.error
        return r


class Native(Variant):
    """A Python runtime on this CPU (``self.runner`` on ``self.x``): timed per call with perf_counter."""

    def _measure(self, warmup, iters):
        for i in range(warmup + iters):
            t = time.perf_counter()
            self.runner.run(self.x)
            if i >= warmup:
                self.calls.append((time.perf_counter() - t) * 1000)

    def close(self):
        self.runner.close()


class NativeLiteRT(Native):
    engine, backend = "ai_edge_litert", "cpu"

    def __init__(self, folder: str, entry: dict, x: np.ndarray, threads: int = THREADS):
        super().__init__(entry)
        from edgedepth.runtimes.litert import LiteRTRunner

        tag = "" if threads == THREADS else f"-{threads}thread"
        self.key = f"ai_edge_litert-cpu{tag}:{entry['precision']}"
        self.label = (f"Python ai_edge_litert CPU, {threads} thread{'s' if threads > 1 else ''} "
                      f"({entry['precision'].upper()} .tflite)")
        self.runner = LiteRTRunner(os.path.join(folder, entry["path"]), "cpu", threads=threads)
        self.x = x.reshape(self.runner.input_shape)
        self.output = np.asarray(self.runner.run(self.x), np.float32).ravel()
        self.info = {"threads": threads}


class NativeOrt(Native):
    engine, backend = "onnxruntime", "cpu"

    def __init__(self, folder: str, entry: dict, x: np.ndarray):
        super().__init__(entry)
        import onnxruntime
        from edgedepth.runtimes.onnxruntime import OrtRunner

        self.key = f"onnxruntime-cpu:{entry['precision']}"
        self.label = f"Python onnxruntime CPU, {THREADS} threads ({entry['precision'].upper()} .onnx)"
        h, w = entry["input"]["shape"][2:]     # a dynamic-size file runs at the size its entry was verified at
        self.runner = OrtRunner(os.path.join(folder, entry["path"]), threads=THREADS, size=(h, w))
        self.x = x
        self.output = np.asarray(self.runner.run(self.x), np.float32).ravel()
        self.info = {"threads": THREADS, "version": onnxruntime.__version__}


class BrowserVariant(Variant):
    """One playground page (fresh browser context) with one model loaded and run once on the photo."""

    def __init__(self, browser, base: str, entry: dict, engine: str, backend: str, photo: str, timeout_s: float,
                 isolated: bool = True):
        super().__init__(entry)
        self.engine, self.backend = engine, backend
        mode = "litert" if engine == "litertjs" else "ort"
        self.mode = mode
        name = "LiteRT.js" if engine == "litertjs" else "ORT-web"
        where = "wasm" if backend == "wasm" else "WebGPU"     # + the adapter the page reports, once loaded
        self.key = f"{engine}-{backend}:{entry['precision']}"
        self.label = f"{name} {where} ({entry['precision'].upper()} {os.path.splitext(entry['path'])[1]})"
        self.reference = f"{'ai_edge_litert' if engine == 'litertjs' else 'onnxruntime'}-cpu:{entry['precision']}"
        self.context = browser.new_context()
        self.page = self.context.new_page()
        if not isolated:    # the page without COOP/COEP: not cross-origin isolated -> the single-threaded wasm build
            self.key = f"{engine}-{backend}-1thread:{entry['precision']}"
            self.label = f"{name} {where}, page not cross-origin isolated ({entry['precision'].upper()})"
            self.reference = self.reference.replace("-cpu:", "-cpu-1thread:")
            drop = ("cross-origin-opener-policy", "cross-origin-embedder-policy")

            def strip(route):
                resp = route.fetch()
                route.fulfill(response=resp, headers={k: v for k, v in resp.headers.items() if k.lower() not in drop})
            self.page.route(lambda url: url.split("?")[0] == base, strip)
        self.requests: list[str] = []
        self.console: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        from edgedepth.serve import wait_in_page

        self.page.goto(f"{base}?runtime={mode}&backend={backend}&artifact={entry['path']}")
        wait_in_page(self.page, "window.edgedepth && edgedepth.state !== 'starting'", 120)
        t = time.perf_counter()
        self.page.set_input_files("#file", photo)
        wait_in_page(self.page, "edgedepth.runs >= 1 || edgedepth.state === 'error'", timeout_s)
        st = self.page.evaluate("""() => { const E = edgedepth; return {state: E.state, errors: E.errors,
            backend: E.backend, backendReason: E.backendReason, adapter: E.adapter, adapterIsFallback: E.adapterIsFallback,
            runtime: E.runtime, lastLatencyMs: E.lastLatencyMs, ort: E.ort}; }""")
        if st["state"] == "error" or st["errors"]:
            raise RuntimeError(f"{self.label}: page error: {st['errors']}\n" + "\n".join(self.console[-15:]))
        features = self.page.evaluate("""async () => { try { const l = await import('@litertjs/core');
            return {threads: await l.supportsFeature('threads'), relaxedSimd: await l.supportsFeature('relaxedSimd')};
            } catch (e) { return {error: String(e)}; } }""")
        rt = st["runtime"] or {}
        wasm = sorted({u.split("?")[0].rsplit("/", 1)[-1] for u in self.requests if u.split("?")[0].endswith(".wasm")})
        self.info = {
            "backend_used": st["backend"], "backend_reason": st["backendReason"], "adapter": st["adapter"],
            "adapter_is_fallback": st["adapterIsFallback"],
            "threads": (rt.get("ort") or {}).get("threads") if engine == "ortweb" else rt.get("threads"),
            "runtime": rt, "cross_origin_isolated": rt.get("crossOriginIsolated"),
            "browser_supports": features, "wasm_fetched": wasm,
            "litertjs_threaded_relaxed_simd_build": "litert_wasm_threaded_internal.wasm" in wasm,
            "first_call_ms": st["lastLatencyMs"], "load_and_first_call_s": round(time.perf_counter() - t, 1)}
        if backend == "webgpu":
            self.info["adapter_kind"] = adapter_kind(st["adapter"], st["adapterIsFallback"])
            self.label = self.label.replace("WebGPU", f"WebGPU, {self.info['adapter_kind']}", 1)
        self.x = self.array("lastInput")
        self.output = self.array("lastOutput")

    def array(self, name: str) -> np.ndarray:
        return page_array(self.page, name)

    cpu_clock = staticmethod(browser_cpu_s)

    def _measure(self, warmup, iters):
        split = self.engine == "litertjs"
        got = self.page.evaluate("(o) => edgedepth.benchmark(o)",
                                 {"warmup": warmup, "iters": iters, "runtime": self.mode, "split": split})
        for g in got:
            if isinstance(g, dict):
                self.calls.append(g["ms"])
                self.split.append({k: g[k] for k in ("write", "run", "read")})
            else:
                self.calls.append(g)

    def close(self):
        self.context.close()


# ---------------------------------------------------------------------------------------------------- the run

def pick(manifest: dict, size: str, fmt: str, precision: str) -> dict | None:
    return next((f for f in manifest["files"] if f.get("format") == fmt and f.get("size") == size
                 and f.get("precision") == precision), None)


def webgpu_entries(manifest: dict, size: str, paths: str, tflite: dict | None, onnx: dict | None,
                   standalone: bool = False) -> list[dict]:
    """The manifest entries the WebGPU variants run: ``paths`` (comma-separated) if given; else the FP32 .tflite and
    .onnx of ``size`` (as before); ``standalone``: every one of these the manifest lists -- its recommended WebGPU
    .tflite, the FP32 .tflite of ``size``, the FP32 and FP16 .onnx of ``size``."""
    files = {f["path"]: f for f in manifest["files"] if f.get("format") in ("tflite", "onnx")}
    if paths:
        unknown = [p for p in paths.split(",") if p and p not in files]
        if unknown:
            raise SystemExit(f"--webgpu-files: not a .tflite/.onnx of manifest.json: {', '.join(unknown)}")
        return [files[p] for p in paths.split(",") if p]
    if not standalone:
        return [e for e in (tflite, onnx) if e]
    rec = files.get(((manifest.get("recommended") or {}).get("webgpu") or {}).get("path"))
    out = [rec, tflite, onnx, pick(manifest, size, "onnx", "fp16")]
    return [e for i, e in enumerate(out) if e and e not in out[:i]]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("folder", help="release folder (manifest.json with a .tflite and an .onnx of --size)")
    ap.add_argument("--size", help="HxW (default: the size of the manifest's first .onnx)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--iters", type=int, default=3)
    ap.add_argument("--extra", default="", help="comma-separated other precisions (int8,fp16) whose .tflite also runs "
                    "on LiteRT.js wasm + Python LiteRT in the rounds")
    ap.add_argument("--extra-rounds", type=int, default=None, help="rounds the --extra files take part in (default all)")
    ap.add_argument("--single-thread", action="store_true",
                    help="also LiteRT.js wasm on a page that is not cross-origin isolated (its single-threaded "
                         "build) and Python ai_edge_litert with 1 thread, FP32, in the rounds: thread scaling")
    ap.add_argument("--webgpu", action="store_true",
                    help=f"also LiteRT.js and ORT-web on WebGPU (here: {SOFTWARE_ADAPTER}; the adapter the page "
                         "reports is recorded)")
    ap.add_argument("--webgpu-standalone", action="store_true",
                    help="only the WebGPU variants, timed, with no wasm rounds and no Python runtime timing, written "
                         "as a fresh file to --out (which must not be the default): for a machine with a real GPU "
                         "and no ai_edge_litert; files not in the folder's manifest are skipped (see --webgpu-files)")
    ap.add_argument("--webgpu-files", default="",
                    help="comma-separated manifest paths of the WebGPU variants (a .tflite for LiteRT.js, an .onnx "
                         "for ORT-web); default: the FP32 .tflite and .onnx of --size, or, where the manifest does "
                         "not list them (--webgpu-standalone), its recommended WebGPU .tflite and the .onnx of --size "
                         "of the highest precision listed")
    ap.add_argument("--chromium", default=None, help="browser executable or wrapper script (default /usr/bin/chromium)")
    ap.add_argument("--chromium-args", default="",
                    help="more launch flags, one string (shell-split), after the default ones: e.g. for a real GPU "
                         "'--enable-gpu --ignore-gpu-blocklist --use-angle=vulkan' (benchmarks/webgpu_diagnose.py)")
    ap.add_argument("--webgpu-only", action="store_true",
                    help="only the WebGPU variants, merged into the browser block of --out (rel-L2 against the "
                         "native runtimes' outputs on the same input; no wasm or native timing)")
    ap.add_argument("--webgpu-load-timeout-s", type=float, default=600,
                    help="give up a WebGPU variant whose load + first call takes longer")
    ap.add_argument("--webgpu-warmup", type=int, default=1)
    ap.add_argument("--webgpu-iters", type=int, default=1)
    ap.add_argument("--webgpu-limit-s", type=float, default=120,
                    help="no timed WebGPU calls when the first call took longer than this")
    ap.add_argument("--photo", default=PHOTO)
    ap.add_argument("--out", default=RESULTS)
    ap.add_argument("--busy-pattern", default="family.py|pytest", help="pgrep -f pattern of jobs that load the CPU")
    ap.add_argument("--wait-quiet-s", type=float, default=0, help="wait up to this long for no --busy-pattern job")
    ap.add_argument("--load-timeout-s", type=float, default=900)
    a = ap.parse_args(argv)
    a.webgpu = a.webgpu or a.webgpu_only or a.webgpu_standalone
    if a.webgpu_standalone and (a.webgpu_only or os.path.abspath(a.out) == os.path.abspath(RESULTS)):
        print("--webgpu-standalone writes a fresh file: give --out (not the default) and no --webgpu-only",
              file=sys.stderr)
        return 2
    if a.webgpu_only and not (os.path.exists(a.out) and "browser" in json.load(open(a.out))):
        print(f"--webgpu-only merges into the browser block of {a.out}: run without it first", file=sys.stderr)
        return 2

    from playwright.sync_api import sync_playwright

    from edgedepth.release import manifest as mf
    from edgedepth.serve import CHROMIUM, chromium_args, make_server, start_in_thread, url_of
    from edgedepth.verify.bench import environment

    m = mf.load(a.folder)
    size = a.size or next(f["size"] for f in m["files"] if f.get("format") == "onnx")
    tfl = {p: pick(m, size, "tflite", p) for p in ["fp32", *[p for p in a.extra.split(",") if p]]}
    onnx = pick(m, size, "onnx", "fp32")
    missing = [f"{p} .tflite" for p, e in tfl.items() if not e] + ([] if onnx else ["fp32 .onnx"])
    if missing and not a.webgpu_standalone:
        print(f"{a.folder}: no {', '.join(missing)} of {size} in manifest.json", file=sys.stderr)
        return 2
    gpu_files = webgpu_entries(m, size, a.webgpu_files, tfl["fp32"], onnx, a.webgpu_standalone)
    if a.webgpu and not gpu_files:
        print(f"{a.folder}: no file for the WebGPU variants (--webgpu-files {a.webgpu_files!r})", file=sys.stderr)
        return 2
    launch_args = chromium_args(webgpu=a.webgpu) + shlex.split(a.chromium_args)

    before = wait_quiet(a.busy_pattern, a.wait_quiet_s) if a.wait_quiet_s else machine_load(a.busy_pattern)
    srv = make_server(a.folder, port=0)
    start_in_thread(srv)
    base = url_of(srv)
    variants: list[Variant] = []
    webgpu: list[Variant] = []
    refs_only: list[Variant] = []      # native runners for reference outputs only (--webgpu-only)
    failures: dict[str, str] = {}
    rounds_log = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=a.chromium or CHROMIUM, args=launch_args)
        try:
            n_extra = a.rounds if a.extra_rounds is None else a.extra_rounds
            shape = [int(v) for v in onnx["input"]["shape"]] if onnx else None
            if not (a.webgpu_only or a.webgpu_standalone):
                # Load: browser pages first (their preprocessing makes the input), then the native runners on that input.
                lj = {prec: BrowserVariant(browser, base, e, "litertjs", "wasm", a.photo, a.load_timeout_s)
                      for prec, e in tfl.items()}
                x = lj["fp32"].x
                ow = BrowserVariant(browser, base, onnx, "ortweb", "wasm", a.photo, a.load_timeout_s)
                for v in [*lj.values(), ow]:
                    assert np.array_equal(v.x, x), f"{v.label}: the page's input differs from the first page's"
                    print(f"loaded {v.label}: {v.info['threads']} threads, {v.info['wasm_fetched']}, first call "
                          f"{v.info['first_call_ms']:.0f} ms", flush=True)
                x = x.reshape(shape)
                native = [NativeLiteRT(a.folder, e, x) for e in tfl.values()] + [NativeOrt(a.folder, onnx, x)]
                variants = [lj["fp32"], ow, *native[:1], native[-1], *[lj[q] for q in tfl if q != "fp32"], *native[1:-1]]
                if a.single_thread:
                    one = BrowserVariant(browser, base, tfl["fp32"], "litertjs", "wasm", a.photo, a.load_timeout_s,
                                         isolated=False)
                    assert np.array_equal(one.x, x.ravel()), "the non-isolated page's input differs"
                    print(f"loaded {one.label}: {one.info['threads']} thread(s), {one.info['wasm_fetched']}, "
                          f"isolated {one.info['cross_origin_isolated']}", flush=True)
                    variants += [one, NativeLiteRT(a.folder, tfl["fp32"], x, threads=1)]
                extra_keys = {v.key for v in variants if v.entry["precision"] != "fp32"}
                for r in range(a.rounds):
                    order = variants[r % len(variants):] + variants[:r % len(variants)]
                    order = [v for v in order if v.key not in extra_keys or r < n_extra]
                    t = time.perf_counter()
                    for v in order:
                        v.measure(a.warmup, a.iters)
                    busy = machine_load(a.busy_pattern)["other_heavy_jobs"]
                    rounds_log.append({"order": [v.key for v in order], "s": round(time.perf_counter() - t, 1),
                                       "loadavg_1": round(os.getloadavg()[0], 2), "other_heavy_jobs": busy})
                    print(f"round {r + 1}/{a.rounds}: " + ", ".join(
                        f"{v.key} {np.median(v.calls):.0f}" for v in variants if v.calls), flush=True)
            if a.webgpu:
                for e in gpu_files:
                    engine = "litertjs" if e["format"] == "tflite" else "ortweb"
                    key = f"{engine}-webgpu:{e['precision']}"
                    try:
                        v = BrowserVariant(browser, base, e, engine, "webgpu", a.photo, a.webgpu_load_timeout_s)
                    except Exception as ex:    # noqa: BLE001 - recorded, the run goes on
                        failures[key] = (f"no result within {a.webgpu_load_timeout_s:.0f} s (load + first call)"
                                         if type(ex).__name__ == "TimeoutError" else
                                         f"{type(ex).__name__}: {str(ex)[:600]}")
                        print(f"{key}: {failures[key]}", flush=True)
                        continue
                    webgpu.append(v)
                    if variants and v.x.dtype == variants[0].x.dtype and not np.array_equal(v.x, variants[0].x):
                        v.error = "the page's input differs from the wasm pages' input"
                    first = v.info["first_call_ms"]
                    if v.info["backend_used"] != "webgpu":
                        v.error = f"ran on {v.info['backend_used']}: {v.info['backend_reason']}"
                    elif first > a.webgpu_limit_s * 1000:
                        v.error = f"first call {first / 1000:.0f} s > {a.webgpu_limit_s:.0f} s: no timed calls"
                    else:
                        v.measure(a.webgpu_warmup, a.webgpu_iters)
                    print(f"{v.label}: first call {first:.0f} ms, timed {v.calls} {v.error or ''}", flush=True)
                if a.webgpu_only and webgpu:
                    x = webgpu[0].x.reshape(shape)
                    refs_only = [NativeLiteRT(a.folder, tfl["fp32"], x), NativeOrt(a.folder, onnx, x)]
                if a.webgpu_standalone:     # CPU references of the same files where this machine has the runtime
                    for v in webgpu:
                        try:
                            cls = NativeLiteRT if v.engine == "litertjs" else NativeOrt
                            ref = cls(a.folder, v.entry, v.x.reshape(v.entry["input"]["shape"]))
                            ref.key = v.reference
                            refs_only.append(ref)
                        except Exception as ex:    # noqa: BLE001 - e.g. no ai_edge_litert here: recorded
                            failures[v.reference] = f"CPU reference: {type(ex).__name__}: {str(ex)[:300]}"
        finally:
            for v in [*variants, *webgpu, *refs_only]:
                try:
                    v.close()
                except Exception:    # noqa: BLE001
                    pass
            chromium_version = browser.version
            browser.close()
    srv.shutdown()
    srv.server_close()
    after = machine_load(a.busy_pattern)

    # ---------------------------------------------------------------- records
    by = {v.key: v for v in [*variants, *webgpu, *refs_only]}
    recs = {v.key: v.record() for v in [*variants, *webgpu]}
    for k in recs:
        v = by[k]
        ref = by.get(v.reference) if v.reference else None
        if ref is not None:
            r = recs[k]
            r["reference"] = ref.key
            r["rel_l2_vs_reference"] = rel_l2(v.output, ref.output)
            if r["median_ms"] and ref.calls:
                r["ratio_to_reference"] = r["median_ms"] / recs[ref.key]["median_ms"]
    add_round_ratios(recs, a.iters)
    comparisons = []

    def compare(ka, kb, what):
        if ka in by and kb in by:
            c = {"a": ka, "b": kb, "what": what, "rel_l2": rel_l2(by[ka].output, by[kb].output)}
            if recs.get(ka, {}).get("median_ms") and recs.get(kb, {}).get("median_ms"):
                c["ratio_median_a_over_b"] = recs[ka]["median_ms"] / recs[kb]["median_ms"]
            comparisons.append(c)

    compare("litertjs-wasm:fp32", "ai_edge_litert-cpu:fp32", "LiteRT.js wasm vs Python LiteRT CPU (same .tflite)")
    compare("ortweb-wasm:fp32", "onnxruntime-cpu:fp32", "ORT-web wasm vs Python ORT CPU (same .onnx)")
    compare("ortweb-wasm:fp32", "litertjs-wasm:fp32", "ORT-web wasm vs LiteRT.js wasm (FP32 .onnx vs FP32 .tflite)")
    kinds = sorted({v.info.get("adapter_kind") for v in webgpu if v.info.get("adapter_kind")})
    adapter_text = "; ".join(kinds) or SOFTWARE_ADAPTER
    lj = [v for v in webgpu if v.engine == "litertjs"]
    for vo in [v for v in webgpu if v.engine == "ortweb"]:     # vs the LiteRT.js file of the same precision
        vl = next((v for v in lj if v.entry["precision"] == vo.entry["precision"]), lj[0] if lj else None)
        if vl is not None:
            compare(vo.key, vl.key, f"ORT-web vs LiteRT.js on WebGPU ({adapter_text}; {vo.entry['path']} vs "
                                    f"{vl.entry['path']})")
    compare("onnxruntime-cpu:fp32", "ai_edge_litert-cpu:fp32", "Python ORT vs Python LiteRT (FP32 .onnx vs .tflite)")

    shared = bool(before["other_heavy_jobs"] or after["other_heavy_jobs"]
                  or any(r["other_heavy_jobs"] for r in rounds_log))
    env = environment(THREADS)
    counts = {"rounds": a.rounds, "warmup": a.warmup, "iters": a.iters}
    method = (f"headless Debian chromium {chromium_version}; one page per browser variant; same preprocessed input "
              f"(playground preprocessing of {os.path.relpath(a.photo, ROOT)}) for every variant; interleaved rounds "
              f"{a.rounds} x ({a.warmup} warm-up + {a.iters} timed calls) per variant, variant order rotated each "
              f"round; call = write input + run + read output (preprocessing excluded); LiteRT.js wasm and ORT-web "
              f"wasm with the page's threads vs Python ai_edge_litert CPU and onnxruntime CPU, {THREADS} threads")
    if a.single_thread:
        method += ("; thread scaling: LiteRT.js wasm on a page served without COOP/COEP (not cross-origin isolated: "
                   "the single-threaded build) and Python ai_edge_litert with 1 thread, FP32, in the same rounds")
    if a.extra and n_extra < a.rounds:
        method += f"; the {a.extra.upper()} files in the first {n_extra} round(s) only"
    emulated = ", a CPU emulation" if adapter_text == SOFTWARE_ADAPTER else ""
    webgpu_method = (f"WebGPU = {adapter_text}{emulated}, after the rounds: {a.webgpu_warmup} warm-up + "
                     f"{a.webgpu_iters} timed call(s), none when the first call exceeds {a.webgpu_limit_s:.0f} s")
    if a.webgpu_standalone:
        method = (f"headless chromium {chromium_version} ({a.chromium or CHROMIUM}); WebGPU variants only, one page "
                  f"each, input = the playground's preprocessing of {os.path.relpath(a.photo, ROOT)}; "
                  f"{webgpu_method.replace(', after the rounds', '')}; call = write input + run + read output "
                  "(preprocessing excluded); rel-L2 against the CPU runtime of the same file where this machine "
                  "has it (see failures)")
    if a.webgpu and not (a.webgpu_only or a.webgpu_standalone):
        method += "; " + webgpu_method
    if shared:
        method += "; the machine was SHARED with other heavy jobs during the run (see machine)"
    browser_block = {
        "method": method, "method_counts": counts, "size": size, "release": os.path.relpath(a.folder, ROOT),
        "checkpoint": (m.get("provenance") or {}).get("checkpoint"),
        "photo": os.path.relpath(a.photo, ROOT), "chromium": chromium_version,
        "chromium_args": launch_args, "chromium_executable": a.chromium or CHROMIUM,
        "webgpu_adapters": {v.key: {"adapter": v.info.get("adapter"), "is_fallback": v.info.get("adapter_is_fallback"),
                                    "kind": v.info.get("adapter_kind")} for v in webgpu},
        "cpu": env.get("cpu"), "cores": os.cpu_count(),
        "machine": {"shared": shared, "before": before, "after": after, "rounds": rounds_log},
        "variants": recs, "comparisons": comparisons, "failures": failures,
        "date": datetime.date.today().isoformat()}

    files = {}
    for prec, e in tfl.items():
        js, py = recs.get(f"litertjs-wasm:{prec}"), recs.get(f"ai_edge_litert-cpu:{prec}")
        if not (js and py and js["n"] and py["n"]):
            continue
        files[os.path.basename(e["path"])] = {
            "litertjs_wasm_median_ms": js["median_ms"], "litertjs_p25_p75": [js["p25_ms"], js["p75_ms"]],
            "ai_edge_litert_cpu_median_ms": py["median_ms"], "py_p25_p75": [py["p25_ms"], py["p75_ms"]],
            "n_js": js["n"], "n_py": py["n"], "rel_l2": js["rel_l2_vs_reference"], "runtime": js["runtime"],
            "litertjs_split_median_ms": js.get("split_median_ms"),
            "sha256": e["sha256"], "precision": e["precision"], "size": e.get("size")}

    rec = json.load(open(a.out)) if os.path.exists(a.out) and not a.webgpu_standalone else \
        {"kind": "edgedepth.playground_latency", "files": {}}
    if a.webgpu_only:   # merged into the last full run's browser block; files rows and method counts untouched
        b = rec["browser"]
        for r in recs.values():    # ratio to the native medians of the run merged into
            ref = b["variants"].get(r.get("reference"), {})
            if r["median_ms"] and ref.get("median_ms"):
                r["ratio_to_reference"] = r["median_ms"] / ref["median_ms"]
        comparisons = [c for c in comparisons if "webgpu" in c["a"] + c["b"]]
        b["variants"].update(recs)
        pairs = {(c["a"], c["b"]) for c in comparisons}
        b["comparisons"] = [c for c in b["comparisons"] if (c["a"], c["b"]) not in pairs] + comparisons
        b["failures"] = {**{k: v for k, v in b.get("failures", {}).items() if "webgpu" not in k}, **failures}
        b["chromium_args"] = launch_args
        b["method"] = b["method"].split("; WebGPU = ")[0] + f"; {webgpu_method} (a separate run, "
        b["method"] += f"{browser_block['date']}{', machine SHARED' if shared else ''})"
        b["machine"]["webgpu_run"] = {"shared": shared, "before": before, "after": after}
        files, browser_block = {}, b
    rec["files"].update(files)
    if a.webgpu_standalone:
        rec.update({"method": method, "date": browser_block["date"], "browser": browser_block})
    elif not a.webgpu_only:
        rec.update({"method_counts": counts, "cpu": env.get("cpu"), "date": browser_block["date"], "browser": browser_block,
                    "method": ("headless Debian chromium, LiteRT.js threaded wasm (2 threads, cross-origin isolated) vs "
                               "ai_edge_litert CPU 2 threads, same .tflite, same preprocessed input; interleaved rounds "
                               f"{a.rounds} x ({a.warmup} warm-up + {a.iters} timed), with ORT-web wasm and Python "
                               "onnxruntime in the same rounds (see browser); call = write input + run + read output"
                               + ("; machine shared with other heavy jobs" if shared else ""))})
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    from lib.records import attach as attach_records      # benchmarks/lib: the measurement records the release reads

    rec = attach_records(rec, a.out)
    with open(a.out + ".tmp", "w") as f:
        json.dump(rec, f, indent=1)
    os.replace(a.out + ".tmp", a.out)

    print(f"\n{'variant':58} {'median ms':>10} {'IQR':>8} {'ratio':>7} {'rel-L2':>9}")
    for r in recs.values():
        med = "–" if r["median_ms"] is None else f"{r['median_ms']:.0f}"
        iqr = "–" if r["iqr_ms"] is None else f"{r['iqr_ms']:.0f}"
        ratio = f"{r['ratio_to_reference']:.2f}" if r.get("ratio_to_reference") else "–"
        rl = f"{r['rel_l2_vs_reference']:.1e}" if "rel_l2_vs_reference" in r else "–"
        print(f"{r['label']:58} {med:>10} {iqr:>8} {ratio:>7} {rl:>9}" + (f"  {r['error']}" if r.get("error") else ""))
        if r.get("split_median_ms"):
            s = r["split_median_ms"]
            print(f"{'':4}split (median ms): write {s['write']:.1f}, run {s['run']:.1f}, read {s['read']:.1f}")
    for c in comparisons:
        print(f"{c['what']}: rel-L2 {c['rel_l2']:.2e}" +
              (f", ratio {c['ratio_median_a_over_b']:.2f}" if "ratio_median_a_over_b" in c else ""))
    print(("machine SHARED: " + "; ".join(before["other_heavy_jobs"] + after["other_heavy_jobs"])[:300]) if shared
          else "machine quiet (no other heavy job seen)")
    print("wrote", a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
