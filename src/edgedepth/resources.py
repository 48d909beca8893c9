"""Where edgedepth's own files are: the recipes, the committed measurement records and the playground page.

One rule for a checkout and an installed wheel: the wheel carries them in ``edgedepth/_bundled/`` at the paths they
have in the repository (setup.py's build hook), so ``_bundled/recipes/X.py`` finds ``../benchmarks/results`` as
``recipes/X.py`` does in the checkout.  A package with ``_bundled/`` reads only that; otherwise (a checkout, or an
editable install of one) the repository around ``src/``.
"""

from __future__ import annotations

import os

_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_BUNDLED = os.path.join(_PACKAGE, "_bundled")
_CHECKOUT = os.path.normpath(os.path.join(_PACKAGE, os.pardir, os.pardir))     # src layout: src/edgedepth/../..


def root() -> str:
    """The folder holding ``recipes/``, ``benchmarks/results/`` and ``web/``: the wheel's bundle or the checkout."""
    return _BUNDLED if os.path.isdir(_BUNDLED) else _CHECKOUT


def installed() -> bool:
    """True when running from an installed wheel (its bundle), False from a checkout."""
    return os.path.isdir(_BUNDLED)


def path(*parts: str) -> str:
    """``root()/parts...`` (e.g. ``path("recipes", "depth-anything-v2-small.py")``)."""
    return os.path.join(root(), *parts)
