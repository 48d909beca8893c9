"""Look inside an ExecuTorch ``.pte``: size, methods, I/O, delegates per backend, ops left to portable kernels.

Parsed with ExecuTorch's own serializer (``executorch.exir._serialize._deserialize_pte_binary``: the flatbuffer
schema bindings shipped in the wheel), never by hand.  A .pte keeps each delegate as an opaque payload, so the number
of graph nodes *inside* a delegate is not in the file: :func:`edgedepth.targets.executorch.export_executorch` counts
them on the edge program at export time; pass its result as ``export_stats`` to carry them into the description.
"""

from __future__ import annotations

import collections
import os

from .errors import EdgedepthError

PTE_IDENTIFIER = b"ET"          # flatbuffer file identifier "ET12" (schema version digits follow)
_DTYPES = {"FLOAT": "float32", "HALF": "float16", "DOUBLE": "float64", "BFLOAT16": "bfloat16", "LONG": "int64",
           "INT": "int32", "SHORT": "int16", "CHAR": "int8", "BYTE": "uint8", "BOOL": "bool"}


def _deserialize(data: bytes, path: str):
    from executorch.exir._serialize import _deserialize_pte_binary

    try:
        return _deserialize_pte_binary(data)
    except Exception as e:  # flatbuffers raises struct/index errors; segment checks raise ValueError
        raise EdgedepthError(f"model file {path!r} is corrupt or truncated "
                             f"({type(e).__name__}: {' '.join(str(e).split())[:160]})") from None


def check_pte_file(path: str) -> bytes:
    """Read ``path`` and check it is a complete ExecuTorch program; raise a one-line error naming the problem."""
    return _read_checked(path)[0]


def _read_checked(path: str):
    """(bytes, deserialized PTEFile) of a .pte that passed every check."""
    if not os.path.exists(path):
        raise EdgedepthError(f"model file {path!r} does not exist")
    if os.path.isdir(path):
        raise EdgedepthError(f"model file {path!r} is a folder")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) == 0:
        raise EdgedepthError(f"model file {path!r} is empty (0 bytes)")
    if len(data) < 8 or data[4:6] != PTE_IDENTIFIER:
        raise EdgedepthError(f"{path!r} is not an ExecuTorch program (no ET.. flatbuffer identifier)")
    _check_extent(data, path)
    pte = _deserialize(data, path)
    if not pte.program.execution_plan:
        raise EdgedepthError(f"model file {path!r} has no method")
    return data, pte


def _check_extent(data: bytes, path: str) -> None:
    """The extended header says how long the flatbuffer and the segments are: a shorter file was truncated."""
    from executorch.exir._serialize._program import _get_extended_header

    eh = _get_extended_header(data)
    if eh is None:
        return
    end = max(eh.program_size, eh.segment_base_offset + eh.segment_data_size if eh.segment_base_offset else 0)
    if end > len(data):
        raise EdgedepthError(f"model file {path!r} is truncated (its header says {end} bytes, file has {len(data)})")


def _tensor_info(value) -> dict:
    from executorch.exir.schema import Tensor

    t = value.val
    if not isinstance(t, Tensor):
        return {"kind": type(t).__name__}
    name = t.scalar_type.name
    return {"shape": [int(s) for s in t.sizes], "dtype": _DTYPES.get(name, name.lower())}


def describe_pte(path: str, export_stats: dict | None = None) -> dict:
    """Static description of a .pte (no runtime needed).

    Keys: path, bytes, methods, inputs/outputs ([{shape, dtype}] of ``forward``), delegated_subgraphs {backend id: n},
    delegate_bytes {backend id: payload bytes}, kernel_calls (instructions run by portable CPU kernels, i.e. not
    delegated), delegate_calls, non_delegated_ops {op: n}, constant_bytes, named_data_bytes; plus ``export`` (edge-level
    delegated/non-delegated node counts) when ``export_stats`` is given.
    """
    from executorch.exir.schema import DataLocation, DelegateCall, KernelCall

    data, pte = _read_checked(path)
    prog = pte.program
    plans = {p.name: p for p in prog.execution_plan}
    plan = plans.get("forward") or prog.execution_plan[0]
    subgraphs: collections.Counter = collections.Counter()
    payload: collections.Counter = collections.Counter()
    for d in plan.delegates:
        subgraphs[d.id] += 1
        if d.processed.location == DataLocation.INLINE:
            payload[d.id] += len(prog.backend_delegate_data[d.processed.index].data)
    kernel_ops: collections.Counter = collections.Counter()
    delegate_calls = 0
    for chain in plan.chains:
        for ins in chain.instructions:
            a = ins.instr_args
            if isinstance(a, KernelCall):
                op = plan.operators[a.op_index]
                kernel_ops[op.name + (f".{op.overload}" if op.overload else "")] += 1
            elif isinstance(a, DelegateCall):
                delegate_calls += 1
    named = 0
    if pte.named_data is not None:
        named = sum(len(b) for b in pte.named_data.buffers)
    info = {
        "path": path,
        "bytes": len(data),
        "format": "executorch-pte " + data[4:8].decode("ascii", "replace"),
        "methods": sorted(plans),
        "inputs": [_tensor_info(plan.values[i]) for i in plan.inputs],
        "outputs": [_tensor_info(plan.values[i]) for i in plan.outputs],
        "delegated_subgraphs": dict(sorted(subgraphs.items())),
        "delegate_bytes": dict(sorted(payload.items())),
        "delegate_calls": delegate_calls,
        "kernel_calls": sum(kernel_ops.values()),
        "non_delegated_ops": dict(sorted(kernel_ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "constant_bytes": sum(len(b.storage) for b in prog.constant_buffer),
        "named_data_bytes": named,
    }
    if export_stats:
        keep = ("backend", "precision", "quantization", "rewrites", "delegated_nodes", "non_delegated_nodes",
                "non_delegated_ops", "fully_delegated", "export_s")
        info["export"] = {k: export_stats[k] for k in keep if k in export_stats}
    return info


def format_text(info: dict) -> str:
    """Human-readable summary of :func:`describe_pte`'s dict."""
    io = lambda ts: ", ".join(f"{t.get('dtype')}{t.get('shape')}" for t in ts)  # noqa: E731
    lines = [
        f"{info['path']}: {info['bytes'] / 1e6:.1f} MB ({info['format']}), methods {', '.join(info['methods'])}",
        f"  inputs  {io(info['inputs'])}",
        f"  outputs {io(info['outputs'])}",
        "  delegates: " + (", ".join(f"{k} x{v} ({info['delegate_bytes'].get(k, 0) / 1e6:.1f} MB)"
                                     for k, v in info["delegated_subgraphs"].items()) or "none"),
        f"  portable-kernel calls (not delegated): {info['kernel_calls']}"
        + (" — " + ", ".join(f"{k} {v}" for k, v in info["non_delegated_ops"].items()) if info["kernel_calls"] else ""),
    ]
    if "export" in info:
        e = info["export"]
        lines.append(f"  at export: {e.get('delegated_nodes')} nodes delegated, {e.get('non_delegated_nodes')} not")
    return "\n".join(lines)
