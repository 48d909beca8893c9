"""Faults (issue 27 item 4): Ctrl-C ends any command with exit 130 and leaves no file (D10), SIGTERM and SIGHUP the
same with 143 and 129; a full disk is one line and leaves nothing (D7)."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from conftest import assert_one_line_error, run_cli

PHOTO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "rgb_160x120.png")
TINY = ("--model", "synthetic-tiny", "--size", "28x42")
STAGE_TIMEOUT_S = 600           # generous: waiting for a stage to start is not a timing assertion
OUR_LINES = ("edgedepth: ", "WARNING: synthetic weights")


def _hangup_default() -> None:
    """The child's SIGHUP at its default, whatever this process inherited: a test suite started under ``nohup``
    passes SIGHUP ignored to every child, and an ignored SIGHUP is meant to stay ignored
    (test_an_ignored_signal_stays_ignored)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


class _Child:
    """``python -m edgedepth ARGS`` with its stderr collected as it comes (the progress bar names each stage)."""

    def __init__(self, *args):
        self.proc = subprocess.Popen([sys.executable, "-m", "edgedepth", *map(str, args)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=_hangup_default)
        self.err = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        while chunk := self.proc.stderr.read1(65536):
            self.err.extend(chunk)

    def wait_for(self, text: str) -> None:
        deadline = time.monotonic() + STAGE_TIMEOUT_S
        while text.encode() not in self.err:
            assert self.proc.poll() is None, f"exited ({self.proc.returncode}) before {text!r}: {self.stderr}"
            assert time.monotonic() < deadline, f"{text!r} did not start: {self.stderr}"
            time.sleep(0.01)

    def finish(self) -> int:
        self.proc.wait(timeout=STAGE_TIMEOUT_S)
        self._reader.join(timeout=60)
        return self.proc.returncode

    @property
    def stderr(self) -> str:
        return self.err.decode("utf-8", "replace")


def _lines(stderr: str) -> list[str]:
    return [ln.strip() for ln in stderr.replace("\r", "\n").splitlines() if ln.strip()]


@pytest.mark.parametrize("stage,delay,precisions", [
    ("load synthetic-tiny", 0.5, "fp32,int8"),
    # +0.3 s: measured, Ctrl-C then lands in JAX's gc callback again and again ("Exception ignored in:
    # <function _xla_gc_callback>"), where it used to be swallowed and the export went on to exit 0
    ("convert FP32", 0.3, "fp32,int8"),
    ("quantize int8", 0.0, "fp32,int8,int4,static-int8,a16w8"),
], ids=["load", "conversion", "quantise"])
def test_sigint_ends_export_with_130_and_no_file(tmp_path, stage, delay, precisions):
    """D10: SIGINT during model load, conversion or quantisation -> exit 130, one "edgedepth: interrupted" line, and
    no file (finished or temporary) left in the output folder."""
    out = tmp_path / "out"
    child = _Child("export", *TINY, "--precision", precisions, "--out", out)
    child.wait_for(stage)
    time.sleep(delay)
    child.proc.send_signal(signal.SIGINT)
    code = child.finish()
    lines = _lines(child.stderr)
    assert code == 130, child.stderr[-3000:]
    assert lines[-1] == "edgedepth: interrupted", child.stderr[-3000:]
    assert "Traceback" not in child.stderr and "Exception ignored" not in child.stderr, child.stderr[-3000:]
    assert not out.exists() or os.listdir(out) == []


_SWALLOWED = textwrap.dedent("""
    import gc, signal, sys, time
    from edgedepth import interrupt

    SIG = getattr(signal, sys.argv[2])

    def callback(phase, info):          # Ctrl-C arriving as a gc callback runs: raised there, Python drops it
        if phase == "start" and not fired:
            fired.append(1)
            signal.raise_signal(SIG)

    fired = []
    with interrupt.handling():
        try:
            if sys.argv[1] == "gc-callback":
                gc.callbacks.append(callback)
                gc.collect()
                gc.callbacks.remove(callback)
                deadline = time.monotonic() + 120
                while time.monotonic() < deadline:      # plain Python work, as the converter's
                    sum(range(1000))
            else:                           # a library's bare except swallows it
                try:
                    signal.raise_signal(SIG)
                except BaseException:
                    pass
                interrupt.check()               # where the export code checks: after the converter returns
            print("carried on")
        except KeyboardInterrupt as e:
            print("interrupted", getattr(e, "signum", None))
            sys.exit(getattr(e, "exit_code", 130))
""")


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
@pytest.mark.parametrize("where", ["gc-callback", "bare-except"])
def test_swallowed_interrupt_still_ends_the_work(where, sig):
    """D10: an interrupt (Ctrl-C, SIGTERM, SIGHUP) raised where Python or a library drops it (a gc callback, as JAX's
    during conversion; a bare ``except``) still ends the work, with 128 + its number: delivered again outside the
    callback, or raised by ``interrupt.check``."""
    r = subprocess.run([sys.executable, "-c", _SWALLOWED, where, sig], capture_output=True, text=True, timeout=600,
                       preexec_fn=_hangup_default)
    signum = int(getattr(signal, sig))
    assert (r.returncode, r.stdout.split()) == (128 + signum, ["interrupted", str(signum)]), r.stdout + r.stderr
    assert "Exception ignored" not in r.stderr, r.stderr


_IGNORED = textwrap.dedent("""
    import signal
    from edgedepth import interrupt

    signal.signal(signal.SIGHUP, signal.SIG_IGN)        # as nohup starts a command
    with interrupt.handling():
        signal.raise_signal(signal.SIGHUP)
        interrupt.check()
        print("carried on")
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
""")


def test_an_ignored_signal_stays_ignored():
    """Under ``nohup`` (SIGHUP ignored) a closed terminal does not end the command."""
    r = subprocess.run([sys.executable, "-c", _IGNORED], capture_output=True, text=True, timeout=600)
    assert (r.returncode, r.stdout.strip()) == (0, "carried on"), r.stdout + r.stderr


_WORD = {"SIGTERM": "terminated", "SIGHUP": "hung up"}


@pytest.mark.parametrize("sig,stage", [("SIGTERM", "convert FP32"), ("SIGHUP", "convert FP32"),
                                       ("SIGTERM", "load synthetic-tiny")])
def test_sigterm_and_sighup_end_export_like_ctrl_c(tmp_path, sig, stage):
    """SIGTERM (``timeout``, ``docker stop``, a cancelled CI job) or SIGHUP during an export -> exit 128 + signal,
    one "edgedepth: terminated" / "hung up" line, and no output folder left (it used to die there and leave the
    empty folder)."""
    out = tmp_path / "out"
    child = _Child("export", "--model", "synthetic-tiny", "--size", "56x70", "--precision", "fp32", "--out", out)
    child.wait_for(stage)
    child.proc.send_signal(getattr(signal, sig))
    code = child.finish()
    assert code == 128 + int(getattr(signal, sig)), (code, child.stderr[-3000:])
    ours = [ln for ln in _lines(child.stderr) if ln.startswith("edgedepth:")]
    assert ours == [f"edgedepth: {_WORD[sig]}"] and _lines(child.stderr)[-1] == ours[0], child.stderr[-3000:]
    assert "Traceback" not in child.stderr and "Exception ignored" not in child.stderr, child.stderr[-3000:]
    assert not out.exists(), os.listdir(out)


_DURING_IMPORT = textwrap.dedent("""
    import signal, sys, time
    from edgedepth import interrupt

    with interrupt.handling():
        try:
            import slow_module              # Ctrl-C arrives during its import: must not be raised inside it
            print("imported", slow_module.DONE)
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                sum(range(1000))
            print("carried on")
        except KeyboardInterrupt:
            print("interrupted")
            sys.exit(130)
""")


def test_interrupt_during_an_import_is_delivered_after_it(tmp_path):
    """D10: Ctrl-C while a module is imported (as jaxlib is when a conversion starts: raised inside an extension's
    initialisation it aborted the process, exit -6 or -11) finishes the import, then ends the work with 130."""
    (tmp_path / "slow_module.py").write_text(textwrap.dedent("""
        import signal, time
        signal.raise_signal(signal.SIGINT)
        t = time.monotonic()
        while time.monotonic() - t < 0.5:      # more import work after the interrupt
            sum(range(1000))
        DONE = True
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", _DURING_IMPORT], capture_output=True, text=True, timeout=600, env=env)
    assert (r.returncode, r.stdout.split()) == (130, ["imported", "True", "interrupted"]), r.stdout + r.stderr


@pytest.fixture()
def full_disk(tmp_path):
    """A 256 KiB tmpfs filled to the last byte (root: CI and `make test` run as root); unmounted afterwards."""
    mnt = tmp_path / "full"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mnt)], capture_output=True, text=True)
    if r.returncode:
        pytest.fail(f"the full-disk tests mount a small tmpfs, which needs root: {r.stderr.strip()}", pytrace=False)
    try:
        fd = os.open(mnt / "filler", os.O_WRONLY | os.O_CREAT)
        try:
            while os.write(fd, b"\0" * 4096):
                pass
        except OSError:             # ENOSPC: full
            pass
        finally:
            os.close(fd)
        assert shutil.disk_usage(mnt).free == 0
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=True)


def _only_filler(mnt) -> list[str]:
    return sorted(p for p in os.listdir(mnt) if p != "filler")


def test_export_onto_a_full_disk(full_disk):
    """D7: export onto a full disk -> one line naming the folder and the space needed, exit 2, nothing left (the
    converter used to abort the process with "LLVM ERROR: IO failure on output stream" and leave its temp file)."""
    r = run_cli("export", *TINY, "--out", full_disk / "out", "--quiet")
    assert_one_line_error(r, "free space", str(full_disk / "out"), "MB needed")
    assert "LLVM ERROR" not in r.stderr
    assert _only_filler(full_disk) == [] or os.listdir(full_disk / "out") == []
    assert all(ln.startswith(OUR_LINES) for ln in _lines(r.stderr)), r.stderr   # quiet, too (D15)


def test_predict_and_reports_onto_a_full_disk(full_disk, tiny_plain_export):
    """D7: predict's depth PNG and a JSON report onto a full disk -> one line naming the file and "no space left on
    device", exit 2, nothing left (predict said "unexpected OSError")."""
    model = tiny_plain_export["fp32"]
    r = run_cli("predict", PHOTO, "--model", model, "-o", full_disk / "depth", "--quiet")
    assert_one_line_error(r, "no space left on device", str(full_disk / "depth" / "rgb_160x120_depth.png"))
    r = run_cli("inspect", model, "--no-gpu", "--json", full_disk / "report.json")
    assert_one_line_error(r, "no space left on device", str(full_disk / "report.json"))
    assert _only_filler(full_disk) == [] or (_only_filler(full_disk) == ["depth"]
                                             and os.listdir(full_disk / "depth") == [])


@pytest.mark.parametrize("stage", ["rewrites + export", "manifest, model card"])
def test_sigint_during_release_leaves_the_earlier_release(tmp_path, stage):
    """D10: Ctrl-C while a release converts, or as it writes the manifest (just before the swap) -> exit 130, the
    earlier release byte-identical, no staging folder or lock left beside it (it once ended with exit 0 and a
    replaced release)."""
    from test_release_folder import TINY as TINY_RECIPE, fake_release, snapshot

    recipe = tmp_path / "tiny.py"
    recipe.write_text("RECIPE = " + repr(TINY_RECIPE) + "\n")
    before = snapshot(fake_release(tmp_path / "rel"))
    child = _Child("release", "--recipe", recipe, "--out", tmp_path / "rel", "--no-gpu-check")
    child.wait_for(stage)
    child.proc.send_signal(signal.SIGINT)
    assert child.finish() == 130, child.stderr[-3000:]
    assert _lines(child.stderr)[-1] == "edgedepth: interrupted", child.stderr[-3000:]
    assert snapshot(tmp_path / "rel") == before
    assert sorted(os.listdir(tmp_path)) == ["rel", "tiny.py"]


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_during_release_leave_the_earlier_release(tmp_path, sig):
    """SIGTERM or SIGHUP while a release converts -> exit 128 + signal, one line, the earlier release byte-identical
    and no staging folder or lock file left beside it."""
    from test_release_folder import TINY as TINY_RECIPE, fake_release, snapshot

    recipe = tmp_path / "tiny.py"
    recipe.write_text("RECIPE = " + repr(TINY_RECIPE) + "\n")
    before = snapshot(fake_release(tmp_path / "rel"))
    child = _Child("release", "--recipe", recipe, "--out", tmp_path / "rel", "--no-gpu-check")
    child.wait_for("rewrites + export")
    child.proc.send_signal(getattr(signal, sig))
    code = child.finish()
    assert code == 128 + int(getattr(signal, sig)), (code, child.stderr[-3000:])
    ours = [ln for ln in _lines(child.stderr) if ln.startswith("edgedepth:")]
    assert ours == [f"edgedepth: {_WORD[sig]}"] and _lines(child.stderr)[-1] == ours[0], child.stderr[-3000:]
    assert snapshot(tmp_path / "rel") == before
    assert sorted(os.listdir(tmp_path)) == ["rel", "tiny.py"]
