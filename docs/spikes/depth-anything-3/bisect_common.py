"""Shared helpers for the DA3 GPU-vs-CPU bisection: convert a tiny module, run it on LiteRT CPU and GPU
(enforce_f32, SwiftShader), report rel-L2 and per-token error; list FULLY_CONNECTED keep_num_dims / ranks."""
import os, sys, numpy as np, torch
os.environ.setdefault("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json")
torch.set_num_threads(1)
OUT = os.environ.get("BISECT_OUT", "/tmp/bisect")
os.makedirs(OUT, exist_ok=True)

def convert(mod, x, name):
    import litert_torch
    path = os.path.join(OUT, name + ".tflite")
    litert_torch.convert(mod.eval(), (x,)).export(path)
    return path

def run(path, x, backend):
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
    from ai_edge_litert.options import CpuOptions, GpuOptions, Options
    from ai_edge_litert import schema_py_generated as S
    m = S.ModelT.InitFromPackedBuf(open(path, "rb").read(), 0); sg = m.subgraphs[0]
    oshapes = [[int(s) for s in sg.tensors[i].shape] for i in sg.outputs]
    if backend == "cpu":
        opts = Options(hardware_accelerators=HA.CPU, cpu_options=CpuOptions(num_threads=1))
    else:
        opts = Options(hardware_accelerators=HA.GPU, gpu_options=GpuOptions(enforce_f32=True))
    cm = CompiledModel.from_file(path, options=opts)
    full = bool(cm.is_fully_accelerated()) if backend == "gpu" else None
    ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
    ib[0].write(np.ascontiguousarray(x, np.float32)); cm.run_by_index(0, ib, ob)
    return [ob[i].read(int(np.prod(s)), np.float32).reshape(s) for i, s in enumerate(oshapes)], full

def ops(path):
    """[(opname, in_shapes, out_shapes, options-summary)] for the file's main subgraph."""
    from ai_edge_litert import schema_py_generated as S
    m = S.ModelT.InitFromPackedBuf(open(path, "rb").read(), 0); sg = m.subgraphs[0]
    names = {v: k for k, v in S.BuiltinOperator.__dict__.items() if not k.startswith("_")}
    res = []
    for op in sg.operators:
        code = m.operatorCodes[op.opcodeIndex]
        nm = names.get(max(code.builtinCode, code.deprecatedBuiltinCode), "?")
        ins = [list(sg.tensors[i].shape) if i >= 0 else None for i in op.inputs]
        outs = [list(sg.tensors[i].shape) for i in op.outputs]
        extra = ""
        if nm == "FULLY_CONNECTED":
            extra = f"keep_num_dims={op.builtinOptions.keepNumDims}"
        res.append((nm, ins, outs, extra))
    return res

def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))

def check(mod, x, name, show_ops=False, torch_ref=True):
    """Convert, run CPU and GPU; print and return GPU-vs-CPU rel-L2 (first output)."""
    path = convert(mod, x, name)
    xn = x.numpy()
    cpu, _ = run(path, xn, "cpu")
    gpu, full = run(path, xn, "gpu")
    msgs = []
    worst = 0.0
    for i, (c, g) in enumerate(zip(cpu, gpu)):
        e = rel(g, c); worst = max(worst, e)
        extra = ""
        if c.ndim == 3 and c.shape[1] > 1:
            tok = np.linalg.norm(g - c, axis=-1)[0] / (np.linalg.norm(c, axis=-1)[0] + 1e-30)
            extra = f" tok0={tok[0]:.2g} max(other tok)={tok[1:].max():.2g}"
        msgs.append(f"out{i}{list(c.shape)} gpu-vs-cpu={e:.3g}{extra}")
    if torch_ref:
        with torch.no_grad():
            t = mod(x); t = t if isinstance(t, (tuple, list)) else (t,)
        msgs.append("cpu-vs-torch=%.2g" % rel(cpu[0], t[0].numpy().reshape(cpu[0].shape)))
    fcs = [(o[3], len(o[1][0]), len(o[2][0])) for o in ops(path) if o[0] == "FULLY_CONNECTED"]
    fc = ""
    if fcs:   # FC summary: how many, how many drop rank (keep_num_dims=False 3->2) or take a rank-2 input
        fc = (f" | FC: {len(fcs)}, rank-dropping {sum(f[0].endswith('False') for f in fcs)}, "
              f"rank-2 input {sum(f[1] == 2 for f in fcs)}")
    print(f"[{name}] full_gpu={full} " + " | ".join(msgs) + fc, flush=True)
    if show_ops:
        for o in ops(path):
            print("    ", o)
    return worst

ELEMENTWISE = {"ADD", "SUB", "MUL", "DIV", "SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM", "POW", "FLOOR_DIV",
               "LESS", "GREATER", "EQUAL", "NOT_EQUAL", "LESS_EQUAL", "GREATER_EQUAL", "SELECT_V2", "LOGICAL_AND"}

def rank_promoting(path):
    """Elementwise ops with an operand of lower rank than the output that is more than a per-channel vector
    (the LiteRT GPU mis-broadcast found here). Returns [(index, op, in_shapes, out_shape)]."""
    bad = []
    for i, (nm, ins, outs, _) in enumerate(ops(path)):
        if nm not in ELEMENTWISE:
            continue
        R = len(outs[0])
        s = [int(v) for v in ins[0]]
        # measured: only the FIRST operand matters (a lower-rank second operand is broadcast correctly)
        if len(s) < R and int(np.prod(s)) > 1:   # lower rank and not a scalar
            bad.append((i, nm, [[int(v) for v in t] for t in ins if t is not None], [int(v) for v in outs[0]]))
    return bad

if __name__ == "__main__" and len(sys.argv) > 2 and sys.argv[1] == "lint":
    for p in sys.argv[2:]:
        b = rank_promoting(p)
        print(f"{p}: {len(b)} rank-promoting elementwise ops")
        for r in b[:40]:
            print("   ", r)
