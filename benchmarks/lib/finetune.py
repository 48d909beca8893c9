"""A stand-in fine-tune, as a user would bring one: a synthetic stand-in trained a few optimiser steps (so its weights
are no member's), saved in every checkpoint format edgedepth reads.  For tests/test_own_model.py and
benchmarks/finetune_formats.py.

Formats written into ``folder``:
  ``hf/``                                    ``save_pretrained`` (transformers' folder; config.json + safetensors)
  ``depth_anything_v2_vits.pth``             the official repository's plain state dict (its relative naming)
  ``latest.pth``                             its training script's checkpoint: {"model": {"module." + key: ...}, ...}
  ``depth_anything_v2_vits.safetensors``     the official keys as safetensors
"""

from __future__ import annotations

import os

FORMATS = {"hf": "hf", "pth": "depth_anything_v2_vits.pth", "training": "latest.pth",
           "safetensors": "depth_anything_v2_vits.safetensors"}


def finetune(base: str = "synthetic-tiny", steps: int = 3, seed: int = 0, size: tuple[int, int] = (56, 70)):
    """``base`` trained ``steps`` Adam steps towards a vertical ramp (near at the bottom), on seeded noise images:
    eval-mode, every parameter moved.  Returns the transformers model."""
    import torch

    from edgedepth.checkpoint import load_checkpoint

    model = load_checkpoint(base, quiet=True).model
    model.train()
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    target = torch.linspace(0.0, 1.0, size[0]).view(1, size[0], 1).expand(2, *size)
    for _ in range(steps):
        x = torch.randn(2, 3, *size, generator=g)
        loss = torch.nn.functional.mse_loss(model(pixel_values=x).predicted_depth, target)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model.eval()


def save_all(model, folder: str) -> dict[str, str]:
    """``model`` saved in every format of :data:`FORMATS` under ``folder``: {format: path}."""
    import torch
    from safetensors.torch import save_file

    from edgedepth.models.depth_anything_v2.official import to_official

    os.makedirs(folder, exist_ok=True)
    paths = {k: os.path.join(folder, v) for k, v in FORMATS.items()}
    model.save_pretrained(paths["hf"])
    official = {k: v.contiguous() for k, v in to_official(model).items()}
    torch.save(official, paths["pth"])
    torch.save({"model": {"module." + k: v for k, v in official.items()}, "epoch": 3, "previous_best": {}},
               paths["training"])
    save_file(official, paths["safetensors"])
    return paths
