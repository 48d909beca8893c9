"""The Python API: what the CLI does, as functions (the CLI calls the same registry and pipeline underneath).

    import edgedepth
    files = edgedepth.export("synthetic-tiny", size="56x70", out_dir="out/api", precisions=["fp32"])
    model = edgedepth.open(files[0])                # an Artifact: checked, described and hashed once
    print(model.describe()["ops"], model.gpu_check()["fully_delegated"])
    depth = model.predict("photo.jpg")              # float32 [H, W] at the photo's size, relative inverse depth
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import formats
from .checkpoint import Checkpoint, load_checkpoint
from .errors import EdgedepthError
from .preprocess import DEFAULT_SIZE, parse_size


def _size(size) -> tuple[int, int]:
    if isinstance(size, str):
        return parse_size(size)
    h, w = (int(v) for v in size)
    return parse_size(f"{h}x{w}")


def _checkpoint(model) -> Checkpoint:
    return model if isinstance(model, Checkpoint) else load_checkpoint(model, quiet=True)


@dataclasses.dataclass
class Model:
    """A model file opened through the format registry, with what users do with one."""

    artifact: formats.Artifact

    @property
    def path(self) -> str:
        return self.artifact.path

    @property
    def sha256(self) -> str:
        return self.artifact.sha256

    def describe(self) -> dict:
        """Ops, op histogram, inputs/outputs, weights, ... (the ``edgedepth inspect --json`` content, without GPU)."""
        return self.artifact.describe()

    def gpu_check(self) -> dict | None:
        """Compile on LiteRT's GPU accelerator alone (a child process): fully_delegated, gpu/cpu ops, adapter, error.
        None for formats that have no GPU path here."""
        return self.artifact.gpu_check()

    def runner(self, backend: str = "cpu", threads: int = 2):
        return self.artifact.open_runner(backend=backend, threads=threads)

    def predict(self, image, backend: str = "cpu", threads: int = 2, *, resize_back: bool = True) -> np.ndarray:
        """Depth for one photo (a path or a PIL image): float32 [H, W], relative inverse depth (larger = closer),
        resized back to the photo's size (bicubic, like HF's post-processing) unless ``resize_back=False``."""
        from .predict import resize_depth
        from .preprocess import load_image, model_input

        img = load_image(image) if isinstance(image, str) else image.convert("RGB")
        runner = self.runner(backend, threads)
        try:   # a uint8-input file (_u8in, the release's WebGPU file) takes the resized pixels
            depth = runner.run(model_input(img, self.artifact.size, runner.input_dtype))[0]
        finally:
            runner.close()
        return resize_depth(depth, (img.height, img.width)) if resize_back else depth


def open(path: str) -> Model:  # noqa: A001  (edgedepth.open, like the builtin, opens a file)
    """Open a model file of any registered format (one-line EdgedepthError for a missing/corrupt/truncated file)."""
    return Model(formats.open_artifact(path))


def export(model="synthetic", *, size=DEFAULT_SIZE, out_dir: str, target: str = "litert",
           precisions=("fp32", "int8"), rewrites="default", backends=None, progress=None,
           input_dtype: str = "float32") -> list[str]:
    """Export a checkpoint (a spec such as ``"synthetic"``, ``HF_ID@REV``, a folder, or a loaded Checkpoint) to
    ``out_dir``; returns the written paths.  ``target``: ``"litert"`` (.tflite), ``"executorch"`` (.pte) or ``"onnx"``
    (.onnx; precisions fp32, fp16, int8).  ``input_dtype="uint8"`` (LiteRT fp32/fp16): files that take the resized
    pixels (``_u8in``, the GPU files).  Open a result with :func:`open` and run it on ``backend="cpu"`` (ONNX
    Runtime for .onnx) or ``"openvino"``."""
    import os

    os.makedirs(out_dir, exist_ok=True)
    h, w = _size(size)
    ckpt = _checkpoint(model)
    files = formats.export(ckpt.model, h, w, out_dir, target_name=target, precisions=precisions,
                           rewrites=rewrites, backends=backends, progress=progress, stem=ckpt.file_stem,
                           input_dtype=input_dtype)
    return [f.path for f in files]


def validate(paths, *, model="synthetic", backends=("cpu",), images: str | None = None, limit: int | None = None,
             threads: int = 2, progress=None) -> list[dict]:
    """Parity of model files against the PyTorch checkpoint they came from (``edgedepth validate``): one dict per
    (file, backend) with status, error, flags and metrics (pooled/max/p95 rel-L2, Pearson, aligned AbsRel/δ<1.25)."""
    from .checkpoint import DepthModule
    from .images import image_set
    from .release.manifest import check_made_from, verify_files_next_to
    from .verify.validate import validate as _validate

    paths = [paths] if isinstance(paths, str) else list(paths)
    if not paths:
        raise EdgedepthError("validate: no model files given")
    files = verify_files_next_to(formats.find_artifacts(paths))
    ckpt = _checkpoint(model)
    check_made_from(files, ckpt.member, ckpt.name)
    return _validate(files, list(backends), DepthModule(ckpt.model), image_set(images, limit), threads=threads,
                     progress=progress)


__all__ = ["Model", "export", "open", "validate"]
