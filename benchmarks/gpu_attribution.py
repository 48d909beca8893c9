"""Where the GPU time goes (issue 15): sub-graphs and single-op chains of the shipped model, timed on the H200.

LiteRT's Python API has no per-op GPU profiler, so time is attributed by *differencing*: each piece is converted twice,
as a chain of k1 and of k2 copies (same shapes, real layer structure), and

    time per copy = (t[k2] - t[k1]) / (k2 - k1)

cancels the input write, output read and sync the two files share.  Both chains must take longer than the per-call
floor (~2.9 ms for a token-sized file on the H200: shorter work hides behind it), hence chains of 4..96 copies.

Pieces (synthetic full-size model, default rewrites, 518x686 -> N = 1814 tokens, D = 384, 6 heads of 64): the per-call
floor (model-sized I/O around one MEAN; a token-sized file with one ADD), the stem, one encoder layer, its attention
half and MLP half, the attention core ``softmax(x x^T) x`` in three layouts (rank-3 [6,N,64], rank-4 [1,6,N,64],
head by head), SOFTMAX over [6,N,N], LayerNorm, GELU, the MLP's FULLY_CONNECTED pair in three formulations (rank-3 as
shipped, rank-2, 1x1 CONV_2D; ``matmul`` by a constant converts to the same FULLY_CONNECTED), and neck + head.  Later
runs (``--only``): the rank-4 core with attn @ v split over 2 / 4 key chunks, with K^T transposed once per chain, head
by head with q k^T as a FULLY_CONNECTED on runtime weights, and SOFTMAX alone on rank-4 scores.
Whole-model variants (a second interleaved run): the shipped set (+ its dynamic-INT8 file), + fp16_safe,
+ unroll_heads, and the shipped set minus one rewrite at a time.

    .venv/bin/python benchmarks/gpu_attribution.py build     # here: converts, strips weights -> .dev/gpu_attr (~10 min)
    bash benchmarks/devices/gpu_device.sh                            # on the device: run --part pieces, run --part models
    .venv/bin/python benchmarks/gpu_attribution.py cpu       # here: the same rewrite sets on LiteRT CPU

Weights travel stripped (``edgedepth.formats.tflite.transport.strip``; a few MB in all) and are refilled there with seeded values
(``transport.fill_float`` / ``fill_int8``): latency only.  Timing: ``run_interleaved`` (rounds x (warm-up + timed
calls), order rotated), a call = input write + synchronous run + output read, each file on LiteRT's GPU accelerator
with FP32 enforced and with the default precision (FP16 compute); a file not fully on the GPU, or with a non-finite
output, is reported and not timed.
"""

from __future__ import annotations

import argparse
import copy
import gzip
import json
import os
import shutil
import time

import numpy as np


DEV = ".dev/gpu_attr"


# ------------------------------------------------------------------------------------------------ pieces (torch)

def _pieces(mm, height: int, width: int):
    """{name: (what, {k: (module, input_shape)})} for the prepared model ``mm`` (transformers' model, rewritten)."""
    import torch
    from torch import nn

    layers = mm.backbone.layers
    n = mm.backbone.embeddings(torch.zeros(1, 3, height, width)).shape[1]
    d_model = layers[0].mlp.fc1.in_features
    att0 = layers[0].attention
    heads = getattr(att0, "num_heads")
    hd = d_model // heads

    class Chain(nn.Module):
        def __init__(self, mods):
            super().__init__()
            self.mods = nn.ModuleList(mods)

        def forward(self, x):
            for m in self.mods:
                x = m(x)
            return x

    class AttnHalf(nn.Module):
        def __init__(self, layer):
            super().__init__()
            self.norm1, self.ls, self.attention = layer.norm1, layer.layer_scale1, layer.attention

        def forward(self, x):
            return x + self.ls(self.attention(self.norm1(x))[0])

    class MlpHalf(nn.Module):
        def __init__(self, layer):
            super().__init__()
            self.norm2, self.mlp, self.ls = layer.norm2, layer.mlp, layer.layer_scale2

        def forward(self, x):
            return x + self.ls(self.mlp(self.norm2(x)))

    class Core(nn.Module):            # the attention core of EdgeAttention on [h, N, d] (k = q = v = x)
        def forward(self, x):
            return torch.matmul(torch.softmax(torch.matmul(x, x.transpose(1, 2)), dim=-1), x)

    class Softmaxes(nn.Module):       # [h,N,d] (or rank-4 [1,h,N,d]) -> scores -> k SOFTMAX -> same shape
        def __init__(self, k, rank4=False):
            super().__init__()
            self.k, self.rank4 = k, rank4

        def forward(self, x):
            s = torch.matmul(x, x.transpose(2, 3) if self.rank4 else x.transpose(1, 2))
            for _ in range(self.k):
                s = torch.softmax(s, dim=-1)
            return torch.matmul(s, x)

    class Gelus(nn.Module):           # fc1 -> k GELU -> fc2
        def __init__(self, mlp, k):
            super().__init__()
            self.fc1, self.fc2, self.act, self.k = mlp.fc1, mlp.fc2, mlp.activation_fn, k

        def forward(self, x):
            h = self.fc1(x)
            for _ in range(self.k):
                h = self.act(h)
            return self.fc2(h)

    class FcPair(nn.Module):          # fc1 then fc2 (no activation), in one of three formulations
        def __init__(self, mlp, form):
            super().__init__()
            self.form = form
            w1, b1, w2, b2 = (t.detach().clone() for t in (mlp.fc1.weight, mlp.fc1.bias, mlp.fc2.weight, mlp.fc2.bias))
            if form == "conv1x1":      # [1, D, N, 1] NCHW: the converter keeps it NHWC between the two convs
                self.c1 = nn.Conv2d(w1.shape[1], w1.shape[0], 1)
                self.c2 = nn.Conv2d(w2.shape[1], w2.shape[0], 1)
                with torch.no_grad():
                    self.c1.weight.copy_(w1[:, :, None, None]); self.c1.bias.copy_(b1)
                    self.c2.weight.copy_(w2[:, :, None, None]); self.c2.bias.copy_(b2)
            else:
                self.w1, self.b1 = nn.Parameter(w1, requires_grad=False), nn.Parameter(b1, requires_grad=False)
                self.w2, self.b2 = nn.Parameter(w2, requires_grad=False), nn.Parameter(b2, requires_grad=False)

        def forward(self, x):         # x: [1,N,D] (fc), [N,D] (fc_2d), [1,D,N,1] (conv1x1)
            if self.form == "conv1x1":
                return self.c2(self.c1(x))
            f = nn.functional.linear
            return f(f(x, self.w1) + self.b1, self.w2) + self.b2

    class NeckHead(nn.Module):        # the 4 feature taps all fed from one token tensor
        def __init__(self, mm, ph, pw):
            super().__init__()
            self.neck, self.head, self.ph, self.pw = mm.neck, mm.head, ph, pw

        def forward(self, x):
            return self.head(self.neck([x, x, x, x], self.ph, self.pw), self.ph, self.pw)

    class Core4(nn.Module):           # the same core on rank-4 [1, h, N, d] tensors
        def forward(self, x):
            return torch.matmul(torch.softmax(torch.matmul(x, x.transpose(2, 3)), dim=-1), x)

    class Core4VT(nn.Module):         # rank-4 core with the second product transposed: out = (v^T attn^T)^T
        def forward(self, x):
            attn = torch.softmax(torch.matmul(x, x.transpose(2, 3)), dim=-1)
            return torch.matmul(x.transpose(2, 3), attn.transpose(2, 3)).transpose(2, 3)

    class Core4SplitK(nn.Module):     # rank-4 core with attn @ v split over c key chunks, partial products summed
        def __init__(self, c):
            super().__init__()
            self.c = c

        def forward(self, x):
            attn = torch.softmax(torch.matmul(x, x.transpose(2, 3)), dim=-1)
            n = x.shape[2]
            b = [n * i // self.c for i in range(self.c + 1)]
            out = None
            for i in range(self.c):
                p = torch.matmul(attn[..., b[i]:b[i + 1]], x[:, :, b[i]:b[i + 1], :])
                out = p if out is None else out + p
            return out

    class FixedKV(nn.Module):         # k cores whose K and V are the chain's input x: K^T is transposed once
        def __init__(self, k):        # (litert-torch emits the same graph for q @ x^T and q @ x^T.contiguous(),
            super().__init__()        # and the same SOFTMAX for a max/sub/exp/sum/div softmax: no other forms)
            self.k = k

        def forward(self, x):
            y = x
            for _ in range(self.k):
                y = torch.matmul(torch.softmax(torch.matmul(y, x.transpose(2, 3)), dim=-1), x)
            return y

    class CoreFcHeads(nn.Module):     # head by head on rank-2 [N, d] slices, both products as linear() by a tensor
        def __init__(self, h, d):     # (FULLY_CONNECTED with runtime weights, if the converter keeps it)
            super().__init__()
            self.h, self.d = h, d

        def forward(self, x):         # x: [N, h*d]
            f = nn.functional.linear
            outs = []
            sl = lambda i: x[:, (i % self.h) * self.d:(i % self.h + 1) * self.d]  # noqa: E731
            for i in range(self.h):   # k, v from other heads' slices: one tensor as both inputs of an op aborts
                q, k, v = sl(i), sl(i + 1), sl(i + 2)   # the GPU delegate ("already a consumer of the value")
                outs.append(f(torch.softmax(f(q, k), dim=-1), v.t()))
            return torch.cat(outs, dim=-1)

    class CoreHeads(nn.Module):       # the same core head by head on [1, N, d] slices of a [1, N, h*d] tensor
        def __init__(self, h, d):
            super().__init__()
            self.h, self.d = h, d

        def forward(self, x):
            outs = []
            for i in range(self.h):
                q = x[:, :, i * self.d:(i + 1) * self.d]
                outs.append(torch.matmul(torch.softmax(torch.matmul(q, q.transpose(1, 2)), dim=-1), q))
            return torch.cat(outs, dim=-1)

    class AddChain(nn.Module):        # k ADDs of the input to a running sum: per-op cost of a small elementwise op
        def __init__(self, k):
            super().__init__()
            self.k = k

        def forward(self, x):
            y = x
            for _ in range(self.k):
                y = y + x
            return y

    class ModelIO(nn.Module):         # the whole model's input and output, one MEAN between them
        def forward(self, x):
            return x.mean(dim=1)

    ph, pw = height // 14, width // 14
    tok = (1, n, d_model)
    hnd = (heads, n, hd)
    cp = copy.deepcopy
    # (A chain of elementwise ADDs is no per-op probe: the GPU delegate links elementwise ops into one kernel, and 32
    # of them exceed WebGPU's 16 storage buffers per stage -- an invalid pipeline, not an error, on the H200.)
    ly = lambda i: layers[i % len(layers)]   # noqa: E731  (chains longer than the model reuse layers cyclically)
    # Chain lengths: the shorter chain must already take longer than the per-call floor (~2.5 ms on the H200: a piece
    # below it is hidden behind the call's fixed cost, measured in the first run), so both lengths time real work.
    pieces = {
        "call_model_io": ("the model's input write + output read + one MEAN (per-call floor)",
                          {1: (ModelIO(), (1, 3, height, width))}),
        "call_tokens": ("a [1,N,D] -> [1,N,D] file with one ADD (per-call floor)", {1: (AddChain(1), tok)}),
        "call_tiny": ("a [1,8] -> [1,8] file with one ADD: dispatch + sync, no bytes (gpu_floor.py)",
                      {1: (AddChain(1), (1, 8))}),
        "stem": ("patch conv + CLS/position", {1: (mm.backbone.embeddings, (1, 3, height, width))}),
        "block": ("one encoder layer", {k: (Chain([cp(ly(i)) for i in range(k)]), tok) for k in (4, 12)}),
        "attention_half": ("LayerNorm + QKV + attention core + o_proj + residual",
                           {k: (Chain([AttnHalf(cp(ly(i))) for i in range(k)]), tok) for k in (6, 18)}),
        "mlp_half": ("LayerNorm + fc1 + GELU + fc2 + residual",
                     {k: (Chain([MlpHalf(cp(ly(i))) for i in range(k)]), tok) for k in (8, 24)}),
        "attention_core": (f"softmax(q k^T) v on [{heads},N,{hd}]: 2 BATCH_MATMUL (K^T as adj_y) + SOFTMAX",
                           {k: (Chain([Core() for _ in range(k)]), hnd) for k in (8, 24)}),
        "attention_core_rank4": (f"the same on rank-4 [1,{heads},N,{hd}]",
                                 {k: (Chain([Core4() for _ in range(k)]), (1,) + hnd) for k in (8, 24)}),
        "attention_core_rank4_vt": (f"the rank-4 core with attn @ v computed as (v^T attn^T)^T (output channels N)",
                                    {k: (Chain([Core4VT() for _ in range(k)]), (1,) + hnd) for k in (8, 24)}),
        "attention_core_rank4_splitk2": ("the rank-4 core with attn @ v as 2 key-chunk products + ADD",
                                         {k: (Chain([Core4SplitK(2) for _ in range(k)]), (1,) + hnd) for k in (8, 24)}),
        "attention_core_rank4_splitk4": ("the rank-4 core with attn @ v as 4 key-chunk products + ADDs",
                                         {k: (Chain([Core4SplitK(4) for _ in range(k)]), (1,) + hnd) for k in (8, 24)}),
        "attention_fixedkv_adjy": ("rank-4 core, K = V = chain input, q k^T with adj_y (as shipped)",
                                   {k: (FixedKV(k), (1,) + hnd) for k in (8, 24)}),
        "softmax_rank4": (f"SOFTMAX over [1,{heads},N,N]", {k: (Softmaxes(k, rank4=True), (1,) + hnd) for k in (8, 24)}),
        "attention_core_fc_heads": (f"head by head on [N,{hd}] slices, q k^T and attn v as linear() by a tensor",
                                    {k: (Chain([CoreFcHeads(heads, hd) for _ in range(k)]), tok[1:]) for k in (8, 24)}),
        "attention_core_heads": (f"the same head by head: SLICE [1,N,{hd}] per head, CONCATENATION",
                                 {k: (Chain([CoreHeads(heads, hd) for _ in range(k)]), tok) for k in (8, 24)}),
        "softmax": (f"SOFTMAX over [{heads},N,N]", {k: (Softmaxes(k), hnd) for k in (8, 24)}),
        "layernorm": ("LayerNorm as shipped (fast_layernorm form)",
                      {k: (Chain([cp(ly(i).norm1) for i in range(k)]), tok) for k in (32, 96)}),
        "gelu": ("GELU on [1,N,4D]", {k: (Gelus(cp(layers[0].mlp), k), tok) for k in (16, 48)}),
        "fc_pair": ("fc1+fc2 as rank-3 FULLY_CONNECTED (shipped)",
                    {k: (Chain([FcPair(ly(i).mlp, "fc") for i in range(k)]), tok) for k in (8, 24)}),
        "fc_pair_2d": ("fc1+fc2 as rank-2 FULLY_CONNECTED on [N,D]",
                       {k: (Chain([FcPair(ly(i).mlp, "fc_2d") for i in range(k)]), tok[1:]) for k in (8, 24)}),
        "fc_pair_conv1x1": ("fc1+fc2 as 1x1 CONV_2D on [1,N,1,D]",
                            {k: (Chain([FcPair(ly(i).mlp, "conv1x1") for i in range(k)]), (1, d_model, n, 1))
                             for k in (8, 24)}),
        "neck_head": ("DPT neck (4 taps) + head", {1: (NeckHead(mm, ph, pw), tok)}),
    }
    return pieces, {"tokens": n, "d_model": d_model, "heads": heads, "head_dim": hd, "layers": len(layers)}


def _convert(module, shape, path):
    import litert_torch
    import torch

    from edgedepth.progress import quiet_output
    from edgedepth.fsutil import atomic_path

    sample = torch.from_numpy(np.random.default_rng(0).standard_normal(shape, dtype=np.float32))
    with quiet_output(True), torch.no_grad():
        edge = litert_torch.convert(module.eval(), (sample,))
        with atomic_path(path) as tmp:
            edge.export(tmp)


def model_variants(default: list[str]) -> dict[str, list[str]]:
    """Whole-model rewrite sets: shipped, + fp16_safe (the build meant for FP16 compute), + unroll_heads, and
    shipped minus one (where requirements allow)."""
    from edgedepth.rewrites import REWRITES

    out = {"shipped": list(default), "shipped+fp16_safe": list(default) + ["fp16_safe"],
           "shipped+unroll_heads": list(default) + ["unroll_heads"]}
    for name in default:
        rest = [r for r in default if r != name]
        if any(name in REWRITES[r].requires for r in rest) or name in ("drop_attention_mask", "static_attention",
                                                                       "rank_preserving_fc"):
            continue          # required by a later one, or needed for full GPU delegation at all (#9481, masks)
        out[f"shipped-{name}"] = rest
    return out


def build(args) -> None:
    from edgedepth.formats.tflite import transport
    from edgedepth.checkpoint import load_checkpoint
    from edgedepth.formats.tflite import describe, quantize_int8
    from edgedepth.models import DEPTH_ANYTHING_V2
    from edgedepth.rewrites import PIPELINE, prepare

    h, w = args.size
    os.makedirs(args.dir, exist_ok=True)
    ckpt = load_checkpoint(args.model, quiet=True)
    default = [r.name for r in PIPELINE if r.default and DEPTH_ANYTHING_V2 in r.families]
    mod, _ = prepare(ckpt.model, h, w, "default")
    pieces, dims = _pieces(mod.model, h, w)
    index = {"model": args.model, "size": [h, w], "dims": dims, "shipped_rewrites": default, "pieces": {},
             "models": {}}
    old = os.path.join(args.dir, "index.json")
    if args.only and os.path.isfile(old):      # keep what was built before and is not rebuilt now
        prev = json.load(open(old))
        index["pieces"], index["models"] = prev["pieces"], prev["models"]
    tmp = os.path.join(args.dir, "full.tmp.tflite")

    def emit(key, module, shape, int8=False):
        t = time.time()
        _convert(module, shape, tmp)
        info = describe(tmp)
        out = os.path.join(args.dir, key + ".stripped.tflite")
        transport.strip(tmp, out, min_bytes=1024)
        entry = {"file": os.path.basename(out), "input": list(shape), "ops": info["ops"], "macs": info["macs"],
                 "op_histogram": info["op_histogram"]}
        if int8:      # the dynamic-INT8 file as a gzipped zero_int8 timing twin (refilled by fill_int8 there)
            q, z = tmp + ".int8.tflite", os.path.join(args.dir, key + "_int8.zeroed.tflite.gz")
            quantize_int8(tmp, q)
            transport.zero_int8(q, q + ".z")
            with open(q + ".z", "rb") as src, gzip.GzipFile(z, "wb", mtime=0) as dst:
                shutil.copyfileobj(src, dst)
            entry["int8_file"] = os.path.basename(z)
            entry["int8_ops"] = describe(q)["ops"]
            os.remove(q), os.remove(q + ".z")
        os.remove(tmp)
        print(f"{key}: {info['ops']} ops, {info['macs']['total'] / 1e9:.2f} GMAC, {time.time() - t:.0f}s", flush=True)
        return entry

    only = set(args.only or [])
    for name, (what, reps) in pieces.items():
        if only and name not in only:
            continue
        index["pieces"][name] = {"what": what, "reps": {str(k): emit(f"{name}_x{k}", m, s) for k, (m, s) in reps.items()}}
    for name, names in model_variants(default).items():
        if (only and name not in only) or args.pieces_only:
            continue
        m, rep = prepare(ckpt.model, h, w, names)
        index["models"][name] = {"rewrites": [r["name"] for r in rep if r["changed"]],
                                 **emit(f"model_{name}", m, (1, 3, h, w), int8=name == "shipped")}
    with open(os.path.join(args.dir, "index.json"), "w") as f:
        json.dump(index, f, indent=1)
    print("built", len(index["pieces"]), "pieces,", len(index["models"]), "models in", args.dir)


# ------------------------------------------------------------------------------------------------ device side

class _Fixed:
    """A runner that always runs its own input (run_interleaved hands every variant the same array)."""

    def __init__(self, runner, x):
        self.r, self.x = runner, x

    def run(self, _):
        return self.r.run(self.x)

    def close(self):
        self.r.close()


def run(args) -> None:
    """Time one part in one interleaved run: ``pieces`` (every piece + the shipped model) or ``models`` (every
    whole-model variant).  Each file is compiled once per mode (a LiteRT GPU environment is not cheap: creating ~70 of
    them twice crashed the driver) and checked (fully on the GPU, finite output) before the rounds start.  The two
    parts go into one JSON (``bench`` and ``bench_models``)."""
    from edgedepth.formats.tflite import transport
    from edgedepth.formats.tflite import gpu_check
    from edgedepth.runtimes.litert import LiteRTRunner
    from edgedepth.verify.bench import environment, run_interleaved

    index = json.load(open(os.path.join(args.dir, "index.json")))
    work = "/tmp/gpu_attr"
    os.makedirs(work, exist_ok=True)
    files = {}
    if args.part == "pieces":
        for name, p in index["pieces"].items():
            if args.only and name not in args.only:
                continue
            for k, f in p["reps"].items():
                files[f"{name}_x{k}"] = f
        files["model_shipped"] = index["models"]["shipped"]
    else:
        files = {f"model_{name}": f for name, f in index["models"].items()}
        for name, f in index["models"].items():
            if f.get("int8_file"):
                files[f"model_{name} int8"] = {**f, "file": f["int8_file"]}
    report = json.load(open(args.out)) if os.path.isfile(args.out) else {
        "kind": "edgedepth.gpu_attribution", "environment": environment(threads=None), "index": index, "files": {}}
    first = os.path.join(work, "model_shipped.tflite")
    transport.fill_float(os.path.join(args.dir, index["models"]["shipped"]["file"]), first, seed=0)
    g = gpu_check(first)
    report["environment"]["gpu_adapter"] = g["adapter"]
    report["shipped_gpu_check"] = {k: v for k, v in g.items() if k != "output"}
    if not g["fully_delegated"]:      # no GPU, or the driver was not found: stop before spending device time
        raise SystemExit(f"the shipped model is not fully on the GPU here: {g['error']} (adapter: {g['adapter']})")
    runners = {}
    for key, f in files.items():
        path = os.path.join(work, key + ".tflite")
        if f["file"].endswith(".gz"):          # INT8 timing twin: unzip, refill int8 weights from a seed
            with gzip.open(os.path.join(args.dir, f["file"]), "rb") as src, open(path + ".z", "wb") as dst:
                shutil.copyfileobj(src, dst)
            transport.fill_int8(path + ".z", path, seed=0)
        else:
            transport.fill_float(os.path.join(args.dir, f["file"]), path, seed=0)
        x = np.random.default_rng(1).standard_normal(f["input"], dtype=np.float32)
        entry = report["files"][key] = {}
        for backend in ("gpu", "gpu-fp16"):
            try:
                r = LiteRTRunner(path, backend=backend)
                y = r.run(x)
                entry[backend] = {"fully_accelerated": bool(r.fully_accelerated), "finite": bool(np.isfinite(y).all())}
            except Exception as e:  # noqa: BLE001 - recorded as data, the run goes on
                entry[backend] = {"fully_accelerated": False, "error": " ".join(str(e).split())[:300]}
                continue
            if entry[backend]["fully_accelerated"] and entry[backend]["finite"]:
                runners[f"{key} [{backend}]"] = _Fixed(r, x)
            else:
                r.close()
        print(key, entry, flush=True)
    if not runners:
        raise SystemExit("no file ran fully on the GPU: see the lines above")
    rounds, warmup, iters = args.method
    t = time.time()
    bench = run_interleaved({n: (lambda r=r: r) for n, r in runners.items()}, None, rounds=rounds, warmup=warmup,
                            iters=iters)
    report["bench" if args.part == "pieces" else "bench_models"] = bench
    print(f"timed {len(runners)} variants in {time.time() - t:.0f}s", flush=True)
    for n, s in bench["variants"].items():
        print(f"{n}: {s['median_ms']:.3f} ms", flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        json.dump(report, f, indent=1)
    os.replace(args.out + ".tmp", args.out)


def cpu(args) -> None:
    """The CPU side of every GPU rewrite: the shipped set with and without each rewrite named in ``--without``, FP32
    and dynamic INT8, converted here with real weights, timed on LiteRT CPU in one interleaved run, and compared with
    PyTorch FP32 on one photo (rel-L2).  Writes results/gpu_rewrites_cpu.json."""
    import tempfile

    from edgedepth.checkpoint import load_checkpoint
    from edgedepth.formats.tflite import convert_fp32, describe, quantize_int8
    from edgedepth.images import default_image_set
    from edgedepth.preprocess import preprocess
    from edgedepth.models import DEPTH_ANYTHING_V2
    from edgedepth.rewrites import PIPELINE, prepare
    from edgedepth.runtimes.litert import LiteRTRunner
    from edgedepth.verify.bench import environment, run_interleaved
    from edgedepth.verify.parity import rel_l2

    h, w = args.size
    ckpt = load_checkpoint(args.model, quiet=True)
    default = [r.name for r in PIPELINE if r.default and DEPTH_ANYTHING_V2 in r.families]
    sets = {"shipped": default, **{f"shipped-{n}": [r for r in default if r != n] for n in args.without}}
    item = default_image_set()[args.image]
    x = preprocess(item.load(), (h, w))
    import torch

    with torch.no_grad():
        ref = prepare(ckpt.model, h, w, ())[0](torch.from_numpy(x)).numpy()
    report = {"kind": "edgedepth.gpu_rewrites_cpu", "model": args.model, "size": [h, w], "threads": args.threads,
              "environment": environment(threads=args.threads), "image": item.id, "files": {}}
    variants = {}
    with tempfile.TemporaryDirectory(prefix="edgedepth-gpurw-") as tmp:
        for name, names in sets.items():
            module, _ = prepare(ckpt.model, h, w, names)
            fp32 = os.path.join(tmp, f"{name}_fp32.tflite")
            convert_fp32(module, h, w, fp32)
            int8 = os.path.join(tmp, f"{name}_int8.tflite")
            quantize_int8(fp32, int8)
            for prec, path in (("fp32", fp32), ("int8", int8)):
                r = LiteRTRunner(path, threads=args.threads)
                report["files"][f"{name} {prec}"] = {"ops": describe(path)["ops"], "rel_l2_vs_pytorch_fp32":
                                                     float(rel_l2(r.run(x), ref)), "rewrites": names}
                r.close()
                variants[f"{name} {prec}"] = (lambda p=path: LiteRTRunner(p, threads=args.threads))
            print(name, {k: v for k, v in report["files"].items() if k.startswith(name + " ")}, flush=True)
        rounds, warmup, iters = args.method
        report["bench"] = run_interleaved(variants, x, rounds=rounds, warmup=warmup, iters=iters)
    for n, v in report["bench"]["variants"].items():
        print(f"{n}: {v['median_ms']:.1f} ms", flush=True)
    with open(args.out + ".tmp", "w") as f:
        json.dump(report, f, indent=1)
    os.replace(args.out + ".tmp", args.out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--model", default="synthetic")
    b.add_argument("--size", default="518x686", type=lambda s: tuple(int(v) for v in s.split("x")))
    b.add_argument("--dir", default=DEV)
    b.add_argument("--only", nargs="*", help="build only these pieces / model variants")
    b.add_argument("--pieces-only", action="store_true", help="rebuild the pieces, keep the whole-model files")
    r = sub.add_parser("run")
    r.add_argument("--dir", default=DEV)
    r.add_argument("--out", default=os.path.join(os.environ.get("OUT", "out"), "gpu_attribution.json"))
    r.add_argument("--part", choices=("pieces", "models"), default="pieces")
    r.add_argument("--only", nargs="*", help="pieces part: time only these pieces (+ the shipped model)")
    r.add_argument("--method", default=(3, 5, 20), type=lambda s: tuple(int(v) for v in s.split(",")),
                   help="rounds,warmup,iters")
    c = sub.add_parser("cpu")
    c.add_argument("--model", default="synthetic")
    c.add_argument("--size", default="518x686", type=lambda s: tuple(int(v) for v in s.split("x")))
    c.add_argument("--without", nargs="*", default=["rank4_attention"])
    c.add_argument("--threads", type=int, default=2)
    c.add_argument("--image", type=int, default=20, help="index into the default image set (20 = chelsea/full)")
    c.add_argument("--method", default=(4, 2, 5), type=lambda s: tuple(int(v) for v in s.split(",")))
    c.add_argument("--out", default="benchmarks/results/gpu_rewrites_cpu.json")
    a = ap.parse_args()
    {"build": build, "run": run, "cpu": cpu}[a.cmd](a)


if __name__ == "__main__":
    main()
