"""Every file edgedepth writes goes through one writer (fsutil.atomic_path): never through a link, FIFO, device,
socket or folder at the path, names that always fit, and predict never replacing an input or a file it did not make."""

import os
import shutil
import socket
import stat

import pytest

from edgedepth.errors import EdgedepthError
from edgedepth.fsutil import NAME_MAX, atomic_path, check_output_path, write_bytes_atomic
from edgedepth.samples import sample_photo
from conftest import assert_one_line_error, run_cli


def _special_paths(tmp_path):
    """name -> a path holding something other than a regular file, plus what must still be true afterwards."""
    target = tmp_path / "target.txt"
    target.write_text("the user's file\n")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    sock_path = tmp_path / "sock.json"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    return {"symbolic link": link, "FIFO": fifo, "folder": folder, "socket": sock_path}, target, sock


def _unchanged(paths, target):
    assert target.read_text() == "the user's file\n"
    assert os.path.islink(paths["symbolic link"])
    assert stat.S_ISFIFO(os.lstat(paths["FIFO"]).st_mode)
    assert os.path.isdir(paths["folder"]) and not os.listdir(paths["folder"])
    assert stat.S_ISSOCK(os.lstat(paths["socket"]).st_mode)
    assert not [n for n in os.listdir(os.path.dirname(target)) if n.endswith(".tmp")]


def test_writer_refuses_special_files(tmp_path):
    paths, target, sock = _special_paths(tmp_path)
    try:
        for kind, p in paths.items():
            with pytest.raises(EdgedepthError, match=kind):
                write_bytes_atomic(str(p), b"{}\n")
        _unchanged(paths, target)
    finally:
        sock.close()


def test_writer_refuses_a_device_node(tmp_path):
    """A device at the path (as root, ``--json /dev/null`` used to replace the system's /dev/null).  As root the test
    makes its own null device in tmp_path; otherwise it uses /dev/null itself, which a non-root run cannot harm."""
    if os.geteuid() == 0:
        dev = tmp_path / "null"
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        print("not root: checking the system's /dev/null (the root-only case makes its own device node)")
        dev = "/dev/null"
    before = os.lstat(dev)
    with pytest.raises(EdgedepthError, match="character device"):
        write_bytes_atomic(str(dev), b"x")
    after = os.lstat(dev)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_writer_rechecks_before_rename(tmp_path):
    """Something special appearing at the path while the file is made is not replaced either."""
    final = tmp_path / "late.json"
    with pytest.raises(EdgedepthError, match="FIFO"):
        with atomic_path(final) as tmp:
            open(tmp, "wb").close()
            os.mkfifo(final)
    assert stat.S_ISFIFO(os.lstat(final).st_mode) and os.listdir(tmp_path) == ["late.json"]


def test_json_option_never_writes_through(tmp_path, tiny_plain_export):
    """The CLI's ``--json PATH`` (one writer for every output option): one line naming the path and what it is."""
    paths, target, sock = _special_paths(tmp_path)
    try:
        for kind, p in paths.items():
            r = run_cli("inspect", tiny_plain_export["fp32"], "--no-gpu", "--json", p, timeout=300)
            assert_one_line_error(r, repr(str(p)), kind)
        _unchanged(paths, target)
    finally:
        sock.close()


def test_long_names_fit(tmp_path):
    """Temp names are derived to fit NAME_MAX whatever the final name; a final name over it is one line."""
    name = "x" * (NAME_MAX - 5) + ".json"
    write_bytes_atomic(str(tmp_path / name), b"{}\n")
    assert os.listdir(tmp_path) == [name]
    with pytest.raises(EdgedepthError, match="bytes long"):
        check_output_path(str(tmp_path / ("y" * NAME_MAX + ".json")))


@pytest.fixture()
def data(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    shutil.copy(sample_photo(), d / "scene.jpg")
    return d


def _snapshot(folder):
    return {n: (folder / n).read_bytes() for n in sorted(os.listdir(folder))}


def test_predict_never_overwrites_an_input(data, tiny_plain_export):
    """``predict scene.jpg scene_depth.png -o data`` used to write scene.jpg's map over the second input, then read it."""
    shutil.copy(sample_photo(), data / "scene_depth.png")
    before = _snapshot(data)
    for extra in ((), ("--overwrite",)):       # not even with --overwrite
        r = run_cli("predict", data / "scene.jpg", data / "scene_depth.png", "--model", tiny_plain_export["fp32"],
                    "-o", data, "--quiet", *extra)
        assert_one_line_error(r, "would overwrite the input", "scene_depth.png")
        assert _snapshot(data) == before


def test_predict_never_overwrites_a_file_it_did_not_make(data, tiny_plain_export, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "scene_depth.png").write_bytes(b"the user's own map")
    args = ("predict", data / "scene.jpg", "--model", tiny_plain_export["fp32"], "-o", out, "--quiet")
    assert_one_line_error(run_cli(*args), "exists", "--overwrite")
    assert (out / "scene_depth.png").read_bytes() == b"the user's own map"
    assert_one_line_error(run_cli(*args, "--raw"), "exists")        # checked before any file is written
    assert sorted(os.listdir(out)) == ["scene_depth.png"]
    r = run_cli(*args, "--overwrite")
    assert r.returncode == 0, r.stderr
    assert (out / "scene_depth.png").read_bytes()[:4] == b"\x89PNG"


def test_predict_refuses_inputs_with_one_output_name(tmp_path, tiny_plain_export):
    for sub, ext in (("a", ".jpg"), ("b", ".png")):
        (tmp_path / sub).mkdir()
        shutil.copy(sample_photo(), tmp_path / sub / f"scene{ext}")
    r = run_cli("predict", tmp_path / "a" / "scene.jpg", tmp_path / "b" / "scene.png", "--model",
                tiny_plain_export["fp32"], "-o", tmp_path / "out", "--quiet")
    assert_one_line_error(r, "share the name 'scene'")
    assert not (tmp_path / "out").exists()


def test_predict_folder_where_an_output_goes(data, tiny_plain_export, tmp_path):
    out = tmp_path / "out"
    (out / "scene_depth.png").mkdir(parents=True)
    r = run_cli("predict", data / "scene.jpg", "--model", tiny_plain_export["fp32"], "-o", out, "--overwrite")
    assert_one_line_error(r, "scene_depth.png", "is a folder")


def test_predict_long_photo_name(tmp_path, tiny_plain_export):
    """A 240-character photo name: its outputs and their temp files fit; a name whose output cannot fit is one line."""
    ok = tmp_path / ("p" * 236 + ".jpg")
    shutil.copy(sample_photo(), ok)
    r = run_cli("predict", ok, "--model", tiny_plain_export["fp32"], "-o", tmp_path / "out", "--quiet", "--raw")
    assert r.returncode == 0, r.stderr
    assert len(os.listdir(tmp_path / "out")) == 3
    too_long = tmp_path / ("q" * 250 + ".jpg")
    shutil.copy(sample_photo(), too_long)
    r = run_cli("predict", too_long, "--model", tiny_plain_export["fp32"], "-o", tmp_path / "out2", "--quiet")
    assert_one_line_error(r, "bytes long")
    assert not (tmp_path / "out2").exists()


def test_predict_prints_paths_escaped(tmp_path, tiny_plain_export):
    """A newline or an escape sequence in a photo's name never reaches the terminal raw: one line per file written."""
    odd = tmp_path / "a\nb\x1b[31mred.jpg"
    shutil.copy(sample_photo(), odd)
    r = run_cli("predict", odd, "--model", tiny_plain_export["fp32"], "-o", tmp_path / "out", "--quiet")
    assert r.returncode == 0, r.stderr
    assert "\x1b" not in r.stdout and r.stdout.count("\n") == 1
    assert "a\\nb\\x1b[31mred_depth.png" in r.stdout
    assert os.path.exists(tmp_path / "out" / "a\nb\x1b[31mred_depth.png")


def test_failed_export_removes_only_what_it_wrote(tmp_path):
    """The cleanup of a failed export removes the files that run wrote, never what was at a path before it: a folder
    with a file's name (was "unexpected IsADirectoryError"), or an earlier file the run never got to replace."""
    from edgedepth.fsutil import write_bytes_atomic
    from edgedepth.interrupt import removed_on_failure

    folder, earlier, new = tmp_path / "a.tflite", tmp_path / "b.tflite", tmp_path / "c.tflite"
    folder.mkdir()
    earlier.write_bytes(b"an earlier export")
    with pytest.raises(EdgedepthError, match="is a folder"):
        with removed_on_failure() as written:
            written.append(str(new))
            write_bytes_atomic(str(new), b"made by this run")
            written.append(str(earlier))        # failed before this one was written
            written.append(str(folder))
            write_bytes_atomic(str(folder), b"x")
    assert folder.is_dir() and earlier.read_bytes() == b"an earlier export" and not new.exists()
