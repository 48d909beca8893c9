"""Standalone repro for an upstream LiteRT bug report (no torch, no converter: the .tflite is written by hand).

Graph: one MUL.  input x: float32 [17, 32] (rank 2); constant c: float32 [1, 1, 32]; output: float32 [1, 17, 32].
TFLite broadcasting (numpy rules, implicit leading 1s) gives out[0, i, j] = x[i, j] * c[0, 0, j]; the CPU (XNNPACK)
does this.  The GPU accelerator (enforce_f32, fully delegated, no error) returns out[0, i, j] = x[0, j] * c[0, 0, j]
for every i: row 0 of the lower-rank operand is broadcast over the whole output.

Also: ADD / SUB / DIV the same way, a [1, 1, 1, 32] constant (rank-4 output), a full-size [1, 17, 32] constant,
and a rank-1 runtime input [32] against a rank-2/3 constant.  Same-rank operands are correct.

Run:  VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json python bisect_upstream_repro.py [MUL|ADD|SUB|DIV]
Needs: ai-edge-litert (tested 2.3.0), flatbuffers, numpy.
"""
import os, sys, tempfile
import numpy as np
import flatbuffers
from ai_edge_litert import schema_py_generated as S
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
from ai_edge_litert.options import CpuOptions, GpuOptions, Options

OPNAME = sys.argv[1] if len(sys.argv) > 1 else "MUL"
N, C = 17, 32
X_SHAPE, C_SHAPE, O_SHAPE = [N, C], [1, 1, C], [1, N, C]


def build(path, const):
    m = S.ModelT(); m.version = 3; m.description = "rank-promoting broadcast repro"
    oc = S.OperatorCodeT(); code = getattr(S.BuiltinOperator, OPNAME)
    oc.builtinCode = code; oc.deprecatedBuiltinCode = min(code, 127); oc.version = 1
    m.operatorCodes = [oc]
    cbuf = S.BufferT(); cbuf.data = np.frombuffer(const.astype("<f4").tobytes(), np.uint8)
    m.buffers = [S.BufferT(), S.BufferT(), cbuf, S.BufferT()]   # buffer 0 empty; runtime tensors without data
    def tensor(name, shape, buf):
        t = S.TensorT(); t.name = name; t.shape = shape; t.type = S.TensorType.FLOAT32; t.buffer = buf; return t
    sg = S.SubGraphT()
    sg.tensors = [tensor("x", X_SHAPE, 1), tensor("c", C_SHAPE, 2), tensor("out", O_SHAPE, 3)]
    sg.inputs, sg.outputs = [0], [2]
    op = S.OperatorT(); op.opcodeIndex = 0; op.inputs = [0, 1]; op.outputs = [2]
    opt_cls = {"MUL": ("MulOptions", S.MulOptionsT), "ADD": ("AddOptions", S.AddOptionsT),
               "SUB": ("SubOptions", S.SubOptionsT), "DIV": ("DivOptions", S.DivOptionsT)}[OPNAME]
    op.builtinOptionsType = getattr(S.BuiltinOptions, opt_cls[0]); op.builtinOptions = opt_cls[1]()
    sg.operators = [op]; sg.name = "main"
    sig = S.SignatureDefT(); sig.signatureKey = "serving_default"; sig.subgraphIndex = 0
    ti = S.TensorMapT(); ti.name = "x"; ti.tensorIndex = 0
    to = S.TensorMapT(); to.name = "out"; to.tensorIndex = 2
    sig.inputs, sig.outputs = [ti], [to]
    m.subgraphs = [sg]; m.signatureDefs = [sig]
    b = flatbuffers.Builder(1024); b.Finish(m.Pack(b), file_identifier=b"TFL3")
    open(path, "wb").write(b.Output())


def run(path, x, gpu):
    opts = (Options(hardware_accelerators=HA.GPU, gpu_options=GpuOptions(enforce_f32=True)) if gpu else
            Options(hardware_accelerators=HA.CPU, cpu_options=CpuOptions(num_threads=1)))
    cm = CompiledModel.from_file(path, options=opts)
    if gpu:
        assert cm.is_fully_accelerated()
    ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
    ib[0].write(np.ascontiguousarray(x, np.float32)); cm.run_by_index(0, ib, ob)
    return ob[0].read(int(np.prod(O_SHAPE)), np.float32).reshape(O_SHAPE)


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    x = rng.standard_normal(X_SHAPE).astype(np.float32)
    c = (rng.standard_normal(C_SHAPE) + 2).astype(np.float32)
    ref = {"MUL": np.multiply, "ADD": np.add, "SUB": np.subtract, "DIV": np.divide}[OPNAME](x, c)  # numpy broadcast
    path = os.path.join(tempfile.mkdtemp(), f"rank_promote_{OPNAME.lower()}.tflite")
    build(path, c)
    cpu, gpu = run(path, x, False), run(path, x, True)
    rel = lambda a, b: float(np.linalg.norm(a - b) / np.linalg.norm(b))
    row0 = {"MUL": np.multiply, "ADD": np.add, "SUB": np.subtract, "DIV": np.divide}[OPNAME](
        np.broadcast_to(x[:1], x.shape), c)
    print(f"{OPNAME} x{X_SHAPE} (input) with const{C_SHAPE} -> {O_SHAPE}")
    print(f"  CPU vs numpy: rel-L2 {rel(cpu, ref):.3g}")
    print(f"  GPU vs numpy: rel-L2 {rel(gpu, ref):.3g}")
    print(f"  GPU vs 'row 0 of x broadcast over all rows': rel-L2 {rel(gpu, row0):.3g}")
    sys.exit(0 if rel(gpu, ref) < 1e-5 else 1)
