"""Browser playground (``edgedepth serve`` + web/): server, preprocessing parity, LiteRT.js and ONNX Runtime Web on wasm
and WebGPU, compare mode.

Headless Debian chromium through Playwright (never a downloaded browser). WebGPU runs on SwiftShader with
``--enable-unsafe-webgpu``; without it ``requestAdapter()`` returns null (the no-adapter path). Set-up:
``npm ci --prefix web`` (LiteRT.js, ONNX Runtime Web) and ``pip install playwright`` (requirements.txt); a missing piece
fails the tests.
FP32 parity follows conftest's policy: the browser's output is compared with a float64 PyTorch run of the same model
on the same input, within FP32_NOISE_FACTOR of PyTorch FP32's own error.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from edgedepth.serve import CHROMIUM, chromium_args, wait_in_page

from conftest import (FP32_NOISE_FACTOR, FULL_SIZE, TINY_SIZE, assert_within_fp32_noise, float64_reference, rel_l2,
                      torch_fp32, vulkan_problem)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VECTORS = os.path.join(ROOT, "tests", "vectors")
WEB = os.path.join(ROOT, "web")
PHOTO = os.path.join(VECTORS, "rgb_97x61.png")


def _prerequisites() -> str | None:
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright is not installed (pip install -r requirements.txt)"
    if not os.path.exists(CHROMIUM):
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    if not os.path.isdir(os.path.join(WEB, "node_modules", "@litertjs", "core", "wasm")):
        return "LiteRT.js is not installed: run `npm ci --prefix web`"
    if not os.path.isdir(os.path.join(WEB, "node_modules", "onnxruntime-web", "dist")):
        return "ONNX Runtime Web is not installed: run `npm ci --prefix web`"
    return vulkan_problem()     # release folders record gpu_check (LiteRT's GPU accelerator on SwiftShader)


@pytest.fixture(scope="module", autouse=True)
def _require_browser_stack():
    problem = _prerequisites()
    if problem:
        pytest.fail(f"playground tests cannot run: {problem}", pytrace=False)


# ---------------------------------------------------------------------------------------------------- release folders

def _write_release(folder: str, paths: dict[str, str], size: tuple[int, int], *, gpu_check: bool = True,
                   model: dict | None = None, onnx: dict[str, str] | None = None) -> dict:
    """Copy .tflite files (``paths``: {precision: file}) and .onnx files (``onnx``: {precision: file}, at the release
    layout's onnx/model*.onnx, format "onnx") into ``folder`` and write its manifest.json (schema of
    edgedepth.release.manifest).  Returns the entries: .tflite by precision, .onnx as ``onnx_<precision>``."""
    from edgedepth.formats import onnx as onnxfmt
    from edgedepth.formats.tflite import describe
    from edgedepth.formats.tflite import gpu_check as run_gpu_check
    from edgedepth.release import manifest as mf
    from edgedepth.release.build import ONNX_LAYOUT

    os.makedirs(folder, exist_ok=True)
    entries = {}
    for key, src in paths.items():           # key: the precision; "<precision>_u8in" for a uint8-input file
        precision = key.removesuffix("_u8in")
        name = os.path.basename(src)
        dst = os.path.join(folder, name)
        if os.path.abspath(src) != os.path.abspath(dst):
            shutil.copyfile(src, dst)
        delegated = run_gpu_check(dst)["fully_delegated"] if gpu_check else None
        info = describe(dst)
        entries[key] = mf.file_entry(folder, name, format="tflite", precision=precision,
                                           size=f"{size[0]}x{size[1]}",
                                           **mf.io_contract(*size, input_dtype=info["inputs"][0]["dtype"]),
                                           ops=info["ops"], gpu_fully_delegated=delegated)
    for precision, src in (onnx or {}).items():
        rel = ONNX_LAYOUT[precision]
        os.makedirs(os.path.join(folder, os.path.dirname(rel)), exist_ok=True)
        shutil.copyfile(src, os.path.join(folder, rel))
        entries[f"onnx_{precision}"] = mf.file_entry(
            folder, rel, format="onnx", runtime="onnxruntime", precision=precision, size=f"{size[0]}x{size[1]}",
            **mf.io_contract(*size, onnxfmt.INPUT_NAME, onnxfmt.OUTPUT_NAME),
            ops=onnxfmt.describe(os.path.join(folder, rel))["ops"])
    mf.write(folder, {"name": "playground-test", "files": list(entries.values()), **({"model": model} if model else {})})
    return entries


@pytest.fixture(scope="module")
def tiny_release(tmp_path_factory, tiny_plain_export):
    """synthetic-tiny 56x70, plain conversion, FP32 + INT8 (not fully GPU-delegated: BROADCAST_TO, GATHER_ND)."""
    folder = str(tmp_path_factory.mktemp("pg_tiny"))
    entries = _write_release(folder, dict(tiny_plain_export), TINY_SIZE)
    return {"folder": folder, "entries": entries,
            "paths": {p: os.path.join(folder, e["path"]) for p, e in entries.items()}}


@pytest.fixture(scope="module")
def gpu_release(tmp_path_factory, tiny_ckpt):
    """synthetic-tiny 56x70 after edgedepth's GPU rewrites: fully delegated to LiteRT's GPU accelerator."""
    from edgedepth.checkpoint import DepthModule
    from edgedepth.rewrites import apply_rewrites
    from edgedepth.formats import tflite as litert

    work = str(tmp_path_factory.mktemp("pg_gpu_export"))
    model, _ = apply_rewrites(tiny_ckpt.model, *TINY_SIZE)
    paths = litert.export(DepthModule(model), *TINY_SIZE, work, ("fp32",))
    folder = str(tmp_path_factory.mktemp("pg_gpu"))
    entries = _write_release(folder, paths, TINY_SIZE)
    return {"folder": folder, "entries": entries, "paths": {"fp32": os.path.join(folder, entries["fp32"]["path"])}}


@pytest.fixture(scope="module")
def ort_release(tmp_path_factory, tiny_ckpt, gpu_release):
    """synthetic-tiny 56x70 as ONNX FP32 (ONNX's default rewrites) at onnx/model.onnx, beside gpu_release's LiteRT FP32
    file (GPU rewrites), in one manifest: what ONNX Runtime Web and compare mode run."""
    from edgedepth import formats

    work = str(tmp_path_factory.mktemp("pg_ort_export"))
    (exported,) = formats.export(tiny_ckpt.model, *TINY_SIZE, work, target_name="onnx", precisions=("fp32",))
    folder = str(tmp_path_factory.mktemp("pg_ort"))
    entries = _write_release(folder, {"fp32": gpu_release["paths"]["fp32"]}, TINY_SIZE, gpu_check=False,
                             onnx={"fp32": exported.path})
    return {"folder": folder, "entries": entries, "onnx": entries["onnx_fp32"],
            "paths": {k: os.path.join(folder, e["path"]) for k, e in entries.items()}}


@pytest.fixture(scope="module")
def metric_release(tmp_path_factory):
    """synthetic-tiny-metric-outdoor 56x70 FP32 (GPU rewrites): a metric release (manifest ``model`` block, metres)."""
    from edgedepth import formats
    from edgedepth.checkpoint import load_checkpoint
    from edgedepth.release.build import _model_info
    from edgedepth.release.recipe import load_recipe

    ckpt = load_checkpoint("synthetic-tiny-metric-outdoor", quiet=True)
    work = str(tmp_path_factory.mktemp("pg_metric_export"))
    files = formats.export(ckpt.model, *TINY_SIZE, work, precisions=("fp32",), stem=ckpt.file_stem)
    folder = str(tmp_path_factory.mktemp("pg_metric"))
    model = _model_info(ckpt, load_recipe("recipes/depth-anything-v2-metric-outdoor-small.py"))
    entries = _write_release(folder, {"fp32": files[0].path}, TINY_SIZE, gpu_check=False, model=model)
    return {"folder": folder, "entry": entries["fp32"], "max_depth": ckpt.member.max_depth}


# ---------------------------------------------------------------------------------------------------- server + browser

@pytest.fixture
def serve_folder():
    """serve_folder(folder) -> base URL of a running playground server (stopped after the test)."""
    from edgedepth.serve import make_server, start_in_thread, url_of

    servers = []

    def start(folder: str, **kw) -> str:
        srv = make_server(folder, port=0, **kw)
        start_in_thread(srv)
        servers.append(srv)
        return url_of(srv)

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def pw():
    from playwright.sync_api import sync_playwright

    p = sync_playwright().start()
    yield p
    p.stop()


@pytest.fixture(scope="module")
def browser(pw):
    """Chromium with WebGPU enabled (SwiftShader here)."""
    b = pw.chromium.launch(executable_path=CHROMIUM, args=chromium_args(webgpu=True))
    yield b
    b.close()


class Page:
    """A page of the playground in a fresh browser context (empty Cache Storage), with its requests and console."""

    def __init__(self, browser, url: str, **context_kw):
        self.context = browser.new_context(**context_kw)
        self.page = self.context.new_page()
        self.requests: list[str] = []
        self.console: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: self.console.append(f"{m.type}: {m.text}"))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.goto(url)

    def goto(self, url: str) -> None:
        self.page.goto(url)
        self.wait("window.edgedepth && window.edgedepth.state !== 'starting'", 60)

    def state(self) -> dict:
        return self.page.evaluate("""() => { const E = window.edgedepth || {};
            return {state: E.state, backend: E.backend, backendReason: E.backendReason, adapter: E.adapter,
                    source: E.source, downloads: E.downloads, runs: E.runs, errors: E.errors, messages: E.messages,
                    lastLatencyMs: E.lastLatencyMs, webcam: E.webcam, maxDepth: E.maxDepth, mode: E.mode,
                    artifact: E.artifact, runtime: E.runtime, ort: E.ort, compare: E.compare}; }""")

    def wait(self, expr: str, timeout_s: float = 120) -> None:
        try:
            wait_in_page(self.page, expr, timeout_s)   # not wait_for_function: the page's CSP forbids its eval
        except Exception as e:
            raise AssertionError(f"timed out waiting for {expr!r}: {e}\nstate: {self.state()}\nconsole (last 25):\n"
                                 + "\n".join(self.console[-25:])) from None

    def run_photo(self, path: str = PHOTO, timeout_s: float = 120) -> dict:
        runs = self.page.evaluate("edgedepth.runs")
        self.page.set_input_files("#file", path)
        self.wait(f"edgedepth.runs > {runs} || edgedepth.state === 'error'", timeout_s)
        st = self.state()
        assert st["state"] != "error", st
        return st

    def array(self, name: str, dtype: str = "<f4") -> np.ndarray:
        b64 = self.page.evaluate(f"""() => {{ const a = window.edgedepth.{name};
            const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength); let s = '';
            for (let i = 0; i < u.length; i += 0x8000) s += String.fromCharCode.apply(null, u.subarray(i, i + 0x8000));
            return btoa(s); }}""")
        return np.frombuffer(base64.b64decode(b64), dtype=dtype)

    def messages_text(self) -> str:
        return self.page.inner_text("#messages")

    def tflite_requests(self) -> list[str]:
        return self.model_requests(".tflite")

    def model_requests(self, ext: str) -> list[str]:
        return [u for u in self.requests if u.split("?")[0].endswith(ext)]

    def canvas(self, canvas_id: str) -> np.ndarray:
        """RGB pixels of a canvas, [h, w, 3] uint8."""
        got = self.page.evaluate("""(id) => { const c = document.getElementById(id);
            const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
            return {h: c.height, w: c.width, px: Array.from(px)}; }""", canvas_id)
        return np.asarray(got["px"], np.uint8).reshape(got["h"], got["w"], 4)[..., :3]

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def open_page(browser):
    pages = []

    def make(url: str, b=None, **kw) -> Page:
        p = Page(b or browser, url, **kw)
        pages.append(p)
        return p

    yield make
    for p in pages:
        p.close()


def _python_reference(path: str, x: np.ndarray) -> np.ndarray:
    from edgedepth.runtimes.litert import LiteRTRunner

    runner = LiteRTRunner(path, backend="cpu", threads=2)
    try:
        return runner.run(x.reshape(runner.input_shape))
    finally:
        runner.close()


def _assert_fp32_parity(y, model, x, what: str) -> None:
    """Browser FP32 output ``y`` vs a float64 PyTorch run of ``model`` on the same input (conftest policy)."""
    assert_within_fp32_noise(y, float64_reference(model, x), torch_fp32(model, x), what=what)


def _python_input(path: str, size: tuple[int, int]) -> np.ndarray:
    from edgedepth.preprocess import load_and_preprocess

    return load_and_preprocess(path, size)[0]


# ---------------------------------------------------------------------------------------------------- the server

def test_serve_errors_are_one_line(tmp_path, tiny_release):
    from edgedepth.errors import EdgedepthError
    from edgedepth.serve import main, make_server

    (tmp_path / "file.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "manifest.json").write_text("{not json")
    cases = {
        str(tmp_path / "nope"): "does not exist",
        str(tmp_path / "file.txt"): "is not a folder",
        str(tmp_path / "empty"): "has no manifest.json",
        str(bad): "not valid JSON",
    }
    for folder, words in cases.items():
        with pytest.raises(EdgedepthError, match=words) as e:
            make_server(folder, port=0)
        assert "\n" not in str(e.value)
    with pytest.raises(EdgedepthError, match="loopback"):
        make_server(tiny_release["folder"], port=0, host="0.0.0.0")
    with socket.socket() as s:  # a port in use
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(EdgedepthError, match=f"port {port} .* already in use"):
            make_server(tiny_release["folder"], port=port)
    assert main([str(tmp_path / "nope"), "--port", "0"]) == 2


def test_serve_mime_types_and_isolation_headers(tiny_release, serve_folder):
    url = serve_folder(tiny_release["folder"])
    host, port = url.split("//")[1].rstrip("/").split(":")
    fp32 = tiny_release["entries"]["fp32"]["path"]

    def get(path: str, method: str = "GET"):
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        c.request(method, path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, dict(r.getheaders()), body

    expected = {"/": "text/html", "/app.js": "text/javascript", "/preprocess.js": "text/javascript",
                "/release/manifest.json": "application/json", f"/release/{fp32}": "application/octet-stream",
                "/vendor/@litertjs/core/dist/index.js": "text/javascript",
                "/vendor/@litertjs/core/wasm/litert_wasm_threaded_internal.wasm": "application/wasm",
                "/vendor/@litertjs/wasm-utils/dist/index.js": "text/javascript",
                "/vendor/onnxruntime-web/dist/ort.webgpu.min.mjs": "text/javascript",
                "/vendor/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.mjs": "text/javascript",
                "/vendor/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm": "application/wasm"}
    for path, ctype in expected.items():
        status, headers, body = get(path)
        assert status == 200, path
        assert headers["Content-Type"].startswith(ctype), (path, headers["Content-Type"])
        assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
        assert int(headers["Content-Length"]) == len(body)
    status, headers, body = get(f"/release/{fp32}", "HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) == tiny_release["entries"]["fp32"]["bytes"]
    # Only manifest.json and the files it lists; nothing outside web/, the two LiteRT.js packages and ORT-web's
    # dist/*.mjs|*.wasm.
    open(os.path.join(tiny_release["folder"], "secret.txt"), "w").write("no")
    try:
        for path in ("/release/secret.txt", "/release/../../../etc/passwd", "/release/%2e%2e/%2e%2e/etc/passwd",
                     "/../pyproject.toml", "/node_modules/@litertjs/core/package.json", "/vendor/@litertjs/core/README.md",
                     "/vendor/other/x.js", "/package-lock.json", "/nope.html",
                     "/vendor/onnxruntime-web/package.json", "/vendor/onnxruntime-web/dist/ort.min.js",
                     "/vendor/onnxruntime-web/dist/ort.webgpu.min.mjs.map", "/vendor/onnxruntime-web/dist/../package.json",
                     "/vendor/onnxruntime-web/lib/index.mjs", "/node_modules/onnxruntime-web/dist/ort.min.mjs"):
            assert get(path)[0] == 404, path
    finally:
        os.remove(os.path.join(tiny_release["folder"], "secret.txt"))


# ---------------------------------------------------------------------------------------------------- preprocessing

def _vectors() -> list[dict]:
    with open(os.path.join(VECTORS, "index.json")) as f:
        return json.load(f)["cases"]


def test_vectors_match_python_preprocess():
    """The committed vectors are what edgedepth.preprocess (Pillow as pinned) gives today."""
    from edgedepth.preprocess import load_image, preprocess

    from PIL import Image

    for case in _vectors():
        img = load_image(os.path.join(VECTORS, case["image"]))
        h, w = case["size"]
        rgb = np.asarray(img.resize((w, h), Image.Resampling.BICUBIC), dtype=np.uint8)
        x = preprocess(img, (h, w))
        assert [img.height, img.width] == case["image_size"]
        assert hashlib.sha256(rgb.tobytes()).hexdigest() == case["uint8_sha256"], case["image"]
        assert hashlib.sha256(x.astype("<f4").tobytes()).hexdigest() == case["tensor_sha256"], case["image"]
        if "tensor" in case:
            ref = np.fromfile(os.path.join(VECTORS, case["tensor"]), dtype="<f4").reshape(x.shape)
            assert np.array_equal(ref, x)


def test_browser_preprocessing_is_bit_exact(tiny_release, serve_folder, open_page):
    """web/preprocess.js (decode + Pillow bicubic + normalise) reproduces every vector exactly, both pass orders."""
    p = open_page(serve_folder(tiny_release["folder"]))
    for case in _vectors():
        data = base64.b64encode(open(os.path.join(VECTORS, case["image"]), "rb").read()).decode()
        h, w = case["size"]
        got = p.page.evaluate("""async ({data, h, w}) => {
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            const img = await edgedepth.decodeImage(new Blob([bytes], {type: 'image/png'}));
            const {rgb, tensor} = edgedepth.preprocessRGBA(img.data, img.width, img.height, h, w);
            const hex = async (a) => Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', a)),
                                                (b) => b.toString(16).padStart(2, '0')).join('');
            const small = h * w <= 56 * 70;
            return {size: [img.height, img.width], u8: await hex(rgb), f32: await hex(tensor),
                    rgb: small ? Array.from(rgb) : null, tensor: small ? Array.from(tensor) : null};
        }""", {"data": data, "h": h, "w": w})
        name = case["image"]
        assert got["size"] == case["image_size"], name
        if "uint8" in case:
            ref = np.fromfile(os.path.join(VECTORS, case["uint8"]), dtype=np.uint8)
            diff = np.abs(np.asarray(got["rgb"], np.int16) - ref.astype(np.int16))
            assert diff.max() == 0, f"{name}: uint8 max diff {diff.max()} at {int(diff.argmax())}"
        if "tensor" in case:
            ref = np.fromfile(os.path.join(VECTORS, case["tensor"]), dtype="<f4")
            err = float(np.abs(np.asarray(got["tensor"], np.float32) - ref).max())
            assert err == 0, f"{name}: tensor max abs diff {err}"      # bit-exact by design (the SHA-256 below too)
        assert got["u8"] == case["uint8_sha256"], f"{name}: uint8 image differs from Pillow"
        assert got["f32"] == case["tensor_sha256"], f"{name}: float32 tensor differs from edgedepth.preprocess"


def test_browser_decodes_jpeg_and_exif_like_pil(tmp_path, tiny_release, serve_folder, open_page):
    """Decoding is the browser's, not ours: on JPEG (matplotlib's Grace Hopper photo, and a re-encoded one rotated by
    EXIF orientation 6) it matches PIL + exif_transpose (measured: identical; allowed: 2 levels)."""
    from PIL import Image

    from edgedepth.preprocess import load_image
    from edgedepth.samples import sample_photo

    rotated = tmp_path / "exif6.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.open(os.path.join(VECTORS, "rgb_40x120.png")).save(rotated, quality=92, exif=exif)
    p = open_page(serve_folder(tiny_release["folder"]))
    for path in (sample_photo(), str(rotated)):
        data = base64.b64encode(open(path, "rb").read()).decode()
        got = p.page.evaluate("""async (data) => {
            const bytes = Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
            const img = await edgedepth.decodeImage(new Blob([bytes], {type: 'image/jpeg'}));
            let s = '';
            for (let i = 0; i < img.data.length; i += 0x8000) {
                s += String.fromCharCode.apply(null, img.data.subarray(i, i + 0x8000));
            }
            return {h: img.height, w: img.width, rgba: btoa(s)}; }""", data)
        ref = np.asarray(load_image(path), np.int16)
        rgb = np.frombuffer(base64.b64decode(got["rgba"]), np.uint8).reshape(got["h"], got["w"], 4)[..., :3]
        assert rgb.shape == ref.shape, (path, rgb.shape, ref.shape)
        assert np.abs(rgb.astype(np.int16) - ref).max() <= 2, path


def test_browser_colormap_matches_predict(tiny_release, serve_folder, open_page):
    from edgedepth.predict import colorize

    p = open_page(serve_folder(tiny_release["folder"]))
    rng = np.random.default_rng(3)
    for depth in (rng.standard_normal(4096).astype(np.float32) * 3 + 1,
                  np.linspace(-2, 5, 1000, dtype=np.float32), np.full(64, 0.7, np.float32)):
        got = p.page.evaluate("(d) => Array.from(edgedepth.colorizeDepth(Float32Array.from(d)))", depth.tolist())
        rgba = np.asarray(got, np.uint8).reshape(-1, 4)
        assert (rgba[:, 3] == 255).all()
        np.testing.assert_array_equal(rgba[:, :3], colorize(depth.reshape(1, -1))[0])


# ---------------------------------------------------------------------------------------------------- inference

def test_wasm_matches_pytorch_and_draws_the_depth_map(tiny_release, tiny_ckpt, serve_folder, open_page, tmp_path):
    """FP32 on wasm: same input as Python (exact), output within FP32 noise of PyTorch (float64 reference, conftest
    policy); canvas colours."""
    from PIL import Image

    from edgedepth.predict import colorize

    base = serve_folder(tiny_release["folder"])
    entry = tiny_release["entries"]["fp32"]
    p = open_page(f"{base}?backend=wasm&artifact={entry['path']}")
    st = p.run_photo()
    assert st["backend"] == "wasm" and st["source"] == "network" and not st["errors"], st
    assert st["lastLatencyMs"] > 0
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    np.testing.assert_array_equal(x, _python_input(PHOTO, TINY_SIZE))
    y = p.array("lastOutput").reshape(1, *TINY_SIZE)
    _assert_fp32_parity(y, tiny_ckpt.model, x, "LiteRT.js wasm FP32")
    assert "ms per inference on wasm" in p.page.inner_text("#st-latency")
    # The depth canvas holds exactly predict.colorize(output); the screenshot is far from blank.
    pixels = p.page.evaluate("""() => { const c = document.getElementById('depth');
        return Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data); }""")
    rgba = np.asarray(pixels, np.uint8).reshape(*TINY_SIZE, 4)
    np.testing.assert_array_equal(rgba[..., :3], colorize(y[0]))
    shot = tmp_path / "depth.png"
    p.page.locator("#depth").screenshot(path=str(shot))
    colours = len(np.unique(np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3), axis=0))
    assert colours >= 200, f"depth canvas looks blank: {colours} distinct colours"
    # Everything came from the local server: no CDN, no other host.
    assert all(u.startswith((base, "data:", "blob:")) for u in p.requests), [u for u in p.requests if not u.startswith(base)]


def test_metric_release_shows_metres_under_the_cursor(metric_release, serve_folder, open_page):
    """A metric release: the page colours -depth (bright = near, as predict), captions the range in metres and shows
    the model's value in metres under the cursor."""
    from edgedepth.predict import colorize

    p = open_page(f"{serve_folder(metric_release['folder'])}?backend=wasm")
    st = p.run_photo()
    assert st["maxDepth"] == metric_release["max_depth"] and not st["errors"], st
    y = p.array("lastOutput").reshape(TINY_SIZE)
    assert 0 < y.min() and y.max() < metric_release["max_depth"]
    pixels = p.page.evaluate("""() => { const c = document.getElementById('depth');
        return Array.from(c.getContext('2d').getImageData(0, 0, c.width, c.height).data); }""")
    np.testing.assert_array_equal(np.asarray(pixels, np.uint8).reshape(*TINY_SIZE, 4)[..., :3], colorize(-y))
    assert f"model range 0–{metric_release['max_depth']} m" in p.page.inner_text("#depth-caption")
    box = p.page.locator("#depth").bounding_box()
    p.page.mouse.move(box["x"] + box["width"] * 0.75, box["y"] + box["height"] * 0.25)
    at = p.page.evaluate("edgedepth.depthAt")
    assert at["value"] == y[at["y"], at["x"]]
    assert p.page.inner_text("#depth-at").startswith(f"{y[at['y'], at['x']]:.2f} m at ({at['x']}, {at['y']})")


def test_int8_on_wasm_matches_ai_edge_litert(tiny_release, serve_folder, open_page):
    entry = tiny_release["entries"]["int8"]
    p = open_page(f"{serve_folder(tiny_release['folder'])}?backend=wasm&artifact={entry['path']}")
    st = p.run_photo()
    assert st["backend"] == "wasm", st
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    y = p.array("lastOutput").reshape(1, *TINY_SIZE)
    ref = _python_reference(tiny_release["paths"]["int8"], x)
    # dynamic INT8: activation quantisation rounds differently in wasm and native XNNPACK (measured ~1e-4), a
    # quantisation-level effect that FP32 rounding cannot reach
    assert rel_l2(y, ref) <= 1e-3, rel_l2(y, ref)


def test_cache_hit_on_reload_and_reverify(tiny_release, serve_folder, open_page):
    """Second load comes from Cache Storage (no .tflite request); a corrupted cached copy is re-verified, dropped,
    downloaded again."""
    base = serve_folder(tiny_release["folder"])
    url = f"{base}?backend=wasm&autoload=1"
    p = open_page(url)
    p.wait("edgedepth.state === 'ready' || edgedepth.state === 'error'", 60)
    assert p.state()["source"] == "network" and len(p.tflite_requests()) == 1, (p.state(), p.tflite_requests())
    _reload_from_cache_then_corrupt_it(p, url, p.tflite_requests)
    assert "SHA-256 mismatch" in p.messages_text() and "Cache Storage copy" in p.messages_text()


def _reload_from_cache_then_corrupt_it(p, url: str, requests) -> None:
    """After a first (network) load of ``url``: a reload comes from Cache Storage with no new model request
    (``requests()``: the model requests so far); then the cached bytes are corrupted in place and the next load must
    notice and download a good copy."""
    p.goto(url)
    p.wait("edgedepth.state === 'ready' || edgedepth.state === 'error'", 60)
    st = p.state()
    assert st["source"] == "cache" and st["downloads"] == 0 and not st["errors"], st
    assert len(requests()) == 1, requests()
    assert "from Cache Storage" in p.messages_text()
    p.run_photo()
    p.page.evaluate("""async () => { const c = await caches.open('edgedepth-models-v1');
        for (const req of await c.keys()) { const b = new Uint8Array(await (await c.match(req)).arrayBuffer());
            b[b.length >> 1] ^= 0xff; await c.put(req, new Response(b)); } }""")
    p.goto(url)
    p.wait("edgedepth.state === 'ready' || edgedepth.state === 'error'", 60)
    st = p.state()
    assert st["state"] == "ready" and st["source"] == "network" and st["downloads"] == 1, st
    assert len(requests()) == 2


def test_tampered_file_is_refused(tmp_path, tiny_release, serve_folder, open_page):
    folder = tmp_path / "release"
    entry = _write_release(str(folder), {"fp32": tiny_release["paths"]["fp32"]}, TINY_SIZE, gpu_check=False)["fp32"]
    path = folder / entry["path"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, after the manifest was written
    path.write_bytes(bytes(data))
    p = open_page(f"{serve_folder(str(folder))}?backend=wasm&artifact={entry['path']}&autoload=1")
    p.wait("edgedepth.state === 'error' || edgedepth.state === 'ready'", 60)
    st = p.state()
    assert st["state"] == "error" and st["backend"] is None and st["runs"] == 0, st
    assert any("SHA-256 mismatch" in e and "refusing" in e for e in st["errors"]), st["errors"]
    shown = p.page.inner_text("#messages .msg.error")
    assert "SHA-256 mismatch" in shown and entry["sha256"] in shown
    assert p.page.evaluate("caches.open('edgedepth-models-v1').then(c => c.keys()).then(k => k.length)") == 0


def test_webgpu_falls_back_to_wasm_when_not_fully_delegated(tiny_release, tiny_ckpt, serve_folder, open_page):
    """The plain tiny graph has BROADCAST_TO/GATHER_ND, which LiteRT's WebGPU delegate lacks: wasm, reason shown."""
    entry = tiny_release["entries"]["fp32"]
    assert entry["gpu_fully_delegated"] is False
    p = open_page(f"{serve_folder(tiny_release['folder'])}?backend=webgpu&artifact={entry['path']}")
    st = p.run_photo()
    assert st["backend"] == "wasm", st
    assert "not fully delegated to WebGPU" in st["backendReason"], st
    assert "swiftshader" in (st["adapter"] or "").lower(), st
    assert "not fully delegated to WebGPU" in p.page.inner_text("#st-backend")
    assert "Running on wasm" in p.messages_text()
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    _assert_fp32_parity(p.array("lastOutput"), tiny_ckpt.model, x, "wasm fallback FP32")


def test_auto_prefers_wasm_over_a_software_adapter(tiny_release, serve_folder, open_page):
    p = open_page(f"{serve_folder(tiny_release['folder'])}?backend=auto&autoload=1")
    p.wait("edgedepth.state === 'ready' || edgedepth.state === 'error'", 60)
    st = p.state()
    assert st["backend"] == "wasm" and "software fallback adapter" in st["backendReason"], st
    assert "software fallback adapter" in p.page.inner_text("#st-adapter")


def test_webgpu_runs_the_gpu_optimised_graph(gpu_release, tiny_ckpt, serve_folder, open_page):
    """A fully delegated graph runs on WebGPU (SwiftShader), FP32 precision requested; parity with PyTorch."""
    p = open_page(f"{serve_folder(gpu_release['folder'])}?backend=webgpu")
    st = p.run_photo(timeout_s=180)
    assert st["backend"] == "webgpu" and st["backendReason"] is None and not st["errors"], st
    assert "swiftshader" in st["adapter"].lower()
    assert p.page.inner_text("#st-backend").startswith("WebGPU")
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    _assert_fp32_parity(p.array("lastOutput"), tiny_ckpt.model, x, "WebGPU (SwiftShader) FP32")


def test_webgpu_file_takes_uint8_pixels(tmp_path, tiny_ckpt, serve_folder, open_page):
    """A release's WebGPU file takes uint8 pixels (``_u8in``, manifest input dtype uint8; recommend picks it): the page
    feeds the resized RGB as NCHW bytes, exactly Python's ``preprocess.pixels``, on WebGPU (SwiftShader) and on wasm;
    output within FP32 noise of PyTorch on the normalised tensor."""
    from edgedepth import formats
    from edgedepth.preprocess import load_and_preprocess, normalise
    from edgedepth.release import manifest as mf
    from edgedepth.release.recommend import recommend

    (f32,) = formats.export(tiny_ckpt.model, *TINY_SIZE, str(tmp_path), precisions=("fp32",))
    (u8,) = formats.export(tiny_ckpt.model, *TINY_SIZE, str(tmp_path), precisions=("fp32",), input_dtype="uint8")
    folder = str(tmp_path / "rel")
    entries = _write_release(folder, {"fp32": f32.path, "fp32_u8in": u8.path}, TINY_SIZE)
    m = mf.load(folder)
    m["recommended"] = recommend(m["files"], f"{TINY_SIZE[0]}x{TINY_SIZE[1]}", 0.1)
    mf.write(folder, m)
    u8_path = entries["fp32_u8in"]["path"]
    assert entries["fp32_u8in"]["input"]["dtype"] == "uint8" and m["recommended"]["webgpu"]["path"] == u8_path
    px = load_and_preprocess(PHOTO, TINY_SIZE, "uint8")[0]
    base = serve_folder(folder)
    for backend, query in (("webgpu", ""), ("wasm", f"&artifact={u8_path}")):
        p = open_page(f"{base}?backend={backend}{query}")
        st = p.run_photo(timeout_s=180)
        assert st["backend"] == backend and not st["errors"] and st["artifact"] == u8_path, st
        np.testing.assert_array_equal(p.array("lastInput", "u1").reshape(px.shape), px)
        assert "uint8 pixels in" in p.page.eval_on_selector("#artifact", "e => e.selectedOptions[0].text")
        assert "uint8 NCHW" in p.page.inner_text("#artifact-info")
        _assert_fp32_parity(p.array("lastOutput"), tiny_ckpt.model, normalise(px), f"{backend}, uint8-input file")
        ms = p.page.evaluate("edgedepth.benchmark({warmup: 1, iters: 2})")   # benchmark feeds it pixels too
        assert len(ms) == 2 and min(ms) > 0


def test_no_webgpu_adapter_falls_back_to_wasm(pw, tiny_release, serve_folder, open_page):
    b = pw.chromium.launch(executable_path=CHROMIUM, args=chromium_args())  # no --enable-unsafe-webgpu: no adapter
    try:
        p = open_page(f"{serve_folder(tiny_release['folder'])}?backend=webgpu", b=b)
        st = p.run_photo()
        assert st["backend"] == "wasm" and st["adapter"] is None, st
        assert "no WebGPU adapter" in st["backendReason"], st
        assert "no WebGPU adapter" in p.page.inner_text("#st-backend")
        p.close()
    finally:
        b.close()


def _unit(y: np.ndarray) -> np.ndarray:
    """The page's normalised map (colormap.js normalizeDepth): min-max in float32, a constant map -> 0."""
    lo, rng = y.min(), np.float32(y.max() - y.min())
    return (y - lo) / rng if rng > 0 else np.zeros_like(y)


def _webcam_frames(p, frames: int) -> dict:
    """Start the fake camera, let it show `frames` more frames, stop it, and return what the page showed last (read
    after the loop has ended, so every array belongs to the same frame)."""
    p.page.click("#webcam")
    p.wait(f"(edgedepth.video && edgedepth.video.frames >= {frames}) || edgedepth.state === 'error'", 90)
    p.page.click("#webcam")
    p.wait("edgedepth.webcam === 'stopped' && edgedepth.state === 'ready'", 30)
    st = p.state()
    assert not st["errors"], st
    video = p.page.evaluate("""() => { const v = edgedepth.video; const c = document.getElementById('depth');
        const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const want = edgedepth.colorizeUnit(edgedepth.shownMap);
        return {fps: v.fps, frames: v.frames, backend: v.backend, hasPrev: v.prevShown !== null,
                drawn: px.length === want.length && px.every((b, i) => b === want[i]),
                latencies: edgedepth.latencies, text: document.getElementById('st-video').textContent}; }""")
    video["y"], video["shown"] = p.array("lastOutput"), p.array("shownMap")
    video["prev"] = p.array("video.prevShown") if video["hasPrev"] else None
    return video


def test_webcam_shows_fps_backend_and_smooths_the_map(pw, tiny_release, serve_folder, open_page):
    """Webcam mode on Chromium's fake camera (a moving test pattern): a frames-per-second figure consistent with the
    model's own latency, the backend in use, and the smoothing toggle = an EMA of the normalised maps, replayed here
    bit for bit (float64 blend, stored as float32, as web/video.js computes it)."""
    base = serve_folder(tiny_release["folder"])
    b = pw.chromium.launch(executable_path=CHROMIUM, args=chromium_args(fake_camera=True))
    try:
        p = open_page(f"{base}?backend=wasm", b=b)
        assert p.page.is_visible("#st-video-row") is False   # no webcam row before the camera runs

        off = _webcam_frames(p, 3)
        assert off["frames"] >= 3 and off["drawn"], off["text"]
        # A frame cannot be shown faster than the model runs: fps <= 1000 / fastest inference; and it is positive.
        assert 0 < off["fps"] <= 1000 / min(off["latencies"]), off
        assert off["backend"].startswith("wasm") and "wasm" in off["text"] and "frames/s" in off["text"], off["text"]
        assert "smoothing off" in off["text"]
        np.testing.assert_array_equal(off["shown"], _unit(off["y"]))   # off: exactly this frame's map

        p.page.check("#smooth")
        p.page.evaluate("""() => { const r = document.getElementById('smooth-alpha'); r.value = '0.25';
            r.dispatchEvent(new Event('input')); }""")
        on = _webcam_frames(p, 3)
        assert on["drawn"] and "smoothing on (new-frame weight 0.25)" in on["text"], on["text"]
        assert on["prev"] is not None and not np.array_equal(on["prev"], _unit(on["y"])), "the fake camera did not move"
        want = (0.25 * _unit(on["y"]).astype(np.float64) + (1 - 0.25) * on["prev"].astype(np.float64)).astype(np.float32)
        np.testing.assert_array_equal(on["shown"], want)
        assert not np.array_equal(on["shown"], _unit(on["y"]))
        p.close()
    finally:
        b.close()


def test_webcam_reports_a_missing_camera(tiny_release, serve_folder, open_page):
    # The default browser has no camera (and no permission to ask): a visible message, not a blank page.
    p = open_page(f"{serve_folder(tiny_release['folder'])}?backend=wasm&smooth=7")
    assert "?smooth=7: expected a new-frame weight in (0, 1]" in p.messages_text()
    p.page.click("#webcam")
    p.wait("typeof edgedepth.webcam === 'string'", 20)
    st = p.state()
    assert st["webcam"] not in ("running", "stopped"), st
    assert "Webcam:" in p.messages_text()


# ---------------------------------------------------------------------------------------------------- docs/screenshot.png

SCREENSHOT = os.path.join(ROOT, "scripts", "screenshot.py")
DOCS_SHOT = os.path.join(ROOT, "docs", "screenshot.json")


def _sha256(path: str) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def test_docs_screenshot_shows_the_current_release():
    """docs/screenshot.png is of today's release: the .tflite it shows has the golden SHA-256 of the synthetic release
    (tests/golden; test_reproducible rebuilds it), so a pipeline change that changes the file fails here until
    scripts/screenshot.py is run again. The PNG is the one the record describes, in compare mode."""
    rec = json.load(open(DOCS_SHOT))
    golden = json.load(open(os.path.join(ROOT, "tests", "golden", "release_sha256.json")))["synthetic release"]
    assert rec["litert"]["sha256"] == golden["sha256"].get(rec["litert"]["path"]), \
        "docs/screenshot.png shows an old file: run `make demo` and `.venv/bin/python scripts/screenshot.py " \
        "out/depth-anything-v2-small`"
    assert rec["checkpoint"]["state_dict_sha256"] == golden["state_dict_sha256"]
    assert _sha256(os.path.join(ROOT, "docs", "screenshot.png")) == rec["png_sha256"]
    assert rec["ort"]["path"].endswith(".onnx") and rec["litert"]["gpu_fully_delegated"] is True


def test_screenshot_script_captures_compare_mode(tmp_path, ort_release, tiny_release):
    """scripts/screenshot.py end to end on a tiny release: PNG + record, atomically; a release without an .onnx is one
    line and exit 2, with nothing written."""
    from PIL import Image

    from conftest import assert_one_line_error

    out = tmp_path / "shot.png"
    r = subprocess.run([sys.executable, SCREENSHOT, ort_release["folder"], "-o", str(out)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rec = json.load(open(tmp_path / "shot.json"))
    assert rec["litert"]["path"] == ort_release["entries"]["fp32"]["path"]
    assert rec["ort"]["path"] == ort_release["onnx"]["path"] and rec["ort"]["sha256"] == ort_release["onnx"]["sha256"]
    assert rec["rel_l2"] > 0 and rec["litert"]["ms"] > 0 and rec["ort"]["ms"] > 0
    assert _sha256(str(out)) == rec["png_sha256"]
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape[1] == rec["viewport"]["width"] and img.shape[0] >= rec["viewport"]["height"]
    assert img.std() > 20                                    # a page, not a blank image
    assert sorted(os.listdir(tmp_path)) == ["shot.json", "shot.png"]

    bad = tmp_path / "bad.png"
    r = subprocess.run([sys.executable, SCREENSHOT, tiny_release["folder"], "-o", str(bad)], capture_output=True,
                       text=True, timeout=300)
    assert_one_line_error(r, "cannot run compare mode")
    assert sorted(os.listdir(tmp_path)) == ["shot.json", "shot.png"]


def test_page_reports_an_unreadable_release(tiny_release, serve_folder, open_page):
    p = open_page(f"{serve_folder(tiny_release['folder'])}?release=./nowhere/")
    st = p.state()
    assert st["state"] == "error" and "Cannot read the release folder" in p.page.inner_text("#messages .msg.error"), st


# ---------------------------------------------------------------------------------------------------- ONNX Runtime Web

def _js_exp(v: float) -> str:
    """``v.toExponential(2)`` as JavaScript writes it (2.77e-7, not 2.77e-07)."""
    mantissa, exp = f"{v:.2e}".split("e")
    return f"{mantissa}e{int(exp)}"


def _fp32_noise(model, x) -> float:
    """PyTorch FP32's own rel-L2 against float64 on ``x``: the unit of conftest's tolerance policy."""
    return rel_l2(torch_fp32(model, x), float64_reference(model, x))


def test_ort_web_wasm_matches_python_onnxruntime(ort_release, tiny_ckpt, serve_folder, open_page):
    """ONNX Runtime Web on wasm runs onnx/model.onnx: same input as Python (exact); output within FP32 noise of PyTorch
    float64 and within 2x the factor of Python onnxruntime on the same file (both FP32 runs: conftest policy);
    wasm threads = LiteRT.js's, recorded with the ORT version; every request to the local server."""
    from edgedepth.runtimes.onnxruntime import OrtRunner

    base = serve_folder(ort_release["folder"])
    p = open_page(f"{base}?runtime=ort&backend=wasm")
    st = p.run_photo()
    assert st["mode"] == "ort" and st["artifact"] == "onnx/model.onnx" and not st["errors"], st
    assert st["backend"] == "wasm" and st["source"] == "network" and st["lastLatencyMs"] > 0, st
    assert st["ort"]["backend"] == "wasm" and st["ort"]["lastLatencyMs"] == st["lastLatencyMs"], st["ort"]
    rt = st["runtime"]
    assert rt["ort"] == {"version": "1.31.1", "threads": rt["threads"]}, rt
    assert rt["crossOriginIsolated"] and rt["threads"] >= 1, rt
    assert f"ONNX Runtime Web 1.31.1, wasm {rt['threads']} thread" in p.page.inner_text("#st-runtime")
    assert "ms per inference on wasm" in p.page.inner_text("#st-latency")
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    np.testing.assert_array_equal(x, _python_input(PHOTO, TINY_SIZE))
    y = p.array("lastOutput").reshape(1, *TINY_SIZE)
    np.testing.assert_array_equal(y, p.array("ortLastOutput").reshape(y.shape))
    _assert_fp32_parity(y, tiny_ckpt.model, x, "ONNX Runtime Web wasm FP32")
    runner = OrtRunner(ort_release["paths"]["onnx_fp32"], threads=2)
    try:
        ref = runner.run(x)
    finally:
        runner.close()
    err, noise = rel_l2(y, ref), _fp32_noise(tiny_ckpt.model, x)
    assert err <= 2 * FP32_NOISE_FACTOR * noise, f"ORT-web vs onnxruntime {err:.3e}, PyTorch FP32 noise {noise:.3e}"
    print(f"ORT-web wasm vs Python onnxruntime: rel-L2 {err:.3e} (PyTorch FP32 noise {noise:.3e}); "
          f"latency {st['lastLatencyMs']:.1f} ms, {rt['ort']['threads']} threads")
    assert p.model_requests(".onnx") == [f"{base}release/onnx/model.onnx"], p.model_requests(".onnx")
    assert all(u.startswith((base, "data:", "blob:")) for u in p.requests), [u for u in p.requests if not u.startswith(base)]


def test_compare_mode_runs_both_runtimes_on_the_same_photo(ort_release, tiny_ckpt, serve_folder, open_page):
    """?runtime=compare: the selected .tflite (FP32 by default) and the manifest's .onnx of the same size run the same
    tensor; both maps drawn; rel-L2 between them on the page and in E.compare, within the FP32 noise bound (two FP32
    runs: 2x the factor); both latencies on the page."""
    from edgedepth.predict import colorize

    base = serve_folder(ort_release["folder"])
    p = open_page(f"{base}?runtime=compare&backend=wasm")
    assert p.page.eval_on_selector("#artifact", "e => e.value") == ort_release["entries"]["fp32"]["path"]
    assert "compared with onnx/model.onnx (FP32" in p.page.inner_text("#artifact-info")
    st = p.run_photo()
    assert st["mode"] == "compare" and not st["errors"], st
    c = st["compare"]
    assert c["litert"]["backend"] == "wasm" and c["ort"]["backend"] == "wasm", c
    assert c["litert"]["artifact"] == ort_release["entries"]["fp32"]["path"] and c["ort"]["artifact"] == "onnx/model.onnx"
    assert c["litert"]["ms"] > 0 and c["ort"]["ms"] > 0, c
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    np.testing.assert_array_equal(x, _python_input(PHOTO, TINY_SIZE))
    y_litert = p.array("lastOutput").reshape(TINY_SIZE)
    y_ort = p.array("ortLastOutput").reshape(TINY_SIZE)
    assert c["relL2"] == pytest.approx(rel_l2(y_ort, y_litert), rel=1e-9)     # float64 sums in JS and numpy
    assert c["maxAbs"] == float(np.abs(y_ort.astype(np.float64) - y_litert).max())
    noise = _fp32_noise(tiny_ckpt.model, x)
    assert 0 < c["relL2"] <= 2 * FP32_NOISE_FACTOR * noise, f"compare rel-L2 {c['relL2']:.3e}, noise {noise:.3e}"
    _assert_fp32_parity(y_litert, tiny_ckpt.model, x, "compare: LiteRT.js wasm FP32")
    _assert_fp32_parity(y_ort, tiny_ckpt.model, x, "compare: ONNX Runtime Web wasm FP32")
    # Both maps drawn, each exactly predict.colorize of its runtime's output.
    assert p.page.is_visible("#depth-ort")
    np.testing.assert_array_equal(p.canvas("depth"), colorize(y_litert))
    np.testing.assert_array_equal(p.canvas("depth-ort"), colorize(y_ort))
    latency = p.page.inner_text("#st-latency")
    assert f"LiteRT.js {c['litert']['ms']:.1f} ms on wasm" in latency, latency
    assert f"ONNX Runtime Web {c['ort']['ms']:.1f} ms on wasm" in latency, latency
    assert f"rel-L2 {_js_exp(c['relL2'])}" in p.page.inner_text("#st-compare")
    print(f"compare (wasm): LiteRT.js {c['litert']['ms']:.1f} ms, ORT-web {c['ort']['ms']:.1f} ms, "
          f"rel-L2 {c['relL2']:.3e} (bound {2 * FP32_NOISE_FACTOR * noise:.3e}), max abs {c['maxAbs']:.2e}")
    assert all(u.startswith((base, "data:", "blob:")) for u in p.requests), [u for u in p.requests if not u.startswith(base)]


def test_ort_download_is_verified_and_cached(ort_release, serve_folder, open_page):
    """The .onnx follows the .tflite rules: verified download, second load from Cache Storage (re-verified, no
    request), a corrupted cached copy dropped and downloaded again."""
    url = f"{serve_folder(ort_release['folder'])}?runtime=ort&backend=wasm&autoload=1"
    p = open_page(url)
    p.wait("edgedepth.state === 'ready' || edgedepth.state === 'error'", 60)
    st = p.state()
    assert st["source"] == "network" and st["ort"]["source"] == "network" and not st["errors"], st
    assert len(p.model_requests(".onnx")) == 1 and not p.tflite_requests(), p.requests
    assert "onnx/model.onnx: 0.57 MB, SHA-256 verified (downloaded)" in p.messages_text()
    _reload_from_cache_then_corrupt_it(p, url, lambda: p.model_requests(".onnx"))
    assert "SHA-256 mismatch for onnx/model.onnx (Cache Storage copy)" in p.messages_text()


def test_tampered_onnx_is_refused(tmp_path, ort_release, serve_folder, open_page):
    """One flipped bit in an .onnx after manifest.json was written: refused with the page's message, nothing cached.
    (An .onnx-only release: the page runs it with ONNX Runtime Web.)"""
    folder = tmp_path / "release"
    entry = _write_release(str(folder), {}, TINY_SIZE, onnx={"fp32": ort_release["paths"]["onnx_fp32"]})["onnx_fp32"]
    path = folder / entry["path"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))
    p = open_page(f"{serve_folder(str(folder))}?backend=wasm&autoload=1")
    p.wait("edgedepth.state === 'error' || edgedepth.state === 'ready'", 60)
    st = p.state()
    assert st["mode"] == "ort" and "only .onnx files" in p.messages_text(), st
    assert st["state"] == "error" and st["backend"] is None and st["runs"] == 0, st
    assert any("SHA-256 mismatch for onnx/model.onnx" in e and "refusing" in e for e in st["errors"]), st["errors"]
    shown = p.page.inner_text("#messages .msg.error")
    assert "SHA-256 mismatch" in shown and entry["sha256"] in shown
    assert p.page.evaluate("caches.open('edgedepth-models-v1').then(c => c.keys()).then(k => k.length)") == 0


def test_ort_web_without_webgpu_adapter_falls_back_to_wasm(pw, ort_release, serve_folder, open_page):
    b = pw.chromium.launch(executable_path=CHROMIUM, args=chromium_args())  # no --enable-unsafe-webgpu: no adapter
    try:
        p = open_page(f"{serve_folder(ort_release['folder'])}?runtime=ort&backend=webgpu", b=b)
        st = p.run_photo()
        assert st["backend"] == "wasm" and st["adapter"] is None and st["ort"]["backend"] == "wasm", st
        assert "no WebGPU adapter" in st["backendReason"] and st["ort"]["backendReason"] == st["backendReason"], st
        assert "no WebGPU adapter" in p.page.inner_text("#st-backend")
        assert "Running on wasm (ONNX Runtime Web): no WebGPU adapter" in p.messages_text()
        p.close()
    finally:
        b.close()


def _onnx_with_a_cpu_only_op(path: str, size: tuple[int, int]) -> None:
    """[1,3,H,W] -> [1,H,W] through Det (an op ORT's WebGPU execution provider lacks) on a data-dependent 2x2 slice."""
    import onnx
    from onnx import TensorProto, helper

    h, w = size
    const = lambda name, vals: helper.make_tensor(name, TensorProto.INT64, [len(vals)], vals)  # noqa: E731
    nodes = [helper.make_node("ReduceMean", ["x", "ax1"], ["m"], keepdims=0),
             helper.make_node("Slice", ["m", "st", "en", "ax"], ["s"]),
             helper.make_node("Det", ["s"], ["d"]),
             helper.make_node("Unsqueeze", ["d", "ax12"], ["d3"]),
             helper.make_node("Add", ["m", "d3"], ["y"])]
    graph = helper.make_graph(nodes, "cpu_only", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, h, w])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, h, w])],
                              [const("ax1", [1]), const("st", [0, 0]), const("en", [2, 2]), const("ax", [1, 2]),
                               const("ax12", [1, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)
    onnx.checker.check_model(model)
    onnx.save(model, path)


def test_ort_web_webgpu_falls_back_to_wasm_when_not_fully_delegated(tmp_path, serve_folder, open_page):
    """A graph ORT would split between WebGPU and the CPU (Det): wasm, with the reason, as for LiteRT.js."""
    src = str(tmp_path / "det.onnx")
    _onnx_with_a_cpu_only_op(src, TINY_SIZE)
    folder = str(tmp_path / "release")
    _write_release(folder, {}, TINY_SIZE, onnx={"fp32": src})
    p = open_page(f"{serve_folder(folder)}?runtime=ort&backend=webgpu")
    st = p.run_photo()
    assert st["backend"] == "wasm" and "swiftshader" in (st["adapter"] or "").lower(), st
    assert "not fully delegated to WebGPU" in st["backendReason"] and "CPU" in st["backendReason"], st
    assert "not fully delegated to WebGPU" in p.page.inner_text("#st-backend")
    assert "Running on wasm (ONNX Runtime Web)" in p.messages_text()


def test_ort_web_on_webgpu_matches_pytorch(ort_release, tiny_ckpt, serve_folder, open_page):
    """The ONNX graph runs entirely on ORT's WebGPU execution provider (SwiftShader here); FP32 parity with PyTorch."""
    p = open_page(f"{serve_folder(ort_release['folder'])}?runtime=ort&backend=webgpu")
    st = p.run_photo(timeout_s=240)
    assert st["backend"] == "webgpu" and st["backendReason"] is None and not st["errors"], st
    assert "swiftshader" in st["adapter"].lower()
    assert p.page.inner_text("#st-backend").startswith("WebGPU")
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    _assert_fp32_parity(p.array("ortLastOutput"), tiny_ckpt.model, x, "ONNX Runtime Web WebGPU (SwiftShader) FP32")
    print(f"ORT-web WebGPU (SwiftShader) first inference {st['lastLatencyMs']:.0f} ms")


def test_page_says_what_to_run_without_onnxruntime_web(tmp_path, ort_release, serve_folder, open_page):
    """web/ without node_modules/onnxruntime-web: the server still starts (LiteRT.js works); choosing ONNX Runtime Web
    says what to run."""
    web = tmp_path / "web"
    shutil.copytree(WEB, web, ignore=shutil.ignore_patterns("node_modules"))
    (web / "node_modules").mkdir()
    os.symlink(os.path.join(WEB, "node_modules", "@litertjs"), web / "node_modules" / "@litertjs")
    from edgedepth.serve import ort_problem

    assert "npm ci --prefix" in ort_problem(str(web))
    p = open_page(f"{serve_folder(ort_release['folder'], web=str(web))}?runtime=ort&backend=wasm&autoload=1")
    p.wait("edgedepth.state === 'error' || edgedepth.state === 'ready'", 60)
    st = p.state()
    assert st["state"] == "error" and st["backend"] is None, st
    shown = p.page.inner_text("#messages")
    assert "ONNX Runtime Web could not start" in shown and "npm ci --prefix web" in shown, shown


# ---------------------------------------------------------------------------------------------------- full size

@pytest.fixture(scope="module")
def full_fp32_release(tmp_path_factory, full_release_518x686):
    """The full synthetic release's 518x686 FP32 file (conftest's shared export) in a release folder of its own."""
    folder = str(tmp_path_factory.mktemp("pg_full"))
    entries = _write_release(folder, {"fp32": full_release_518x686["fp32"]}, FULL_SIZE, gpu_check=False)
    return {"folder": folder, "entry": entries["fp32"], "path": os.path.join(folder, entries["fp32"]["path"])}


@pytest.mark.slow
def test_full_size_fp32_on_wasm(full_fp32_release, full_reference, serve_folder, open_page):
    """The release's 99 MB FP32 file: streamed download, SHA-256, wasm inference, parity with the PyTorch model it
    was exported from (float64 reference; the rewrites are exact up to float rounding)."""
    p = open_page(f"{serve_folder(full_fp32_release['folder'])}?backend=wasm")
    t = time.perf_counter()
    st = p.run_photo(os.path.join(VECTORS, "rgb_160x120.png"), timeout_s=300)
    assert st["backend"] == "wasm" and not st["errors"], st
    x = p.array("lastInput").reshape(1, 3, *FULL_SIZE)
    np.testing.assert_array_equal(x, full_reference["x"])     # the same photo, preprocessed bit-identically
    assert_within_fp32_noise(p.array("lastOutput"), full_reference["fp64"], full_reference["fp32"],
                             what="full size, LiteRT.js wasm FP32")
    print(f"full-size FP32 wasm: load+first inference {time.perf_counter() - t:.1f} s, "
          f"inference {st['lastLatencyMs']:.0f} ms")


def test_default_file_follows_the_manifest_recommendation(tmp_path, tiny_plain_export, serve_folder, open_page):
    """No ?artifact=: the playground selects manifest.json's recommended file for the backend that will run (WebGPU
    when asked for or on a real adapter, else wasm) and says why."""
    from edgedepth.release import manifest as mf

    folder = str(tmp_path / "rec")
    entries = _write_release(folder, dict(tiny_plain_export), TINY_SIZE, gpu_check=False)
    m = mf.load(folder)
    m["recommended"] = {"webgpu": {"path": entries["fp32"]["path"], "why": "test: GPU pick"},
                        "wasm": {"path": entries["int8"]["path"], "why": "test: wasm pick"}}
    mf.write(folder, m)
    base = serve_folder(folder)
    for backend, want, why in (("wasm", "int8", "test: wasm pick"), ("webgpu", "fp32", "test: GPU pick")):
        p = open_page(f"{base}?backend={backend}")
        assert p.page.eval_on_selector("#artifact", "e => e.value") == entries[want]["path"], backend
        assert f"recommended for {backend} ({why})" in p.messages_text()
