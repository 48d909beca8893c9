"""User-facing errors: one line, no traceback, non-zero exit (see cli.main)."""


class EdgedepthError(Exception):
    """An error caused by the user's input or environment; the CLI prints it as one line."""

    exit_code = 2
