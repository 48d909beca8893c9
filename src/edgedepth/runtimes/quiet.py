"""Third-party log output kept off the terminal unless asked for: one context manager, used by the CLI and the API.

What it hides (errors still show): Python warnings and log records below ERROR of every library (torchao's "Failed
to load ..._C_*.so" via the root logger, torch's ``_pytree`` deprecation lines via its "torch" logger); TensorFlow /
absl INFO via their environment variables; LiteRT's INFO lines, which C++ writes to fd 2: captured around each model
load (:func:`edgedepth.runtimes.native_log_captured`, told by ``EDGEDEPTH_VERBOSE``) and, for the lines LiteRT writes
as the process ends, dealt with at exit (:func:`quiet_logs`).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import warnings

from . import native_log_shown

_NATIVE_ENV = {"TF_CPP_MIN_LOG_LEVEL": "2", "GLOG_minloglevel": "2"}     # defaults, a user's own value wins
# What happens to fd 2 at exit: None (nothing), "devnull" (a process the caller owns) or "filter" (drop LiteRT's
# INFO lines, keep the rest).  The hook is registered once, on the first quiet call.
_exit = {"mode": None, "registered": False}

# The filter: a child process between fd 2 and the terminal, writing every line but LiteRT's "INFO: [file.cc:N] ...".
_FILTER = ("import sys\n"
           "for line in sys.stdin.buffer:\n"
           "    if not line.startswith(b'INFO: ['):\n"
           "        sys.stdout.buffer.write(line)\n"
           "        sys.stdout.buffer.flush()\n")


@contextlib.contextmanager
def quiet_logs(verbose: bool = False, *, owns_process: bool = False):
    """Keep third-party log output off stderr for the block unless ``verbose`` (or ``EDGEDEPTH_VERBOSE`` is set).

    At exit, when quiet: ``owns_process`` (the CLI, a script run as a command) sends fd 2 to /dev/null after the last
    line of ours; otherwise (a library call in someone else's process) fd 2 goes through a filter that drops only
    LiteRT's INFO lines.  A later verbose call turns the filter off again.  Nestable; environment, warning filters
    and the logging level are restored after the block."""
    verbose = bool(verbose) or native_log_shown()
    saved_env = {k: os.environ.get(k) for k in (*_NATIVE_ENV, "EDGEDEPTH_VERBOSE")}
    saved_disable = logging.root.manager.disable
    for k, v in _NATIVE_ENV.items():
        os.environ.setdefault(k, v)
    with warnings.catch_warnings():
        if verbose:
            os.environ["EDGEDEPTH_VERBOSE"] = "1"
            if _exit["mode"] == "filter":
                _exit["mode"] = None
        else:
            warnings.simplefilter("ignore")
            # Not logger levels: torch sets its own loggers' levels when it is first imported, which may be later.
            logging.disable(max(logging.WARNING, saved_disable))
            _quiet_at_exit("devnull" if owns_process else "filter")
        try:
            yield
        finally:
            logging.disable(saved_disable)
            for k, v in saved_env.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _quiet_at_exit(mode: str) -> None:
    if _exit["mode"] != "devnull":
        _exit["mode"] = mode
    if not _exit["registered"]:
        atexit.register(_at_exit)
        _exit["registered"] = True


def _at_exit() -> None:
    """After the last line of ours: LiteRT logs a line per accelerator as its environments are destroyed, from C++
    static destructors that run after every Python exit hook."""
    mode = _exit["mode"]
    if mode is None:
        return
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.flush()
    if mode == "devnull":
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 2)
        os.close(fd)
    elif hasattr(os, "posix_spawn") and sys.executable:
        _filter_fd2()


def _filter_fd2() -> None:
    """Put the :data:`_FILTER` child between fd 2 and where it went; it ends when this process has ended (end of
    input).  Anything failing here leaves fd 2 as it was (the lines then show)."""
    r, w = os.pipe()
    try:
        os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", _FILTER], os.environ,
                       file_actions=[(os.POSIX_SPAWN_DUP2, r, 0), (os.POSIX_SPAWN_DUP2, 2, 1)])
    except OSError:
        os.close(w)
        return
    finally:
        os.close(r)
    os.dup2(w, 2)
    os.close(w)
