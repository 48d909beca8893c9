"""Issue 27 item 6: ``edgedepth serve`` against hostile requests and hostile release folders.

The server runs in this process (``make_server(port=0)`` + ``start_in_thread``) on 127.0.0.1 only, with a one-second
idle timeout and a stand-in web/ folder (the real index.html, a placeholder LiteRT.js wasm), so no npm install is
needed.  Requests go through raw sockets (bytes http.client refuses to send) or http.client.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import os
import re
import shutil
import socket
import threading
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST = "127.0.0.1"
IDLE_S = 1.0
LISTED = {"model.tflite": b"TFL3" * 64, "notes.txt": b"notes\n", "LICENSE": b"licence\n",
          "page.html": b"<script>1</script>",
          "icon.svg": b"<svg xmlns='http://www.w3.org/2000/svg'><script>1</script></svg>", "run.js": b"alert(1)",
          "mod.mjs": b"export {}", "doc.xhtml": b"<html/>", "page.htm": b"<p>", "sub/config.json": b"{}"}


@pytest.fixture()
def web(tmp_path):
    """A web/ folder the server accepts: the real page and a placeholder LiteRT.js wasm binary."""
    w = tmp_path / "web"
    (w / "node_modules" / "@litertjs" / "core" / "wasm").mkdir(parents=True)
    (w / "node_modules" / "@litertjs" / "core" / "wasm" / "x.wasm").write_bytes(b"\0asm")
    shutil.copyfile(os.path.join(ROOT, "web", "index.html"), w / "index.html")
    return str(w)


@pytest.fixture()
def release(tmp_path):
    """A release folder listing a model, text files and page/script types (.html, .svg, .js, ...)."""
    from edgedepth.release import manifest as mf

    folder = tmp_path / "rel"
    for rel, data in LISTED.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    (folder / "unlisted.txt").write_text("not in the manifest")
    entries = [mf.file_entry(str(folder), rel, **({"format": "tflite"} if rel.endswith(".tflite") else {}))
               for rel in LISTED]
    mf.write(str(folder), {"name": "hostile", "files": entries})
    return str(folder)


@pytest.fixture()
def server(release, web):
    from edgedepth.serve import make_server, start_in_thread

    srv = make_server(release, port=0, host=HOST, web=web, quiet=False, timeout=IDLE_S)
    start_in_thread(srv)
    yield srv
    srv.shutdown()
    srv.server_close()


def _port(server) -> int:
    return server.server_address[1]


def _raw(server, request: bytes) -> bytes:
    """Send ``request`` as-is, return the whole reply (the server closes after one answer)."""
    with socket.create_connection((HOST, _port(server)), timeout=30) as s:
        s.sendall(request)
        chunks = []
        while chunk := s.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def _status(reply: bytes) -> int:
    assert reply.startswith(b"HTTP/1."), reply[:200]
    return int(reply.split(b" ", 2)[1])


def _get(server, path: str, host: str = HOST, method: str = "GET"):
    c = http.client.HTTPConnection(HOST, _port(server), timeout=30)
    c.putrequest(method, path, skip_host=True)
    c.putheader("Host", host)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    return r.status, {k.lower(): v for k, v in r.getheaders()}, body


def _request_threads_done() -> None:
    """Wait (bounded) until the server's per-connection threads have finished, so their log lines are written."""
    deadline = time.monotonic() + 30
    while any(t.name.endswith("(process_request_thread)") for t in threading.enumerate()):
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)


def test_undecodable_paths_are_400_without_traceback(server, capfd):
    """D13: /%00, /index.html%00.png, bad percent-escapes, non-UTF-8 and control bytes: 400 and no traceback in the
    server log (was a ValueError traceback and an empty reply); the server keeps answering."""
    for path in (b"/%00", b"/index.html%00.png", b"/release/model.tflite%00", b"/%zz", b"/%", b"/%c3%28",
                 b"/release/%ff.tflite", b"/%1b[2J", b"/a\x01b", b"/caf\xe9", b"http://[::1/x"):
        reply = _raw(server, b"GET " + path + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert _status(reply) == 400, (path, reply[:200])
    assert _get(server, "/")[0] == 200
    _request_threads_done()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "ValueError" not in err and "\x1b" not in err, err


def test_foreign_host_header_is_refused(server):
    """D13: DNS rebinding: a Host that is not a loopback address or localhost (any port) gets 421; a missing Host on
    HTTP/1.1 or two Host headers get 400; HTTP/1.0 without Host (no browser sends that) is answered."""
    for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.1",
                 "[::ffff:10.0.0.1]:80", "localhost:http", "0.0.0.0"):
        assert _get(server, "/", host=host)[0] == 421, host
        assert _get(server, "/release/model.tflite", host=host)[0] == 421, host
    for host in ("127.0.0.1", f"127.0.0.1:{_port(server)}", "LOCALHOST:1", "127.9.9.9", "[::1]", "[::1]:8000"):
        assert _get(server, "/", host=host)[0] == 200, host
    assert _status(_raw(server, b"GET / HTTP/1.1\r\n\r\n")) == 400
    assert _status(_raw(server, b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.example\r\n\r\n")) == 400
    assert _status(_raw(server, b"GET / HTTP/1.0\r\n\r\n")) == 200


def _inline_script_hashes(index_html: str) -> list[str]:
    scripts = re.findall(r"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", index_html, re.S)
    return ["'sha256-" + base64.b64encode(hashlib.sha256(s.encode()).digest()).decode() + "'" for s in scripts]


def test_csp_header_on_every_response(server, web):
    """D13: a Content-Security-Policy on the page and on release files: same-origin scripts (the page's inline
    scripts by hash), wasm compilation, no framing, no plug-ins."""
    hashes = _inline_script_hashes(open(os.path.join(web, "index.html"), encoding="utf-8").read())
    assert len(hashes) == 2          # the import map and the start-up error handler
    for path in ("/", "/release/model.tflite", "/release/manifest.json", "/nope"):
        csp = _get(server, path)[1]["content-security-policy"]
        directives = {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}
        assert directives["default-src"] == ["'none'"]
        assert set(directives["script-src"]) == {"'self'", "'wasm-unsafe-eval'", *hashes}
        assert directives["frame-ancestors"] == ["'none'"] and directives["object-src"] == ["'none'"]
        assert directives["connect-src"] == ["'self'"] and directives["base-uri"] == ["'none'"]


def test_release_serves_only_listed_model_and_data_files(server, release, tmp_path):
    """D13: a manifest-listed .html/.htm/.svg/.js/.mjs/.xhtml is not served from the playground's origin; listed models
    and text files are, with a non-page type; unlisted files, symlinked entries and a broken manifest serve nothing."""
    for rel in ("page.html", "page.htm", "icon.svg", "run.js", "mod.mjs", "doc.xhtml", "unlisted.txt", "../rel/LICENSE",
                "sub/../LICENSE"):
        assert _get(server, f"/release/{rel}")[0] == 404, rel
    expected = {"model.tflite": "application/octet-stream", "notes.txt": "text/plain", "LICENSE": "text/plain",
                "sub/config.json": "application/json", "manifest.json": "application/json"}
    for rel, ctype in expected.items():
        status, headers, body = _get(server, f"/release/{rel}")
        assert status == 200 and headers["content-type"].startswith(ctype), (rel, status, headers)
        assert headers["x-content-type-options"] == "nosniff"
        if rel in LISTED:
            assert body == LISTED[rel]
    outside = tmp_path / "secret.txt"
    outside.write_bytes(LISTED["notes.txt"])       # same bytes: the manifest's hash would match
    os.remove(os.path.join(release, "notes.txt"))
    os.symlink(outside, os.path.join(release, "notes.txt"))
    shutil.move(os.path.join(release, "sub"), tmp_path / "sub")
    os.symlink(tmp_path / "sub", os.path.join(release, "sub"))
    assert _get(server, "/release/notes.txt")[0] == 404 and _get(server, "/release/sub/config.json")[0] == 404
    with open(os.path.join(release, "manifest.json"), "w") as f:
        f.write('{"schema_version": 1, "files": [{"path": "LICENSE"}]}')       # no longer a valid manifest
    assert _get(server, "/release/LICENSE")[0] == 404 and _get(server, "/release/model.tflite")[0] == 404


def test_idle_and_half_open_connections_are_closed(server):
    """D13: a connection that sends nothing, or half a request, is closed after the idle timeout (one second here;
    the read below only guards against a hang), and the server keeps answering afterwards."""
    for sent in (b"", b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n", b"GE"):
        with socket.create_connection((HOST, _port(server)), timeout=60) as s:
            s.sendall(sent)
            assert s.recv(65536) == b"", sent       # closed by the server, without an answer
    assert _get(server, "/")[0] == 200


def test_a_failure_while_answering_is_one_log_line_and_500(server, capfd, monkeypatch):
    """D13: any exception in the handler is a 500 and one log line, never a traceback; the next request is served."""
    def boom(self, path):
        raise RuntimeError("simulated failure")

    monkeypatch.setattr(server.RequestHandlerClass, "_open", boom)
    assert _get(server, "/")[0] == 500
    monkeypatch.undo()
    assert _get(server, "/")[0] == 200
    _request_threads_done()
    err = capfd.readouterr().err
    assert "Traceback" not in err and len([l for l in err.splitlines() if "RuntimeError: simulated failure" in l]) == 1


def test_timeout_must_be_positive(release, web):
    """D13: the idle timeout is a positive number of seconds (one line otherwise)."""
    from edgedepth.errors import EdgedepthError
    from edgedepth.serve import make_server

    with pytest.raises(EdgedepthError, match="timeout"):
        make_server(release, port=0, host=HOST, web=web, timeout=0)
