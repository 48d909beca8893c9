"""``edgedepth`` command line: export, inspect, predict.

Errors caused by input (bad files, bad sizes, unwritable folders, missing checkpoints) print one line
``edgedepth: error: ...`` and exit 2; set EDGEDEPTH_DEBUG=1 to see the traceback of an unexpected failure.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from .errors import EdgedepthError


def _precisions(text: str) -> list[str]:
    from .targets.litert import PRECISIONS

    items = [p.strip().lower() for p in text.split(",") if p.strip()]
    bad = [p for p in items if p not in PRECISIONS]
    if bad or not items:
        raise EdgedepthError(f"--precision {text!r}: choose from {', '.join(PRECISIONS)} (comma-separated)")
    return list(dict.fromkeys(items))


def cmd_export(args) -> int:
    from .checkpoint import DepthModule, load_checkpoint
    from .fsutil import ensure_writable_dir
    from .preprocess import parse_size
    from .progress import Stages
    from .targets import litert

    size = parse_size(args.size)
    precisions = _precisions(args.precision)
    ensure_writable_dir(args.out)
    with Stages(1 + len(precisions), enabled=not args.quiet) as stages:
        stages.start(f"load {args.model}")
        ckpt = load_checkpoint(args.model)
        module = DepthModule(ckpt.model)
        paths = litert.export(module, *size, args.out, precisions, verbose=args.verbose,
                              progress=stages.start)
    for p, path in paths.items():
        print(f"{p}: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
    return 0


def cmd_inspect(args) -> int:
    from .inspect import format_text, inspect_file

    infos = [inspect_file(f, gpu=not args.no_gpu) for f in args.files]
    if args.json:
        print(json.dumps(infos[0] if len(infos) == 1 else infos, indent=2))
    else:
        print("\n".join(format_text(i) for i in infos))
    return 0


def _runner_for(model: str, backend: str, size_text: str | None, threads: int):
    """A .tflite file -> LiteRT runner; anything else is a checkpoint -> PyTorch eager (backend must be cpu)."""
    if model.endswith(".tflite"):
        from .runtimes.litert import LiteRTRunner

        return LiteRTRunner(model, backend=backend, threads=threads)
    from .checkpoint import DepthModule, load_checkpoint
    from .preprocess import DEFAULT_SIZE, parse_size
    from .runtimes.torch import TorchRunner

    if backend != "cpu":
        raise EdgedepthError("--backend gpu needs a .tflite file; a checkpoint runs in PyTorch on the CPU")
    size = parse_size(size_text) if size_text else DEFAULT_SIZE
    return TorchRunner(DepthModule(load_checkpoint(model).model), size, threads)


def cmd_predict(args) -> int:
    from tqdm import tqdm

    from .predict import predict, validate_inputs

    validate_inputs(args.images, args.output)  # before a possibly slow model load
    runner = _runner_for(args.model, args.backend, args.size, args.threads)
    with tqdm(total=len(args.images), file=sys.stderr, disable=args.quiet, desc=f"predict ({runner.name})") as bar:
        written = predict(args.images, runner, args.output, raw=args.raw, progress=lambda _: bar.update(1))
    for w in written:
        print(w)
    return 0


def build_parser() -> argparse.ArgumentParser:
    from .checkpoint import DEFAULT_MODEL

    p = argparse.ArgumentParser(prog="edgedepth", description="Depth Anything V2 Small -> verified on-device artifacts")
    sub = p.add_subparsers(dest="command", required=True)

    e = sub.add_parser("export", help="export a checkpoint to LiteRT .tflite (FP32, dynamic INT8)")
    e.add_argument("--model", default=DEFAULT_MODEL,
                   help="HF_ID[@REV], a local HF folder, 'synthetic' or 'synthetic-tiny' (default: %(default)s)")
    e.add_argument("--size", default="518x686", help="HEIGHTxWIDTH, multiples of 14 (default: %(default)s)")
    e.add_argument("--out", required=True, help="output folder")
    e.add_argument("--precision", default="fp32,int8", help="comma-separated: fp32,int8 (default: %(default)s)")
    e.add_argument("--verbose", action="store_true", help="show the converter's own log")
    e.add_argument("--quiet", action="store_true", help="no progress bar")
    e.set_defaults(func=cmd_export)

    i = sub.add_parser("inspect", help="ops, I/O, weights, FC variants and GPU delegation of .tflite files")
    i.add_argument("files", nargs="+", metavar="FILE")
    i.add_argument("--json", action="store_true", help="print JSON")
    i.add_argument("--no-gpu", action="store_true", help="skip the GPU compile check")
    i.set_defaults(func=cmd_inspect)

    r = sub.add_parser("predict", help="depth maps for photos")
    r.add_argument("images", nargs="+", metavar="IMAGE")
    r.add_argument("--model", default=DEFAULT_MODEL, help="a .tflite file or a checkpoint (as for export)")
    r.add_argument("--backend", default="cpu", choices=["cpu", "gpu", "gpu-fp16"],
                   help="LiteRT backend; gpu = GPU alone with FP32 compute enforced (default: %(default)s)")
    r.add_argument("--size", default=None, help="HEIGHTxWIDTH for a checkpoint (a .tflite has its own)")
    r.add_argument("--threads", type=int, default=2, help="CPU threads (default: %(default)s)")
    r.add_argument("-o", "--output", required=True, help="output folder")
    r.add_argument("--raw", action="store_true", help="also write float .npy and 16-bit PNG depth")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    r.set_defaults(func=cmd_predict)
    return p


def _quiet_native_logs() -> None:
    """Keep TensorFlow/absl INFO chatter from the converter and runtime off the terminal (errors still show)."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    os.environ.setdefault("GLOG_minloglevel", "2")


def main(argv: list[str] | None = None) -> int:
    _quiet_native_logs()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except EdgedepthError as e:
        print(f"edgedepth: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("edgedepth: interrupted", file=sys.stderr)
        return 130
    except Exception as e:  # an unexpected failure: still one line unless debugging
        if os.environ.get("EDGEDEPTH_DEBUG"):
            raise
        print(f"edgedepth: error: unexpected {type(e).__name__}: {' '.join(str(e).split())[:500]} "
              "(set EDGEDEPTH_DEBUG=1 for the traceback)", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
