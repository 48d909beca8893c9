"""Keep the depth map's size symbolic, so one ONNX file takes any input size (dynamic height and width).

Answers: transformers' head resizes to ``(int(patch_height * 14), int(patch_width * 14))``; under a dynamic-shape
``torch.export`` the ``int()`` turns the symbolic size into the trace size's constant, and the exported graph then
returns a map of the *trace* size for every input, silently (measured: a 266x350 input gave a 224x224 map).
:class:`SymbolicSizeHead` computes the same resize with the size left as ``patch_height * 14`` (no ``int``).
Exact (bit-identical): the same convolutions, resize and activations in the same order; eager, the size is the same
Python int.  Off by default (a static export is unaffected); the ONNX format turns it on for its dynamic files.
"""

from __future__ import annotations

from torch import nn

from ._base import DEPTH_ANYTHING_V2, RewriteContext, fresh_copy
from ._modules import SymbolicSizeHead

NAME = "symbolic_output_size"
EXACT = True
REQUIRES: tuple[str, ...] = ()
FAMILIES = (DEPTH_ANYTHING_V2,)     # the model families whose structure it walks


def symbolic_output_size(model: nn.Module, ctx: RewriteContext) -> tuple[nn.Module, int]:
    model = fresh_copy(model)
    if isinstance(model.head, SymbolicSizeHead):
        return model, 0
    model.head = SymbolicSizeHead(model.head)
    return model, 1
