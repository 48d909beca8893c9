"""Every file edgedepth reads as input (model files of every format, photos, recipes, checkpoint files) passes one
reader check (``edgedepth.fsutil.regular_file`` / ``open_input``): a FIFO, a device, a socket or a /proc pseudo-file
is one line saying what it is (exit 2), never a hang, never "empty" or "does not exist".  Every command runs in a
child with a timeout: a reader that blocks fails the test instead of hanging it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import pytest

from conftest import assert_one_line_error, run_cli

PHOTO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "rgb_97x61.png")
TIMEOUT = 120       # a blocked reader: subprocess.TimeoutExpired, the test fails


def _all(runs: dict) -> dict:
    """``{name: argv}`` run as CLI children, three at a time; ``{name: CompletedProcess}``."""
    with ThreadPoolExecutor(3) as pool:
        futures = {n: pool.submit(run_cli, *argv, timeout=TIMEOUT) for n, argv in runs.items()}
        return {n: f.result() for n, f in futures.items()}


@pytest.mark.parametrize("suffix", [".tflite", ".pte", ".onnx"])
def test_fifo_model_files_never_block(tmp_path, suffix):
    """A FIFO named like a model file: inspect, predict --model, validate and bench say so in one line."""
    fifo = str(tmp_path / f"pipe{suffix}")
    os.mkfifo(fifo)
    runs = _all({"inspect": ["inspect", fifo, "--no-gpu"],
                 "predict": ["predict", PHOTO, "--model", fifo, "-o", tmp_path / "o"],
                 "validate": ["validate", fifo, "--model", "synthetic-tiny", "--limit", "1"],
                 "bench": ["bench", fifo]})
    for name, r in runs.items():
        assert_one_line_error(r, f"model file {fifo!r} is not a regular file (FIFO)")
    assert not (tmp_path / "o").exists()


def test_open_refuses_special_files(tmp_path):
    """``edgedepth.open()`` on a FIFO, a symlinked character device or a /proc file: one EdgedepthError naming it."""
    fifo = str(tmp_path / "pipe.tflite")
    os.mkfifo(fifo)
    os.symlink("/dev/zero", tmp_path / "zero.pte")
    os.symlink("/proc/self/environ", tmp_path / "environ.onnx")
    code = ("import sys, edgedepth\n"
            "from edgedepth.errors import EdgedepthError\n"
            "for p in sys.argv[1:]:\n"
            "    try:\n"
            "        edgedepth.open(p)\n"
            "    except EdgedepthError as e:\n"
            "        print(e)\n")
    r = subprocess.run([sys.executable, "-c", code, fifo, str(tmp_path / "zero.pte"), str(tmp_path / "environ.onnx")],
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"model file {fifo!r} is not a regular file (FIFO)",
        f"model file {str(tmp_path / 'zero.pte')!r} is not a regular file (character device)",
        f"model file {str(tmp_path / 'environ.onnx')!r} is not a regular file (a kernel pseudo-file under /proc: its "
        "size is not known)"], r.stdout


def _specials(tmp_path, suffix: str) -> dict[str, tuple[str, str]]:
    """{case: (path, what the error says it is)}: a FIFO, /dev/zero and /proc/self/environ, each also behind a
    symlink with ``suffix``."""
    fifo = str(tmp_path / f"pipe{suffix}")
    os.mkfifo(fifo)
    os.symlink("/dev/zero", tmp_path / f"zero{suffix}")
    os.symlink("/proc/self/environ", tmp_path / f"environ{suffix}")
    proc = "a kernel pseudo-file under /proc"
    return {"fifo": (fifo, "(FIFO)"), "zero": ("/dev/zero", "(character device)"),
            "zero-link": (str(tmp_path / f"zero{suffix}"), "(character device)"),
            "environ": ("/proc/self/environ", proc), "environ-link": (str(tmp_path / f"environ{suffix}"), proc)}


def test_special_photos_are_named(tmp_path):
    """A FIFO, /dev/zero or /proc/self/environ as a photo (predict), or a FIFO among a folder's photos (validate
    --images): what it is, not "empty" or "does not exist"."""
    cases = _specials(tmp_path, ".png")
    runs = _all({n: ["predict", p, "--model", "synthetic-tiny", "--size", "28x28", "-o", tmp_path / "o"]
                 for n, (p, _) in cases.items()})
    for n, (p, kind) in cases.items():
        assert_one_line_error(runs[n], f"image {p!r} is not a regular file", kind)
    assert not (tmp_path / "o").exists()


def test_fifo_in_an_image_folder(tmp_path, tiny_plain_export):
    """validate --images: a FIFO among a folder's photos is named (was "empty"); a symlink to a photo in the folder is
    fine (one to a photo outside it is refused: tests/test_own_model.py)."""
    import shutil

    folder = tmp_path / "photos"
    folder.mkdir()
    shutil.copy(PHOTO, folder / "real.png")
    os.symlink("real.png", folder / "a.png")     # a symlink to a regular photo in the folder is fine
    os.mkfifo(folder / "b.png")
    r = run_cli("validate", tiny_plain_export["fp32"], "--model", "synthetic-tiny", "--images", folder,
                timeout=TIMEOUT)
    assert_one_line_error(r, f"image {str(folder / 'b.png')!r} is not a regular file (FIFO)")


def test_special_recipes_are_named(tmp_path):
    """``release --recipe`` a FIFO, /dev/zero or /proc/self/environ: what it is (was "does not exist", or the
    environment executed as Python)."""
    cases = _specials(tmp_path, ".py")
    runs = _all({n: ["release", "--recipe", p, "--out", tmp_path / "rel"] for n, (p, _) in cases.items()})
    for n, (p, kind) in cases.items():
        assert_one_line_error(runs[n], f"recipe {p!r} is not a regular file", kind)
    assert not (tmp_path / "rel").exists()


def test_special_checkpoint_files_are_named(tmp_path):
    """--model a FIFO or /proc/self/environ, or a checkpoint folder whose config.json or weights are a FIFO: what it
    is (was "has no config.json", "not a hub id", or a hang in the loader)."""
    fifo = str(tmp_path / "pipe")
    os.mkfifo(fifo)
    no_config = tmp_path / "fifo_config"
    no_config.mkdir()
    os.mkfifo(no_config / "config.json")
    weights = tmp_path / "fifo_weights"
    weights.mkdir()
    (weights / "config.json").write_text(json.dumps({"model_type": "depth_anything"}))
    os.mkfifo(weights / "model.safetensors")
    cases = {"fifo": (fifo, f"model {fifo!r} is not a regular file (FIFO)"),
             "environ": ("/proc/self/environ",
                         "model '/proc/self/environ' is not a regular file (a kernel pseudo-file"),
             "config": (str(no_config), f"checkpoint file {str(no_config / 'config.json')!r} is not a regular file "
                                        "(FIFO)"),
             "weights": (str(weights), f"checkpoint file {str(weights / 'model.safetensors')!r} is not a regular "
                                       "file (FIFO)")}
    runs = _all({n: ["predict", PHOTO, "--model", m, "--size", "28x28", "-o", tmp_path / "o"]
                 for n, (m, _) in cases.items()})
    for n, (_, words) in cases.items():
        assert_one_line_error(runs[n], words)


def test_regular_file_names_each_kind(tmp_path):
    """The check itself: each kind by name, a symlink to a regular file accepted, a dangling one named, an empty
    regular file opened (its callers say "empty")."""
    from edgedepth.errors import EdgedepthError
    from edgedepth.fsutil import open_input, read_input, regular_file

    (tmp_path / "ok.bin").write_bytes(b"data")
    os.symlink(tmp_path / "ok.bin", tmp_path / "link.bin")
    os.symlink(tmp_path / "nowhere", tmp_path / "dangling.bin")
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "empty.bin").write_bytes(b"")
    assert regular_file(tmp_path / "link.bin", "photo") == str(tmp_path / "link.bin")
    assert read_input(tmp_path / "link.bin") == b"data"
    with open_input(tmp_path / "empty.bin") as f:
        assert f.read() == b""
    sock_dir = tempfile.mkdtemp(prefix="edsock")         # an AF_UNIX path must be short
    sock = socket.socket(socket.AF_UNIX)
    try:
        sock.bind(os.path.join(sock_dir, "s"))
        for path, words in [(tmp_path / "pipe", "is not a regular file (FIFO)"),
                            ("/dev/null", "is not a regular file (character device)"),
                            (tmp_path, "is a folder, not a regular file"),
                            (os.path.join(sock_dir, "s"), "is not a regular file (socket)"),
                            ("/proc/self/environ", "is not a regular file (a kernel pseudo-file under /proc"),
                            (tmp_path / "missing.bin", "does not exist"),
                            (tmp_path / "dangling.bin", "is a symlink to"),
                            (tmp_path / "ok.bin" / "x", "does not exist (a part of its path is not a folder)")]:
            for check in (regular_file, open_input):
                with pytest.raises(EdgedepthError) as e:
                    check(path, "photo")
                assert str(e.value).startswith(f"photo {os.fspath(path)!r} {words}"), str(e.value)
    finally:
        sock.close()
        os.remove(os.path.join(sock_dir, "s"))
        os.rmdir(sock_dir)


def test_special_measurement_reports_are_named(tmp_path):
    """A recipe's parity/latency report that is a FIFO is one line naming it (was skipped silently as "not a file");
    an absent one is still skipped.  In a thread with a timeout: a blocking read fails instead of hanging."""
    import threading

    from edgedepth.errors import EdgedepthError
    from edgedepth.verify import records

    fifo = str(tmp_path / "bench.json")
    os.mkfifo(fifo)
    outcome: list = []

    def read() -> None:
        try:
            outcome.append(records.read([str(tmp_path / "absent.json"), fifo], "latency"))
        except EdgedepthError as e:
            outcome.append(e)

    t = threading.Thread(target=read, daemon=True)
    t.start()
    t.join(TIMEOUT)
    assert outcome, "records.read blocked on a FIFO"
    assert str(outcome[0]) == f"report {fifo!r} is not a regular file (FIFO)", outcome
