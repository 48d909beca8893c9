"""The release folder on disk: which folders ``release`` may write, a lock, a marked staging folder, an atomic swap.

``release`` writes only into a folder that is absent, empty, or an earlier edgedepth release (a manifest that
:func:`manifest.load` accepts and nothing beside what it lists): it never deletes what edgedepth did not make.  The
current folder, its ancestors, the home folder and the root are refused outright.  A build happens in a staging
folder beside the target (``.NAME.staging-XXXXXXXX``, holding the marker file :data:`MARKER`) under a lock
(``.NAME.edgedepth-lock``, ``flock``), so two releases cannot write one folder and the next run removes the staging
folders of killed runs.  The finished folder replaces an earlier release by an atomic exchange (Linux ``renameat2``;
elsewhere rename-aside, rename-in, rename-back on failure); the earlier release is removed last, and if that fails
(an immutable file) the new release stays and what is left of the old one is kept at a named hidden path.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import re
import shutil
import sys
import tempfile

from .. import interrupt
from ..errors import EdgedepthError
from . import manifest as mf

MARKER = ".edgedepth-staging"           # in a staging folder (and in an old release while it is being removed)
LOCK_SUFFIX = ".edgedepth-lock"
_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def lock_path(out: str) -> str:
    """The lock file of release folder ``out``: beside it, ``.NAME.edgedepth-lock``."""
    path = os.path.abspath(out)
    return os.path.join(os.path.dirname(path), "." + os.path.basename(path) + LOCK_SUFFIX)


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


def foreign_entry(folder: str) -> str | None:
    """The first entry of ``folder`` that an edgedepth release does not explain (relative path), or None when the
    folder is empty or an earlier release: its manifest loads and lists every file (manifest.json and
    build-report.json aside); symlinks and special files are never a release's."""
    try:
        listed = [f["path"] for f in mf.load(folder)["files"]]
        if not all(isinstance(p, str) for p in listed):
            raise TypeError("a path is not a string")
    except Exception:            # no manifest, or not one edgedepth wrote: everything in the folder is foreign
        names = sorted(os.listdir(folder))
        return names[0] if names else None
    allowed = set(listed) | mf.UNLISTED | {MARKER}
    dirs = {os.path.dirname(p) for p in listed}
    dirs |= {d for p in list(dirs) for d in _parents(p)}
    for root, subdirs, files in os.walk(folder, onerror=_raise):
        for n in sorted(subdirs) + sorted(files):
            p = os.path.join(root, n)
            rel = os.path.relpath(p, folder).replace(os.sep, "/")
            ok = rel in dirs and os.path.isdir(p) if n in subdirs else rel in allowed and os.path.isfile(p)
            if os.path.islink(p) or not ok:
                return rel
    return None


def _raise(e: OSError):
    raise e


def _parents(rel: str):
    while rel:
        yield rel
        rel = os.path.dirname(rel)


def _probe(folder: str) -> None:
    """Create and remove a file in ``folder`` (a real write: root passes access checks on read-only mounts)."""
    fd, probe = tempfile.mkstemp(prefix=".edgedepth-write-check-", dir=folder)
    os.close(fd)
    os.remove(probe)


def check_out_dir(out: str) -> str:
    """Raise one EdgedepthError line unless ``out`` may become a release folder (see the module docstring) and its
    parent is writable (created if missing); returns the absolute path."""
    out = os.fspath(out)
    path, real = os.path.abspath(out), os.path.realpath(out)
    why = _protected(out, real)
    if why:
        raise EdgedepthError(f"release folder {out!r} {why}: choose a new or empty folder")
    if os.path.islink(path):
        raise EdgedepthError(f"release folder {out!r} is a symbolic link: pass the folder itself")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise EdgedepthError(f"release folder {out!r} exists and is not a folder")
    if os.path.ismount(path):
        raise EdgedepthError(f"release folder {out!r} is a mount point: choose a folder inside it")
    try:
        bad = foreign_entry(path) if os.path.isdir(path) else None
    except OSError as e:
        raise EdgedepthError(f"cannot read release folder {out!r}: {e.strerror}") from None
    if bad is not None:
        raise EdgedepthError(f"release folder {out!r} exists and is not an edgedepth release (it holds {bad!r}): "
                             "choose a new or empty folder (release replaces only an earlier release)")
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
def _locked(out: str):
    """Hold the lock of release folder ``out`` (another holder: one EdgedepthError line); the lock file is removed."""
    lock = lock_path(out)
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
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(lock)
        os.close(fd)


def _remove_stale(path: str) -> None:
    """Remove staging folders (and half-removed old releases) of earlier killed runs: marked, same NAME."""
    parent, name = os.path.split(path)
    pattern = re.compile(re.escape("." + name) + r"\.(staging|replaced)-[a-z0-9_]{8}")
    for n in os.listdir(parent):
        p = os.path.join(parent, n)
        if pattern.fullmatch(n) and not os.path.islink(p) and os.path.isfile(os.path.join(p, MARKER)):
            shutil.rmtree(p, ignore_errors=True)


def _normal_permissions(folder: str) -> None:
    """Folders 0o777, files 0o666, less the umask (mkdtemp makes 0o700)."""
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


def _swap(staging: str, path: str) -> str | None:
    """Put ``staging`` at ``path``; returns where the folder that was at ``path`` now is (None: there was none).
    On failure ``path`` is as it was."""
    if not os.path.lexists(path):
        os.rename(staging, path)
        return None
    if _exchange(staging, path):
        return staging
    parent, name = os.path.split(path)
    aside = tempfile.mkdtemp(prefix=f".{name}.replaced-", dir=parent)
    try:
        os.rename(path, aside)              # replaces the empty folder ``aside``
    except BaseException:
        os.rmdir(aside)
        raise
    try:
        os.rename(staging, path)
    except BaseException:
        try:
            os.rename(aside, path)
        except OSError as e:
            raise EdgedepthError(f"could not put release folder {path!r} in place, nor the earlier release back "
                                 f"({e.strerror}): the earlier release is in {aside!r}") from None
        raise
    return aside


def _rmtree(folder: str) -> list[tuple[str, BaseException]]:
    """Remove what can be removed of ``folder``; returns (path, error) for what could not."""
    failed: list[tuple[str, BaseException]] = []
    if sys.version_info >= (3, 12):
        shutil.rmtree(folder, onexc=lambda _fn, p, e: failed.append((p, e)))
    else:
        shutil.rmtree(folder, onerror=lambda _fn, p, exc: failed.append((p, exc[1])))
    return failed


def _remove_old(out: str, path: str, old: str) -> None:
    """Remove the earlier release (now at ``old``); what cannot be removed stays at a named path, with a note."""
    with contextlib.suppress(OSError):      # the marker travels to the old folder: a killed removal is finished later
        os.rename(os.path.join(path, MARKER), os.path.join(old, MARKER))
    failed = _rmtree(old)
    if not failed:
        return
    p, e = failed[0]
    what = f"{os.path.relpath(p, old)!r}: {getattr(e, 'strerror', None) or e}"
    with contextlib.suppress(OSError):
        os.remove(os.path.join(old, MARKER))    # kept for the user, never removed by a later run
    with contextlib.suppress(OSError):
        if ".staging-" in os.path.basename(old):
            parent, name = os.path.split(path)
            kept = tempfile.mkdtemp(prefix=f".{name}.replaced-", dir=parent)
            os.rename(old, kept)
            old = kept
    print(f"note: the earlier release in {out!r} could not be removed completely ({what}); what is left of it is "
          f"in {old!r}: remove it yourself", file=sys.stderr)


@contextlib.contextmanager
def staged(out: str):
    """Yield a staging folder (holding only :data:`MARKER`) for release folder ``out``; when the block succeeds it
    replaces ``out`` atomically (see the module docstring), when it fails ``out`` is untouched and staging removed."""
    out = os.fspath(out)
    path = check_out_dir(out)
    with _locked(out):
        _remove_stale(path)
        staging = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.staging-", dir=os.path.dirname(path))
        try:
            open(os.path.join(staging, MARKER), "wb").close()
            yield staging
            interrupt.check()               # a Ctrl-C that native code swallowed never replaces a release
            check_out_dir(out)              # again: nothing foreign may have appeared during the build
            _normal_permissions(staging)
            try:
                old = _swap(staging, path)
            except OSError as e:
                raise EdgedepthError(f"could not put release folder {out!r} in place ({e.strerror}); it is as it "
                                     "was before this build") from None
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        if old is not None:
            _remove_old(out, path, old)
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(path, MARKER))
