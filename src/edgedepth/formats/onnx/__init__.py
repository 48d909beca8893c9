"""ONNX ``.onnx`` format: export (FP32, FP16, dynamic INT8), check, describe, and the runners that read it.

Export: ``torch.onnx.export(dynamo=True)`` at opset 18, input ``pixel_values`` float32 [1,3,H,W] and output
``predicted_depth`` float32 [1,H,W] (the names transformers.js and onnx-community's files use); a family with more
outputs (Depth Anything 3: ``confidence``) adds them after it, named by their role (:func:`output_names`).  H and W
are fixed (static) or, with ``dynamic=True``, symbolic (``height``/``width``, multiples of 14: what onnx-community
ships and transformers.js needs, since its preprocessing picks a size per photo).  A dynamic file records the size
edgedepth verified it at (metadata ``edgedepth.size``); edgedepth's runners run it at that size unless told another,
except ``predict``'s (:func:`open_photo_runner`): each photo at the size upstream's image processor gives it (the
folder's ``preprocessor_config.json``, :func:`processor_of`), as transformers and transformers.js do.
Then:

- FP16 = ``onnxruntime.transformers.float16.convert_float_to_float16`` (weights *and* compute in float16) with
  float32 I/O kept (``keep_io_types``), so every file of a release takes the same input;
- INT8 = ``onnxruntime.quantization.quantize_dynamic`` (int8 weights, activations quantised per call), the path
  behind onnx-community's ``model_quantized.onnx``; made from the FP32 graph.

Reproducible bytes: the exporter records source locations (absolute paths, line numbers) and FX node text in
``metadata_props`` and ``doc_string`` of nodes and values; :func:`_strip_provenance` removes them, so a clean clone
elsewhere writes the same file.  Files are single-file protobufs (< 2 GB, no external data), written atomically.

Runners: ``cpu`` = ONNX Runtime's CPU execution provider, ``openvino`` = OpenVINO's CPU plugin reading the same file.
A runtime that is not installed is a one-line error, not a traceback.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os

import numpy as np

from ... import interrupt, runtimes
from ...errors import EdgedepthError
from ...fsutil import atomic_path, read_input, write_bytes_atomic
from ...models import DEFAULT_STEM, family_of
from ...preprocess import DEFAULT_SIZE, Processor, parse_size
from ...progress import quiet_output as _quiet
from ..base import CardContext, CliOption, Exported, Format, Job, ReleaseStep, precision_jobs, recipe_field, recommends
from .hub_files import (CONFIG, ONNX_LAYOUT as HUB_LAYOUT, PREPROCESSOR_CONFIG, TRANSFORMERS_JS_DTYPE, UPSTREAM_SIDE,
                        config_json, preprocessor_config_json)

OPSET = 18
INPUT_NAME = "pixel_values"
OUTPUT_NAME = "predicted_depth"


def output_names(roles) -> list[str]:
    """The files' output names for ``ModelFamily.outputs`` roles: the depth is ``predicted_depth``, the others their
    role ("confidence")."""
    return [OUTPUT_NAME if r == "depth" else r for r in roles]

PRECISIONS = ("fp32", "fp16", "int8")
BACKENDS = runtimes.backends_of("onnx")     # ONNX Runtime CPU, OpenVINO CPU (FP32, bf16)
# Rewrites kept for ONNX (benchmarks/onnx_rewrites.py -> results/onnx_rewrites.json, cumulative prefixes in ONNX Runtime,
# one interleaved run): drop_attention_mask is the win (0.64x plain on the AVX2 EPYC); the rest are exact and equal
# within noise, and fuse_qkv leaves the smallest graph (397 nodes).  The LayerNorm reformulations made for LiteRT add
# nodes (519-625) for no measured gain, so they stay out.
DEFAULT_REWRITES = ("drop_attention_mask", "freeze_position_embedding", "static_attention", "fold_attention_scale",
                    "fold_layerscale", "fuse_qkv")
# Dynamic files: the position embedding cannot be frozen for one size (the graph resizes it per input, as
# transformers does), and the head's output size must stay symbolic (rewrites/symbolic_output_size.py).
DYNAMIC_REWRITES = ("drop_attention_mask", "symbolic_output_size", "static_attention", "fold_attention_scale",
                    "fold_layerscale", "fuse_qkv")

DYNAMIC_DIMS = ("height", "width")      # dim_param names of a dynamic file's H and W (onnx-community's)
SIZE_KEY = "edgedepth.size"             # metadata of a dynamic file: "HxW", the size edgedepth runs it at
# A dynamic export is traced at this size, whatever size it is verified at: non-square and off the 37x37 native grid,
# so transformers' position-embedding branch traced is the resize (a square 518x518 trace would skip it), and the
# bytes do not depend on the release's size.  5x7 patches: a fast trace.
TRACE_SIZE = (70, 98)
MAX_PATCHES = 100                       # per side: preprocess.MAX_SIDE / 14
_ONNX_DTYPES = {1: "float32", 10: "float16", 11: "float64", 7: "int64", 6: "int32", 3: "int8", 2: "uint8", 9: "bool"}


def _need(module: str, what: str):
    """Import an optional runtime; a missing one is a one-line error naming the extra that brings it."""
    from ...extras import require

    return require(module)


def _load(path: str):
    """The ModelProto of ``path`` after the file checks; one-line errors for missing/empty/corrupt/invalid files."""
    onnx = _need("onnx", "onnx")
    data = read_input(path, "model file")       # a FIFO, device or /proc file: one line, never a hang
    if len(data) == 0:
        raise EdgedepthError(f"model file {path!r} is empty (0 bytes)")
    try:
        model = onnx.load_model_from_string(data)     # external data is never loaded
    except Exception as e:  # protobuf DecodeError on truncated/corrupt bytes
        raise EdgedepthError(f"model file {path!r} is corrupt or truncated (not an ONNX protobuf: "
                             f"{type(e).__name__})") from None
    if not model.graph.node or not model.opset_import:
        raise EdgedepthError(f"model file {path!r} is corrupt or truncated (no graph or no opset: not an ONNX model)")
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise EdgedepthError(f"model file {path!r} is not a valid ONNX model "
                             f"({' '.join(str(e).split())[:200]})") from None
    return model


def check(path: str):
    """Check ``path`` is a complete, valid ONNX model with one float32 [1,3,H,W] input and one [1,H,W] output
    (H, W fixed, or both symbolic)."""
    model = _load(path)
    _check_signature(model, path)
    return model


def _value_info(v) -> dict:
    t = v.type.tensor_type
    shape = [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in t.shape.dim]
    return {"name": v.name, "shape": shape, "dtype": _ONNX_DTYPES.get(t.elem_type, str(t.elem_type))}


def _graph_inputs(model) -> list[dict]:
    """The model's real inputs (graph inputs that are not initializers), as :func:`_value_info` dicts."""
    init = {i.name for i in model.graph.initializer}
    return [_value_info(v) for v in model.graph.input if v.name not in init]


def _check_signature(model, path: str) -> None:
    ins = _graph_inputs(model)
    outs = [_value_info(v) for v in model.graph.output]
    if len(ins) != 1 or not outs:       # outputs: the depth, then any other map of its family (DA3's confidence)
        raise EdgedepthError(f"{path!r}: expected 1 input and at least 1 output, got {len(ins)} and {len(outs)}")
    s = ins[0]["shape"]
    static = all(isinstance(d, int) and d > 0 for d in s)
    dynamic = len(s) == 4 and all(isinstance(d, int) and d > 0 for d in s[:2]) and all(isinstance(d, str) for d in s[2:])
    if len(s) != 4 or not (static or dynamic) or s[0] != 1 or s[1] != 3 or ins[0]["dtype"] != "float32":
        raise EdgedepthError(f"{path!r}: input {ins[0]['name']!r} is {ins[0]['dtype']}{s}; edgedepth runs "
                             "float32 [1,3,H,W] ONNX files (export one with: edgedepth export --target onnx)")
    for out in outs:
        o = out["shape"]
        if len(o) != 3 or list(o[1:]) != list(s[2:]):
            raise EdgedepthError(f"{path!r}: output {out['name']!r} is {o}, expected [1,{s[2]},{s[3]}]")


def _size_of(model, inputs: list[dict], path: str) -> tuple[list[int], bool]:
    """([H, W] edgedepth runs the file at, dynamic?): the input's own H, W, or a dynamic file's recorded size."""
    shape = inputs[0]["shape"]
    if all(isinstance(d, int) for d in shape[2:]):
        return [int(shape[2]), int(shape[3])], False
    meta = {p.key: p.value for p in model.metadata_props}

    try:
        return list(parse_size(meta[SIZE_KEY])) if SIZE_KEY in meta else list(DEFAULT_SIZE), True
    except EdgedepthError:
        raise EdgedepthError(f"{path!r}: metadata {SIZE_KEY} = {meta[SIZE_KEY][:40]!r} is not a size HxW") from None


def describe(path: str) -> dict:
    """Static description: path, bytes, format, opset, producer, inputs/outputs, ops (count), op histogram,
    weights (bytes per dtype), precision (fp32/fp16/int8 from the weights), size (the [H, W] edgedepth runs it at)
    and dynamic (H and W symbolic)."""
    model = check(path)
    hist = collections.Counter(n.op_type for n in model.graph.node)
    weights: collections.Counter = collections.Counter()
    for t in model.graph.initializer:
        weights[_ONNX_DTYPES.get(t.data_type, str(t.data_type))] += len(t.raw_data) or 0
    int8 = any(op in hist for op in ("MatMulInteger", "ConvInteger", "DynamicQuantizeLinear"))
    precision = "int8" if int8 else ("fp16" if weights.get("float16", 0) > weights.get("float32", 0) else "fp32")
    opset = {o.domain or "ai.onnx": int(o.version) for o in model.opset_import}
    inputs = _graph_inputs(model)
    size, dynamic = _size_of(model, inputs, path)
    return {
        "path": path,
        "bytes": os.path.getsize(path),
        "format": f"onnx ir{model.ir_version} opset {opset.get('ai.onnx')}",
        "opset": opset,
        "producer": f"{model.producer_name} {model.producer_version}".strip(),
        "inputs": inputs,
        "outputs": [_value_info(v) for v in model.graph.output],
        "size": size,
        "dynamic": dynamic,
        "ops": sum(hist.values()),
        "op_histogram": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "weights": dict(sorted(weights.items())),
        "precision": precision,
    }


def format_text(info: dict) -> str:
    io = lambda ts: ", ".join(f"{t['name']} {t['dtype']}{t['shape']}" for t in ts)  # noqa: E731
    top = ", ".join(f"{k} {v}" for k, v in list(info["op_histogram"].items())[:8])
    return "\n".join([
        f"{info['path']}: {info['bytes'] / 1e6:.1f} MB ({info['format']}, {info['precision']}, {info['producer']})",
        f"  inputs  {io(info['inputs'])}",
        f"  outputs {io(info['outputs'])}",
        f"  {info['ops']} ops: {top}{', …' if len(info['op_histogram']) > 8 else ''}",
        *([f"  dynamic height and width (multiples of 14); predict sizes each photo as upstream does, "
           f"validate and bench run it at {info['size'][0]}x{info['size'][1]}"]
          if info.get("dynamic") else []),
        "  runs on: ONNX Runtime (--backend cpu), OpenVINO (--backend openvino; openvino-bf16: in bfloat16)",
    ])


def file_name(height: int, width: int, precision: str, plain: bool = False, stem: str = DEFAULT_STEM,
              dynamic: bool = False) -> str:
    return f"{stem}_{height}x{width}_{precision}{'_plain' if plain else ''}{'_dynamic' if dynamic else ''}.onnx"


def _strip_provenance(model) -> None:
    """Drop what ties the bytes to this checkout: source paths/lines and FX text in metadata_props and doc_strings."""
    graphs = [model.graph]
    while graphs:
        g = graphs.pop()
        g.doc_string = ""
        del g.metadata_props[:]
        for v in list(g.input) + list(g.output) + list(g.value_info) + list(g.initializer):
            v.doc_string = ""
            del v.metadata_props[:]
        for n in g.node:
            n.doc_string = ""
            del n.metadata_props[:]
            for a in n.attribute:
                if a.HasField("g"):
                    graphs.append(a.g)
                graphs.extend(a.graphs)
    model.doc_string = ""
    del model.metadata_props[:]
    for f in model.functions:
        f.doc_string = ""
        del f.metadata_props[:]
        for n in f.node:
            n.doc_string = ""
            del n.metadata_props[:]


def to_model_proto(module, height: int, width: int, *, dynamic: bool = False, verbose: bool = False):
    """Trace ``module`` (pixel_values [1,3,H,W] -> depth [1,H,W]) to an ONNX ModelProto (dynamo exporter, opset 18).

    ``dynamic``: H and W symbolic multiples of 14 (traced at :data:`TRACE_SIZE`), named ``height``/``width``, and
    ``height``x``width`` recorded as the size edgedepth runs the file at."""
    import torch

    _need("onnxscript", "onnxscript")
    shape = (1, 3, *(TRACE_SIZE if dynamic else (height, width)))
    sample = torch.from_numpy(np.random.default_rng(0).standard_normal(shape, dtype=np.float32))
    dims = None
    if dynamic:
        hp, wp = (torch.export.Dim(n, min=2, max=MAX_PATCHES) for n in ("patches_h", "patches_w"))
        dims = {"pixel_values": {2: 14 * hp, 3: 14 * wp}}
    outputs = output_names(getattr(module, "outputs", ("depth",)))     # a DepthModule's (rewrites.prepare)
    with _quiet(not verbose), torch.no_grad():
        program = torch.onnx.export(module.eval(), (sample,), None, dynamo=True, opset_version=OPSET,
                                    input_names=[INPUT_NAME], output_names=outputs, optimize=True,
                                    verbose=False, dynamic_shapes=dims)
    model = program.model_proto
    _strip_provenance(model)
    if dynamic:
        _name_dynamic_dims(model, height, width)
    return model


def _name_dynamic_dims(model, height: int, width: int) -> None:
    """The exporter names H and W after their expressions ("14*patches_h"); name them ``height``/``width`` wherever
    they appear, check the output follows the input, and record the size edgedepth runs the file at."""
    names = {"14*patches_h": DYNAMIC_DIMS[0], "14*patches_w": DYNAMIC_DIMS[1]}
    for v in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        for d in v.type.tensor_type.shape.dim:
            if d.dim_param in names:
                d.dim_param = names[d.dim_param]
    out = [d.dim_param or d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    if out[1:] != list(DYNAMIC_DIMS):
        raise EdgedepthError(f"dynamic ONNX export: the output is {out}, not [1, height, width] (a size was fixed "
                             "during tracing: the symbolic_output_size rewrite is missing?)")
    entry = model.metadata_props.add()
    entry.key, entry.value = SIZE_KEY, f"{height}x{width}"


def _write(model, path: str) -> None:
    write_bytes_atomic(path, model.SerializeToString())


def to_fp16(model):
    """Weights and compute in float16, float32 I/O kept (ORT's converter; its I/O casts are appended after the graph,
    so the nodes are put back in topological order for the ONNX checker)."""
    _need("onnxruntime", "onnxruntime")
    from onnxruntime.transformers.float16 import convert_float_to_float16

    out = convert_float_to_float16(model, keep_io_types=True)
    _topological_sort(out.graph)
    return out


def _topological_sort(graph) -> None:
    """Stable topological order of ``graph``'s nodes (a node moves only behind the producers of its inputs)."""
    ready = {i.name for i in graph.input} | {t.name for t in graph.initializer} | {""}
    pending, ordered = list(graph.node), []
    while pending:
        rest = []
        for n in pending:
            if all(i in ready for i in n.input):
                ordered.append(n)
                ready.update(n.output)
            else:
                rest.append(n)
        if len(rest) == len(pending):
            raise EdgedepthError("ONNX graph has a cycle or an input nobody produces: "
                                 f"{rest[0].op_type} {rest[0].name} needs {[i for i in rest[0].input if i not in ready]}")
        pending = rest
    nodes = [type(n)() for n in ordered]
    for dst, src in zip(nodes, ordered):
        dst.CopyFrom(src)
    del graph.node[:]
    graph.node.extend(nodes)


def quantize_int8(fp32_path: str, path: str, *, verbose: bool = False) -> None:
    """Dynamic INT8 (ORT ``quantize_dynamic``: int8 weights, uint8 activations quantised per call), atomically."""
    _need("onnxruntime", "onnxruntime")
    import logging

    from onnxruntime.quantization import QuantType, quantize_dynamic

    log = logging.getLogger()
    level = log.level
    if not verbose:
        log.setLevel(logging.ERROR)  # "Please consider to run pre-processing before quantization" on every call
    try:
        with _quiet(not verbose), atomic_path(path) as tmp:
            quantize_dynamic(fp32_path, tmp, weight_type=QuantType.QInt8)
    finally:
        log.setLevel(level)


def export(module, height: int, width: int, out_dir: str, precisions=("fp32",), *, plain: bool = False,
           verbose: bool = False, progress=None, names: dict | None = None, fp16_module=None,
           stem: str = DEFAULT_STEM, dynamic: bool = False) -> dict[str, str]:
    """Export ``module`` to ``out_dir``; returns {precision: path}.  INT8 is made from the FP32 graph; FP16 from
    ``fp16_module``'s graph when given (the fp16_safe-rescaled model), else from the FP32 graph.  ``dynamic``:
    symbolic H and W (:func:`to_model_proto`).

    ``names``: {precision: file name (may hold a sub-folder)} to override :func:`file_name` (the release layout).
    """
    stage = interrupt.checking(progress)    # each stage first raises an interrupt the exporter swallowed
    paths = {p: os.path.join(out_dir, (names or {}).get(p) or file_name(height, width, p, plain, stem, dynamic))
             for p in precisions}
    for p in paths.values():
        os.makedirs(os.path.dirname(p) or ".", exist_ok=True)
    model = None
    if "fp32" in paths or "int8" in paths or fp16_module is None:
        stage(f"ONNX export FP32 {'dynamic H, W' if dynamic else f'{height}x{width}'} (torch.onnx dynamo, "
              f"opset {OPSET})")
        model = to_model_proto(module, height, width, dynamic=dynamic, verbose=verbose)
    fp32 = paths.get("fp32") or os.path.join(out_dir, "." + file_name(height, width, "fp32", plain, stem) + ".src")
    try:
        with interrupt.removed_on_failure([]) as written:      # failed or interrupted: none of its files is left
            if model is not None and ("fp32" in paths or "int8" in paths):
                interrupt.check()
                written.append(fp32)
                _write(model, fp32)
            if "fp16" in paths:
                stage("ONNX FP16 (weights and compute)")
                src = model if fp16_module is None else to_model_proto(fp16_module, height, width, dynamic=dynamic,
                                                                        verbose=verbose)
                interrupt.check()
                written.append(paths["fp16"])
                _write(to_fp16(src), paths["fp16"])
            if "int8" in paths:
                stage("ONNX INT8 (quantize_dynamic)")
                written.append(paths["int8"])
                quantize_int8(fp32, paths["int8"], verbose=verbose)
                interrupt.check()
    finally:
        if "fp32" not in paths and os.path.exists(fp32):
            os.remove(fp32)
    return paths


def open_runner(path: str, backend: str = "cpu", threads: int = 2, size: tuple[int, int] | None = None):
    """ONNX Runtime CPU (``cpu``) or OpenVINO CPU (``openvino``, ``openvino-bf16``) over the same file.  ``size``
    (H, W): the size a dynamic file runs at (default: the size it records); a static file runs at its own size
    only."""
    if backend not in BACKENDS:
        raise EdgedepthError(f"{path!r}: an .onnx file runs on --backend {', '.join(BACKENDS)} here, not {backend}")
    model = check(path)
    inputs = _graph_inputs(model)
    own, dynamic = _size_of(model, inputs, path)
    if size is not None and tuple(size) != tuple(own) and not dynamic:
        raise EdgedepthError(f"{path!r} takes {own[0]}x{own[1]} only, not {size[0]}x{size[1]} (a fixed-size file; "
                             "export --dynamic-size writes one for any size)")
    if size is not None and (size[0] % 14 or size[1] % 14):
        raise EdgedepthError(f"{path!r}: height and width must be multiples of 14, not {size[0]}x{size[1]}")
    hw = tuple(size or own)
    free = {d: v for d, v in zip(inputs[0]["shape"][2:], hw) if isinstance(d, str)} if dynamic else None
    return runtimes.open_runner("onnx", backend, path, threads, size=hw, free_dims=free)


def processor_config_path(path: str) -> str | None:
    """The ``preprocessor_config.json`` of the model folder ``path`` is in (transformers.js' layout: the folder above
    ``onnx/``; else the file's own folder), or None where there is none."""
    here = os.path.dirname(os.path.abspath(path))
    root = os.path.dirname(here) if os.path.basename(here) == "onnx" else here
    cfg = os.path.join(root, PREPROCESSOR_CONFIG)
    return cfg if os.path.lexists(cfg) else None


def processor_of(path: str, verify=None) -> Processor:
    """The resize settings a dynamic-size file runs each photo at: its folder's ``preprocessor_config.json``
    (:func:`processor_config_path`; ``verify``, if given, is called with its path first: the CLI's manifest check),
    else upstream's (:func:`hub_files.preprocessor_config_json`, what a release writes).  One-line errors."""
    cfg = processor_config_path(path)
    if cfg is None:
        return Processor.from_config(json.loads(preprocessor_config_json()), "upstream's preprocessor config")
    if verify is not None:
        verify(cfg)
    data = read_input(cfg, "preprocessor config", limit=1 << 20)
    try:
        d = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise EdgedepthError(f"{cfg!r} is not valid JSON ({' '.join(str(e).split())[:120]})") from None
    return Processor.from_config(d, repr(cfg))


class PhotoSizedRunner(runtimes.FileRunner):
    """A dynamic-size file run at each photo's own size: :attr:`processor` says which (:meth:`Processor.model_size`,
    what transformers and transformers.js pick); ``run``/``run_all`` take an input of any multiples of 14 and run the
    runtime at that size (static shapes: ORT's fast path, OpenVINO's reshape), kept until an input of another size
    comes (one session at a time: one model's memory).  Opened at the size the file records, so a file the runtime
    cannot load fails here, before any photo; :attr:`input_shape` is the current session's."""

    def __init__(self, path: str, backend: str, threads: int, processor: Processor, dims: list, size):
        self.path, self.processor, self._backend, self._threads, self._dims = path, processor, backend, threads, dims
        self._r = self._open(tuple(size))
        self.name, self.input_dtype, self._names = self._r.name, self._r.input_dtype, self._r.output_names

    def _open(self, hw: tuple[int, int]):
        if len(hw) != 2 or hw[0] % 14 or hw[1] % 14 or min(hw) < 1:
            raise EdgedepthError(f"{self.path!r}: height and width must be multiples of 14, not "
                                 f"{'x'.join(map(str, hw))}")
        return runtimes.open_runner("onnx", self._backend, self.path, self._threads, size=hw,
                                    free_dims=dict(zip(self._dims, hw)))

    @property
    def input_shape(self) -> tuple[int, int, int, int]:
        return self._r.input_shape

    @property
    def output_names(self) -> tuple[str, ...]:
        return self._names

    @output_names.setter
    def output_names(self, names) -> None:       # formats.name_outputs: the family's roles
        self._names = self._r.output_names = tuple(names)

    def _at(self, x: np.ndarray):
        hw = tuple(int(d) for d in np.shape(x)[2:])
        if np.ndim(x) == 4 and hw != self._r.size:
            self._r.close()
            self._r = self._open(hw)
            self._r.output_names = self._names
        return self._r

    def run(self, x: np.ndarray) -> np.ndarray:
        return self._at(x).run(x)

    def run_all(self, x: np.ndarray) -> dict[str, np.ndarray]:
        return self._at(x).run_all(x)

    def close(self) -> None:
        self._r.close()


def open_photo_runner(path: str, backend: str = "cpu", threads: int = 2, verify=None):
    """``predict``'s runner: a dynamic-size file as a :class:`PhotoSizedRunner` (each photo at its processor size,
    :func:`processor_of`; ``verify``: see there), a fixed-size file as :func:`open_runner` opens it (its own size)."""
    if backend not in BACKENDS:
        raise EdgedepthError(f"{path!r}: an .onnx file runs on --backend {', '.join(BACKENDS)} here, not {backend}")
    model = check(path)
    inputs = _graph_inputs(model)
    own, dynamic = _size_of(model, inputs, path)
    if not dynamic:
        return runtimes.open_runner("onnx", backend, path, threads, size=tuple(own), free_dims=None)
    proc = processor_of(path, verify)
    return PhotoSizedRunner(path, backend, threads, proc, list(inputs[0]["shape"][2:]), own)


@dataclasses.dataclass(frozen=True)
class RecipePart:
    """The recipe's ``onnx`` section: precisions, written at the release's first size with dynamic H and W."""
    precisions: tuple[str, ...]


class Onnx(Format):
    name, suffix, target_name, title = "onnx", ".onnx", "onnx", "ONNX"
    precisions, default_precisions = PRECISIONS, PRECISIONS
    dynamic_size, hub_layout, browser_runtime = True, True, "ONNX Runtime Web"
    notice = ("- exported to ONNX (onnx/) with torch.onnx; FP16 with onnxruntime's float16 converter, INT8 with\n"
              "  onnxruntime quantize_dynamic;\n")
    side_files = ((CONFIG, "transformers config"), (PREPROCESSOR_CONFIG, "preprocessor config"))
    cli_options = (CliOption("--dynamic-size", dict(action="store_true", default=False,
                                                    help="ONNX: height and width symbolic (any multiples of 14, "
                                                         "what transformers.js needs); --size is then the size it "
                                                         "is checked and run at by edgedepth")),)

    check, describe, format_text = staticmethod(check), staticmethod(describe), staticmethod(format_text)

    def open_runner(self, path: str, backend: str = "cpu", threads: int = 2, size=None):
        return open_runner(path, backend, threads, size=size)

    def open_photo_runner(self, path: str, backend: str = "cpu", threads: int = 2, verify=None):
        return open_photo_runner(path, backend, threads, verify)

    def processor_of(self, path: str, verify=None) -> Processor:
        return processor_of(path, verify)

    def output_names(self, roles: tuple[str, ...]) -> list[str]:
        return output_names(roles)

    def export_stages(self, precisions, options: dict) -> int:
        return 2 + sum(p != "fp32" for p in precisions)

    def export(self, model, height: int, width: int, out_dir: str, *, precisions=("fp32", "fp16", "int8"),
               rewrites="default", verbose: bool = False, progress=None, stem: str = DEFAULT_STEM,
               dynamic_size: bool = False, names: dict | None = None) -> list[Exported]:
        """Prepare (ONNX's default rewrites) -> FP32 -> INT8; FP16 from the same rewrites plus ``fp16_safe``
        (activations rescaled by exact powers of two to fit float16; the plain export has none).  ``dynamic_size``:
        symbolic H and W (default rewrites :data:`DYNAMIC_REWRITES`; fp16_safe's plan is probed at ``height`` x
        ``width``); the file records ``height`` x ``width`` as the size edgedepth runs it at."""
        from ...rewrites import REWRITES, format_defaults, prepare

        dynamic = dynamic_size
        bad = [p for p in precisions if p not in PRECISIONS]
        if bad or not precisions:
            raise EdgedepthError(f"precision {', '.join(bad) or '(none)'}: ONNX files are {', '.join(PRECISIONS)}")
        _need("onnxscript", "onnxscript")
        if {"fp16", "int8"} & set(precisions):
            _need("onnxruntime", "onnxruntime")  # before any file is written: no FP32 file left behind later
        progress = progress or (lambda stage: None)
        progress("rewrites" if rewrites else "rewrites: off (plain)")
        chosen = list(rewrites or ())
        if rewrites == "default":
            chosen, own = format_defaults(model, DYNAMIC_REWRITES if dynamic else DEFAULT_REWRITES)
            if dynamic and not own:     # its family's defaults fix the size (no symbolic_output_size for it yet)
                raise EdgedepthError(f"--dynamic-size: {family_of(model).title} ONNX files have a fixed size yet; "
                                     "export without --dynamic-size")
            if "fp16" in precisions and family_of(model).name not in REWRITES["fp16_safe"].families:
                raise EdgedepthError(f"ONNX FP16 needs the fp16_safe rewrite, which does not know "
                                     f"{family_of(model).title} models yet: --precision fp32,int8")
        if dynamic and "freeze_position_embedding" in chosen:
            raise EdgedepthError("freeze_position_embedding fixes one input size: it cannot go into a dynamic-size "
                                 "file")
        if dynamic and "symbolic_output_size" not in chosen:
            chosen.append("symbolic_output_size")   # without it the map would have the trace size (a wrong file)
        module, report = prepare(model, height, width, chosen)
        applied = [r["name"] for r in report if r["changed"]]
        fp16_module, fp16_applied = None, applied
        if "fp16" in precisions and chosen and "fp16_safe" not in chosen:
            fp16_module, rep16 = prepare(model, height, width, chosen + ["fp16_safe"])
            fp16_applied = [r["name"] for r in rep16 if r["changed"]]
        paths = export(module, height, width, out_dir, precisions, plain=not chosen, verbose=verbose,
                       progress=progress, names=names, fp16_module=fp16_module, stem=stem, dynamic=dynamic)
        return [Exported(path, "onnx", precision, None, fp16_applied if precision == "fp16" else applied, {})
                for precision, path in paths.items()]

    def recipe_part(self, section: dict, where: str) -> RecipePart:
        precisions = tuple(recipe_field(section, "precisions", list, where))
        if not precisions or [p for p in precisions if p not in PRECISIONS]:
            raise EdgedepthError(f"recipe {where}: onnx precisions {list(precisions)} (choose from {PRECISIONS})")
        return RecipePart(precisions)

    def release_jobs(self, part: RecipePart, sizes, *, gate: bool, gpu_check: bool) -> list[Job]:
        """At the release's first size (the size the files record as edgedepth's): the FP32 export, the FP16 export
        (its own graph: fp16_safe) and INT8 quantised from the FP32 file, a job each."""
        return precision_jobs(self.name, sizes[0], part.precisions, int(gate), independent=("fp16",))

    def release_job(self, part: RecipePart, job: Job, rs: ReleaseStep) -> tuple[list[dict], dict]:
        """Files in onnx-community's layout (``HUB_LAYOUT``), parity-gated on ONNX Runtime (CPU).  Dynamic height and
        width with ``config.json`` and ``preprocessor_config.json`` (the transformers.js layout) for a family whose
        rewrites can keep the size symbolic and whose checkpoints have a transformers config; else (Depth Anything 3:
        static RoPE, frozen position embedding; no transformers / transformers.js class) fixed-size files at that
        size, no JSON."""
        import shutil

        from ...rewrites import format_defaults

        h, w = parse_size(job.size)
        precisions = job.precisions or part.precisions
        if job.after:       # INT8 from the FP32 job's file, with the rewrites that file was exported with
            (p,) = precisions
            rs.step(f"ONNX {job.size}: {p} from the FP32 file")
            rel = HUB_LAYOUT[p]
            os.makedirs(os.path.dirname(os.path.join(rs.staging, rel)), exist_ok=True)
            quantize_int8(os.path.join(rs.inputs, HUB_LAYOUT["fp32"]), os.path.join(rs.staging, rel))
            made = Exported(os.path.join(rs.staging, rel), self.name, p, None, rs.input_entries[0]["rewrites"], {})
            return [rs.entry(made.path, made, job.size, rel=rel)], {}
        dynamic = format_defaults(rs.ckpt.model, DYNAMIC_REWRITES)[1]
        rs.step(f"ONNX {job.size}: {', '.join(precisions)}")
        work = os.path.join(rs.staging, ".onnx-export")
        files = self.export(rs.ckpt.model, h, w, work, precisions=precisions, dynamic_size=dynamic)
        entries = []
        for f in files:
            rel = HUB_LAYOUT[f.precision]
            os.makedirs(os.path.dirname(os.path.join(rs.staging, rel)), exist_ok=True)
            os.replace(f.path, os.path.join(rs.staging, rel))
            entries.append(rs.entry(os.path.join(rs.staging, rel), f, job.size, rel=rel))
        shutil.rmtree(work, ignore_errors=True)
        # the transformers.js layout, by the release's first ONNX job (only V2's rewrites keep the size symbolic: a
        # transformers model)
        if dynamic and job.precisions in ((), ("fp32",)):
            rs.write_text(CONFIG, config_json(rs.ckpt.model, rs.model_name))
            rs.write_text(PREPROCESSOR_CONFIG, preprocessor_config_json())
        return entries, {}

    def release_entry(self, art, exported: Exported, size_text: str, io) -> dict:
        """A .onnx in the hub layout: dynamic-size (transformers.js reads it too) or fixed-size."""
        info, precision = art.info, exported.precision
        dynamic = bool(info.get("dynamic"))
        options = {"onnxruntime": "CPUExecutionProvider, intra_op_num_threads = number of big cores",
                   "openvino": "CPU, INFERENCE_PRECISION_HINT f32 (else bf16 on AMX CPUs)"}
        if dynamic:
            options["transformers.js"] = (f"dtype {TRANSFORMERS_JS_DTYPE[precision]}; this folder's "
                                          "preprocessor_config.json (518 px, aspect ratio kept, multiples of 14)")
        return {"format": "onnx", "runtime": "onnxruntime", "precision": precision, "size": size_text,
                **io(*art.size, INPUT_NAME, OUTPUT_NAME), "opset": info["opset"],
                **({"dynamic_size": "height and width: any multiples of 14 (size: the one verified and timed)"}
                   if dynamic else {}),
                "ops": info["ops"], "op_histogram": info["op_histogram"], "rewrites": exported.rewrites,
                "quantization": {"int8": "onnxruntime quantize_dynamic (int8 weights, uint8 activations per call)",
                                 "fp16": "onnxruntime float16 converter (weights and compute; float32 I/O kept)"}
                .get(precision),
                "recommended_runtime_options": options}

    card_order = 1

    def card_delegation(self, entry: dict) -> str:
        js = recommends(entry, "transformers.js")
        return f"runtime's choice (ONNX Runtime / OpenVINO{' / transformers.js' if js else ''})"

    def card_how_to(self, files: list[dict], ctx: CardContext) -> list[str]:
        from .card import js_block, onnx_blocks

        js = any(recommends(f, "transformers.js") for f in files)
        return onnx_blocks(files, ctx.metric, ctx.semantics, ctx) + (js_block(ctx.name, files) if js else [])

    def card_sizes_note(self, files: list[dict], ctx: CardContext) -> str:
        dyn = [f for f in files if f.get("dynamic_size")]
        return (f" The ONNX files take any H and W that are multiples of 14 ({ctx.checked_at(dyn[0])}); "
                f"upstream's processor (`preprocessor_config.json`) keeps the photo's aspect ratio, brings one side to "
                f"{UPSTREAM_SIDE} and rounds both to multiples of 14 (a 640×480 photo: 518×686).") if dyn else ""


FORMAT = Onnx()
