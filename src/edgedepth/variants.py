"""Model-name variants: ``<base><suffix>`` loads ``<base>`` and passes the checkpoint through a registered transform.

The package that owns a transform registers it (``edgedepth.fp16`` registers ``-fp16-stress`` when edgedepth is
imported); ``checkpoint.load_checkpoint`` looks names up here, so checkpoint.py imports none of those packages.
Pure Python on purpose: importing it (and so registering) costs nothing; transforms import what they need lazily.
"""

from __future__ import annotations

from typing import Any, Callable

_VARIANTS: dict[str, Callable[[Any], Any]] = {}


def register_variant(suffix: str, transform: Callable[[Any], Any]) -> None:
    """Model names ending in ``suffix`` (e.g. ``"-fp16-stress"``) load the base name, then ``transform(checkpoint)``."""
    if not suffix.startswith("-"):
        raise ValueError(f"variant suffix {suffix!r} must start with '-'")
    _VARIANTS[suffix] = transform


def split_variant(spec: str) -> tuple[str, Callable[[Any], Any] | None]:
    """(base name, transform) when ``spec`` ends in a registered suffix, else (``spec``, None)."""
    for suffix, transform in _VARIANTS.items():
        if spec.endswith(suffix) and len(spec) > len(suffix):
            return spec[: -len(suffix)], transform
    return spec, None

