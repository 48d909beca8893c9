"""Move an FP32 .tflite to a machine with a small transfer limit (the lent H200 takes 64 MiB per call).

The dynamic-INT8 file has the same graph as its FP32 source (``dynamic_wi8_afp32`` only changes weight types), so:
``strip`` writes the FP32 graph with its large float buffers emptied (≈0.6 MB instead of 99 MB), and ``rebuild`` refills
each emptied buffer, on the other machine, from the INT8 file's same-named tensor, dequantised.  The result has the
FP32 file's exact graph, op list and shapes, and weights equal to the originals rounded to 8 bits: realistic values
for latency and for GPU-vs-CPU comparison there.  It is NOT the original file: PyTorch parity of the original is
measured where the original is.

The same trick serves the precision ladder: ``strip`` also empties FLOAT16 weights (the fp16 file) and ``fill_float``
refills them in their own type; ``zero_int8`` / ``fill_int8`` cover INT8 and packed INT4 weights (int4 file).
"""

from __future__ import annotations

import json

import numpy as np

from ...errors import EdgedepthError
from ...fsutil import atomic_path


STRIPPED_KEY = "edgedepth_stripped_tensors"


def load_model(path: str):
    """``(schema module, ModelT)`` of a .tflite (ai-edge-litert's schema bindings, object API)."""
    from ai_edge_litert import schema_py_generated as S

    return S, S.ModelT.InitFromPackedBuf(open(path, "rb").read(), 0)


def save_model(model, path: str) -> None:
    """Serialise a ModelT to ``path`` (TFL3 file identifier)."""
    import flatbuffers

    b = flatbuffers.Builder(1 << 20)
    b.Finish(model.Pack(b), file_identifier=b"TFL3")
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        f.write(b.Output())


def _buffer_bytes(b, data: bytes) -> bytes | None:
    """A buffer's bytes: inline data, or stored after the flatbuffer at offset/size (None when empty)."""
    if b.data is not None:
        return np.asarray(b.data, np.uint8).tobytes()
    return data[b.offset:b.offset + b.size] if b.offset else None


def _inline(model, data: bytes) -> None:
    """Re-packing writes inline buffers only: pull the offset/size ones in."""
    for b in model.buffers:
        if b.offset and b.data is None:
            b.data = np.frombuffer(_buffer_bytes(b, data), np.uint8)
        b.offset = b.size = 0


def tensor_name(t) -> str:
    return t.name.decode() if isinstance(t.name, bytes) else t.name


def strip(fp32_path: str, out_path: str, min_bytes: int = 4096) -> int:
    """Empty every FLOAT32 / FLOAT16 buffer of at least ``min_bytes``; returns how many were emptied.  Buffers stored
    after the flatbuffer (offset/size, as ai-edge-quantizer writes them) are handled like inline ones."""
    S, model = load_model(fp32_path)
    data = open(fp32_path, "rb").read()
    names = []
    for t in model.subgraphs[0].tensors:
        buf = model.buffers[t.buffer]
        raw = _buffer_bytes(buf, data)
        if t.type in (S.TensorType.FLOAT32, S.TensorType.FLOAT16) and raw is not None and len(raw) >= min_bytes:
            buf.data, buf.offset, buf.size = None, 0, 0
            names.append(tensor_name(t))
    _inline(model, data)
    # the list of emptied tensors travels inside the file, as a metadata entry
    note = S.BufferT()
    note.data = np.frombuffer(json.dumps(names).encode(), np.uint8)
    model.buffers.append(note)
    meta = S.MetadataT()
    meta.name, meta.buffer = STRIPPED_KEY, len(model.buffers) - 1
    model.metadata = (model.metadata or []) + [meta]
    save_model(model, out_path)
    return len(names)


def _take_stripped(model, path: str) -> set:
    """Names of the tensors ``strip`` emptied; removes the note from ``model`` (its buffer is left empty: removing it
    would renumber buffers)."""
    entry = next((m for m in (model.metadata or []) if m.name in (STRIPPED_KEY, STRIPPED_KEY.encode())), None)
    if entry is None:
        raise EdgedepthError(f"{path!r} was not made by transport.strip (no {STRIPPED_KEY} metadata)")
    wanted = set(json.loads(np.asarray(model.buffers[entry.buffer].data, np.uint8).tobytes()))
    model.metadata = [m for m in model.metadata if m is not entry]
    model.buffers[entry.buffer].data = None
    return wanted


def _refill(stripped_path: str, out_path: str, values) -> int:
    """Refill every tensor ``strip`` emptied with ``values(S, tensor, shape) -> numpy array`` (its bytes are stored),
    in tensor order; write ``out_path``.  Returns how many were refilled (all of them, or an error)."""
    S, model = load_model(stripped_path)
    wanted = _take_stripped(model, stripped_path)
    filled = 0
    for t in model.subgraphs[0].tensors:
        if tensor_name(t) in wanted:
            shape = [int(s) for s in t.shape]
            vals = np.ascontiguousarray(values(S, t, shape))
            if vals.size != int(np.prod(shape)):
                raise EdgedepthError(f"tensor {tensor_name(t)!r}: {vals.size} values for shape {shape}")
            model.buffers[t.buffer].data = np.frombuffer(vals.tobytes(), np.uint8)
            filled += 1
    if filled != len(wanted):
        raise EdgedepthError(f"refilled {filled} of {len(wanted)} stripped tensors")
    save_model(model, out_path)
    return filled


def fill_float(stripped_path: str, out_path: str, seed: int = 0, std: float = 0.02) -> int:
    """Timing twin of a stripped float graph that has no INT8 twin: refill every emptied tensor with seeded normal
    values (``std``) in its own type (FLOAT32 or FLOAT16), in tensor order.  Same graph, ops and shapes; values are
    not the model's (latency only: GPU and CPU float kernels do not depend on them).  Returns how many were filled."""
    rng = np.random.default_rng(seed)

    def values(S, t, shape):
        dtype = np.float16 if t.type == S.TensorType.FLOAT16 else np.float32
        return (rng.standard_normal(int(np.prod(shape)), dtype=np.float32) * np.float32(std)).astype(dtype)
    return _refill(stripped_path, out_path, values)


def rebuild(stripped_path: str, int8_path: str, out_path: str) -> int:
    """Refill the stripped FP32 graph's empty weight buffers from the INT8 file; returns how many were refilled."""
    _, q = load_model(int8_path)
    qbytes = open(int8_path, "rb").read()
    by_name = {tensor_name(t): t for t in q.subgraphs[0].tensors}

    def values(S, t, shape):
        src = by_name.get(tensor_name(t))
        raw = _buffer_bytes(q.buffers[src.buffer], qbytes) if src is not None else None
        if raw is None:
            raise EdgedepthError(f"{int8_path!r} has no constant tensor {tensor_name(t)!r}: not made from this FP32 graph")
        if src.type == S.TensorType.FLOAT32:
            return np.frombuffer(raw, np.float32)
        if src.type != S.TensorType.INT8:
            raise EdgedepthError(f"tensor {tensor_name(t)!r}: unexpected type {src.type} in {int8_path!r}")
        qp = src.quantization
        scale = np.asarray(qp.scale, np.float32)
        zero = np.asarray(qp.zeroPoint, np.float32) if qp.zeroPoint is not None else np.zeros_like(scale)
        axis_shape = [1] * len(shape)
        if scale.size > 1:
            axis_shape[qp.quantizedDimension] = scale.size
        ints = np.frombuffer(raw, np.int8)
        if ints.size != int(np.prod(shape)):
            raise EdgedepthError(f"tensor {tensor_name(t)!r}: {ints.size} values for shape {shape}")
        return ((ints.reshape(shape).astype(np.float32) - zero.reshape(axis_shape)) * scale.reshape(axis_shape)
                ).astype(np.float32)
    return _refill(stripped_path, out_path, values)


def _rewrite_int8(path: str, out_path: str, values) -> int:
    """Replace every INT8 / INT4 (packed) constant tensor's bytes with ``values(n_bytes) -> uint8 array``; returns
    how many.  Any byte is a valid int8 or pair of int4 values."""
    S, model = load_model(path)
    data = open(path, "rb").read()
    targets = []
    for t in model.subgraphs[0].tensors:
        b = model.buffers[t.buffer]
        raw = _buffer_bytes(b, data) if t.type in (S.TensorType.INT8, S.TensorType.INT4) else None
        if raw is not None:
            targets.append((b, len(raw)))
    _inline(model, data)
    for b, n in targets:
        b.data = values(n)
    save_model(model, out_path)
    return len(targets)


def zero_int8(int8_path: str, out_path: str) -> int:
    """Timing twin of an INT8 file: every int8 weight set to 0 (scales, float tensors and graph kept), so the file
    compresses to a few MB.  Only for latency elsewhere (``fill_int8`` there): int8 GEMM time does not depend on
    values.  Returns how many buffers were zeroed."""
    return _rewrite_int8(int8_path, out_path, lambda n: np.zeros(n, np.uint8))


def fill_int8(zeroed_path: str, out_path: str, seed: int = 0) -> int:
    """Refill a ``zero_int8`` twin's int8 weights with seeded uniform values in [-127, 127]; returns buffers filled."""
    rng = np.random.default_rng(seed)
    return _rewrite_int8(zeroed_path, out_path, lambda n: rng.integers(-127, 128, n, dtype=np.int8).view(np.uint8))



def one_op_model(path: str, op: str, a_shape, b_shape, out_shape, b_const=None) -> None:
    """A one-op .tflite (``op`` = ADD / MUL / SUB / DIV) written with ai-edge-litert's schema bindings (object API):
    ``out = op(a, b)``, ``b`` a constant when ``b_const`` is given, else a second runtime input.  For probing a
    runtime's elementwise kernels (formats.tflite._gpu_hazard, benchmarks/gpu_hazards.py)."""
    from ai_edge_litert import schema_py_generated as S

    m = S.ModelT()
    m.version = 3
    code = getattr(S.BuiltinOperator, op)
    oc = S.OperatorCodeT()
    oc.builtinCode, oc.deprecatedBuiltinCode, oc.version = code, min(code, 127), 1
    m.operatorCodes = [oc]
    m.buffers = [S.BufferT() for _ in range(4)]
    if b_const is not None:
        m.buffers[2].data = np.frombuffer(b_const.astype("<f4").tobytes(), np.uint8)

    def tensor(name, shape, buf):
        t = S.TensorT()
        t.name, t.shape, t.type, t.buffer = name, list(shape), S.TensorType.FLOAT32, buf
        return t

    sg = S.SubGraphT()
    sg.tensors = [tensor("a", a_shape, 1), tensor("b", b_shape, 2), tensor("out", out_shape, 3)]
    sg.inputs, sg.outputs, sg.name = ([0] if b_const is not None else [0, 1]), [2], "main"
    o = S.OperatorT()
    o.opcodeIndex, o.inputs, o.outputs = 0, [0, 1], [2]
    opts = f"{op.capitalize()}Options"
    o.builtinOptionsType, o.builtinOptions = getattr(S.BuiltinOptions, opts), getattr(S, opts + "T")()
    sg.operators = [o]
    sig = S.SignatureDefT()
    sig.signatureKey, sig.subgraphIndex = "serving_default", 0

    def tmap(i):
        t = S.TensorMapT()
        t.name, t.tensorIndex = sg.tensors[i].name, i
        return t

    sig.inputs, sig.outputs = [tmap(i) for i in sg.inputs], [tmap(2)]
    m.subgraphs, m.signatureDefs = [sg], [sig]
    save_model(m, path)


if __name__ == "__main__":
    import sys

    cmd, *a = sys.argv[1:]
    print({"strip": strip, "rebuild": rebuild, "fill_float": fill_float, "zero_int8": zero_int8,
           "fill_int8": fill_int8}[cmd](*a))

