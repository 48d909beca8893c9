"""The Python API: what the CLI does, as functions (the CLI calls the same registry and pipeline underneath).

    import edgedepth
    files = edgedepth.export("synthetic-tiny", size="56x70", out_dir="out/api", precisions=["fp32"])
    model = edgedepth.open(files[0])                # an Artifact: checked, described and hashed once
    print(model.describe()["ops"], model.gpu_check()["fully_delegated"])
    depth = model.predict("photo.jpg")              # float32 [H, W] at the photo's size, relative inverse depth
    maps = model.predict_all("photo.jpg")           # {"depth": ...} (+ "confidence" for Depth Anything 3's files)

Paths may be ``str`` or ``os.PathLike`` (``pathlib.Path``).  Third-party log output (torchao, torch, LiteRT INFO lines)
stays off stderr, as in the CLI, unless ``verbose=True`` (:func:`edgedepth.runtimes.quiet.quiet_logs`).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from . import formats
from .checkpoint import Checkpoint, DepthModule, load_checkpoint
from .errors import EdgedepthError
from .fsutil import made_dir
from .images import image_set
from .predict import resize_depth
from .preprocess import DEFAULT_SIZE, MAX_PIXELS, load_image, model_input, parse_size
from .release.manifest import check_made_from, verify_files_next_to
from .release.outdir import check_export_dir
from .rewrites import APPLIED_ATTR, PIPELINE, REWRITES
from .runtimes.quiet import quiet_logs
from .verify.validate import validate as _validate


def _whole(value) -> bool:
    """An int (numpy's too); bool is not one here."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _size(size) -> tuple[int, int]:
    if isinstance(size, str):
        return parse_size(size)
    if not (isinstance(size, (list, tuple)) and len(size) == 2 and all(map(_whole, size))):
        raise EdgedepthError(f"size {size!r}: give \"HxW\" or (height, width), two whole numbers", option="size")
    return parse_size(f"{int(size[0])}x{int(size[1])}")


def _path(option: str, value, what: str = "a path (str or os.PathLike)") -> str:
    """A path given as ``str`` or ``os.PathLike`` (``pathlib.Path``), as ``str``; anything else is a one-line error."""
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise EdgedepthError(f"{option} {value!r}: give {what}", option=option)
    return value


def _model(model):
    """A checkpoint: a loaded Checkpoint, or its spec (name, ``HF_ID@REV`` or folder; str or os.PathLike)."""
    if isinstance(model, Checkpoint):
        return model
    return _path("model", model, 'a checkpoint: a name such as "synthetic", HF_ID@REV, a folder or a Checkpoint')


def _flag(option: str, value) -> bool:
    if not isinstance(value, bool):
        raise EdgedepthError(f"{option} {value!r}: True or False", option=option)
    return value


def _image(image, max_pixels: int):
    """A photo given as a path or a PIL image -> 8-bit RGB PIL image of at least one pixel."""
    from PIL import Image

    if isinstance(image, (str, os.PathLike)):
        img = load_image(_path("image", image), max_pixels)
    elif isinstance(image, Image.Image):
        img = image.convert("RGB")
    else:
        raise EdgedepthError(f"image {type(image).__name__}: give a path or a PIL image", option="image")
    if not img.width or not img.height:
        raise EdgedepthError(f"image {img.width}x{img.height}: the photo has no pixels", option="image")
    return img


def _names(option: str, value, known, example: str) -> list[str]:
    """A list/tuple of names, each one of ``known`` (deduplicated, order kept); a bare string or an unknown name is a
    one-line error listing the choices (a string would otherwise be read letter by letter)."""
    if isinstance(value, str):
        raise EdgedepthError(f"{option} {value!r}: give a list of names, e.g. {option}=[{value!r}] "
                             f"(choose from {', '.join(known)})", option=option)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise EdgedepthError(f"{option} {value!r}: give a list of names such as {example} "
                             f"(choose from {', '.join(known)})", option=option)
    unknown = [v for v in value if v not in known]
    if unknown or not value:
        what = f"unknown {', '.join(map(repr, unknown))}" if unknown else "empty"
        raise EdgedepthError(f"{option} {list(value)!r}: {what}; choose from {', '.join(known)}", option=option)
    return list(dict.fromkeys(value))


def _rewrites(rewrites, model):
    """``"default"``, ``()``/``None`` (none: the plain baseline) or rewrite names, each known and each after what it
    needs (selected too, or already applied to a loaded ``model``)."""
    if rewrites == "default" or rewrites is None or (isinstance(rewrites, (list, tuple)) and not rewrites):
        return rewrites
    names = _names("rewrites", rewrites, list(REWRITES), '["fuse_qkv"]')
    chosen = [r for r in PIPELINE if r.name in names]
    done = set(getattr(model.model, APPLIED_ATTR, ())) if isinstance(model, Checkpoint) else set()
    for i, r in enumerate(chosen):
        missing = [q for q in r.requires if q not in done | {c.name for c in chosen[:i]}]
        if missing:
            raise EdgedepthError(f"rewrites: {r.name} needs {', '.join(missing)} too (add it to the list)",
                                 option="rewrites")
    return names


def _positive(option: str, value) -> int:
    if not _whole(value) or value < 1:
        raise EdgedepthError(f"{option} {value!r}: must be a whole number, at least 1", option=option)
    return int(value)


def _checkpoint(model) -> Checkpoint:
    return model if isinstance(model, Checkpoint) else load_checkpoint(model, quiet=True)


@dataclasses.dataclass
class Model:
    """A model file opened through the format registry, with what users do with one (``verbose``: see :func:`open`)."""
    artifact: formats.Artifact
    verbose: bool = False

    @property
    def path(self) -> str:
        return self.artifact.path

    @property
    def sha256(self) -> str:
        return self.artifact.sha256

    def describe(self) -> dict:
        """Ops, op histogram, inputs/outputs, weights, ... (the ``edgedepth inspect --json`` content, without GPU)."""
        with quiet_logs(self.verbose):
            return self.artifact.describe()

    def gpu_check(self) -> dict | None:
        """Compile on LiteRT's GPU accelerator alone (a child process): fully_delegated, gpu/cpu ops, adapter, error.
        None for formats that have no GPU path here."""
        with quiet_logs(self.verbose):
            return self.artifact.gpu_check()

    def runner(self, backend: str = "cpu", threads: int = 2):
        """A runner of this file: ``run(x)`` takes exactly the file's input shape and dtype (else: an error)."""
        threads = _positive("threads", threads)
        with quiet_logs(self.verbose):
            return self.artifact.open_runner(backend=backend, threads=threads)

    def predict(self, image, backend: str = "cpu", threads: int = 2, *, resize_back: bool = True,
                max_pixels: int = MAX_PIXELS) -> np.ndarray:
        """Depth for one photo (a path or a PIL image): float32 [H, W], resized back to the photo's size (bicubic, like
        HF's post-processing) unless ``resize_back=False``.  What it measures is the model's (the release manifest's
        ``output.semantics``): V2 relative inverse depth (larger = closer), metric members metres, Depth Anything 3
        relative depth (larger = farther).  A photo file of more than ``max_pixels`` pixels is refused from its
        header, before it is decoded.  Every output of the file: :meth:`predict_all`."""
        return self.predict_all(image, backend, threads, resize_back=resize_back, max_pixels=max_pixels)["depth"]

    def predict_all(self, image, backend: str = "cpu", threads: int = 2, *, resize_back: bool = True,
                    max_pixels: int = MAX_PIXELS) -> dict[str, np.ndarray]:
        """Every output of the file for one photo, by role, each float32 [H, W] as :meth:`predict` gives the depth:
        ``{"depth": ...}``, and Depth Anything 3's ``"confidence"`` (>= 1, larger = more confident).  A dynamic-size
        .onnx runs the photo at the size its folder's ``preprocessor_config.json`` gives it (as ``edgedepth
        predict`` and transformers do); every other file at its own size."""
        img = _image(image, _positive("max_pixels", max_pixels))
        resize_back = _flag("resize_back", resize_back)
        size = self.artifact.size
        if self.artifact.info.get("dynamic"):     # a dynamic-size .onnx: the photo's processor size (predict's)
            size = self.artifact.format.processor_of(self.path).model_size(img.height, img.width)
        threads = _positive("threads", threads)
        with quiet_logs(self.verbose):
            runner = formats.open_runner(self.path, backend, threads, size)
        try:   # a uint8-input file (_u8in, the release's WebGPU file) takes the resized pixels
            with quiet_logs(self.verbose):
                maps = runner.run_all(model_input(img, size, runner.input_dtype))
        finally:
            runner.close()
        return {role: resize_depth(m[0], (img.height, img.width)) if resize_back else m[0] for role, m in maps.items()}


def open(path, *, verbose: bool = False) -> Model:  # noqa: A001  (edgedepth.open, like the builtin, opens a file)
    """Open a model file of any registered format (one-line EdgedepthError for a missing/corrupt/truncated file).
    ``verbose=True``: third-party log output (torchao, torch, LiteRT INFO) shows, here and in the Model's methods."""
    path, verbose = _path("path", path), _flag("verbose", verbose)
    with quiet_logs(verbose):
        return Model(formats.open_artifact(path), verbose)


def export(model="synthetic", *, size=DEFAULT_SIZE, out_dir, target: str = "litert",
           precisions=("fp32", "int8"), rewrites="default", backends=None, progress=None,
           input_dtype: str = "float32", dynamic_size: bool = False, verbose: bool = False) -> list[str]:
    """Export a checkpoint (a spec such as ``"synthetic"``, ``HF_ID@REV``, a folder, or a loaded Checkpoint) to
    ``out_dir``; returns the written paths.  ``target``: ``"litert"`` (.tflite), ``"executorch"`` (.pte) or ``"onnx"``
    (.onnx; precisions fp32, fp16, int8).  ``input_dtype="uint8"`` (LiteRT fp32/fp16): files that take the resized
    pixels (``_u8in``, the GPU files).  ``dynamic_size=True`` (ONNX): symbolic height and width, any multiples of 14
    (what transformers.js needs); ``size`` is then the size edgedepth runs the file at.  Open a result with :func:`open` and run it on ``backend="cpu"`` (ONNX
    Runtime for .onnx) or ``"openvino"``.  Arguments are checked before anything is loaded; an ``out_dir`` this call
    creates is removed again if the export fails before writing a file.  ``verbose=True``: third-party log output
    (converter, torchao, torch) shows."""
    model, out_dir, verbose = _model(model), _path("out_dir", out_dir), _flag("verbose", verbose)
    h, w = _size(size)
    fmt = formats.target(target)
    precisions = _names("precisions", precisions, list(fmt.precisions), '["fp32"]')
    rewrites = _rewrites(rewrites, model)
    if input_dtype not in ("float32", "uint8"):
        raise EdgedepthError(f"input_dtype {input_dtype!r}: choose from float32, uint8", option="input_dtype")
    if _flag("dynamic_size", dynamic_size) and not fmt.dynamic_size:
        raise EdgedepthError(f"dynamic_size: {fmt.target_name} files have a fixed input size (ONNX files can be "
                             "dynamic)", option="dynamic_size")
    if backends is not None:
        if not fmt.export_backends:
            raise EdgedepthError(f"backends {backends!r}: only ExecuTorch files take an export backend "
                                 f"({fmt.target_name} files: leave it None)", option="backends")
        backends = _names("backends", backends, list(fmt.export_backends), '["xnnpack"]')
        if set(precisions) == {"int8"} and "xnnpack" not in backends:
            raise EdgedepthError("backends: INT8 .pte files are built for xnnpack only", option="backends")
    options = {k: v for k, v, default in (("input_dtype", input_dtype, "float32"), ("backends", backends, None),
                                          ("dynamic_size", dynamic_size, False)) if v != default}
    fmt.check_options(precisions, options)
    check_export_dir(out_dir)          # never into a release folder: its files would no longer match it
    with made_dir(out_dir), quiet_logs(verbose):
        ckpt = _checkpoint(model)
        files = formats.export(ckpt.model, h, w, out_dir, target_name=target, precisions=precisions,
                               rewrites=rewrites, progress=progress, stem=ckpt.file_stem, verbose=verbose, **options)
    return [f.path for f in files]


def validate(paths, *, model="synthetic", backends=("cpu",), images=None, limit: int | None = None,
             threads: int = 2, progress=None, max_pixels: int = MAX_PIXELS, verbose: bool = False) -> list[dict]:
    """Parity of model files against the PyTorch checkpoint they came from (``edgedepth validate``): one dict per
    (file, backend) with status, error, flags and metrics (pooled/max/p95 rel-L2, Pearson, aligned AbsRel/δ<1.25);
    a file with more outputs (Depth Anything 3's confidence) has ``output_metrics``: the same, per further output.
    ``backends``: a list of names; every file must run on at least one of them (never an empty result).  Photos in
    ``images`` above ``max_pixels`` pixels are refused from their headers.  ``verbose=True``: third-party log output
    shows."""
    backends = _names("backends", backends, list(formats.BACKENDS), '["cpu"]')
    threads, max_pixels = _positive("threads", threads), _positive("max_pixels", max_pixels)
    limit = None if limit is None else _positive("limit", limit)
    model, verbose = _model(model), _flag("verbose", verbose)
    images = None if images is None else _path("images", images, "a folder of photos (str or os.PathLike) or None")
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, (list, tuple)):
        raise EdgedepthError(f"paths {paths!r}: give a model file, a folder or a list of them",
                             option="paths")
    paths = [_path("paths", p) for p in paths]
    if not paths:
        raise EdgedepthError("validate: no model files given")
    with quiet_logs(verbose):
        files = verify_files_next_to(formats.find_artifacts(paths))
        for f in files:
            fmt = formats.format_of(f)
            if not set(backends) & set(fmt.backends):
                raise EdgedepthError(f"backends {backends!r}: {f!r} is a {fmt.suffix} file, which runs on "
                                     f"{', '.join(fmt.backends)} only", option="backends")
        items = image_set(images, limit, max_pixels)
        ckpt = _checkpoint(model)
        check_made_from(files, ckpt.member, ckpt.name)
        return _validate(files, backends, DepthModule(ckpt.model, ckpt.outputs), items, threads=threads,
                         progress=progress)


__all__ = ["Model", "export", "open", "validate"]
