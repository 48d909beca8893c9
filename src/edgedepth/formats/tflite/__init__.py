"""LiteRT ``.tflite`` format: look inside (ops, I/O, weights, FC variants; schema bindings from ai_edge_litert), a GPU
check, the runner, and the export target: module -> ``.tflite`` (litert-torch), then the precision ladder from that FP32 file
(:mod:`.precisions`: fp16, int8, int4, static-int8, a16w8 through ai-edge-quantizer recipes).

Signature of every file: ``serving_default(args_0: float32[1,3,H,W]) -> output_0: float32[1,H,W]`` (the depth); a
family with more outputs (Depth Anything 3's confidence) adds ``output_1``, ... in ``ModelFamily.outputs`` order.
Files are written via temp + rename; a failed export leaves no partial file.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

from ... import interrupt, runtimes
from ...errors import EdgedepthError
from ...fsutil import read_input, write_bytes_atomic
from ...models import DEFAULT_STEM
from ...preprocess import MEAN, STD, parse_size
from ...progress import quiet_output as _quiet
from ...runtimes import native_log_captured
from ...runtimes.litert import GPU_OPTIONS
from ...runtimes.vulkan import vulkan_env
from ..base import CardContext, CliOption, Exported, Format, Job, ReleaseStep, precision_jobs, recipe_field
from .precisions import LADDER, calibration_inputs, quantize


def _schema():
    from ai_edge_litert import schema_py_generated as S

    return S


def check(path: str) -> bytes:
    """Read ``path`` and check it is a complete TFLite flatbuffer; raise a one-line error naming the problem."""
    data = read_input(path, "model file")       # a FIFO, device or /proc file: one line, never a hang
    if len(data) == 0:
        raise EdgedepthError(f"model file {path!r} is empty (0 bytes)")
    if len(data) < 8 or data[4:8] != b"TFL3":
        raise EdgedepthError(f"{path!r} is not a TFLite model (no TFL3 identifier)")
    model = _parse(data, path)
    for i, b in enumerate(model.buffers or []):
        if b.offset and b.offset + b.size > len(data):
            raise EdgedepthError(f"model file {path!r} is truncated (buffer {i} ends at byte {b.offset + b.size}, "
                                 f"file has {len(data)})")
    return data


def _parse(data: bytes, path: str):
    S = _schema()
    try:
        model = S.ModelT.InitFromPackedBuf(data, 0)
    except Exception as e:
        raise EdgedepthError(f"model file {path!r} is corrupt or truncated ({type(e).__name__})") from None
    if not model.subgraphs:
        raise EdgedepthError(f"model file {path!r} has no subgraph")
    return model


def _dtype_names() -> dict[int, str]:
    S = _schema()
    return {v: k for k, v in vars(S.TensorType).items() if not k.startswith("_")}


def _op_names() -> dict[int, str]:
    S = _schema()
    return {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}


def _tensor_info(t, dtypes) -> dict:
    return {"name": t.name.decode() if isinstance(t.name, bytes) else t.name,
            "shape": [int(s) for s in t.shape], "dtype": dtypes[t.type].lower()}


# Multiply-accumulates of the compute ops, from static shapes (weights layout: FC [out, in], CONV_2D [O, kh, kw, I],
# DEPTHWISE_CONV_2D [1, kh, kw, O], TRANSPOSE_CONV [O, kh, kw, I] applied to every input pixel).
def _op_macs(name: str, op, sg) -> int:
    shape = lambda i: [int(d) for d in sg.tensors[i].shape]     # noqa: E731
    out = int(np.prod(shape(op.outputs[0])))
    if name == "FULLY_CONNECTED":
        return out * shape(op.inputs[1])[-1]
    if name == "BATCH_MATMUL":
        a = shape(op.inputs[0])
        adj_x = bool(getattr(op.builtinOptions, "adjX", False))
        return out * a[-2 if adj_x else -1]
    if name == "CONV_2D":
        return out * int(np.prod(shape(op.inputs[1])[1:]))
    if name == "DEPTHWISE_CONV_2D":
        w = shape(op.inputs[1])
        return out * w[1] * w[2]
    if name == "TRANSPOSE_CONV":
        w = shape(op.inputs[1])
        return int(np.prod(shape(op.inputs[2]))) * w[0] * w[1] * w[2]
    return 0


RANK_PROMOTING_OPS = ("ADD", "MUL", "SUB", "DIV")
MAX_HAZARD_EXAMPLES = 5


def _is_constant(model, t) -> bool:
    buf = model.buffers[t.buffer] if t.buffer < len(model.buffers) else None
    return buf is not None and (buf.data is not None or bool(buf.offset))


def _gpu_hazard(name: str, op, model, sg) -> dict | None:
    """An elementwise op LiteRT's GPU accelerator computes wrongly, or None.

    Measured (ai-edge-litert 2.3.0, WebGPU delegate on SwiftShader; docs/spikes/depth-anything-3/bisect_FINDINGS.md
    and tests/test_litert_export.py): ADD / MUL / SUB / DIV whose *first* input has a lower rank than the output and
    more than one element while the second is a constant, e.g. ``MUL([N, C], gamma[1, 1, C]) -> [1, N, C]`` as
    litert-torch writes a LayerScale after a rank-2 FULLY_CONNECTED, are accepted (fully delegated, no warning) and
    return row 0 of that input broadcast over every row; the CPU is right.  With two runtime inputs the same shapes
    compute correctly (V2's residual ADDs).  edgedepth's own graphs avoid it (fold_layerscale); this finds it anywhere."""
    if name not in RANK_PROMOTING_OPS or len(op.inputs) < 2:
        return None
    first, second, out = (sg.tensors[i] for i in (op.inputs[0], op.inputs[1], op.outputs[0]))
    in_shape, out_shape = [int(d) for d in (first.shape if first.shape is not None else [])], [int(d) for d in out.shape]
    if len(in_shape) < len(out_shape) and int(np.prod(in_shape or [1])) > 1 and _is_constant(model, second) and \
            not _is_constant(model, first):
        return {"op": name, "input": in_shape, "output": out_shape}
    return None


def describe(path: str) -> dict:
    """Static description of a .tflite (no runtime needed)."""
    data = check(path)
    model = _parse(data, path)
    ops, dtypes = _op_names(), _dtype_names()
    sg = model.subgraphs[0]
    hist: collections.Counter = collections.Counter()
    fc_variants: collections.Counter = collections.Counter()
    macs: collections.Counter = collections.Counter()
    hazards: list[dict] = []
    for op in sg.operators:
        oc = model.operatorCodes[op.opcodeIndex]
        name = ops.get(max(oc.builtinCode, oc.deprecatedBuiltinCode), f"CUSTOM:{oc.customCode}")
        hist[name] += 1
        if h := _gpu_hazard(name, op, model, sg):
            hazards.append(h)
        if n := _op_macs(name, op, sg):
            macs[name] += n
        if name == "FULLY_CONNECTED":
            keep = bool(getattr(op.builtinOptions, "keepNumDims", False))
            in_rank = len(sg.tensors[op.inputs[0]].shape)
            out_rank = len(sg.tensors[op.outputs[0]].shape)
            wtype = dtypes[sg.tensors[op.inputs[1]].type].lower()
            fc_variants[f"keep_num_dims={keep} rank {in_rank}->{out_rank} weights {wtype}"] += 1
    weights: collections.Counter = collections.Counter()
    weight_bytes: collections.Counter = collections.Counter()
    for t in sg.tensors:
        buf = model.buffers[t.buffer] if t.buffer < len(model.buffers) else None
        size = (buf.size if buf is not None and buf.offset else (len(buf.data) if buf is not None and buf.data is not None else 0))
        if size:
            weights[dtypes[t.type].lower()] += 1
            weight_bytes[dtypes[t.type].lower()] += int(size)
    sigs = [{"key": s.signatureKey.decode() if isinstance(s.signatureKey, bytes) else s.signatureKey,
             "inputs": [x.name.decode() for x in s.inputs], "outputs": [x.name.decode() for x in s.outputs]}
            for s in (model.signatureDefs or [])]
    return {
        "file": os.path.basename(path),
        "bytes": len(data),
        "ops": len(sg.operators),
        "op_histogram": dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0]))),
        "inputs": [_tensor_info(sg.tensors[i], dtypes) for i in sg.inputs],
        "outputs": [_tensor_info(sg.tensors[i], dtypes) for i in sg.outputs],
        "signatures": sigs,
        "weights": {k: {"tensors": weights[k], "bytes": weight_bytes[k]} for k in sorted(weights)},
        "fc_variants": dict(sorted(fc_variants.items())),
        "macs": {"total": int(sum(macs.values())), **dict(sorted(macs.items(), key=lambda kv: -kv[1]))},
        "gpu_hazards": {"count": len(hazards), "examples": hazards[:MAX_HAZARD_EXAMPLES]},
    }


_RE_SPLIT = re.compile(r"(\d+) operations will run on the GPU, and the remaining (\d+) operations will run on the CPU")
_RE_UNSUPPORTED = re.compile(r"^([A-Z0-9_]+): (.*not supported.*)$")
_RE_ADAPTER = re.compile(r"Selected adapter: (.*)")
_RE_VALIDATION = re.compile(r"Validation error: (.*)")
_RE_ERROR = re.compile(r"(Failed to create [^:]*: )?((INVALID_ARGUMENT|UNIMPLEMENTED|INTERNAL|UNKNOWN): [^\n;]*)")


def gpu_check(path: str, timeout: float = 600.0, x: np.ndarray | None = None, enforce_f32: bool = True,
              info: dict | None = None) -> dict:
    """Compile ``path`` on LiteRT's GPU accelerator alone, in a child process; report delegation as data.

    With ``x`` the child also runs that input and the result carries ``output`` (numpy) — a GPU run from a process
    whose Vulkan driver choice nothing else in this process could have made first.

    Keys: fully_delegated (bool), gpu_ops / cpu_ops (int or None), unsupported ({op: reason}), adapter (str or None),
    error (str or None: the compile error, e.g. LiteRT #9481's "Unable to parse bc coord for BATCH axis"),
    validation_errors (int: WebGPU validation errors logged — an invalid pipeline compiles "fully delegated" and then
    computes garbage; with ``x`` given, compare ``output`` with the CPU's), validation_error (the first, or None) and
    gpu_hazards (int: ops the GPU accelerator computes wrongly although it accepts them: :func:`_gpu_hazard`).
    ``info``: the file's :func:`describe`, when the caller has it (an Artifact): the file is then only checked.
    """
    if info is None:
        info = describe(path)
    else:
        check(path)
    hazards = info["gpu_hazards"]["count"]
    with tempfile.TemporaryDirectory(prefix="edgedepth-gpu-") as tmp:
        x_path, y_path = os.path.join(tmp, "x.npy"), os.path.join(tmp, "y.npy")
        cmd = [sys.executable, "-m", "edgedepth.runtimes.gpu_probe", os.path.abspath(path)]
        if x is not None:
            np.save(x_path, np.ascontiguousarray(x, np.float32))
            cmd += [x_path, y_path]
        if not enforce_f32:
            cmd.append("--default-precision")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=vulkan_env())
        except subprocess.TimeoutExpired:
            return {"fully_delegated": False, "gpu_ops": None, "cpu_ops": None, "unsupported": {}, "adapter": None,
                    "error": f"GPU compile did not finish within {timeout:.0f} s", "gpu_hazards": hazards}
        output = np.load(y_path) if os.path.exists(y_path) else None
    result = parse_gpu_log(proc.stdout, proc.stderr, proc.returncode) | {"gpu_hazards": hazards}
    if x is not None:
        result["output"] = output
    return result


def parse_gpu_log(stdout: str, log: str, returncode: int) -> dict:
    """The probe's JSON line + LiteRT's stderr log -> delegation facts."""
    probe = None
    for line in stdout.splitlines():
        if line.startswith("EDGEDEPTH_GPU_PROBE "):
            probe = json.loads(line.split(" ", 1)[1])
    split = _RE_SPLIT.search(log)
    unsupported = {m.group(1): m.group(2) for m in (_RE_UNSUPPORTED.match(l.strip()) for l in log.splitlines())
                   if m and m.group(1) != "ERROR"}
    adapter = _RE_ADAPTER.search(log)
    error = None
    if probe is None:
        error = f"GPU probe crashed (exit code {returncode})"
    elif probe["exception"]:
        detail = _RE_ERROR.search(log)
        parts = []
        if unsupported:
            parts.append("ops not supported by the GPU delegate: " + ", ".join(sorted(unsupported)))
        if detail:
            parts.append(detail.group(2).strip())
        error = "; ".join(parts) or probe["exception"]
    fully = bool(probe and probe["compiled"] and probe["fully_accelerated"])
    invalid = _RE_VALIDATION.findall(log)
    return {
        "validation_errors": len(invalid),
        "validation_error": invalid[0].strip() if invalid else None,
        "fully_delegated": fully,
        "gpu_ops": int(split.group(1)) if split else None,
        "cpu_ops": int(split.group(2)) if split else (0 if fully else None),
        "unsupported": dict(sorted(unsupported.items())),
        "adapter": adapter.group(1).strip() if adapter else None,
        "error": error,
    }


def format_text(info: dict) -> str:
    lines = [f"{info['file']}: {info['bytes'] / 1e6:.1f} MB, {info['ops']} ops"]
    for s in info["signatures"]:
        lines.append(f"  signature {s['key']}({', '.join(s['inputs'])}) -> {', '.join(s['outputs'])}")
    for kind in ("inputs", "outputs"):
        for t in info[kind]:
            lines.append(f"  {kind[:-1]:6s} {t['name']}: {t['dtype']}{t['shape']}")
    lines.append("  op histogram: " + ", ".join(f"{k} {v}" for k, v in info["op_histogram"].items()))
    lines.append("  weights: " + ", ".join(f"{k} {v['tensors']} tensors / {v['bytes'] / 1e6:.1f} MB"
                                           for k, v in info["weights"].items()))
    for k, v in info["fc_variants"].items():
        lines.append(f"  FULLY_CONNECTED {k}: {v}")
    macs = info.get("macs", {})
    if macs.get("total"):
        lines.append(f"  compute: {macs['total'] / 1e9:.2f} G multiply-accumulates (" +
                     ", ".join(f"{k} {v / 1e9:.2f} G" for k, v in macs.items() if k != "total") + ")")
    hz = info.get("gpu_hazards") or {}
    if hz.get("count"):
        ex = hz["examples"][0]
        lines.append(f"  GPU HAZARD: {hz['count']} elementwise ops LiteRT's GPU accelerator computes wrongly (first "
                     f"input of lower rank than the output, e.g. {ex['op']} {ex['input']} -> {ex['output']}): the GPU "
                     "output will be wrong although the file is fully delegated")
    g = info.get("gpu")
    if g:
        where = f" on {g['adapter']}" if g["adapter"] else ""
        if g["fully_delegated"]:
            lines.append(f"  GPU{where}: fully delegated (all {info['ops']} ops)")
        else:
            split = f"{g['gpu_ops']} ops on GPU, {g['cpu_ops']} would fall back to CPU; " if g["gpu_ops"] is not None else ""
            lines.append(f"  GPU{where}: NOT fully delegated: {split}{g['error']}")
    return "\n".join(lines)


PRECISIONS = tuple(LADDER)
DEFAULT_PRECISIONS = ("fp32", "int8")       # what `export` makes when --precision is not given


def needs_calibration(precisions) -> bool:
    return any(LADDER[p].calibrated for p in precisions)


INPUT_DTYPES = ("float32", "uint8")
PIXEL_INPUT_PRECISIONS = ("fp32", "fp16")   # precisions written with a uint8 input (float compute: the GPU files)
PIXEL_VARIANT = "uint8 pixel input"         # the release job that writes them


def file_name(height: int, width: int, precision: str, plain: bool = False, stem: str = DEFAULT_STEM,
              input_dtype: str = "float32") -> str:
    """``<stem>_<H>x<W>_<precision>[_plain][_u8in].tflite``; the stem names the family member (``Member.file_stem``),
    ``_u8in`` a file that takes uint8 pixels (:func:`pixel_input`)."""
    part = LADDER[precision].file_part if precision in LADDER else precision
    return f"{stem}_{height}x{width}_{part}{'_plain' if plain else ''}{'_u8in' if input_dtype == 'uint8' else ''}.tflite"


def pixel_input(module):
    """``module`` (normalised float32 NCHW in) taking uint8 RGB pixels [1,3,H,W] at the model size instead: the graph
    casts, scales by 1/255 and normalises with ImageNet mean/std (``edgedepth.preprocess``'s steps; exact up to float
    rounding: the converter may turn the division by std into a multiplication). It answers the GPU's per-call floor:
    on the H200 writing the 4.3 MB float32 input costs ~1.6 ms of a call, the 1.1 MB of uint8 ~0.2 ms
    (benchmarks/gpu_floor.py). The caller only resizes (bicubic, uint8), as the playground and predict already do."""
    import torch
    from torch import nn

    class PixelInput(nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner
            self.register_buffer("mean", torch.tensor(MEAN, dtype=torch.float32).view(1, 3, 1, 1))
            self.register_buffer("std", torch.tensor(STD, dtype=torch.float32).view(1, 3, 1, 1))

        def forward(self, x):
            x = x.to(torch.float32) * float(np.float32(1 / 255))
            return self.inner((x - self.mean) / self.std)

    return PixelInput(module)


def convert_fp32(module, height: int, width: int, path: str, *, verbose: bool = False,
                 input_dtype: str = "float32") -> None:
    """Trace ``module`` at [1,3,H,W] and write the FP32 .tflite atomically (``input_dtype`` uint8: see pixel_input).

    The flatbuffer is taken as bytes (``model_content``: the same bytes its own file export writes) and written from
    Python: litert-torch's C++ file writer aborts the whole process on a full disk ("LLVM ERROR: IO failure on output
    stream"), Python raises an ``OSError``.  The converter's native log (absl, oneDNN) is kept off the terminal unless
    ``verbose``, and shown when the conversion fails."""
    import torch

    rng = np.random.default_rng(0)
    if input_dtype == "uint8":
        module = pixel_input(module)
        sample = torch.from_numpy(rng.integers(0, 256, (1, 3, height, width), dtype=np.uint8))
    else:
        sample = torch.from_numpy(rng.standard_normal((1, 3, height, width), dtype=np.float32))
    with _native_log(verbose), _quiet(not verbose), torch.no_grad():
        import litert_torch

        data = litert_torch.convert(module.eval(), (sample,)).model_content()
    interrupt.check()           # Ctrl-C swallowed inside the converter: stop before writing
    ensure_space(os.path.dirname(os.path.abspath(path)), len(data))
    write_bytes_atomic(path, data)


_LOG_NOISE = re.compile(r"^(INFO: |I\d{4} |WARNING: All log messages before absl::InitializeLog)")


@contextlib.contextmanager
def _native_log(verbose: bool):
    """What native code (converter, TFLite interpreter) writes to stderr in the block stays off the terminal unless
    ``verbose``; when the block fails, its lines other than INFO are shown (the native account of what went wrong)."""
    log: list[str] = []
    try:
        with native_log_captured(log, show=verbose):
            yield
    except Exception:
        for line in log:
            if not _LOG_NOISE.match(line):
                print(line, file=sys.stderr)
        raise


def ensure_space(folder: str, need: int) -> None:
    """Raise a one-line error when ``folder``'s file system has less than ``need`` bytes free."""
    free = shutil.disk_usage(folder).free
    if free < need:
        raise EdgedepthError(f"not enough free space in {folder!r}: about {need / 1e6:.1f} MB needed, "
                             f"{free / 1e6:.1f} MB free")


def quantize_int8(fp32_path: str, path: str, *, verbose: bool = False) -> None:
    """Dynamic-range INT8 (int8 weights, float activations) from an FP32 .tflite, written atomically."""
    quantize(fp32_path, path, "int8", verbose=verbose)


def export(module, height: int, width: int, out_dir: str, precisions=DEFAULT_PRECISIONS, *, plain: bool = False,
           verbose: bool = False, progress=None, stem: str = DEFAULT_STEM, input_dtype: str = "float32") -> dict[str, str]:
    """Export ``module`` to ``out_dir``; returns {precision: path}. Every other precision is made from the FP32 graph.

    ``progress(stage_name)`` is called as each stage starts (the CLI drives a bar with it). ``input_dtype`` "uint8":
    files that take pixels (:func:`pixel_input`), FP32 and FP16 weights (``PIXEL_INPUT_PRECISIONS``).
    """
    if input_dtype not in INPUT_DTYPES:
        raise EdgedepthError(f"--input-dtype {input_dtype}: choose from {', '.join(INPUT_DTYPES)}")
    if input_dtype == "uint8" and not set(precisions) <= set(PIXEL_INPUT_PRECISIONS):
        raise EdgedepthError(f"--input-dtype uint8 is exported for --precision {','.join(PIXEL_INPUT_PRECISIONS)} only "
                             "(float compute: the GPU files; the integer precisions are not measured with a uint8 input)")
    stage = interrupt.checking(progress)
    paths = {p: os.path.join(out_dir, file_name(height, width, p, plain, stem, input_dtype)) for p in precisions}
    fp32 = paths.get("fp32") or os.path.join(out_dir, "." + file_name(height, width, "fp32", plain, stem) + ".int8src")
    try:
        with interrupt.removed_on_failure([]) as written:      # failed or interrupted: none of its files is left
            stage(f"convert FP32 {height}x{width}")
            written.append(fp32)
            convert_fp32(module, height, width, fp32, verbose=verbose, input_dtype=input_dtype)
            quantized(fp32, out_dir, height, width, [p for p in precisions if p != "fp32"], plain=plain,
                      verbose=verbose, progress=progress, stem=stem, input_dtype=input_dtype)
    finally:
        if "fp32" not in paths:
            with contextlib.suppress(FileNotFoundError):
                os.remove(fp32)
    return paths


def quantized(fp32: str, out_dir: str, height: int, width: int, precisions, *, plain: bool = False,
              verbose: bool = False, progress=None, stem: str = DEFAULT_STEM, input_dtype: str = "float32") -> dict:
    """The ``precisions`` (FP32 excepted) made from the FP32 file ``fp32`` into ``out_dir`` under :func:`file_name`'s
    names; returns {precision: path}.  The same bytes as :func:`export` writes (it calls this), whether the FP32 file
    was converted just now or by another job on another machine."""
    stage = interrupt.checking(progress)
    paths = {p: os.path.join(out_dir, file_name(height, width, p, plain, stem, input_dtype)) for p in precisions}
    calibration = None
    with interrupt.removed_on_failure([]) as written:          # failed or interrupted: none of its files is left
        for p in precisions:
            if needs_calibration([p]) and calibration is None:
                stage(f"calibration inputs ({height}x{width})")
                calibration = calibration_inputs(height, width)
            stage(f"quantize {p}")
            # the quantizer writes through mmap, which a full disk answers with SIGBUS, not an error: every
            # precision is smaller than the FP32 file, so that much free space is enough
            ensure_space(out_dir, os.path.getsize(fp32))
            written.append(paths[p])
            with _native_log(verbose):      # calibration runs the TFLite interpreter, which logs
                quantize(fp32, paths[p], p, calibration=calibration, verbose=verbose)
            interrupt.check()
    return paths


def open_runner(path: str, backend: str = "cpu", threads: int = 2):
    """LiteRT CompiledModel on ``cpu``, ``gpu`` (FP32 enforced) or ``gpu-fp16`` (default precision policy)."""
    check(path)
    return runtimes.open_runner("tflite", backend, path, threads)


def _delegation(entry: dict) -> str:
    return {True: "yes", False: "**no**", None: "not checked"}[entry.get("gpu_fully_delegated")]


@dataclasses.dataclass(frozen=True)
class RecipePart:
    """The recipe's ``litert`` section: precisions at every size, and those also written at the first size taking
    uint8 pixels (the GPU files)."""
    precisions: tuple[str, ...]
    pixel_input: tuple[str, ...] = ()


class LiteRT(Format):
    name, suffix, target_name, title = "tflite", ".tflite", "litert", "LiteRT"
    precisions, default_precisions = PRECISIONS, DEFAULT_PRECISIONS
    has_gpu_check, browser_runtime = True, "LiteRT.js"
    recipe_required = True
    notice = ("- converted from PyTorch to LiteRT (.tflite) with litert-torch; INT8 files quantised with "
              "ai-edge-quantizer\n  (dynamic_wi8_afp32: int8 weights, float activations);\n")
    cli_options = (
        CliOption("--fp16-safe", dict(action="store_true", default=False,
                                      help="LiteRT: also rescale activations by exact powers of two so they fit FP16 "
                                           "(for gpu-fp16)")),
        CliOption("--input-dtype", dict(default="float32", choices=list(INPUT_DTYPES),
                                        help="uint8: the .tflite takes resized RGB pixels [1,3,H,W] and normalises in "
                                             "the graph (fp32/fp16; a quarter of the input bytes a GPU call uploads); "
                                             "default: %(default)s")),
    )

    check, describe, format_text = staticmethod(check), staticmethod(describe), staticmethod(format_text)

    def open_runner(self, path: str, backend: str = "cpu", threads: int = 2, size=None):
        return open_runner(path, backend, threads)

    def gpu_check(self, path: str, info: dict, **kw) -> dict:
        return gpu_check(path, info=info, **kw)

    def output_names(self, roles: tuple[str, ...]) -> list[str]:
        """litert-torch's signature names, in the module's return order."""
        return [f"output_{i}" for i in range(len(roles))]

    def check_options(self, precisions, options: dict) -> None:
        super().check_options(precisions, options)
        if options.get("input_dtype", "float32") != "float32" and not set(precisions) <= set(PIXEL_INPUT_PRECISIONS):
            raise EdgedepthError(f"--input-dtype {options['input_dtype']} is for LiteRT float files: use "
                                 f"--target litert --precision {','.join(PIXEL_INPUT_PRECISIONS)}")

    def export_stages(self, precisions, options: dict) -> int:
        # rewrites + the FP32 conversion (always: the other precisions are made from it) + one per other precision
        return 2 + sum(p != "fp32" for p in precisions) + int(needs_calibration(precisions))

    def export(self, model, height: int, width: int, out_dir: str, *, precisions=DEFAULT_PRECISIONS,
               rewrites="default", verbose: bool = False, progress=None, stem: str = DEFAULT_STEM,
               input_dtype: str = "float32", fp16_safe: bool = False) -> list[Exported]:
        """Prepare (rewrites; ``fp16_safe``: the defaults plus fp16_safe) -> FP32 -> the other precisions."""
        from ...rewrites import default_names, prepare

        bad = [p for p in precisions if p not in PRECISIONS]
        if bad or not precisions:
            raise EdgedepthError(f"precision {', '.join(bad) or '(none)'}: LiteRT files are {', '.join(PRECISIONS)}")
        if fp16_safe:
            rewrites = default_names(model) + ["fp16_safe"]
        progress = progress or (lambda stage: None)
        progress("rewrites" if rewrites else "rewrites: off (plain)")
        module, report = prepare(model, height, width, rewrites)
        applied = [r["name"] for r in report if r["changed"]]
        paths = export(module, height, width, out_dir, precisions, plain=not rewrites, verbose=verbose,
                       progress=progress, stem=stem, input_dtype=input_dtype)
        return [Exported(path, "tflite", precision, None, applied, {}) for precision, path in paths.items()]

    def recipe_part(self, section: dict, where: str) -> RecipePart:
        precisions = tuple(recipe_field(section, "precisions", list, where))
        bad = [p for p in precisions if p not in PRECISIONS]
        if bad:
            raise EdgedepthError(f"recipe {where}: litert precision(s) {bad} unknown (choose from {PRECISIONS})")
        pixel = tuple(section.get("pixel_input", []))
        if [p for p in pixel if p not in PIXEL_INPUT_PRECISIONS]:
            raise EdgedepthError(f"recipe {where}: litert pixel_input {list(pixel)} (choose from "
                                 f"{PIXEL_INPUT_PRECISIONS}: float files, for the GPU)")
        return RecipePart(precisions, pixel)

    def release_jobs(self, part: RecipePart, sizes, *, gate: bool, gpu_check: bool) -> list[Job]:
        """Per size, the FP32 export and each other precision quantised from its file (a job each), + the uint8-input
        GPU files at the first size."""
        per_file = gpu_check + gate
        jobs = [j for text in sizes for j in precision_jobs(self.name, text, part.precisions, per_file)]
        if part.pixel_input:
            at = len(precision_jobs(self.name, sizes[0], part.precisions, per_file))
            jobs[at:at] = precision_jobs(self.name, sizes[0], part.pixel_input, per_file, PIXEL_VARIANT)
        return jobs

    def release_job(self, part: RecipePart, job: Job, rs: ReleaseStep) -> tuple[list[dict], dict]:
        """One size's .tflite files (or the uint8-input GPU files), GPU-checked and parity-gated as they are made: the
        FP32 export (with its rewrites), or a precision quantised from that job's FP32 file (``job.after``)."""
        h, w = parse_size(job.size)
        pixel = job.variant == PIXEL_VARIANT
        precisions = job.precisions or (part.pixel_input if pixel else part.precisions)
        input_dtype = "uint8" if pixel else "float32"
        if job.after:
            (p,) = precisions
            rs.step(f"quantize {p} {job.size}" + (f", {PIXEL_VARIANT}" if pixel else ""))
            name = file_name(h, w, "fp32", not rs.rewrites, rs.ckpt.file_stem, input_dtype)
            paths = quantized(os.path.join(rs.inputs, name), rs.staging, h, w, precisions, plain=not rs.rewrites,
                              stem=rs.ckpt.file_stem, input_dtype=input_dtype)
            files = [Exported(paths[p], "tflite", p, None, [], {})]
        else:
            rs.step(f"rewrites + export {job.size}" + (f", {PIXEL_VARIANT}" if pixel else ""))
            files = self.export(rs.ckpt.model, h, w, rs.staging, precisions=precisions, rewrites=rs.rewrites,
                                stem=rs.ckpt.file_stem, input_dtype=input_dtype)
        entries = [rs.entry(f.path, f, job.size, gpu_check=rs.gpu_check) for f in files]
        return entries, ({} if pixel or job.after else {job.size: files[0].rewrites})

    def release_entry(self, art, exported: Exported, size_text: str, io) -> dict:
        """uint8-input files say so in their I/O."""
        info, precision = art.info, exported.precision
        return {"format": "tflite", "runtime": "litert", "precision": precision, "size": size_text,
                **io(*art.size, input_dtype=info["inputs"][0]["dtype"]), "ops": info["ops"],
                "op_histogram": info["op_histogram"],
                "recommended_runtime_options": {
                    "gpu": {"accelerator": "GPU", "enforce_f32": True, **GPU_OPTIONS},
                    "cpu": {"accelerator": "CPU", "num_threads": "number of big cores"}},
                "quantization": LADDER[precision].summary if precision != "fp32" else None}

    def card_delegation(self, entry: dict) -> str:
        return _delegation(entry)

    def card_how_to(self, files: list[dict], ctx: CardContext) -> list[str]:
        from .card import how_to

        return ["LiteRT, Python ([`ai-edge-litert`](https://pypi.org/project/ai-edge-litert/)), on the CPU or, with "
                "`USE_GPU = True`, the GPU:", "", *how_to(ctx.example, ctx.metric, ctx.semantics), "",
                "Browser ([`@litertjs/core`](https://www.npmjs.com/package/@litertjs/core)): `loadLiteRt(wasmDir)`, "
                "then `loadAndCompile(bytes, {accelerator: 'webgpu'})` (or `'wasm'`) and `model.run(tensor)`; verify "
                "each file's SHA-256 against `manifest.json` before use. `edgedepth serve .` runs a playground that "
                "does exactly this.", ""]


FORMAT = LiteRT()
