"""ExecuTorch ``.pte`` format: look inside an ExecuTorch ``.pte``: size, methods, I/O, delegates per backend, ops left to portable kernels.

Parsed with ExecuTorch's own serializer (``executorch.exir._serialize._deserialize_pte_binary``: the flatbuffer
schema bindings shipped in the wheel), never by hand.  A .pte keeps each delegate as an opaque payload, so the number
of graph nodes *inside* a delegate is not in the file: :func:`export_executorch` (below) counts
them on the edge program at export time; pass its result as ``export_stats`` to carry them into the description.

ExecuTorch target: module -> ``.pte`` for XNNPACK (CPU), WebGPU or Vulkan; FP32 or dynamic INT8 (XNNPACK only).

Pipeline: ``torch.export.export(strict=False)`` -> ``to_edge_transform_and_lower(partitioner=[...])`` ->
``to_executorch()``, written via temp + rename (a failed export leaves no file).  Method ``forward(pixel_values
float32[1,3,H,W]) -> depth float32[1,H,W]``.

What is exported is a deep copy of the HF model prepared for lowering (the caller's model is never touched, nothing
global is patched):

- eager attention (``config._attn_implementation = "eager"`` on the copy): SDPA decomposes into ``_safe_softmax`` ops
  XNNPACK cannot take;
- ``edgedepth.rewrites`` ``drop_attention_mask`` (the all-true mask transformers 5 builds under export; bit-identical)
  and ``freeze_position_embedding`` (the bicubic position-embedding resize folded into one constant for the export
  size; bit-identical).  Vulkan/WebGPU lowering fails without the frozen embedding (ExecuTorch 1.5.1: a FakeTensorMode
  mismatch in the Vulkan preprocess's ``FuseBatchNormPass``).

INT8 = dynamic quantisation with ``XNNPACKQuantizer`` (int8 per-channel symmetric weights, activations quantised per
call) restricted to ``aten.linear``.  Quantising every supported op (``int8_ops="all"``: also the convolutions) fails
in ExecuTorch 1.5.1 in XNNPACK's ``ChannelsLastTaggedReshapePass`` (fixed upstream after 1.5.1; canary test).

Delegation is counted on the lowered edge program with ExecuTorch's own ``get_delegation_info`` (a .pte keeps only
opaque delegate payloads), returned by :func:`export_executorch` for manifests and reports.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import os
import time

import numpy as np

from ... import interrupt, runtimes
from ...errors import EdgedepthError
from ...fsutil import atomic_path, read_input
from ...models import DEFAULT_STEM
from ...preprocess import parse_size
from ...progress import quiet_output as _quiet
from ..base import CardContext, CliOption, Exported, Format, Job, ReleaseStep, check_sizes, list_option, recipe_field


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


def check(path: str) -> bytes:
    """Read ``path`` and check it is a complete ExecuTorch program; raise a one-line error naming the problem."""
    return _read_checked(path)[0]


def _read_checked(path: str):
    """(bytes, deserialized PTEFile) of a .pte that passed every check."""
    data = read_input(path, "model file")       # a FIFO, device or /proc file: one line, never a hang
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


def describe(path: str, export_stats: dict | None = None) -> dict:
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
    """Human-readable summary of :func:`describe`'s dict."""
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


BACKENDS = ("xnnpack", "webgpu", "vulkan")
PRECISIONS = ("fp32", "int8")
INT8_OPS = ("linear", "all")
# Rewrites (edgedepth.rewrites names) applied before export; both are exact (bit-identical in PyTorch).
DEFAULT_REWRITES = ("drop_attention_mask", "freeze_position_embedding")
# Graph bookkeeping nodes that are not work: a delegate call's tuple outputs are read with getitem.
_STRUCTURAL = {"executorch_call_delegate", "getitem"}


def file_name(height: int, width: int, backend: str, precision: str, stem: str = DEFAULT_STEM) -> str:
    return f"{stem}_{height}x{width}_{backend}_{precision}.pte"


def _check_args(backend: str, precision: str, int8_ops: str) -> None:
    if backend not in BACKENDS:
        raise EdgedepthError(f"unknown ExecuTorch backend {backend!r} (choose from {', '.join(BACKENDS)})")
    if precision not in PRECISIONS:
        raise EdgedepthError(f"unknown precision {precision!r} (choose from {', '.join(PRECISIONS)})")
    if precision == "int8" and backend != "xnnpack":
        raise EdgedepthError(f"INT8 .pte is built for xnnpack only (XNNPACKQuantizer), not {backend}")
    if int8_ops not in INT8_OPS:
        raise EdgedepthError(f"int8_ops {int8_ops!r}: choose from {', '.join(INT8_OPS)}")


def prepare_model(model, height: int, width: int, rewrites=DEFAULT_REWRITES):
    """Deep copy of the HF model with eager attention and the named rewrites; returns (DepthModule, rewrite report).

    ``model`` may be the HF model or a :class:`edgedepth.checkpoint.DepthModule` around it.
    """
    from ...checkpoint import DepthModule

    inner = model.model if isinstance(model, DepthModule) else model
    if height % 14 or width % 14:
        raise EdgedepthError(f"size {height}x{width}: height and width must be multiples of 14 (the patch size)")
    m = copy.deepcopy(inner).eval()
    if hasattr(m, "config"):
        # Propagates to the backbone's Dinov2Config on the copy only (the caller's model keeps its setting).
        m.config._attn_implementation = "eager"
    from ...rewrites import prepare

    module, report = prepare(m, height, width, list(rewrites or ()))
    for p in module.parameters():
        p.requires_grad_(False)
    return module.eval(), report


def _sample(height: int, width: int):
    import torch

    return torch.from_numpy(np.random.default_rng(0).standard_normal((1, 3, height, width), dtype=np.float32))


def _partitioners(backend: str):
    if backend == "xnnpack":
        from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner

        return [XnnpackPartitioner()]
    if backend == "webgpu":
        from executorch.backends.webgpu.partitioner import WebGPUPartitioner

        return [WebGPUPartitioner()]
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner

    return [VulkanPartitioner()]


def _quantize_dynamic_int8(module, sample, int8_ops: str):
    """PT2E dynamic INT8 with XNNPACKQuantizer: per-channel int8 weights; ``linear`` = aten.linear only."""
    import torch
    from executorch.backends.xnnpack.quantizer.xnnpack_quantizer import (
        XNNPACKQuantizer,
        get_symmetric_quantization_config,
    )
    from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e

    cfg = get_symmetric_quantization_config(is_per_channel=True, is_dynamic=True)
    quantizer = XNNPACKQuantizer()
    if int8_ops == "linear":
        quantizer.set_operator_type(torch.ops.aten.linear.default, cfg)
    else:
        quantizer.set_global(cfg)
    gm = torch.export.export(module, (sample,), strict=False).module()
    prepared = prepare_pt2e(gm, quantizer)
    try:
        prepared(sample)  # dynamic: activations are quantised per call; this only runs the weight observers
    except RuntimeError as e:   # seen: DA3's run-time RoPE positions came out of prepare as float (da3_static_positions)
        raise EdgedepthError(f"ExecuTorch dynamic INT8 fails on this model in XNNPACKQuantizer's prepared graph "
                             f"({' '.join(str(e).split())[:120]}); export --precision fp32") from None
    return convert_pt2e(prepared)


def _op_name(target) -> str:
    """``aten.expand_copy.default`` for edge and ATen ops alike; ``getitem`` for Python callables."""
    import torch

    if isinstance(target, torch._ops.OpOverload):
        return str(target)                          # aten.scalar_tensor.default (__name__ drops the namespace)
    return getattr(target, "__name__", str(target))  # EdgeOpOverload.__name__ = aten.expand_copy.default


def delegation_stats(edge_program) -> dict:
    """Delegated vs non-delegated nodes of a lowered edge program (ExecuTorch's ``get_delegation_info`` counts).

    ``delegated_nodes`` / ``non_delegated_nodes`` are that tool's numbers (non-delegated includes the ``getitem``s that
    read delegate outputs); ``non_delegated_ops`` lists the real work left outside the delegates, by op.
    """
    from executorch.devtools.backend_debug import get_delegation_info

    gm = edge_program.exported_program().graph_module
    info = get_delegation_info(gm)
    subgraphs: collections.Counter = collections.Counter()
    for node in gm.graph.nodes:
        if node.op == "get_attr" and node.name.startswith("lowered_module_"):
            subgraphs[getattr(gm, node.name).backend_id] += 1
    outside: collections.Counter = collections.Counter()
    for node in gm.graph.nodes:
        if node.op == "call_function" and _op_name(node.target) not in _STRUCTURAL:
            outside[_op_name(node.target)] += 1
    return {
        "delegated_subgraphs": dict(sorted(subgraphs.items())),
        "delegated_nodes": int(info.num_delegated_nodes),
        "non_delegated_nodes": int(info.num_non_delegated_nodes),
        "non_delegated_ops": dict(sorted(outside.items(), key=lambda kv: (-kv[1], kv[0]))),
        "fully_delegated": bool(subgraphs) and not outside,
    }


def lower(module, height: int, width: int, backend: str = "xnnpack", precision: str = "fp32", *,
          rewrites=DEFAULT_REWRITES, int8_ops: str = "linear", verbose: bool = False):
    """Prepare, (quantise,) export and lower; returns ``(ExecutorchProgramManager, stats)`` without writing a file."""
    import torch
    from executorch.exir import to_edge_transform_and_lower

    _check_args(backend, precision, int8_ops)
    prepared, report = prepare_model(module, height, width, rewrites)
    sample = _sample(height, width)
    with _quiet(not verbose):
        if precision == "int8":
            prepared = _quantize_dynamic_int8(prepared, sample, int8_ops)
        ep = torch.export.export(prepared, (sample,), strict=False)
        edge = to_edge_transform_and_lower(ep, partitioner=_partitioners(backend))
        stats = delegation_stats(edge)
        program = edge.to_executorch()
    stats = {"backend": backend, "precision": precision,
             "quantization": (f"dynamic int8 (XNNPACKQuantizer, per-channel weights, ops: {int8_ops})"
                              if precision == "int8" else None),
             "attention": "eager", "rewrites": [r["name"] for r in report],
             "input_shape": [1, 3, height, width], "output_shape": [1, height, width], **stats}
    return program, stats


def export_executorch(module, height: int, width: int, out_path: str, backend: str = "xnnpack",
                      precision: str = "fp32", *, rewrites=DEFAULT_REWRITES, int8_ops: str = "linear",
                      verbose: bool = False) -> dict:
    """Export ``module`` (a DepthModule or the HF model) to ``out_path`` (.pte, atomically); returns the export stats:
    backend, precision, quantization, rewrites, input/output shapes, delegated_subgraphs {backend id: n},
    delegated_nodes, non_delegated_nodes, non_delegated_ops {op: n}, fully_delegated, bytes, export_s, path.
    """
    t0 = time.perf_counter()
    program, stats = lower(module, height, width, backend, precision, rewrites=rewrites, int8_ops=int8_ops,
                           verbose=verbose)
    interrupt.check()           # Ctrl-C swallowed while lowering: stop before writing
    with atomic_path(out_path) as tmp, open(tmp, "wb") as f:
        program.write_to_file(f)
    stats["bytes"] = os.path.getsize(out_path)
    stats["export_s"] = round(time.perf_counter() - t0, 2)
    stats["path"] = out_path
    return stats


def export(module, height: int, width: int, out_dir: str, backends=("xnnpack",), precisions=("fp32",), *,
           rewrites=DEFAULT_REWRITES, verbose: bool = False, progress=None,
           stem: str = DEFAULT_STEM) -> dict[tuple[str, str], dict]:
    """Export every (backend, precision) pair that exists (INT8: xnnpack only) to ``out_dir``.

    Returns {(backend, precision): stats}; ``progress(stage_name)`` is called as each file starts.
    """
    stage = interrupt.checking(progress)    # each stage first raises an interrupt the exporter swallowed
    out = {}
    with interrupt.removed_on_failure([]) as written:          # failed or interrupted: none of its files is left
        for backend in backends:
            for precision in precisions:
                if precision == "int8" and backend != "xnnpack":
                    continue
                stage(f"ExecuTorch {backend} {precision.upper()} {height}x{width}")
                path = os.path.join(out_dir, file_name(height, width, backend, precision, stem))
                written.append(path)
                out[(backend, precision)] = export_executorch(module, height, width, path, backend, precision,
                                                              rewrites=rewrites, verbose=verbose)
    return out


def open_runner(path: str, backend: str = "cpu", threads: int = 2):
    """ExecuTorch runtime (XNNPACK, CPU): the only .pte backend the Python runtime runs here."""
    if backend not in runtimes.backends_of("pte"):
        raise EdgedepthError(f"{path!r}: a .pte runs on the CPU here (ExecuTorch XNNPACK); use backend cpu")
    info = describe(path)  # checks the file first: missing/empty/corrupt/truncated -> one-line error
    return runtimes.open_runner("pte", backend, path, threads, backends=list(info["delegated_subgraphs"]))


RUNNABLE_BACKENDS = ("xnnpack",)    # delegates the Python runtime here runs (WebGPU/Vulkan files need their devices)


def runs_here(exported) -> bool:
    """Whether this machine's Python runtime runs the file (the release's parity gate): XNNPACK files only."""
    return exported.backend in RUNNABLE_BACKENDS


@dataclasses.dataclass(frozen=True)
class RecipePart:
    """The recipe's ``executorch`` section."""
    sizes: tuple[str, ...]
    backends: tuple[str, ...]
    precisions: tuple[str, ...]


class ExecuTorch(Format):
    name, suffix, target_name, title = "pte", ".pte", "executorch", "ExecuTorch"
    precisions, default_precisions, export_backends = PRECISIONS, PRECISIONS, BACKENDS
    cli_options = (CliOption("--et-backend", dict(default="xnnpack",
                                                  help=f"ExecuTorch backends, comma-separated: {','.join(BACKENDS)}; "
                                                       "INT8 is xnnpack only (default: %(default)s)")),)

    check, describe, format_text = staticmethod(check), staticmethod(describe), staticmethod(format_text)

    def open_runner(self, path: str, backend: str = "cpu", threads: int = 2, size=None):
        return open_runner(path, backend, threads)

    def export_options(self, args) -> dict:
        return {"backends": tuple(list_option("--et-backend", args.et_backend, BACKENDS))}

    def check_options(self, precisions, options: dict) -> None:
        super().check_options(precisions, {k: v for k, v in options.items() if k != "backends"})

    def export_stages(self, precisions, options: dict) -> int:
        return sum(1 for b in options.get("backends", ("xnnpack",)) for p in precisions
                   if p == "fp32" or b == "xnnpack")

    def export(self, model, height: int, width: int, out_dir: str, *, precisions=("fp32",), rewrites="default",
               verbose: bool = False, progress=None, stem: str = DEFAULT_STEM,
               backends=("xnnpack",)) -> list[Exported]:
        """Every (backend, precision) pair that exists (INT8: XNNPACK only)."""
        backends = tuple(backends or ("xnnpack",))
        from ...rewrites import format_defaults

        names = tuple(format_defaults(model, DEFAULT_REWRITES)[0]) if rewrites == "default" else tuple(rewrites or ())
        stats = export(model, height, width, out_dir, backends, precisions, rewrites=names, verbose=verbose,
                       progress=progress, stem=stem)
        return [Exported(st["path"], "pte", precision, backend, list(st.get("rewrites", names)), st)
                for (backend, precision), st in sorted(stats.items())]

    def recipe_part(self, section: dict, where: str) -> RecipePart:
        part = RecipePart(*(tuple(recipe_field(section, k, list, where)) for k in ("sizes", "backends", "precisions")))
        check_sizes("executorch.sizes", part.sizes)
        if [b for b in part.backends if b not in BACKENDS] or [p for p in part.precisions if p not in PRECISIONS]:
            raise EdgedepthError(f"recipe {where}: executorch backends {part.backends} / precisions "
                                 f"{part.precisions} (choose from {BACKENDS} / {PRECISIONS})")
        return part

    def release_jobs(self, part: RecipePart, sizes, *, gate: bool, gpu_check: bool) -> list[Job]:
        """An export per size of its own (every backend and precision of one program); XNNPACK files are gated."""
        runnable = any(b in RUNNABLE_BACKENDS for b in part.backends)
        return [Job(self.name, text, stages=1 + len(part.precisions) * runnable * gate) for text in part.sizes]

    def release_job(self, part: RecipePart, job: Job, rs: ReleaseStep) -> tuple[list[dict], dict]:
        """ExecuTorch .pte files of one size; XNNPACK files pass the parity gate (the runtime here runs only
        XNNPACK)."""
        h, w = parse_size(job.size)
        rs.step(f"ExecuTorch {job.size}: {', '.join(part.backends)}")
        files = self.export(rs.ckpt.model, h, w, rs.staging, precisions=part.precisions, backends=part.backends,
                            stem=rs.ckpt.file_stem)
        return [rs.entry(f.path, f, job.size) for f in files], {}

    def release_entry(self, art, exported: Exported, size_text: str, io) -> dict:
        """Its delegate, delegation counts and quantisation."""
        st, backend = exported.stats, exported.backend
        return {"format": "pte", "runtime": "executorch", "backend": backend, "precision": exported.precision,
                "size": size_text, **io(*art.size, "pixel_values", "depth"),
                "delegation": {"subgraphs": st["delegated_subgraphs"], "delegated_nodes": st["delegated_nodes"],
                               "non_delegated_nodes": st["non_delegated_nodes"],
                               "fully_delegated": st["fully_delegated"]},
                "quantization": st.get("quantization"),
                "recommended_runtime_options": {
                    "runtime": "executorch.runtime (Python/C++), XNNPACK" if runs_here(exported)
                    else "ExecuTorch WebGPU/Vulkan runtime (delegate id VulkanBackend); not runnable in Python"}}

    def runs_here(self, exported: Exported) -> bool:
        return runs_here(exported)

    card_order = 2

    def card_how_to(self, files: list[dict], ctx: CardContext) -> list[str]:
        return ["ExecuTorch: load the `.pte` with `executorch.runtime` (XNNPACK files) or the ExecuTorch WebGPU runtime "
                "(WebGPU/Vulkan-delegated files, which the Python runtime cannot run).", ""]

    def card_delegation(self, entry: dict) -> str:
        d, b = entry["delegation"], entry["backend"]
        return (f"{b}: all {d['delegated_nodes']} nodes delegated" if d["fully_delegated"] else
                f"{b}: {d['delegated_nodes']} delegated, {d['non_delegated_nodes']} on portable kernels")


FORMAT = ExecuTorch()
