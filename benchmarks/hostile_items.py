"""The careless-or-hostile user's second round, before and after, one case per defect class (the items of the
"never lose a byte, never hang" audit): run by ``hostile_inputs.py --set items``.

Every case runs the CLI (or a Python API snippet) in a child process once with each code base, on the same inputs
made fresh for each side, and records what the user sees (exit code, the ``edgedepth:`` line, seconds) and what the
case checks on disk afterwards (``outcome``: one short sentence, the same question asked of both sides).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time

CAP_S = 20                       # a blocked case (a FIFO read, a slow client) is killed after this and recorded so
BUILD = ["--sizes", "28x42", "--parity-images", "0", "--no-gpu-check", "--quiet", "--model", "synthetic-tiny"]


class Side:
    """One code base: ``cli(args)`` / ``py(code)`` run a child with its ``src`` first on the path."""

    def __init__(self, name: str, src: str, work: str, run):
        self.name, self.src, self.work, self._run = name, src, work, run
        self.recipe = os.path.join(os.path.dirname(src), "recipes", "depth-anything-v2-small.py")

    def dir(self, what: str) -> str:
        return tempfile.mkdtemp(dir=self.work, prefix=f"{self.name}-{what}-")

    def cli(self, *args, **kw) -> dict:
        return self._run(self.src, [str(a) for a in args], kw.pop("env", None), cap=kw.pop("cap", CAP_S), **kw)

    def py(self, code: str, **kw) -> dict:
        return self._run(self.src, ["-c", code], kw.pop("env", None), cap=kw.pop("cap", CAP_S), module=False, **kw)

    def release(self, out: str) -> dict:
        return self.cli("release", "--recipe", self.recipe, "--out", out, *BUILD, cap=600)


def _tree(folder: str) -> dict:
    """relative path -> bytes or kind, for 'unchanged?' checks."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for n in files + [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            p = os.path.join(root, n)
            st = os.lstat(p)
            out[os.path.relpath(p, folder)] = open(p, "rb").read() if stat.S_ISREG(st.st_mode) else st.st_mode
    return out


def _hidden_beside(path: str) -> list[str]:
    parent, name = os.path.split(os.path.abspath(path))
    return sorted(n for n in os.listdir(parent) if n.startswith("." + name[:40]))


def _fifo(path: str) -> str:
    os.mkfifo(path)
    return path


# ---- the cases: each (side, shared) -> result dict with "outcome" -------------------------------------------------

def json_through_symlink(s, sh):
    d = s.dir("json")
    target = os.path.join(d, "thesis.txt")
    open(target, "w").write("a user's file\n")
    os.symlink(target, os.path.join(d, "report.json"))
    r = s.cli("inspect", sh["tiny"], "--no-gpu", "--json", os.path.join(d, "report.json"))
    kept = open(target).read() == "a user's file\n" and os.path.islink(os.path.join(d, "report.json"))
    return r | {"outcome": "link and its target kept" if kept else "the symlink was replaced by a file"}


def json_onto_fifo(s, sh):
    d = s.dir("json")
    _fifo(os.path.join(d, "pipe.json"))
    r = s.cli("inspect", sh["tiny"], "--no-gpu", "--json", os.path.join(d, "pipe.json"))
    kept = stat.S_ISFIFO(os.lstat(os.path.join(d, "pipe.json")).st_mode)
    return r | {"outcome": "FIFO kept" if kept else "the FIFO was replaced by a file"}


def json_onto_device(s, sh):
    d = s.dir("json")
    dev = os.path.join(d, "null")
    if os.geteuid() == 0:
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        return {"skipped": "needs root (mknod of a character device)"}
    r = s.cli("inspect", sh["tiny"], "--no-gpu", "--json", dev)
    kept = stat.S_ISCHR(os.lstat(dev).st_mode)
    return r | {"outcome": "device node kept" if kept else "the device node was replaced by a file"}


def predict_over_its_input(s, sh):
    d = s.dir("data")
    shutil.copy(sh["photo"], os.path.join(d, "scene.jpg"))
    shutil.copy(sh["photo"], os.path.join(d, "scene_depth.png"))
    before = _tree(d)
    r = s.cli("predict", os.path.join(d, "scene.jpg"), os.path.join(d, "scene_depth.png"), "--model", sh["tiny"],
              "-o", d, "--quiet")
    kept = _tree(d)["scene_depth.png"] == before["scene_depth.png"]
    return r | {"outcome": "input kept" if kept else "the second input was overwritten"}


def predict_over_user_file(s, sh):
    d = s.dir("out")
    open(os.path.join(d, "scene_depth.png"), "wb").write(b"the user's own map")
    r = s.cli("predict", sh["photo_named_scene"], "--model", sh["tiny"], "-o", d, "--quiet")
    kept = open(os.path.join(d, "scene_depth.png"), "rb").read() == b"the user's own map"
    return r | {"outcome": "user's file kept" if kept else "the user's file was overwritten"}


def release_over_edited_release(s, sh):
    d = s.dir("rel") + "/rel"
    shutil.copytree(sh["release"][s.name], d)
    with open(os.path.join(d, "README.md"), "a") as f:
        f.write("\nMy notes on this model.\n")
    r = s.release(d)
    kept = "My notes on this model." in open(os.path.join(d, "README.md")).read()
    return r | {"outcome": "the edited README kept" if kept else "the user's edit was silently dropped"}


def export_into_release(s, sh):
    d = s.dir("rel") + "/rel"
    shutil.copytree(sh["release"][s.name], d)
    r = s.py("import edgedepth; edgedepth.export(%r, size='28x42', out_dir=%r, precisions=['fp32'])"
             % (sh["hf_other"], d), cap=300)
    v = s.cli("verify", d)
    return r | {"outcome": f"verify afterwards: exit {v['exit_code']}"}


def _fifo_case(kind: str):
    def case(s, sh):
        d = s.dir("fifo")
        if kind == "inspect .tflite":
            r = s.cli("inspect", _fifo(os.path.join(d, "model.tflite")), "--no-gpu")
        elif kind == "inspect .pte":
            r = s.cli("inspect", _fifo(os.path.join(d, "model.pte")))
        elif kind == "predict --model":
            r = s.cli("predict", sh["photo"], "--model", _fifo(os.path.join(d, "model.tflite")), "-o", d + "/o")
        elif kind == "edgedepth.open()":
            r = s.py("import edgedepth; edgedepth.open(%r)" % _fifo(os.path.join(d, "model.tflite")))
        elif kind == "photo":
            r = s.cli("predict", _fifo(os.path.join(d, "photo.jpg")), "--model", sh["tiny"], "-o", d + "/o")
        elif kind == "/dev/zero as photo":
            r = s.cli("predict", "/dev/zero", "--model", sh["tiny"], "-o", d + "/o")
        elif kind == "/proc/self/environ as recipe":
            r = s.cli("release", "--recipe", "/proc/self/environ", "--out", d + "/r", *BUILD)
        else:                                                  # a checkpoint file that is a FIFO
            ck = os.path.join(d, "ckpt")
            shutil.copytree(sh["hf_folder"], ck)
            os.remove(os.path.join(ck, "model.safetensors"))
            _fifo(os.path.join(ck, "model.safetensors"))
            r = s.cli("export", "--model", ck, "--size", "28x42", "--out", d + "/o", "--precision", "fp32")
        return r | {"outcome": "blocked until killed" if r["killed_after_cap"] else f"answered in {r['seconds']} s"}
    return case


def serve_cases(s, sh):
    """Four loads on one server: 300 concurrent clients, a header dribbled a byte every 2 s, 20 requests for a text
    file of a release whose manifest is 56 MB, connections beyond the cap."""
    d = s.dir("serve") + "/rel"
    shutil.copytree(sh["release"][s.name], d)
    m = json.load(open(os.path.join(d, "manifest.json")))
    m["padding"] = "x" * (56 << 20)
    open(os.path.join(d, "manifest.json"), "w").write(json.dumps(m))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    env = {**os.environ, "PYTHONPATH": s.src, "EDGEDEPTH_WEB_DIR": sh["web"]}
    p = subprocess.Popen([sys.executable, "-m", "edgedepth", "serve", d, "--port", str(port), "--quiet"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    try:
        t0 = time.time()
        while time.time() - t0 < 60:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        res = {"concurrent_300": _concurrent(port, 300), "slow_header": _dribble(port),
               "licence_x20_big_manifest_s": _sequential(port, "/release/LICENSE", 20)}
    finally:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
    c, dr = res["concurrent_300"], res["slow_header"]
    return {"exit_code": None, "said": "", "seconds": 0, **res,
            "outcome": f"300 clients: {c['answered']} answered ({c['status_counts']}), {c['timed_out']} timed out in "
                       f"{c['seconds']} s; a header dribbled 1 byte/2 s held "
                       f"{'until killed at ' if dr['held_to_cap'] else ''}{dr['held_s']} s; 20 × LICENSE with a 56 MB "
                       f"manifest: {res['licence_x20_big_manifest_s']} s"}


def _get(port: int, path: str, timeout: float) -> int | None:
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        head = s.recv(64)
        return int(head.split()[1]) if head.startswith(b"HTTP/") else None
    finally:
        s.close()


def _concurrent(port: int, n: int, timeout: float = 5.0) -> dict:
    codes, t0 = [None] * n, time.time()

    def one(i):
        try:
            codes[i] = _get(port, "/", timeout)
        except OSError:
            codes[i] = "timeout"

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    counts = {}
    for c in codes:
        counts[str(c)] = counts.get(str(c), 0) + 1
    return {"answered": sum(isinstance(c, int) for c in codes), "timed_out": counts.get("timeout", 0),
            "status_counts": {k: v for k, v in counts.items() if k != "timeout"}, "seconds": round(time.time() - t0, 1)}


def _dribble(port: int, every: float = 2.0, cap: float = 40.0) -> dict:
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    t0, req = time.time(), b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 1000
    try:
        for b in req:
            s.sendall(bytes([b]))
            time.sleep(every)
            if time.time() - t0 > cap:
                return {"held_s": round(time.time() - t0, 1), "held_to_cap": True}
            s.setblocking(False)
            try:
                if s.recv(1) == b"":
                    break
            except BlockingIOError:
                pass
            except OSError:
                break
            finally:
                s.setblocking(True)
    except OSError:
        pass
    finally:
        s.close()
    return {"held_s": round(time.time() - t0, 1), "held_to_cap": False}


def _sequential(port: int, path: str, n: int) -> float:
    t0 = time.time()
    for _ in range(n):
        try:
            _get(port, path, 60)
        except OSError:
            pass
    return round(time.time() - t0, 1)


def _signal_case(sig: int, command: str):
    def case(s, sh):
        d = s.dir("sig")
        out = os.path.join(d, "out")
        if command == "export":
            r = s.cli("export", "--model", "synthetic-tiny", "--size", "56x70", "--out", out, "--precision", "fp32",
                      interrupt_on="convert", delay=0.5, sig=sig, cap=300)
        else:
            r = s.cli("release", "--recipe", s.recipe, "--out", out, *[a for a in BUILD if a != "--quiet"],
                      interrupt_on="rewrites + export", delay=0.5, sig=sig, cap=300)
        left = sorted(os.listdir(d))
        return r | {"outcome": f"left: {', '.join(left) if left else 'nothing'}"}
    return case


def kill_after_swap(s, sh):
    """SIGKILL right after the new release is swapped in (the build's own swap function, wrapped in the child)."""
    d = s.dir("kill") + "/rel"
    shutil.copytree(sh["release"][s.name], d)
    code = ("import os, sys, runpy; import edgedepth.release.outdir as o; f = o._swap\n"
            "def swap(*a, **k):\n r = f(*a, **k); os.kill(os.getpid(), 9)\n"
            "o._swap = swap; sys.argv = ['edgedepth'] + %r; runpy.run_module('edgedepth', run_name='__main__')"
            % ["release", "--recipe", s.recipe, "--out", d, *BUILD])
    r = s.py(code, cap=600)
    v = s.cli("verify", d)
    left = _hidden_beside(d)
    r2 = s.release(d)
    left2 = _hidden_beside(d)
    return r | {"outcome": f"verify after the kill: exit {v['exit_code']} ({v['said'][:60]}); hidden beside: "
                           f"{len(left)}; after the next release: {len(left2)}", "next_release_exit": r2["exit_code"]}


def verify_deep(s, sh):
    d = s.dir("deep") + "/rel"
    shutil.copytree(sh["release"][s.name], d)
    p = d
    for _ in range(1200):
        p = os.path.join(p, "d")
        os.mkdir(p)     # 1200 levels of 'd/' (paths of ~2.4 KB: within PATH_MAX)
    open(os.path.join(p, "stray.bin"), "wb").close()
    r = s.cli("verify", d, keep_all=True)
    named = any(ln.endswith("stray.bin (not in the manifest)") for ln in r.pop("stderr_lines"))
    os.remove(os.path.join(p, "stray.bin"))
    while p != d:               # removed a level at a time (shutil.rmtree recurses once per level)
        os.rmdir(p)
        p = os.path.dirname(p)
    return r | {"outcome": "crashed" if "unexpected" in r["said"] else
                "named the stray file at the bottom" if named else "walked, stray file not named"}


def long_out_name(s, sh):
    d = s.dir("long")
    r = s.release(os.path.join(d, "r" * 250))
    return r | {"outcome": f"exit {r['exit_code']}"}


def long_photo_name(s, sh):
    d = s.dir("long")
    p = os.path.join(d, "p" * 236 + ".jpg")
    shutil.copy(sh["photo"], p)
    r = s.cli("predict", p, "--model", sh["tiny"], "-o", os.path.join(d, "o"), "--quiet")
    return r | {"outcome": "written" if r["exit_code"] == 0 else "failed"}


def folder_at_output(command: str):
    def case(s, sh):
        d = s.dir("dirout")
        o = os.path.join(d, "o")
        if command == "predict":
            os.makedirs(os.path.join(o, "scene_depth.png"))
            r = s.cli("predict", sh["photo_named_scene"], "--model", sh["tiny"], "-o", o, "--quiet")
        else:
            os.makedirs(os.path.join(o, "depth_anything_v2_small_28x42_fp32.tflite"))
            r = s.cli("export", "--model", "synthetic-tiny", "--size", "28x42", "--precision", "fp32", "--out", o,
                      "--quiet", cap=300)
        return r | {"outcome": "one line" if r["said"].startswith("edgedepth: error") and "unexpected" not in r["said"]
                    else "an unexpected error"}
    return case


API_SNIPPETS = {
    "Model.predict(Path)": "m = edgedepth.open(TINY); m.predict(pathlib.Path(PHOTO))",
    "validate(Path)": "edgedepth.validate(pathlib.Path(TINY), model='synthetic-tiny', limit=1)",
    "validate(limit='1')": "edgedepth.validate(TINY, model='synthetic-tiny', limit='1')",
    "validate(limit=1.5)": "edgedepth.validate(TINY, model='synthetic-tiny', limit=1.5)",
    "validate(model=None)": "edgedepth.validate(TINY, model=None, limit=1)",
    "export(out_dir=None)": "edgedepth.export('synthetic-tiny', size='28x42', out_dir=None)",
    "export(size=(28.9, 42))": "edgedepth.export('synthetic-tiny', size=(28.9, 42), out_dir=OUT + '/t')",
    "run() after close()": "r = edgedepth.open(TINY).runner(); r.close(); r.run(np.zeros(r.input_shape, np.float32))",
    "predict a 0x0 image": "edgedepth.open(TINY).predict(ZERO)",
    "export(Path)": "edgedepth.export('synthetic-tiny', size='28x42', out_dir=pathlib.Path(OUT) / 'p', "
                    "precisions=['fp32'])",
}


def api_types(s, sh):
    d = s.dir("api")
    rows = {}
    for name, snippet in API_SNIPPETS.items():
        code = (f"import pathlib, numpy as np, edgedepth\nTINY, PHOTO, OUT, ZERO = {sh['tiny']!r}, {sh['photo']!r}, "
                f"{d!r}, {sh['zero_png']!r}\ntry:\n {snippet}\n print('RESULT ok')\nexcept Exception as e:\n"
                " print('RESULT', type(e).__name__ + ': ' + ' '.join(str(e).split())[:100])\n")
        r = s.py(code, cap=300)
        res = next((ln[7:] for ln in r.pop("stdout", "").splitlines() if ln.startswith("RESULT ")), r["said"])
        rows[name] = {"result": res, "noise_lines": r["noise_lines"]}
    good = sum(v["result"] == "ok" or v["result"].startswith("EdgedepthError") for v in rows.values())
    return {"exit_code": None, "said": "", "seconds": 0, "calls": rows,
            "outcome": f"{good} of {len(rows)} calls either work or raise one EdgedepthError line"}


def api_noise(s, sh):
    d = s.dir("noise")
    r = s.py("import edgedepth; m = edgedepth.open(%r); m.predict(%r); "
             "edgedepth.export('synthetic-tiny', size='28x42', out_dir=%r, precisions=['fp32'])"
             % (sh["tiny"], sh["photo"], d + "/o"), cap=300)
    return r | {"outcome": f"{r['noise_lines']} third-party log lines on stderr"}


def release_inside_release(s, sh):
    d = s.dir("nest") + "/outer"
    shutil.copytree(sh["release"][s.name], d)
    r = s.release(os.path.join(d, "inner"))
    v = s.cli("verify", d)
    return r | {"outcome": f"outer verifies afterwards: exit {v['exit_code']}"}


def sizes_case(sizes: str):
    def case(s, sh):
        d = s.dir("sizes")
        args = ["release", "--recipe", s.recipe, "--out", d + "/r", "--sizes", sizes, "--parity-images", "0",
                "--no-gpu-check", "--quiet", "--model", "synthetic-tiny"]
        r = s.cli(*args, cap=600)
        return r | {"outcome": f"{'refused' if r['exit_code'] else 'built'} after {r['seconds']} s"}
    return case


def predict_odd_name(s, sh):
    d = s.dir("odd")
    p = os.path.join(d, "a\nb\x1b[31mred.jpg")
    shutil.copy(sh["photo"], p)
    r = s.cli("predict", p, "--model", sh["tiny"], "-o", os.path.join(d, "o"), "--quiet")
    out = r.pop("stdout", "")
    return r | {"outcome": ("raw newline/escape on stdout" if "\x1b" in out or out.count("\n") > 1
                            else "escaped, one line per file")}


def verify_lookalike(s, sh):
    d = s.dir("look") + "/rel"
    shutil.copytree(sh["release"][s.name], d)
    os.rename(os.path.join(d, "README.md"), os.path.join(d, "RЕADME.md"))     # a Cyrillic Е
    r = s.cli("verify", d, keep_all=True)
    lines = [ln for ln in r.pop("stderr_lines", []) if "verify" in ln]
    says_how = any("U+0415" in ln or "Cyrillic" in ln or "CYRILLIC" in ln for ln in lines)
    return r | {"lines": lines[:4], "outcome": "says which letter differs" if says_how else
                "an identical-looking 'missing' and 'extra' pair"}


CASES = {     # name -> (item of the audit, what the user did, case)
    "json_through_symlink": ("1", "`--json PATH` where PATH is a symlink to the user's file", json_through_symlink),
    "json_onto_fifo": ("1", "`--json PATH` where PATH is a FIFO", json_onto_fifo),
    "json_onto_device": ("1", "`--json PATH` where PATH is a device node (root)", json_onto_device),
    "predict_over_its_input": ("2", "`predict scene.jpg scene_depth.png -o data`", predict_over_its_input),
    "predict_over_user_file": ("2", "`predict` into a folder holding the user's `scene_depth.png`",
                               predict_over_user_file),
    "release_over_edited_release": ("3", "`release --out` an earlier release whose README the user annotated",
                                    release_over_edited_release),
    "export_into_release": ("4", "`edgedepth.export(out_dir=<a release folder>)`", export_into_release),
    **{f"fifo_{k.replace(' ', '_').replace('/', '').replace('.', '').replace('(', '').replace(')', '')}":
       ("5", f"a FIFO or special file: {k}", _fifo_case(k))
       for k in ("inspect .tflite", "inspect .pte", "predict --model", "edgedepth.open()", "photo",
                 "/dev/zero as photo", "/proc/self/environ as recipe", "checkpoint file")},
    "serve_under_load": ("6", "`serve` under load (many clients, a slow header, a 56 MB manifest)", serve_cases),
    "sigterm_during_export": ("7", "SIGTERM during `export`", _signal_case(signal.SIGTERM, "export")),
    "sighup_during_release": ("7", "SIGHUP during `release`", _signal_case(signal.SIGHUP, "release")),
    "kill_9_after_swap": ("8", "kill -9 right after the swap, then `verify`, then the next `release`",
                          kill_after_swap),
    "verify_1200_deep": ("9", "`verify` a release holding a folder nested 1200 deep", verify_deep),
    "release_out_250_chars": ("10", "`release --out` a 250-character name", long_out_name),
    "predict_240_char_photo": ("10", "`predict` a photo with a 240-character name", long_photo_name),
    "predict_folder_at_output": ("11", "`predict` where a folder has an output's name", folder_at_output("predict")),
    "export_folder_at_output": ("11", "`export` where a folder has the file's name", folder_at_output("export")),
    "api_types": ("12", "Python API: paths as `pathlib.Path`, wrong types, closed runner, 0×0 image", api_types),
    "release_inside_release": ("13", "`release --out outer/inner` where `outer` is a release",
                               release_inside_release),
    "release_sizes_duplicate": ("14", "`release --sizes 28x42,28x42`", sizes_case("28x42,28x42")),
    "release_sizes_empty": ("14", "`release --sizes \"\"`", sizes_case("")),
    "predict_control_chars_in_name": ("15", "`predict` a photo named `a⏎b<ESC>[31mred.jpg`", predict_odd_name),
    "verify_lookalike_name": ("16", "`verify` where README.md was renamed with a Cyrillic Е", verify_lookalike),
    "api_third_party_noise": ("17", "Python API `open().predict()` + `export()`: third-party log lines",
                              api_noise),
}


def shared_inputs(work: str, tiny: str, photo: str, sides: dict, web: str, flat_png) -> dict:
    """Inputs every case reads: the tiny model, photos, a local HF folder, and one tiny release per code base."""
    named = os.path.join(work, "scene.jpg")
    shutil.copy(photo, named)
    zero = os.path.join(work, "zero.png")
    flat_png(zero, 0, 0)
    hf = os.path.join(work, "hf")
    other = os.path.join(work, "hf-other")        # the same architecture, other weights: other bytes, same file names
    subprocess.run([sys.executable, "-c", "import torch; from edgedepth.checkpoint import load_checkpoint; "
                    f"m = load_checkpoint('synthetic-tiny', quiet=True).model; m.save_pretrained({hf!r}); "
                    "torch.nn.init.normal_(next(m.parameters()), std=0.1); "
                    f"m.save_pretrained({other!r})"], check=True, capture_output=True)
    return {"tiny": tiny, "photo": photo, "photo_named_scene": named, "zero_png": zero, "hf_folder": hf,
            "hf_other": other, "release": _Releases(work, sides), "web": web}


class _Releases(dict):
    """side name -> its tiny release folder, built by that side's code on first use."""

    def __init__(self, work: str, sides: dict):
        super().__init__()
        self.work, self.sides = work, sides

    def __missing__(self, name: str) -> str:
        out = os.path.join(self.work, f"release-{name}")
        r = self.sides[name].release(out)
        if r["exit_code"] != 0:
            raise RuntimeError(f"the {name} side's tiny release failed: {r['said']}")
        self[name] = out
        return out


NOISE = ("Failed to load", "_pytree", "INFO: [", "I0000", "W0000", "DestroyAccelerator", "oneDNN custom operations")


def noise_lines(stderr: str) -> int:
    return sum(any(k in ln for k in NOISE) for ln in stderr.splitlines())

