"""``edgedepth`` command line: export, inspect, predict.

Errors caused by input (bad files, bad sizes, unwritable folders, missing checkpoints) print one line
``edgedepth: error: ...`` and exit 2; set EDGEDEPTH_DEBUG=1 to see the traceback of an unexpected failure.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import errno
import json
import os
import re
import sys

import numpy as np

from . import extras, formats, interrupt
from .errors import EdgedepthError
from .version import __version__
from .formats.base import list_option
from .fsutil import made_dir, temp_target, write_bytes_atomic
from .images import image_set, image_set_hash
from .models import DEFAULT_MODEL, MEMBERS, SYNTHETIC
from .predict import predict, validate_inputs
from .preprocess import DEFAULT_SIZE, MAX_PIXELS, MAX_SIDE, parse_size
from .progress import JobsBar, Stages
from .release import build, load_recipe
from .release.build import stage_count
from .release.manifest import (check_made_from, escape, load as load_manifest, member_of_file,
                               verify as verify_release, verify_files_next_to, verify_next_to)
from .release.outdir import check_export_dir, check_out_dir
from .runtimes import BACKENDS as RUNTIME_BACKENDS, REFERENCE_BACKEND, native_log_shown
from .serve import add_parser as add_serve_parser
from .verify import records
from .verify.bench import environment, run_interleaved
from .verify.reports import bench_markdown, latency_plot, parity_plot, validate_markdown
from .verify.validate import validate

# Lazy below: edgedepth.checkpoint, .rewrites and .runtimes.torch import torch (~1 s); the CLI starts without it.


def _max_depth(args):
    """``--max-depth``, checked: metres (a positive number), "relative", or None."""
    from .models.base import checked_max_depth

    return None if args.max_depth is None else checked_max_depth(args.max_depth, "--max-depth")


def cmd_export(args) -> int:
    check_export_dir(args.out)          # never into a release folder: its files would no longer match it
    with made_dir(args.out):      # checks the folder is writable; a failed export leaves no empty folder behind
        return _export(args)


def _export_options(args, fmt) -> dict:
    """The target's own options from the command line; another format's option, given, is a one-line error."""
    for other in formats.FORMATS:
        for o in other.cli_options if other is not fmt else ():
            if getattr(args, o.dest) != o.kwargs.get("default"):
                raise EdgedepthError(f"{o.flag} is for {other.title} files (--target {other.target_name}), "
                                     f"not {fmt.title}")
    return fmt.export_options(args)


def _export(args) -> int:
    from .checkpoint import load_checkpoint

    size = parse_size(args.size)
    fmt = formats.target(args.target)
    precisions = list_option("--precision", args.precision or ",".join(fmt.default_precisions), fmt.precisions)
    options = _export_options(args, fmt)
    if args.plain and options.get("fp16_safe"):
        raise EdgedepthError("--fp16-safe is a rewrite: it cannot be combined with --plain")
    fmt.check_options(precisions, options)
    with Stages(1 + fmt.export_stages(precisions, options), enabled=not args.quiet) as stages:
        stages.start(f"load {args.model}")
        ckpt = load_checkpoint(args.model, max_depth=_max_depth(args))
        files = formats.export(ckpt.model, *size, args.out, target_name=args.target, precisions=precisions,
                               rewrites=() if args.plain else "default", verbose=args.verbose, progress=stages.start,
                               stem=ckpt.file_stem, **options)
    for f in files:
        st = f.stats
        extra = (f", {st['delegated_nodes']} nodes delegated, {st['non_delegated_nodes']} not"
                 if "delegated_nodes" in st else "")
        print(f"{f.backend + ' ' if f.backend else ''}{f.precision}: {f.path} "
              f"({os.path.getsize(f.path) / 1e6:.1f} MB{extra})")
    m = ckpt.member
    if m and m.license != "apache-2.0":
        print(f"note: {m.hub_id} is licensed {m.license}: files derived from it are for non-commercial use only",
              file=sys.stderr)
    return 0


def cmd_inspect(args) -> int:
    if args.ranges:
        from .fp16.report import run_cli

        if args.files:
            raise EdgedepthError("inspect --ranges probes a checkpoint (--model), not files")
        if args.images < 1:
            raise EdgedepthError("--images must be at least 1")
        text = run_cli(args.model or DEFAULT_MODEL, args.size, args.images, as_json=bool(args.json))
        if args.json and args.json != "-":
            write_bytes_atomic(args.json, (text.rstrip("\n") + "\n").encode())
        else:
            print(text)
        return 0
    if not args.files:
        raise EdgedepthError("inspect needs model file(s), or --ranges --model M")

    arts = [formats.open_artifact(f) for f in args.files]
    for a in arts:
        if a.format.has_gpu_check:
            a.info["gpu"] = None if args.no_gpu else a.gpu_check()
    infos = [a.info for a in arts]
    if args.json:
        _write_or_print_json(args.json, infos[0] if len(infos) == 1 else infos)
    else:
        print("\n".join(a.format_text() for a in arts))
    return 0


def _runner_for(model: str, backend: str, size_text: str | None, threads: int, max_depth=None):
    """A model file (any registered format) -> its runtime; anything else is a checkpoint -> PyTorch eager (CPU).
    Returns (runner, family member or None): the member says whether the output is metres.  ``size_text``: a
    checkpoint's size, or the size to run a dynamic-size .onnx at (any other file must already have it); without it a
    dynamic-size .onnx runs each photo at its processor's size (its preprocessor_config.json, checked against the
    release manifest like the file)."""
    if formats.is_artifact(model):
        verify_next_to(model)  # a file inside a release folder must match its manifest
        size = parse_size(size_text) if size_text else None
        member = member_of_file(model)       # its manifest's member, else its name's: whose outputs it has
        fmt = formats.format_of(model)
        if size is None and fmt.dynamic_size:
            runner = fmt.open_photo_runner(model, backend, threads, verify=verify_next_to)
        else:
            runner = formats.open_runner(model, backend, threads, size)
        return formats.name_outputs(runner, member), member
    from .checkpoint import DepthModule, load_checkpoint
    from .runtimes.torch import TorchRunner

    if backend != REFERENCE_BACKEND:
        raise EdgedepthError(f"--backend {backend} needs a model file; a checkpoint runs in PyTorch on the CPU")
    size = parse_size(size_text) if size_text else DEFAULT_SIZE
    ckpt = load_checkpoint(model, max_depth=max_depth)
    # DA3: its confidence or sky too (predict)
    return TorchRunner(DepthModule(ckpt.model, ckpt.outputs), size, threads), ckpt.member


def _refuse_release_folder(model: str) -> None:
    """``--model DIR`` where DIR is an edgedepth release folder (it has a manifest.json): one line naming what to pass
    instead, the manifest's recommended CPU file and the ONNX file that runs each photo at its own size.  The folder
    holds several files (sizes, precisions, formats) that give different maps, so predict does not pick one."""
    import shlex

    from .release.manifest import MANIFEST

    if not (os.path.isdir(model) and os.path.lexists(os.path.join(model, MANIFEST))):
        return
    m = load_manifest(model)        # schema-checked: a malformed manifest is its own one line
    files = [f for f in m["files"] if formats.is_artifact(f["path"])]
    shown = lambda rel: shlex.quote(escape(os.path.join(model, rel)))     # noqa: E731
    rec = m.get("recommended") if isinstance(m.get("recommended"), dict) else {}
    cpu = rec.get("cpu") if isinstance(rec.get("cpu"), dict) else {}
    listed = {f["path"] for f in files}
    picks = [f"--model {shown(cpu['path'])} (recommended for CPU)"] if cpu.get("path") in listed else []
    onnx = [f["path"] for f in files if f.get("dynamic_size") and f.get("precision") == "fp32"]
    picks += [f"--model {shown(onnx[0])} (each photo at its own size, as transformers.js)"] if onnx else []
    if not picks and files:
        picks = [f"--model {shown(files[0]['path'])}"]
    what = f"pass one of its model files: {' or '.join(picks)}" if picks else "it lists no model files"
    raise EdgedepthError(f"--model {escape(model)} is an edgedepth release folder (it has a {MANIFEST}), not a "
                         f"checkpoint: {what}")


def cmd_predict(args) -> int:
    from tqdm import tqdm

    _refuse_release_folder(args.model)      # a release folder is not a checkpoint: name its files
    with made_dir(args.output):     # a failed run leaves no empty folder behind
        validate_inputs(args.images, args.output, args.max_pixels, raw=args.raw,     # before a possibly slow
                        overwrite=args.overwrite)                                   # model load
        runner, member = _runner_for(args.model, args.backend, args.size, args.threads, _max_depth(args))
        max_depth = member.max_depth if member and member.is_metric else None
        desc = f"predict ({runner.name}{', metres' if max_depth else ''})"
        with tqdm(total=len(args.images), file=sys.stderr, disable=args.quiet, desc=desc) as bar:
            written = predict(args.images, runner, args.output, raw=args.raw, progress=lambda _: bar.update(1),
                              max_depth=max_depth, max_pixels=args.max_pixels,
                              larger_is_farther=bool(member and member.larger_is_farther),
                              overwrite=args.overwrite)
    for w in written:
        print(escape(w))        # a newline or escape sequence in a photo's name never reaches the terminal raw
    return 0


def _write_json(path: str, data) -> None:
    write_bytes_atomic(path, (json.dumps(data, indent=2, sort_keys=False) + "\n").encode())


def _model_files(paths: list[str]) -> list[str]:
    """Model files (a folder: its files of every format), each checked against a release manifest beside it."""
    return verify_files_next_to(formats.find_artifacts(paths))


def cmd_validate(args) -> int:
    from tqdm import tqdm

    from .checkpoint import DepthModule, load_checkpoint

    backends = list_option("--backend", args.backend, formats.BACKENDS)

    artifacts = [formats.open_artifact(p) for p in _model_files(args.artifacts)]
    for a in artifacts:
        if not set(backends) & set(a.format.backends):
            raise EdgedepthError(f"{a.name}: a {a.format.suffix} file runs on --backend "
                                 f"{', '.join(a.format.backends)}, not {', '.join(backends)}")
    items = image_set(args.images, args.limit, args.max_pixels)
    ckpt = load_checkpoint(args.model, max_depth=_max_depth(args))
    check_made_from([a.path for a in artifacts], ckpt.member, args.model)
    total = sum(len(set(backends) & set(a.format.backends)) for a in artifacts) * len(items)
    with tqdm(total=total, file=sys.stderr, disable=args.quiet, desc="validate", unit="img") as bar:
        results = validate(artifacts, backends, DepthModule(ckpt.model, ckpt.outputs), items,
                           threads=args.threads, progress=bar.update)
    report = {
        "kind": "edgedepth.validate", "reference": ckpt.provenance(),
        "image_set": {"source": args.images or "default", "count": len(items), "sha256": image_set_hash(items)},
        "environment": environment(args.threads), "results": results,
    }
    if args.worst:          # each file's worst photo, side by side
        from .verify.worst import worst_report

        report["worst"] = worst_report(results, artifacts, DepthModule(ckpt.model, ckpt.outputs), items, args.worst,
                                       threads=args.threads)
    _write_or_print_json(args.json, records.with_records(report, args.json))   # records: what a release reads
    if args.plot:
        parity_plot(report, args.plot)
    if args.json != "-":
        print(validate_markdown(report))
    failed = [r for r in results if r["status"] != "ok"]
    return 1 if failed and args.strict else 0


def cmd_bench(args) -> int:
    from tqdm import tqdm

    arts = [formats.open_artifact(p) for p in _model_files(args.artifacts)]
    backend = list_option("--backend", args.backend, formats.BACKENDS)
    if len(backend) != 1:
        raise EdgedepthError("bench takes one --backend per run (variants are compared inside one backend)")
    backend = backend[0]
    variants = {}
    for a in arts:
        if backend not in a.format.backends:
            raise EdgedepthError(f"{a.name}: a {a.format.suffix} file is benchmarked on --backend "
                                 f"{', '.join(a.format.backends)} only")
        variants[a.name] = (lambda a=a: a.open_runner(backend=backend, threads=args.threads))
    sizes = {a.input_shape for a in arts}
    if len(sizes) != 1:
        raise EdgedepthError(f"bench compares files of one input shape; got {sorted(sizes)}")
    shape = sizes.pop()
    if args.torch:
        from .checkpoint import DepthModule, load_checkpoint
        from .runtimes.torch import TorchRunner

        module = DepthModule(load_checkpoint(args.torch).model)
        variants[f"pytorch-eager ({args.torch})"] = lambda: TorchRunner(module, shape[2:], args.threads)
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    with tqdm(total=args.rounds * len(variants) * (args.warmup + args.iters), file=sys.stderr, disable=args.quiet,
              desc=f"bench ({backend})", unit="call") as bar:
        res = run_interleaved(variants, x, rounds=args.rounds, warmup=args.warmup, iters=args.iters,
                              progress=lambda done, total: bar.update(done - bar.n))
    for a in arts:  # ties each timing to the exact bytes timed (release model cards match on it)
        res["variants"][a.name]["sha256"] = a.sha256
    report = {"kind": "edgedepth.bench", "backend": backend, "input_shape": list(shape),
              "environment": environment(args.threads), **res}
    if RUNTIME_BACKENDS[backend].gpu:
        report["environment"]["gpu_adapter"] = (arts[0].gpu_check() or {}).get("adapter")
    _write_or_print_json(args.json, records.with_records(report, args.json))
    if args.plot:
        latency_plot(report, args.plot)
    if args.json != "-":
        print(bench_markdown(report))
    return 0


def cmd_release(args) -> int:
    if not args.out and not args.dry_run:
        raise EdgedepthError("release: --out DIR is required (the release folder to make)")
    overrides = dict(sizes=None if args.sizes is None else args.sizes.split(","), parity_images=args.parity_images,
                     formats=None if args.formats is None else args.formats.split(","))
    if args.family:
        return _release_family(args, overrides)
    if args.synthetic:
        raise EdgedepthError("--synthetic goes with --family (one release: --model synthetic-...)")
    if not args.dry_run:
        check_out_dir(args.out, force=args.force)    # refusals before any work (build checks again, under its lock)
    recipe = load_recipe(args.recipe).with_overrides(
        model=args.model, name=args.name, base_model=args.base_model, images=args.images, max_depth=args.max_depth,
        **overrides)
    if recipe.parity_folder and recipe.parity_images != 0:
        image_set(recipe.parity_folder)     # every photo checked from its header before anything slow
    cache, executor = _build_cache(args), _executor(args)
    if args.dry_run:
        from .release.build import plan

        return _dry_run([plan(recipe, gpu_check=not args.no_gpu_check)], cache)
    kw = dict(gpu_check=not args.no_gpu_check, force=args.force, executor=executor, cache=cache)
    if executor.name == "serial":
        with Stages(stage_count(recipe, gpu_check=not args.no_gpu_check), enabled=not args.quiet) as s:
            m = build(recipe, args.out, progress=s.start, **kw)
    else:
        with JobsBar(enabled=not args.quiet) as bar:
            m = build(recipe, args.out, progress=bar.stage, jobs_progress=bar.jobs, **kw)
    for f in m["files"]:
        print(f"{f['path']}  {f['bytes'] / 1e6:8.1f} MB  {f['sha256'][:16]}…")
    report = _build_summary([("", args.out)], args.summary)
    print(f"release folder: {args.out} (verify with: edgedepth verify {args.out}); {report}")
    return 0


def _build_cache(args):
    """The build cache the options name (None: --no-cache, or EDGEDEPTH_BUILD_CACHE=off)."""
    from .release.cache import BuildCache, default_dir, parse_size as cache_bytes

    where, cap = args.cache or os.environ.get("EDGEDEPTH_BUILD_CACHE") or default_dir(), cache_bytes(args.cache_size)
    if args.no_cache or where == "off":
        return None
    return BuildCache(where, cap)


def _executor(args):
    from .release.executors import RayCluster, Serial

    if args.executor == "ray" or args.ray_address:
        extras.require("ray")       # not installed: one line naming the extra, before any work
        return RayCluster(args.ray_address or os.environ.get("RAY_ADDRESS") or None)
    return Serial()


def _dry_run(plans, cache) -> int:
    """List every job of ``plans``, whether the build cache has it, and what it declares."""
    rows = [(spec.release or p.recipe.name, spec, bool(cache and cache.get(spec.key))) for p in plans for spec in p.specs]
    width = max((len(name) for name, _, _ in rows), default=0)
    for name, spec, cached in rows:
        print(f"{name:<{width}}  {spec.job.label:<32} {'cached' if cached else 'to build':<9} "
              f"{spec.memory / 2**30:5.1f} GiB  {spec.key[:16]}")
    hits = sum(c for *_, c in rows)
    print(f"{len(rows)} jobs, {hits} in the build cache{'' if cache else ' (no cache)'}, {len(rows) - hits} to build")
    return 0


def _build_summary(releases: list[tuple[str, str]], path: str | None) -> str:
    """One line on how the jobs of the built ``releases`` ((member or "", folder)) ran, from their build reports;
    with ``path``, the JSON summary written there too ('-': standard output)."""
    from .release.manifest import BUILD_REPORT

    rows, where = [], {}
    for name, folder in releases:
        with open(os.path.join(folder, BUILD_REPORT), encoding="utf-8") as f:
            report = json.load(f)
        where = report.get("executor", {})
        rows.append({"release": name or os.path.basename(os.path.normpath(folder)), "folder": folder,
                     "jobs": report.get("jobs", [])})
    jobs = [j for r in rows for j in r["jobs"]]
    if path:
        _write_or_print_json(path, {"kind": "edgedepth.build_summary", "executor": where, "releases": rows})
    return (f"{len(jobs)} jobs, {sum(j['cached'] for j in jobs)} from the build cache, on {where.get('executor')} "
            f"({where.get('nodes')} node{'s' if where.get('nodes') != 1 else ''}) in {where.get('wall_s')} s")


def _release_family(args, overrides) -> int:
    """``release --family NAME``: every member's recipe into OUT/<member>/ as one job graph, then verified."""
    from .release.family import build_family, member_recipes, plans, verify_members

    for flag, given in (("--recipe", args.recipe), ("--model", args.model), ("--name", args.name),
                        ("--base-model", args.base_model), ("--max-depth", args.max_depth)):
        if given is not None:
            raise EdgedepthError(f"{flag} names one release; --family builds each member's own recipe")
    recipes = member_recipes(args.family, synthetic=args.synthetic, images=args.images, **overrides)
    cache, executor = _build_cache(args), _executor(args)
    if args.dry_run:
        return _dry_run(plans(recipes, gpu_check=not args.no_gpu_check, step=lambda name: None), cache)
    with JobsBar(enabled=not args.quiet) as bar:
        build_family(recipes, args.out, gpu_check=not args.no_gpu_check, executor=executor, cache=cache,
                     step=bar.stage, jobs_progress=bar.jobs, force=args.force)
    names = [n for n, _ in recipes]
    report = _build_summary([(n, os.path.join(args.out, n)) for n in names], args.summary)
    problems = verify_members(args.out, names)
    for n in names:
        print(f"{os.path.join(args.out, n)}: " + ("verified" if not problems[n] else "; ".join(problems[n][:3])))
    print(f"{len(names)} release folders in {args.out}; {report}")
    return 1 if any(problems.values()) else 0


def cmd_recipe_new(args) -> int:
    from .release.newrecipe import new_recipe

    text = new_recipe(args.model, file=args.file, name=args.name, base_model=args.base_model,
                      max_depth=_max_depth(args), images=args.images if args.images is not None else 8)
    sys.stdout.write(text)
    return 0


def cmd_verify(args) -> int:
    problems = verify_release(args.folder)     # lines already escaped (no control characters reach the terminal)
    if problems:
        for p in problems:
            print(f"edgedepth: verify: {p}", file=sys.stderr)
        return 1
    print(f"{escape(args.folder)}: all {len(load_manifest(args.folder)['files'])} files match manifest.json")
    return 0


def cmd_publish(args) -> int:
    from .release import publish as pub

    if args.dry_run:
        files = pub.plan(args.folder, args.repo_id, args.revision)
    else:
        files, commit = pub.publish(args.folder, args.repo_id, revision=args.revision, create=args.create,
                                    private=args.private)
    print(f"{'would publish' if args.dry_run else 'published'} {len(files)} files "
          f"({sum(u.bytes for u in files)} bytes) of {escape(args.folder)} to {pub.repo_url(args.repo_id)} "
          f"(model repository, branch {escape(args.revision)}):")
    for u in files:
        print(f"  {escape(u.path)}  {u.bytes} bytes  -> {u.url}")
    print("dry run: nothing uploaded" if args.dry_run else f"commit: {commit}")
    return 0


def _write_or_print_json(dest: str | None, data) -> None:
    """``--json PATH`` everywhere: write ``data`` to PATH (atomically), or to stdout for ``-``."""
    if dest == "-":
        print(json.dumps(data, indent=2))
    elif dest:
        _write_json(dest, data)


class _Parser(argparse.ArgumentParser):
    """argparse with every error as one line ``edgedepth: error: ...`` and exit 2 (sub-command parsers inherit it)."""
    def error(self, message):
        self.exit(2, f"edgedepth: error: {' '.join(message.split())} (see: {self.prog} --help)\n")


def _whole(least: int):
    """An argparse type: a whole number of at least ``least`` (anything else: a one-line error naming the flag)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or value < least:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least {least}")
        return value

    return parse


@dataclasses.dataclass(frozen=True)
class _Options:
    """Parent parsers of the options several commands share (defined once) and the help texts they reuse."""
    quiet: argparse.ArgumentParser
    verbose: argparse.ArgumentParser
    as_json: argparse.ArgumentParser
    threads: argparse.ArgumentParser
    max_pixels: argparse.ArgumentParser
    max_depth: argparse.ArgumentParser
    model_help: str
    size_default: str


def _backends_help() -> str:
    """The --backend values and what each is (edgedepth.runtimes.BACKENDS)."""
    return ", ".join(f"{b.name} = {b.help}" for b in RUNTIME_BACKENDS.values() if b.name in formats.BACKENDS)


def _options() -> _Options:
    quiet = argparse.ArgumentParser(add_help=False)
    quiet.add_argument("--quiet", action="store_true", help="no progress bar")
    verbose = argparse.ArgumentParser(add_help=False)
    verbose.add_argument("--verbose", action="store_true",
                         help="show third-party log output on stderr (converter, LiteRT, PyTorch warnings)")
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                         help="write the full report as JSON to PATH ('-' or no PATH: standard output)")
    threads = argparse.ArgumentParser(add_help=False)
    threads.add_argument("--threads", type=_whole(1), default=2, help="CPU threads, at least 1 (default: %(default)s)")
    max_pixels = argparse.ArgumentParser(add_help=False)
    max_pixels.add_argument("--max-pixels", type=_whole(1), default=MAX_PIXELS, metavar="N",
                            help="refuse photos of more than N pixels, from their header, before decoding "
                                 "(default: %(default)s = 120 megapixels)")
    max_depth = argparse.ArgumentParser(add_help=False)
    max_depth.add_argument("--max-depth", default=None, metavar="METRES|relative",
                           help="a .pth/.safetensors checkpoint's head, where its file name does not say it (the "
                                "official names do): METRES of a metric head, or relative")
    model_help = (f"a family member ({', '.join(MEMBERS)}), HF_ID[@REV], a local HF folder, a Depth Anything V2 "
                  f"checkpoint file of the official repository (.pth, .safetensors), or a synthetic stand-in "
                  f"({', '.join(SYNTHETIC)})")
    return _Options(quiet, verbose, as_json, threads, max_pixels, max_depth, model_help,
                    f"{DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]}")


def _add_export(sub, o: _Options) -> None:
    """export: a checkpoint to .tflite / .pte / .onnx."""
    e = sub.add_parser("export", parents=[o.quiet, o.verbose, o.max_depth],
                       help="export a checkpoint to LiteRT .tflite, ExecuTorch .pte or ONNX")
    e.add_argument("--model", default=DEFAULT_MODEL,
                   help=f"{o.model_help} (default: %(default)s)")
    e.add_argument("--size", default=o.size_default,
                   help=f"HEIGHTxWIDTH, multiples of 14, each side at most {MAX_SIDE} (default: %(default)s)")
    e.add_argument("--out", required=True, help="output folder")
    e.add_argument("--precision", default=None,
                   help="comma-separated. " + "; ".join(f"{f.title}: {','.join(f.precisions)} (default "
                                                        f"{','.join(f.default_precisions)})" for f in formats.FORMATS))
    e.add_argument("--target", default=formats.FORMATS[0].target_name, choices=list(formats.TARGETS),
                   help=", ".join(f"{f.target_name}: {f.suffix}" for f in formats.FORMATS) + " (default: %(default)s)")
    e.add_argument("--plain", action="store_true", help="no graph rewrites: the baseline conversion (files *_plain)")
    for flag, kwargs in {o.flag: o.kwargs for f in formats.FORMATS for o in f.cli_options}.items():
        e.add_argument(flag, **kwargs)     # each format's own options (formats/<name>/: cli_options)
    e.set_defaults(func=cmd_export)


def _add_inspect(sub, o: _Options) -> None:
    """inspect: model files, or a checkpoint's activation ranges."""
    i = sub.add_parser("inspect", parents=[o.as_json, o.verbose],
                       help="ops, I/O, weights, delegation of model files (.tflite, .pte, .onnx)")
    i.add_argument("files", nargs="*", metavar="FILE")
    i.add_argument("--no-gpu", action="store_true", help="skip the GPU compile check")
    i.add_argument("--ranges", action="store_true",
                   help="activation ranges vs FP16 of a checkpoint (PyTorch forward hooks) instead of files")
    i.add_argument("--model", default=None,
                   help=f"with --ranges: {o.model_help}; synthetic names take -fp16-stress (default: the pinned HF id)")
    i.add_argument("--size", default=o.size_default, help="with --ranges: HEIGHTxWIDTH (default: %(default)s)")
    i.add_argument("--images", type=int, default=4,
                   help="with --ranges: photos of the default image set to probe (default: %(default)s)")
    i.set_defaults(func=cmd_inspect)


def _add_predict(sub, o: _Options) -> None:
    """predict: depth maps of photos."""
    r = sub.add_parser("predict", parents=[o.quiet, o.verbose, o.threads, o.max_pixels, o.max_depth],
                       help="depth maps for photos",
                       description="Depth maps for photos: <stem>_depth.png (colour, bright = near). A model with a "
                                   "confidence or sky output (Depth Anything 3's files and checkpoints) also writes "
                                   "<stem>_confidence.png or <stem>_sky.png: grey, min-max per photo, larger = "
                                   "brighter. Every file written is printed, one per line.")
    r.add_argument("images", nargs="+", metavar="IMAGE")
    r.add_argument("--model", default=DEFAULT_MODEL,
                   help="a model file (.tflite, .pte, .onnx; of a release folder: one of its files) or a checkpoint "
                        "(as for export)")
    r.add_argument("--backend", default="cpu", choices=list(formats.BACKENDS),
                   help=_backends_help() + " (default: %(default)s)")
    r.add_argument("--size", default=None,
                   help="HEIGHTxWIDTH for a checkpoint, or for a dynamic-size .onnx (without it: each photo at the "
                        "size its preprocessor_config.json gives it, as transformers does; other files have their "
                        "own)")
    r.add_argument("-o", "--output", required=True, help="output folder")
    r.add_argument("--raw", action="store_true",
                   help="also write float .npy and 16-bit PNG depth (metric models: metres, millimetres), and "
                        "<stem>_confidence.npy / <stem>_sky.npy (the raw values) where the model has one")
    r.add_argument("--overwrite", action="store_true",
                   help="replace output files that already exist (never one of the input photos)")
    r.set_defaults(func=cmd_predict)


def _add_validate(sub, o: _Options) -> None:
    """validate: parity against the checkpoint."""
    v = sub.add_parser("validate", parents=[o.quiet, o.verbose, o.as_json, o.threads, o.max_pixels, o.max_depth],
                       help="parity of model files vs their PyTorch checkpoint on natural images")
    v.add_argument("artifacts", nargs="+", metavar="ARTIFACT|DIR")
    v.add_argument("--model", default=DEFAULT_MODEL, help="the checkpoint the files came from (default: %(default)s)")
    v.add_argument("--backend", default="cpu",
                   help=f"comma-separated: {_backends_help()}; each file runs on those its format has "
                        "(default: %(default)s)")
    v.add_argument("--images", default=None, help="a folder of your own photos (default: the bundled 110-image set)")
    v.add_argument("--limit", type=_whole(1), default=None, help="use N images (spread over all sources)")
    v.add_argument("--plot", default=None, help="write a PNG histogram of per-image rel-L2")
    v.add_argument("--worst", default=None, metavar="DIR",
                   help="write each file's worst image side by side (photo, PyTorch, file, difference) as PNGs "
                        "into DIR")
    v.add_argument("--strict", action="store_true", help="exit 1 when any backend failed to compile")
    v.set_defaults(func=cmd_validate)


def _add_bench(sub, o: _Options) -> None:
    """bench: interleaved latency."""
    b = sub.add_parser("bench", parents=[o.quiet, o.verbose, o.as_json, o.threads],
                       help="latency of model files, interleaved rounds (and PyTorch eager)")
    b.add_argument("artifacts", nargs="+", metavar="ARTIFACT")
    b.add_argument("--backend", default="cpu",
                   help="cpu, gpu (LiteRT, FP32 enforced), gpu-fp16 or openvino (.onnx) (default: %(default)s)")
    b.add_argument("--rounds", type=_whole(1), default=6, help="rounds, at least 1 (default: %(default)s)")
    b.add_argument("--warmup", type=_whole(0), default=5,
                   help="warm-up calls per variant per round (default: %(default)s)")
    b.add_argument("--iters", type=_whole(1), default=12,
                   help="timed calls per variant per round, at least 1 (default: %(default)s)")
    b.add_argument("--torch", default=None, metavar="MODEL", help="also time PyTorch eager on this checkpoint")
    b.add_argument("--plot", default=None, help="write a PNG bar chart (median, IQR whiskers)")
    b.set_defaults(func=cmd_bench)


def _add_release(sub, o: _Options) -> None:
    """release: a release folder from a recipe."""
    rl = sub.add_parser("release", parents=[o.quiet, o.verbose, o.max_depth],
                        help="build a release folder from a recipe (files, manifest, card)")
    rl.add_argument("--recipe", default=None,
                    help="recipe file (Python that release executes, like setup.py, so only one you trust) or the name of "
                         "one edgedepth carries, e.g. depth-anything-3-small (default: depth-anything-v2-small, "
                         "edgedepth's own, never a file of the current folder)")
    rl.add_argument("--out", default=None, help="release folder to (re)create (with --family: the folder of the "
                                                 "members' release folders)")
    rl.add_argument("--model", default=None,
                    help="override the recipe's checkpoint (e.g. synthetic, or your own: a folder, a .pth file)")
    rl.add_argument("--name", default=None,
                    help="the release's name (its Hub repository's): needed for a checkpoint of your own")
    rl.add_argument("--base-model", default=None, metavar="OWNER/NAME",
                    help="the Hub model these files are converted from (your own model's repository), or none")
    rl.add_argument("--sizes", default=None, help="override the recipe's sizes, comma-separated HxW")
    rl.add_argument("--images", default=None, metavar="DIR",
                    help="gate the build on your own photos in DIR (default: the recipe's; the bundled set)")
    rl.add_argument("--parity-images", type=int, default=None,
                    help="override the recipe's parity image count (0: none; with --images: at most N of them)")
    rl.add_argument("--no-gpu-check", action="store_true", help="skip the GPU delegation check")
    rl.add_argument("--force", action="store_true",
                    help="replace an earlier release even where files in it were changed or added (they are lost)")
    rl.add_argument("--formats", default=None, metavar="LIST",
                    help="build only these of the recipe's formats, comma-separated (litert, executorch, onnx)")
    zoo = rl.add_argument_group("families, clusters and the build cache")
    zoo.add_argument("--family", default=None, metavar="NAME",
                     help="build every member of a family (depth-anything-v2, depth-anything-3) from its own recipe "
                          "into OUT/<member>/, as one job graph, then verify each")
    zoo.add_argument("--synthetic", choices=("tiny", "full"), default=None,
                     help="with --family: build each member from its synthetic stand-in (no download)")
    zoo.add_argument("--executor", choices=("serial", "ray"), default="serial",
                     help="run the build's jobs here one after another (default) or as Ray tasks "
                          "(needs the 'cluster' extra)")
    zoo.add_argument("--ray-address", default=None, metavar="HOST:PORT",
                     help="the Ray cluster to run on (default: $RAY_ADDRESS; none: start a local Ray)")
    zoo.add_argument("--cache", default=None, metavar="DIR",
                     help="the build cache: finished jobs by content, reused when nothing they are made from changed "
                          "(default: $EDGEDEPTH_BUILD_CACHE or ~/.cache/edgedepth/builds)")
    zoo.add_argument("--no-cache", action="store_true", help="neither use nor fill the build cache")
    zoo.add_argument("--cache-size", default="20G", metavar="SIZE",
                     help="cap of the build cache folder; least recently used jobs go first (default: %(default)s)")
    zoo.add_argument("--dry-run", action="store_true",
                     help="list the jobs, which are in the build cache and what they need; build nothing")
    zoo.add_argument("--summary", default=None, metavar="PATH",
                     help="write a JSON summary of the jobs: where each ran, how long, which were cached")
    rl.set_defaults(func=cmd_release)


def _add_recipe(sub, o: _Options) -> None:
    """recipe new: a commented recipe for a checkpoint of one's own."""
    rc = sub.add_parser("recipe", help="write a release recipe for your own checkpoint")
    rsub = rc.add_subparsers(dest="recipe_command", required=True)
    n = rsub.add_parser("new", parents=[o.max_depth],
                        help="print a commented recipe for your own checkpoint (e.g. a fine-tune) to standard output",
                        description="Print a release recipe for your own checkpoint, with the sizes and formats of "
                                    "edgedepth's recipe for the model it is built on: edgedepth recipe new --model "
                                    "PATH > my-recipe.py, then edgedepth release --recipe my-recipe.py --out NAME.")
    n.add_argument("--model", required=True, help="your checkpoint: a folder, a .pth/.safetensors file, OWNER/NAME")
    n.add_argument("--name", default=None, help="the release's name (default: from the checkpoint's name)")
    n.add_argument("--base-model", default=None, metavar="OWNER/NAME",
                   help="the Hub model the checkpoint is (default: none, a checkpoint not on the Hub)")
    n.add_argument("--images", default=None, metavar="DIR",
                   help="gate the build on your photos in DIR, written relative to the recipe (default: 8 bundled)")
    n.add_argument("--file", default="my-recipe.py", help="the recipe's file name, for its usage lines")
    n.set_defaults(func=cmd_recipe_new)


def _add_verify(sub, o: _Options) -> None:
    """verify: a release folder against its manifest."""
    vf = sub.add_parser("verify", parents=[o.verbose], help="re-hash a release folder against its manifest.json")
    vf.add_argument("folder")
    vf.set_defaults(func=cmd_verify)


def _add_publish(sub, o: _Options) -> None:
    """publish: a verified release folder to a Hugging Face Hub model repository."""
    pb = sub.add_parser("publish", parents=[o.verbose],
                        help="upload a verified release folder (its manifest's files only) to the Hugging Face Hub")
    pb.add_argument("folder", help="release folder; it must pass `edgedepth verify`")
    pb.add_argument("repo_id", metavar="REPO_ID", help="Hub model repository, NAMESPACE/NAME")
    pb.add_argument("--dry-run", action="store_true",
                    help="print each file, its size and its address on the Hub; upload nothing (no token needed)")
    pb.add_argument("--create", action="store_true", help="create the repository if it does not exist")
    pb.add_argument("--private", action="store_true",
                    help="create it as a private repository if it does not exist (an existing public one: refused)")
    pb.add_argument("--revision", default="main", metavar="BRANCH", help="branch to commit to (default: %(default)s)")
    pb.set_defaults(func=cmd_publish)


def build_parser() -> argparse.ArgumentParser:
    o = _options()
    p = _Parser(prog="edgedepth", description="Depth Anything -> verified on-device artifacts")
    p.add_argument("--version", action="version", version=f"edgedepth {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    for add in (_add_export, _add_inspect, _add_predict, _add_validate, _add_bench, _add_release, _add_recipe,
                _add_verify, _add_publish):
        add(sub, o)
    add_serve_parser(sub)
    return p


_DISK_ERRORS = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
                errno.EROFS: "read-only file system"}


_ATOMIC_TEMP = re.compile(r"^\.(.+)\.[a-z0-9_]{8}\.tmp$")     # fsutil.atomic_path's temp file for NAME


def _disk_problem(e: BaseException) -> str | None:
    """One line for a full disk, an exceeded quota or a read-only file system met anywhere (also under another
    library's error that wrapped it), naming the file being written; None for anything else."""
    while e is not None and not (isinstance(e, OSError) and e.errno in _DISK_ERRORS):
        e = e.__cause__ or e.__context__
    if e is None:
        return None
    # A failed write() names no file: the file is the atomic temp file that the writing frames hold (innermost first).
    names = [e.filename] if e.filename else []
    frames, tb = [], e.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    names += [v for f in reversed(frames) for v in f.f_locals.values() if isinstance(v, str)]
    path = os.fspath(e.filename) if e.filename else None
    for name in map(os.fspath, names):
        target = temp_target(name)
        m = _ATOMIC_TEMP.match(os.path.basename(name))
        if target or m:
            path = target or os.path.join(os.path.dirname(name), m.group(1))
            break
    where = f"cannot write {path!r}" if path else "cannot write the output"
    return f"{where}: {_DISK_ERRORS[e.errno]}"


def main(argv: list[str] | None = None, *, owns_process: bool | None = None) -> int:
    """Run the CLI; ``owns_process`` (default: ``argv is None``): a command of its own process (a script's
    ``sys.exit(main([...], owns_process=True))``), whose stderr may be closed to native log lines at exit."""
    from .runtimes.quiet import quiet_logs

    with interrupt.handling():      # Ctrl-C, SIGTERM, SIGHUP: exit 128 + signal, also while native code runs
        try:
            args = build_parser().parse_args(argv)
            verbose = bool(getattr(args, "verbose", False)) or native_log_shown()
            with quiet_logs(verbose, owns_process=argv is None if owns_process is None else owns_process):
                return args.func(args)
        except KeyboardInterrupt as e:
            stop = interrupt.as_interrupted(e)
            with contextlib.suppress(OSError):      # SIGHUP: the terminal may be gone
                print(f"edgedepth: {stop.word}", file=sys.stderr, flush=True)
            return stop.exit_code
        except Exception as e:
            extra = extras.missing(e.name) if isinstance(e, ModuleNotFoundError) else None
            if extra:                               # an optional stack not installed: the extra that brings it
                print(f"edgedepth: error: {extra}", file=sys.stderr)
                return 2
            disk = None if isinstance(e, EdgedepthError) else _disk_problem(e)
            if isinstance(e, EdgedepthError) or disk:
                print(f"edgedepth: error: {disk or e.for_cli()}", file=sys.stderr)
                return 2 if disk else e.exit_code
            if os.environ.get("EDGEDEPTH_DEBUG"):   # an unexpected failure: still one line unless debugging
                raise
            print(f"edgedepth: error: unexpected {type(e).__name__}: {' '.join(str(e).split())[:500]} "
                  "(set EDGEDEPTH_DEBUG=1 for the traceback)", file=sys.stderr)
            return 1


if __name__ == "__main__":
    sys.exit(main())
