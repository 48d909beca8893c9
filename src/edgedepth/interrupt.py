"""Ctrl-C that always ends a command: exit 130, its temp files removed, even while the converter runs.  SIGTERM
(``timeout``, ``docker stop``, a cancelled CI job) and SIGHUP (a closed terminal) take the same path and end it with
128 + the signal number (143, 129): :class:`Interrupted` is a ``KeyboardInterrupt`` carrying the signal.

Python runs a SIGINT handler between bytecodes of the main thread, and raises ``KeyboardInterrupt`` from there.  During
a conversion that can be inside a callback whose exceptions the interpreter prints and drops: measured with
litert-torch, Ctrl-C as the conversion starts lands in JAX's garbage-collector callback ("Exception ignored in:
<function _xla_gc_callback>") and the export carried on to exit 0.  Two defences, installed by :func:`handling`:

- every interrupt is recorded before it is raised, and :func:`check` raises it again: the export code calls it after
  each converter returns and before each file is committed, so an interrupt swallowed by a bare ``except`` in a
  library still ends the command there;
- a ``KeyboardInterrupt`` that reaches :data:`sys.unraisablehook` (gc callbacks, ``__del__``, weakref callbacks) is
  not printed but delivered again a moment later, when the interpreter is usually outside that callback;
- an interrupt that arrives while a module is being imported is not raised there but delivered again after the
  import: raised inside an extension module's initialisation (measured: jaxlib, imported as a conversion starts) it
  meets nanobind's C++ frame, which calls ``std::terminate`` (exit -6 / -11 instead of 130, in about 1 run of 3).

Native code that holds the main thread without returning to Python delays both until it returns.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import threading

REDELIVER_S = 0.1       # delay before an interrupt that was swallowed is delivered again

# The signals handled, and the word the CLI ends with ("edgedepth: terminated"); SIGHUP does not exist on Windows.
SIGNALS = {s: word for s, word in ((signal.SIGINT, "interrupted"), (getattr(signal, "SIGTERM", None), "terminated"),
                                   (getattr(signal, "SIGHUP", None), "hung up")) if s is not None}

_state = {"active": False, "signum": None, "timer": None}


class Interrupted(KeyboardInterrupt):
    """Ctrl-C, SIGTERM or SIGHUP: a ``KeyboardInterrupt`` (every cleanup path that handles Ctrl-C runs) with the
    signal's number; the command ends with :attr:`exit_code`."""

    def __init__(self, signum: int = signal.SIGINT):
        super().__init__(SIGNALS.get(signum, "interrupted"))
        self.signum = int(signum)

    @property
    def exit_code(self) -> int:
        return 128 + self.signum

    @property
    def word(self) -> str:
        return SIGNALS.get(self.signum, "interrupted")


def interrupted() -> bool:
    """Whether Ctrl-C (or SIGTERM, SIGHUP) came since :func:`handling` started (False outside it)."""
    return _state["signum"] is not None


def as_interrupted(e: KeyboardInterrupt) -> Interrupted:
    """``e`` as an :class:`Interrupted`: a plain ``KeyboardInterrupt`` after a recorded signal is that signal (a
    library re-raised our exception as its own: Ray's blocking calls do), else Ctrl-C."""
    if isinstance(e, Interrupted):
        return e
    return Interrupted(_state["signum"] or signal.SIGINT)


def check() -> None:
    """Raise :class:`Interrupted` if an interrupt was recorded: call it where a swallowed interrupt must not let work
    go on (after a converter returns, before a file or folder is put in place)."""
    if _state["signum"] is not None:
        raise Interrupted(_state["signum"])


def checking(progress=None):
    """``progress(stage_name)`` (or nothing) that first calls :func:`check`: each stage start is a point to stop."""
    def stage(name: str) -> None:
        check()
        if progress:
            progress(name)

    return stage


def _regular_id(path: str) -> tuple[int, int] | None:
    """(device, inode) of the regular file at ``path`` (symlinks not followed), else None."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if stat.S_ISREG(st.st_mode) else None


class _Written(list):
    """The files a block is about to write, each with what was at its path before (see :func:`removed_on_failure`)."""

    def __init__(self):
        super().__init__()
        self.before: dict[str, tuple[int, int] | None] = {}

    def append(self, path) -> None:
        self.before.setdefault(os.fspath(path), _regular_id(path))
        super().append(path)


@contextlib.contextmanager
def removed_on_failure(paths: list | None = None):
    """When the block fails or is interrupted, remove every file named in ``paths`` (the block appends each file it is
    about to write, before writing it) that this block wrote: a failed command leaves none of the files it was making,
    and never removes what was there before it wrote (a file it had not yet replaced, a folder, a link)."""
    written = _Written()
    for p in paths or ():
        written.append(p)
    try:
        yield written
    except BaseException:
        for p in written:
            now = _regular_id(p)
            if now is not None and now != written.before.get(os.fspath(p)):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(p)
        raise


_IMPORT_FRAMES = ("<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>")


def _importing(frame) -> bool:
    """Whether ``frame`` runs inside an ``import`` (some caller is importlib's bootstrap)."""
    while frame is not None:
        if frame.f_code.co_filename in _IMPORT_FRAMES:
            return True
        frame = frame.f_back
    return False


def _handler(signum, frame) -> None:
    if _state["signum"] is None:    # the first signal is what ends the command (its exit code)
        _state["signum"] = signum
    if _importing(frame):
        _redeliver()            # not inside an import: an extension's init cannot unwind it (see the module doc)
        return
    raise Interrupted(_state["signum"])


def _send() -> None:
    if _state["active"] and _state["signum"] is not None:
        os.kill(os.getpid(), _state["signum"])


def _redeliver() -> None:
    timer = _state["timer"]
    if timer is not None and timer.is_alive():
        return
    timer = threading.Timer(REDELIVER_S, _send)
    timer.daemon = True
    _state["timer"] = timer
    timer.start()


@contextlib.contextmanager
def handling():
    """Install the recording handler of :data:`SIGNALS` (and the unraisable-exception hook) for the block; restore
    both after.

    Outside the main thread (where Python cannot install signal handlers) the block runs unchanged."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous_hook = sys.unraisablehook

    def unraisable(info) -> None:
        if isinstance(info.exc_value, KeyboardInterrupt) and _state["active"]:
            _redeliver()        # swallowed where it was raised: deliver it again, outside that callback
            return
        previous_hook(info)

    # A signal set to be ignored (``nohup``: SIGHUP; a background job: SIGINT) stays ignored
    previous = {s: signal.signal(s, _handler) for s in SIGNALS if signal.getsignal(s) is not signal.SIG_IGN}
    sys.unraisablehook = unraisable
    _state.update(active=True, signum=None)
    try:
        yield
    finally:
        _state.update(active=False, signum=None)
        if _state["timer"] is not None:
            _state["timer"].cancel()
            _state["timer"] = None
        sys.unraisablehook = previous_hook
        for s, handler in previous.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)   # None: a handler set outside Python
