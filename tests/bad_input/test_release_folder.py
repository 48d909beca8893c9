"""The release folder (issue 27, items 1 and 5): ``release`` never deletes what edgedepth did not make, replaces an
earlier release atomically, locks, cleans up after killed runs, and treats a recipe as code it executes.

Immutable files use ``chattr +i`` and the read-only case a tmpfs mount: both need root (CAP_LINUX_IMMUTABLE,
CAP_SYS_ADMIN), as CI has; a machine without them fails with a message saying so, nothing is skipped.
"""

import contextlib
import errno
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import assert_one_line_error, run_cli
from edgedepth.errors import EdgedepthError
from edgedepth.release import manifest as mf
from edgedepth.release import outdir

SMALL = "depth-anything/Depth-Anything-V2-Small-hf"
TINY = {"name": "tiny", "base_model": SMALL, "model": "synthetic-tiny", "sizes": ["28x42"],
        "litert": {"precisions": ["fp32"]}, "parity": {"images": 0}}
# A child process that holds a release folder's staging (and lock) until told to finish or to die by SIGKILL.
HOLDER = """
import os, signal, sys
from edgedepth.release import manifest as mf, outdir
with outdir.staged(sys.argv[1]) as s:
    open(os.path.join(s, "model.bin"), "wb").write(b"new" * 1000)
    mf.write(s, {"files": [mf.file_entry(s, "model.bin")]})
    print("ready", flush=True)
    if sys.stdin.readline().strip() == "die":
        os.kill(os.getpid(), signal.SIGKILL)
"""


def fake_release(folder, payload=b"old"):
    """An earlier edgedepth release: files listed in a manifest (one in a subfolder) + build-report.json."""
    os.makedirs(folder / "onnx")
    (folder / "LICENSE").write_bytes(payload)
    (folder / "onnx" / "model.onnx").write_bytes(payload * 10)
    (folder / mf.BUILD_REPORT).write_text("{}\n")
    mf.write(str(folder), {"files": [mf.file_entry(str(folder), r) for r in ("LICENSE", "onnx/model.onnx")]})
    return folder


def snapshot(folder):
    return {os.path.relpath(os.path.join(d, f), folder): open(os.path.join(d, f), "rb").read()
            for d, _, fs in os.walk(folder) for f in fs}


def chattr(flag, path):
    r = subprocess.run(["chattr", flag, str(path)], capture_output=True, text=True)
    assert r.returncode == 0, (f"chattr {flag} {path} failed ({r.stderr.strip()}): this test needs root with "
                               "CAP_LINUX_IMMUTABLE on a filesystem with the immutable flag (ext4, tmpfs >= Linux 6.0)")


@contextlib.contextmanager
def immutable(path):
    chattr("+i", path)
    try:
        yield
    finally:
        chattr("-i", path)


def test_foreign_folder_is_left_untouched(tmp_path):
    """D1: `release --out precious` on a folder holding a user's file exits 2 naming it; the file stays."""
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "thesis.txt").write_text("x")
    r = run_cli("release", "--model", "synthetic-tiny", "--out", tmp_path / "precious", "--quiet")
    assert_one_line_error(r, "precious", "not an edgedepth release", "thesis.txt")
    assert snapshot(tmp_path) == {"precious/thesis.txt": b"x"} and os.listdir(tmp_path) == ["precious"]


def test_out_folders_refused_before_any_work(tmp_path):
    """D1/D5: a file, a symlink to a folder, a release with a user's file or symlink dropped in, a foreign manifest:
    each one line naming the folder and the reason, nothing changed; absent, empty and earlier releases pass."""
    (tmp_path / "afile").write_text("x")
    (tmp_path / "dir").mkdir()
    os.symlink(tmp_path / "dir", tmp_path / "link")
    (fake_release(tmp_path / "dropped") / "onnx" / "notes.txt").write_text("mine")
    os.symlink("/etc/passwd", fake_release(tmp_path / "linked") / "passwd")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / mf.MANIFEST).write_text('{"name": "not ours"}')
    before = snapshot(tmp_path)
    for name, fragment in [("afile", "not a folder"), ("link", "symbolic link"), ("dropped", "'onnx/notes.txt'"),
                           ("linked", "'passwd'"), ("other", "'manifest.json'")]:
        with pytest.raises(EdgedepthError, match="release folder .*" + name) as e:
            outdir.check_out_dir(str(tmp_path / name))
        assert fragment in str(e.value) and "\n" not in str(e.value)
    assert snapshot(tmp_path) == before
    (tmp_path / "empty").mkdir()
    for ok in ("absent", "empty", "earlier"):
        outdir.check_out_dir(str(fake_release(tmp_path / ok) if ok == "earlier" else tmp_path / ok))


def test_current_home_and_root_folders_are_refused(tmp_path, monkeypatch):
    """D1: `--out .` (and an ancestor of the current folder, the home folder, /) is refused; the folder's files stay."""
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    (work / "recipe.py").write_text("RECIPE = " + repr(TINY) + "\n")
    (work / "notes.txt").write_text("mine")
    r = subprocess.run([sys.executable, "-m", "edgedepth", "release", "--recipe", "recipe.py", "--out", ".",
                        "--no-gpu-check", "--quiet"], cwd=work, capture_output=True, text=True, timeout=600)
    assert_one_line_error(r, "'.'", "is the current folder")
    assert sorted(os.listdir(work)) == ["notes.txt", "recipe.py"]
    monkeypatch.chdir(work)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    for out, why in [(".", "is the current folder"), ("..", "holds the current folder"),
                     (str(tmp_path), "holds the current folder"), (str(tmp_path / "home"), "is the home folder"),
                     ("/", "is the filesystem root")]:
        with pytest.raises(EdgedepthError, match=why):
            outdir.check_out_dir(out)


def test_read_only_mount_and_immutable_folder_are_refused_up_front(tmp_path):
    """D5: a folder on a read-only mount, the mount point itself and an immutable folder fail before any build."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True, text=True)
    assert r.returncode == 0, f"mount tmpfs failed ({r.stderr.strip()}): this test needs root with CAP_SYS_ADMIN"
    try:
        fake_release(mnt / "old")
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        r = run_cli("release", "--model", "synthetic-tiny", "--out", mnt / "new", "--quiet")
        assert_one_line_error(r, "cannot write beside release folder", "new", "Read-only file system")
        with pytest.raises(EdgedepthError, match="cannot write beside .*Read-only file system"):
            outdir.check_out_dir(str(mnt / "old"))
        with pytest.raises(EdgedepthError, match="mount point"):
            outdir.check_out_dir(str(mnt))
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    (tmp_path / "frozen").mkdir()
    with immutable(tmp_path / "frozen"), pytest.raises(EdgedepthError, match="'.*frozen' cannot be replaced: Op"):
        outdir.check_out_dir(str(tmp_path / "frozen"))


def test_injected_build_failure_leaves_earlier_release_intact(tmp_path, monkeypatch):
    """D2 (done-when): a build that fails while replacing an earlier release leaves it byte-identical, no
    staging folder and no lock behind."""
    from edgedepth.release.build import build
    from edgedepth.release.recipe import from_dict

    before = snapshot(fake_release(tmp_path / "rel"))

    def full_disk(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    from edgedepth import formats

    monkeypatch.setattr(type(formats.FORMATS[0]), "export", full_disk)     # the first format's files: the first write
    with pytest.raises(OSError, match="No space left"):
        build(from_dict(TINY), str(tmp_path / "rel"), gpu_check=False)
    assert snapshot(tmp_path / "rel") == before and os.listdir(tmp_path) == ["rel"]


def test_failed_swap_leaves_earlier_release_intact(tmp_path, monkeypatch):
    """D2: the exchange failing, the rename-aside fallback failing half way, or a user's file appearing in the old
    release during the build: the old release is as it was, the new build removed, one line."""
    out = tmp_path / "rel"
    before = snapshot(fake_release(out))

    def broken_exchange(a, b):
        raise OSError(errno.EIO, "Input/output error", b)

    real_rename = os.rename

    def broken_rename(src, dst):
        if os.path.basename(src) == outdir.STAGED:
            raise OSError(errno.EIO, "Input/output error", src)
        return real_rename(src, dst)

    for exchange, rename in [(broken_exchange, real_rename), (lambda a, b: False, broken_rename)]:
        monkeypatch.setattr(outdir, "_exchange", exchange)
        monkeypatch.setattr(os, "rename", rename)
        with pytest.raises(EdgedepthError, match="could not put release folder .*rel.* in place .*Input/output"):
            with outdir.staged(str(out)) as s:
                fake_release_files(s)
        monkeypatch.undo()
        assert snapshot(out) == before and os.listdir(tmp_path) == ["rel"]
    with pytest.raises(EdgedepthError, match="release folder .*rel' holds 'late.txt', which its manifest does not"):
        with outdir.staged(str(out)) as s:
            fake_release_files(s)
            (out / "late.txt").write_text("written during the build")
    assert snapshot(out) == {**before, "late.txt": b"written during the build"} and os.listdir(tmp_path) == ["rel"]


def fake_release_files(staging):
    open(os.path.join(staging, "NEW"), "wb").write(b"new")
    mf.write(staging, {"files": [mf.file_entry(staging, "NEW")]})


@pytest.mark.parametrize("renameat2", [True, False])
def test_replacement_swaps_and_removes_old_release(tmp_path, monkeypatch, renameat2):
    """D2/D13: with renameat2's exchange and with the rename-aside fallback, the new release replaces the old one,
    which is removed; folders get normal permissions (umask), nothing is left beside."""
    out = fake_release(tmp_path / "rel")
    if not renameat2:
        monkeypatch.setattr(outdir, "_exchange", lambda a, b: False)
    old_umask = os.umask(0o027)
    try:
        with outdir.staged(str(out)) as s:
            fake_release_files(s)
    finally:
        os.umask(old_umask)
    assert sorted(snapshot(out)) == ["NEW", "manifest.json"] and mf.verify(str(out)) == []
    assert os.stat(out).st_mode & 0o777 == 0o750 and os.stat(out / "NEW").st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["rel"]


def test_old_release_with_an_immutable_file(tmp_path, capsys):
    """D2: an earlier release holding an unremovable file (chattr +i LICENSE) is still replaced; what is left of it
    stays at a named hidden path (a note says which), and a later run leaves it alone."""
    out = fake_release(tmp_path / "rel")
    chattr("+i", out / "LICENSE")
    try:
        with outdir.staged(str(out)) as s:
            fake_release_files(s)
    finally:
        for d, _, fs in os.walk(tmp_path):          # wherever the old LICENSE is now
            if "LICENSE" in fs:
                chattr("-i", os.path.join(d, "LICENSE"))
    assert sorted(snapshot(out)) == ["NEW", "manifest.json"]
    kept = [n for n in os.listdir(tmp_path) if n != "rel"]
    assert len(kept) == 1 and kept[0].startswith(".rel.replaced-"), kept
    assert snapshot(tmp_path / kept[0]) == {"LICENSE": b"old"}
    note = capsys.readouterr().err
    assert "could not be removed completely" in note and "'LICENSE'" in note and kept[0] in note
    with outdir.staged(str(out)) as s:
        fake_release_files(s)
    assert sorted(os.listdir(tmp_path)) == sorted(["rel", kept[0]])


def _holder(out):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready", p.communicate()[1]
    return p


def test_second_release_into_one_folder_is_refused(tmp_path):
    """D11: while one release writes a folder (another process, holding the lock), a second one is refused with one
    line naming the folder; the first then finishes and the lock file is gone."""
    out = tmp_path / "rel"
    p = _holder(out)
    try:
        with pytest.raises(EdgedepthError, match="release folder .*rel.* is being written by another edgedepth"):
            with outdir.staged(str(out)):
                raise AssertionError("must not get here")
    finally:
        _, err = p.communicate("finish\n", timeout=120)
    assert p.returncode == 0, err
    assert sorted(snapshot(out)) == ["manifest.json", "model.bin"] and os.listdir(tmp_path) == ["rel"]


def test_killed_release_leftovers_are_removed_by_the_next_run(tmp_path):
    """D11: kill -9 during a release leaves the marked work folder (and the lock file); the next run removes them
    but not unmarked folders of edgedepth's name patterns (not edgedepth's)."""
    out = tmp_path / "rel"
    p = _holder(out)
    p.communicate("die\n", timeout=120)
    assert p.returncode == -signal.SIGKILL
    assert sorted(os.listdir(tmp_path)) == [".rel.edgedepth-lock", ".rel.edgedepth-work"]
    assert os.path.isfile(tmp_path / ".rel.edgedepth-work" / outdir.WORK_MARKER)
    for mine in (".rel.staging-abcdefgh", ".rel.replaced-abcdefgh"):    # same name patterns, no marker: the user's
        (tmp_path / mine).mkdir()
    with outdir.staged(str(out)) as s:
        fake_release_files(s)
    assert sorted(os.listdir(tmp_path)) == [".rel.replaced-abcdefgh", ".rel.staging-abcdefgh", "rel"]


def test_real_release_replaces_an_earlier_one(tmp_path):
    """D2/D13 end to end: `release` over an earlier release builds beside it, swaps, removes it; the result verifies
    (no marker or stray file), folders and files have normal permissions under the caller's umask.  The earlier
    release's card annotated by the user: refused without --force (one line, before any work), replaced with it."""
    recipe = tmp_path / "tiny.py"
    recipe.write_text("RECIPE = " + repr(TINY) + "\n")
    fake_release(tmp_path / "rel")
    (tmp_path / "rel" / "LICENSE").write_text("my annotations")
    r = run_cli("release", "--recipe", recipe, "--out", tmp_path / "rel", "--no-gpu-check", "--quiet")
    assert_one_line_error(r, "'LICENSE' was changed", "--force")
    assert (tmp_path / "rel" / "LICENSE").read_text() == "my annotations"
    old_umask = os.umask(0o022)
    try:
        r = run_cli("release", "--recipe", recipe, "--out", tmp_path / "rel", "--no-gpu-check", "--quiet", "--force")
    finally:
        os.umask(old_umask)
    assert r.returncode == 0, r.stderr[-3000:]
    assert mf.verify(str(tmp_path / "rel")) == [] and not os.path.exists(tmp_path / "rel" / "onnx")
    assert sorted(os.listdir(tmp_path)) == ["rel", "tiny.py"]
    for d, _, fs in os.walk(tmp_path / "rel"):
        assert os.stat(d).st_mode & 0o777 == 0o755 and all(os.stat(os.path.join(d, f)).st_mode & 0o777 == 0o644
                                                           for f in fs)


def test_default_recipe_is_never_the_current_folders(tmp_path):
    """D12: with no recipe given, `release` runs edgedepth's own recipes/depth-anything-v2-small.py, not a
    booby-trapped one in the current folder (which would write a marker)."""
    from edgedepth.cli import build_parser
    from edgedepth.release.recipe import default_recipe, load_recipe

    trap = tmp_path / "recipes" / "depth-anything-v2-small.py"
    trap.parent.mkdir()
    trap.write_text(f"open({str(tmp_path / 'TRAP-RAN')!r}, 'w').close()\nRECIPE = {TINY!r}\n")
    r = subprocess.run([sys.executable, "-m", "edgedepth", "release", "--out", "out", "--sizes", "500x500"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert_one_line_error(r, "500x500", "14")             # the real recipe loaded, then the bad size was refused
    assert not (tmp_path / "TRAP-RAN").exists()
    assert build_parser().parse_args(["release", "--out", "x"]).recipe is None
    assert os.path.isabs(default_recipe()) and load_recipe().name == "depth-anything-v2-small-edgedepth"


def test_recipe_that_exits_or_raises_is_an_error(tmp_path):
    """D12: a recipe calling sys.exit(0) no longer makes `release` exit 0 with nothing built; one raising is one
    line too."""
    from edgedepth.release.recipe import load_recipe

    quits = tmp_path / "quits.py"
    quits.write_text("import sys\nsys.exit(0)\n")
    r = run_cli("release", "--recipe", quits, "--out", tmp_path / "out", "--quiet")
    assert_one_line_error(r, "quits.py", "stopped with sys.exit(0)")
    assert not (tmp_path / "out").exists()
    broken = tmp_path / "broken.py"
    broken.write_text("RECIPE = {'name': undefined_name}\n")
    with pytest.raises(EdgedepthError, match="broken.py' raised NameError: name 'undefined_name' is not defined"):
        load_recipe(str(broken))


def test_edited_earlier_release_needs_force(tmp_path, monkeypatch):
    """An earlier release whose listed file was changed (or truncated), or which holds a file its manifest does not
    list, is not replaced: one line naming the file, nothing changed; with force it is.  A release found as built is
    hashed once, not again by the checks that follow (unchanged files)."""
    out = fake_release(tmp_path / "rel")
    (out / "LICENSE").write_bytes(b"mine")
    before = snapshot(out)
    with pytest.raises(outdir.ChangedRelease, match=r"release folder .*rel': 'LICENSE' was changed after the release"):
        outdir.check_out_dir(str(out))
    with pytest.raises(outdir.ChangedRelease, match="'LICENSE' was changed"):
        with outdir.staged(str(out)):
            raise AssertionError("must not get here")
    (out / "LICENSE").write_bytes(b"new")                      # same size, other bytes: only the hash tells
    with pytest.raises(outdir.ChangedRelease, match="'LICENSE' was changed"):
        outdir.check_out_dir(str(out))
    (out / "LICENSE").write_bytes(b"old")
    (out / "onnx" / "model.onnx").write_bytes(b"old")
    with pytest.raises(outdir.ChangedRelease, match="'onnx/model.onnx' was truncated"):
        outdir.check_out_dir(str(out))
    (out / "onnx" / "model.onnx").write_bytes(b"old" * 10)
    (out / "README.md").write_text("my notes")                  # a file the manifest does not list
    with pytest.raises(outdir.ChangedRelease, match="holds 'README.md', which its manifest does not list"):
        outdir.check_out_dir(str(out))
    assert snapshot(out) == {**before, "LICENSE": b"old", "README.md": b"my notes"}
    os.remove(out / "README.md")
    for f in ("LICENSE", "onnx/model.onnx"):                   # not modified just now (a file that was may change
        os.utime(out / f, ns=(0, 0))                            # again within its timestamp's tick: hashed each time)
    monkeypatch.setattr(outdir, "_hashed", {})
    calls = []
    real = mf.check_entry
    monkeypatch.setattr(mf, "check_entry", lambda *a: calls.append(a[1]["path"]) or real(*a))
    for _ in range(3):
        outdir.check_out_dir(str(out))
    assert sorted(calls) == ["LICENSE", "onnx/model.onnx"]      # hashed once
    (out / "LICENSE").write_bytes(b"mine")
    (out / "extra.txt").write_text("x")
    with outdir.staged(str(out), force=True) as s:
        fake_release_files(s)
    assert sorted(snapshot(out)) == ["NEW", "manifest.json"] and os.listdir(tmp_path) == ["rel"]


def test_edit_during_the_build_keeps_the_earlier_release(tmp_path):
    """A file of the earlier release edited while the new one builds: the new one is not swapped in."""
    out = fake_release(tmp_path / "rel")
    with pytest.raises(outdir.ChangedRelease, match="'LICENSE' was changed"):
        with outdir.staged(str(out)) as s:
            fake_release_files(s)
            (out / "LICENSE").write_bytes(b"edited during the build")
    assert snapshot(out)["LICENSE"] == b"edited during the build" and os.listdir(tmp_path) == ["rel"]


def test_cli_refusals_before_any_work(tmp_path):
    """`release` exits 2 with one line, nothing written, for: an edited earlier release (naming the file and --force),
    --out inside a release folder, duplicate or no sizes, a name longer than the file system takes."""
    out = fake_release(tmp_path / "rel")
    (out / "LICENSE").write_bytes(b"annotated")
    before = snapshot(tmp_path)
    args = ("--model", "synthetic-tiny", "--quiet")
    r = run_cli("release", "--out", out, *args)
    assert_one_line_error(r, "rel'", "'LICENSE' was changed", "--force")
    r = run_cli("release", "--out", out / "inner", *args)
    assert_one_line_error(r, "inner'", "is inside the release folder", repr(os.path.realpath(out)))
    for sizes, fragment in [("28x42,28x42", "'28x42' and '28x42' are the same size"),
                            ("28x42, 28X42", "'28x42' and ' 28X42' are the same size"), ("", "no size given"),
                            (" , ", "no size given"), ("28x42,", "'' is not a size")]:
        r = run_cli("release", "--out", tmp_path / "new", "--sizes", sizes, *args)
        assert_one_line_error(r, "--sizes: ", fragment)
    r = run_cli("release", "--out", tmp_path / ("n" * 300), *args)
    assert_one_line_error(r, "is 300 bytes; the file system takes at most 255")
    assert snapshot(tmp_path) == before and sorted(os.listdir(tmp_path)) == ["rel"]


def test_recipe_sizes_duplicates_and_empty(tmp_path):
    """A recipe's sizes: one size twice (however written) or none is one line naming the recipe; sizes are kept in
    canonical form."""
    from edgedepth.release.recipe import from_dict

    for sizes, fragment in [(["28x42", "28X42"], "'28x42' and '28X42' are the same size"), ([], "no size given"),
                            ([" 28x42", "28x42 "], "are the same size"), ([28], "28 is not a size")]:
        with pytest.raises(EdgedepthError, match=f"recipe RECIPE: sizes: .*{fragment}"):
            from_dict({**TINY, "sizes": sizes})
    assert from_dict({**TINY, "sizes": [" 28X42", "42x28"]}).sizes == ("28x42", "42x28")
    assert from_dict(TINY).with_overrides(sizes=["56x70 "]).sizes == ("56x70",)
    with pytest.raises(EdgedepthError, match="sizes: '28x42' and '28x42' are the same size") as e:
        from_dict(TINY).with_overrides(sizes=["28x42", "28x42"])
    assert e.value.for_cli().startswith("--sizes: ")


def test_out_inside_a_release_folder_is_refused(tmp_path):
    """--out anywhere inside a release folder (also through a symlinked parent) is refused naming the release; a
    release folder that holds another release inside is not an earlier release."""
    outer = fake_release(tmp_path / "outer")
    os.symlink(outer / "onnx", tmp_path / "via")
    before = snapshot(tmp_path)
    for inner in (outer / "inner", outer / "onnx" / "a" / "b", tmp_path / "via" / "x"):
        with pytest.raises(EdgedepthError, match=re.escape(f"is inside the release folder "
                                                           f"{os.path.realpath(outer)!r}")):
            outdir.check_out_dir(str(inner))
        with pytest.raises(EdgedepthError, match="is inside the release folder"):
            with outdir.staged(str(inner)):
                raise AssertionError("must not get here")
    assert snapshot(tmp_path) == before
    os.makedirs(tmp_path / "holder")
    fake_release(tmp_path / "holder" / "nested")
    with pytest.raises(EdgedepthError, match="not an edgedepth release .*'nested'"):
        outdir.check_out_dir(str(tmp_path / "holder"))


def test_long_release_folder_names(tmp_path):
    """A 250-byte folder name works (the lock and work folder beside it get shortened names with a hash, at most
    255 bytes); two long names that differ only at the end get different ones; a name over the limit is one line."""
    long_a, long_b = "a" * 249 + "1", "a" * 249 + "2"
    for name in (long_a, long_b, "é" * 125):
        with outdir.staged(str(tmp_path / name)) as s:
            fake_release_files(s)
            beside = [n for n in os.listdir(tmp_path) if n.startswith(".")]
            assert beside and all(len(os.fsencode(n)) <= 255 for n in beside), beside
        assert sorted(snapshot(tmp_path / name)) == ["NEW", "manifest.json"]
    assert outdir.lock_path(str(tmp_path / long_a)) != outdir.lock_path(str(tmp_path / long_b))
    assert len(os.fsencode(os.path.basename(outdir.lock_path(str(tmp_path / ("é" * 127)))))) <= 255
    assert sorted(os.listdir(tmp_path)) == sorted([long_a, long_b, "é" * 125])
    with pytest.raises(EdgedepthError, match="is 256 bytes; the file system takes at most 255"):
        outdir.check_out_dir(str(tmp_path / ("b" * 256)))
    with pytest.raises(EdgedepthError, match="is 300 bytes"):
        outdir.check_out_dir(str(tmp_path / ("c" * 300) / "rel"))
    assert sorted(os.listdir(tmp_path)) == sorted([long_a, long_b, "é" * 125])


def test_export_into_a_release_folder_is_refused(tmp_path):
    """edgedepth.export and `export --out` into a release folder, or a folder inside one: one line naming the
    release's manifest, nothing written or created."""
    import edgedepth

    out = fake_release(tmp_path / "rel")
    before = snapshot(tmp_path)
    for where in (out, out / "onnx", out / "new-sub"):
        with pytest.raises(EdgedepthError, match="output folder .* the release folder " +
                           re.escape(repr(os.path.realpath(out))) + " .*manifest.json"):
            edgedepth.export("synthetic-tiny", size="28x42", out_dir=str(where), target="onnx", precisions=["fp32"])
    r = run_cli("export", "--model", "synthetic-tiny", "--size", "28x42", "--target", "onnx", "--precision", "fp32",
                "--out", out, "--quiet")
    assert_one_line_error(r, "output folder", "is the release folder", "manifest.json")
    assert snapshot(tmp_path) == before and not os.path.exists(out / "new-sub")
