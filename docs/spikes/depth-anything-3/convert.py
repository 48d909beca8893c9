"""Convert a DA3 mono wrapper with litert_torch, describe the .tflite, check CPU parity.
usage: convert.py HxW VARIANT OUT.tflite   (VARIANT: plain | <name in wrapper.py VARIANTS>)"""
import sys, time, json, traceback
import numpy as np, torch
sys.path.insert(0, "/tmp/da3_spike")
from build import build, randomize
import wrapper

size, variant, out = sys.argv[1], sys.argv[2], sys.argv[3]
H, W = [int(v) for v in size.split("x")]
net = randomize(build()).eval()
mod = wrapper.make(variant, net, H, W).eval()
rng = np.random.default_rng(0)
x = torch.from_numpy(rng.standard_normal((1, 3, H, W), dtype=np.float32))
with torch.no_grad():
    ref_pkg = DA3 = None
    base = wrapper.DA3MonoPlain(net).eval()
    d0, c0 = base(x)
    d1, c1 = mod(x)
    print(f"wrapper[{variant}] vs package forward: max|dd|={float((d1-d0).abs().max()):.3g} max|dc|={float((c1-c0).abs().max()):.3g}")
t = time.time()
import litert_torch
try:
    with torch.no_grad():
        em = litert_torch.convert(mod, (x,))
except Exception as e:
    traceback.print_exc()
    print("CONVERT FAILED after %.0fs: %s: %s" % (time.time() - t, type(e).__name__, str(e)[:2000]))
    sys.exit(1)
print("converted in %.0fs" % (time.time() - t))
em.export(out)
sys.path.insert(0, "/work/main/src")
from edgedepth.formats.tflite import describe
info = describe(out)
print(json.dumps({k: info[k] for k in ("bytes", "ops", "op_histogram", "inputs", "outputs")}, indent=None))
# CPU parity (CompiledModel, CPU, 2 threads)
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
from ai_edge_litert.options import CpuOptions, Options
cm = CompiledModel.from_file(out, options=Options(hardware_accelerators=HA.CPU, cpu_options=CpuOptions(num_threads=2)))
ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
ib[0].write(x.numpy())
cm.run_by_index(0, ib, ob)
outs = [ob[i].read(H * W, np.float32).reshape(1, H, W) for i in range(len(ob))]
refs = [d1.numpy(), c1.numpy()]
# match outputs by name order from describe
for i, (o, meta) in enumerate(zip(outs, info["outputs"])):
    errs = [np.linalg.norm(o - r) / np.linalg.norm(r) for r in refs]
    print(f"output {i} {meta['name']} {meta['shape']}: rel L2 vs depth={errs[0]:.3g} vs conf={errs[1]:.3g}")
np.save(out + ".x.npy", x.numpy()); np.save(out + ".ref.npy", np.stack(refs))
