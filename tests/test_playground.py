"""Browser playground (``edgedepth serve`` + web/): server, preprocessing parity, LiteRT.js and ONNX Runtime Web on wasm
and WebGPU, compare mode, transformers.js's pipeline on the release folder (conftest's session ``tiny_release``; every
file it loads verified by the page).

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
        return "LiteRT.js is not installed: run `ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix web` (or make setup)"
    if not os.path.isdir(os.path.join(WEB, "node_modules", "onnxruntime-web", "dist")):
        return "ONNX Runtime Web is not installed: run `ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix web` (or make setup)"
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
    from edgedepth.formats.onnx.hub_files import ONNX_LAYOUT

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
def plain_release(tmp_path_factory, tiny_plain_export):
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
    model, _base = _model_info(ckpt, load_recipe("recipes/depth-anything-v2-metric-outdoor-small.py"))
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
                    artifact: E.artifact, runtime: E.runtime, ort: E.ort, compare: E.compare, tjs: E.tjs}; }""")

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

def test_serve_errors_are_one_line(tmp_path, plain_release):
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
        make_server(plain_release["folder"], port=0, host="0.0.0.0")
    with socket.socket() as s:  # a port in use
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        port = s.getsockname()[1]
        with pytest.raises(EdgedepthError, match=f"port {port} .* already in use"):
            make_server(plain_release["folder"], port=port)
    assert main([str(tmp_path / "nope"), "--port", "0"]) == 2


def test_serve_mime_types_and_isolation_headers(plain_release, serve_folder):
    url = serve_folder(plain_release["folder"])
    host, port = url.split("//")[1].rstrip("/").split(":")
    fp32 = plain_release["entries"]["fp32"]["path"]

    def get(path: str, method: str = "GET"):
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        c.request(method, path)
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, dict(r.getheaders()), body

    expected = {"/": "text/html", "/app.js": "text/javascript", "/preprocess.js": "text/javascript",
                "/files.js": "text/javascript", "/manifest.js": "text/javascript", "/model.js": "text/javascript",
                "/view.js": "text/javascript", "/runtimes/index.js": "text/javascript",
                "/runtimes/litert.js": "text/javascript", "/runtimes/ort.js": "text/javascript",
                "/release/manifest.json": "application/json", f"/release/{fp32}": "application/octet-stream",
                "/vendor/@litertjs/core/dist/index.js": "text/javascript",
                "/vendor/@litertjs/core/wasm/litert_wasm_threaded_internal.wasm": "application/wasm",
                "/vendor/@litertjs/wasm-utils/dist/index.js": "text/javascript",
                "/vendor/onnxruntime-web/dist/ort.webgpu.min.mjs": "text/javascript",
                "/vendor/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.mjs": "text/javascript",
                "/vendor/onnxruntime-web/dist/ort-wasm-simd-threaded.asyncify.wasm": "application/wasm",
                "/runtimes/tjs.js": "text/javascript",
                "/vendor/@huggingface/transformers/dist/transformers.min.js": "text/javascript",
                "/vendor/@huggingface/transformers/dist/transformers.js": "text/javascript",
                "/vendor/@huggingface/transformers/ort/ort-wasm-simd-threaded.asyncify.mjs": "text/javascript",
                "/vendor/@huggingface/transformers/ort/ort-wasm-simd-threaded.asyncify.wasm": "application/wasm"}
    for path, ctype in expected.items():
        status, headers, body = get(path)
        assert status == 200, path
        assert headers["Content-Type"].startswith(ctype), (path, headers["Content-Type"])
        assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
        assert headers["Cross-Origin-Embedder-Policy"] == "require-corp"
        assert int(headers["Content-Length"]) == len(body)
    status, headers, body = get(f"/release/{fp32}", "HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) == plain_release["entries"]["fp32"]["bytes"]
    # transformers.js's wasm is its own (nested) ORT-web build's, not the page's ORT-web 1.31.1.
    from edgedepth.serve import tjs_ort_dist, tjs_problem

    nested = os.path.join(WEB, "node_modules", "@huggingface", "transformers", "node_modules", "onnxruntime-web", "dist")
    assert tjs_ort_dist(WEB) == nested and tjs_problem(WEB) is None
    wasm = "/vendor/@huggingface/transformers/ort/ort-wasm-simd-threaded.asyncify.wasm"
    assert get(wasm)[2] == open(os.path.join(nested, "ort-wasm-simd-threaded.asyncify.wasm"), "rb").read()
    # Only manifest.json and the files it lists; nothing outside web/, the two LiteRT.js packages, ORT-web's
    # dist/*.mjs|*.wasm, transformers.js's two browser bundles and its ORT-web's dist/*.mjs|*.wasm.
    open(os.path.join(plain_release["folder"], "secret.txt"), "w").write("no")
    try:
        for path in ("/release/secret.txt", "/release/../../../etc/passwd", "/release/%2e%2e/%2e%2e/etc/passwd",
                     "/../pyproject.toml", "/runtimes/../../pyproject.toml", "/runtimes/%2e%2e/%2e%2e/pyproject.toml",
                     "/node_modules/@litertjs/core/package.json", "/vendor/@litertjs/core/README.md",
                     "/vendor/other/x.js", "/package-lock.json", "/nope.html",
                     "/vendor/onnxruntime-web/package.json", "/vendor/onnxruntime-web/dist/ort.min.js",
                     "/vendor/onnxruntime-web/dist/ort.webgpu.min.mjs.map", "/vendor/onnxruntime-web/dist/../package.json",
                     "/vendor/onnxruntime-web/lib/index.mjs", "/node_modules/onnxruntime-web/dist/ort.min.mjs",
                     "/vendor/@huggingface/transformers/package.json",
                     "/vendor/@huggingface/transformers/dist/transformers.node.mjs",
                     "/vendor/@huggingface/transformers/dist/ort-wasm-simd-threaded.jsep.mjs",
                     "/vendor/@huggingface/transformers/src/transformers.js",
                     "/vendor/@huggingface/transformers/ort/ort.min.js",
                     "/vendor/@huggingface/transformers/ort/../package.json",
                     "/vendor/@huggingface/transformers/node_modules/onnxruntime-web/dist/ort.min.mjs"):
            assert get(path)[0] == 404, path
    finally:
        os.remove(os.path.join(plain_release["folder"], "secret.txt"))


def test_files_js_in_node():
    """web/files.js (SHA-256, the manifest check, download with progress, the Cache Storage rules) as plain functions
    in Node, without a browser: tests/js/files_test.mjs (node:test; fake network and cache); and web/manifest.js's
    second-map choice (confidence or sky): tests/js/manifest_test.mjs."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: run `make setup` (it installs nodejs and npm)", pytrace=False)
    r = subprocess.run([node, "--test", *(os.path.join(ROOT, "tests", "js", f) for f in ("files_test.mjs",
                                                                                       "manifest_test.mjs"))],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "# fail 0" in r.stdout, r.stdout[-4000:] + r.stderr[-2000:]


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


def test_browser_preprocessing_is_bit_exact(plain_release, serve_folder, open_page):
    """web/preprocess.js (decode + Pillow bicubic + normalise) reproduces every vector exactly, both pass orders."""
    p = open_page(serve_folder(plain_release["folder"]))
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


def test_browser_decodes_jpeg_and_exif_like_pil(tmp_path, plain_release, serve_folder, open_page):
    """Decoding is the browser's, not ours: on JPEG (matplotlib's Grace Hopper photo, and a re-encoded one rotated by
    EXIF orientation 6) it matches PIL + exif_transpose (measured: identical; allowed: 2 levels)."""
    from PIL import Image

    from edgedepth.preprocess import load_image
    from edgedepth.samples import sample_photo

    rotated = tmp_path / "exif6.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.open(os.path.join(VECTORS, "rgb_40x120.png")).save(rotated, quality=92, exif=exif)
    p = open_page(serve_folder(plain_release["folder"]))
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


def test_browser_colormap_matches_predict(plain_release, serve_folder, open_page):
    from edgedepth.predict import colorize

    p = open_page(serve_folder(plain_release["folder"]))
    rng = np.random.default_rng(3)
    for depth in (rng.standard_normal(4096).astype(np.float32) * 3 + 1,
                  np.linspace(-2, 5, 1000, dtype=np.float32), np.full(64, 0.7, np.float32)):
        got = p.page.evaluate("(d) => Array.from(edgedepth.colorizeDepth(Float32Array.from(d)))", depth.tolist())
        rgba = np.asarray(got, np.uint8).reshape(-1, 4)
        assert (rgba[:, 3] == 255).all()
        np.testing.assert_array_equal(rgba[:, :3], colorize(depth.reshape(1, -1))[0])


# ---------------------------------------------------------------------------------------------------- inference

def test_wasm_matches_pytorch_and_draws_the_depth_map(plain_release, tiny_ckpt, serve_folder, open_page, tmp_path):
    """FP32 on wasm: same input as Python (exact), output within FP32 noise of PyTorch (float64 reference, conftest
    policy); canvas colours."""
    from PIL import Image

    from edgedepth.predict import colorize

    base = serve_folder(plain_release["folder"])
    entry = plain_release["entries"]["fp32"]
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


def test_int8_on_wasm_matches_ai_edge_litert(plain_release, serve_folder, open_page):
    entry = plain_release["entries"]["int8"]
    p = open_page(f"{serve_folder(plain_release['folder'])}?backend=wasm&artifact={entry['path']}")
    st = p.run_photo()
    assert st["backend"] == "wasm", st
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    y = p.array("lastOutput").reshape(1, *TINY_SIZE)
    ref = _python_reference(plain_release["paths"]["int8"], x)
    # dynamic INT8: activation quantisation rounds differently in wasm and native XNNPACK (measured ~1e-4), a
    # quantisation-level effect that FP32 rounding cannot reach
    assert rel_l2(y, ref) <= 1e-3, rel_l2(y, ref)


def test_cache_hit_on_reload_and_reverify(plain_release, serve_folder, open_page):
    """Second load comes from Cache Storage (no .tflite request); a corrupted cached copy is re-verified, dropped,
    downloaded again."""
    base = serve_folder(plain_release["folder"])
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


def test_tampered_file_is_refused(tmp_path, plain_release, serve_folder, open_page):
    folder = tmp_path / "release"
    entry = _write_release(str(folder), {"fp32": plain_release["paths"]["fp32"]}, TINY_SIZE, gpu_check=False)["fp32"]
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


def test_webgpu_falls_back_to_wasm_when_not_fully_delegated(plain_release, tiny_ckpt, serve_folder, open_page):
    """The plain tiny graph has BROADCAST_TO/GATHER_ND, which LiteRT's WebGPU delegate lacks: wasm, reason shown."""
    entry = plain_release["entries"]["fp32"]
    assert entry["gpu_fully_delegated"] is False
    p = open_page(f"{serve_folder(plain_release['folder'])}?backend=webgpu&artifact={entry['path']}")
    st = p.run_photo()
    assert st["backend"] == "wasm", st
    assert "not fully delegated to WebGPU" in st["backendReason"], st
    assert "swiftshader" in (st["adapter"] or "").lower(), st
    assert "not fully delegated to WebGPU" in p.page.inner_text("#st-backend")
    assert "Running on wasm" in p.messages_text()
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    _assert_fp32_parity(p.array("lastOutput"), tiny_ckpt.model, x, "wasm fallback FP32")


def test_auto_prefers_wasm_over_a_software_adapter(plain_release, serve_folder, open_page):
    p = open_page(f"{serve_folder(plain_release['folder'])}?backend=auto&autoload=1")
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


def test_webgpu_file_takes_uint8_pixels(pw, tmp_path, tiny_ckpt, serve_folder, open_page):
    """A release's WebGPU file takes uint8 pixels (``_u8in``, manifest input dtype uint8; recommend picks it): the page
    feeds the resized RGB as NCHW bytes, exactly Python's ``preprocess.pixels``, on WebGPU (SwiftShader) and on wasm;
    output within FP32 noise of PyTorch on the normalised tensor. Webcam frames on the GPU pack those bytes in WGSL
    (_check_gpu_frames, uint8)."""
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
    b = pw.chromium.launch(executable_path=CHROMIUM, args=chromium_args(webgpu=True, fake_camera=True))
    try:
        _check_gpu_frames(open_page(f"{base}?backend=webgpu&gpuframes=1", b=b), tiny_ckpt.model, "uint8")
    finally:
        b.close()


def test_no_webgpu_adapter_falls_back_to_wasm(pw, plain_release, serve_folder, open_page):
    b = pw.chromium.launch(executable_path=CHROMIUM, args=chromium_args())  # no --enable-unsafe-webgpu: no adapter
    try:
        p = open_page(f"{serve_folder(plain_release['folder'])}?backend=webgpu", b=b)
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


def test_webcam_shows_fps_backend_and_smooths_the_map(pw, plain_release, serve_folder, open_page):
    """Webcam mode on Chromium's fake camera (a moving test pattern): a frames-per-second figure consistent with the
    model's own latency, the backend in use, and the smoothing toggle = an EMA of the normalised maps, replayed here
    bit for bit (float64 blend, stored as float32, as web/video.js computes it)."""
    base = serve_folder(plain_release["folder"])
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
        # wasm keeps this thread busy while it runs: no frame is prepared ahead (it would only show an older frame)
        assert p.page.evaluate("edgedepth.video.overlap") is False and "preprocessed while" not in off["text"]
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


def _assert_gpu_colours(rgba: np.ndarray, y: np.ndarray) -> None:
    """The colours gpuframes.js drew vs colormap.js's rule on the same map: equal, except that WGSL's division may be
    2.5 ULP off (JavaScript's and numpy's float32 division are exact), so an index may be one off where
    (y - lo) / range * 256 lies within that error of an integer."""
    from edgedepth.predict import _lut8

    lut = _lut8("inferno")[:256]
    q = _unit(y)
    k = np.clip(np.floor(q * np.float32(256)), 0, 255).astype(int)
    got = rgba.reshape(-1, 4)
    assert (got[:, 3] == 255).all()
    off = np.flatnonzero((got[:, :3] != lut[k]).any(axis=1))
    for i in off:
        near = abs(q[i] * 256 - np.round(q[i] * 256)) <= 2.5 * 256 * np.spacing(q[i])
        alt = [j for j in (k[i] - 1, k[i] + 1) if 0 <= j < 256 and (lut[j] == got[i, :3]).all()]
        assert near and alt, f"pixel {i}: GPU colour {got[i, :3]} for index {k[i]} (unit {q[i]!r})"
    assert off.size <= max(1, y.size // 1000), f"{off.size} of {y.size} colours one index off"


def _check_gpu_frames(p, model, dtype: str) -> None:
    """Webcam frames on the GPU (web/gpuframes.js) on page ``p`` (WebGPU, fake camera), checked on the last frame read
    back at stop: the input the WGSL passes made from the grabbed pixels is bit-identical to edgedepth.preprocess
    (Pillow) on those pixels (``dtype`` float32: the normalised tensor; uint8: the resized pixels), the output is
    within FP32 noise of PyTorch on it, the colours the GPU made follow colormap.js (_assert_gpu_colours)."""
    from PIL import Image

    from edgedepth.preprocess import model_input, normalise

    v = _webcam_frames(p, 3)
    assert v["frames"] >= 3 and v["drawn"] and v["backend"].startswith("WebGPU"), v["text"]
    assert "frames on the GPU" in v["text"], v["text"]
    gpu = p.page.evaluate("""() => ({on: edgedepth.video.gpuFrames, error: edgedepth.gpuFramesError,
        w: edgedepth.video.lastFrame.width, h: edgedepth.video.lastFrame.height})""")
    assert gpu["on"] is True and gpu["error"] is None, gpu
    frame = p.array("video.lastFrame.rgba", "u1").reshape(gpu["h"], gpu["w"], 4)
    x = model_input(Image.fromarray(frame[..., :3].copy()), TINY_SIZE, dtype)
    np.testing.assert_array_equal(p.array("lastInput", "u1" if dtype == "uint8" else "<f4").reshape(x.shape), x)
    x = normalise(x) if dtype == "uint8" else x
    _assert_fp32_parity(v["y"], model, x, f"webcam frames on the GPU (SwiftShader), {dtype} input")
    _assert_gpu_colours(p.array("video.lastFrame.colours", "u1"), v["y"])
    np.testing.assert_array_equal(v["shown"], _unit(v["y"]))


def test_webcam_on_webgpu_keeps_frames_on_the_gpu_or_prepares_the_next(pw, gpu_release, tiny_ckpt, serve_folder,
                                                                       open_page):
    """Webcam on WebGPU (SwiftShader). With ?gpuframes=1 (LiteRT.js alone) frames are computed on the GPU
    (web/gpuframes.js; _check_gpu_frames). Without it (the default on a fallback adapter) the loop reads frames back
    and preprocesses frame N+1 while the GPU computes frame N; the
    map shown must still be the model's output on the frame it came from (a frame prepared ahead leaking into
    lastInput would be another camera frame: far outside FP32 noise)."""
    b = pw.chromium.launch(executable_path=CHROMIUM, args=chromium_args(webgpu=True, fake_camera=True))
    try:
        p = open_page(f"{serve_folder(gpu_release['folder'])}?backend=webgpu&gpuframes=1", b=b)
        _check_gpu_frames(p, tiny_ckpt.model, "float32")

        p.page.evaluate("edgedepth.gpuFramesAllowed = null")   # the default: GPU frames on a hardware adapter only
        v = _webcam_frames(p, 3)
        assert v["frames"] >= 3 and v["drawn"] and p.page.evaluate("edgedepth.video.overlap") is True
        assert "next frame preprocessed while the GPU runs" in v["text"], v["text"]
        assert p.page.evaluate("edgedepth.video.gpuReason").startswith("the adapter is a software fallback")
        np.testing.assert_array_equal(v["shown"], _unit(v["y"]))
        x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
        _assert_fp32_parity(v["y"], tiny_ckpt.model, x, "webcam on WebGPU (SwiftShader), pipelined")

        p.page.evaluate("edgedepth.adapterIsFallback = false")   # as on a hardware adapter: on without being asked
        v = _webcam_frames(p, 2)
        assert p.page.evaluate("[edgedepth.video.gpuFrames, edgedepth.video.gpuReason]") == [True, None], v["text"]
        p.page.evaluate("edgedepth.gpuFramesAllowed = false")     # ?gpuframes=0 turns them off there too
        v = _webcam_frames(p, 2)
        assert p.page.evaluate("[edgedepth.video.gpuFrames, edgedepth.video.gpuReason]") == [
            False, "turned off (?gpuframes=0)"], v["text"]
        p.close()
    finally:
        b.close()


def test_depth_anything_3_shows_its_confidence_and_colours_near_bright(tmp_path, serve_folder, open_page):
    """A Depth Anything 3 release (tiny, LiteRT FP32, two outputs; manifest ``outputs`` and ``larger_is_farther`` as
    the build writes them): the page shows the confidence map beside the depth, both within FP32 noise of PyTorch on
    the page's own input, colours -depth (its depth grows with distance: bright = near, as predict does) and says
    "relative depth (larger = farther)" under the cursor."""
    import copy

    import torch

    from edgedepth import formats
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.models import family_of_synthetic
    from edgedepth.release import manifest as mf
    from edgedepth.release.build import _io

    ckpt = load_checkpoint("synthetic-da3-tiny", quiet=True)
    size = (56, 56)
    (f,) = formats.export(ckpt.model, *size, str(tmp_path), precisions=("fp32",), stem=ckpt.file_stem)
    folder = str(tmp_path / "rel")
    _write_release(folder, {"fp32": f.path}, size, gpu_check=False,
                   model={"family_member": "da3-small", "kind": "relative", "max_depth_m": None,
                          "larger_is_farther": True})
    m = mf.load(folder)
    io = _io(family_of_synthetic("synthetic-da3-tiny"), ckpt.outputs, "relative depth, larger = farther")
    m["files"][0].update(io(*size, fmt=formats.NAMES["tflite"]))
    mf.write(folder, m)
    p = open_page(f"{serve_folder(folder)}?backend=wasm")
    st = p.run_photo()
    assert st["backend"] == "wasm" and not st["errors"], st
    assert p.page.is_visible("#confidence") and not p.page.is_visible("#tjs-figure")
    assert p.page.evaluate("window.edgedepth.lastSecondRole") == "confidence"
    assert p.page.inner_text("#conf-caption").startswith("confidence (the model's second output")
    x = p.array("lastInput").reshape(1, 3, *size)
    y, conf = p.array("lastOutput").reshape(1, *size), p.array("lastSecondOutput").reshape(1, *size)
    both = ("depth", "confidence")
    with torch.no_grad():
        r32 = DepthModule(ckpt.model, both)(torch.from_numpy(x))
        r64 = DepthModule(copy.deepcopy(ckpt.model).double().eval(), both)(torch.from_numpy(x.astype(np.float64)))
    for got, a, b, what in ((y, r64[0], r32[0], "depth"), (conf, r64[1], r32[1], "confidence")):
        assert_within_fp32_noise(got, a.numpy(), b.numpy(), what=f"DA3 {what} in LiteRT.js (wasm)")
    np.testing.assert_array_equal(p.array("shownMap").reshape(-1), _unit(-y.reshape(-1)))   # bright = near
    p.page.hover("#depth")
    assert "relative depth (larger = farther)" in p.page.inner_text("#depth-at")
    assert "confidence" in p.page.inner_text("#depth-at")
    p.close()


def test_webcam_reports_a_missing_camera(plain_release, serve_folder, open_page):
    # The default browser has no camera (and no permission to ask): a visible message, not a blank page.
    p = open_page(f"{serve_folder(plain_release['folder'])}?backend=wasm&smooth=7")
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
    for side in ("litert", "ort"):      # both files it shows, the .tflite and the .onnx
        assert rec[side]["sha256"] == golden["sha256"].get(rec[side]["path"]), \
            f"docs/screenshot.png shows an old {rec[side]['path']}: run `make demo` and " \
            "`.venv/bin/python scripts/screenshot.py out/depth-anything-v2-small-edgedepth`"
    assert rec["checkpoint"]["state_dict_sha256"] == golden["state_dict_sha256"]
    assert _sha256(os.path.join(ROOT, "docs", "screenshot.png")) == rec["png_sha256"]
    assert rec["ort"]["path"].endswith(".onnx") and rec["litert"]["gpu_fully_delegated"] is True


def test_screenshot_script_captures_compare_mode(tmp_path, ort_release, plain_release):
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
    r = subprocess.run([sys.executable, SCREENSHOT, plain_release["folder"], "-o", str(bad)], capture_output=True,
                       text=True, timeout=300)
    assert_one_line_error(r, "cannot run compare mode")
    assert sorted(os.listdir(tmp_path)) == ["shot.json", "shot.png"]


def test_page_reports_an_unreadable_release(plain_release, serve_folder, open_page):
    p = open_page(f"{serve_folder(plain_release['folder'])}?release=./nowhere/")
    st = p.state()
    assert st["state"] == "error" and "Cannot read the release folder" in p.page.inner_text("#messages .msg.error"), st


# ---------------------------------------------------------------------------------------------------- ONNX Runtime Web

def _js_exp(v: float) -> str:
    """``v.toExponential(2)`` as JavaScript writes it (2.77e-7, not 2.77e-07; 0.00e+0)."""
    mantissa, exp = f"{v:.2e}".split("e")
    return f"{mantissa}e{'+' if int(exp) >= 0 else '-'}{abs(int(exp))}"


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
    assert "without the strict flag" not in st["backendReason"], st     # a static-size file: strict only, as before
    assert "not fully delegated to WebGPU" in p.page.inner_text("#st-backend")
    assert "Running on wasm (ONNX Runtime Web)" in p.messages_text()


def test_ort_web_on_webgpu_matches_pytorch(ort_release, tiny_ckpt, serve_folder, open_page):
    """The ONNX graph runs entirely on ORT's WebGPU execution provider (SwiftShader here); FP32 parity with PyTorch."""
    p = open_page(f"{serve_folder(ort_release['folder'])}?runtime=ort&backend=webgpu")
    st = p.run_photo(timeout_s=240)
    assert st["backend"] == "webgpu" and st["backendReason"] is None and not st["errors"], st
    assert st["ort"]["cpuNodes"] == [], st["ort"]      # a static-size file: the strict session, nothing on the CPU
    assert "swiftshader" in st["adapter"].lower()
    assert p.page.inner_text("#st-backend") == "WebGPU"
    x = p.array("lastInput").reshape(1, 3, *TINY_SIZE)
    _assert_fp32_parity(p.array("ortLastOutput"), tiny_ckpt.model, x, "ONNX Runtime Web WebGPU (SwiftShader) FP32")
    print(f"ORT-web WebGPU (SwiftShader) first inference {st['lastLatencyMs']:.0f} ms")


def _int64_shape_nodes(path: str) -> dict[str, str]:
    """{name: op type} of the nodes of an .onnx file whose inputs and outputs are all int64 (onnx's shape inference):
    the shape computations of a dynamic-size graph, Shape itself excluded (it reads the float32 image)."""
    import onnx
    from onnx import TensorProto

    g = onnx.shape_inference.infer_shapes(onnx.load(path)).graph
    types = {v.name: v.type.tensor_type.elem_type for v in [*g.value_info, *g.input, *g.output]}
    types.update({t.name: t.data_type for t in g.initializer})
    return {n.name: n.op_type for n in g.node
            if all(types.get(t) == TensorProto.INT64 for t in [*n.input, *n.output] if t)}


def _op_counts(ops) -> str:
    """ort.js opCounts: "Concat×10, Reshape×6, ..." (most frequent first, then by name)."""
    from collections import Counter

    return ", ".join(f"{op}×{k}" for op, k in sorted(Counter(ops).items(), key=lambda c: (-c[1], c[0])))


def test_ort_web_on_webgpu_runs_the_dynamic_release_file(tiny_release, tiny_ckpt, serve_folder, open_page):
    """The release's onnx/model.onnx (dynamic height and width): the strict session is refused (ORT keeps the int64
    shape computations on its CPU EP), the page reads ORT's node placement from its verbose log and runs on WebGPU
    (SwiftShader) with exactly those nodes on the CPU, reported as such; the map matches the wasm run's within the
    FP32 policy (two FP32 runs: 2x the factor; and WebGPU within FP32 noise of PyTorch float64).  The release's q8 file
    puts its quantised ops on the CPU as well: wasm, with them named."""
    base = serve_folder(str(tiny_release))
    entry = next(f for f in json.load(open(os.path.join(tiny_release, "manifest.json")))["files"]
                 if f["path"] == "onnx/model.onnx")
    assert entry.get("dynamic_size"), entry
    size = tuple(entry["input"]["shape"][2:])                  # (28, 42): the size the page runs it at
    expected = _int64_shape_nodes(os.path.join(tiny_release, "onnx", "model.onnx"))
    t0 = time.monotonic()
    p = open_page(f"{base}?runtime=ort&backend=webgpu&artifact=onnx/model.onnx")
    st = p.run_photo(timeout_s=300)
    o = st["ort"]
    assert st["backend"] == "webgpu" == o["backend"] and st["backendReason"] is None and not st["errors"], st
    assert "swiftshader" in st["adapter"].lower(), st
    cpu = {n["name"]: n["op"] for n in o["cpuNodes"]}
    assert len(cpu) == len(o["cpuNodes"]) and cpu == expected, (o["cpuNodes"], expected)
    counts = _op_counts(cpu.values())
    assert p.page.inner_text("#st-backend") == (f"WebGPU ({len(cpu)} shape-computation nodes on the CPU, as ONNX "
                                                 f"Runtime places them for dynamic-size models: {counts})")
    assert f"ONNX Runtime Web on WebGPU: {len(cpu)} nodes run on the CPU, all of them int64 shape computations" in \
        p.messages_text()
    # ORT's verbose session log is neither on the console nor kept: the session that runs logs at ORT's default level
    assert not [c for c in p.console if "[V:onnxruntime:" in c or "[I:onnxruntime:" in c], p.console[-5:]
    x = p.array("lastInput").reshape(1, 3, *size)
    np.testing.assert_array_equal(x, _python_input(PHOTO, size))
    y_gpu = p.array("ortLastOutput").reshape(1, *size)
    t_gpu = time.monotonic() - t0
    _assert_fp32_parity(y_gpu, tiny_ckpt.model, x, "ONNX Runtime Web WebGPU (SwiftShader), dynamic-size file")
    w = open_page(f"{base}?runtime=ort&backend=wasm&artifact=onnx/model.onnx")
    stw = w.run_photo(timeout_s=240)
    assert stw["backend"] == "wasm" and stw["ort"]["cpuNodes"] is None and not stw["errors"], stw
    np.testing.assert_array_equal(w.array("lastInput").reshape(x.shape), x)
    y_wasm = w.array("ortLastOutput").reshape(y_gpu.shape)
    err, noise = rel_l2(y_gpu, y_wasm), _fp32_noise(tiny_ckpt.model, x)
    assert err <= 2 * FP32_NOISE_FACTOR * noise, f"WebGPU vs wasm rel-L2 {err:.3e}, PyTorch FP32 noise {noise:.3e}"
    print(f"ORT-web dynamic onnx/model.onnx on WebGPU (SwiftShader) with {len(cpu)} CPU nodes ({counts}): "
          f"{t_gpu:.1f} s to load and run once; vs wasm rel-L2 {err:.3e} (bound {2 * FP32_NOISE_FACTOR * noise:.3e})")
    q = open_page(f"{base}?runtime=ort&backend=webgpu&artifact=onnx/model_quantized.onnx")
    stq = q.run_photo(timeout_s=300)
    reason = stq["ort"]["backendReason"]
    assert stq["backend"] == "wasm" and not stq["errors"] and reason == stq["backendReason"], stq
    assert "not fully delegated to WebGPU" in reason and "not int64 shape computations" in reason, reason
    for op in ("DynamicQuantizeLinear", "ConvInteger", "MatMulInteger"):
        assert f"{op}×" in reason, reason
    assert not any(f"{op}×" in reason for op in set(expected.values())), reason   # its shape nodes were accepted
    assert "Running on wasm (ONNX Runtime Web)" in q.messages_text()


def test_ort_web_placement_log_parser(tiny_release, serve_folder, open_page):
    """ort.js's reading of ORT's node-placement log (the lines ORT-web 1.31.1 prints at verbose severity): a log without
    the placement, or one whose counts do not add up, is an error (the page then refuses the split session, with it
    as the reason), never an empty CPU list."""
    p = open_page(f"{serve_folder(str(tiny_release))}?runtime=ort&backend=wasm")
    got = p.page.evaluate("""async () => { const m = await import('./runtimes/ort.js');
        const at = (s) => '2026-12-05 00:13:31.5 [V:onnxruntime:, session_state.cc:1584 ' +
            `VerifyEachNodeIsAssignedToAnEp] ${s}`;
        const log = [at(' Node placements'), at('  Node(s) placed on [CPUExecutionProvider]. Number of nodes: 2'),
                     at('   Squeeze (node_sym_size_int)'), at('   Concat (node_Concat_50)'),
                     at('  Node(s) placed on [WebGpuExecutionProvider]. Number of nodes: 1'),
                     at('   Shape (node_Shape_2)')];
        return {ok: m.placementsFromLog(log), none: m.placementsFromLog(['[W:onnxruntime:, x.cc:1 f] hello']),
                short: m.placementsFromLog(log.slice(0, 3)),
                all: m.placementsFromLog([at(' Node placements'),
                                          at('  All nodes placed on [WebGpuExecutionProvider]. Number of nodes: 5')]),
                counts: m.opCounts([{op: 'Mul'}, {op: 'Concat'}, {op: 'Mul'}, {op: 'Div'}])}; }""")
    assert got["ok"] == {"cpu": [{"op": "Squeeze", "name": "node_sym_size_int"},
                                 {"op": "Concat", "name": "node_Concat_50"}], "total": 3}, got
    assert "no node placement" in got["none"]["error"] and "cpu" not in got["none"], got
    assert "lists 1 node(s) on CPUExecutionProvider where it says 2" in got["short"]["error"], got
    assert got["all"] == {"cpu": [], "total": 5}, got
    assert got["counts"] == "Mul×2, Concat×1, Div×1" == _op_counts(["Mul", "Concat", "Mul", "Div"])


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


# ---------------------------------------------------------------------------------------------------- transformers.js
# On conftest's session ``tiny_release`` (the release recipe at 28x42: config.json, preprocessor_config.json,
# onnx/model*.onnx with dynamic height and width). transformers.js preprocesses with upstream's preprocessor_config.json (518, aspect
# ratio kept, multiples of 14): on rgb_97x61.png it runs the model at 322x518.

TJS_FILES = {"fp32": "onnx/model.onnx", "fp16": "onnx/model_fp16.onnx", "q8": "onnx/model_quantized.onnx"}
TJS_VENDOR = ("/vendor/@huggingface/transformers/dist/", "/vendor/@huggingface/transformers/ort/")
PHOTO_HW = (61, 97)       # rgb_97x61.png


def _dpt_size(h: int, w: int, size: tuple[int, int] = (518, 518), multiple: int = 14) -> tuple[int, int]:
    """Upstream DPTImageProcessor's keep_aspect_ratio + ensure_multiple_of size, as transformers.js computes it: the
    scale closer to 1 for both sides, each side rounded (half to even) to a multiple of 14."""
    sh, sw = size[0] / h, size[1] / w
    s = sw if abs(1 - sw) < abs(1 - sh) else sh
    return round(s * h / multiple) * multiple, round(s * w / multiple) * multiple


def _tjs_release_copy(src, dst, size: tuple[int, int] | None = None) -> str:
    """A copy of the tiny release; with ``size`` (h, w) its preprocessor_config.json asks for that size (manifest.json
    updated to the new bytes): transformers.js then runs the model at the page's own size."""
    from edgedepth.release import manifest as mf

    shutil.copytree(src, dst)
    if size:
        pre = os.path.join(dst, "preprocessor_config.json")
        with open(pre) as f:
            cfg = json.load(f)
        cfg["size"] = {"height": size[0], "width": size[1]}
        with open(pre, "w") as f:
            json.dump(cfg, f, indent=2)
        m = mf.load(str(dst))
        for f in m["files"]:
            if f["path"] == "preprocessor_config.json":
                f.update(mf.file_entry(str(dst), f["path"]))
        mf.write(str(dst), m)
    return str(dst)


def _bilinear(y, size: tuple[int, int], dtype) -> np.ndarray:
    """[.., h, w] -> [H, W] bilinear, half-pixel centres, no antialiasing: ONNX Resize(linear)'s defaults (what
    transformers.js' interpolate_4d runs) = PyTorch's align_corners=False; computed in ``dtype``."""
    import torch

    t = torch.from_numpy(np.asarray(y, dtype)).reshape(1, 1, *np.shape(y)[-2:])
    return torch.nn.functional.interpolate(t, size=size, mode="bilinear", align_corners=False)[0, 0].numpy()


def _assert_tjs_files_verified(p: Page, base: str, st: dict, artifact: str) -> None:
    """transformers.js got config.json, preprocessor_config.json and ``artifact``, each from the page's verified store
    (a "SHA-256 verified ... for transformers.js" message per file); it fetched nothing itself (its env.fetch was never
    called); every request of the page went to this server: the page, the vendored runtimes, manifest.json and the files
    it lists, each file once."""
    t = st["tjs"]
    assert sorted(t["files"]) == sorted(["config.json", "preprocessor_config.json", artifact]), t
    assert t["unverified"] == [], t["unverified"]
    shown = p.messages_text()
    for f in t["files"]:
        assert any(line.startswith(f"{f}: ") and "SHA-256 verified" in line and "for transformers.js" in line
                   for line in shown.splitlines()), (f, shown)
    outside = [u for u in p.requests if not u.startswith((base, "data:", "blob:"))]
    assert not outside, outside
    local = ["/" + u[len(base):].split("?")[0] for u in p.requests if u.startswith(base)]
    release = [u for u in local if u.startswith("/release/")]
    assert len(release) == len(set(release)), release
    listed = {"/release/manifest.json"} | {f"/release/{f['path']}" for f in p.page.evaluate("edgedepth.manifest.files")}
    assert set(release) <= listed and {f"/release/{f}" for f in t["files"]} <= set(release), release
    tjs = [u for u in local if u.startswith("/vendor/@huggingface/")]
    assert tjs and all(u.startswith(TJS_VENDOR) for u in tjs), tjs


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "q8"])
def test_transformers_js_runs_the_release_folder(dtype, tiny_release, tiny_ckpt, serve_folder, open_page):
    """?runtime=tjs: transformers.js's pipeline('depth-estimation') on the release folder (wasm), from files the page
    verified; its depth map has the photo's size; the page shows where its preprocessing differs from ours (its
    pixel_values vs preprocess.js at its size: the same number numpy gets against edgedepth.preprocess). fp32: the map
    is the checkpoint on its pixel_values, resized bilinearly, within FP32 noise of float64."""
    artifact = TJS_FILES[dtype]
    base = serve_folder(str(tiny_release))
    p = open_page(f"{base}?runtime=tjs&backend=wasm&artifact={artifact}")
    assert p.page.eval_on_selector("#artifact", "e => e.value") == artifact
    assert f"dtype {dtype}" in p.page.inner_text("#artifact-info")
    st = p.run_photo(timeout_s=240)
    t = st["tjs"]
    assert st["mode"] == "tjs" and st["artifact"] == artifact and not st["errors"], st
    assert t["dtype"] == dtype and t["backend"] == "wasm" == st["backend"] and t["source"] == "network", t
    rt = st["runtime"]
    assert rt["tjs"]["version"] == "4.3.2" and rt["tjs"]["ort"].startswith("1.31.0-dev"), rt
    assert rt["tjs"]["threads"] == rt["threads"] and rt["crossOriginIsolated"], rt
    assert f"transformers.js 4.3.2 (its ONNX Runtime Web {rt['tjs']['ort']})" in p.page.inner_text("#st-runtime")
    assert "ms per pipeline call on wasm" in p.page.inner_text("#st-latency")
    # The depth map: the pipeline's predicted_depth, at the photo's size, drawn at that size.
    h0, w0 = PHOTO_HW
    assert t["outputSize"] == [h0, w0] and p.page.evaluate("edgedepth.lastOutputShape") == [1, h0, w0]
    assert p.canvas("depth").shape[:2] == (h0, w0)
    y = p.array("tjsLastOutput").reshape(h0, w0)
    np.testing.assert_array_equal(y, p.array("lastOutput").reshape(h0, w0))
    assert np.all(np.isfinite(y)) and np.ptp(y) > 0
    # Its preprocessing vs ours (edgedepth.preprocess = preprocess.js, bit-exact) at the size it chose.
    size = _dpt_size(h0, w0)
    assert t["pixelSize"] == list(size) == [322, 518], t
    pv = p.array("tjsPixelValues").reshape(1, 3, *size)
    np.testing.assert_array_equal(pv, p.array("lastInput").reshape(pv.shape))
    ours = _python_input(PHOTO, size)
    pre = t["preprocessing"]["inputs"]
    assert pre["relL2"] == pytest.approx(rel_l2(pv, ours), rel=1e-9), pre
    assert pre["maxAbs"] == float(np.abs(pv.astype(np.float64) - ours).max())
    assert 0 < pre["relL2"] < 0.5, pre      # canvas (bilinear) upscaling vs Pillow bicubic: they differ, moderately
    shown = p.page.inner_text("#st-tjs")
    assert f"pixel_values rel-L2 {_js_exp(pre['relL2'])}" in shown and "it fetched nothing itself" in shown, shown
    assert f"{artifact} (dtype {dtype}) on wasm" in shown, shown
    ref64 = _bilinear(float64_reference(tiny_ckpt.model, pv), (h0, w0), np.float64)
    if dtype == "fp32":
        fp32 = _bilinear(torch_fp32(tiny_ckpt.model, pv), (h0, w0), np.float32)
        err = assert_within_fp32_noise(y, ref64, fp32, what="transformers.js pipeline fp32 (wasm)")
    else:
        # FP16 / q8 files: their rounding / quantisation error, far above FP32 noise (a constant, conftest policy 3;
        # test_transformers_js.INT8_REL_L2_MAX: measured 7e-3..3e-2 for q8, ~1e-3 for FP16 on this model)
        err = rel_l2(y, ref64)
        assert 0 < err < 0.1, f"transformers.js {dtype} pipeline vs float64: rel-L2 {err:.3e}"
    print(f"transformers.js {dtype} pipeline vs float64 (its pixel_values): rel-L2 {err:.3e}")
    print(f"transformers.js {dtype}: pipeline {t['lastLatencyMs']:.0f} ms on wasm; pixel_values vs ours at "
          f"{size[0]}x{size[1]}: rel-L2 {pre['relL2']:.3e}, max abs {pre['maxAbs']:.3e}")
    _assert_tjs_files_verified(p, base, st, artifact)
    if dtype == "q8":   # reload: every file from Cache Storage, re-verified, no request for any of them
        n = len(p.requests)
        p.goto(f"{base}?runtime=tjs&backend=wasm&artifact={artifact}&autoload=1")
        p.wait("edgedepth.state === 'ready' || edgedepth.state === 'error'", 120)
        st = p.state()
        assert st["state"] == "ready" and set(st["tjs"]["sources"].values()) == {"cache"}, st["tjs"]
        assert sorted(st["tjs"]["files"]) == sorted(t["files"]) and st["tjs"]["unverified"] == [], st["tjs"]
        assert [u for u in p.requests[n:] if "/release/" in u] == [f"{base}release/manifest.json"], p.requests[n:]


def test_transformers_js_in_compare_mode(tiny_release, tiny_ckpt, serve_folder, open_page):
    """?runtime=compare&tjs=1: LiteRT.js, ORT-web and transformers.js (the same onnx/model.onnx as ORT-web, loaded
    from the page's Cache Storage, re-verified) on one photo. Shown and in E.compare.tjs, all finite: its model on the
    page's tensor vs both runtimes (FP32: within the FP32 noise bound, two FP32 runs), its pipeline map vs theirs at
    the photo's size, and its preprocessing vs ours at its size: pixel_values and the maps its model makes of each."""
    base = serve_folder(str(tiny_release))
    p = open_page(f"{base}?runtime=compare&backend=wasm&tjs=1")
    assert p.page.is_visible("#compare-tjs") and p.page.is_checked("#compare-tjs")
    assert "transformers.js runs onnx/model.onnx (dtype fp32)" in p.page.inner_text("#artifact-info")
    st = p.run_photo(timeout_s=240)
    assert st["mode"] == "compare" and not st["errors"], st
    c = st["compare"]
    t = c["tjs"]
    assert t["artifact"] == c["ort"]["artifact"] == "onnx/model.onnx" and t["backend"] == "wasm" and t["ms"] > 0, t
    assert st["tjs"]["source"] == "cache" and st["tjs"]["sources"]["config.json"] == "network", st["tjs"]
    H, W = t["modelSize"]
    h0, w0 = PHOTO_HW
    assert t["outputSize"] == [h0, w0] and t["pixelSize"] == list(_dpt_size(h0, w0)), t
    x = p.array("lastInput").reshape(1, 3, H, W)
    np.testing.assert_array_equal(x, _python_input(PHOTO, (H, W)))
    y_same = p.array("tjsSameTensorOutput").reshape(H, W)
    noise = _fp32_noise(tiny_ckpt.model, x)
    for rt, key in (("ort", "ortLastOutput"), ("litert", "lastOutput")):
        v = t["vs"][rt]
        other = p.array(key).reshape(H, W)
        assert v["sameTensor"]["relL2"] == pytest.approx(rel_l2(y_same, other), rel=1e-9, abs=1e-300), (rt, v)
        assert v["sameTensor"]["relL2"] <= 2 * FP32_NOISE_FACTOR * noise, (rt, v, noise)
        want = rel_l2(p.array("tjsLastOutput").reshape(h0, w0), _bilinear(other, (h0, w0), np.float64))
        assert v["pipeline"]["relL2"] == pytest.approx(want, rel=1e-4), (rt, v, want)   # float32 vs float64 resize
        assert np.isfinite(v["pipeline"]["relL2"]) and v["pipeline"]["relL2"] > 0
    pre = t["preprocessing"]
    assert pre["size"] == t["pixelSize"], pre
    assert all(np.isfinite(pre[k]["relL2"]) and pre[k]["relL2"] > 0 for k in ("inputs", "maps")), pre
    _assert_fp32_parity(y_same, tiny_ckpt.model, x, "transformers.js fp32 on the page's tensor")
    shown = p.page.inner_text("#st-tjs")
    for text in (f"pixel_values rel-L2 {_js_exp(pre['inputs']['relL2'])}",
                 f"depth rel-L2 {_js_exp(pre['maps']['relL2'])}",
                 f"vs ONNX Runtime Web: same {H}x{W} tensor rel-L2 {_js_exp(t['vs']['ort']['sameTensor']['relL2'])}",
                 f"vs LiteRT.js: same {H}x{W} tensor rel-L2 {_js_exp(t['vs']['litert']['sameTensor']['relL2'])}",
                 f"both at {h0}x{w0}: rel-L2 {_js_exp(t['vs']['ort']['pipeline']['relL2'])}"):
        assert text in shown, (text, shown)
    assert "transformers.js 4.3.2" in p.page.inner_text("#st-runtime")
    assert f"transformers.js {t['ms']:.1f} ms per pipeline call on wasm" in p.page.inner_text("#st-latency")
    assert p.page.is_visible("#depth-tjs") and p.canvas("depth-tjs").shape[:2] == (h0, w0)
    assert "transformers.js: wasm (CPU)" in p.page.inner_text("#st-backend")
    print(f"compare + transformers.js (wasm): same tensor vs ORT-web {t['vs']['ort']['sameTensor']['relL2']:.3e}, vs "
          f"LiteRT.js {t['vs']['litert']['sameTensor']['relL2']:.3e} (bound {2 * FP32_NOISE_FACTOR * noise:.3e}); "
          f"pipeline map vs ORT-web at {h0}x{w0} {t['vs']['ort']['pipeline']['relL2']:.3e}; preprocessing: inputs "
          f"{pre['inputs']['relL2']:.3e}, maps {pre['maps']['relL2']:.3e}")
    _assert_tjs_files_verified(p, base, st, "onnx/model.onnx")
    assert p.model_requests(".onnx") == [f"{base}release/onnx/model.onnx"], p.model_requests(".onnx")


def test_transformers_js_refuses_a_tampered_config(tmp_path, tiny_release, serve_folder, open_page):
    """preprocessor_config.json changed after manifest.json was written (still valid JSON: 518 -> 517): the page refuses
    it, transformers.js builds no pipeline, nothing runs, nothing is cached."""
    folder = _tjs_release_copy(tiny_release, tmp_path / "release")
    pre = os.path.join(folder, "preprocessor_config.json")
    text = open(pre).read()
    assert '"height": 518' in text
    open(pre, "w").write(text.replace('"height": 518', '"height": 517'))
    base = serve_folder(folder)
    p = open_page(f"{base}?runtime=tjs&backend=wasm&autoload=1")
    p.wait("edgedepth.state === 'error' || edgedepth.state === 'ready'", 120)
    st = p.state()
    assert st["state"] == "error" and st["runs"] == 0 and st["backend"] is None, st
    assert any("preprocessor_config.json" in e and "SHA-256 mismatch" in e and "refusing" in e
               for e in st["errors"]), st
    assert "SHA-256 mismatch for preprocessor_config.json" in p.page.inner_text("#messages .msg.error")
    keys = p.page.evaluate("caches.open('edgedepth-models-v1').then(c => c.keys()).then(k => k.map(r => r.url))")
    assert not any("preprocessor_config.json" in k for k in keys), keys
    # transformers.js, refused the file, looked for it elsewhere: its env.fetch answered "not found" (no request)
    assert all(u.startswith("/edgedepth-verified/release/") for u in p.page.evaluate("edgedepth.tjs.unverified"))
    assert [u for u in p.requests if "preprocessor_config" in u] == [f"{base}release/preprocessor_config.json"]


def test_transformers_js_on_webgpu(tmp_path, tiny_release, serve_folder, open_page):
    """backend=webgpu: transformers.js runs its pipeline with device 'webgpu' (SwiftShader here; its preprocessor asks
    for 28x42, the page's size, to keep SwiftShader's shader compilation short); auto on a software adapter -> wasm,
    with the reason, as for the other runtimes."""
    folder = _tjs_release_copy(tiny_release, tmp_path / "release", size=(28, 42))
    base = serve_folder(folder)
    p = open_page(f"{base}?runtime=tjs&backend=webgpu")
    st = p.run_photo(timeout_s=300)
    t = st["tjs"]
    assert t["backend"] == "webgpu" == st["backend"] and not st["errors"] and "swiftshader" in st["adapter"].lower(), st
    assert t["pixelSize"] == [28, 42] and t["outputSize"] == list(PHOTO_HW), t
    assert p.page.inner_text("#st-backend").startswith("WebGPU (as transformers.js runs it")
    assert np.all(np.isfinite(p.array("tjsLastOutput"))) and np.isfinite(t["preprocessing"]["inputs"]["relL2"])
    _assert_tjs_files_verified(p, base, st, "onnx/model.onnx")
    p = open_page(f"{base}?runtime=tjs&backend=auto")
    st = p.run_photo()
    assert st["tjs"]["backend"] == "wasm" and "software fallback adapter" in st["tjs"]["backendReason"], st["tjs"]
    assert "Running on wasm (transformers.js)" in p.messages_text()


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
