"""``edgedepth serve FOLDER``: the browser playground for a release folder, on loopback only.

Serves these from one origin (standard library ``http.server``, no web framework):

- ``/``                      the playground page (``web/`` and its subfolders such as ``runtimes/``, never
                             node_modules/, package files or dot-files: plain ES modules, no bundler);
- ``/vendor/@litertjs/...``  the LiteRT.js runtime installed by ``npm ci --prefix web`` (pinned in web/package-lock.json;
                             never a CDN);
- ``/vendor/onnxruntime-web/dist/*.{mjs,wasm}``  ONNX Runtime Web, installed the same way (only its ES modules and
                             wasm binaries; optional: without it the page says what to run when ORT-web is chosen);
- ``/vendor/@huggingface/transformers/dist/transformers{,.min}.js``  transformers.js's browser bundle (it carries its
                             own ONNX Runtime Web build) and ``/vendor/@huggingface/transformers/ort/*.{mjs,wasm}``
                             the wasm of that nested ORT-web (``node_modules/@huggingface/transformers/node_modules/
                             onnxruntime-web/dist``: :func:`tjs_ort_dist`); optional, as ORT-web is;
- ``/release/...``           ``manifest.json`` and the files it lists of model/data types (``RELEASE_TYPES``: .tflite,
                             .onnx, .pte, .json, .txt, .md, LICENSE, ...; never .html/.svg/.js), each a regular file
                             reached without a symlink (:func:`edgedepth.release.manifest.open_listed`) — nothing else.

Every response carries ``Cross-Origin-Opener-Policy: same-origin`` and ``Cross-Origin-Embedder-Policy: require-corp``
(the page is cross-origin isolated, so LiteRT.js and ORT-web can use SharedArrayBuffer and threaded wasm),
``Cache-Control: no-cache`` and a Content-Security-Policy (:func:`content_security_policy`: same-origin scripts, wasm,
workers and fetches only); the page keeps verified model files in Cache Storage itself.

Hostile requests: a path that is not printable UTF-8 after percent-decoding gets 400; a Host header that is not a
loopback name or address gets 421 (DNS rebinding); any failure while answering is one log line and a 500, never a
traceback; a connection idle for ``timeout`` seconds (default :data:`IDLE_TIMEOUT_S`) is closed.

Load: the kernel queues up to :data:`LISTEN_BACKLOG` connections; at most ``max_connections`` (default
:data:`MAX_CONNECTIONS`) are handled at once, each by its own thread, and the accept loop answers any more with 503 at
once (no thread); a request line and headers that do not all arrive within ``header_timeout`` seconds (default
:data:`HEADER_TIMEOUT_S`) of their first byte get 408 and the connection is closed (slowloris); ``manifest.json`` is
parsed once per version of the file (:func:`_listed_paths`), not per request.
"""

from __future__ import annotations

import argparse
import base64
import collections
import errno
import hashlib
import io
import ipaddress
import json
import os
import posixpath
import re
import shutil
import socket
import stat
import sys
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote_to_bytes, urlsplit

from . import formats, resources
from .errors import EdgedepthError
from .release import manifest as mf
from .release.manifest import escape

DEFAULT_PORT = 8000
DEFAULT_HOST = "127.0.0.1"
MANIFEST = "manifest.json"
LITERT_PACKAGES = ("core", "wasm-utils")           # web/node_modules/@litertjs/<name>
VENDOR_PREFIX = "/vendor/@litertjs/"
ORT_PREFIX = "/vendor/onnxruntime-web/dist/"        # web/node_modules/onnxruntime-web/dist/*.mjs, *.wasm
ORT_SUFFIXES = (".mjs", ".wasm")
TJS_PREFIX = "/vendor/@huggingface/transformers/dist/"      # transformers.js's browser bundles only
TJS_BUNDLES = ("transformers.js", "transformers.min.js")
TJS_ORT_PREFIX = "/vendor/@huggingface/transformers/ort/"   # its own ORT-web's dist/*.mjs, *.wasm (tjs_ort_dist)
RELEASE_PREFIX = "/release/"
RUNNABLE = tuple(f.name for f in formats.FORMATS if f.browser_runtime)   # manifest formats the page runs
IDLE_TIMEOUT_S = 30.0                             # a connection that sends nothing for this long is closed
LISTEN_BACKLOG = 128
"""listen() backlog: connections the kernel holds while the accept loop is busy.  socketserver's 5 let 153 of 300
simultaneous clients time out (their SYNs dropped); with 128 (Linux's historical somaxconn) all 300 were answered in
about a second.  Kept above :data:`MAX_CONNECTIONS`, so a burst past the cap gets a quick 503, not a stall."""
MAX_CONNECTIONS = 64
"""Connections handled at once (one thread each, each with up to a 1 MiB copy buffer: at most 64 MiB).  A browser
opens at most 6 connections per host, so this leaves room for ten tabs; any more get 503 from the accept loop."""
HEADER_TIMEOUT_S = 10.0
"""Seconds for a request line and its headers to arrive in full, counted from their first byte.  A browser sends them
in one write (a few KB over loopback); without a total limit a client sending one byte per idle period kept a thread
for as long as it liked (slowloris).  Generous for a loaded machine; idle connections are governed by the idle
timeout."""
RETRY_AFTER_S = 1
"""Retry-After of the 503 answered beyond :data:`MAX_CONNECTIONS`: connections to a local server finish in well under
a second, so one second later there is usually room."""
REFUSED_LINGER_S = 2.0
"""How long a connection answered 503 is kept to read (and drop) what its client still sends: closing a socket with
unread bytes resets the connection, which can make the client lose the 503 before it reads it."""
MAX_REFUSED = 256
"""Connections answered 503 that are kept lingering at once (file descriptors); beyond that the oldest is closed."""
MANIFEST_SETTLE_S = 2.0
"""A manifest whose status changed less than this long before it was read is parsed again on the next request instead
of being cached: file systems stamp changes with a coarse clock (a kernel tick; 1-2 s on some), so a same-size rewrite
within one tick would otherwise look unchanged."""

MIME = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".wasm": "application/wasm",
    ".tflite": "application/octet-stream",
    ".onnx": "application/octet-stream",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".md": "text/markdown; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}
# What /release/ serves of the files a manifest lists (by extension; LICENSE/NOTICE by name): models and data, never
# a type a browser would run as a page or script on the playground's origin (.html, .svg, .js, ...).
RELEASE_TYPES = {
    ".tflite": "application/octet-stream", ".onnx": "application/octet-stream", ".pte": "application/octet-stream",
    ".onnx_data": "application/octet-stream", ".data": "application/octet-stream", ".json": "application/json",
    ".txt": "text/plain; charset=utf-8", ".md": "text/markdown; charset=utf-8",
}
RELEASE_TEXT_NAMES = ("LICENSE", "NOTICE")
SECURITY_HEADERS = {
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    "Cross-Origin-Resource-Policy": "same-origin",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-cache",
}

# Headless Debian chromium for the playground's tests, benchmarks and docs/screenshot.png (Debian's build ships the
# SwiftShader Vulkan driver that WebGPU runs on here).
CHROMIUM = "/usr/bin/chromium"
_CHROMIUM_BASE = ("--no-sandbox", "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-quic", "--no-first-run")


def chromium_args(*, webgpu: bool = False, fake_camera: bool = False) -> list[str]:
    """Launch flags: offline and quiet; ``webgpu`` exposes the adapter (SwiftShader here; without it the page sees no
    WebGPU adapter); ``fake_camera`` gives getUserMedia Chromium's moving test pattern without a permission prompt."""
    args = list(_CHROMIUM_BASE)
    if webgpu:
        args.append("--enable-unsafe-webgpu")
    if fake_camera:
        args += ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]
    return args


def wait_in_page(page, expression: str, timeout_s: float, poll_s: float = 0.05) -> None:
    """Wait until the JavaScript ``expression`` is truthy in a Playwright ``page``; TimeoutError after ``timeout_s``.

    Use this, not ``page.wait_for_function``: that one evaluates the expression with an in-page ``eval``, which the
    playground's Content-Security-Policy (no ``'unsafe-eval'``) refuses; ``page.evaluate`` runs through the DevTools
    protocol, which the policy does not restrict."""
    from playwright.sync_api import Error as PlaywrightError

    check = f"() => {{ try {{ return !!({expression}); }} catch (e) {{ return false; }} }}"
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if page.evaluate(check):
                return
        except PlaywrightError:      # a navigation replaced the page's context: try again
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:g} s waiting for {expression!r} in the page")
        time.sleep(poll_s)


def web_dir() -> str:
    """The playground's files: ``EDGEDEPTH_WEB_DIR``, else ``web/`` of this installation (:mod:`edgedepth.resources`:
    the wheel's bundle, with the browser runtimes it serves, or the checkout's)."""
    env = os.environ.get("EDGEDEPTH_WEB_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.abspath(resources.path("web"))


def _check_web(web: str) -> None:
    if not os.path.isfile(os.path.join(web, "index.html")):
        raise EdgedepthError(f"the playground page is missing ({os.path.join(web, 'index.html')!r}); "
                             "set EDGEDEPTH_WEB_DIR to the repository's web/ folder")
    wasm = os.path.join(web, "node_modules", "@litertjs", "core", "wasm")
    if not os.path.isdir(wasm) or not any(n.endswith(".wasm") for n in os.listdir(wasm)):
        raise EdgedepthError(f"the LiteRT.js runtime is not installed ({wasm!r} is missing): run "
                             f"`ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix {os.path.relpath(web)}` (or make setup) once")


def ort_problem(web: str) -> str | None:
    """Why ONNX Runtime Web cannot be served (the page shows the same advice when it is chosen), or None."""
    dist = os.path.join(web, "node_modules", "onnxruntime-web", "dist")
    if not os.path.isdir(dist) or not any(n.endswith(".wasm") for n in os.listdir(dist)):
        return (f"ONNX Runtime Web is not installed ({dist!r} is missing): run "
                f"`ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix {os.path.relpath(web)}` (or make setup) once to run .onnx files in the playground")
    return None


def _tjs_dir(web: str) -> str:
    return os.path.join(web, "node_modules", "@huggingface", "transformers")


def tjs_ort_dist(web: str) -> str | None:
    """The ``dist/`` of the ONNX Runtime Web build transformers.js was built against: npm nests it under the package
    (``@huggingface/transformers/node_modules/onnxruntime-web``) since the page's own pin differs; a top-level
    ``onnxruntime-web`` is used only when it is exactly the version transformers.js asks for. None if neither."""
    import json

    try:
        with open(os.path.join(_tjs_dir(web), "package.json"), encoding="utf-8") as f:
            want = json.load(f)["dependencies"]["onnxruntime-web"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    for base in (os.path.join(_tjs_dir(web), "node_modules"), os.path.join(web, "node_modules")):
        pkg = os.path.join(base, "onnxruntime-web")
        try:
            with open(os.path.join(pkg, "package.json"), encoding="utf-8") as f:
                version = json.load(f)["version"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if version == want and os.path.isdir(os.path.join(pkg, "dist")):
            return os.path.join(pkg, "dist")
    return None


def tjs_problem(web: str) -> str | None:
    """Why transformers.js cannot be served (the page says the same when it is chosen), or None."""
    if not all(os.path.isfile(os.path.join(_tjs_dir(web), "dist", n)) for n in TJS_BUNDLES) or not tjs_ort_dist(web):
        return (f"transformers.js is not installed ({_tjs_dir(web)!r} or its onnxruntime-web is missing): run "
                f"`make setup` (or ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix {os.path.relpath(web)}) once to run "
                "the release folder with transformers.js in the playground")
    return None


def _check_release(folder: str) -> dict:
    if not os.path.exists(folder):
        raise EdgedepthError(f"release folder {folder!r} does not exist")
    if not os.path.isdir(folder):
        raise EdgedepthError(f"{folder!r} is not a folder (give the release folder that holds {MANIFEST})")
    m = mf.load(folder)  # one-line errors: no manifest, not UTF-8 / JSON, not a well-formed edgedepth manifest
    models = [f for f in m["files"] if f.get("format") in RUNNABLE]    # what the page runs (the manifest says)
    if not models:
        raise EdgedepthError(f"{os.path.join(folder, MANIFEST)!r} lists no .tflite or .onnx file: nothing for the "
                             "playground")
    for f in models:
        fh, problem = mf.open_listed(folder, f["path"])      # inside the folder, a regular file, no symlink
        if fh is None:
            raise EdgedepthError(f"release folder {folder!r} is incomplete or unsafe: {problem} "
                                 "(run `edgedepth verify`)")
        fh.close()
    return m


def _check_host(host: str) -> None:
    if host == "localhost":
        return
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise EdgedepthError(f"--host {host!r}: the playground serves on loopback addresses only "
                             "(127.0.0.1, ::1 or localhost)")


def _host_allowed(value: str) -> bool:
    """Host header names a loopback address or ``localhost`` (any port): another name is DNS rebinding."""
    host = value.strip().lower()
    if host.startswith("["):
        name, sep, port = host[1:].partition("]")
        if not sep or (port and not re.fullmatch(r":\d{1,5}", port)):
            return False
    else:
        name, _, port = host.partition(":")
        if port and not port.isdigit():
            return False
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _decode_path(raw: str) -> str | None:
    """The request target's path as text, or None (-> 400): bad percent-escapes, not UTF-8, control characters."""
    try:
        path = urlsplit(raw).path
    except ValueError:         # "http://[::1" and the like
        return None
    if re.search(r"%(?![0-9A-Fa-f]{2})", path) or not all("!" <= c <= "~" for c in path):
        return None
    try:
        text = unquote_to_bytes(path).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return text if text.isprintable() else None


_INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc\s*=)[^>]*>(.*?)</script\s*>", re.S | re.I)
_csp_cache: dict[tuple, str] = {}


def content_security_policy(web: str) -> str:
    """The page's CSP: scripts, wasm, workers, fetches, styles from this origin only; the page's inline scripts (the
    import map, the start-up error handler) by SHA-256, read from web/index.html.  LiteRT.js and ORT-web need
    ``'wasm-unsafe-eval'`` (compile wasm) and workers (threaded wasm; Emscripten may start them from blob: URLs)."""
    page = os.path.join(web, "index.html")
    try:
        st = os.stat(page)
        key = (page, st.st_mtime_ns, st.st_size)
        hashes = _csp_cache.get(key)
        if hashes is None:
            with open(page, encoding="utf-8") as f:
                scripts = _INLINE_SCRIPT.findall(f.read())
            hashes = " ".join(
                "'sha256-" + base64.b64encode(hashlib.sha256(t.encode()).digest()).decode() + "'" for t in scripts)
            _csp_cache.clear()      # one page: keep only its current version (threads may race here: harmless)
            _csp_cache[key] = hashes
    except (OSError, ValueError):
        hashes = ""
    return ("default-src 'none'; "
            f"script-src 'self' 'wasm-unsafe-eval' {hashes}; ".replace(" ;", ";") +
            "worker-src 'self' blob:; connect-src 'self'; img-src 'self' blob: data:; "
            "media-src 'self' blob: mediastream:; "
            "style-src 'self'; font-src 'self'; manifest-src 'self'; object-src 'none'; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'")


def _safe_join(root: str, rel: str) -> str | None:
    """``root/rel`` if it stays inside ``root`` and names a regular file, else None."""
    rel = posixpath.normpath("/" + rel).lstrip("/")
    if not rel or any(part.startswith(".") for part in rel.split("/")):
        return None
    path = os.path.realpath(os.path.join(root, *rel.split("/")))
    root = os.path.realpath(root)
    if os.path.commonpath([root, path]) != root or not os.path.isfile(path):
        return None
    return path


_FD_DIR = "/proc/self/fd" if os.path.isdir("/proc/self/fd") else None   # names an open folder by its descriptor
_listings: dict[tuple, frozenset[str] | None] = {}     # manifest file identity -> the paths it lists (None: invalid)
_listings_lock = threading.Lock()
_LISTINGS_KEPT = 8          # manifests remembered (one per release folder served; tests run several servers)


def _listed_paths(dir_fd: int) -> frozenset[str] | None:
    """The paths listed by ``manifest.json`` of the open release folder ``dir_fd``; None if it has no valid one.

    Parsed once per version of the file, recognised by (device, inode, size, mtime, ctime) of the file actually read
    (a 56 MB manifest took over a second per request to parse); a version changed less than
    :data:`MANIFEST_SETTLE_S` before it was read is not remembered.  One parse at a time: concurrent requests for
    a new version wait for it rather than parse it again."""
    try:
        fd = os.open(MANIFEST, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:              # missing, or a symlink (ELOOP)
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > mf.MAX_MANIFEST_BYTES:
            return None
        key = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        with _listings_lock:
            if key in _listings:
                return _listings[key]
            settled = time.time_ns() - st.st_ctime_ns > MANIFEST_SETTLE_S * 1e9
            try:
                m = mf.check_schema(json.loads(f.read(mf.MAX_MANIFEST_BYTES + 1).decode("utf-8")), MANIFEST)
                listed = frozenset(e["path"] for e in m["files"])
            except (OSError, ValueError, RecursionError, EdgedepthError):   # unreadable, not JSON, not a manifest
                listed = None
            if settled:
                while len(_listings) >= _LISTINGS_KEPT:
                    del _listings[next(iter(_listings))]
                _listings[key] = listed
            return listed


def _open_in(dir_fd: int, folder: str, rel: str):
    """:func:`mf.open_listed` of ``rel`` in the folder open as ``dir_fd`` (not whatever ``folder`` names by now)."""
    if _FD_DIR:
        return mf.open_listed(f"{_FD_DIR}/{dir_fd}", rel)
    fh, problem = mf.open_listed(folder, rel)
    try:
        same = fh is None or os.path.samestat(os.fstat(dir_fd), os.stat(folder))
    except OSError:
        same = False
    if not same:                 # the folder was swapped between the two opens
        fh.close()
        return None, f"changed while read: {escape(rel)}"
    return fh, problem


class _HeaderClock(io.RawIOBase):
    """A connection's reads, with a deadline for one request line and its headers (:meth:`arm`): counted from their
    first byte, each read waits at most the idle timeout and never past the deadline, then TimeoutError."""

    def __init__(self, raw, sock: socket.socket, idle_s: float, limit_s: float):
        super().__init__()
        self.raw, self.sock, self.idle_s, self.limit_s = raw, sock, idle_s, limit_s
        self.armed, self.deadline, self.expired = False, None, False

    def readable(self) -> bool:
        return True

    def arm(self) -> None:
        self.armed, self.deadline, self.expired = True, None, False

    def disarm(self) -> None:
        if self.deadline is not None:
            self.sock.settimeout(self.idle_s)
        self.armed, self.deadline = False, None

    def readinto(self, b) -> int | None:
        clocked = False          # this read waits until the deadline rather than the idle timeout
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.expired = True
                raise TimeoutError("request headers not received in time")
            clocked = left < self.idle_s
            self.sock.settimeout(min(self.idle_s, left))
        try:
            n = self.raw.readinto(b)
        except TimeoutError:
            self.expired = clocked
            raise
        if n and self.armed and self.deadline is None:
            self.deadline = time.monotonic() + self.limit_s
        return n

    def close(self) -> None:
        if not self.closed:
            self.raw.close()
        super().close()


class PlaygroundHandler(BaseHTTPRequestHandler):
    """GET/HEAD for the page, the vendored runtime and the release folder; 404 for anything else."""
    server_version = "edgedepth-serve"
    web = ""        # set on the subclass made by make_server
    release = ""
    quiet = True
    timeout = IDLE_TIMEOUT_S    # socket timeout (StreamRequestHandler): an idle or stalled connection is closed
    header_timeout = HEADER_TIMEOUT_S
    rbufsize = 0                # setup() gets the socket's raw reader and buffers it behind _HeaderClock

    def setup(self) -> None:
        super().setup()
        self._clock = _HeaderClock(self.rfile, self.connection, self.timeout, self.header_timeout)
        self.rfile = io.BufferedReader(self._clock)

    def handle_one_request(self) -> None:
        """One request, its request line and headers within ``header_timeout`` of their first byte (else 408)."""
        self._clock.arm()
        try:
            super().handle_one_request()
        finally:
            expired = self._clock.expired
            self._clock.disarm()
        if expired:
            self.close_connection = True
            self.command, self.request_version = "", "HTTP/1.1"
            self.requestline = getattr(self, "requestline", "")
            try:
                self.send_error(HTTPStatus.REQUEST_TIMEOUT, "request headers took too long")
            except OSError:
                pass

    def parse_request(self) -> bool:
        try:
            return super().parse_request()
        finally:
            self._clock.disarm()         # the headers are in: answering is not on the header clock

    def resolve(self, path: str) -> tuple[str, str] | None:
        """(file path, Content-Type) of a page/runtime file for the decoded URL path, or None."""
        if path == "/":
            path = "/index.html"
        if path.startswith(ORT_PREFIX):
            name = path[len(ORT_PREFIX):]
            if "/" in name or not name.endswith(ORT_SUFFIXES):
                return None
            found = _safe_join(os.path.join(self.web, "node_modules", "onnxruntime-web", "dist"), name)
        elif path.startswith(TJS_PREFIX):
            name = path[len(TJS_PREFIX):]
            if name not in TJS_BUNDLES:
                return None
            found = _safe_join(os.path.join(_tjs_dir(self.web), "dist"), name)
        elif path.startswith(TJS_ORT_PREFIX):
            name = path[len(TJS_ORT_PREFIX):]
            dist = tjs_ort_dist(self.web)
            if "/" in name or not name.endswith(ORT_SUFFIXES) or dist is None:
                return None
            found = _safe_join(dist, name)
        elif path.startswith(VENDOR_PREFIX):
            pkg, _, rest = path[len(VENDOR_PREFIX):].partition("/")
            if pkg not in LITERT_PACKAGES or not (rest.startswith(("dist/", "wasm/")) or rest == "package.json"):
                return None
            found = _safe_join(os.path.join(self.web, "node_modules", "@litertjs", pkg), rest)
        else:
            rel = path.lstrip("/")
            if rel.startswith("node_modules/") or rel in ("package.json", "package-lock.json"):
                return None
            found = _safe_join(self.web, rel)
        return (found, MIME.get(os.path.splitext(found)[1].lower(), "application/octet-stream")) if found else None

    def open_release_file(self, rel: str):
        """(open file, Content-Type) of ``manifest.json`` or a listed file of an allowed type, or None."""

        name = rel.rsplit("/", 1)[-1]
        ctype = "text/plain; charset=utf-8" if name in RELEASE_TEXT_NAMES else \
            RELEASE_TYPES.get(os.path.splitext(name)[1].lower())
        if ctype is None or mf.path_problem(rel):
            return None
        try:    # one open folder for the manifest and the file: a release swapped meanwhile never mixes with it
            dir_fd = os.open(self.release, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            if rel != MANIFEST and rel not in (_listed_paths(dir_fd) or ()):
                return None
            fh, _problem = _open_in(dir_fd, self.release, rel)
        finally:
            os.close(dir_fd)
        return (fh, ctype) if fh else None

    def _open(self, path: str):
        if path.startswith(RELEASE_PREFIX):
            return self.open_release_file(path[len(RELEASE_PREFIX):])
        found = self.resolve(path)
        if found is None:
            return None
        try:
            return open(found[0], "rb"), found[1]
        except OSError:
            return None

    def _refusal(self) -> tuple[HTTPStatus, str] | None:
        hosts = self.headers.get_all("Host") or []
        if len(hosts) > 1 or (not hosts and self.request_version != "HTTP/1.0"):
            return HTTPStatus.BAD_REQUEST, "one Host header expected"
        if hosts and not _host_allowed(hosts[0]):
            return HTTPStatus.MISDIRECTED_REQUEST, "this server answers to loopback host names only"
        return None

    def _send(self, head_only: bool) -> None:
        refusal = self._refusal()
        if refusal:
            self.send_error(*refusal)
            return
        path = _decode_path(self.path)
        if path is None:
            self.send_error(HTTPStatus.BAD_REQUEST, "undecodable path")
            return
        opened = self._open(path)
        if opened is None:
            self.send_error(HTTPStatus.NOT_FOUND, "not found")
            return
        f, ctype = opened
        with f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if not head_only:
                try:
                    shutil.copyfileobj(f, self.wfile, 1 << 20)
                except OSError:       # the page cancelled the download, or the client stopped reading (timeout)
                    self.close_connection = True

    def _answer(self, head_only: bool) -> None:
        """:meth:`_send`; any failure is one log line and a 500 (when nothing was sent yet), never a traceback."""
        self._sent = False
        try:
            self._send(head_only)
        except Exception as e:  # noqa: BLE001 (a hostile request must not print a traceback or kill the thread)
            self.close_connection = True
            self._log(f"error answering {self.path!r}: {type(e).__name__}: {e}")
            if not self._sent:
                try:
                    self.send_error(HTTPStatus.INTERNAL_SERVER_ERROR, "internal error")
                except OSError:
                    pass

    _sent = False    # whether a status line went out for the current request

    def send_response(self, code, message=None) -> None:
        super().send_response(code, message)
        self._sent = True

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._answer(head_only=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(head_only=True)

    def end_headers(self) -> None:
        for k, v in SECURITY_HEADERS.items():
            self.send_header(k, v)
        self.send_header("Content-Security-Policy", content_security_policy(self.web))
        super().end_headers()

    def _log(self, text: str) -> None:
        """One line on stderr, control characters escaped (a request line cannot write to the terminal)."""

        sys.stderr.write(f"{self.address_string()} {escape(text)}\n")

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (signature of the base class)
        if not self.quiet:
            self._log(format % args)


def _busy_reply() -> bytes:
    body = b"too many connections: try again in a moment\n"
    head = ["HTTP/1.1 503 Service Unavailable", f"Server: {PlaygroundHandler.server_version}",
            "Content-Type: text/plain; charset=utf-8", f"Content-Length: {len(body)}",
            f"Retry-After: {RETRY_AFTER_S}", "Connection: close", *(f"{k}: {v}" for k, v in SECURITY_HEADERS.items()),
            "Content-Security-Policy: default-src 'none'; frame-ancestors 'none'"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


_BUSY_REPLY = _busy_reply()


class _Server(ThreadingHTTPServer):
    """One thread per connection up to ``max_connections``; beyond that the accept loop answers 503 itself."""
    daemon_threads = True
    allow_reuse_address = True    # SO_REUSEADDR: restart right after a stop; a port in LISTEN use still fails
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, address, handler, max_connections: int = MAX_CONNECTIONS):
        self.max_connections = max_connections
        self.active_connections = 0              # connections with a handler thread
        self._count_lock = threading.Lock()
        self._refused: collections.deque = collections.deque()    # (socket, deadline): answered 503, lingering
        self._refusal_logged = -float("inf")
        super().__init__(address, handler)

    def process_request(self, request, client_address) -> None:
        with self._count_lock:
            full = self.active_connections >= self.max_connections
            if not full:
                self.active_connections += 1
        if full:
            self._refuse(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release()
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release()

    def _release(self) -> None:
        with self._count_lock:
            self.active_connections -= 1

    def _refuse(self, sock: socket.socket) -> None:
        """503 from the accept loop, without blocking it: the reply fits an empty send buffer; the socket lingers
        (:meth:`service_actions`) until its client closes or :data:`REFUSED_LINGER_S` passes."""
        now = time.monotonic()
        if now - self._refusal_logged >= 60:     # one line a minute at most, however many are refused
            self._refusal_logged = now
            sys.stderr.write(f"edgedepth serve: {self.max_connections} connections open: "
                             "answering 503 to new ones\n")
        try:
            sock.setblocking(False)
            sock.send(_BUSY_REPLY)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        if len(self._refused) >= MAX_REFUSED:
            self._refused.popleft()[0].close()
        self._refused.append((sock, now + REFUSED_LINGER_S))

    def service_actions(self) -> None:
        """Between accepts (and every poll interval): read and drop what refused clients send; close those done."""
        super().service_actions()
        now, keep = time.monotonic(), collections.deque()
        for sock, deadline in self._refused:
            if now < deadline and not _drained(sock):
                keep.append((sock, deadline))
            else:
                sock.close()
        self._refused = keep

    def server_close(self) -> None:
        super().server_close()
        while self._refused:
            self._refused.popleft()[0].close()

    def handle_error(self, request, client_address) -> None:
        """Anything that escaped the handler: one line on stderr, no traceback (socketserver prints one)."""
        e = sys.exc_info()[1]

        sys.stderr.write(f"edgedepth serve: error on a connection from {client_address[0]}: "
                         f"{type(e).__name__}: {escape(str(e))}\n")


class _Server6(_Server):
    address_family = socket.AF_INET6


def _drained(sock: socket.socket) -> bool:
    """Read what a non-blocking ``sock`` has waiting (a bounded amount); True once its client has closed."""
    for _ in range(16):
        try:
            if not sock.recv(65536):
                return True
        except BlockingIOError:
            return False
        except OSError:
            return True
    return False


def make_server(folder: str, port: int = DEFAULT_PORT, host: str = DEFAULT_HOST, *, web: str | None = None,
                quiet: bool = True, timeout: float = IDLE_TIMEOUT_S, header_timeout: float = HEADER_TIMEOUT_S,
                max_connections: int = MAX_CONNECTIONS) -> ThreadingHTTPServer:
    """Check everything, bind, and return the server (not yet serving). ``port=0`` picks a free port; a connection
    idle for ``timeout`` seconds is closed, as is one whose request line and headers take over ``header_timeout``
    seconds (408); at most ``max_connections`` are handled at once, any more get 503."""
    _check_host(host)
    _check_release(folder)
    web = os.path.abspath(web or web_dir())
    _check_web(web)
    if not 0 <= int(port) <= 65535:
        raise EdgedepthError(f"--port {port}: expected 0..65535")
    if not timeout > 0:
        raise EdgedepthError(f"timeout {timeout}: expected a positive number of seconds", option="timeout")
    if not header_timeout > 0:
        raise EdgedepthError(f"header_timeout {header_timeout}: expected a positive number of seconds",
                             option="header_timeout")
    if isinstance(max_connections, bool) or not isinstance(max_connections, int) or max_connections < 1:
        raise EdgedepthError(f"max_connections {max_connections}: expected a whole number of at least 1",
                             option="max_connections")
    handler = type("Handler", (PlaygroundHandler,), {"web": web, "release": os.path.abspath(folder), "quiet": quiet,
                                                     "timeout": float(timeout),
                                                     "header_timeout": float(header_timeout)})
    cls = _Server6 if ":" in host else _Server
    try:
        return cls((host, int(port)), handler, max_connections)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise EdgedepthError(f"port {port} on {host} is already in use (stop the other server or pick another "
                                 "with --port)") from None
        if e.errno == errno.EACCES:
            raise EdgedepthError(f"no permission to listen on port {port} (ports below 1024 need root; try --port "
                                 f"{DEFAULT_PORT})") from None
        raise EdgedepthError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


def url_of(server: ThreadingHTTPServer) -> str:
    host, port = server.server_address[:2]
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def start_in_thread(server: ThreadingHTTPServer) -> threading.Thread:
    """Serve in a daemon thread (tests, notebooks); stop with ``server.shutdown(); server.server_close()``."""
    t = threading.Thread(target=server.serve_forever, name="edgedepth-serve", daemon=True)
    t.start()
    return t


def serve(folder: str, port: int = DEFAULT_PORT, host: str = DEFAULT_HOST, *, web: str | None = None,
          quiet: bool = False, header_timeout: float = HEADER_TIMEOUT_S,
          max_connections: int = MAX_CONNECTIONS) -> int:
    """Serve the playground for the release folder ``folder`` until Ctrl-C; returns 0."""
    server = make_server(folder, port, host, web=web, quiet=quiet, header_timeout=header_timeout,
                         max_connections=max_connections)
    url = url_of(server)
    m = _check_release(folder)
    n = sum(1 for f in m["files"] if f.get("format") in RUNNABLE)
    print(f"edgedepth playground: {url}  (release folder {folder}, {n} model file{'s' * (n != 1)}; Ctrl-C to stop)",
          flush=True)
    for problem in (ort_problem(os.path.abspath(web or web_dir())), tjs_problem(os.path.abspath(web or web_dir()))):
        if problem:
            print(f"edgedepth serve: note: {problem}", file=sys.stderr, flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("edgedepth serve: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return 0


def cmd_serve(args) -> int:
    return serve(args.folder, args.port, args.host, quiet=args.quiet, header_timeout=args.header_timeout,
                 max_connections=args.max_connections)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``edgedepth serve`` on the CLI's subparsers; returns the subparser."""
    p = subparsers.add_parser("serve", help="browser playground for a release folder (LiteRT.js, ONNX Runtime Web and "
                                            "transformers.js, WebGPU or wasm)",
                              description="Serve a release folder and the playground page on a loopback address. "
                                          "Set-up once: make setup (or ONNXRUNTIME_NODE_INSTALL=skip npm ci --prefix web)")
    p.add_argument("folder", help="release folder (with manifest.json)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 = any free)")
    p.add_argument("--host", default=DEFAULT_HOST, help="loopback address to listen on (default 127.0.0.1)")
    p.add_argument("--quiet", action="store_true", help="do not log requests")
    p.add_argument("--max-connections", type=int, default=MAX_CONNECTIONS, metavar="N",
                   help=f"connections handled at once; more get 503 (default {MAX_CONNECTIONS})")
    p.add_argument("--header-timeout", type=float, default=HEADER_TIMEOUT_S, metavar="SECONDS",
                   help=f"time for a request's headers to arrive in full, else 408 (default {HEADER_TIMEOUT_S:g})")
    p.set_defaults(func=cmd_serve)
    return p


def main(argv: list[str] | None = None) -> int:
    """``python -m edgedepth.serve FOLDER``: the same as ``edgedepth serve`` (errors as one line, exit 2)."""
    parser = argparse.ArgumentParser(prog="edgedepth serve")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["serve", *(sys.argv[1:] if argv is None else argv)])
    try:
        return args.func(args)
    except EdgedepthError as e:
        print(f"edgedepth: error: {e.for_cli()}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
