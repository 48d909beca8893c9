"""``edgedepth serve FOLDER``: the browser playground for a release folder, on loopback only.

Serves these from one origin (standard library ``http.server``, no web framework):

- ``/``                      the playground page (``web/``: plain ES modules, no bundler);
- ``/vendor/@litertjs/...``  the LiteRT.js runtime installed by ``npm ci --prefix web`` (pinned in web/package-lock.json;
                             never a CDN);
- ``/vendor/onnxruntime-web/dist/*.{mjs,wasm}``  ONNX Runtime Web, installed the same way (only its ES modules and
                             wasm binaries; optional: without it the page says what to run when ORT-web is chosen);
- ``/release/...``           ``manifest.json`` and the files it lists — nothing else in the folder.

Every response carries ``Cross-Origin-Opener-Policy: same-origin`` and ``Cross-Origin-Embedder-Policy: require-corp``
(the page is cross-origin isolated, so LiteRT.js and ORT-web can use SharedArrayBuffer and threaded wasm) and
``Cache-Control: no-cache``; the page keeps verified model files in Cache Storage itself.
"""

from __future__ import annotations

import argparse
import errno
import ipaddress
import json
import os
import posixpath
import shutil
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

from .errors import EdgedepthError

DEFAULT_PORT = 8000
DEFAULT_HOST = "127.0.0.1"
MANIFEST = "manifest.json"
LITERT_PACKAGES = ("core", "wasm-utils")           # web/node_modules/@litertjs/<name>
VENDOR_PREFIX = "/vendor/@litertjs/"
ORT_PREFIX = "/vendor/onnxruntime-web/dist/"        # web/node_modules/onnxruntime-web/dist/*.mjs, *.wasm
ORT_SUFFIXES = (".mjs", ".wasm")
RELEASE_PREFIX = "/release/"
RUNNABLE = ("tflite", "onnx")                     # manifest formats: LiteRT.js runs .tflite, ONNX Runtime Web .onnx

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


def web_dir() -> str:
    """The playground's files: ``EDGEDEPTH_WEB_DIR`` or ``web/`` of this checkout (src layout: ../../web)."""
    env = os.environ.get("EDGEDEPTH_WEB_DIR")
    if env:
        return os.path.abspath(env)
    return os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "web"))


def _check_web(web: str) -> None:
    if not os.path.isfile(os.path.join(web, "index.html")):
        raise EdgedepthError(f"the playground page is missing ({os.path.join(web, 'index.html')!r}); "
                             "set EDGEDEPTH_WEB_DIR to the repository's web/ folder")
    wasm = os.path.join(web, "node_modules", "@litertjs", "core", "wasm")
    if not os.path.isdir(wasm) or not any(n.endswith(".wasm") for n in os.listdir(wasm)):
        raise EdgedepthError(f"the LiteRT.js runtime is not installed ({wasm!r} is missing): run "
                             f"`npm ci --prefix {os.path.relpath(web)}` once")


def ort_problem(web: str) -> str | None:
    """Why ONNX Runtime Web cannot be served (the page shows the same advice when it is chosen), or None."""
    dist = os.path.join(web, "node_modules", "onnxruntime-web", "dist")
    if not os.path.isdir(dist) or not any(n.endswith(".wasm") for n in os.listdir(dist)):
        return (f"ONNX Runtime Web is not installed ({dist!r} is missing): run "
                f"`npm ci --prefix {os.path.relpath(web)}` once to run .onnx files in the playground")
    return None


def _check_release(folder: str) -> dict:
    from .release import manifest as mf

    if not os.path.exists(folder):
        raise EdgedepthError(f"release folder {folder!r} does not exist")
    if not os.path.isdir(folder):
        raise EdgedepthError(f"{folder!r} is not a folder (give the release folder that holds {MANIFEST})")
    m = mf.load(folder)  # one-line errors: no manifest, invalid JSON, not an edgedepth manifest
    models = [f for f in m["files"] if f.get("format") in RUNNABLE]    # what the page runs (the manifest says)
    if not models:
        raise EdgedepthError(f"{os.path.join(folder, MANIFEST)!r} lists no .tflite or .onnx file: nothing for the "
                             "playground")
    missing = [f["path"] for f in models if not os.path.isfile(os.path.join(folder, f["path"]))]
    if missing:
        raise EdgedepthError(f"release folder {folder!r} is incomplete: {missing[0]} is listed in {MANIFEST} but missing "
                             "(run `edgedepth verify`)")
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


class PlaygroundHandler(BaseHTTPRequestHandler):
    """GET/HEAD for the page, the vendored runtime and the release folder; 404 for anything else."""

    server_version = "edgedepth-serve"
    web = ""        # set on the subclass made by make_server
    release = ""
    quiet = True

    def resolve(self, url_path: str) -> str | None:
        path = unquote(url_path)
        if path == "/":
            path = "/index.html"
        if path.startswith(RELEASE_PREFIX):
            rel = path[len(RELEASE_PREFIX):]
            if rel != MANIFEST and rel not in self._listed():
                return None
            return _safe_join(self.release, rel)
        if path.startswith(ORT_PREFIX):
            name = path[len(ORT_PREFIX):]
            if "/" in name or not name.endswith(ORT_SUFFIXES):
                return None
            return _safe_join(os.path.join(self.web, "node_modules", "onnxruntime-web", "dist"), name)
        if path.startswith(VENDOR_PREFIX):
            pkg, _, rest = path[len(VENDOR_PREFIX):].partition("/")
            if pkg not in LITERT_PACKAGES or not (rest.startswith(("dist/", "wasm/")) or rest == "package.json"):
                return None
            return _safe_join(os.path.join(self.web, "node_modules", "@litertjs", pkg), rest)
        rel = path.lstrip("/")
        if rel.startswith("node_modules/") or rel in ("package.json", "package-lock.json"):
            return None
        return _safe_join(self.web, rel)

    def _listed(self) -> set[str]:
        try:
            with open(os.path.join(self.release, MANIFEST), encoding="utf-8") as f:
                return {str(e.get("path")) for e in json.load(f).get("files", [])}
        except (OSError, ValueError, AttributeError):
            return set()

    def _send(self, head_only: bool) -> None:
        path = self.resolve(urlsplit(self.path).path)
        if path is None:
            self.send_error(HTTPStatus.NOT_FOUND, "not found")
            return
        ctype = MIME.get(os.path.splitext(path)[1].lower(), "application/octet-stream")
        try:
            f = open(path, "rb")
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, "not found")
            return
        with f:
            size = os.fstat(f.fileno()).st_size
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if not head_only:
                try:
                    shutil.copyfileobj(f, self.wfile, 1 << 20)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the page cancelled the download

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        self._send(head_only=False)

    def do_HEAD(self) -> None:  # noqa: N802
        self._send(head_only=True)

    def end_headers(self) -> None:
        for k, v in SECURITY_HEADERS.items():
            self.send_header(k, v)
        super().end_headers()

    def log_message(self, format: str, *args) -> None:  # noqa: A002 (signature of the base class)
        if not self.quiet:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True    # SO_REUSEADDR: restart right after a stop; a port in LISTEN use still fails


class _Server6(_Server):
    address_family = socket.AF_INET6


def make_server(folder: str, port: int = DEFAULT_PORT, host: str = DEFAULT_HOST, *, web: str | None = None,
                quiet: bool = True) -> ThreadingHTTPServer:
    """Check everything, bind, and return the server (not yet serving). ``port=0`` picks a free port."""
    _check_host(host)
    _check_release(folder)
    web = os.path.abspath(web or web_dir())
    _check_web(web)
    if not 0 <= int(port) <= 65535:
        raise EdgedepthError(f"--port {port}: expected 0..65535")
    handler = type("Handler", (PlaygroundHandler,), {"web": web, "release": os.path.abspath(folder), "quiet": quiet})
    cls = _Server6 if ":" in host else _Server
    try:
        return cls((host, int(port)), handler)
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
          quiet: bool = False) -> int:
    """Serve the playground for the release folder ``folder`` until Ctrl-C; returns 0."""
    server = make_server(folder, port, host, web=web, quiet=quiet)
    url = url_of(server)
    m = _check_release(folder)
    n = sum(1 for f in m["files"] if f.get("format") in RUNNABLE)
    print(f"edgedepth playground: {url}  (release folder {folder}, {n} model file{'s' * (n != 1)}; Ctrl-C to stop)",
          flush=True)
    problem = ort_problem(os.path.abspath(web or web_dir()))
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
    return serve(args.folder, args.port, args.host, quiet=args.quiet)


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``edgedepth serve`` on the CLI's subparsers; returns the subparser."""
    p = subparsers.add_parser("serve", help="browser playground for a release folder (LiteRT.js and ONNX Runtime Web, "
                                            "WebGPU or wasm)",
                              description="Serve a release folder and the playground page on a loopback address. "
                                          "Set-up once: npm ci --prefix web")
    p.add_argument("folder", help="release folder (with manifest.json)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"TCP port (default {DEFAULT_PORT}; 0 = any free)")
    p.add_argument("--host", default=DEFAULT_HOST, help="loopback address to listen on (default 127.0.0.1)")
    p.add_argument("--quiet", action="store_true", help="do not log requests")
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
        print(f"edgedepth: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
