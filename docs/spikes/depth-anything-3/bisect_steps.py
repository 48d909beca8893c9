"""Step-by-step bisection of a DA3/DINOv2 ViT block at tiny width: each piece converted alone, GPU vs CPU rel-L2.
Usage: python bisect_steps.py [C] [heads] [N]   (defaults 32 2 17: CLS + 4x4 patches, as at 56x56)"""
import sys, torch, torch.nn as nn, torch.nn.functional as F
sys.path.insert(0, __import__("os").path.dirname(__file__))
from bisect_common import check
from depth_anything_3.model.dinov2.layers.block import Block

C = int(sys.argv[1]) if len(sys.argv) > 1 else 32
H = int(sys.argv[2]) if len(sys.argv) > 2 else 2
N = int(sys.argv[3]) if len(sys.argv) > 3 else 17
only = sys.argv[4].split(",") if len(sys.argv) > 4 else None
torch.manual_seed(0)
x = torch.randn(1, N, C)

def rnd(m):
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n.endswith("gamma"): p.copy_(0.1 + 0.05 * torch.randn(p.shape, generator=g))
            elif "norm" in n and n.endswith("weight"): p.copy_(1 + 0.1 * torch.randn(p.shape, generator=g))
            elif p.ndim == 1: p.copy_(0.02 * torch.randn(p.shape, generator=g))
            else: p.copy_(torch.randn(p.shape, generator=g) / p[0].numel() ** 0.5)
    return m.eval()

blk = rnd(Block(C, H, mlp_ratio=4.0, qkv_bias=True, init_values=1.0, ln_eps=1e-6))

class Lin(nn.Module):            # nn.Linear alone
    def __init__(s): super().__init__(); s.l = blk.mlp.fc1
    def forward(s, x): return s.l(x)
class LinRes(nn.Module):         # x + Linear(x)  (square linear, like proj / fc2 + residual)
    def __init__(s): super().__init__(); s.l = blk.attn.proj
    def forward(s, x): return x + s.l(x)
class LinLSRes(nn.Module):       # x + gamma * Linear(x)
    def __init__(s): super().__init__(); s.l = blk.attn.proj; s.ls = blk.ls1
    def forward(s, x): return x + s.ls(s.l(x))
class LN(nn.Module):
    def __init__(s): super().__init__(); s.n = blk.norm1
    def forward(s, x): return s.n(x)
class GELU(nn.Module):
    def forward(s, x): return F.gelu(x)
class MLP(nn.Module):
    def __init__(s): super().__init__(); s.m = blk.mlp
    def forward(s, x): return s.m(x)
class FFNRes(nn.Module):         # x + ls2(mlp(norm2(x)))
    def __init__(s): super().__init__(); s.b = blk
    def forward(s, x): return x + s.b.ls2(s.b.mlp(s.b.norm2(x)))
class QKV(nn.Module):            # qkv linear + channel slices
    def __init__(s): super().__init__(); s.q = blk.attn.qkv
    def forward(s, x):
        t = s.q(x); return t[..., :C], t[..., C:2 * C], t[..., 2 * C:]
class Attn(nn.Module):           # the spike's GPUAttention (rank-4, eager softmax), no RoPE/QK-norm
    def __init__(s): super().__init__(); s.a = blk.attn
    def forward(s, x):
        B, N_, _ = x.shape; d = C // H; a = s.a
        t = a.qkv(x)
        hd = lambda u: u.reshape(B, N_, H, d).permute(0, 2, 1, 3)
        q, k, v = hd(t[..., :C]), hd(t[..., C:2 * C]), hd(t[..., 2 * C:])
        w = torch.softmax((q * a.scale) @ k.transpose(-2, -1), dim=-1)
        return a.proj((w @ v).permute(0, 2, 1, 3).reshape(B, N_, C))
class AttnRes(nn.Module):
    def __init__(s): super().__init__(); s.at = Attn()
    def forward(s, x): return x + blk.ls1(s.at(blk.norm1(x)))
class Block0(nn.Module):
    def __init__(s): super().__init__(); s.at = AttnRes(); s.f = FFNRes()
    def forward(s, x): return s.f(s.at(x))
class PkgBlock(nn.Module):       # package Block with its own Attention (SDPA, 5-D reshape)
    def __init__(s): super().__init__(); s.b = blk
    def forward(s, x): return s.b(x)

steps = dict(lin=Lin, linres=LinRes, linlsres=LinLSRes, ln=LN, gelu=GELU, mlp=MLP, ffnres=FFNRes, qkv=QKV,
             attn=Attn, attnres=AttnRes, block=Block0, pkgblock=PkgBlock)
for name, cls in steps.items():
    if only and name not in only: continue
    try:
        check(cls(), x, f"{name}_C{C}_h{H}_N{N}")
    except Exception as e:
        print(f"[{name}] ERROR {type(e).__name__}: {str(e)[:300]}", flush=True)
