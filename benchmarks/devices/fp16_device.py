"""FP16 on a real GPU: does LiteRT's default GPU precision break the stress model, and does ``fp16_safe`` fix it?

Two halves, one file:

``prepare`` (HERE, with torch + litert-torch; ~4 min on 2 cores at 518x686):
    .venv/bin/python benchmarks/devices/fp16_device.py prepare [--model synthetic-fp16-stress] [--size 518x686] [--plain]
  builds the stress checkpoint, the optimised graph (default rewrites) and the fp16-safe graph (+ ``fp16_safe``),
  converts both to FP32 .tflite (kept in out/fp16/), and writes the git-ignored bundle .dev/fp16/ that the device call
  carries (~30 MB, under the 64 MiB a call may carry together with .whl/ and .gl/):
    opt.stripped.tflite + opt_int8.tflite   the optimised FP32 graph without weights + its dynamic-INT8 twin, from which
                                            edgedepth.formats.tflite.transport rebuilds the FP32 file there (weights rounded to 8 bits)
    safe.stripped.tflite + safe.exponents.json
                                            the fp16-safe graph without weights + one power-of-two exponent per weight
                                            tensor: its weights are the optimised graph's same-named tensor * 2^e
                                            (checked bit for bit here against the real FP32 file).  So the rebuilt
                                            fp16-safe file is exactly the fp16-safe rewrite of the rebuilt optimised
                                            one.
    manifest.json, images/                  SHA-256 of the originals, op counts, the fp16-safe plan; the 11 photos
  ``--plain`` also writes .dev/fp16_plain/ (the unrewritten graph + its own 28 MB INT8 twin): too big to travel with
  the first bundle, so it needs a second device call.  The plain graph is not fully delegable to the GPU alone (26 ops
  fall back), so it runs with GPU+CPU accelerators there.

``run`` (ON THE DEVICE; numpy + ai-edge-litert, no torch):
    python3 benchmarks/devices/fp16_device.py run [BUNDLE ...]         (default .dev/fp16)
  rebuilds the FP32 files, checks GPU delegation (adapter named in the log), computes LiteRT CPU outputs there as the
  reference, runs every graph on the GPU with ``enforce_f32=True`` ("gpu") and with the default precision policy
  ("gpu-fp16"), and reports pooled rel-L2 vs CPU, non-finite and constant maps, whether gpu-fp16 was bit-identical to
  gpu (= FP32 computed anyway), and latency (edgedepth.verify.bench.run_interleaved: variants interleaved, order rotated).
  Writes $OUT/fp16_device.json.  Env: FP16_IMAGES (default 22 of the default set's 110 views),
  FP16_METHOD="rounds,warmup,iters" (default 6,20,60, the published method).

Device call (the lead's; see BENCHMARKS.md for the Vulkan/wheel preamble that benchmarks/devices/h200_prepare.sh sets up):
    carry: [".whl", ".gl", ".dev/fp16"]
    for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig;
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
      && export PYTHONPATH=/tmp/site:$PWD/src || exit;
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json PYTHONUNBUFFERED=1;
    python3 benchmarks/devices/fp16_device.py run .dev/fp16 2>&1 | tee $OUT/fp16_device.log
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time


import numpy as np  # noqa: E402

BUNDLE = os.environ.get("FP16_BUNDLE", ".dev/fp16")
PLAIN_BUNDLE = BUNDLE + "_plain"
WORK = os.environ.get("FP16_WORK", "out/fp16")


# ------------------------------------------------------------------------------------------------ flatbuffer helpers


def _float_tensors(model) -> dict:
    """name -> (tensor, float32 values or None) for the FLOAT32 tensors with inline data."""
    from ai_edge_litert import schema_py_generated as S

    from edgedepth.formats.tflite.transport import tensor_name

    out = {}
    for t in model.subgraphs[0].tensors:
        buf = model.buffers[t.buffer]
        vals = None
        if t.type == S.TensorType.FLOAT32 and buf.data is not None and len(buf.data):
            vals = np.frombuffer(np.asarray(buf.data, np.uint8).tobytes(), np.float32)
        out[tensor_name(t)] = (t, vals)
    return out


def _stripped_names(model) -> tuple[list[str], object]:
    from edgedepth.formats.tflite.transport import STRIPPED_KEY

    entry = next((m for m in (model.metadata or []) if m.name in (STRIPPED_KEY, STRIPPED_KEY.encode())), None)
    if entry is None:
        raise SystemExit("not a stripped file (no transport metadata)")
    return json.loads(np.asarray(model.buffers[entry.buffer].data, np.uint8).tobytes()), entry


def exponents(safe_fp32: str, opt_fp32: str, names: list[str]) -> dict[str, int]:
    """Per tensor e with safe == opt * 2^e exactly (same-named tensors); raises if any tensor is not so related."""
    from edgedepth.formats.tflite.transport import load_model

    _, a = load_model(safe_fp32)
    _, b = load_model(opt_fp32)
    ta, tb = _float_tensors(a), _float_tensors(b)
    out = {}
    for n in names:
        va, vb = ta[n][1], tb.get(n, (None, None))[1]
        if vb is None or va.shape != vb.shape:
            raise SystemExit(f"tensor {n!r}: no same-shaped float tensor in the optimised graph")
        nz = vb != 0
        if not np.array_equal(va == 0, ~nz):
            raise SystemExit(f"tensor {n!r}: zero pattern differs")
        e = np.unique(np.log2(np.abs(va[nz] / vb[nz]))) if nz.any() else np.array([0.0])
        if e.size != 1 or e[0] != round(e[0]) or not np.array_equal(np.ldexp(vb, int(e[0])), va):
            raise SystemExit(f"tensor {n!r}: not a power-of-two multiple of the optimised graph's")
        out[n] = int(e[0])
    return out


def derive(stripped: str, source_fp32: str, exps: dict[str, int], out_path: str) -> int:
    """Refill a stripped graph from another FP32 graph's same-named tensors times 2^e; returns tensors filled."""
    from edgedepth.formats.tflite.transport import load_model, save_model, tensor_name

    _, model = load_model(stripped)
    wanted, entry = _stripped_names(model)
    model.metadata = [m for m in model.metadata if m is not entry]
    model.buffers[entry.buffer].data = None
    _, src = load_model(source_fp32)
    st = _float_tensors(src)
    filled = 0
    for t in model.subgraphs[0].tensors:
        n = tensor_name(t)
        if n not in wanted:
            continue
        vals = st[n][1]
        scaled = np.ldexp(vals, exps[n]).astype(np.float32)
        model.buffers[t.buffer].data = np.frombuffer(scaled.tobytes(), np.uint8)
        filled += 1
    if filled != len(wanted):
        raise SystemExit(f"derived {filled} of {len(wanted)} tensors")
    save_model(model, out_path)
    return filled


# ------------------------------------------------------------------------------------------------ prepare (here)


def prepare(a) -> None:
    import torch

    from edgedepth.formats.tflite import transport
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.fp16.probe import calibration_inputs
    from edgedepth.images import source_files
    from edgedepth.formats.tflite import describe
    from edgedepth.fsutil import sha256_file
    from edgedepth.preprocess import parse_size
    from edgedepth.rewrites import RewriteContext, apply_rewrites
    from edgedepth.rewrites.fp16_safe import fp16_safe
    from edgedepth.runtimes.litert import LiteRTRunner
    from edgedepth.formats import tflite as litert

    torch.set_num_threads(2)
    h, w = parse_size(a.size)
    os.makedirs(WORK, exist_ok=True)
    shutil.rmtree(BUNDLE, ignore_errors=True)
    os.makedirs(os.path.join(BUNDLE, "images"))
    t0 = time.time()
    ckpt = load_checkpoint(a.model, quiet=True)
    opt, _ = apply_rewrites(ckpt.model, h, w)
    safe, changed = fp16_safe(opt, RewriteContext(h, w))
    plan = getattr(safe, "fp16_safe_plan", None)
    print(f"rewrites done ({time.time() - t0:.0f} s); fp16_safe changed {changed} tensors", flush=True)
    files = {}
    for name, model in (("opt", opt), ("safe", safe)):
        files[name] = os.path.join(WORK, f"{name}_{h}x{w}_fp32.tflite")
        litert.convert_fp32(DepthModule(model), h, w, files[name])
        print(f"converted {name}: {describe(files[name])['ops']} ops", flush=True)
    litert.quantize_int8(files["opt"], os.path.join(BUNDLE, "opt_int8.tflite"))
    transport.strip(files["opt"], os.path.join(BUNDLE, "opt.stripped.tflite"))
    transport.strip(files["safe"], os.path.join(BUNDLE, "safe.stripped.tflite"))
    from edgedepth.formats.tflite.transport import load_model

    names, _ = _stripped_names(load_model(os.path.join(BUNDLE, "safe.stripped.tflite"))[1])
    exps = exponents(files["safe"], files["opt"], names)
    with open(os.path.join(BUNDLE, "safe.exponents.json"), "w") as f:
        json.dump(exps, f, indent=0, sort_keys=True)
    # check the derivation reproduces the real fp16-safe file bit for bit, given the real optimised file
    check = os.path.join(WORK, "safe.derived.tflite")
    derive(os.path.join(BUNDLE, "safe.stripped.tflite"), files["opt"], exps, check)
    _, d = load_model(check)
    _, s = load_model(files["safe"])
    td, ts = _float_tensors(d), _float_tensors(s)
    assert all(np.array_equal(td[n][1], ts[n][1]) for n in names), "derived fp16-safe weights differ"
    # FP32 parity here: LiteRT CPU, fp16-safe vs optimised (both original FP32 files), one image
    xs, meta = calibration_inputs((h, w), 1)
    y_opt = LiteRTRunner(files["opt"], "cpu").run(xs[0])
    y_safe = LiteRTRunner(files["safe"], "cpu").run(xs[0])
    variants = {
        "opt": {"stripped": "opt.stripped.tflite", "int8": "opt_int8.tflite", "ops": describe(files["opt"])["ops"],
                "sha256_fp32_original": sha256_file(files["opt"])},
        "safe": {"stripped": "safe.stripped.tflite", "derive_from": "opt", "exponents": "safe.exponents.json",
                 "ops": describe(files["safe"])["ops"], "sha256_fp32_original": sha256_file(files["safe"])},
    }
    manifest = {"kind": "edgedepth.fp16_device.bundle", "model": a.model, "size": [h, w], "variants": variants,
                "fp16_safe_plan": plan, "output_scale": (plan or {}).get("output_scale", 1.0),
                "here": {"cpu_safe_vs_opt_max_abs_diff": float(np.abs(y_safe - y_opt).max()),
                         "image": meta["images"][0]}}
    for p in source_files():
        shutil.copy(p, os.path.join(BUNDLE, "images"))
    with open(os.path.join(BUNDLE, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    if a.plain:
        shutil.rmtree(PLAIN_BUNDLE, ignore_errors=True)
        os.makedirs(os.path.join(PLAIN_BUNDLE, "images"))
        fp = os.path.join(WORK, f"plain_{h}x{w}_fp32.tflite")
        litert.convert_fp32(DepthModule(ckpt.model), h, w, fp)
        litert.quantize_int8(fp, os.path.join(PLAIN_BUNDLE, "plain_int8.tflite"))
        transport.strip(fp, os.path.join(PLAIN_BUNDLE, "plain.stripped.tflite"))
        for p in source_files():
            shutil.copy(p, os.path.join(PLAIN_BUNDLE, "images"))
        pm = {"kind": "edgedepth.fp16_device.bundle", "model": a.model, "size": [h, w], "output_scale": 1.0,
              "variants": {"plain": {"stripped": "plain.stripped.tflite", "int8": "plain_int8.tflite",
                                     "ops": describe(fp)["ops"], "sha256_fp32_original": sha256_file(fp)}}}
        with open(os.path.join(PLAIN_BUNDLE, "manifest.json"), "w") as f:
            json.dump(pm, f, indent=1)
    for b in [BUNDLE] + ([PLAIN_BUNDLE] if a.plain else []):
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(b) for f in fs)
        print(f"{b}: {size / 2**20:.1f} MiB", flush=True)
    print(json.dumps(manifest["here"]), f"total {time.time() - t0:.0f} s")


# ------------------------------------------------------------------------------------------------ run (device)


class _Runner:
    """LiteRT CompiledModel on the given accelerators (the project runner covers GPU-alone; plain needs GPU+CPU)."""

    def __init__(self, path: str, accel: str, enforce_f32: bool, threads: int):
        from ai_edge_litert.compiled_model import CompiledModel
        from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
        from ai_edge_litert.options import CpuOptions, GpuOptions, Options

        ha = {"cpu": HA.CPU, "gpu": HA.GPU, "gpu+cpu": HA.GPU | HA.CPU}[accel]
        self._cm = CompiledModel.from_file(path, options=Options(
            hardware_accelerators=ha, cpu_options=CpuOptions(num_threads=threads),
            gpu_options=GpuOptions(enforce_f32=enforce_f32)))
        self.fully_accelerated = bool(self._cm.is_fully_accelerated())
        self._ib, self._ob = self._cm.create_input_buffers(0), self._cm.create_output_buffers(0)
        self.shape = None

    def run(self, x: np.ndarray) -> np.ndarray:
        self._ib[0].write(np.ascontiguousarray(x, np.float32))
        self._cm.run_by_index(0, self._ib, self._ob)
        return self._ob[0].read(x.shape[2] * x.shape[3], np.float32).reshape(1, x.shape[2], x.shape[3])

    def close(self) -> None:
        self._ib = self._ob = self._cm = None


def _summ(outs, refs) -> dict:
    from edgedepth.verify.parity import ParityAccumulator

    acc = ParityAccumulator()
    nonfinite = const = 0
    for y, r in zip(outs, refs):
        bad = ~np.isfinite(y)
        nonfinite += int(bad.sum())
        yy = np.nan_to_num(y, nan=0.0, posinf=65504.0, neginf=-65504.0)
        const += int(np.ptp(yy) == 0)
        acc.add(yy, r)
    s = acc.summary()
    s["nonfinite_frac"] = nonfinite / sum(y.size for y in outs)
    s["constant_map_images"] = const
    return s


def run(a) -> None:
    from edgedepth.formats.tflite import transport
    from edgedepth.verify.bench import environment, run_interleaved
    from edgedepth.images import default_image_set, image_set_hash
    from edgedepth.formats.tflite import describe, gpu_check
    from edgedepth.preprocess import preprocess
    from edgedepth.runtimes.vulkan import ensure_vulkan_env

    ensure_vulkan_env()
    out_dir = os.environ.get("OUT", "/tmp/out")
    os.makedirs(out_dir, exist_ok=True)
    rounds, warmup, iters = (int(v) for v in os.environ.get("FP16_METHOD", "6,20,60").split(","))
    n_img = int(os.environ.get("FP16_IMAGES", "22"))
    threads = os.cpu_count() or 4
    work = "/tmp/fp16_device"
    os.makedirs(work, exist_ok=True)
    method = {"reference": "LiteRT CPU (XNNPACK, FP32) of the same file, on this machine",
              "rounds_warmup_iters": [rounds, warmup, iters]}
    report = {"kind": "edgedepth.fp16_device", "environment": environment(threads), "bundles": {}, "files": {},
              "parity": {}, "bench": None, "method": method}
    files, scales, accel = {}, {}, {}
    images_root = None
    for bundle in a.bundles or [BUNDLE]:
        m = json.load(open(os.path.join(bundle, "manifest.json")))
        report["bundles"][bundle] = {k: v for k, v in m.items() if k != "variants"}
        images_root = images_root or os.path.join(bundle, "images")
        for name, v in m["variants"].items():
            path = os.path.join(work, f"{name}.rebuilt.tflite")
            t = time.time()
            if "int8" in v:
                transport.rebuild(os.path.join(bundle, v["stripped"]), os.path.join(bundle, v["int8"]), path)
            else:
                exps = json.load(open(os.path.join(bundle, v["exponents"])))
                derive(os.path.join(bundle, v["stripped"]), files[v["derive_from"]], exps, path)
            files[name] = path
            scales[name] = m.get("output_scale", 1.0) if name == "safe" else 1.0
            g32, g16 = gpu_check(path), gpu_check(path, enforce_f32=False)
            accel[name] = "gpu" if g32["fully_delegated"] else "gpu+cpu"
            report["files"][name] = {"ops": describe(path)["ops"], "rebuild_s": time.time() - t,
                                     "transport": "rebuilt from the INT8 twin" if "int8" in v else
                                     f"derived from {v['derive_from']} (power-of-two exponents)",
                                     "gpu_enforce_f32": g32, "gpu_default_precision": g16, "accelerators": accel[name]}
            print(f"{name}: {report['files'][name]['ops']} ops; GPU alone: "
                  f"{'fully delegated' if g32['fully_delegated'] else g32['error']} | adapter {g32['adapter']}",
                  flush=True)
    report["environment"]["gpu_adapter"] = next((f["gpu_enforce_f32"]["adapter"] for f in report["files"].values()),
                                                None)
    items = default_image_set(root=images_root)
    step = max(1, len(items) // n_img)
    items = items[::step][:n_img]
    report["image_set"] = {"count": len(items), "sha256": image_set_hash(items), "ids": [i.id for i in items]}
    shape = describe(next(iter(files.values())))["inputs"][0]["shape"]
    xs = [preprocess(it.load(), tuple(shape[2:4])) for it in items]
    cpu_out = {}
    for name, path in files.items():
        r = _Runner(path, "cpu", True, threads)
        cpu_out[name] = [r.run(x) for x in xs]
        r.close()
    if "opt" in cpu_out and "safe" in cpu_out:
        report["parity"]["safe[cpu] vs opt[cpu] (FP32, output_scale undone)"] = _summ(
            [y / scales["safe"] for y in cpu_out["safe"]], cpu_out["opt"])
    gpu_out = {}
    for name, path in files.items():
        for backend, f32 in (("gpu", True), ("gpu-fp16", False)):
            key = f"{name} [{backend}]"
            try:
                r = _Runner(path, accel[name], f32, threads)
            except Exception as e:  # a compile failure is a result
                report["parity"][f"{key} vs cpu"] = {"error": " ".join(str(e).split())[:500]}
                continue
            ys = [r.run(x) for x in xs]
            r.close()
            gpu_out[key] = ys
            report["parity"][f"{key} vs cpu"] = _summ(ys, cpu_out[name])
            if name != "opt" and "opt" in cpu_out:   # the same depth map as the optimised graph's FP32 output?
                report["parity"][f"{key} vs opt[cpu]"] = _summ([y / scales[name] for y in ys], cpu_out["opt"])
            p = report["parity"][f"{key} vs cpu"]
            print(f"{key} vs cpu: pooled rel-L2 {p['pooled_rel_l2']:.3e}, non-finite {p['nonfinite_frac']:.3f}, "
                  f"constant maps {p['constant_map_images']}/{len(xs)}", flush=True)
        a32, a16 = gpu_out.get(f"{name} [gpu]"), gpu_out.get(f"{name} [gpu-fp16]")
        if a32 is not None and a16 is not None:
            same = all(np.array_equal(u, v) for u, v in zip(a32, a16))
            report["parity"][f"{name} [gpu-fp16] bit-identical to [gpu]"] = same
            verdict = "== enforce_f32 (FP32 computed)" if same else "differs from enforce_f32"
            print(f"{name}: default precision {verdict}", flush=True)
    variants = {}
    for name, path in files.items():
        for backend, f32 in (("gpu", True), ("gpu-fp16", False)):
            if f"{name} [{backend}]" in gpu_out:
                variants[f"{name} [{backend}]"] = (lambda p=path, acc=accel[name], f=f32: _Runner(p, acc, f, threads))
    x0 = np.random.default_rng(0).standard_normal(tuple(shape), dtype=np.float32)
    report["bench"] = run_interleaved(variants, x0, rounds=rounds, warmup=warmup, iters=iters)
    for n, s in report["bench"]["variants"].items():
        print(f"{n}: median {s['median_ms']:.2f} ms (IQR {s['p25_ms']:.2f}-{s['p75_ms']:.2f})", flush=True)
    report["torch_imported"] = "torch" in sys.modules     # the device half must not need it
    with open(os.path.join(out_dir, "fp16_device.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    print("wrote", os.path.join(out_dir, "fp16_device.json"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare", help="here: build the bundle in .dev/fp16 (needs torch, litert-torch)")
    p.add_argument("--model", default="synthetic-fp16-stress")
    p.add_argument("--size", default="518x686")
    p.add_argument("--plain", action="store_true", help="also .dev/fp16_plain (needs a second device call)")
    r = sub.add_parser("run", help="on the device: measure, write $OUT/fp16_device.json")
    r.add_argument("bundles", nargs="*")
    a = ap.parse_args()
    prepare(a) if a.cmd == "prepare" else run(a)


if __name__ == "__main__":
    main()
