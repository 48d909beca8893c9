"""Rewrites that avoid the GPU mis-broadcast, on DA3MonoGPU (wrapper.py) and on one tiny block.
  fold   : LayerScale gamma folded into attn.proj / mlp.fc2 rows (edgedepth's fold_layerscale maths), ls -> Identity
  rankfc : every nn.Linear of the ViT -> F.linear(x, W) + b (edgedepth's RankPreservingLinear): FC keeps rank 3
  both   : fold + rankfc
Usage: python bisect_fix.py tiny|full|trunc1 none,fold,rankfc,both [H W]"""
import sys, os, copy, torch, torch.nn as nn
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bisect_common import check, rank_promoting, OUT

class RankPreservingLinear(nn.Module):       # same as edgedepth.rewrites._modules.RankPreservingLinear
    def __init__(self, src):
        super().__init__()
        self.weight = nn.Parameter(src.weight.detach().clone(), requires_grad=False)
        b = src.bias.detach().clone() if src.bias is not None else torch.zeros(src.out_features)
        self.bias = nn.Parameter(b, requires_grad=False)
    def forward(self, x):
        return nn.functional.linear(x, self.weight) + self.bias

@torch.no_grad()
def fold_layerscale(blocks):
    for blk in blocks:
        for ls_name, lin in (("ls1", blk.attn.proj), ("ls2", blk.mlp.fc2)):
            ls = getattr(blk, ls_name)
            if isinstance(ls, nn.Identity):
                continue
            g = ls.gamma.detach()
            lin.weight.mul_(g[:, None])
            if lin.bias is None:
                lin.bias = nn.Parameter(torch.zeros(lin.out_features), requires_grad=False)
            else:
                lin.bias.mul_(g)
            setattr(blk, ls_name, nn.Identity())

def rank_fc(mod):
    for name, ch in list(mod.named_children()):
        if type(ch) is nn.Linear:
            setattr(mod, name, RankPreservingLinear(ch))
        else:
            rank_fc(ch)

def apply(fix, blocks):
    if fix in ("fold", "both"):
        fold_layerscale(blocks)
    if fix in ("rankfc", "both"):
        for b in blocks:
            rank_fc(b)

if __name__ == "__main__":
    what = sys.argv[1]; fixes = sys.argv[2].split(",")
    Hh, Ww = (int(sys.argv[3]), int(sys.argv[4])) if len(sys.argv) > 4 else (56, 56)
    from build import build, randomize
    import wrapper
    torch.manual_seed(0)
    if what == "tiny":
        from depth_anything_3.model.dinov2.layers.block import Block
        C, h, N = 32, 2, 17
        base = randomize(Block(C, h, qkv_bias=True, init_values=1.0, ln_eps=1e-6).eval(), seed=1)
        base.attn = wrapper.GPUAttention(base.attn)
        x = torch.randn(1, N, C)
        for fix in fixes:
            blk = copy.deepcopy(base); apply(fix, [blk])
            with torch.no_grad(): d = (blk(x) - base(x)).norm() / base(x).norm()
            print(f"  torch rewrite vs original: rel-L2 {float(d):.2g}")
            check(blk, x, f"fix_tiny_{fix}")
            print("   lint:", len(rank_promoting(os.path.join(OUT, f"fix_tiny_{fix}.tflite"))), "rank-promoting first operands")
    else:
        net = randomize(build())
        x = torch.randn(1, 3, Hh, Ww)
        for fix in fixes:
            m = wrapper.GPUTrunc(net, Hh, Ww, 1) if what == "trunc1" else wrapper.DA3MonoGPU(net, Hh, Ww)
            mm = m.m if what == "trunc1" else m
            ref = copy.deepcopy(m)
            apply(fix, mm.blocks)
            with torch.no_grad():
                a, b = m(x)[0], ref(x)[0]
            print(f"  torch rewrite vs original gpufix: rel-L2 {float((a - b).norm() / b.norm()):.2g}", flush=True)
            name = f"fix_{what}_{fix}_{Hh}x{Ww}"
            check(m.eval(), x, name)
            print("   lint:", len(rank_promoting(os.path.join(OUT, name + ".tflite"))), "rank-promoting first operands", flush=True)
