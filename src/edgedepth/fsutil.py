"""Atomic file output: write to a temp file in the target folder, then rename; a failure leaves nothing behind."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from typing import BinaryIO

from .errors import EdgedepthError


def ensure_writable_dir(path: str) -> str:
    """Create ``path`` if needed and check it is a writable folder, else raise a one-line error."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise EdgedepthError(f"output {path!r} exists and is not a folder")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise EdgedepthError(f"cannot create output folder {path!r}: {e.strerror}") from None
    try:  # a real write, not os.access: root passes access checks on read-only file systems
        fd, probe = tempfile.mkstemp(prefix=".edgedepth-write-check-", dir=path)
        os.close(fd)
        os.remove(probe)
    except OSError as e:
        raise EdgedepthError(f"output folder {path!r} is not writable: {e.strerror}") from None
    return path


@contextlib.contextmanager
def made_dir(path: str):
    """:func:`ensure_writable_dir` for a block: if the block fails, the folders this call created are removed again
    while they are still empty (``os.rmdir``, deepest first: never anything that holds a file)."""
    missing, p = [], os.path.abspath(path)
    while not os.path.exists(p) and os.path.dirname(p) != p:
        missing.append(p)
        p = os.path.dirname(p)
    try:
        ensure_writable_dir(path)
        yield path
    except BaseException:
        for d in missing:
            try:
                os.rmdir(d)
            except OSError:
                break
        raise


@contextlib.contextmanager
def atomic_path(final: str):
    """Yield a temp path next to ``final``; on success rename it to ``final``, on any error delete it."""
    folder = os.path.dirname(os.path.abspath(final))
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(final) + ".", suffix=".tmp", dir=folder)
    os.close(fd)
    os.remove(tmp)  # a unique name that does not exist yet: writers that refuse to overwrite stay quiet
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise


def write_bytes_atomic(final: str, data: bytes) -> None:
    with atomic_path(final) as tmp, open(tmp, "wb") as f:
        f.write(data)


def sha256_file(path: str) -> str:
    """SHA-256 of a file, read in 1 MiB chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def open_regular(folder: str, name: str, *, follow_symlinks: bool = False) -> tuple[BinaryIO | None, str | None]:
    """Open ``folder/name`` (``name``: one path component) for binary reading only if it is a regular file: (file,
    None), or (None, the problem: "missing", "a symlink", "not a regular file", "unreadable (...)").  A FIFO, device
    or folder is never opened (it could block or never end), and unless ``follow_symlinks`` neither is a symlink
    (the file must be inside ``folder``; the hub cache's snapshot folders are made of symlinks, so its callers
    follow them)."""
    if not name or name in (".", "..") or "/" in name or os.sep in name:
        raise ValueError(f"one path component expected, not {name!r}")
    path = os.path.join(folder, name)
    try:
        st = os.stat(path, follow_symlinks=follow_symlinks)
    except FileNotFoundError:
        return None, "missing"
    except OSError as e:
        return None, f"unreadable ({e.strerror or e})"
    if stat.S_ISLNK(st.st_mode):
        return None, "a symlink"
    if not stat.S_ISREG(st.st_mode):
        return None, "not a regular file"
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | \
        (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as e:        # replaced since the stat (a symlink now: ELOOP)
        return None, f"unreadable ({e.strerror or e})"
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None, "not a regular file"
    return os.fdopen(fd, "rb"), None
