"""Which binary ops / shapes hit the rank-promoting broadcast bug: input x is the model input of the given rank,
the other operand a constant (or a second slice of x); every case prints GPU-vs-CPU rel-L2."""
import sys, numpy as np, torch, torch.nn as nn
sys.path.insert(0, __import__("os").path.dirname(__file__))
from bisect_common import convert, run, rel

torch.manual_seed(0)
ONLY = sys.argv[1].split(",") if len(sys.argv) > 1 else None
def case(name, fn, xshape, const_shape):
    if ONLY and name not in ONLY: return
    c = torch.randn(*const_shape) + 2.0
    class M(nn.Module):
        def __init__(s): super().__init__(); s.register_buffer("c", c)
        def forward(s, x): return fn(x, s.c)
    m = M().eval(); x = torch.randn(*xshape)
    p = convert(m, x, "var_" + name)
    cpu, _ = run(p, x.numpy(), "cpu"); gpu, full = run(p, x.numpy(), "gpu")
    with torch.no_grad(): t = m(x).numpy()
    print(f"[{name}] x{list(xshape)} const{list(const_shape)} -> {list(t.shape)} full_gpu={full} "
          f"gpu-vs-cpu={rel(gpu[0], cpu[0]):.3g} cpu-vs-torch={rel(cpu[0], t.reshape(cpu[0].shape)):.2g}", flush=True)

mul = lambda x, c: x * c
add = lambda x, c: x + c
sub = lambda x, c: x - c
div = lambda x, c: x / c
case("mul_N17_C32_r2_r3", mul, (17, 32), (1, 1, 32))
case("mul_N16_C32_r2_r3", mul, (16, 32), (1, 1, 32))
case("mul_N17_C384_r2_r3", mul, (17, 384), (1, 1, 384))
case("add_N17_C32_r2_r3", add, (17, 32), (1, 1, 32))
case("sub_N17_C32_r2_r3", sub, (17, 32), (1, 1, 32))
case("div_N17_C32_r2_r3", div, (17, 32), (1, 1, 32))
case("mul_r2_r4", mul, (17, 32), (1, 1, 1, 32))
case("mul_r3_r4", mul, (1, 17, 32), (1, 1, 1, 32))
case("mul_r2_r2", mul, (17, 32), (1, 32))
case("mul_r2_fullr3", mul, (17, 32), (1, 17, 32))
case("mul_r1_r2", mul, (32,), (17, 32))
case("mul_r1_r3", mul, (32,), (1, 17, 32))
case("mul_r2_r3_Nbatch", mul, (17, 32), (2, 1, 32))
case("mul_r3_constr1", mul, (1, 17, 32), (32,))
case("mul_r3_constr2", mul, (1, 17, 32), (17, 32))
case("add_r3_constr2", add, (1, 17, 32), (17, 32))
case("mul_r3_rowconst", mul, (1, 17, 32), (17, 1))
case("mul_r2col_r3", mul, (17, 1), (1, 17, 32))
