"""Webcam frames per second in the playground (issue 18, part 4): what a user pointing a camera at the page gets.

Headless Debian chromium with Chromium's fake camera (``--use-fake-device-for-media-stream``: a 640x480 moving test
pattern). Each variant is one page with its model loaded (wasm backend, the page's 2 threads). Method: ``--rounds``
interleaved rounds, the variants' order rotated by one each round; in its slot a variant starts the webcam, lets
``--warmup`` frames pass, then times ``--frames`` frames and stops. frames/s = (frames − 1) ÷ (time of the last timed
frame − time of the first), from the page's own frame timestamps (``edgedepth.video.frameTimes``, stamped when a frame
has been drawn). Per frame the page also records the model latency (input tensor + run + read-back) and its
preprocessing; the rest of a frame's time is grabbing the video frame, normalising/colouring/drawing the map (+ the
EMA when smoothing is on) and waiting for the next animation frame.

Variants: LiteRT.js on the release's default wasm file (518x686 FP32) and its smallest size (224x224 FP32, the one a
webcam user would pick for speed), ORT-web on the release's ``.onnx`` (518x686 FP32), and LiteRT.js 224x224 with
smoothing on (new-frame weight 0.3): the cost of the EMA.

    .venv/bin/python benchmarks/webcam_fps.py out/depth-anything-v2-small --rounds 3 --warmup 2 --frames 8

Output: ``benchmarks/results/webcam_fps.json`` -> BENCHMARKS.md "Browser" (report/md_browser.py).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shlex
import sys

import numpy as np

from playground_latency import machine_load, page_array

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "benchmarks", "results", "webcam_fps.json")


def _variants(manifest: dict, backend: str = "wasm", paths: str = "") -> list[dict]:
    """wasm (default): as before. webgpu: the manifest's recommended WebGPU file (else the FP32 518x686 .tflite), the
    smallest size in the precision of that file (else FP32), ORT-web on the .onnx of the big size (FP32, else any);
    a file the manifest does not list is left out. ``paths``: the given files instead (no smoothing variant)."""
    files = manifest["files"]
    if paths:
        by_path = {f["path"]: f for f in files if f.get("format") in ("tflite", "onnx")}
        out = []
        for p in [p for p in paths.split(",") if p]:
            e = by_path.get(p) or sys.exit(f"--files: {p} is not a .tflite/.onnx of manifest.json")
            rt = "litert" if e["format"] == "tflite" else "ort"
            out.append({"key": f"{'litertjs' if rt == 'litert' else 'ortweb'}:{e['size']}:{e['precision']}",
                        "runtime": rt, "entry": e, "smooth": None})
        return out + _webgpu_variants(out) if backend == "webgpu" else out
    pick = lambda fmt, size, prec="fp32": next((f for f in files if f.get("format") == fmt  # noqa: E731
                                                and f.get("size") == size and f.get("precision") == prec), None)
    listed = {f["path"] for f in files}
    rec = (manifest.get("recommended") or {}).get("webgpu" if backend == "webgpu" else "wasm", {}).get("path")
    big = rec if rec in listed else (pick("tflite", "518x686") or {}).get("path")
    big_entry = next(f for f in files if f["path"] == big)
    precs = [big_entry["precision"], "fp32"] if backend == "webgpu" else ["fp32"]
    small = min((f for f in files if f.get("format") == "tflite" and f.get("precision") == precs[0]
                 and f.get("input", {}).get("dtype", "float32") == "float32"),
                key=lambda f: np.prod(f["input"]["shape"]), default=None) or \
        min((f for f in files if f.get("format") == "tflite" and f.get("precision") in precs),
            key=lambda f: np.prod(f["input"]["shape"]))
    onnx = pick("onnx", big_entry["size"]) or (next((pick("onnx", big_entry["size"], q) for q in ("fp16", "int8")
                                                     if pick("onnx", big_entry["size"], q)), None)
                                               if backend == "webgpu" else None)
    out = [{"key": f"litertjs:{big_entry['size']}", "runtime": "litert", "entry": big_entry, "smooth": None}]
    if small["size"] != big_entry["size"]:       # a folder with only the big size: no small variants
        out += [{"key": f"litertjs:{small['size']}", "runtime": "litert", "entry": small, "smooth": None},
                {"key": f"litertjs:{small['size']}+smoothing", "runtime": "litert", "entry": small, "smooth": 0.3}]
    if onnx:
        out.append({"key": f"ortweb:{onnx['size']}", "runtime": "ort", "entry": onnx, "smooth": None})
    return out + _webgpu_variants(out) if backend == "webgpu" else out


def _webgpu_variants(out: list[dict]) -> list[dict]:
    """WebGPU: the same files with frames computed on the GPU ('+gpu-frames', ?gpuframes=1: LiteRT.js only, the one
    runtime with GPU frames) and with the read-back path's pipelining off ('+no-overlap')."""
    plain = [v for v in out if not v["smooth"]]
    return ([dict(v, key=f"{v['key']}+gpu-frames", gpu_frames=True) for v in plain if v["runtime"] == "litert"]
            + [dict(v, key=f"{v['key']}+no-overlap", overlap=False) for v in plain])


def frame_file(key: str) -> str:
    """The file name ``--frames-out`` gives a variant's last frame (benchmarks/gpu_frames_check.py finds it so)."""
    return key.replace(":", "_").replace("+", "_") + ".npz"


def _save_last_frame(page, v: dict, out_dir: str) -> None:
    """The page's last webcam frame after its stop (the loop has ended, so all belong to one frame): the model input
    and output, and with frames on the GPU the grabbed pixels the WGSL passes read."""
    import io

    from edgedepth.fsutil import write_bytes_atomic

    meta = page.evaluate("""() => { const f = edgedepth.video.lastFrame;
        return {gpu: edgedepth.video.gpuFrames === true, w: f ? f.width : null, h: f ? f.height : null,
                shape: edgedepth.lastOutputShape}; }""")
    arrays = {"input": page_array(page, "lastInput").reshape(v["entry"]["input"]["shape"]),
              "output": page_array(page, "lastOutput").reshape(meta["shape"]), "gpu_frames": np.array(meta["gpu"])}
    if meta["gpu"] and meta["w"]:      # the read-back path keeps no frame (its input is JS preprocessing, tested)
        arrays["rgba"] = page_array(page, "video.lastFrame.rgba").reshape(meta["h"], meta["w"], 4)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    os.makedirs(out_dir, exist_ok=True)
    write_bytes_atomic(os.path.join(out_dir, frame_file(v["key"])), buf.getvalue())
    print(f"{v['key']}: last frame saved (frames on the GPU: {meta['gpu']})", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("folder", help="release folder (manifest.json)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--frames", type=int, default=8)
    ap.add_argument("--out", default=RESULTS)
    ap.add_argument("--busy-pattern", default="family.py|pytest|recipes/")
    ap.add_argument("--backend", choices=("wasm", "webgpu"), default="wasm",
                    help="the page's backend (webgpu: a real GPU's browser, see benchmarks/devices/browser_device.sh)")
    ap.add_argument("--files", default="", help="comma-separated manifest paths to run instead of the default set")
    ap.add_argument("--chromium", default=None, help="browser executable or wrapper script (default /usr/bin/chromium)")
    ap.add_argument("--chromium-args", default="", help="more launch flags, one string (shell-split)")
    ap.add_argument("--frames-out", default=None,
                    help="after the rounds, save each LiteRT.js variant's last frame (grabbed pixels, model input, "
                         "output) to DIR/<variant>.npz for benchmarks/gpu_frames_check.py")
    a = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from edgedepth.fsutil import write_bytes_atomic
    from edgedepth.release import manifest as mf
    from edgedepth.serve import CHROMIUM, chromium_args, make_server, start_in_thread, url_of, wait_in_page
    from edgedepth.verify.bench import environment

    m = mf.load(a.folder)
    variants = _variants(m, a.backend, a.files)
    before = machine_load(a.busy_pattern)
    srv = make_server(a.folder, port=0)
    start_in_thread(srv)
    base = url_of(srv)
    per_frame_s = 1200
    with sync_playwright() as p:
        launch_args = chromium_args(webgpu=a.backend == "webgpu", fake_camera=True) + shlex.split(a.chromium_args)
        browser = p.chromium.launch(executable_path=a.chromium or CHROMIUM, args=launch_args)
        try:
            for v in variants:
                v["context"] = browser.new_context()
                page = v["page"] = v["context"].new_page()
                q = f"?runtime={v['runtime']}&backend={a.backend}&artifact={v['entry']['path']}"
                page.goto(base + q + (f"&smooth={v['smooth']}" if v["smooth"] else "")
                          + ("&overlap=0" if v.get("overlap") is False else "")
                          + ("&gpuframes=1" if v.get("gpu_frames") else "&gpuframes=0"))
                wait_in_page(page, "window.edgedepth && edgedepth.state !== 'starting'", 120)
                page.evaluate("edgedepth.load()")
                wait_in_page(page, "edgedepth.state === 'ready' || edgedepth.state === 'error'", per_frame_s)
                v.update(frames_ms=[], model_ms=[], preprocess_ms=[], fps_per_round=[])
                v["page_backend"] = page.evaluate("""() => ({backend: edgedepth.backend,
                    reason: edgedepth.backendReason,
                    adapter: edgedepth.adapter, adapterIsFallback: edgedepth.adapterIsFallback,
                    errors: edgedepth.errors})""")
                print(f"loaded {v['key']} ({v['entry']['path']}): {v['page_backend']}", flush=True)
            for r in range(a.rounds):
                for v in variants[r % len(variants):] + variants[:r % len(variants)]:
                    page = v["page"]
                    page.bring_to_front()     # a background page's requestAnimationFrame is throttled
                    page.evaluate("document.getElementById('webcam').click()")
                    wait_in_page(page, f"(edgedepth.video && edgedepth.video.frames >= {a.warmup + a.frames}) "
                                 "|| edgedepth.errors.length", per_frame_s)
                    page.evaluate("document.getElementById('webcam').click()")
                    wait_in_page(page, "edgedepth.webcam === 'stopped' && edgedepth.state === 'ready'", 120)
                    got = page.evaluate("""(n) => { const v = edgedepth.video; const k = v.frameTimes.length;
                        return {errors: edgedepth.errors, t: v.frameTimes.slice(k - n), pre: v.preprocessMs.slice(k - n),
                                model: edgedepth.latencies.slice(-n), backend: v.backend,
                                smoothing: edgedepth.smoothing, overlap: v.overlap === true,
                                gpuFrames: v.gpuFrames === true, gpuReason: v.gpuReason}; }""", a.frames)
                    if got["errors"]:
                        raise RuntimeError(f"{v['key']}: page error: {got['errors'][0]}")
                    t = np.asarray(got["t"])
                    v["frames_ms"] += np.diff(t).tolist()
                    v["model_ms"] += got["model"]
                    v["preprocess_ms"] += got["pre"]
                    v["fps_per_round"].append((len(t) - 1) * 1000 / (t[-1] - t[0]))
                    v["backend"], v["smoothing"], v["overlapped"] = got["backend"], got["smoothing"], got["overlap"]
                    v["gpu_frames_used"], v["gpu_frames_reason"] = got["gpuFrames"], got["gpuReason"]
                    print(f"round {r + 1}: {v['key']}: {v['fps_per_round'][-1]:.2f} frames/s", flush=True)
            if a.frames_out:
                for v in variants:
                    if v["runtime"] == "litert":
                        _save_last_frame(v["page"], v, a.frames_out)
            chromium = browser.version
        finally:
            browser.close()
    srv.shutdown()
    after = machine_load(a.busy_pattern)
    med = lambda x: float(np.median(x))  # noqa: E731
    rows = {}
    for v in variants:
        frame = med(v["frames_ms"])
        rows[v["key"]] = {
            "runtime": "LiteRT.js" if v["runtime"] == "litert" else "ONNX Runtime Web", "file": v["entry"]["path"],
            "size": v["entry"]["size"], "backend": v["backend"], "smoothing": v["smoothing"],
            "next_frame_prepared_during_gpu_run": v["overlapped"], "gpu_frames": v["gpu_frames_used"],
            "gpu_frames_reason": v["gpu_frames_reason"],
            "fps": 1000 / frame, "fps_per_round": v["fps_per_round"], "frame_ms_median": frame,
            "model_ms_median": med(v["model_ms"]), "preprocess_ms_median": med(v["preprocess_ms"]),
            "other_ms_median": frame - med(v["model_ms"]) - med(v["preprocess_ms"]), "n_frames": len(v["frames_ms"]),
            "precision": v["entry"].get("precision"), "adapter": v["page_backend"].get("adapter"),
            "adapter_is_fallback": v["page_backend"].get("adapterIsFallback"),
            "backend_reason": v["page_backend"].get("reason"),
        }
    env = environment()
    shared = bool(before["other_heavy_jobs"] or after["other_heavy_jobs"])
    out = {
        "method": (f"headless chromium {chromium}, fake camera 640x480, {a.backend}, {a.rounds} interleaved rounds x "
                   f"({a.warmup} warm-up + {a.frames} timed frames) per variant; frames/s = 1000 / median frame "
                   "interval (page timestamps when a frame is drawn); model = input tensor + run + read-back; other = "
                   "frame interval - model - preprocessing (grab, normalise/colour/draw, EMA, waiting for a frame); where the "
                   "next frame is prepared while the GPU runs (WebGPU; '+no-overlap' rows: the same file without it) "
                   "its preprocessing overlaps the model, so other is negative by up to that much; '+gpu-frames' rows "
                   "(frames computed on the GPU, web/gpuframes.js): model = frame queued -> its colours back (GPU "
                   "preprocessing + model + colouring + read-back of the colours, two frames in flight), preprocessing "
                   "= this thread's time to queue it"),
        "date": datetime.date.today().isoformat(), "cpu": env.get("cpu"), "cores": os.cpu_count(),
        "release": os.path.relpath(os.path.abspath(a.folder), ROOT),
        "checkpoint": (m.get("provenance") or {}).get("checkpoint"),
        "machine": {"shared": shared, "before": before, "after": after}, "variants": rows,
        "chromium_executable": a.chromium or CHROMIUM, "chromium_args": launch_args,
    }
    write_bytes_atomic(a.out, (json.dumps(out, indent=2) + "\n").encode())
    for k, r in rows.items():
        print(f"{k:28s} {r['fps']:5.2f} frames/s  frame {r['frame_ms_median']:.0f} ms = model {r['model_ms_median']:.0f}"
              f" + preprocessing {r['preprocess_ms_median']:.0f} + other {r['other_ms_median']:.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
