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


NAME_MAX = 255               # bytes in one path component (Linux, macOS, Windows alike)
_TEMP_NAME_MAX = 96         # a temp file's own name part: short enough for any final name to fit NAME_MAX
_PENDING: dict[str, str] = {}   # temp path -> the final path it will become (for error messages)

_KINDS = ((stat.S_ISLNK, "symbolic link"), (stat.S_ISDIR, "folder"), (stat.S_ISFIFO, "FIFO"),
          (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))


def kind_word(mode: int) -> str:
    """What a ``stat`` mode is, in words: "regular file", "folder", "FIFO", "character device", ..."""
    return next((name for test, name in _KINDS if test(mode)), "regular file" if stat.S_ISREG(mode) else
                "special file")


def kind_of(mode: int) -> str:
    """:func:`kind_word` with its article ("a FIFO", "a symbolic link")."""
    return "a " + kind_word(mode)


def check_output_path(final) -> str:
    """The one rule for every file edgedepth writes: ``final`` must be absent or a regular file (which is then
    replaced by a rename, never written through), and its name must fit the file system.  A symbolic link, folder,
    FIFO, device or socket at the path is one EdgedepthError line naming it; returns the path as ``str``."""
    final = os.fspath(final)
    name = os.path.basename(final)
    if not name:
        raise EdgedepthError(f"output {final!r} names a folder, not a file")
    if len(os.fsencode(name)) > NAME_MAX:
        raise EdgedepthError(f"output file name {name[:40]!r}... is {len(os.fsencode(name))} bytes long: at most "
                             f"{NAME_MAX} fit in a folder")
    try:
        st = os.lstat(final)
    except FileNotFoundError:
        return final
    except OSError as e:
        raise EdgedepthError(f"cannot write output {final!r}: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise EdgedepthError(f"output {final!r} is {kind_of(st.st_mode)}: edgedepth replaces only regular files; "
                             "choose another path")
    return final


def _temp_prefix(name: str) -> str:
    """``.NAME.`` for a temp file beside ``NAME``; a long NAME is cut and a digest of it added, so the temp name
    (prefix + 8 random characters + ``.tmp``) always fits :data:`NAME_MAX`."""
    raw = os.fsencode(name)
    if len(raw) <= _TEMP_NAME_MAX:
        return f".{name}."
    short = os.fsdecode(raw[:_TEMP_NAME_MAX - 13])
    return f".{short}-{hashlib.sha256(raw).hexdigest()[:12]}."


def temp_target(tmp: str) -> str | None:
    """The final path an in-flight :func:`atomic_path` temp file will become, or None."""
    return _PENDING.get(os.fspath(tmp))


@contextlib.contextmanager
def atomic_path(final):
    """Yield a temp path next to ``final``; on success rename it to ``final``, on any error delete it.  ``final`` is
    checked by :func:`check_output_path` before and again just before the rename."""
    final = check_output_path(final)
    folder = os.path.dirname(os.path.abspath(final))
    try:
        fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(os.path.basename(final)), suffix=".tmp", dir=folder)
    except (FileNotFoundError, NotADirectoryError):
        raise EdgedepthError(f"cannot write output {final!r}: its folder does not exist") from None
    os.close(fd)
    os.remove(tmp)  # a unique name that does not exist yet: writers that refuse to overwrite stay quiet
    _PENDING[tmp] = final
    try:
        yield tmp
        os.chmod(tmp, 0o644)
        check_output_path(final)        # nothing special appeared there while the file was being made
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    finally:
        _PENDING.pop(tmp, None)


def write_bytes_atomic(final, data: bytes) -> None:
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
        return None, f"not a regular file ({kind_word(st.st_mode)})"
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | \
        (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(path, flags)
    except OSError as e:        # replaced since the stat (a symlink now: ELOOP)
        return None, f"unreadable ({e.strerror or e})"
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        return None, f"not a regular file ({kind_word(mode)})"
    return os.fdopen(fd, "rb"), None


# ----------------------------------------------------------------------------------------- reading user input files
# Every file edgedepth reads as input (model files, photos, recipes, checkpoint files) passes :func:`regular_file`,
# and is opened by :func:`open_input` where edgedepth reads it itself: a FIFO, device or socket would block or never
# end, and a kernel pseudo-file (/proc, /sys) says 0 bytes but has content.
PSEUDO_ROOTS = ("/proc", "/sys")


def _input_problem(path: str, st: os.stat_result) -> str | None:
    """Why a file with stat ``st`` is no regular input file (the words after its name), or None."""
    if stat.S_ISDIR(st.st_mode):
        return "is a folder, not a regular file"
    if not stat.S_ISREG(st.st_mode):
        return f"is not a regular file ({kind_word(st.st_mode)})"
    real = os.path.realpath(path)
    root = next((r for r in PSEUDO_ROOTS if real == r or real.startswith(r + "/")), None)
    if root:
        return f"is not a regular file (a kernel pseudo-file under {root}: its size is not known)"
    return None


def regular_file(path, what: str = "file") -> str:
    """``path`` (as ``str``) if it names a regular file (a symlink to one is fine), else one EdgedepthError line:
    "<what> 'PATH' does not exist", "... is a folder, not a regular file", "... is not a regular file (FIFO)" (or
    character device, block device, socket, a kernel pseudo-file under /proc or /sys)."""
    path = os.fspath(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise EdgedepthError(f"{what} {path!r} is a symlink to {os.readlink(path)!r}, which does not exist") \
                from None
        raise EdgedepthError(f"{what} {path!r} does not exist") from None
    except NotADirectoryError:
        raise EdgedepthError(f"{what} {path!r} does not exist (a part of its path is not a folder)") from None
    except (OSError, ValueError) as e:     # EACCES, ELOOP, ENAMETOOLONG; ValueError: an embedded NUL
        raise EdgedepthError(f"cannot read {what} {path!r}: {getattr(e, 'strerror', None) or e}") from None
    problem = _input_problem(path, st)
    if problem:
        raise EdgedepthError(f"{what} {path!r} {problem}")
    return path


def open_input(path, what: str = "file") -> BinaryIO:
    """``path`` opened for binary reading after :func:`regular_file`; opened non-blocking and checked again on the
    open file (a FIFO put there since the check is refused, never waited on), then switched back to blocking.
    A file that says 0 bytes but yields some (a pseudo-file) is refused; a genuinely empty one is opened."""
    path = regular_file(path, what)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise EdgedepthError(f"cannot read {what} {path!r}: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        problem = _input_problem(path, st)
        if problem is None and st.st_size == 0 and os.read(fd, 1):
            problem = "is not a regular file (it says 0 bytes but has content: a pseudo-file)"
        if problem:
            raise EdgedepthError(f"{what} {path!r} {problem}")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path, what: str = "file", limit: int | None = None) -> bytes:
    """The bytes of ``path`` read through :func:`open_input`; more than ``limit`` bytes is one EdgedepthError line."""
    with open_input(path, what) as f:
        try:
            data = f.read() if limit is None else f.read(limit + 1)
        except OSError as e:
            raise EdgedepthError(f"cannot read {what} {os.fspath(path)!r}: {e.strerror or e}") from None
    if limit is not None and len(data) > limit:
        raise EdgedepthError(f"{what} {os.fspath(path)!r} is too large (more than {limit} bytes)")
    return data
