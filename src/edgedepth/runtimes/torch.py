"""PyTorch eager runner: the reference every export is compared with."""

from __future__ import annotations

import numpy as np

from . import FileRunner


class TorchRunner(FileRunner):
    def __init__(self, module, size: tuple[int, int], threads: int | None = None):
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.module = module.eval()
        self.name = "torch-eager"
        self.input_shape = (1, 3, *size)

    def run(self, x: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            return self.module(torch.from_numpy(self._checked(x))).numpy()

    def close(self) -> None:
        pass
