"""A per-stage progress bar on stderr (tqdm), shared by every long command."""

from __future__ import annotations

import contextlib
import io
import logging
import sys
import warnings


class Stages:
    """``with Stages(3) as s: s.start("convert"); ...`` — advances one step per stage and shows elapsed time."""

    def __init__(self, total: int, enabled: bool = True):
        from tqdm import tqdm

        self._bar = tqdm(total=total, file=sys.stderr, disable=not enabled, leave=True, dynamic_ncols=True,
                         bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} stages [{elapsed}]")
        self._started = False

    def start(self, name: str) -> None:
        if self._started:
            self._bar.update(1)
        self._started = True
        self._bar.set_description_str(name)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        if exc_type is None and self._started:
            self._bar.update(1)
            self._bar.set_description_str("done")
        self._bar.close()


class JobsBar:
    """A build's jobs across a cluster: ``jobs done/total`` with how many run now and how many came from the cache;
    ``stage(name)`` names what the driver does (loading, putting a release together)."""

    def __init__(self, enabled: bool = True):
        from tqdm import tqdm

        self._bar = tqdm(total=0, file=sys.stderr, disable=not enabled, leave=True, dynamic_ncols=True, unit="job",
                         bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} jobs [{elapsed}]{postfix}")

    def stage(self, name: str) -> None:
        self._bar.set_description_str(name, refresh=True)

    def jobs(self, counts) -> None:
        """``counts``: ``release.graph.JobCounts``."""
        self._bar.total, self._bar.n = counts.total, counts.done
        self._bar.set_postfix_str(f"{counts.running} running, {counts.cached} cached", refresh=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *_):
        if exc_type is None:
            self._bar.set_description_str("done")
        self._bar.close()


@contextlib.contextmanager
def quiet_output(enabled: bool = True):
    """Silence a library's own prints, progress bars, log records and warnings while it runs (we show one bar)."""
    if not enabled:
        yield
        return
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        logging.disable(logging.WARNING)
        try:
            yield
        finally:
            logging.disable(logging.NOTSET)
