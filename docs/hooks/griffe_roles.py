"""Griffe extension for the API reference: edgedepth's docstrings cross-reference with Sphinx roles
(``:func:`open```, ``:class:`~edgedepth.formats.Artifact```), which Markdown would show as raw text; they become
code spans (``~`` keeps the last name only, as in Sphinx).  Loaded by mkdocstrings (``extensions:`` in mkdocs.yml).
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|meth|class|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")


def plain_roles(text: str) -> str:
    """``text`` with every Sphinx role written as a code span."""
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`", text)


class PlainRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(obj.docstring.value)
