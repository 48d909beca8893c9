import sys, torch
sys.path.insert(0, "/tmp/da3_spike")
from build import build, randomize
import wrapper
H, W = [int(v) for v in sys.argv[1].split("x")]
net = randomize(build()).eval()
x = torch.randn(1, 3, H, W, generator=torch.Generator().manual_seed(3))
with torch.no_grad():
    ref = net(x[:, None])
    for v in sys.argv[2].split(","):
        d, c = wrapper.make(v, net, H, W).eval()(x)
        rd = float((d - ref.depth[:, 0]).norm() / ref.depth.norm()); rc = float((c - ref.depth_conf[:, 0]).norm() / ref.depth_conf.norm())
        print(f"{v:8s} {H}x{W}: max|dd|={float((d-ref.depth[:,0]).abs().max()):.3g} max|dc|={float((c-ref.depth_conf[:,0]).abs().max()):.3g} relL2 d={rd:.3g} c={rc:.3g}")
