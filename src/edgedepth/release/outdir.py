"""The release folder on disk: which folders ``release`` may write, a lock, a work folder, an atomic swap.

``release`` writes only into a folder that is absent, empty, or an earlier edgedepth release (a manifest that
:func:`manifest.load` accepts, nothing beside what it lists, every listed file as built: replacing one the user changed
or added to needs ``force``); it never deletes what edgedepth did not make.  The current folder, its ancestors, the
home folder, the root and any folder inside a release are refused outright.

Beside the target, under a lock (``.KEY.edgedepth-lock``, ``flock``; KEY is NAME, shortened with a hash of it where the
internal names would be too long), a build happens in the work folder ``.KEY.edgedepth-work/``: it holds the marker
:data:`WORK_MARKER` and the staging folder ``staged/``.  The finished ``staged/`` replaces an earlier release by an
atomic exchange (Linux ``renameat2``; elsewhere the earlier release is moved to ``aside/`` first), so the earlier release
ends up inside the work folder, which is removed last.  No marker is ever inside a release folder.  The lock file
records the work folder before it is made, so whatever a killed run leaves (the work folder at any point, the lock
file) is recognised and removed by the next run, which first puts back an earlier release a killed fallback swap left
in ``aside/``.  An earlier release that cannot be removed completely (an immutable file) is kept at a named hidden path
``.KEY.replaced-XXXXXXXX`` that no later run touches.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import hashlib
import os
import re
import shutil
import stat
import sys
import tempfile
import time

from .. import interrupt
from ..errors import EdgedepthError
from . import manifest as mf

WORK_MARKER = ".edgedepth-work"         # in the work folder (never in a release folder)
MARKER = ".edgedepth-staging"           # what older versions put in a staging folder: such folders are removed
LOCK_SUFFIX = ".edgedepth-lock"
WORK_SUFFIX = ".edgedepth-work"
STAGED, ASIDE = "staged", "aside"       # in the work folder: the build (after an exchange: the earlier release), and
                                        # the earlier release during a fallback swap
_CLAIM = b"work\n"                      # the lock file's content while the work folder may exist
_LONGEST_SUFFIX = len(".replaced-XXXXXXXX")
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


class ChangedRelease(EdgedepthError):
    """An earlier release holds a file the user changed or added: replacing it needs ``force``."""

    def for_cli(self) -> str:
        return f"{super().for_cli()} (--force)"


def _name_max(path: str) -> int:
    """The longest file name (bytes) the file system of ``path`` (or of its nearest existing ancestor) takes."""
    while not os.path.isdir(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    try:
        return int(os.pathconf(path, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return 255


def _key(path: str) -> str:
    """NAME of the internal names ``.KEY.edgedepth-lock`` etc. beside release folder ``path``: NAME itself, or where
    those names would be too long, NAME's start and a hash of all of it."""
    parent, name = os.path.split(path)
    budget = _name_max(parent) - 1 - _LONGEST_SUFFIX
    if len(os.fsencode(name)) <= budget:
        return name
    tail = "~" + hashlib.sha256(os.fsencode(name)).hexdigest()[:16]
    while len(os.fsencode(name + tail)) > budget:
        name = name[:-1]
    return name + tail


def _beside(path: str, suffix: str) -> str:
    return os.path.join(os.path.dirname(path), "." + _key(path) + suffix)


def lock_path(out: str) -> str:
    """The lock file of release folder ``out``: beside it, ``.KEY.edgedepth-lock``."""
    return _beside(os.path.abspath(out), LOCK_SUFFIX)


def work_path(out: str) -> str:
    """The work folder of release folder ``out``: beside it, ``.KEY.edgedepth-work``."""
    return _beside(os.path.abspath(out), WORK_SUFFIX)


def _protected(out: str, real: str) -> str | None:
    """Why ``out`` (resolved: ``real``) may never be a release folder, or None."""
    cwd = os.path.realpath(os.getcwd())
    home = os.path.realpath(os.path.expanduser("~"))
    if real == os.path.dirname(real):
        return "is the filesystem root"
    if real == cwd:
        return "is the current folder"
    if cwd.startswith(real + os.sep):
        return "holds the current folder"
    if real == home:
        return "is the home folder"
    return None


def _scan(folder: str) -> tuple[str, str] | None:
    """("foreign", rel) for the first entry of ``folder`` that makes it no edgedepth release (no manifest that
    :func:`manifest.load` accepts: every entry; else symlinks and special files), else ("unlisted", rel) for the first
    file or folder its manifest does not explain (manifest.json and build-report.json aside), else None."""
    try:
        listed = [f["path"] for f in mf.load(folder)["files"]]
        if not all(isinstance(p, str) for p in listed):
            raise TypeError("a path is not a string")
    except Exception:            # no manifest, or not one edgedepth wrote: everything in the folder is foreign
        names = sorted(os.listdir(folder))
        return ("foreign", names[0]) if names else None
    allowed = set(listed) | mf.UNLISTED | {MARKER}
    dirs = {d for p in listed for d in _parents(os.path.dirname(p))}
    unlisted, problems = None, []
    for rel, mode in mf.walk(folder, problems):      # iterative: any depth
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            return "foreign", rel
        if (rel not in dirs if stat.S_ISDIR(mode) else rel not in allowed and not mf.is_unlisted(rel)) \
                and unlisted is None:
            unlisted = rel
    if problems:
        raise EdgedepthError(f"cannot read release folder {folder!r}: {problems[0]}")
    return ("unlisted", unlisted) if unlisted else None


def foreign_entry(folder: str) -> str | None:
    """The first entry of ``folder`` that an edgedepth release does not explain (relative path), or None when the
    folder is empty or an earlier release whose manifest lists every file; symlinks and special files are never a
    release's."""
    found = _scan(folder)
    return found[1] if found else None


def check_export_dir(out_dir) -> None:
    """One EdgedepthError line when ``out_dir`` is, or is inside, a release folder (an edgedepth manifest.json)."""
    out_dir = os.fspath(out_dir)
    release = mf.enclosing_release(out_dir)
    if release is not None:
        where = "is" if release == os.path.realpath(out_dir) else "is inside"
        raise EdgedepthError(f"output folder {out_dir!r} {where} the release folder {release!r} (it holds "
                             f"{mf.MANIFEST}): exported files would no longer match that manifest; export to another "
                             "folder")


def _parents(rel: str):
    while rel:
        yield rel
        rel = os.path.dirname(rel)


_hashed: dict[str, tuple] = {}      # listed files found as built: path -> stat signature (not hashed again)
_RACY_NS = 2_000_000_000            # a file modified this recently may change again within its timestamp's tick


def _signature(st: os.stat_result) -> tuple:
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def changed_entry(folder: str) -> tuple[str, str] | None:
    """(rel, what happened) for the first file of release ``folder`` that differs from its manifest (changed,
    truncated, unreadable), or None; a missing file loses nothing.  A file found as built is not hashed again while unchanged."""
    for f in mf.load(folder)["files"]:
        p = os.path.join(folder, f["path"])
        try:
            sig = _signature(os.lstat(p))
        except FileNotFoundError:
            continue
        except OSError as e:
            return f["path"], f"unreadable: {e.strerror}"
        if _hashed.get(p) == sig:
            continue
        started = time.time_ns()
        problem = mf.check_entry(folder, f)
        if problem is None:
            if sig[3] < started - _RACY_NS:
                _hashed[p] = sig
        elif not problem.startswith("missing:"):
            kind = problem.split(":", 1)[0]
            return f["path"], {"changed": "was changed", "truncated": "was truncated"}.get(kind, f"is {problem}")
    return None


def _probe(folder: str) -> None:
    """Create and remove a file in ``folder`` (a real write: root passes access checks on read-only mounts)."""
    fd, probe = tempfile.mkstemp(prefix=".edgedepth-write-check-", dir=folder)
    os.close(fd)
    os.remove(probe)


def _check_name(out: str, path: str) -> None:
    limit = _name_max(os.path.dirname(path))
    for part in path.split(os.sep):
        if len(os.fsencode(part)) > limit:
            raise EdgedepthError(f"release folder {out!r}: the name {part[:40] + '...'!r} is {len(os.fsencode(part))} "
                                 f"bytes; the file system takes at most {limit}")


def check_out_dir(out: str, *, force: bool = False) -> str:
    """Raise one EdgedepthError line unless ``out`` may become a release folder (see the module docstring) and its
    parent is writable (created if missing); returns the absolute path.  ``force``: an earlier release whose files
    were changed or added to may be replaced."""
    out = os.fspath(out)
    path, real = os.path.abspath(out), os.path.realpath(out)
    why = _protected(out, real)
    if why:
        raise EdgedepthError(f"release folder {out!r} {why}: choose a new or empty folder")
    _check_name(out, path)
    outer = mf.enclosing_release(os.path.dirname(real))
    if outer is not None:
        raise EdgedepthError(f"release folder {out!r} is inside the release folder {outer!r} (it would no longer match "
                             "its manifest): choose a folder outside it")
    if os.path.islink(path):
        raise EdgedepthError(f"release folder {out!r} is a symbolic link: pass the folder itself")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise EdgedepthError(f"release folder {out!r} exists and is not a folder")
    if os.path.ismount(path):
        raise EdgedepthError(f"release folder {out!r} is a mount point: choose a folder inside it")
    try:
        found = _scan(path) if os.path.isdir(path) else None
        changed = changed_entry(path) if found is None and not force and os.path.isfile(
            os.path.join(path, mf.MANIFEST)) else None
    except OSError as e:
        raise EdgedepthError(f"cannot read release folder {out!r}: {e.strerror}") from None
    if found and found[0] == "foreign":
        raise EdgedepthError(f"release folder {out!r} exists and is not an edgedepth release (it holds {found[1]!r}): "
                             "choose a new or empty folder (release replaces only an earlier release)")
    if found and not force:
        raise ChangedRelease(f"release folder {out!r} holds {found[1]!r}, which its manifest does not list: replacing "
                             "the release would delete it; move it out of the folder, or force the replacement")
    if changed:
        raise ChangedRelease(f"release folder {out!r}: {changed[0]!r} {changed[1]} after the release was built (it "
                             "does not match the manifest): replacing the release would lose that; move it out of "
                             "the folder, or force the replacement")
    parent = os.path.dirname(path)
    try:
        os.makedirs(parent, exist_ok=True)
        _probe(parent)
    except OSError as e:
        raise EdgedepthError(f"cannot write beside release folder {out!r} (in {parent!r}): {e.strerror}") from None
    if os.path.isdir(path):
        try:
            _probe(path)
        except OSError as e:
            raise EdgedepthError(f"release folder {out!r} cannot be replaced: {e.strerror}") from None
    return path


@contextlib.contextmanager
def _locked(out: str, path: str):
    """Hold the lock of release folder ``out`` (another holder: one EdgedepthError line); yields the lock file's
    descriptor.  The lock file is removed at the end."""
    lock = lock_path(path)
    while True:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise EdgedepthError(f"release folder {out!r} is being written by another edgedepth release (lock "
                                 f"{lock!r}): wait until it has finished") from None
        with contextlib.suppress(FileNotFoundError):
            if os.stat(lock).st_ino == os.fstat(fd).st_ino:     # not a lock file its holder removed meanwhile
                break
        os.close(fd)
    try:
        yield fd
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(lock)
        os.close(fd)


def _ours(work: str, claimed: bool) -> bool:
    """Whether ``work`` is a work folder edgedepth made: marked, or claimed by the lock file of a killed run."""
    st = os.lstat(work)
    return stat.S_ISDIR(st.st_mode) and (claimed or os.path.isfile(os.path.join(work, WORK_MARKER)))


def _recover(out: str, path: str, claimed: bool) -> None:
    """Remove what killed runs left beside ``path``: the work folder (first putting back an earlier release a killed
    fallback swap left aside, when nothing is at ``path``) and staging folders older versions marked."""
    work = work_path(path)
    if os.path.lexists(work):
        if not _ours(work, claimed):
            raise EdgedepthError(f"{work!r} is in the way of release folder {out!r} and was not made by edgedepth: "
                                 "move it away")
        aside = os.path.join(work, ASIDE)
        if not os.path.lexists(path) and os.path.isdir(aside) and not os.path.islink(aside):
            os.rename(aside, path)
        _discard(out, path, work)
    parent, name = os.path.split(path)
    legacy = re.compile(re.escape("." + name) + r"\.staging-[a-z0-9_]{8}")
    for n in os.listdir(parent):
        p = os.path.join(parent, n)
        if legacy.fullmatch(n) and not os.path.islink(p) and os.path.isfile(os.path.join(p, MARKER)):
            shutil.rmtree(p, ignore_errors=True)


def _normal_permissions(folder: str) -> None:
    """Folders 0o777, files 0o666, less the umask (the staging folder is made 0o700)."""
    umask = os.umask(0)
    os.umask(umask)
    for root, dirs, files in os.walk(folder):
        for n in files:
            os.chmod(os.path.join(root, n), 0o666 & ~umask)
        os.chmod(root, 0o777 & ~umask)


def _exchange(a: str, b: str) -> bool:
    """Swap paths ``a`` and ``b`` atomically (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), b)


def _swap(staging: str, path: str, work: str) -> None:
    """Put ``staging`` at ``path``; the folder that was at ``path`` ends up in ``work``.  On failure ``path`` is as it
    was (or, where even the way back failed, the earlier release is in ``work``'s ``aside/``: one line)."""
    if not os.path.lexists(path):
        os.rename(staging, path)
        return
    if _exchange(staging, path):
        return
    aside = os.path.join(work, ASIDE)
    os.rename(path, aside)
    try:
        os.rename(staging, path)
    except BaseException:
        try:
            os.rename(aside, path)
        except OSError as e:
            raise EdgedepthError(f"could not put release folder {path!r} in place, nor the earlier release back "
                                 f"({e.strerror}): the earlier release is in {aside!r} (the next release run into "
                                 "this folder puts it back)") from None
        raise


def _rmtree(folder: str) -> list[tuple[str, BaseException]]:
    """Remove what can be removed of ``folder``; returns (path, error) for what could not."""
    failed: list[tuple[str, BaseException]] = []
    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=lambda _fn, p, e: failed.append((p, e)))
    else:
        shutil.rmtree(folder, onerror=lambda _fn, p, exc: failed.append((p, exc[1])))
    return failed


def _discard(out: str, path: str, work: str) -> None:
    """Remove the work folder (with the earlier release in it).  What cannot be removed of an earlier release stays
    at a named hidden path beside (a note says which); a work folder that cannot be removed: one line."""
    failed = _rmtree(work)
    if not failed:
        return
    p, e = failed[0]
    what = f"{os.path.relpath(p, work)!r}: {getattr(e, 'strerror', None) or e}"
    for sub in (STAGED, ASIDE):
        left = os.path.join(work, sub)
        if os.path.isdir(left) and not os.path.islink(left):
            try:
                kept = tempfile.mkdtemp(prefix=f".{_key(path)}.replaced-", dir=os.path.dirname(path))
                os.rename(left, kept)       # replaces the empty folder ``kept``
            except OSError:
                continue
            what = f"{os.path.relpath(p, left)!r}: {getattr(e, 'strerror', None) or e}" if p.startswith(left) else what
            print(f"note: the earlier release in {out!r} could not be removed completely ({what}); what is left of "
                  f"it is in {kept!r}: remove it yourself", file=sys.stderr)
    if _rmtree(work):
        with contextlib.suppress(OSError):      # still recognised as edgedepth's by a later run
            open(os.path.join(work, WORK_MARKER), "wb").close()
        raise EdgedepthError(f"cannot remove {work!r}, the work folder of release folder {out!r} ({what}): remove it "
                             "yourself")


@contextlib.contextmanager
def staged(out: str, *, force: bool = False):
    """Yield an empty staging folder for release folder ``out``; when the block succeeds it replaces ``out``
    atomically (see the module docstring), when it fails ``out`` is untouched and the staging folder removed.
    ``force``: see :func:`check_out_dir`."""
    out = os.fspath(out)
    path = check_out_dir(out, force=force)
    with _locked(out, path) as lock:
        _recover(out, path, os.pread(lock, len(_CLAIM) + 1, 0) == _CLAIM)
        os.ftruncate(lock, 0)
        os.pwrite(lock, _CLAIM, 0)              # before the work folder exists: a kill from here on is recognised
        work = work_path(path)
        os.mkdir(work, 0o700)
        open(os.path.join(work, WORK_MARKER), "wb").close()
        staging = os.path.join(work, STAGED)
        try:
            os.mkdir(staging, 0o700)
            yield staging
            interrupt.check()               # a Ctrl-C that native code swallowed never replaces a release
            check_out_dir(out, force=force)     # again: nothing may have appeared or changed during the build
            _normal_permissions(staging)
            try:
                _swap(staging, path, work)
            except OSError as e:
                raise EdgedepthError(f"could not put release folder {out!r} in place ({e.strerror}); it is as it "
                                     "was before this build") from None
        except BaseException:
            if not os.path.lexists(os.path.join(work, ASIDE)):     # else the earlier release is there: kept
                _rmtree(work)
            raise
        _discard(out, path, work)
