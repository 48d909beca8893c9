"""What a careless or hostile input costs a user, before and after issue 27, in one run on this machine.

    .venv/bin/python benchmarks/hostile_inputs.py --before DIR [--out benchmarks/results/hostile_inputs.json]

DIR is a checkout of the older commit (``git worktree add DIR e8be3ce``); its code runs with this venv through
PYTHONPATH.  Every case runs ``python -m edgedepth ...`` in a child, as a user would, once with each code base, and
records: exit code, the one ``edgedepth:`` line (or the last stderr line), seconds to exit, the child's peak RSS (wait4)
and what the case checks on disk afterwards.  Cases: predict on a 9400x9400 and a 12000x12000 photo and a 30000x30000
decompression bomb (tiny model; the 12000x12000 photo again with the new pixel cap raised), a hub id with no answering network (HF_ENDPOINT = a loopback server that accepts and
never replies), Ctrl-C while the converter runs, and ``release --out`` a folder holding a user's file.  Only loopback is
contacted.  Timings are single runs on a noisy machine: orders of magnitude, not benchmarks.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zlib

import hostile_items

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "benchmarks", "results", "hostile_inputs.json")
CAP_S = 120                       # a case still running after this is killed and recorded as such


def flat_png(path: str, width: int, height: int) -> None:
    """A black RGB PNG of any size, streamed (never held in memory): what a 'decompression bomb' is."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    z, row = zlib.compressobj(9), b"\x00" * (1 + 3 * width)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        data = b"".join(z.compress(row) for _ in range(height)) + z.flush()
        f.write(chunk(b"IDAT", data) + chunk(b"IEND", b""))


class SilentServer:
    """A loopback TCP server that accepts connections and never answers: a network that hangs."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                self.held.append(self.sock.accept()[0])
            except OSError:
                return

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"


def run(code: str, args: list[str], env_extra: dict | None = None, interrupt_on: str | None = None,
        delay: float = 0.0, *, sig: int = signal.SIGINT, cap: float = CAP_S, module: bool = True,
        keep_all: bool = False) -> dict:
    """``python -m edgedepth ARGS`` (``module=False``: ``python ARGS``) with ``code`` (a src folder) first on the path;
    signal ``sig`` ``delay`` s after stderr shows ``interrupt_on``; killed after ``cap`` s.  Returns exit code, the
    edgedepth line, seconds, peak RSS, stdout, third-party log lines counted."""
    env = {**os.environ, "PYTHONPATH": code, **(env_extra or {})}
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, *(["-m", "edgedepth"] if module else []), *args], stderr=subprocess.PIPE,
                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, env=env, cwd=tempfile.gettempdir())
    err, out, sent, seen = b"", b"", None, None
    os.set_blocking(p.stderr.fileno(), False)
    os.set_blocking(p.stdout.fileno(), False)
    while True:
        chunk = p.stderr.read() or b""
        err += chunk
        out += p.stdout.read() or b""
        if interrupt_on and sent is None and interrupt_on.encode() in err:
            seen = seen or time.perf_counter()
            if time.perf_counter() - seen >= delay:
                p.send_signal(sig)
                sent = time.perf_counter()
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.perf_counter() - t0 > cap:
            p.kill()
            pid, status, usage = os.wait4(p.pid, 0)
            break
        time.sleep(0.05)
    end = time.perf_counter()
    err += p.stderr.read() or b""
    out += p.stdout.read() or b""
    text = err.decode(errors="replace")
    lines = [ln.strip() for ln in text.replace("\r", "\n").splitlines() if ln.strip()]
    said = [ln for ln in lines if ln.startswith("edgedepth:")] or lines[-1:]
    return {"exit_code": os.waitstatus_to_exitcode(status), "said": said[0][:300] if said else "",
            "seconds": round(end - t0, 1), "peak_rss_gb": round(usage.ru_maxrss / 2**20, 2),
            "killed_after_cap": end - t0 > cap,
            **({"seconds_from_sigint_to_exit": round(end - sent, 1)} if sent else {}),
            "traceback": "Traceback" in text, "stdout": out.decode(errors="replace"),
            "noise_lines": hostile_items.noise_lines(text), **({"stderr_lines": lines} if keep_all else {})}


def cases(work: str, tiny: str) -> dict:
    """name -> (args, env_extra, interrupt_on, check) ; ``check(result_dir)`` says what was left on disk."""
    photos = {n: os.path.join(work, f"{n}.png") for n in ("9400", "12000", "30000")}
    for n, p in photos.items():
        if not os.path.exists(p):
            flat_png(p, int(n), int(n))
    silent = SilentServer()
    hf_home = tempfile.mkdtemp(dir=work, prefix="hf-home-")
    return {
        "predict_photo_9400x9400": (["predict", photos["9400"], "--model", tiny, "-o", "{out}", "--quiet"], {}, None),
        "predict_photo_12000x12000": (["predict", photos["12000"], "--model", tiny, "-o", "{out}", "--quiet"], {}, None),
        # the same photo with the cap raised (after) / as before: what decoding and colouring it costs in memory
        "predict_photo_12000x12000_cap_raised": (["predict", photos["12000"], "--model", tiny, "-o", "{out}", "--quiet",
                                                  "{after:--max-pixels=200000000}"], {}, None),
        "predict_bomb_30000x30000": (["predict", photos["30000"], "--model", tiny, "-o", "{out}", "--quiet"], {}, None),
        "predict_hub_id_no_network": (["predict", photos["9400"], "--model", "someone/not-cached", "-o", "{out}",
                                       "--quiet"], {"HF_ENDPOINT": silent.url, "HF_HOME": hf_home}, None),
        # SIGINT 0 / 0.3 / 0.5 / 1 s after the conversion starts (where JAX's gc callback used to swallow it)
        **{f"export_ctrl_c_during_conversion+{d:g}s": (["export", "--model", "synthetic-tiny", "--size", "56x70",
                                                      "--out", "{out}"], {}, ("convert FP32", d))
           for d in (0.0, 0.3, 0.5, 1.0)},
        "release_into_folder_with_user_file": (["release", "--recipe", "{recipe}", "--out", "{out}", "--model", "synthetic-tiny", "--sizes",
                                                "28x42", "--parity-images", "0", "--no-gpu-check", "--quiet"], {},
                                               None),
    }


def left_on_disk(out: str) -> dict:
    names = sorted(os.listdir(out)) if os.path.isdir(out) else []
    parent = os.path.dirname(out)
    litter = sorted(n for n in os.listdir(parent) if n.startswith("." + os.path.basename(out)))
    return {"files_in_output": names, "hidden_beside_output": litter}


def tiny_model(work: str) -> str:
    """synthetic-tiny 56x70 FP32 .tflite exported with this tree's code into ``work``; its path."""
    out = os.path.join(work, "tiny")
    subprocess.run([sys.executable, "-m", "edgedepth", "export", "--model", "synthetic-tiny", "--size", "56x70",
                    "--precision", "fp32", "--out", out, "--quiet"], check=True, capture_output=True)
    return os.path.join(out, next(n for n in os.listdir(out) if n.endswith(".tflite")))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="a checkout of the older commit (git worktree)")
    ap.add_argument("--out", default=OUT)
    ap.add_argument("--only", default=None,
                    help="re-run the cases whose name starts with this (--set items: or any of a comma-separated "
                         "list), merged into --out")
    ap.add_argument("--set", choices=("inputs", "items"), default="inputs",
                    help="inputs: the first round's cases; items: the second round's, one or more per audit item "
                         "(benchmarks/hostile_items.py; default --out results/hostile_inputs_items.json)")
    a = ap.parse_args(argv)
    if a.set == "items":
        return main_items(a)
    codes = {"before": os.path.join(os.path.abspath(a.before), "src"), "after": os.path.join(ROOT, "src")}
    rev = subprocess.run(["git", "-C", a.before, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    with tempfile.TemporaryDirectory(prefix="edgedepth-hostile-") as work:
        tiny = tiny_model(work)
        results = {}
        for name, (args, env, sig) in cases(work, tiny).items():
            if a.only and not name.startswith(a.only):
                continue
            for side, code in codes.items():         # before and after back to back, same inputs
                out = tempfile.mkdtemp(dir=work, prefix=f"{side}-{name}-") + "/out"
                if name.startswith("release"):
                    os.makedirs(out)
                    with open(os.path.join(out, "thesis.txt"), "w") as f:
                        f.write("a user's file\n")
                recipe = os.path.join(os.path.dirname(code), "recipes", "depth-anything-v2-small.py")
                args_now = [x[len("{after:"):-1] if x.startswith("{after:") else x for x in args
                            if side == "after" or not x.startswith("{after:")]     # options the old code lacks
                r = run(code, [x.replace("{out}", out).replace("{recipe}", recipe) for x in args_now], env, *(sig or ()))
                r.pop("stdout")
                r.update(left_on_disk(out))
                if name.startswith("release"):
                    r["user_file_kept"] = os.path.isfile(os.path.join(out, "thesis.txt"))
                results.setdefault(name, {})[side] = r
                print(f"{name:38s} {side:6s} exit {r['exit_code']:4d} {r['seconds']:7.1f} s "
                      f"{r['peak_rss_gb']:5.2f} GB  {r['said'][:90]}", flush=True)
    report = {"kind": "edgedepth.hostile_inputs", "date": datetime.date.today().isoformat(),
              "before": rev.stdout.strip() or a.before, "cpu": _cpu(), "cases": results,
              "method": "one child process per case and code base, back to back; peak RSS from wait4 (ru_maxrss); "
                        f"cases still running after {CAP_S} s are killed; tiny model: synthetic-tiny 56x70 FP32 .tflite"}
    if a.only:                       # merged into the earlier record: its cases kept, the re-run noted
        old = json.load(open(a.out))
        report["cases"] = {k: v for k, v in old["cases"].items() if not k.startswith(a.only)} | results
        report["re_runs"] = old.get("re_runs", []) + [{"date": report["date"], "cases": sorted(results)}]
        report["date"] = old["date"]
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, a.out)
    return 0


def main_items(a) -> int:
    """The second round: every case of hostile_items.CASES with each code base, the same fresh inputs for both.
    The record is rewritten after every case (a run cut short keeps what it measured)."""
    out_path = a.out if a.out != OUT else OUT.replace(".json", "_items.json")
    rev = subprocess.run(["git", "-C", a.before, "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    old = json.load(open(out_path)) if a.only and os.path.exists(out_path) else None
    report = {"kind": "edgedepth.hostile_inputs_items", "date": datetime.date.today().isoformat(),
              "before": rev.stdout.strip() or a.before, "cpu": _cpu(), "root": os.geteuid() == 0, "cases": {},
              "method": "one child process per case and code base, inputs made fresh for each; the tiny release of "
                        "each side built by that side's code (synthetic-tiny, 28x42, no parity images, no GPU check); "
                        f"a case still running after {hostile_items.CAP_S} s (builds: 600 s) is killed"}
    if old:                          # merged into the earlier record: its cases kept, the re-run noted
        report |= {"date": old["date"], "cases": old["cases"],
                   "re_runs": old.get("re_runs", []) + [{"date": report["date"], "cases": []}]}
    with tempfile.TemporaryDirectory(prefix="edgedepth-hostile-") as work:
        tiny = tiny_model(work)
        from edgedepth.samples import sample_photo
        sides = {side: hostile_items.Side(side, code, work, run) for side, code in
                 {"before": os.path.join(os.path.abspath(a.before), "src"), "after": os.path.join(ROOT, "src")}.items()}
        shared = hostile_items.shared_inputs(work, tiny, sample_photo(), sides, os.path.join(ROOT, "web"), flat_png)
        for name, (item, what, case) in hostile_items.CASES.items():
            if a.only and not name.startswith(tuple(a.only.split(","))):
                continue
            row = {"item": item, "what": what}
            for side in sides.values():
                r = case(side, shared)
                r.pop("stdout", None)
                row[side.name] = r
                print(f"{name:34s} {side.name:6s} exit {str(r.get('exit_code')):>4s} {r.get('seconds', 0):6.1f} s  "
                      f"{r.get('outcome', r.get('skipped', ''))[:70]}  {r.get('said', '')[:60]}", flush=True)
            report["cases"][name] = row
            if old:
                report["re_runs"][-1]["cases"].append(name)
            _write_report(out_path, report)
    return 0


def _write_report(path: str, report: dict) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(report, indent=2) + "\n")
    os.replace(tmp, path)


def _cpu() -> str:
    return next((ln.split(":", 1)[1].strip() for ln in open("/proc/cpuinfo") if ln.startswith("model name")), "?")


if __name__ == "__main__":
    sys.exit(main())
