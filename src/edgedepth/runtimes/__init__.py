"""Runtimes: one runner interface (``run(x) -> depth``) over PyTorch eager, LiteRT CPU/GPU and ExecuTorch.

Which runner opens which file is the format registry's business (``edgedepth.formats``); runtimes know no file format.

Every runner takes the float32 model input [1,3,H,W] (numpy) and returns float32 depth [1,H,W] (numpy).
"""

from __future__ import annotations

from typing import Protocol

import numpy as np


class Runner(Protocol):
    name: str          # e.g. "litert-cpu", "litert-gpu", "torch-eager"
    input_shape: tuple[int, int, int, int]

    def run(self, x: np.ndarray) -> np.ndarray: ...

    def close(self) -> None: ...


class FileRunner:
    """Shared by the runners of exported files: the fixed input shape and its check."""

    input_shape: tuple[int, int, int, int]

    @property
    def size(self) -> tuple[int, int]:
        return int(self.input_shape[2]), int(self.input_shape[3])

    def _checked(self, x: np.ndarray) -> np.ndarray:
        from ..errors import EdgedepthError

        if tuple(x.shape) != self.input_shape:
            raise EdgedepthError(f"input shape {tuple(x.shape)} does not match the model's {self.input_shape}")
        return np.ascontiguousarray(x, dtype=np.float32)
