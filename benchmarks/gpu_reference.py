"""The device's own limit: the same synthetic model in PyTorch CUDA on the lent GPU, next to LiteRT's GPU numbers.

Runs ON the device machine (Python 3.12, torch 2.11+cu130 there).  What travels: the repo (src/ on PYTHONPATH), the
default set's photos (``.dev/gpu/images``, made by ``gpu_options.py prepare``) and, in the git-ignored ``.whl2/``,
the pure-Python transformers 5.24.0 wheel our code was validated with (the device has 5.17).  One device call,
``carry: [".whl2", ".dev/gpu/images"]`` (518x686 alone with 5 compiled arms: 140 s on 2026-12-06, H100):

    python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl2/*.whl \
      && export PYTHONPATH=/tmp/site:$PWD/src PYTHONUNBUFFERED=1 \
      && python3 benchmarks/gpu_reference.py --images-root .dev/gpu/images

then copy ``gpu_reference.json`` from the call's files to benchmarks/results/.  Smoke test here (CPU, ~1.5 min,
mostly the CPU compile):

    PYTHONPATH=src .venv/bin/python benchmarks/gpu_reference.py --device cpu --size 56x70 --model synthetic-tiny \
      --rounds 2 --warmup 1 --iters 3 --out /tmp/gpu_reference.json

Method: ``synthetic`` checkpoint (SHA-256 of the DepthModule's state dict recorded: d9b546bc... = the checkpoint's
6ed8f296... under the ``model.`` prefix), DepthModule, input = one photo of the default image set
preprocessed to each size.  Variants: eager FP32 (TF32 off), eager TF32, eager FP16 autocast, and
``torch.compile(mode="reduce-overhead", dynamic=False)`` (CUDA graphs) under FP16 autocast (one compile per size), the
same with SDPA held to the flash kernel inside the compiled function (``-flash``), and a ``.half()`` copy of the model
on a float16 input, compiled the same way, without and with flash (``compile-cudagraphs-half``, ``-half-flash``),
and both compiled arms with the backbone's attention mask left out (``-nomask``: see VARIANTS; the limit).  The
environment records ``is_exporting_under_torch_compile`` (True on the device's torch 2.11: the mask's cause).
Per size: every variant runs W warm-ups then N timed calls per round, R rounds, order rotated per round.  A timed call =
forward on a device-resident input, bracketed by CUDA events and synchronised (compile, H2D/D2H excluded; the host copy
of input + output is timed once separately as ``host_io_ms``).  Each variant's output is compared (rel-L2) with a
float64 CPU run of the same model on the same input.  A variant that fails is recorded as ``{"error": ...}``.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import time
import traceback

import numpy as np
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint, state_dict_digest  # noqa: E402
from edgedepth.images import default_image_set, image_set_hash  # noqa: E402
from edgedepth.preprocess import parse_size, preprocess  # noqa: E402
from edgedepth.verify.bench import environment, summarise  # noqa: E402

VARIANTS = ("eager-fp32", "eager-tf32", "eager-fp16-autocast", "compile-cudagraphs-fp16",
            "compile-cudagraphs-fp16-flash", "compile-cudagraphs-half", "compile-cudagraphs-half-flash",
            "compile-cudagraphs-fp16-nomask", "compile-cudagraphs-half-nomask")
# "-nomask": the backbone's attention registered as "sdpa_nomask" (transformers' AttentionInterface: the same SDPA
# function with no mask function registered, so transformers builds no mask).  Why: transformers 5.24's DINOv2 builds
# its all-true [1,1,N,N] mask whenever torch.compiler.is_exporting() is true, and torch 2.11's dynamo (the device's)
# folds that to True under plain torch.compile (fixed by pytorch#176499: torch 2.13, our pin, gives None), so SDPA
# gets a boolean mask, the fused kernels refuse it and the math backend runs in FP32.  Same arithmetic: an all-true
# mask and no mask are bit-identical on one SDPA kernel; only the kernel choice (fused vs math) changes rounding.
# "-flash": SDPA held to the flash kernel (torch.nn.attention.sdpa_kernel).  The 2026-12-05 H100 profile of the plain
# compiled row (results/gpu_limit_probe.json) spent 61 % of the call in FP32 attention: PyTorch's math SDPA, upcast.
# Diagnosis arms (issue 30: the published CUDA-graph row was ~3x a separate script's wall clock), at --diag-size only:
# the same compiled graph under no_grad instead of inference_mode, and inductor without CUDA graphs.
DIAG_VARIANTS = ("compile-cudagraphs-fp16-nograd", "compile-nocudagraphs-fp16")


def set_tf32(on: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def make_variant(name: str, module, device: str):
    """-> (tf32 flag, zero-arg callable on the input bound later).  Compilation happens lazily on first call.

    ``-half``: a ``.half()`` copy of the model on a float16 input (no autocast; output cast back to float32).
    ``-flash``: SDPA held to the flash kernel INSIDE the compiled function (its own code object, so its own dynamo
    cache entry: a 2026-12-06 H100 run held it outside, and the arm replayed the plain compiled graph)."""
    fp16 = "fp16" in name
    half = "-half" in name
    if half:
        module = copy.deepcopy(module).half()
    if name.endswith("-nomask"):
        module = without_mask(module if half else copy.deepcopy(module))
    target = module
    if name.endswith("-flash"):
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def target(x, _m=module):
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return _m(x)
    graphs = name.startswith("compile-cudagraphs")
    fn = (torch.compile(target, mode="reduce-overhead" if graphs else "default", dynamic=False)
          if name.startswith("compile") else target)
    graphs = graphs and device == "cuda"
    grad_off = torch.no_grad if name.endswith("-nograd") else torch.inference_mode

    def call(x):
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        with grad_off(), torch.autocast(device, dtype=torch.float16, enabled=fp16):
            return fn(x.half()).float() if half else fn(x)
    return name == "eager-tf32", call


def compiled_is_exporting() -> bool:
    """What ``torch.compiler.is_exporting()`` says inside plain torch.compile (not export): True where dynamo folds it
    to a constant (torch 2.11), which makes transformers 5.24's DINOv2 build its mask (see VARIANTS)."""
    f = torch.compile(lambda x: x + (1 if torch.compiler.is_exporting() else 0), backend="eager", fullgraph=True)
    return bool(f(torch.zeros(1)).item() == 1)


def without_mask(module):
    """``module`` (a DepthModule, changed in place) with its backbone's attention as "sdpa_nomask" (see VARIANTS)."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    AttentionInterface.register("sdpa_nomask", sdpa_attention_forward)
    module.model.set_attn_implementation({"backbone_config": "sdpa_nomask"})
    return module


class Timer:
    """Two timers per call, synchronised per call: ``(events_ms, wall_ms)`` = CUDA events recorded around the call
    on the current stream, and the host's perf_counter from before the call until the device has finished it (on
    the CPU both are perf_counter).  ``throughput`` = wall time of ``n`` calls synchronised once, divided by ``n``."""

    def __init__(self, device):
        self.cuda = device == "cuda"

    def __call__(self, call, x) -> tuple[float, float]:
        if not self.cuda:
            t0 = time.perf_counter()
            call(x)
            ms = (time.perf_counter() - t0) * 1e3
            return ms, ms
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        a.record()
        call(x)
        b.record()
        b.synchronize()
        return a.elapsed_time(b), (time.perf_counter() - t0) * 1e3

    def throughput(self, call, x, n: int) -> float:
        sync("cuda" if self.cuda else "cpu")
        t0 = time.perf_counter()
        for _ in range(n):
            call(x)
        sync("cuda" if self.cuda else "cpu")
        return (time.perf_counter() - t0) * 1e3 / n


def _timed(timer, call, x, n: int) -> tuple[list, list]:
    t = [timer(call, x) for _ in range(n)]
    return [e for e, _ in t], [w for _, w in t]


def _both(events: list, wall: list) -> dict:
    """summarise() of the CUDA-event times (the row's median_ms, as before) plus the wall-clock medians beside it."""
    w = summarise(wall)
    return {**summarise(events), "wall_median_ms": w["median_ms"], "wall_p25_ms": w["p25_ms"],
            "wall_p75_ms": w["p75_ms"], "events_over_wall": float(np.median(events) / np.median(wall))}


def _counters() -> dict:
    """torch._dynamo's counters that explain a slow compiled call: CUDA-graph skips, recompiles, graph breaks."""
    try:
        from torch._dynamo.utils import counters
    except Exception:  # noqa: BLE001
        return {}
    return {k: dict(v) for k, v in counters.items() if k in ("inductor", "stats", "graph_break", "recompiles") and v}


def rel_l2(y: torch.Tensor, ref: torch.Tensor) -> dict:
    y = y.detach().double().cpu()
    d = {"rel_l2_vs_float64": float((y - ref).norm() / ref.norm()), "max_abs_diff": float((y - ref).abs().max()),
         "finite": bool(torch.isfinite(y).all())}
    return d


def sync(device):
    if device == "cuda":
        torch.cuda.synchronize()


def run_size(size, x_np, module, ref_module, device, names, a) -> dict:
    with torch.no_grad():
        ref = ref_module(torch.from_numpy(x_np).double()).detach()
    x = torch.from_numpy(x_np).to(device)
    out = {"reference": {"what": "float64, CPU, same model and input", "mean": float(ref.mean()),
                         "std": float(ref.std())}, "variants": {}}
    timer, live = Timer(device), {}
    for n in names:          # set-up + first call (compile happens here), checked against float64
        try:
            tf32, call = make_variant(n, module, device)
            set_tf32(tf32)
            t0 = time.perf_counter()
            y = call(x).clone()
            sync(device)
            setup_s = time.perf_counter() - t0
            for _ in range(2):   # CUDA graphs record on the 2nd/3rd call: compare what replays, too
                y = call(x).clone()
            sync(device)
            out["variants"][n] = {"first_call_s": setup_s, **rel_l2(y, ref)}
            live[n] = (tf32, call)
        except Exception as e:   # noqa: BLE001 - a failing variant is a result
            text = " ".join(str(e).split())     # the whole message: dynamo puts the cause after the first line
            out["variants"][n] = {"error": f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"[:200],
                                  "error_detail": text[:1500]}
            traceback.print_exc()
        print(size, n, out["variants"][n], flush=True)
    for n, (tf32, call) in live.items():      # solo, before any interleaving: each variant alone, both timers
        set_tf32(tf32)
        for _ in range(a.warmup):
            call(x)
        ev, wl = _timed(timer, call, x, a.iters)
        out["variants"][n]["solo"] = {**_both(ev, wl), "throughput_ms": timer.throughput(call, x, 100)}
        print(size, n, "solo", {k: round(v, 3) for k, v in out["variants"][n]["solo"].items()
                                if k in ("median_ms", "wall_median_ms", "throughput_ms")}, flush=True)
    out["counters_after_solo"] = _counters()
    times = {n: [] for n in live}
    walls = {n: [] for n in live}
    rmed = {n: [] for n in live}
    order = list(live)
    for r in range(a.rounds):
        for n in order[r % len(order):] + order[: r % len(order)]:
            tf32, call = live[n]
            set_tf32(tf32)
            try:
                for _ in range(a.warmup):
                    call(x)
                sync(device)
                t, w = _timed(timer, call, x, a.iters)
            except Exception as e:  # noqa: BLE001
                out["variants"][n]["error"] = f"round {r}: {type(e).__name__}: {e}"[:500]
                continue
            times[n] += t
            walls[n] += w
            rmed[n].append(float(np.median(t)))
    for n in live:
        if times[n]:
            out["variants"][n].update(_both(times[n], walls[n]), round_medians_ms=rmed[n])
            tf32, call = live[n]
            set_tf32(tf32)
            out["variants"][n]["throughput_ms"] = timer.throughput(call, x, 100)
    out["counters_after_rounds"] = _counters()
    io, y_dev = [], torch.zeros(ref.shape, device=device)
    for _ in range(20):      # host side of an app: pageable input H2D + output D2H (1 x H x W float32)
        t0 = time.perf_counter()
        torch.from_numpy(x_np).to(device)
        y_dev.cpu().numpy()
        io.append((time.perf_counter() - t0) * 1e3)
    out["host_io_ms"] = float(np.median(io))
    set_tf32(False)
    return out


def gpu_environment() -> dict:
    env = environment(threads=torch.get_num_threads())
    import transformers
    env["versions"].update(torch=torch.__version__, transformers=transformers.__version__)
    env["cuda_runtime"] = torch.version.cuda
    if torch.cuda.is_available():
        env["gpu"] = torch.cuda.get_device_name(0)
        env["cudnn"] = torch.backends.cudnn.version()
        env["compute_capability"] = ".".join(map(str, torch.cuda.get_device_capability(0)))
        try:
            q = subprocess.run(["nvidia-smi", "--query-gpu=driver_version,clocks.max.sm,power.limit",
                                "--format=csv,noheader"], capture_output=True, text=True, timeout=30).stdout.strip()
            env["driver"], env["max_sm_clock"], env["power_limit"] = (s.strip() for s in q.split(","))
        except Exception as e:  # noqa: BLE001
            env["driver"] = f"unknown ({e})"
    return env


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--model", default="synthetic")
    ap.add_argument("--size", action="append", help="HxW, repeatable (default 518x686, 224x224, 392x518)")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--diag-size", default="518x686", help="size that also runs the diagnosis arms (none: '')")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--image", type=int, default=20, help="index into the default image set (20 = chelsea/full)")
    ap.add_argument("--images-root", default=None, help="flat folder of the default set's photos (no scikit-image)")
    ap.add_argument("--out", default=os.path.join(os.environ.get("OUT", "out"), "gpu_reference.json"))
    a = ap.parse_args()
    sizes = [parse_size(s) for s in (a.size or ["518x686", "224x224", "392x518"])]
    names = [n for n in a.variants.split(",") if n]
    if set(names) - set(VARIANTS + DIAG_VARIANTS):
        ap.error(f"unknown variants {sorted(set(names) - set(VARIANTS + DIAG_VARIANTS))}; choose from "
                 f"{', '.join(VARIANTS + DIAG_VARIANTS)}")
    torch.manual_seed(0)
    ckpt = load_checkpoint(a.model, quiet=True)
    module = DepthModule(ckpt.model).eval()
    ref_module = copy.deepcopy(module).double()
    item = default_image_set(a.images_root)[a.image]
    img = item.load()
    report = {"kind": "edgedepth.gpu_reference", "environment": gpu_environment(),
              "model": {"name": a.model, "state_dict_sha256": state_dict_digest(module),
                        "parameters": sum(p.numel() for p in module.parameters())},
              "input": {"image": item.id, "item_sha256": image_set_hash([item])},
              "method": {"rounds": a.rounds, "warmup": a.warmup, "iters": a.iters, "interleaved": True,
                         "order_rotated_per_round": True, "device": a.device,
                         "timed": ("forward on a device-resident input, two timers per call, synchronised per "
                                   "call: CUDA events around the call (median_ms) and the host wall clock from "
                                   "before the call until the device finished it (wall_median_ms); throughput_ms = "
                                   "wall time of 100 calls synchronised once / 100; 'solo' = each variant alone "
                                   "before the interleaved rounds; compile and host copies excluded (host_io_ms: "
                                   "pageable input H2D + output D2H, timed apart)"),
                         "reference": "float64 CPU forward of the same model on the same input"},
              "sizes": {}}
    report["environment"]["is_exporting_under_torch_compile"] = compiled_is_exporting()
    module.to(a.device)
    for size in sizes:
        key = f"{size[0]}x{size[1]}"
        t0 = time.perf_counter()
        arms = names + [d for d in DIAG_VARIANTS if key == a.diag_size and d not in names]
        report["sizes"][key] = run_size(key, preprocess(img, size), module, ref_module, a.device, arms, a)
        report["sizes"][key]["wall_s"] = time.perf_counter() - t0
        os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
        with open(a.out, "w") as f:      # written after every size: a later failure keeps what was measured
            json.dump(report, f, indent=1)
    for key, s in report["sizes"].items():
        for n, v in s["variants"].items():
            print(f"{key:>8} {n:<32} " + (f"events {v['median_ms']:8.3f} wall {v['wall_median_ms']:8.3f} "
                                           f"x100 {v['throughput_ms']:8.3f} solo {v['solo']['median_ms']:8.3f}/"
                                           f"{v['solo']['wall_median_ms']:8.3f} ms  rel-L2 {v['rel_l2_vs_float64']:.2e}"
                                           if "median_ms" in v else f"ERROR {v.get('error')}"))
    print("wrote", a.out)


if __name__ == "__main__":
    main()
