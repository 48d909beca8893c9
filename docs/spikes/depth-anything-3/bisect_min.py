"""Minimal repros of the rank-promoting broadcast MUL/ADD: a rank-2 [N, C] tensor times a rank-3 [1, 1, C] constant
-> [1, N, C]. Prints GPU-vs-CPU rel-L2 and what the GPU output matches."""
import sys, numpy as np, torch, torch.nn as nn
sys.path.insert(0, __import__("os").path.dirname(__file__))
from bisect_common import convert, run, ops, rel

N = int(sys.argv[1]) if len(sys.argv) > 1 else 17
C = int(sys.argv[2]) if len(sys.argv) > 2 else 32
torch.manual_seed(0)
g = torch.randn(C)

class Rank2In(nn.Module):        # model input already rank 2
    def __init__(s): super().__init__(); s.register_buffer("g", g.reshape(1, 1, C))
    def forward(s, x): return x * s.g
class ReshapeMul(nn.Module):     # [1,N,C] -> reshape [N,C] -> MUL [1,1,C]
    def __init__(s): super().__init__(); s.register_buffer("g", g.reshape(1, 1, C))
    def forward(s, x): return x.reshape(N, C) * s.g
class ReshapeMulRank1(nn.Module):  # same, constant given as rank 1 [C]: torch output [N,C] (no rank promotion)
    def __init__(s): super().__init__(); s.register_buffer("g", g)
    def forward(s, x): return x.reshape(N, C) * s.g
class ReshapeAdd(nn.Module):     # ADD instead of MUL, [1,1,C] constant
    def __init__(s): super().__init__(); s.register_buffer("g", g.reshape(1, 1, C))
    def forward(s, x): return x.reshape(N, C) + s.g
class ReshapeMulTensor(nn.Module):  # rank-2 [N,C] times a rank-3 *runtime* tensor [1,1,C]
    def forward(s, x): return x.reshape(N, C) * x[:, :1, :]
class LinearLS(nn.Module):       # the DA3 pattern: nn.Linear on [1,N,C] (addmm on [N,C]) then LayerScale gamma [C]
    def __init__(s):
        super().__init__(); s.l = nn.Linear(C, C); s.gamma = nn.Parameter(g.clone())
    def forward(s, x): return s.l(x) * s.gamma

cases = dict(rank2in=(Rank2In, (N, C)), reshape_mul=(ReshapeMul, (1, N, C)), reshape_mul_rank1=(ReshapeMulRank1, (1, N, C)),
             reshape_add=(ReshapeAdd, (1, N, C)), reshape_mul_tensor=(ReshapeMulTensor, (1, N, C)),
             linear_ls=(LinearLS, (1, N, C)))
for name, (cls, shp) in cases.items():
    m = cls().eval(); x = torch.randn(*shp)
    p = convert(m, x, f"min_{name}_N{N}_C{C}")
    cpu, _ = run(p, x.numpy(), "cpu"); gpu, full = run(p, x.numpy(), "gpu")
    c, gg = cpu[0].reshape(N, C), gpu[0].reshape(N, C)
    with torch.no_grad(): t = m(x).numpy().reshape(N, C)
    tok = np.linalg.norm(gg - c, axis=-1) / np.linalg.norm(c, axis=-1)
    bad = [i for i in range(N) if tok[i] > 1e-5]
    # hypothesis: every output row i on the GPU = row 0 of the rank-2 operand times the constant?
    hint = ""
    if bad:
        row0 = np.allclose(gg, np.broadcast_to(c[0], c.shape), rtol=1e-5, atol=1e-6)
        hint = f" gpu rows == cpu row0 broadcast: {row0}"
    oplist = [(o[0], [list(map(int, s)) for s in o[1] if s is not None], [list(map(int, s)) for s in o[2]]) for o in ops(p)]
    print(f"[{name}] full_gpu={full} gpu-vs-cpu={rel(gg, c):.3g} cpu-vs-torch={rel(c, t):.2g} wrong tokens={bad[:8]}{'...' if len(bad) > 8 else ''}{hint}")
    print("     ops:", oplist, flush=True)
