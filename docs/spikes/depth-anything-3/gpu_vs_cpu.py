"""Run a .tflite on LiteRT CPU and GPU (enforce_f32, SwiftShader) with the same input; rel L2 per output."""
import os, sys, json, numpy as np
os.environ.setdefault("VK_ICD_FILENAMES", "/usr/lib/chromium/vk_swiftshader_icd.json")
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
from ai_edge_litert.options import CpuOptions, GpuOptions, Options
from ai_edge_litert import schema_py_generated as S
path = sys.argv[1]
m = S.ModelT.InitFromPackedBuf(open(path, "rb").read(), 0); sg = m.subgraphs[0]
ishape = [int(s) for s in sg.tensors[sg.inputs[0]].shape]
oshapes = [[int(s) for s in sg.tensors[i].shape] for i in sg.outputs]
x = np.random.default_rng(0).standard_normal(ishape).astype(np.float32)
def run(opts):
    cm = CompiledModel.from_file(path, options=opts)
    ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
    ib[0].write(x); cm.run_by_index(0, ib, ob)
    return [ob[i].read(int(np.prod(s)), np.float32).reshape(s) for i, s in enumerate(oshapes)]
cpu = run(Options(hardware_accelerators=HA.CPU, cpu_options=CpuOptions(num_threads=2)))
gpu = run(Options(hardware_accelerators=HA.GPU, gpu_options=GpuOptions(enforce_f32=True)))
for i, (c, g) in enumerate(zip(cpu, gpu)):
    e = float(np.linalg.norm(g - c) / np.linalg.norm(c))
    extra = ""
    if c.ndim == 3 and c.shape[1] > 2:
        tok = np.linalg.norm(g - c, axis=-1)[0] / np.linalg.norm(c, axis=-1)[0]
        extra = f" per-token relL2: token0={tok[0]:.3g} max(others)={tok[1:].max():.3g}"
    print(f"{os.path.basename(path)} output {i} {c.shape}: GPU vs CPU rel L2 = {e:.3g}{extra}")
