"""User-facing errors: one line, no traceback, non-zero exit (see cli.main)."""


class EdgedepthError(Exception):
    """An error caused by the user's input or environment; the CLI prints it as one line.

    Library code describes the problem in its own terms and names the parameter (``option="size"``, the message
    starting with that word); the CLI maps it to its flag (``--size``).  Library text never names CLI flags.
    """

    exit_code = 2

    def __init__(self, message: str, *, option: str | None = None):
        super().__init__(message)
        self.option = option

    def for_cli(self) -> str:
        """The message with its parameter name replaced by the CLI flag (``size '1x1': ...`` -> ``--size '1x1': ...``)."""
        text = str(self)
        if self.option and text.startswith(self.option):
            return "--" + self.option.replace("_", "-") + text[len(self.option):]
        return text
