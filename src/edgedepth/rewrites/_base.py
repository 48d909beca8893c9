"""What every rewrite gets and returns."""

from __future__ import annotations

import copy
import dataclasses

from torch import nn

from ..models import DEPTH_ANYTHING_3, DEPTH_ANYTHING_V2, encoder_layers  # noqa: F401  (re-exported: every rewrite imports them here)


@dataclasses.dataclass(frozen=True)
class RewriteContext:
    """The fixed export size (pixels; multiples of the patch size)."""

    height: int
    width: int

    def patch_grid(self, patch_size: int) -> tuple[int, int]:
        return self.height // patch_size, self.width // patch_size


def fresh_copy(model: nn.Module) -> nn.Module:
    """Deep copy in eval mode: rewrites never mutate their input."""
    return copy.deepcopy(model).eval()

