"""transformers.js loads a release folder as it is: ``@huggingface/transformers`` 4.3.2 on onnxruntime-node (CPU),
through ``tests/js/tjs_run.mjs``, on the session's ``tiny_release`` (synthetic-tiny, ONNX files with dynamic height and
width), offline (``env.allowRemoteModels = false``, ``env.localModelPath`` = the folder's parent).  The folder is used
unchanged: every file's SHA-256 is compared before and after each Node call.

(a) ``AutoModelForDepthEstimation`` on the same ``pixel_values`` (``edgedepth.preprocess`` of the sample photo) at the
release's own size and two larger ones (landscape and portrait, multiples of 14), dtype fp32 / fp16 / q8, against a
float64 PyTorch run of the same checkpoint and against Python onnxruntime on the same file (1 and 2 threads each side).
(b) ``pipeline('depth-estimation')`` on photos of four shapes: the depth image has the photo's size, the model ran at
upstream DPTImageProcessor's keep-aspect-ratio size (multiples of 14), and the map it returns is the model on its own
``pixel_values`` resized bilinearly.  Where transformers.js resizes nothing its pixels are ours exactly; where it
resizes (sharp, not Pillow) they differ (benchmarks/tjs_preprocessing.py measures by how much).

Tolerances (tests/README.md): FP32 within FP32 noise of the float64 run (``assert_within_fp32_noise``; against Python
ORT FP32, an FP32 reference, 2 x the factor).  FP16 and q8 are bounded relative to what FP16 rounding and INT8
quantisation do to this model, measured in the same run (constants below, with the values measured).  Missing Node or
web/node_modules fails with a message naming ``make setup``; nothing skips.  The module takes ~30 s after the session's
``tiny_release`` (built once, ~90 s).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import (FP32_NOISE_FACTOR, THREADS, assert_within_fp32_noise, float64_reference, rel_l2, torch_fp32)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WEB = os.path.join(ROOT, "web")
TJS_RUN = os.path.join(ROOT, "tests", "js", "tjs_run.mjs")
NODE_PACKAGES = ("@huggingface/transformers", "onnxruntime-node", "sharp")
FILES = {"fp32": "onnx/model.onnx", "fp16": "onnx/model_fp16.onnx", "q8": "onnx/model_quantized.onnx"}
# (height, width), all multiples of 14: the release's own size, 518x686 scaled by ~0.35 (speed), and its portrait twin.
SIZES = {"28x42": (28, 42), "182x238": (182, 238), "238x182": (238, 182)}

# A file that claims FP16 or q8 must be measurably off FP32: its error at least this many times PyTorch FP32's own
# (test_onnx's constant; measured here >= 880x for FP16, >= 3.4e4x for q8).
QUANTISED_MIN_RATIO = 100.0
# FP16 on onnxruntime-node vs float64 <= 2 x the FP16 emulation of the same module (test_onnx.FP16_EMULATION_FACTOR:
# one rounding per ONNX node instead of per torch op; measured 0.60-0.67 x the emulation here, 28x42..238x182).
FP16_EMULATION_FACTOR = 2.0
# transformers.js FP16 vs Python ORT FP16 on the same file: onnxruntime-node 1.30.0 and onnxruntime 1.31.1 are two
# FP16 implementations of one graph, each within FP16_EMULATION_FACTOR x the emulated FP16 error of float64, so by the
# triangle inequality they differ by at most 2 x that.  Measured: 0 .. 0.05 x in one run, 0.46 x at 28x42 in a
# clean-clone run on the same machine (the versions pick different FP16 kernels for some nodes).  Which file was
# loaded is checked by the absolute bounds above it (FP32 file: < 100 x FP32 noise; q8 file: >> 2 x the emulation).
FP16_AGREEMENT = 2 * FP16_EMULATION_FACTOR
# q8 (ORT quantize_dynamic: int8 weights, uint8 activations per call) vs PyTorch FP32: quantisation error, measured
# 7.1e-3 (28x42) .. 2.8e-2; far above anything FP32 rounding reaches, so a constant (test_onnx.INT8_REL_L2_MAX).
INT8_REL_L2_MAX = 0.1
# transformers.js q8 vs Python ORT q8 on the same file: the same MLAS integer kernels; they can differ only where FP32
# noise in a DynamicQuantizeLinear input flips a uint8 rounding (a few elements by one step).  Measured 0 at every size
# and thread count.  Bound: 0.1 x the file's own quantisation error (its rel-L2 vs FP32); the FP32 or FP16 file
# loaded for q8 is ~1x.
Q8_AGREEMENT = 0.1

# The photos of (b), made from the default image set with PIL: (source view, how, upstream's size (h, w) for it).
PHOTOS = {
    "landscape": ("coffee/full", ("crop", (0, 0, 577, 301)), (266, 518)),        # 577x301: width fits, 0.898x
    "portrait": ("grace_hopper/full", ("crop", (90, 0, 430, 600)), (518, 294)),   # 340x600: height fits, 0.863x
    "square": ("astronaut/full", ("resize", (257, 257)), (518, 518)),             # 257x257: upscaled 2.02x
    "exact": ("motorcycle_left/full", ("resize", (686, 518)), (518, 686)),        # 686x518: already the model's size
}


# ------------------------------------------------------------------------------------------------ set-up


def prerequisites(web: str = WEB, path: str | None = None) -> str | None:
    """Why transformers.js cannot run here (Node, or web/node_modules from ``make setup``), or None."""
    if shutil.which("node", path=path) is None:
        return "node is not installed: run `make setup` (it installs nodejs and npm, then web/node_modules)"
    for pkg in NODE_PACKAGES:
        if not os.path.isfile(os.path.join(web, "node_modules", pkg, "package.json")):
            return f"{pkg} is not installed under {web}/node_modules: run `make setup`"
    return None


def test_prerequisite_messages_name_make_setup(tmp_path):
    """The messages a machine without Node or without web/node_modules gets (the suite fails with them, never skips)."""
    no_node = prerequisites(path=str(tmp_path))
    assert no_node and "node is not installed" in no_node and "`make setup`" in no_node
    web = tmp_path / "web"
    (web / "node_modules").mkdir(parents=True)
    no_packages = prerequisites(web=str(web))
    assert no_packages and "@huggingface/transformers" in no_packages and "`make setup`" in no_packages
    if shutil.which("node"):       # the script's own message, when pointed at a web/ without node_modules
        r = subprocess.run(["node", TJS_RUN, "versions"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "EDGEDEPTH_WEB_DIR": str(web)})
        assert r.returncode == 1 and r.stdout == "", r
        assert r.stderr.count("\n") == 1 and r.stderr.startswith("tjs_run: ") and "`make setup`" in r.stderr, r.stderr


def _digest(folder) -> dict[str, str]:
    """{relative path: SHA-256} of every file under ``folder`` (a new or removed file changes it too)."""
    out = {}
    for d, _dirs, files in os.walk(folder):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, folder)] = hashlib.sha256(open(p, "rb").read()).hexdigest()
    return out


class TransformersJS:
    """``node tests/js/tjs_run.mjs`` on the session's tiny release; after every call the folder is what it was."""

    def __init__(self, folder):
        self.folder = folder
        self.before = _digest(folder)

    def __call__(self, *args, threads: int | None = None) -> dict:
        env = {k: v for k, v in os.environ.items() if k != "EDGEDEPTH_WEB_DIR"}
        if threads is not None:
            env["EDGEDEPTH_TJS_THREADS"] = str(threads)
        r = subprocess.run(["node", TJS_RUN, *map(str, args)], capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 0, f"tjs_run {' '.join(map(str, args))}: {r.stderr[-3000:]}"
        assert _digest(self.folder) == self.before, "transformers.js changed the release folder"
        return json.loads(r.stdout)


@pytest.fixture(scope="module")
def tjs(tiny_release):
    problem = prerequisites()
    if problem:
        pytest.fail(f"transformers.js tests cannot run: {problem}", pytrace=False)
    return TransformersJS(tiny_release)


def test_folder_holds_the_manifest_files_transformers_js_loads(tjs):
    """What transformers.js reads: config.json (depth_anything), upstream's processor, and the three ONNX files the
    manifest lists, with the SHA-256 it records (so the files checked below are the release's own)."""
    m = json.loads((tjs.folder / "manifest.json").read_text())
    listed = {f["path"]: f["sha256"] for f in m["files"]}
    for rel in FILES.values():
        assert listed[rel] == tjs.before[rel], rel
    assert json.loads((tjs.folder / "config.json").read_text())["model_type"] == "depth_anything"
    pre = json.loads((tjs.folder / "preprocessor_config.json").read_text())
    assert (pre["image_processor_type"], pre["keep_aspect_ratio"], pre["ensure_multiple_of"], pre["size"]) == (
        "DPTImageProcessor", True, 14, {"height": 518, "width": 518})
    v = tjs("versions")
    assert v["@huggingface/transformers"] == "4.3.2", v      # the version these bounds were measured with


# ------------------------------------------------------------------------------------------------ (a) same pixels


@pytest.fixture(scope="module")
def refs(tiny_ckpt, tiny_release, tmp_path_factory):
    """Per size (lazily): the sample photo's ``pixel_values`` (written to a .npy for Node), PyTorch float64 / FP32 of
    the checkpoint, its FP16 emulation (the module the ONNX files were traced from: the manifest's rewrites), and Python
    ORT on each file at 1 and 2 threads."""
    from edgedepth.formats import onnx as ox
    from edgedepth.preprocess import load_image, preprocess
    from edgedepth.rewrites import prepare
    from edgedepth.samples import sample_photo
    from edgedepth.verify import fp16_emulation as emulate

    img = load_image(sample_photo())
    work = tmp_path_factory.mktemp("tjs_pixel_values")
    m = json.loads((tiny_release / "manifest.json").read_text())
    rewrites = {f["path"]: f.get("rewrites") for f in m["files"]}

    @functools.lru_cache(maxsize=None)
    def get(name: str) -> dict:
        size = SIZES[name]
        x = preprocess(img, size)
        npy = work / f"{name}.npy"
        np.save(npy, x)
        y64, y32 = float64_reference(tiny_ckpt.model, x), torch_fp32(tiny_ckpt.model, x)
        m16 = prepare(tiny_ckpt.model, *size, rewrites[FILES["fp16"]])[0].model
        ort = {}
        for dtype, rel in FILES.items():
            for t in THREADS:
                r = ox.open_runner(str(tiny_release / rel), "cpu", t, size=size)
                try:
                    ort[dtype, t] = r.run(x)
                finally:
                    r.close()
        return {"x": x, "npy": npy, "fp64": y64, "fp32": y32, "noise": rel_l2(y32, y64),
                "emulated": rel_l2(emulate.emulate_fp16(m16, [x])[0], y64), "ort": ort}

    return get


@pytest.fixture(scope="module")
def tjs_raw(tjs, refs, tmp_path_factory):
    """transformers.js' predicted_depth for (dtype, threads, size): one Node call (one model load) per dtype and thread
    count runs every size, lazily."""
    work = tmp_path_factory.mktemp("tjs_raw")

    @functools.lru_cache(maxsize=None)
    def per_call(dtype: str, threads: int) -> dict:
        pairs = {name: (refs(name)["npy"], work / f"{dtype}_{threads}_{name}.npy") for name in SIZES}
        infos = tjs("raw", tjs.folder, dtype, *[p for pair in pairs.values() for p in pair], threads=threads)
        out = {}
        for info, (name, (_, npy)) in zip(infos, pairs.items()):
            y = np.load(npy)
            assert info == {"dims": list(refs(name)["fp64"].shape), "dtype": "float32"}, info
            assert y.shape == refs(name)["fp64"].shape and y.dtype == np.float32 and np.all(np.isfinite(y))
            out[name] = y
        return out

    return lambda dtype, threads, size: per_call(dtype, threads)[size]


@pytest.mark.parametrize("threads", THREADS, ids=lambda t: f"node{t}t")
@pytest.mark.parametrize("size", SIZES)
def test_raw_fp32(tjs_raw, refs, size, threads, record_property):
    """onnx/model.onnx in transformers.js is the checkpoint within FP32 noise (measured 0.81-1.09 x PyTorch FP32's own
    error) and Python ORT's result on the same file within 2 x the factor (measured: bit-identical)."""
    r = refs(size)
    y = tjs_raw("fp32", threads, size)
    err = assert_within_fp32_noise(y, r["fp64"], r["fp32"], what=f"transformers.js fp32 {size}, {threads} thread(s)")
    record_property("rel_l2_vs_float64", err)
    for t in THREADS:
        d = rel_l2(y, r["ort"]["fp32", t])
        assert d <= 2 * FP32_NOISE_FACTOR * r["noise"], (
            f"vs Python ORT {t}t: rel-L2 {d:.3e} > {2 * FP32_NOISE_FACTOR:g} x PyTorch FP32's own {r['noise']:.3e}")
    print(f"tjs fp32 {size} {threads}t: rel-L2 vs float64 {err:.3g} (PyTorch FP32 {r['noise']:.3g}), "
          f"vs Python ORT {rel_l2(y, r['ort']['fp32', 1]):.3g}")


@pytest.mark.parametrize("threads", THREADS, ids=lambda t: f"node{t}t")
@pytest.mark.parametrize("size", SIZES)
def test_raw_fp16(tjs_raw, refs, size, threads, record_property):
    """onnx/model_fp16.onnx: within 2 x the FP16 emulation of the same module (vs float64), really FP16 (>= 100 x FP32
    noise), and within FP16_AGREEMENT x that emulated FP16 error of Python ORT on the same file."""
    r = refs(size)
    y = tjs_raw("fp16", threads, size)
    err = rel_l2(y, r["fp64"])
    record_property("rel_l2_vs_float64", err)
    assert err <= FP16_EMULATION_FACTOR * r["emulated"], (err, r["emulated"])
    assert err > QUANTISED_MIN_RATIO * r["noise"], (err, r["noise"])
    for t in THREADS:
        d = rel_l2(y, r["ort"]["fp16", t])
        assert d <= FP16_AGREEMENT * r["emulated"], (
            f"vs Python ORT {t}t: rel-L2 {d:.3e} > {FP16_AGREEMENT} x the emulated FP16 error {r['emulated']:.3e}")
    print(f"tjs fp16 {size} {threads}t: rel-L2 vs float64 {err:.3g} (FP16 emulation {r['emulated']:.3g}), "
          f"vs Python ORT {rel_l2(y, r['ort']['fp16', 1]):.3g}")


@pytest.mark.parametrize("threads", THREADS, ids=lambda t: f"node{t}t")
@pytest.mark.parametrize("size", SIZES)
def test_raw_q8(tjs_raw, refs, size, threads, record_property):
    """onnx/model_quantized.onnx: quantised (>= 100 x FP32 noise off PyTorch FP32, < INT8_REL_L2_MAX) and within
    Q8_AGREEMENT x its own quantisation error of Python ORT on the same file."""
    r = refs(size)
    y = tjs_raw("q8", threads, size)
    err = rel_l2(y, r["fp32"])
    record_property("rel_l2_vs_torch_fp32", err)
    assert QUANTISED_MIN_RATIO * r["noise"] < err < INT8_REL_L2_MAX, (err, r["noise"])
    for t in THREADS:
        quant = rel_l2(r["ort"]["q8", t], r["fp32"])
        d = rel_l2(y, r["ort"]["q8", t])
        assert d <= Q8_AGREEMENT * quant, (
            f"vs Python ORT {t}t: rel-L2 {d:.3e} > {Q8_AGREEMENT} x the file's quantisation error {quant:.3e}")
    print(f"tjs q8 {size} {threads}t: rel-L2 vs PyTorch FP32 {err:.3g}, "
          f"vs Python ORT {rel_l2(y, r['ort']['q8', 1]):.3g}")


# ------------------------------------------------------------------------------------------------ (b) the pipeline


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """{name: (path, PIL image)} of PHOTOS, written as PNG (lossless: Node and Python read the same pixels)."""
    from PIL import Image

    from edgedepth.images import default_image_set

    items = {i.id: i for i in default_image_set()}
    d = tmp_path_factory.mktemp("tjs_photos")
    out = {}
    for name, (view, (how, arg), _) in PHOTOS.items():
        img = items[view].load()
        img = img.crop(arg) if how == "crop" else img.resize(arg, Image.Resampling.LANCZOS)
        path = d / f"{name}.png"
        img.save(path)
        out[name] = (path, img)
    return out


def upstream_size(height: int, width: int) -> tuple[int, int]:
    """The model size upstream's DPTImageProcessor picks (transformers' own function; the folder's settings: 518x518,
    keep_aspect_ratio, ensure_multiple_of 14): scale so the side that changes least reaches 518, then round each side
    to a multiple of 14."""
    from transformers.models.dpt.image_processing_pil_dpt import get_resize_output_image_size

    s = get_resize_output_image_size(np.empty((3, height, width), np.uint8), (518, 518), True, 14)
    return s.height, s.width


@pytest.fixture(scope="module")
def pipeline(tjs, photos, tmp_path_factory):
    """pipeline('depth-estimation') on (photo, dtype), lazily, once: {"info", "depth" (its predicted_depth),
    "pixel_values" (its processor's)}."""
    work = tmp_path_factory.mktemp("tjs_pipeline")

    @functools.lru_cache(maxsize=None)
    def get(photo: str, dtype: str) -> dict:
        depth, pv = work / f"{photo}_{dtype}_depth.npy", work / f"{photo}_{dtype}_pixel_values.npy"
        info = tjs("pipeline", tjs.folder, dtype, photos[photo][0], depth, pv)
        return {"info": info, "depth": np.load(depth), "pixel_values": np.load(pv)}

    return get


@pytest.mark.parametrize("dtype", FILES)
@pytest.mark.parametrize("photo", PHOTOS)
def test_pipeline_depth_has_the_photos_size(pipeline, photos, photo, dtype):
    """pipeline('depth-estimation') returns a depth image and a predicted_depth of the photo's size; the model ran at
    upstream's keep-aspect-ratio size (multiples of 14), which here is PHOTOS' hand-worked size."""
    img = photos[photo][1]
    r = pipeline(photo, dtype)
    info, y = r["info"], r["depth"]
    h, w = img.height, img.width
    expected = PHOTOS[photo][2]
    assert upstream_size(h, w) == expected and expected[0] % 14 == 0 and expected[1] % 14 == 0
    assert info["pixel_values_dims"] == [1, 3, *expected] and r["pixel_values"].shape == (1, 3, *expected), info
    assert info["depth_size"] == [w, h] and info["predicted_depth_dims"] == [h, w], info
    assert y.shape == (h, w) and np.all(np.isfinite(y)) and np.ptp(y) > 0


def _bilinear(y, size, dtype):
    """[.., h, w] -> [H, W], bilinear with half-pixel centres and no antialiasing: ONNX Resize(mode=linear)'s defaults,
    which transformers.js' interpolate_4d runs, and PyTorch's align_corners=False; computed in ``dtype``."""
    import torch

    t = torch.from_numpy(np.asarray(y, dtype)).reshape(1, 1, *np.shape(y)[-2:])
    return torch.nn.functional.interpolate(t, size=size, mode="bilinear", align_corners=False)[0, 0].numpy()


@pytest.mark.parametrize("photo", PHOTOS)
def test_pipeline_is_the_model_on_its_pixels_then_bilinear(pipeline, photos, photo, tiny_ckpt, record_property):
    """fp32: the pipeline's predicted_depth is the checkpoint on transformers.js' own pixel_values, resized bilinearly
    to the photo, within FP32 noise: against float64 (model and resize), PyTorch FP32 (model and resize in FP32) being
    the noise (measured 0.76-1.00 x; square is a 518 -> 257 downscale)."""
    img = photos[photo][1]
    r = pipeline(photo, "fp32")
    x = r["pixel_values"]
    size = (img.height, img.width)
    ref64 = _bilinear(float64_reference(tiny_ckpt.model, x), size, np.float64)
    fp32 = _bilinear(torch_fp32(tiny_ckpt.model, x), size, np.float32)
    err = assert_within_fp32_noise(r["depth"], ref64, fp32, what=f"pipeline fp32, {photo}")
    record_property("rel_l2_vs_float64", err)
    print(f"pipeline fp32 {photo}: rel-L2 vs float64 {err:.3g} ({err / rel_l2(fp32, ref64):.2f} x PyTorch FP32's own)")


def test_pixels_at_the_models_size_are_ours(pipeline, photos):
    """A photo already at the size upstream's rule picks (686x518) is not resized: transformers.js' pixel_values are the
    photo's pixels exactly (denormalised: equal) and normalised within float32 rounding (float64 normalisation as
    truth, edgedepth.preprocess's FP32 arithmetic as the noise; measured 0.5 x)."""
    from edgedepth.preprocess import MEAN, STD, denormalise, pixels, preprocess

    img = photos["exact"][1]
    x = pipeline("exact", "fp32")["pixel_values"]
    size = PHOTOS["exact"][2]
    ours = preprocess(img, size)
    assert x.shape == ours.shape == (1, 3, *size)
    px = pixels(img, size)
    assert np.array_equal(px[0].transpose(1, 2, 0), np.asarray(img))       # Pillow did not resize either
    assert np.array_equal(denormalise(x), px) and np.array_equal(denormalise(ours), px)
    m, s = (np.asarray(v, np.float64).reshape(1, 3, 1, 1) for v in (MEAN, STD))
    assert_within_fp32_noise(x, (px / 255.0 - m) / s, ours, what="transformers.js normalisation")


@pytest.mark.parametrize("photo", ["landscape", "portrait", "square"])
def test_resized_pixels_differ_from_pillow(pipeline, photos, photo):
    """Canary for the documented difference (tests/js/README.md, BENCHMARKS.md): where it resizes, transformers.js
    (sharp's affine bicubic, no antialiasing) does not produce Pillow's bicubic pixels.  Measured rel-L2 of
    pixel_values 0.027 (landscape, 0.90x), 0.030 (portrait, 0.86x), 0.100 (square, 2.02x upscale: mean 3.8, max 114
    uint8 steps).  > 1e-3 is ~10x one uint8 step at a few pixels (no FP32 rounding reaches it); if this fails,
    transformers.js resizes as Pillow does and the docs saying otherwise are stale."""
    from edgedepth.preprocess import preprocess

    img = photos[photo][1]
    x = pipeline(photo, "fp32")["pixel_values"]
    d = rel_l2(x, preprocess(img, x.shape[-2:]))
    print(f"{photo} {img.width}x{img.height} -> {x.shape[-1]}x{x.shape[-2]}: pixel_values rel-L2 vs Pillow {d:.3g}")
    assert 1e-3 < d < 0.5, d
