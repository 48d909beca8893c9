"""kill -9 at every point of a release's folder sequence: the release folder is always a whole release (the earlier
one or the new one, never holding a marker), and the next run recognises and removes every leftover (putting back
an earlier release a killed fallback swap left aside) but never a folder edgedepth did not make."""

import os
import signal
import subprocess
import sys

import pytest

from edgedepth.errors import EdgedepthError
from edgedepth.release import manifest as mf
from edgedepth.release import outdir

from test_release_folder import fake_release, fake_release_files, snapshot

# A child that replaces release folder argv[1] and dies by SIGKILL at point argv[2].
CHILD = """
import os, signal, sys
from edgedepth.release import manifest as mf, outdir
out, point = sys.argv[1], sys.argv[2]
work = outdir.work_path(out)
die = lambda *a: os.kill(os.getpid(), signal.SIGKILL)
real_mkdir, real_rename, real_exchange = os.mkdir, os.rename, outdir._exchange

def mkdir(p, *a, **k):
    if p == work and point == "claimed":
        die()
    real_mkdir(p, *a, **k)
    if p == work and point == "unmarked":
        die()

def rename(src, dst):
    real_rename(src, dst)
    if os.path.basename(dst) == outdir.ASIDE:
        die()

os.mkdir = mkdir
if point == "exchanged":
    outdir._exchange = lambda a, b: real_exchange(a, b) and die()
if point == "aside":
    outdir._exchange = lambda a, b: False
    os.rename = rename
if point == "removing":
    outdir._discard = die
with outdir.staged(out) as s:
    open(os.path.join(s, "NEW"), "wb").write(b"new")
    mf.write(s, {"files": [mf.file_entry(s, "NEW")]})
    if point == "building":
        die()
"""
# point: whether the release folder then holds the new release (else the earlier one)
POINTS = {"claimed": False, "unmarked": False, "building": False, "aside": False, "exchanged": True, "removing": True}
DECOYS = (".rel.staging-abcdefgh", ".rel.replaced-abcdefgh")     # edgedepth's name patterns, not edgedepth's folders


@pytest.mark.parametrize("point", POINTS)
def test_kill_at_each_point(tmp_path, point):
    out = fake_release(tmp_path / "rel")
    old = snapshot(out)
    for d in DECOYS:
        (tmp_path / d).mkdir()
        (tmp_path / d / "mine.txt").write_text("mine")
    p = subprocess.run([sys.executable, "-c", CHILD, str(out), point], capture_output=True, text=True, timeout=120)
    assert p.returncode == -signal.SIGKILL, p.stderr
    if POINTS[point]:           # swapped in: a whole release that verifies, no marker in it
        assert sorted(snapshot(out)) == ["NEW", "manifest.json"] and mf.verify(str(out)) == []
    elif point == "aside":      # between the fallback's two renames: the next run puts the earlier release back
        assert not os.path.lexists(out)
    else:
        assert snapshot(out) == old
    assert os.path.lexists(outdir.lock_path(str(out)))
    # the next run fails its build: the release folder is then exactly what the killed run left in place
    with pytest.raises(RuntimeError, match="build failed"):
        with outdir.staged(str(out)) as s:
            fake_release_files(s)
            raise RuntimeError("build failed")
    if POINTS[point]:
        assert sorted(snapshot(out)) == ["NEW", "manifest.json"]
    else:
        assert snapshot(out) == old
    assert sorted(os.listdir(tmp_path)) == sorted(["rel", *DECOYS])
    with outdir.staged(str(out)) as s:      # and a run after that replaces it as usual
        open(os.path.join(s, "NEWER"), "wb").write(b"newer")
        mf.write(s, {"files": [mf.file_entry(s, "NEWER")]})
    assert sorted(snapshot(out)) == ["NEWER", "manifest.json"] and mf.verify(str(out)) == []
    assert sorted(os.listdir(tmp_path)) == sorted(["rel", *DECOYS])
    assert all(snapshot(tmp_path / d) == {"mine.txt": b"mine"} for d in DECOYS)


def test_a_foreign_folder_at_the_work_folders_name_is_kept(tmp_path):
    """A folder named like the work folder that edgedepth did not make (no marker, no claim in a lock file left by a
    killed run): one line naming it, nothing removed; an empty one claimed by a killed run's lock file is removed."""
    out = fake_release(tmp_path / "rel")
    work = outdir.work_path(str(out))
    os.mkdir(work)
    open(os.path.join(work, "mine.txt"), "w").close()
    with pytest.raises(EdgedepthError, match="edgedepth-work' is in the way of release folder .*not made by edgedepth"):
        with outdir.staged(str(out)):
            raise AssertionError("must not get here")
    assert os.listdir(work) == ["mine.txt"] and not os.path.lexists(outdir.lock_path(str(out)))
    os.remove(os.path.join(work, "mine.txt"))
    with open(outdir.lock_path(str(out)), "wb") as f:
        f.write(outdir._CLAIM)
    with outdir.staged(str(out)) as s:
        fake_release_files(s)
    assert sorted(os.listdir(tmp_path)) == ["rel"]
