"""The device limit's attention (issue 30, benchmarks/gpu_reference.py): what reaches SDPA when the model is compiled.

transformers 5.24's DINOv2 builds an all-true [1, 1, N, N] mask whenever ``torch.compiler.is_exporting()`` is true;
the device's torch 2.11 folds that to True under plain torch.compile, so the fused kernels refused the mask there
(BENCHMARKS "The device limit, two timers"). These pin what the published prose says of our own stack, and that the
``-nomask`` arms' backbone change keeps the arithmetic."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from conftest import benchmark_module
from edgedepth.checkpoint import DepthModule



def _sdpa_masks(module, x) -> list:
    """attn_mask of every SDPA call in the graph torch.compile makes of ``module`` (None or (dtype, shape))."""
    seen = []

    def backend(gm, example_inputs):
        for n in gm.graph.nodes:
            if n.op == "call_function" and n.target is F.scaled_dot_product_attention:
                m = n.kwargs.get("attn_mask", n.args[3] if len(n.args) > 3 else None)
                seen.append(None if m is None else (m.meta["example_value"].dtype,
                                                    tuple(m.meta["example_value"].shape)))
        return gm.forward

    torch._dynamo.reset()
    try:
        with torch.no_grad():
            torch.compile(module, backend=backend, fullgraph=False)(x)
    finally:
        torch._dynamo.reset()
    return seen


def test_pinned_torch_gives_sdpa_no_mask_under_compile(tiny_ckpt, tiny_input):
    """Our pins (torch 2.13: pytorch#176499) leave is_exporting() false under torch.compile, so DINOv2 hands SDPA no
    mask and the fused kernels may run. Fails if a torch or transformers change brings the mask back."""
    assert benchmark_module("gpu_reference").compiled_is_exporting() is False
    masks = _sdpa_masks(DepthModule(tiny_ckpt.model).eval(), torch.from_numpy(tiny_input))
    assert masks and all(m is None for m in masks), masks


def test_nomask_arm_keeps_the_arithmetic(tiny_ckpt, tiny_input):
    """gpu_reference.without_mask: only the backbone's attention entry changes (to "sdpa_nomask", no mask function),
    the output is bit-identical to the model as loaded, and the graph still has SDPA calls without a mask."""
    base = DepthModule(tiny_ckpt.model).eval()
    nomask = benchmark_module("gpu_reference").without_mask(copy.deepcopy(base))
    assert nomask.model.backbone.config._attn_implementation == "sdpa_nomask"
    assert nomask.model.config._attn_implementation == base.model.config._attn_implementation
    assert base.model.backbone.config._attn_implementation != "sdpa_nomask"
    x = torch.from_numpy(tiny_input)
    with torch.no_grad():
        assert torch.equal(base(x), nomask(x))
    masks = _sdpa_masks(nomask, x)
    assert masks and all(m is None for m in masks), masks
