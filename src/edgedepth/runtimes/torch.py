"""PyTorch eager runner: the reference every export is compared with."""

from __future__ import annotations

import numpy as np

from . import FileRunner


class TorchRunner(FileRunner):
    """``module``: a :class:`edgedepth.checkpoint.DepthModule`; ``run`` returns its depth, ``run_all`` every output it
    returns (its ``outputs``: Depth Anything 3's with the family's, depth and confidence)."""

    def __init__(self, module, size: tuple[int, int], threads: int | None = None):
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.module = module.eval()
        self.name = "torch-eager"
        self.input_shape = (1, 3, *size)
        self.output_names = tuple(getattr(module, "outputs", ("depth",)))

    def run(self, x: np.ndarray) -> np.ndarray:
        return self.run_all(x)["depth"]

    def run_all(self, x: np.ndarray) -> dict[str, np.ndarray]:
        import torch

        with torch.inference_mode():
            y = self.module(torch.from_numpy(self._checked(x)))
        ys = y if isinstance(y, tuple) else (y,)
        return {n: t.numpy() for n, t in zip(self.output_names, ys)}

    def close(self) -> None:
        pass
