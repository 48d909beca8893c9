"""Where the compiled CUDA-graph row's time goes (issue 30): a torch.profiler kernel table of one compiled FP16-autocast
call of the synthetic DA-V2-Small at 518x686 on the H200, next to the same graph with FP16 weights (``.half()``, no
autocast), then the autocast graph with SDPA held to the flash kernel and with the math backend's FP16 reduction
allowed (the H100 profile of 2026-12-05 showed the attention as math SDPA in FP32).  Runs ON the device (see devices/gpu_truth_device.sh ``probe``);
writes $OUT/gpu_limit_probe.json.  Both timers (CUDA events, synchronised wall clock) per call, 20 warm-ups + 50 calls.
"""

from __future__ import annotations

import contextlib
import json
import os

import numpy as np
import torch
import transformers

from edgedepth.checkpoint import DepthModule, load_checkpoint  # noqa: E402
from gpu_reference import Timer, _counters, _timed  # noqa: E402


def timed(call, x, n=50, warm=20) -> dict:
    for _ in range(warm):
        call(x)
    ev, wl = _timed(Timer("cuda"), call, x, n)
    return {"events_median_ms": float(np.median(ev)), "wall_median_ms": float(np.median(wl))}


def kernels(call, x, top=25) -> list:
    from torch.profiler import ProfilerActivity, profile

    for _ in range(5):
        call(x)
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        for _ in range(5):
            call(x)
        torch.cuda.synchronize()
    rows = sorted(p.key_averages(), key=lambda e: -getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0)))
    out = []
    for e in rows[:top]:
        t = getattr(e, "device_time_total", getattr(e, "cuda_time_total", 0))
        out.append({"name": e.key[:160], "calls_per_forward": e.count / 5, "ms_per_forward": t / 5 / 1e3})
    return out


def main() -> None:
    torch.manual_seed(0)
    ckpt = load_checkpoint("synthetic", quiet=True)
    m = DepthModule(ckpt.model).eval().cuda()
    x = torch.randn(1, 3, 518, 686, device="cuda")
    rep = {"kind": "edgedepth.gpu_limit_probe", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
           "attn": [ckpt.model.config._attn_implementation,
                    getattr(ckpt.model.config.backbone_config, "_attn_implementation", None)]}

    def graphs(fn):
        def call(x):
            torch.compiler.cudagraph_mark_step_begin()
            return fn(x)
        return call

    c16 = torch.compile(m, mode="reduce-overhead", dynamic=False)

    def autocast_call(x):
        with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16):
            return c16(x)
    ac = graphs(autocast_call)
    rep["autocast_compiled"] = timed(ac, x)
    print("autocast compiled", rep["autocast_compiled"], flush=True)
    rep["autocast_compiled_kernels"] = kernels(ac, x)
    rep["transformers"] = transformers.__version__
    if os.environ.get("PROBE_ARMS") == "autocast":      # the second pass (another transformers) stops here
        rep["dynamo_counters"] = _counters()
        for k in rep["autocast_compiled_kernels"][:12]:
            print(f"  {k['ms_per_forward']:7.3f} ms  x{k['calls_per_forward']:5.0f}  {k['name'][:110]}", flush=True)
        return write(rep)
    for k in rep["autocast_compiled_kernels"][:12]:
        print(f"  {k['ms_per_forward']:7.3f} ms  x{k['calls_per_forward']:5.0f}  {k['name'][:110]}", flush=True)
    mh = DepthModule(load_checkpoint("synthetic", quiet=True).model).eval().cuda().half()
    ch = torch.compile(mh, mode="reduce-overhead", dynamic=False)

    def half_call(x):
        with torch.inference_mode():
            return ch(x)
    hc = graphs(half_call)
    xh = x.half()
    rep["half_compiled"] = timed(hc, xh)
    print("half compiled", rep["half_compiled"], flush=True)
    rep["half_compiled_kernels"] = kernels(hc, xh)
    for k in rep["half_compiled_kernels"][:12]:
        print(f"  {k['ms_per_forward']:7.3f} ms  x{k['calls_per_forward']:5.0f}  {k['name'][:110]}", flush=True)
    write(rep)
    # The fused-attention arms (the 2026-12-05 H100 profile: the attention above is math SDPA in FP32, 61 % of the
    # call): autocast compiled again with SDPA held to the flash kernel, and with the math backend allowed to reduce
    # in FP16.  A failing arm is a row with its error.
    from torch.nn.attention import SDPBackend, sdpa_kernel

    def fused(name, ctx, prepare=None):
        torch._dynamo.reset()
        if prepare:
            prepare()
        cm = torch.compile(DepthModule(load_checkpoint("synthetic", quiet=True).model).eval().cuda(),
                           mode="reduce-overhead", dynamic=False)

        def call(x):
            with torch.inference_mode(), torch.autocast("cuda", dtype=torch.float16), ctx():
                return cm(x)
        try:
            c = graphs(call)
            rep[name] = timed(c, x)
            rep[name + "_kernels"] = kernels(c, x)
        except Exception as e:      # noqa: BLE001 (a row, not a crash)
            rep[name] = {"error": " ".join(str(e).split())[:300]}
        print(name, rep[name], flush=True)
        write(rep)

    fused("flash_compiled", lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION))
    fused("math_fp16_reduction_compiled", contextlib.nullcontext,
          lambda: torch.backends.cuda.allow_fp16_bf16_reduction_math_sdp(True))
    rep["dynamo_counters"] = _counters()
    write(rep)


def write(rep: dict) -> None:
    name = os.environ.get("PROBE_NAME", "gpu_limit_probe")
    with open(os.path.join(os.environ.get("OUT", "/tmp"), f"{name}.json"), "w") as f:
        json.dump(rep, f, indent=1)


if __name__ == "__main__":
    main()
