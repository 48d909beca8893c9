"""List ops of given types in a .tflite with in/out shapes and output tensor names (schema bindings)."""
import sys, re, collections
from ai_edge_litert import schema_py_generated as S
path, types = sys.argv[1], set(sys.argv[2].split(","))
m = S.ModelT.InitFromPackedBuf(open(path, "rb").read(), 0)
names = {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}
sg = m.subgraphs[0]
def tn(i):
    t = sg.tensors[i]; n = t.name.decode()
    n = re.sub(r"depth_anything_3\.[\w.]*\.", "", n).replace("wrapper.", "")
    return n
rows = collections.Counter()
for k, op in enumerate(sg.operators):
    oc = m.operatorCodes[op.opcodeIndex]; name = names.get(max(oc.builtinCode, oc.deprecatedBuiltinCode))
    if name in types or "ALL" in types:
        ins = [list(sg.tensors[i].shape) if i >= 0 else None for i in op.inputs]
        const = [i >= 0 and bool(m.buffers[sg.tensors[i].buffer].data is not None or m.buffers[sg.tensors[i].buffer].offset) for i in op.inputs]
        outs = [list(sg.tensors[i].shape) for i in op.outputs]
        extra = ""
        if name == "TRANSPOSE":
            b = m.buffers[sg.tensors[op.inputs[1]].buffer]
            import numpy as np
            if b.data is not None: extra = " perm=" + str(np.frombuffer(bytes(b.data), np.int32).tolist())
        line = f"{name:14s} in={ins} const={const} out={outs}{extra} :: {tn(op.outputs[0])[:150]}"
        if "--uniq" in sys.argv: rows[re.sub(r'_\d+', '_N', line)] += 1
        else: print(k, line)
for l, n in rows.most_common(): print(n, l)
