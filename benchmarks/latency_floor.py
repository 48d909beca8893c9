"""How low can optimised ÷ plain go on this CPU?  The latency floor of the model's own kernels.

An exact rewrite may remove layout and elementwise work, but it must keep the model's arithmetic: the 83.7 G
multiply-accumulates of FULLY_CONNECTED / BATCH_MATMUL / CONV_2D (518x686), the softmaxes and GELUs.  This script builds a
*kernel-only* variant of the optimised model -- every encoder layer keeps qkv, attention (BATCH_MATMUL, SOFTMAX,
BATCH_MATMUL), o_proj, fc1, GELU, fc2 and its residual ADDs with the same shapes, but has no LayerNorm and no head
transposes; stem and DPT head unchanged -- converts it (FP32, and dynamic INT8 with the same recipe), checks it has the same
MACs, and times it interleaved with the plain and optimised files.  Its output is meaningless by design: it is a
timing device.  ``floor ÷ plain`` is then (near) the best ratio any exact rewrite of the encoder can reach here.

    .venv/bin/python benchmarks/latency_floor.py [--dir out/bench] [--rounds 3 --warmup 5 --iters 12]

Needs the four 518x686 files from ``STEPS=export benchmarks/run_cpu.sh``.  Writes benchmarks/results/latency_floor.json.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import torch
from torch import nn

from edgedepth.verify.bench import environment, floor_ratios, run_interleaved
from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.formats.tflite import describe
from edgedepth.rewrites import apply_rewrites
from edgedepth.rewrites._modules import EdgeAttention
from edgedepth.runtimes.litert import LiteRTRunner
from edgedepth.formats import tflite as litert

H, W = 518, 686
P = f"depth_anything_v2_small_{H}x{W}"


class KernelOnlyLayer(nn.Module):
    """One optimised encoder layer without its LayerNorms and head transposes (timing only, not the model).

    Keeps qkv, attention (BATCH_MATMUL, SOFTMAX, BATCH_MATMUL), o_proj, fc1, GELU, fc2 and the two residual ADDs (an
    exact rewrite cannot drop an activation + activation sum).  ``qkv``'s output is reshaped straight to [3h, N, d]
    (the real head split's shape, without its TRANSPOSE).
    """

    def __init__(self, layer: nn.Module):
        super().__init__()
        att = layer.attention
        if not isinstance(att, EdgeAttention) or att.qkv is None:
            raise SystemExit("kernel-only layers need the default rewrite pipeline (fused qkv)")
        self.h, self.d = att.num_heads, att.head_dim
        self.qkv, self.o_proj = att.qkv, att.o_proj
        self.fc1, self.act, self.fc2 = layer.mlp.fc1, layer.mlp.activation_fn, layer.mlp.fc2

    def attention_branch(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        q, k, v = torch.split(self.qkv(x).reshape(3 * self.h, n, self.d), self.h, dim=0)
        a = torch.matmul(torch.softmax(torch.matmul(q, k.transpose(1, 2)), dim=-1), v)
        return self.o_proj(a.reshape(1, n, self.h * self.d))

    def mlp_branch(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.act(self.fc1(x)))

    def forward(self, x: torch.Tensor, attention_mask=None, **kwargs) -> torch.Tensor:
        h = x + self.attention_branch(x)
        return h + self.mlp_branch(h)


class KernelOnlyBackbone(nn.Module):
    """Stem, kernel-only layers, no output LayerNorm; same feature-map contract as EdgeBackbone."""

    def __init__(self, bb: nn.Module):
        super().__init__()
        self.embeddings = bb.embeddings
        self.layers = nn.ModuleList(KernelOnlyLayer(layer) for layer in bb.layers)
        self.out_layers = bb.out_layers

    def forward(self, pixel_values):
        from transformers.modeling_outputs import BackboneOutput

        hidden, feats = self.embeddings(pixel_values), []
        for i, layer in enumerate(self.layers, start=1):
            hidden = layer(hidden)
            if i in self.out_layers:
                feats.append(hidden)
        return BackboneOutput(feature_maps=tuple(feats))

    def forward_with_filtered_kwargs(self, pixel_values, **kwargs):
        return self(pixel_values)


def _rescale(linear: nn.Module, out: torch.Tensor) -> None:
    s = 1.0 / float(out.std())
    linear.weight.mul_(s)
    linear.bias.mul_(s)


@torch.no_grad()
def kernel_only_model(model: nn.Module, x: torch.Tensor) -> nn.Module:
    """Optimised model with a kernel-only backbone.  Without LayerNorm the residual stream would grow layer by layer
    (and inf/NaN time differently), so each branch's last Linear is rescaled to unit output std (weights only: no op)."""
    m, _ = apply_rewrites(model, H, W)
    m.backbone = KernelOnlyBackbone(m.backbone)
    hidden = m.backbone.embeddings(x)
    for layer in m.backbone.layers:
        _rescale(layer.o_proj, layer.attention_branch(hidden))
        hidden = hidden + layer.attention_branch(hidden)
        _rescale(layer.fc2, layer.mlp_branch(hidden))
        hidden = hidden + layer.mlp_branch(hidden)
    return m.eval()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="out/bench")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--iters", type=int, default=12)
    ap.add_argument("--precisions", default="fp32,int8", help="which plain/optimised/floor trios to time")
    ap.add_argument("--reuse", action="store_true", help="reuse floor files already in --dir (skip conversion)")
    ap.add_argument("--out", default="benchmarks/results/latency_floor.json")
    a = ap.parse_args()
    files = {k: os.path.join(a.dir, f"{P}_{k}.tflite") for k in ("fp32_plain", "fp32", "int8_plain", "int8")}
    missing = [p for p in files.values() if not os.path.isfile(p)]
    if missing:
        raise SystemExit(f"missing {missing[0]}: run STEPS=export benchmarks/run_cpu.sh first")
    ckpt = load_checkpoint("synthetic", quiet=True)
    x = np.random.default_rng(0).standard_normal((1, 3, H, W), dtype=np.float32)
    floor = kernel_only_model(ckpt.model, torch.from_numpy(x))
    depth = DepthModule(floor)(torch.from_numpy(x))
    if not torch.isfinite(depth).all():
        raise SystemExit("kernel-only model produced non-finite values")
    files["fp32_floor"] = os.path.join(a.dir, f"{P}_fp32_floor.tflite")
    files["int8_floor"] = os.path.join(a.dir, f"{P}_int8_floor.tflite")
    if not (a.reuse and os.path.isfile(files["fp32_floor"]) and os.path.isfile(files["int8_floor"])):
        litert.convert_fp32(DepthModule(floor), H, W, files["fp32_floor"])
        litert.quantize_int8(files["fp32_floor"], files["int8_floor"])
    info = {k: describe(p) for k, p in files.items()}
    for k, i in info.items():
        print(f"{k:12s} {i['ops']:4d} ops  {i['macs']['total'] / 1e9:.2f} G MAC", flush=True)
    if len({i["macs"]["total"] for i in info.values()}) != 1:
        raise SystemExit("the kernel-only model does not have the same MACs as the real graphs")
    precisions = [p for p in ("fp32", "int8") if p in a.precisions.split(",")]
    order = [k for p in precisions for k in (f"{p}_plain", p, f"{p}_floor")]
    variants = {k: (lambda p=files[k]: LiteRTRunner(p, "cpu", threads=2)) for k in order}
    res = run_interleaved(variants, x, rounds=a.rounds, warmup=a.warmup, iters=a.iters,
                          progress=lambda d, t: print(f"\rbench {d}/{t}", end="", file=sys.stderr))
    print(file=sys.stderr)
    v = res["variants"]
    for k in order:
        v[k].update(file=os.path.basename(files[k]), ops=info[k]["ops"], macs=info[k]["macs"],
                    op_histogram=info[k]["op_histogram"])
    ratios = floor_ratios(v, info["fp32"]["macs"]["total"], precisions)
    for prec, r in ratios.items():
        print(f"{prec}: optimised/plain {r['optimised_over_plain']:.3f}  floor/plain {r['floor_over_plain']:.3f}  "
              f"optimised/floor {r['optimised_over_floor']:.3f}  ({r['gmac_per_s_floor']:.0f} G MAC/s at the floor)")
    out = {"kind": "edgedepth.latency_floor", "model": "synthetic", "size": [H, W], "target_ratio": 0.75,
           "ratios": ratios, "method": res["method"], "variants": v, "environment": environment(2),
           "floor_model": "optimised model, encoder layers reduced to qkv, BATCH_MATMUL/SOFTMAX/BATCH_MATMUL, o_proj, "
                          "fc1, GELU, fc2 and the residual ADDs (no LayerNorm, no head transposes); stem and head "
                          "unchanged"}
    with open(a.out, "w") as f:
        json.dump(out, f, indent=2)
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
