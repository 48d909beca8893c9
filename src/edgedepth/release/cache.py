"""The build cache: each finished job's files filed under its content address (``jobs.cache_key``), so a re-run
builds only the jobs whose inputs changed (a size added, another checkpoint) and a killed build resumes.

Layout: ``ROOT/<key[:2]>/<key>/`` holds the job's files and ``job.json`` (the job's result: entries, measurements,
every file's SHA-256).  Nothing in it is trusted: :meth:`BuildCache.get` re-hashes every file before use, and an entry
that is partial, corrupt or not ours is removed and rebuilt.  An entry appears whole or not at all: it is written in
``ROOT/tmp/`` and renamed into place; of two builds writing the same entry the first rename wins and the other's
copy is dropped (same key: same bytes).  ``max_bytes`` caps the folder: the least recently used entries go first.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import stat
import tempfile
import time

from ..errors import EdgedepthError
from ..fsutil import sha256_file

ENTRY = "job.json"
DEFAULT_MAX_BYTES = 20 << 30
STALE_TMP_S = 24 * 3600          # a temp folder this old belongs to a build that was killed
_KEY = re.compile(r"[0-9a-f]{64}")
_REL = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*(/[A-Za-z0-9_.][A-Za-z0-9_.-]*)*")


def default_dir() -> str:
    """``$XDG_CACHE_HOME/edgedepth/builds`` (``~/.cache/edgedepth/builds``)."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "edgedepth", "builds")


def parse_size(text: str) -> int:
    """"20G", "500M", "1.5T", "0" -> bytes (one-line error otherwise)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", str(text), re.I)
    if not m:
        raise EdgedepthError(f"--cache-size {text!r}: a size such as 20G or 500M")
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " "))


class BuildCache:
    """Finished jobs by content address in ``root`` (created if missing)."""

    def __init__(self, root: str, max_bytes: int = DEFAULT_MAX_BYTES):
        self.root, self.max_bytes = os.path.abspath(root), max_bytes
        self.tmp = os.path.join(self.root, "tmp")
        try:
            os.makedirs(self.tmp, exist_ok=True)
        except OSError as e:
            raise EdgedepthError(f"build cache {root!r}: {e.strerror} (--cache DIR elsewhere, or --no-cache)") from None
        if not os.path.isdir(self.root) or os.path.islink(self.tmp):
            raise EdgedepthError(f"build cache {root!r} is not a folder")
        self._clean_tmp()

    def path(self, key: str) -> str:
        if not _KEY.fullmatch(key):
            raise ValueError(f"not a cache key: {key!r}")
        return os.path.join(self.root, key[:2], key)

    def get(self, key: str) -> tuple[str, dict] | None:
        """(entry folder, job result) when the entry is whole and every file has its SHA-256; else None (and a bad
        entry is removed).  A hit counts as a use (LRU)."""
        path = self.path(key)
        if not os.path.lexists(path):
            return None
        result = self._checked(path, key)
        if result is None:
            self._discard(path)
            return None
        with contextlib.suppress(OSError):
            os.utime(path)
        return path, result

    def _checked(self, path: str, key: str) -> dict | None:
        try:
            if not stat.S_ISDIR(os.lstat(path).st_mode):
                return None
            with open(os.path.join(path, ENTRY), "rb") as f:
                result = json.loads(f.read(64 << 20))
            if result.get("key") != key or not isinstance(result.get("files"), dict):
                return None
            for rel, sha in result["files"].items():
                full = os.path.join(path, rel)
                if not _REL.fullmatch(rel) or ".." in rel.split("/") or not stat.S_ISREG(os.lstat(full).st_mode) \
                        or sha256_file(full) != sha:
                    return None
        except (OSError, ValueError, AttributeError):
            return None
        return result

    def put(self, key: str, folder: str, result: dict) -> str:
        """File the job output in ``folder`` (its files are moved, ``folder`` is left empty) with ``result`` under
        ``key``; returns the entry folder (another build's, when it filed the same key first)."""
        tmp = tempfile.mkdtemp(prefix=f"{key[:16]}.", dir=self.tmp)
        try:
            for rel in result["files"]:
                dst = os.path.join(tmp, rel)
                os.makedirs(os.path.dirname(dst), exist_ok=True)
                _move(os.path.join(folder, rel), dst)
            with open(os.path.join(tmp, ENTRY), "w", encoding="utf-8") as f:
                json.dump({**result, "key": key}, f, sort_keys=True)
                f.flush()
                os.fsync(f.fileno())
            final = self.path(key)
            os.makedirs(os.path.dirname(final), exist_ok=True)
            try:
                os.rename(tmp, final)
            except OSError as e:
                if e.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
                if self.get(key) is not None:      # another build filed it first: the same bytes
                    shutil.rmtree(tmp, ignore_errors=True)
                    return final
                os.rename(tmp, final)              # it was bad and is gone now
            return final
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise

    def entries(self) -> list[tuple[float, int, str]]:
        """(last use, bytes, folder) of every entry, oldest first."""
        out = []
        for sub in os.listdir(self.root):
            if sub == "tmp" or not os.path.isdir(os.path.join(self.root, sub)):
                continue
            for key in os.listdir(os.path.join(self.root, sub)):
                path = os.path.join(self.root, sub, key)
                with contextlib.suppress(OSError):
                    size = sum(os.lstat(os.path.join(r, n)).st_size for r, _, ns in os.walk(path) for n in ns)
                    out.append((os.lstat(path).st_mtime, size, path))
        return sorted(out)

    def evict(self, keep: set[str] = frozenset()) -> int:
        """Remove least recently used entries (never those in ``keep``) until the folder holds at most
        ``max_bytes``; returns how many were removed."""
        entries = self.entries()
        total, removed = sum(e[1] for e in entries), 0
        for _, size, path in entries:
            if total <= self.max_bytes:
                break
            if os.path.basename(path) in keep:
                continue
            self._discard(path)
            total, removed = total - size, removed + 1
        return removed

    def _discard(self, path: str) -> None:
        """Take an entry out of use atomically (renamed into tmp), then delete it."""
        with contextlib.suppress(OSError):
            aside = tempfile.mkdtemp(prefix="discard.", dir=self.tmp)
            os.rename(path, os.path.join(aside, "entry"))
            shutil.rmtree(aside, ignore_errors=True)

    def _clean_tmp(self) -> None:
        now = time.time()
        for n in os.listdir(self.tmp):
            p = os.path.join(self.tmp, n)
            with contextlib.suppress(OSError):
                if now - os.lstat(p).st_mtime > STALE_TMP_S:
                    shutil.rmtree(p, ignore_errors=True)


def _move(src: str, dst: str) -> None:
    try:
        os.replace(src, dst)
    except OSError as e:
        if e.errno != errno.EXDEV:
            raise
        shutil.copyfile(src, dst)
        os.remove(src)
