"""Shared fixtures and the numeric tolerance policy (see tests/README.md).

Tolerance policy -- every numeric assertion in tests/ is one of:

1. **Exact** (``np.array_equal`` / max abs diff == 0) where the transform is exact by construction: a rewrite whose
   docstring says bit-identical (drop_attention_mask, fold_attention_scale with a power-of-two scale, fuse_qkv,
   fp16_safe, freeze_position_embedding where no resize happens), re-running the same file, byte-identical exports.
2. **Within FP32 noise**, measured in the same run on the same machine and input: an artifact's or rewritten model's
   rel-L2 against a float64 PyTorch run of the original model must be at most ``FP32_NOISE_FACTOR`` (4) times the
   rel-L2 of PyTorch FP32 itself against that float64 run (:func:`assert_within_fp32_noise`).  Why 4: two FP32
   evaluations of the same function that differ only in summation order, FMA contraction or a few-ULP transcendental
   (XNNPACK, SwiftShader, another ISA or thread split) accumulate rounding errors of the same size -- measured ratios
   0.8-1.2 on synthetic-tiny for every rewrite, LiteRT CPU at 1/2/4 threads and SwiftShader (AVX2 EPYC).  4x leaves
   room for a CPU we did not measure, while any real defect (FP16 compute, a dropped or wrong op) is >= 100x off.
   A comparison whose reference is itself an FP32 run uses 2x the factor (each side within the factor: triangle
   inequality), and a float-rounding-exact constant is compared to its float64 value in float32 ULPs (<= 0.5 ULP:
   rounded once).
3. **A constant**, only where FP32 rounding cannot reach it (INT8 / FP16 quantisation error, ~1e-4..1e-1, or a
   float64-only computation), each with a comment saying why.

No bare constant at FP32 noise level (1e-6, 1e-5 on an FP32 rel-L2): it holds on one CPU and fails on another.
Thread counts: runtimes that take one (LiteRT CPU, ExecuTorch XNNPACK) are tested at ``THREADS`` = (1, 2); the PyTorch
bit-identity checks run at 1 and 2 intra-op threads (:func:`torch_threads`).  Missing set-up (chromium's SwiftShader
Vulkan driver, libvulkan1, executorch, playwright) fails with a message naming it; nothing is skipped for it.

Models and exports are built once per session (conversion is the slow part).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import functools
import ctypes
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the repository
# Every build in a test (and the CLIs it starts) runs without the user's build cache unless the test names one: a test
# measures its own build, and never fills ~/.cache (tests/test_build_cache.py tests the cache).
os.environ["EDGEDEPTH_BUILD_CACHE"] = "off"

TINY_SIZE = (56, 70)      # 4x5 patches: exercises position-embedding interpolation like 518x686 does
FULL_SIZE = (518, 686)
THREADS = (1, 2)          # CPU thread counts every runtime parity test runs at
FP32_NOISE_FACTOR = 4.0   # see the module docstring
FULL_SIZE_PHOTO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "vectors", "rgb_160x120.png")


def rel_l2(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


# ------------------------------------------------------------------------------------------------ tolerance policy


def float64_reference(model, x) -> np.ndarray:
    """Depth map of ``model`` (a transformers depth model, or a DepthModule) run in float64 on a deep copy."""
    import torch

    from edgedepth.checkpoint import DepthModule

    m = copy.deepcopy(model).double().eval()
    if not isinstance(m, DepthModule):
        m = DepthModule(m)
    x = torch.from_numpy(np.array(x, np.float64))          # a copy: inputs may be read-only views
    with torch.no_grad():
        return m(x).numpy()


def torch_fp32(model, x) -> np.ndarray:
    """Depth map of ``model`` in float32 (PyTorch eager, this process's thread count)."""
    import torch

    from edgedepth.checkpoint import DepthModule

    m = model if isinstance(model, DepthModule) else DepthModule(model)
    with torch.no_grad():
        return m.eval()(torch.as_tensor(np.asarray(x, np.float32))).numpy()


def assert_within_fp32_noise(out, ref64, fp32, *, factor: float = FP32_NOISE_FACTOR, what: str = "output",
                             max_abs: bool = False) -> float:
    """rel-L2(out, ref64) <= factor * rel-L2(fp32, ref64); returns the former.

    ``ref64``: float64 PyTorch run; ``fp32``: PyTorch FP32 run of the same model on the same input (this machine, this
    run).  ``max_abs``: also the largest absolute error, against the same factor times FP32's own.
    """
    out, ref64, fp32 = (np.asarray(a, np.float64).reshape(np.shape(ref64)) for a in (out, ref64, fp32))
    noise = rel_l2(fp32, ref64)
    assert noise > 0, "reference is not a float64 run (PyTorch FP32 matches it exactly)"
    err = rel_l2(out, ref64)
    assert np.isfinite(err) and err <= factor * noise, (
        f"{what}: rel-L2 vs float64 {err:.3e} > {factor:g} x PyTorch FP32's own {noise:.3e} (ratio {err / noise:.2f})")
    if max_abs:
        a_noise, a_err = float(np.abs(fp32 - ref64).max()), float(np.abs(out - ref64).max())
        assert a_err <= factor * a_noise, (
            f"{what}: max abs error vs float64 {a_err:.3e} > {factor:g} x PyTorch FP32's own {a_noise:.3e}")
    return err


def assert_rounded_once(value, ref64, scale: float, what: str = "constant") -> None:
    """``value`` (float32) is ``ref64`` (float64) rounded to float32 once: at most half a float32 ULP away, plus the
    float64 evaluation noise of ``ref64`` itself (a few float64 ULPs of ``scale``, the magnitude of the inputs it
    was computed from; 2^-45 * scale is 2^-21 of a float32 ULP there, so it cannot hide a float32 rounding)."""
    value = np.asarray(value, np.float32)
    ref64 = np.asarray(ref64, np.float64)
    err = np.abs(value.astype(np.float64) - ref64)
    half_ulp = 0.5 * np.spacing(np.abs(value)).astype(np.float64)   # >= half the spacing around ref64
    excess = err - half_ulp - 2.0 ** -45 * scale
    i = int(np.argmax(excess))
    assert excess.flat[i] <= 0, (f"{what}: {value.flat[i]!r} is {err.flat[i]:.3e} from its float64 value "
                                 f"{ref64.flat[i]!r} ({err.flat[i] / (2 * half_ulp.flat[i]):.2f} float32 ULP; "
                                 "rounded once: <= 0.5)")


@contextlib.contextmanager
def torch_num_threads(n: int):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.fixture(params=THREADS, ids=lambda n: f"torch{n}t")
def torch_threads(request):
    """Run the test with PyTorch at 1 and at 2 intra-op threads (bit-identity must not depend on the split)."""
    with torch_num_threads(request.param):
        yield request.param


# ------------------------------------------------------------------------------------------------ set-up checks

SWIFTSHADER_ICD = "/usr/lib/chromium/vk_swiftshader_icd.json"


def vulkan_problem() -> str | None:
    """Why LiteRT's GPU accelerator cannot run here (``make test`` installs chromium + libvulkan1), or None."""
    try:
        ctypes.CDLL("libvulkan.so.1")
    except OSError:
        return "libvulkan.so.1 not found (apt-get install libvulkan1; `make test` does)"
    named = os.environ.get("VK_ICD_FILENAMES") or os.environ.get("VK_DRIVER_FILES")
    if named:
        missing = [p for p in named.split(os.pathsep) if p and not os.path.exists(p)]
        return f"Vulkan driver named in the environment does not exist: {missing}" if missing else None
    if not os.path.exists(SWIFTSHADER_ICD):
        return f"{SWIFTSHADER_ICD} missing: SwiftShader comes with Debian's chromium (apt-get install chromium)"
    return None


def require_vulkan() -> None:
    problem = vulkan_problem()
    if problem:
        pytest.fail(f"GPU test cannot run: {problem}", pytrace=False)


@pytest.fixture(autouse=True)
def _gpu_marker_needs_vulkan(request):
    """Tests marked ``gpu`` fail with a clear message, not an opaque compile error, when no Vulkan driver is set up."""
    if request.node.get_closest_marker("gpu"):
        require_vulkan()


def assert_one_line_error(r, *fragments, code: int = 2):
    """A user error as the CLI must report it: exit ``code`` (2), exactly one ``edgedepth: error:`` line holding every
    fragment, no traceback and never "unexpected" (the CLI's word for its own bugs)."""
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    lines = [l for l in r.stderr.strip().splitlines() if l.startswith("edgedepth: error:")]
    assert len(lines) == 1, r.stderr
    assert "Traceback" not in r.stderr and "unexpected" not in lines[0], r.stderr
    for f in fragments:
        assert f in lines[0], lines[0]


def benchmark_module(name: str):
    """benchmarks/NAME.py imported as a module (the benchmarks are scripts, not a package: as when one runs, its
    folder is on sys.path for its imports of the others)."""
    import importlib.util

    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
    if here not in sys.path:
        sys.path.append(here)
    spec = importlib.util.spec_from_file_location(name, os.path.join(here, f"{name}.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run_cli(*args, timeout=900, env=None):
    """Run ``python -m edgedepth ARGS`` in a child, as a user would; returns CompletedProcess (text)."""
    return subprocess.run([sys.executable, "-m", "edgedepth", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=env)


@pytest.fixture(scope="session")
def tiny_ckpt():
    from edgedepth.checkpoint import load_checkpoint

    return load_checkpoint("synthetic-tiny", quiet=True)


@pytest.fixture(scope="session")
def tiny_input():
    return np.random.default_rng(1).standard_normal((1, 3, *TINY_SIZE), dtype=np.float32)


@pytest.fixture(scope="session")
def tiny_refs(tiny_ckpt, tiny_input):
    """The original HF model (SDPA attention, no rewrites) on ``tiny_input``: {"fp32", "fp64"} depth maps."""
    return {"fp32": torch_fp32(tiny_ckpt.model, tiny_input), "fp64": float64_reference(tiny_ckpt.model, tiny_input)}


@pytest.fixture(scope="session")
def tiny_plain_export(tmp_path_factory, tiny_ckpt):
    """synthetic-tiny at 56x70, plain conversion, FP32 + INT8."""
    from edgedepth.checkpoint import DepthModule
    from edgedepth.formats import tflite as litert

    out = tmp_path_factory.mktemp("tiny_plain")
    return litert.export(DepthModule(tiny_ckpt.model), *TINY_SIZE, str(out), ("fp32", "int8"), plain=True)


DA3_TINY_SIZE = (28, 42)


@pytest.fixture(scope="session")
def da3_tiny_exports(tmp_path_factory):
    """synthetic-da3-tiny at DA3_TINY_SIZE, default rewrites, FP32 + INT8 per target (+ FP16 for litert):
    ``get(target)`` -> {precision: Exported}, each exported once for the session on first use; test_depth_anything_3
    and test_da3_confidence share them (read-only by convention)."""
    from edgedepth import formats
    from edgedepth.checkpoint import load_checkpoint

    done: dict = {}

    def get(target: str) -> dict:
        if target not in done:
            ckpt = load_checkpoint("synthetic-da3-tiny", quiet=True)
            out = tmp_path_factory.mktemp(f"da3_tiny_{target}")
            precisions = ("fp32", "fp16", "int8") if target == "litert" else ("fp32", "int8")
            done[target] = {f.precision: f for f in formats.export(
                ckpt.model, *DA3_TINY_SIZE, str(out), target_name=target, precisions=precisions,
                stem=ckpt.file_stem)}
        return done[target]
    return get


@pytest.fixture(scope="session")
def full_plain_export(tmp_path_factory):
    """The full-size synthetic model at 518x686, plain conversion, FP32 + INT8 (about a minute)."""
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.formats import tflite as litert

    out = tmp_path_factory.mktemp("full_plain")
    ckpt = load_checkpoint("synthetic", quiet=True)
    paths = litert.export(DepthModule(ckpt.model), *FULL_SIZE, str(out), ("fp32", "int8"), plain=True)
    return {"paths": paths, "ckpt": ckpt}


# PyTorch's scalar kernels, oneDNN limited to SSE4.1, one thread: a different CPU for every float kernel we use.
OTHER_KERNELS = {"ATEN_CPU_CAPABILITY": "default", "ONEDNN_MAX_CPU_ISA": "SSE41", "OMP_NUM_THREADS": "1"}


def export_in_child(out, size: str, *extra, env_extra: dict | None = None) -> None:
    """``edgedepth export --model synthetic --size SIZE --out OUT EXTRA...`` in a child process (``env_extra``: e.g.
    OTHER_KERNELS), as a user would run it; fails the test with the child's stderr."""
    r = run_cli("export", "--model", "synthetic", "--size", size, "--out", out, "--quiet", *extra,
                env={**os.environ, **(env_extra or {})})
    assert r.returncode == 0, r.stderr[-3000:]


TINY_RELEASE_RECIPE = "recipes/depth-anything-v2-small.py"
TINY_RELEASE_ARGS = ["--model", "synthetic-tiny", "--sizes", "28x42", "--parity-images", "2", "--quiet"]


def build_tiny_release(out, env_extra: dict | None = None):
    """The tiny release (synthetic-tiny, the default recipe at 28x42: LiteRT, ExecuTorch, ONNX with config.json and
    preprocessor_config.json) built by the CLI in a child process; ~90 s."""
    r = run_cli("release", "--recipe", TINY_RELEASE_RECIPE, "--out", out, *TINY_RELEASE_ARGS,
                env={**os.environ, **(env_extra or {})})
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def tiny_release(tmp_path_factory):
    """One tiny release folder for the session (read-only by convention: copy it before changing anything)."""
    return build_tiny_release(tmp_path_factory.mktemp("tiny_release") / "release")


@dataclasses.dataclass(frozen=True)
class InstalledWheel:
    """edgedepth as a user gets it: ``dist`` (the sdist and the wheel built from it), ``venv`` (a fresh venv outside
    the repository holding the wheel), ``home`` (an empty working folder outside the repository)."""

    dist: pathlib.Path
    venv: pathlib.Path
    home: pathlib.Path

    @property
    def wheel(self) -> pathlib.Path:
        return next(self.dist.glob("edgedepth-*.whl"))

    @property
    def sdist(self) -> pathlib.Path:
        return next(self.dist.glob("edgedepth-*.tar.gz"))

    def env(self, **extra) -> dict:
        """The user's environment (benchmarks/lib/wheel.py ``user_env``) plus ``extra``."""
        return {**_wheel_lib().user_env(str(self.venv)), **extra}

    def run(self, *args, timeout=900, **env_extra) -> subprocess.CompletedProcess:
        """``edgedepth ARGS`` (the wheel's console script) in ``home``."""
        return subprocess.run([str(self.venv / "bin" / "edgedepth"), *map(str, args)], capture_output=True,
                              text=True, timeout=timeout, cwd=self.home, env=self.env(**env_extra))


@functools.cache
def _wheel_lib():
    return benchmark_module("lib/wheel")


def install_wheel(tmp) -> InstalledWheel:
    """The sdist and wheel built, and the wheel installed into a fresh venv outside the repository, as
    benchmarks/lib/wheel.py does it (one way, for this test and benchmarks/wheel_path.py)."""
    wheel_lib = _wheel_lib()
    tmp = pathlib.Path(tmp)
    dist, venv, home = tmp / "dist", tmp / "venv", tmp / "home"
    home.mkdir()
    r = subprocess.run(wheel_lib.build_command(ROOT, str(dist)), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    wheel_lib.make_venv(str(venv))
    w = InstalledWheel(dist, venv, home)
    r = subprocess.run(wheel_lib.install_command(str(venv), str(w.wheel)), capture_output=True, text=True,
                       timeout=600, env=w.env())
    assert r.returncode == 0, r.stderr[-3000:]
    return w


@pytest.fixture(scope="session")
def installed_wheel(tmp_path_factory) -> InstalledWheel:
    """The wheel installed into a fresh venv outside the repository (:func:`install_wheel`), once per session."""
    return install_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session")
def wheel_release(installed_wheel) -> pathlib.Path:
    """The tiny release as a user of the wheel builds it: the installed ``edgedepth release`` with the default recipe
    it carries (no --recipe), from a folder outside the repository, under other CPU kernels (OTHER_KERNELS)."""
    out = installed_wheel.home / "release"
    r = installed_wheel.run("release", "--out", out, *TINY_RELEASE_ARGS, **OTHER_KERNELS)
    assert r.returncode == 0, r.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def full_release_518x686(tmp_path_factory):
    """The full synthetic release's 518x686 LiteRT files (FP32, FP16 weights, INT8, and the uint8-input FP16-weight
    WebGPU file), exported once per session *under other CPU kernels* (OTHER_KERNELS): test_reproducible checks them
    against the golden SHA-256s, the full-size rewrite, GPU and playground tests use them.  {precision: path}."""
    out = tmp_path_factory.mktemp("full_release_518x686")
    export_in_child(out, "518x686", "--precision", "fp32,fp16,int8", env_extra=OTHER_KERNELS)
    export_in_child(out, "518x686", "--precision", "fp16", "--input-dtype", "uint8", env_extra=OTHER_KERNELS)
    stem = "depth_anything_v2_small_518x686_"
    return {p: str(out / f"{stem}{p}.tflite") for p in ("fp32", "fp16", "int8", "fp16_u8in")}


@pytest.fixture(scope="session")
def full_reference():
    """The full-size synthetic model on a real photo at 518x686 (tests/vectors/rgb_160x120.png, the playground's full-
    size input): {"ckpt", "x", "fp32", "fp64"}.  The one float64 full-size run of the suite, shared by the slow tests."""
    from edgedepth.checkpoint import load_checkpoint
    from edgedepth.preprocess import load_and_preprocess

    ckpt = load_checkpoint("synthetic", quiet=True)
    x = load_and_preprocess(FULL_SIZE_PHOTO, FULL_SIZE)[0]
    return {"ckpt": ckpt, "x": x, "fp32": torch_fp32(ckpt.model, x), "fp64": float64_reference(ckpt.model, x)}
