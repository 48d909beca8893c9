"""Build DA3-Small from the package preset without weights / hub."""
import importlib, sys, time, traceback
import torch

def try_import(mod):
    try:
        importlib.import_module(mod); return "ok"
    except Exception as e:
        return f"{type(e).__name__}: {e}"

if __name__ == "__main__" and "--imports" in sys.argv:
    for m in ["depth_anything_3", "depth_anything_3.cfg", "depth_anything_3.model.da3",
              "depth_anything_3.model", "depth_anything_3.api", "depth_anything_3.registry",
              "depth_anything_3.model.cam_enc", "depth_anything_3.model.cam_dec",
              "depth_anything_3.model.dualdpt", "depth_anything_3.model.dinov2.dinov2"]:
        print(f"{m:45s} {try_import(m)}")
    sys.exit()

def build(seed=0):
    from depth_anything_3.cfg import create_object, load_config
    from depth_anything_3.registry import MODEL_REGISTRY
    cfg = load_config(MODEL_REGISTRY["da3-small"])
    torch.manual_seed(seed)
    net = create_object(cfg).eval()
    return net

def randomize(net, seed=0, std=0.02):
    """Seeded non-zero random weights (LayerNorm weights ~1, LayerScale ~0.1..)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in net.named_parameters():
            if name.endswith("gamma"):            # LayerScale
                p.copy_(0.1 + 0.05 * torch.randn(p.shape, generator=g))
            elif "norm" in name and name.endswith("weight") and p.ndim == 1:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
            elif p.ndim == 1:
                p.copy_(0.02 * torch.randn(p.shape, generator=g))
            else:
                fan_in = p[0].numel() if p.ndim > 1 else 1
                p.copy_(torch.randn(p.shape, generator=g) / fan_in ** 0.5)
    return net

if __name__ == "__main__":
    t = time.time(); net = build(); print("built in %.1fs" % (time.time() - t))
    print(type(net).__name__, {n: type(m).__name__ for n, m in net.named_children()})
    tot = sum(p.numel() for p in net.parameters())
    for n, m in net.named_children():
        print(f"  {n:10s} {sum(p.numel() for p in m.parameters())/1e6:7.2f} M params")
    print(f"  total      {tot/1e6:7.2f} M")
