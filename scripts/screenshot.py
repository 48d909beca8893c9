"""Regenerate docs/screenshot.png: the playground on a release folder in compare mode (LiteRT.js and ONNX Runtime Web
on the same photo), in headless Debian chromium, with a JSON record of what it shows beside it.

    .venv/bin/python scripts/screenshot.py out/depth-anything-v2-small-edgedepth     # -> docs/screenshot.png + .json
    .venv/bin/python scripts/screenshot.py RELEASE -o out/playground.png    # what `make demo` does

The page chooses the files itself (the manifest's recommendation, as a user would get) and the backend with
``auto`` (WebGPU on a hardware adapter, else wasm with the reason shown). The JSON names those files with their
SHA-256s; tests/test_playground.py compares the committed docs/screenshot.json with the golden SHA-256 of the current
release, so a pipeline change that changes the file fails CI until this script is run again.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS_PNG = os.path.join(ROOT, "docs", "screenshot.png")
VIEWPORT = {"width": 1400, "height": 900}


def capture(folder: str, out_png: str, photo: str, timeout_s: float = 600) -> dict:
    """Open the playground on ``folder`` in compare mode, run ``photo``, hover the depth map, and write the page as
    ``out_png`` (+ ``.json``). Returns the JSON record. Raises EdgedepthError with one line on any page error."""
    from playwright.sync_api import sync_playwright

    from edgedepth.errors import EdgedepthError
    from edgedepth.fsutil import write_bytes_atomic
    from edgedepth.release import manifest as mf
    from edgedepth.serve import CHROMIUM, chromium_args, make_server, start_in_thread, url_of, wait_in_page

    manifest = mf.load(folder)
    srv = make_server(folder, port=0)     # checks the folder, LiteRT.js and ORT-web are installed
    start_in_thread(srv)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=chromium_args(webgpu=True))
            try:
                page = browser.new_page(viewport=VIEWPORT)
                page.goto(f"{url_of(srv)}?runtime=compare")
                wait_in_page(page, "window.edgedepth && edgedepth.state !== 'starting'", 60)
                if page.evaluate("edgedepth.mode") != "compare":
                    raise EdgedepthError(f"{folder}: the page cannot run compare mode (it needs a .tflite and an "
                                         f".onnx in manifest.json): {page.inner_text('#messages').strip()}")
                page.set_input_files("#file", photo)
                wait_in_page(page, "edgedepth.compare || edgedepth.errors.length", timeout_s)
                E = page.evaluate("""() => { const E = edgedepth; return {errors: E.errors, mode: E.mode,
                    artifact: E.artifact, backend: E.backend, backendReason: E.backendReason, adapter: E.adapter,
                    runtime: E.runtime, compare: E.compare, ort: E.ort && {artifact: E.ort.artifact,
                    backend: E.ort.backend, backendReason: E.ort.backendReason}}; }""")
                if E["errors"]:
                    raise EdgedepthError(f"the playground reported an error: {E['errors'][0]}")
                depth = page.locator("#depth")
                box = depth.bounding_box()
                depth.hover(position={"x": box["width"] * 0.5, "y": box["height"] * 0.4})   # the depth-at readout
                wait_in_page(page, "edgedepth.depthAt !== null", 10)
                png = page.screenshot(full_page=True)
                chromium = browser.version
            finally:
                browser.close()
    finally:
        srv.shutdown()
        srv.server_close()

    by_path = {f["path"]: f for f in manifest["files"]}

    def shown(path: str) -> dict:
        f = by_path[path]
        return {"path": path, "sha256": f["sha256"], "ops": f.get("ops"), "precision": f.get("precision"),
                "gpu_fully_delegated": f.get("gpu_fully_delegated")}

    c = E["compare"]
    record = {
        "what": "the edgedepth playground in compare mode (made by scripts/screenshot.py)",
        "release": os.path.relpath(os.path.abspath(folder), ROOT),
        "checkpoint": (manifest.get("provenance") or {}).get("checkpoint"),
        "photo": os.path.basename(photo),
        "litert": {**shown(c["litert"]["artifact"]), "backend": c["litert"]["backend"], "ms": round(c["litert"]["ms"], 1),
                   "backend_reason": E["backendReason"]},
        "ort": {**shown(c["ort"]["artifact"]), "backend": c["ort"]["backend"], "ms": round(c["ort"]["ms"], 1),
                "backend_reason": E["ort"]["backendReason"]},
        "rel_l2": c["relL2"], "max_abs": c["maxAbs"],
        "adapter": E["adapter"], "runtime": E["runtime"], "chromium": chromium,
        "viewport": VIEWPORT, "date": datetime.date.today().isoformat(),
        "png_sha256": hashlib.sha256(png).hexdigest(),
    }
    os.makedirs(os.path.dirname(os.path.abspath(out_png)), exist_ok=True)
    write_bytes_atomic(out_png, png)
    write_bytes_atomic(os.path.splitext(out_png)[0] + ".json", (json.dumps(record, indent=2) + "\n").encode())
    return record


def main(argv: list[str] | None = None) -> int:
    from edgedepth.errors import EdgedepthError
    from edgedepth.samples import sample_photo

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("release", help="release folder (manifest.json with a .tflite and an .onnx)")
    ap.add_argument("-o", "--out", default=DOCS_PNG, help="PNG to write; the record goes beside it as .json "
                                                           "(default: docs/screenshot.png)")
    ap.add_argument("--photo", default=None, help="photo to run (default: matplotlib's grace_hopper.jpg)")
    a = ap.parse_args(argv)
    try:
        photo = a.photo or sample_photo()
        if not os.path.isfile(photo):
            raise EdgedepthError(f"no such photo: {photo}")
        r = capture(a.release, a.out, photo)
    except EdgedepthError as e:
        print(f"edgedepth: error: {e}", file=sys.stderr)
        return 2
    print(f"{a.out}: compare mode, {r['litert']['path']} on {r['litert']['backend']} {r['litert']['ms']} ms, "
          f"{r['ort']['path']} on {r['ort']['backend']} {r['ort']['ms']} ms, rel-L2 {r['rel_l2']:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
