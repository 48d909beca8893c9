"""Which WebGPU adapter a headless Chromium gets, under several sets of launch flags (for a machine with a real GPU).

For each candidate flag set (``--candidates``, in order; ``CANDIDATES`` below) it launches ``--chromium`` through
Playwright, opens a blank page on a loopback HTTP server (a secure context, so ``navigator.gpu`` is exposed) and
records, read through ``page.evaluate``: the adapter ``requestAdapter({powerPreference: 'high-performance'})`` returns
(``adapter.info``: vendor / architecture / device / description / isFallbackAdapter, its features and limits), the one
``forceFallbackAdapter: true`` returns, whether a small compute shader gives the right answer on the first adapter,
the WebGL renderer string, and the browser's own GPU report (DevTools ``SystemInfo.getInfo``: GPU devices, feature
status, driver-bug workarounds: what chrome://gpu shows; chrome://gpu itself is tried too, headless shell has none)
plus the page's console. The chosen set is the first whose adapter is not a fallback (software) adapter and whose
compute check passed; ``--print-chosen`` prints its flags alone (for a shell script).

    python benchmarks/webgpu_diagnose.py --chromium /tmp/browser/chrome --out DIR/webgpu_diagnosis.json

Chromium 156 flags (what each does in a headless shell on Linux):
  --enable-unsafe-webgpu   exposes WebGPU where Chromium would not (Linux, blocklisted adapters, headless);
  --enable-gpu             headless forces SwiftShader for GL unless this is given (headless_mode_switches.h);
  --ignore-gpu-blocklist   GPU features on a GPU/driver the blocklist does not know (a VM's H200);
  --use-angle=vulkan       ANGLE (Chromium's GL) on Vulkan: no X display or EGL stack needed;
  --enable-features=Vulkan --disable-vulkan-surface   Chromium's compositor on Vulkan as well, no presentation
                           surface (the set the Chrome team published for headless GPU testing);
  --use-angle=gl-egl       ANGLE on the system EGL (NVIDIA's EGL through libglvnd).
Dawn (WebGPU) talks to Vulkan itself through the loader (``libvulkan.so.1`` beside the chromium binary), which finds
the driver from ``VK_ICD_FILENAMES`` / ``VK_DRIVER_FILES``.
"""

from __future__ import annotations

import argparse
import functools
import http.server
import json
import os
import shlex
import sys
import tempfile
import threading
import time

BASE = ["--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-quic", "--no-first-run", "--disable-dev-shm-usage", "--enable-logging=stderr"]
CANDIDATES = {
    "angle-vulkan": ["--enable-unsafe-webgpu", "--enable-gpu", "--ignore-gpu-blocklist", "--use-angle=vulkan"],
    "angle-vulkan-viz": ["--enable-unsafe-webgpu", "--enable-gpu", "--ignore-gpu-blocklist", "--use-angle=vulkan",
                         "--enable-features=Vulkan", "--disable-vulkan-surface"],
    "angle-egl": ["--enable-unsafe-webgpu", "--enable-gpu", "--ignore-gpu-blocklist", "--use-gl=angle",
                  "--use-angle=gl-egl"],
    "default": ["--enable-unsafe-webgpu"],
}

PROBE = r"""async () => {
  const r = {secureContext: isSecureContext, crossOriginIsolated, userAgent: navigator.userAgent,
             hasNavigatorGpu: !!navigator.gpu};
  const describe = (a) => {
    if (!a) return null;
    const info = {};
    for (const k of ['vendor', 'architecture', 'device', 'description', 'isFallbackAdapter', 'subgroupMinSize',
                     'subgroupMaxSize']) if (a.info && a.info[k] !== undefined) info[k] = a.info[k];
    const limits = {};
    for (const k in a.limits) limits[k] = a.limits[k];
    return {info, isFallbackAdapter: a.isFallbackAdapter ?? null, features: [...a.features].sort(), limits};
  };
  try {
    r.webglRenderer = (() => { const gl = document.createElement('canvas').getContext('webgl2');
      if (!gl) return null; const e = gl.getExtension('WEBGL_debug_renderer_info');
      return e ? gl.getParameter(e.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER); })();
  } catch (e) { r.webglRenderer = 'error: ' + e; }
  if (!navigator.gpu) return r;
  try { r.preferredCanvasFormat = navigator.gpu.getPreferredCanvasFormat(); } catch (e) {}
  let a = null;
  try { a = await navigator.gpu.requestAdapter({powerPreference: 'high-performance'}); }
  catch (e) { r.requestAdapterError = String(e); }
  r.adapter = describe(a);
  try { r.fallbackAdapter = describe(await navigator.gpu.requestAdapter({forceFallbackAdapter: true})); }
  catch (e) { r.fallbackAdapter = 'error: ' + e; }
  if (!a) return r;
  try {   // y[i] = x[i] * 2 + 1 over 1M floats on the adapter: the device works, and the answer is right
    const t0 = performance.now();
    const d = await a.requestDevice();
    const n = 1 << 20, x = new Float32Array(n).map((_, i) => i % 1000);
    const src = d.createBuffer({size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST});
    const dst = d.createBuffer({size: n * 4, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC});
    const rd = d.createBuffer({size: n * 4, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST});
    d.queue.writeBuffer(src, 0, x);
    const m = d.createShaderModule({code: `@group(0) @binding(0) var<storage, read> x: array<f32>;
      @group(0) @binding(1) var<storage, read_write> y: array<f32>;
      @compute @workgroup_size(256) fn main(@builtin(global_invocation_id) g: vec3u) {
        y[g.x] = x[g.x] * 2.0 + 1.0; }`});
    const p = d.createComputePipeline({layout: 'auto', compute: {module: m, entryPoint: 'main'}});
    const bg = d.createBindGroup({layout: p.getBindGroupLayout(0),
      entries: [{binding: 0, resource: {buffer: src}}, {binding: 1, resource: {buffer: dst}}]});
    const enc = d.createCommandEncoder(); const pass = enc.beginComputePass();
    pass.setPipeline(p); pass.setBindGroup(0, bg); pass.dispatchWorkgroups(n / 256); pass.end();
    enc.copyBufferToBuffer(dst, 0, rd, 0, n * 4); d.queue.submit([enc.finish()]);
    await rd.mapAsync(GPUMapMode.READ);
    const y = new Float32Array(rd.getMappedRange()); let bad = 0;
    for (let i = 0; i < n; i++) if (y[i] !== x[i] * 2 + 1) bad++;
    r.compute = {ok: bad === 0, wrong: bad, ms: performance.now() - t0};
    d.destroy();
  } catch (e) { r.compute = {ok: false, error: String(e)}; }
  return r;
}"""


def _blank_server() -> tuple[http.server.ThreadingHTTPServer, str]:
    d = tempfile.mkdtemp(prefix="webgpu_diag_")
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write("<!doctype html><meta charset=utf-8><title>webgpu diagnosis</title><p>diagnosis</p>")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=d))
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, f"http://127.0.0.1:{srv.server_address[1]}/"


def _system_info(browser) -> dict:
    s = browser.new_browser_cdp_session()
    info = s.send("SystemInfo.getInfo")
    aux = (info.get("gpu") or {}).get("auxAttributes") or {}
    for k in ("glExtensions", "glWsExtensions"):      # long lists, not evidence of which adapter is used
        if isinstance(aux.get(k), str):
            aux[k] = aux[k][:400] + ("..." if len(aux[k]) > 400 else "")
    return info


def probe(pw, chromium: str, args: list[str], url: str, timeout_s: float) -> dict:
    rec: dict = {"args": args}
    t = time.perf_counter()
    try:
        browser = pw.chromium.launch(executable_path=chromium, args=args, timeout=timeout_s * 1000)
    except Exception as e:  # noqa: BLE001 - recorded
        rec["error"] = f"launch: {type(e).__name__}: {str(e)[:1500]}"
        return rec
    console: list[str] = []
    try:
        rec["chromium_version"] = browser.version
        page = browser.new_page()
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        page.on("pageerror", lambda e: console.append(f"pageerror: {e}"))
        page.goto(url, timeout=timeout_s * 1000)
        page.set_default_timeout(timeout_s * 1000)
        rec["page"] = page.evaluate(PROBE)
        try:
            rec["system_info"] = _system_info(browser)
        except Exception as e:  # noqa: BLE001
            rec["system_info"] = f"error: {type(e).__name__}: {str(e)[:300]}"
        try:
            gp = browser.new_page()
            gp.goto("chrome://gpu", timeout=15000)
            gp.wait_for_timeout(1500)
            rec["chrome_gpu"] = gp.inner_text("body")[:60000]
        except Exception as e:  # noqa: BLE001
            rec["chrome_gpu"] = f"unavailable: {str(e).splitlines()[0][:200]}"
    except Exception as e:  # noqa: BLE001
        rec["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
    finally:
        rec["console"] = console[-200:]
        try:
            browser.close()
        except Exception:  # noqa: BLE001
            pass
    rec["seconds"] = round(time.perf_counter() - t, 1)
    return rec


def hardware(rec: dict) -> bool:
    """A real adapter: not a fallback/software one, and the compute check gave the right answer on it."""
    a = (rec.get("page") or {}).get("adapter") or {}
    info = a.get("info") or {}
    name = " ".join(str(info.get(k, "")) for k in ("vendor", "architecture", "device", "description")).lower()
    soft = info.get("isFallbackAdapter") or a.get("isFallbackAdapter") or any(
        s in name for s in ("swiftshader", "llvmpipe", "lavapipe", "software"))
    return bool(a) and not soft and bool(((rec.get("page") or {}).get("compute") or {}).get("ok"))


def summary(name: str, rec: dict) -> str:
    a = ((rec.get("page") or {}).get("adapter") or {})
    info = a.get("info") or {}
    c = (rec.get("page") or {}).get("compute") or {}
    if rec.get("error"):
        return f"{name:18} ERROR {rec['error'][:200]}"
    if not a:
        return f"{name:18} no adapter (navigator.gpu: {(rec.get('page') or {}).get('hasNavigatorGpu')})"
    return (f"{name:18} {info.get('vendor')!s}/{info.get('architecture')!s} {info.get('device') or ''} "
            f"{info.get('description') or ''} fallback={info.get('isFallbackAdapter')} compute_ok={c.get('ok')} "
            f"{len(a.get('features', []))} features maxBufferSize={a.get('limits', {}).get('maxBufferSize')}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chromium", default="/usr/bin/chromium", help="browser executable (or a wrapper script)")
    ap.add_argument("--candidates", default=",".join(CANDIDATES),
                    help=f"comma-separated flag sets to try, in order of preference (known: {', '.join(CANDIDATES)})")
    ap.add_argument("--extra-args", default="", help="more flags for every set (one string, shell-split)")
    ap.add_argument("--stop-at-first", action="store_true", help="stop once a set gives a hardware adapter")
    ap.add_argument("--timeout-s", type=float, default=60)
    ap.add_argument("--out", required=True, help="JSON written here")
    ap.add_argument("--print-chosen", action="store_true", help="print the chosen set's flags alone, last line")
    a = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    extra = shlex.split(a.extra_args)
    srv, url = _blank_server()
    env_keys = ("LD_LIBRARY_PATH", "VK_ICD_FILENAMES", "VK_DRIVER_FILES", "__EGL_VENDOR_LIBRARY_FILENAMES",
                "FONTCONFIG_FILE", "CHROME_STDERR")
    out = {"kind": "edgedepth.webgpu_diagnosis", "date": time.strftime("%Y-%m-%d %H:%M:%S"), "chromium": a.chromium,
           "env": {k: os.environ.get(k) for k in env_keys}, "base_args": BASE, "candidates": {}, "chosen": None}
    with sync_playwright() as pw:
        for name in [c for c in a.candidates.split(",") if c]:
            if name not in CANDIDATES:
                print(f"unknown candidate {name!r} (known: {', '.join(CANDIDATES)})", file=sys.stderr)
                return 2
            args = BASE + CANDIDATES[name] + extra
            if os.environ.get("CHROME_STDERR"):
                with open(os.environ["CHROME_STDERR"], "a") as f:
                    f.write(f"\n===== webgpu_diagnose candidate {name}: {' '.join(args)}\n")
            rec = out["candidates"][name] = probe(pw, a.chromium, args, url, a.timeout_s)
            rec["hardware"] = hardware(rec)
            print(summary(name, rec), flush=True)
            if rec["hardware"] and out["chosen"] is None:
                out["chosen"] = name
                out["chosen_args"] = ["--disable-dev-shm-usage"] + CANDIDATES[name] + extra
                if a.stop_at_first:
                    break
    srv.shutdown()
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print(f"chosen: {out['chosen'] or 'none (no hardware adapter under any set)'}; wrote {a.out}", flush=True)
    if a.print_chosen:
        print(" ".join(out.get("chosen_args") or []))
    return 0 if out["chosen"] else 3


if __name__ == "__main__":
    sys.exit(main())
