"""edgedepth's version: one place (pyproject.toml reads it; ``edgedepth --version`` and the model card's Rebuild line
print it)."""

__version__ = "0.1.0"
