"""Issue 27 item 6: ``edgedepth serve`` against hostile requests and hostile release folders.

The server runs in this process (``make_server(port=0)`` + ``start_in_thread``) on 127.0.0.1 only, with a one-second
idle timeout and a stand-in web/ folder (the real index.html, a placeholder LiteRT.js wasm), so no npm install is
needed.  Requests go through raw sockets (bytes http.client refuses to send) or http.client.  The load tests (listen
backlog, connection cap, header deadline, manifest parsed once per version) start servers of their own limits.
"""

from __future__ import annotations

import base64
import hashlib
import http.client
import json
import os
import re
import select
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


# ---------------------------------------------------------------------------------------------------- under load

def _connected(s: socket.socket) -> bool:
    try:
        s.getpeername()
    except OSError:          # still in SYN_SENT: the listen queue had no room for it
        return False
    return True


def test_listen_backlog_queues_many_connections(release, web):
    """Load: while the accept loop is busy, the kernel queues at least 100 connections (socketserver's backlog of 5
    left the rest unanswered: SYNs dropped, clients timing out); once serving, every one of them is answered (200, or
    503 beyond the connection cap)."""
    from edgedepth.serve import LISTEN_BACKLOG, make_server, start_in_thread

    n = 100
    assert LISTEN_BACKLOG >= 128 > n
    srv = make_server(release, port=0, host=HOST, web=web, timeout=60)       # bound and listening, not accepting yet
    socks, serving = [], False
    try:
        for _ in range(n):
            s = socket.socket()
            s.setblocking(False)
            s.connect_ex((HOST, _port(srv)))
            socks.append(s)
        deadline = time.monotonic() + 3       # a dropped SYN is retried after 1 s, then 3 s: still no room then
        while not all(map(_connected, socks)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert sum(map(_connected, socks)) == n
        start_in_thread(srv)
        serving = True
        statuses = []
        for s in socks:
            s.settimeout(30)
            s.sendall(b"GET /release/LICENSE HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        for s in socks:
            chunks = []
            while chunk := s.recv(65536):
                chunks.append(chunk)
            statuses.append(_status(b"".join(chunks)))
        assert set(statuses) <= {200, 503} and 200 in statuses, statuses
    finally:
        for s in socks:
            s.close()
        if serving:
            srv.shutdown()          # waits for serve_forever: only once it runs
        srv.server_close()


def test_connections_beyond_the_cap_get_503_at_once(release, web):
    """Load: with max_connections held open (half a request each; idle and header timeouts of a minute), each further
    connection gets 503 with Retry-After and Connection: close from the accept loop, long before any held connection
    times out; once one held connection closes, requests are served again."""
    from edgedepth.serve import make_server, start_in_thread

    cap = 4
    srv = make_server(release, port=0, host=HOST, web=web, timeout=60, header_timeout=60, max_connections=cap)
    start_in_thread(srv)
    held = []
    try:
        for _ in range(cap):     # accepted in order, so all are counted before the next connection is looked at
            s = socket.create_connection((HOST, _port(srv)), timeout=30)
            s.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            held.append(s)
        started = time.monotonic()
        for _ in range(10):
            reply = _raw(srv, b"GET /release/LICENSE HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            head = reply.split(b"\r\n\r\n", 1)[0].decode().lower().split("\r\n")
            assert _status(reply) == 503, reply[:200]
            assert "retry-after: 1" in head and "connection: close" in head, head
        assert time.monotonic() - started < 30          # answered at once: the held connections time out after 60 s
        assert srv.active_connections == cap            # no handler thread for the refused ones
        held.pop().close()
        deadline = time.monotonic() + 30
        while (status := _get(srv, "/release/LICENSE")[0]) == 503 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert status == 200
    finally:
        for s in held:
            s.close()
        srv.shutdown()
        srv.server_close()


def test_slowloris_headers_are_cut_off_by_the_deadline(release, web):
    """Load: a client sending its headers a byte at a time, each byte well inside the idle timeout, gets 408 and is
    closed once the header deadline has passed since its first byte, long before it would have finished (was: it held
    its thread for as long as it kept dribbling); the server then answers others as usual."""
    from edgedepth.serve import make_server, start_in_thread

    limit = 1.0
    step = limit / 4                                       # well inside the idle timeout below
    srv = make_server(release, port=0, host=HOST, web=web, timeout=limit * 2, header_timeout=limit)
    start_in_thread(srv)
    request = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Pad: " + b"a" * 100 + b"\r\n\r\n"
    steps = int(10 * limit / step)                         # dribbling everything would take 10x the deadline
    reply, ended = b"", None
    try:
        with socket.create_connection((HOST, _port(srv)), timeout=30) as s:
            started = time.monotonic()
            try:
                for byte in request[:steps]:
                    s.sendall(bytes([byte]))
                    if select.select([s], [], [], step)[0]:       # the server answered or closed
                        break
                ended = time.monotonic() - started
                while chunk := s.recv(65536):
                    reply += chunk
            except (BrokenPipeError, ConnectionResetError):
                ended = ended or time.monotonic() - started
        assert ended is not None and ended < 3 * limit, (ended, reply[:200])
        assert not reply or _status(reply) == 408, reply[:200]
        assert _get(srv, "/")[0] == 200
    finally:
        srv.shutdown()
        srv.server_close()


def _swap_in(link: str, target: str) -> None:
    """Point the symlink ``link`` at ``target`` atomically (a new link renamed over the old)."""
    tmp = link + ".new"
    os.symlink(target, tmp)
    os.replace(tmp, link)


def test_manifest_is_parsed_once_per_version(server, release, monkeypatch):
    """Load: 20 requests for listed files parse manifest.json once (each request parsed it: a 56 MB manifest made 20
    requests take 25 s); a new manifest is parsed once more, and what it lists is served from then on."""
    from edgedepth import serve
    from edgedepth.release import manifest as mf

    monkeypatch.setattr(serve, "MANIFEST_SETTLE_S", 0.2)    # a manifest changed this recently is not yet cached
    parses = []
    check_schema = mf.check_schema
    monkeypatch.setattr(mf, "check_schema", lambda m, where: parses.append(where) or check_schema(m, where))
    time.sleep(0.3)
    for _ in range(20):
        assert _get(server, "/release/LICENSE")[0] == 200
    assert len(parses) == 1
    assert _get(server, "/release/unlisted.txt")[0] == 404
    m = json.loads(open(os.path.join(release, "manifest.json"), "rb").read())
    m["files"].append(mf.file_entry(release, "unlisted.txt"))
    mf.write(release, m)
    time.sleep(0.3)
    for _ in range(10):
        assert _get(server, "/release/unlisted.txt")[0] == 200
    assert len(parses) == 2


def test_swapped_release_is_served_with_its_own_manifest(release, web, tmp_path, monkeypatch):
    """A release folder swapped under the running server (a symlink renamed over): each file is listed by, and read
    from, the same release, even when the swap lands between reading the manifest and opening the file; after the
    swap, the new release's manifest decides and its bytes are served."""
    from edgedepth import serve
    from edgedepth.release import manifest as mf
    from edgedepth.serve import make_server, start_in_thread

    monkeypatch.setattr(serve, "MANIFEST_SETTLE_S", 0.0)
    other = tmp_path / "rel2"
    other.mkdir()
    (other / "LICENSE").write_bytes(b"another licence\n")
    (other / "notes.txt").write_bytes(b"present but not listed\n")
    shutil.copyfile(os.path.join(release, "model.tflite"), other / "model.tflite")
    mf.write(str(other), {"name": "other", "files": [mf.file_entry(str(other), "LICENSE"),
                                                      mf.file_entry(str(other), "model.tflite", format="tflite")]})
    link = str(tmp_path / "current")
    os.symlink(release, link)
    srv = make_server(link, port=0, host=HOST, web=web, timeout=30)
    start_in_thread(srv)
    try:
        assert _get(srv, "/release/LICENSE")[2] == LISTED["LICENSE"]
        listed_paths = serve._listed_paths

        def swap_after_listing(dir_fd):
            listed = listed_paths(dir_fd)
            _swap_in(link, str(other))     # the folder changes between the manifest and the file
            return listed

        monkeypatch.setattr(serve, "_listed_paths", swap_after_listing)
        assert _get(srv, "/release/LICENSE")[2] == LISTED["LICENSE"]      # the release whose manifest listed it
        monkeypatch.setattr(serve, "_listed_paths", listed_paths)
        status, _, body = _get(srv, "/release/LICENSE")
        assert status == 200 and body == b"another licence\n"
        assert _get(srv, "/release/notes.txt")[0] == 404                 # not listed by the new release's manifest
        assert _get(srv, "/release/manifest.json")[2] == open(other / "manifest.json", "rb").read()
    finally:
        srv.shutdown()
        srv.server_close()


def test_limits_are_options_with_one_line_errors(release, web, monkeypatch, capsys):
    """--max-connections and --header-timeout: a value out of range is one line naming the option, exit 2."""
    from edgedepth.serve import main

    monkeypatch.setenv("EDGEDEPTH_WEB_DIR", web)
    for option, value in (("--max-connections", "0"), ("--header-timeout", "0"), ("--header-timeout", "-1")):
        assert main([release, "--port", "0", option, value]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and option in err, err
