"""OpenVINO INT8 (NNCF post-training quantisation) and BF16 beside LiteRT and ONNX Runtime, for the H200 host's Xeon
(issue 30 part 4: is "best INT8 <= 0.7 x best FP32" reachable at 2 threads?).

``prepare`` (here): quantise the release's dynamic ``onnx/model.onnx`` (full synthetic model), reshaped to a static
1x3x518x686, with ``nncf.quantize`` (``ModelType.TRANSFORMER``, default preset; statistics from OpenVINO's CPU plugin
forced to f32 by NNCF), calibrated on the default image set's photos preprocessed at 518x686 by
``edgedepth.preprocess`` — every view of 8 of its 11 source photos; the 3 others (``HELD_OUT``) are kept for parity.
Saves the INT8 IR (``compress_to_fp16=False``) twice from scratch and compares bytes, measures parity here (pooled
rel-L2 vs a float64 PyTorch run of the same synthetic model on held-out views, next to LiteRT INT8 and ONNX Runtime
dynamic INT8 from the same release), and packs what the device needs under ``.dev/ovint8/`` (IR as tar.xz + its
SHA-256s + LiteRT timing twins of the release's 518x686 .tflite files).

``export-onnx`` + ``run`` (there, ``benchmarks/devices/peers_device.sh ovint8``): the same dynamic .onnx is exported there from
the same checkpoint with that machine's torch; one interleaved run per thread count (``run_interleaved``: all runners
loaded first, rounds with the order rotated, warm-ups then timed calls; median and IQR) of OpenVINO FP32 / BF16 /
INT8 (f32 and bf16 hints for the non-quantised ops), ONNX Runtime FP32 and the LiteRT FP32 / INT8 timing twins.
Parity there (before timing, at the largest thread count): every variant vs OpenVINO FP32 and vs a float64 PyTorch
run on the same inputs (LiteRT twins carry seeded random weights: latency only).

    .venv/bin/python benchmarks/openvino_int8.py prepare            # ~15 min on 2 cores -> .dev/ovint8, results JSON
    .venv/bin/python benchmarks/openvino_int8.py run --threads 2 --rounds 1 --warmup 0 --iters 1   # smoke test here
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import tarfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

import peers  # noqa: E402
from edgedepth.fsutil import sha256_file  # noqa: E402

H, W, P = peers.H, peers.W, peers.P
RELEASE = os.path.join(ROOT, "out", "depth-anything-v2-small")
DEV = os.path.join(ROOT, ".dev", "ovint8")
IR_STEM = f"{P}_openvino_int8"
HELD_OUT = ("chelsea", "rocket", "grace_hopper")     # source photos never seen by calibration
GOAL = 0.70                                          # best INT8 / best FP32 latency
INT8_KEYS, FP32_KEYS = ("openvino_int8", "openvino_int8_bf16", "litert_int8"), ("openvino_fp32", "ort_fp32",
                                                                                  "litert_fp32")


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def split(images_root: str | None = None, heldout_views=("full", "c60")):
    """(calibration items, held-out items): calibration = every view of the sources not in HELD_OUT."""
    from edgedepth.images import default_image_set

    items = default_image_set(images_root)
    calib = [it for it in items if it.id.split("/")[0] not in HELD_OUT]
    held = [it for it in items if it.id.split("/")[0] in HELD_OUT and it.id.split("/")[1] in heldout_views]
    return calib, held


def _inputs(items) -> list[np.ndarray]:
    from edgedepth.preprocess import preprocess

    return [preprocess(it.load(), (H, W)) for it in items]


def quantise(onnx_path: str, xs: list[np.ndarray], xml: str) -> dict:
    """NNCF PTQ of the .onnx reshaped to 1x3xHxW; the IR saved with FP32 constants kept FP32."""
    import nncf
    import openvino as ov

    model = ov.Core().read_model(onnx_path)
    model.reshape({model.inputs[0].get_any_name(): [1, 3, H, W]})
    t0 = time.time()
    q = nncf.quantize(model, nncf.Dataset(xs), model_type=nncf.ModelType.TRANSFORMER, subset_size=len(xs))
    took = time.time() - t0
    ov.save_model(q, xml, compress_to_fp16=False)
    b = xml[:-4] + ".bin"
    ops = {}
    for n in q.get_ordered_ops():
        ops[n.get_type_name()] = ops.get(n.get_type_name(), 0) + 1
    return {"quantise_s": round(took, 1), "xml_sha256": sha256_file(xml), "bin_sha256": sha256_file(b),
            "xml_bytes": os.path.getsize(xml), "bin_bytes": os.path.getsize(b),
            "fake_quantize_ops": ops.get("FakeQuantize", 0), "ops": sum(ops.values())}


def xml_sha_modulo_auto_names(xml: str) -> str:
    """SHA-256 of the IR's .xml with OpenVINO's auto-generated node names (``Type_<process-wide counter>``) blanked:
    two quantisations in one process differ in those names only when everything else is equal."""
    import re

    with open(xml, "rb") as f:
        return hashlib.sha256(re.sub(rb'(name|names)="[^"]*_[0-9]+(,[^"]*)?"', rb'\1="N"', f.read())).hexdigest()


def pack_ir(xml: str, archive: str) -> None:
    """xml + bin in a reproducible tar.xz (fixed mtime/owner, sorted)."""
    with tarfile.open(archive + ".part", "w:xz", preset=9) as t:
        for p in (xml, xml[:-4] + ".bin"):
            ti = tarfile.TarInfo(os.path.basename(p))
            ti.size, ti.mode, ti.mtime = os.path.getsize(p), 0o644, 0
            with open(p, "rb") as f:
                t.addfile(ti, f)
    os.replace(archive + ".part", archive)


def unpack_ir(archive: str, d: str, expect: dict | None) -> str:
    os.makedirs(d, exist_ok=True)
    with tarfile.open(archive) as t:
        t.extractall(d, filter="data")
    xml = os.path.join(d, IR_STEM + ".xml")
    if expect and (sha256_file(xml), sha256_file(xml[:-4] + ".bin")) != (expect["xml_sha256"], expect["bin_sha256"]):
        raise SystemExit(f"{archive}: IR bytes differ from {expect}")
    return xml


def _float64_refs(xs, threads: int):
    import copy

    import torch

    from edgedepth.checkpoint import DepthModule, load_checkpoint

    torch.set_num_threads(threads)
    module = DepthModule(load_checkpoint("synthetic", quiet=True).model).eval()
    m64 = copy.deepcopy(module).double()
    with torch.inference_mode():
        refs = [m64(torch.from_numpy(x).double()).numpy() for x in xs]
    return module, refs


def _runners(onnx_path: str, xml: str | None, threads: int, extra: dict | None = None) -> dict:
    """{key: zero-arg factory} over the OpenVINO variants (+ ``extra``)."""
    from edgedepth import formats
    from edgedepth.runtimes.openvino import OpenVINORunner

    f = {"openvino_fp32": lambda: formats.open_artifact(onnx_path).open_runner("openvino", threads),
         "openvino_bf16": lambda: OpenVINORunner(onnx_path, threads, "bf16", (H, W))}
    if xml:
        f["openvino_int8"] = lambda: OpenVINORunner(xml, threads, "f32")
        f["openvino_int8_bf16"] = lambda: OpenVINORunner(xml, threads, "bf16")
    f["ort_fp32"] = lambda: formats.open_runner(onnx_path, "cpu", threads, size=(H, W))
    return f | (extra or {})


def parity(factories: dict, xs, refs, vs: dict[str, list] | None = None, skip=()) -> dict:
    """Pooled rel-L2 (and the other ParityAccumulator metrics) of each factory's runner vs ``refs`` (+ each ``vs``);
    ``refs=None`` (no float64 run): the ``vs`` comparisons only."""
    from edgedepth.verify.parity import ParityAccumulator

    out, outputs = {}, {}
    for key, make in factories.items():
        if key in skip:
            continue
        try:
            r = make()
            ys = [r.run(x) for x in xs]
            prec = getattr(r, "inference_precision", None)
            r.close()
        except Exception as e:  # a missing runtime is a row
            out[key] = {"error": peers._one_line(e)}
            _log(f"{key}: {out[key]['error']}")
            continue
        outputs[key] = ys
        out[key] = {"inference_precision": prec} if prec else {}
        if refs is not None:
            acc = ParityAccumulator()
            for y, ref in zip(ys, refs):
                acc.add(y, ref)
            out[key] = {"vs_float64": acc.summary()} | out[key]
        for name, other in (vs or {}).items():
            other = outputs.get(other) if isinstance(other, str) else other
            if other is not None and name != key:
                a2 = ParityAccumulator()
                for y, o in zip(ys, other):
                    a2.add(y, o)
                out[key][f"vs_{name}"] = a2.summary()["pooled_rel_l2"]
        if refs is not None:
            _log(f"{key}: rel-L2 vs float64 {out[key]['vs_float64']['pooled_rel_l2']:.3e}")
        else:
            _log(f"{key}: " + (", ".join(f"rel-L2 {k} {v:.3e}" for k, v in out[key].items() if k.startswith("vs_"))
                               or "the reference row"))
    return out


def prepare(onnx_path: str, release: str, dev: str, work: str, threads: int, heldout_views, repeat: bool,
            out_json: str, calib_limit: int | None = None) -> dict:
    from edgedepth import formats
    from edgedepth.images import image_set_hash
    from edgedepth.verify.bench import environment

    os.makedirs(dev, exist_ok=True)
    calib, held = split(None, heldout_views)
    calib = calib[::max(1, len(calib) // calib_limit)][:calib_limit] if calib_limit else calib
    _log(f"calibration: {len(calib)} views of {len({i.id.split('/')[0] for i in calib})} photos; held out: "
         f"{[i.id for i in held]}")
    xs = _inputs(calib)
    runs = []
    for k in range(2 if repeat else 1):
        d = os.path.join(work, f"q{k}")
        os.makedirs(d, exist_ok=True)
        runs.append(quantise(onnx_path, xs, os.path.join(d, IR_STEM + ".xml")))
        _log(f"quantisation {k + 1}: {runs[-1]}")
    xml = os.path.join(work, "q0", IR_STEM + ".xml")
    del xs
    archive = os.path.join(dev, "ir.tar.xz")
    pack_ir(xml, archive)
    ir = {k: runs[0][k] for k in ("xml_sha256", "bin_sha256", "xml_bytes", "bin_bytes")} | {
        "archive": "ir.tar.xz", "archive_bytes": os.path.getsize(archive), "archive_sha256": sha256_file(archive),
        "source_onnx_sha256": sha256_file(onnx_path)}
    with open(os.path.join(dev, "ir.json"), "w") as f:
        json.dump(ir, f, indent=1)
    peers.prepare_twins(release, os.path.join(dev, "twins"), kinds=("",))
    # parity here, on the held-out views
    hx = _inputs(held)
    module, refs = _float64_refs(hx, threads)
    from edgedepth.runtimes.torch import TorchRunner
    lit = {k: os.path.join(release, f"{P}_{k}.tflite") for k in ("fp32", "int8")}
    extra = {"pytorch_fp32": lambda: TorchRunner(module, (H, W), threads),
             "litert_fp32": lambda: formats.open_artifact(lit["fp32"]).open_runner("cpu", threads),
             "litert_int8": lambda: formats.open_artifact(lit["int8"]).open_runner("cpu", threads),
             "ort_int8_dynamic": lambda: formats.open_runner(os.path.join(release, "onnx", "model_quantized.onnx"),
                                                             "cpu", threads, size=(H, W))}
    facts = _runners(onnx_path, xml, threads, extra)
    order = ["pytorch_fp32", "openvino_fp32", "openvino_bf16", "openvino_int8", "openvino_int8_bf16", "ort_fp32",
             "ort_int8_dynamic", "litert_fp32", "litert_int8"]
    par = parity({k: facts[k] for k in order}, hx, refs, vs={"pytorch_fp32": "pytorch_fp32",
                                                             "openvino_fp32": "openvino_fp32"})
    import openvino as ov
    import nncf
    files = {"onnx": {"path": os.path.relpath(onnx_path, ROOT), "sha256": ir["source_onnx_sha256"]},
             "litert_fp32": {"path": os.path.relpath(lit["fp32"], ROOT), "sha256": sha256_file(lit["fp32"])},
             "litert_int8": {"path": os.path.relpath(lit["int8"], ROOT), "sha256": sha256_file(lit["int8"])},
             "ort_int8_dynamic": {"path": "out/depth-anything-v2-small/onnx/model_quantized.onnx",
                                  "sha256": sha256_file(os.path.join(release, "onnx", "model_quantized.onnx"))}}
    rep = {"kind": "edgedepth.openvino_int8_prepare", "model": "synthetic", "size": [H, W],
           "environment": environment(threads) | {"nncf": nncf.__version__, "openvino": ov.get_version(),
                                                  "ov_cpu_capabilities": ov.Core().get_property(
                                                      "CPU", "OPTIMIZATION_CAPABILITIES")},
           "quantisation": {"tool": f"nncf {nncf.__version__} quantize (post-training)",
                            "model_type": "TRANSFORMER", "preset": "default (mixed for transformers)",
                            "input": "onnx/model.onnx (dynamic H, W) reshaped to 1x3x518x686 in OpenVINO",
                            "statistics": "OpenVINO CPU plugin, inference precision forced f32 by NNCF; kernels are "
                                          "ISA-specific, so scales computed on another CPU may differ in the last bits",
                            "calibration": {"items": len(calib), "sources_held_out": list(HELD_OUT),
                                            "image_set_sha256": image_set_hash(calib),
                                            "preprocessing": "edgedepth.preprocess at 518x686"},
                            "saved": "openvino.save_model(compress_to_fp16=False)", "runs": runs,
                            "bytes_reproducible": len(runs) > 1 and all(
                                runs[0][k] == runs[1][k] for k in ("xml_sha256", "bin_sha256")),
                            "reproducible_modulo_auto_names": len(runs) > 1 and runs[0]["bin_sha256"] ==
                            runs[1]["bin_sha256"] and len({xml_sha_modulo_auto_names(os.path.join(
                                work, f"q{k}", IR_STEM + ".xml")) for k in range(2)}) == 1,
                            "repeat": "second quantisation in the same process (OpenVINO's node-name counter "
                                      "continues, so auto-generated names differ)"},
           "ir": ir, "files": files,
           "parity": {"images": [i.id for i in held], "image_set_sha256": image_set_hash(held), "threads": threads,
                      "reference": "PyTorch float64 (model.double(), float64 input), same synthetic checkpoint",
                      "metric": "pooled rel-L2 over the held-out views (edgedepth.verify.parity)",
                      "rows": par}}
    os.makedirs(os.path.dirname(out_json), exist_ok=True)
    with open(out_json, "w") as f:
        json.dump(rep, f, indent=1)
    return rep


def export_onnx(d: str) -> str:
    """There: the release's dynamic FP32 .onnx, exported from the synthetic checkpoint with that machine's torch."""
    from edgedepth import formats
    from edgedepth.checkpoint import load_checkpoint

    os.makedirs(d, exist_ok=True)
    (f,) = formats.export(load_checkpoint("synthetic", quiet=True).model, H, W, d, target_name="onnx",
                          precisions=("fp32",), dynamic_size=True)
    path = os.path.join(d, "model.onnx")
    os.replace(f.path, path)
    return path


def _summary(rows: dict) -> dict:
    med = {k: r["median_ms"] for k, r in rows.items() if r.get("median_ms")}
    i8 = min(((med[k], k) for k in INT8_KEYS if k in med), default=None)
    f32 = min(((med[k], k) for k in FP32_KEYS if k in med), default=None)
    out = {"best_int8": i8 and i8[1], "best_int8_ms": i8 and i8[0], "best_fp32": f32 and f32[1],
           "best_fp32_ms": f32 and f32[0]}
    if i8 and f32:
        out |= {"best_int8_over_best_fp32": i8[0] / f32[0], "goal": GOAL, "goal_met": i8[0] / f32[0] <= GOAL}
    if f32 and "openvino_bf16" in med:
        out["openvino_bf16_over_best_fp32"] = med["openvino_bf16"] / f32[0]
    if f32 and "openvino_int8_bf16" in med:
        out["openvino_int8_bf16_over_best_fp32"] = med["openvino_int8_bf16"] / f32[0]
    if "litert_int8" in med and "openvino_int8" in med:
        out["openvino_int8_over_litert_int8"] = med["openvino_int8"] / med["litert_int8"]
    return out


def run(d: str, onnx_path: str, dev: str, images_root: str | None, threads_list: list[int], rounds: int, warmup: int,
        iters: int, out: str, float64: bool) -> dict:
    import openvino as ov

    from edgedepth import formats
    from edgedepth.images import default_image_set
    from edgedepth.verify.bench import environment, run_interleaved

    with open(os.path.join(dev, "ir.json")) as f:
        ir = json.load(f)
    xml = unpack_ir(os.path.join(dev, ir["archive"]), os.path.join(d, "ir"), ir)
    twins = peers.materialise_twins(os.path.join(dev, "twins"), d, kinds=("",))
    lit = {k: os.path.join(d, f"{P}_{k}.tflite") for k in ("fp32", "int8")}
    items = default_image_set(images_root)
    timing_item = items[0]
    _, held = split(images_root, ("full",))
    par_items = [timing_item, held[0]]
    xs = _inputs(par_items)
    core = ov.Core()
    caps = {"OPTIMIZATION_CAPABILITIES": list(core.get_property("CPU", "OPTIMIZATION_CAPABILITIES")),
            "default_INFERENCE_PRECISION_HINT": core.get_property("CPU", "INFERENCE_PRECISION_HINT").get_type_name()}
    caps["bf16_native"] = "BF16" in caps["OPTIMIZATION_CAPABILITIES"]
    env = environment(max(threads_list)) | {"openvino": ov.get_version(), "openvino_cpu": caps}
    _log(f"OpenVINO CPU: {caps}")
    files = {"onnx": {"sha256": sha256_file(onnx_path), "exported": "here (this machine's torch)"},
             "openvino_int8_ir": ir, "litert_twins": {k: sha256_file(v) for k, v in lit.items()}}

    def extra(t):
        return {"litert_fp32": lambda: formats.open_artifact(lit["fp32"]).open_runner("cpu", t),
                "litert_int8": lambda: formats.open_artifact(lit["int8"]).open_runner("cpu", t)}

    tp = max(threads_list)
    refs = None
    if float64:
        t0 = time.time()
        _, refs = _float64_refs(xs, tp)
        _log(f"float64 reference: {time.time() - t0:.0f} s")
    par = parity(_runners(onnx_path, xml, tp), xs, refs, vs={"openvino_fp32": "openvino_fp32"})
    results = {}
    for t in threads_list:
        facts = _runners(onnx_path, xml, t, extra(t))
        rows, ok = {}, {}
        for k, make in facts.items():
            try:
                r = make()
                rows[k] = {"runner": r.name, "inference_precision": getattr(r, "inference_precision", None),
                           "transport": "timing twin (same graph, seeded random weights)" if
                           os.path.basename(getattr(r, "path", "")) in twins else None}
                r.close()
                ok[k] = make
            except Exception as e:
                rows[k] = {"error": peers._one_line(e)}
                _log(f"{k}: {rows[k]['error']}")
        t0 = time.time()
        res = run_interleaved(ok, xs[0], rounds=rounds, warmup=warmup, iters=iters,
                              progress=lambda done, total: print(f"\r{t} threads: {done}/{total} calls", end="",
                                                                 file=sys.stderr, flush=True))
        _log(f"  ({time.time() - t0:.0f} s)")
        for k, v in res["variants"].items():
            rows[k] |= {m: v[m] for m in ("median_ms", "p25_ms", "p75_ms", "iqr_ms", "round_medians_ms", "load_s")}
        results[str(t)] = {"rows": rows, "method": res["method"], "summary": _summary(rows)}
        for k, r in rows.items():
            _log(f"{t:3d}t {k:20s} {r.get('median_ms', float('nan')):8.1f} ms  {r.get('inference_precision')}")
        _log(json.dumps(results[str(t)]["summary"]))
        report = _write_report(out, env, files, timing_item, items, par_items, tp, refs, par, results)
    return report


def _write_report(out, env, files, timing_item, items, par_items, tp, refs, par, results) -> dict:
    """Written after every thread count, so a call that runs out of time keeps what it measured."""
    from edgedepth.images import image_set_hash

    report = {"kind": "edgedepth.cpu_int8_xeon", "model": "synthetic", "size": [H, W], "environment": env,
              "files": files, "goal_best_int8_over_best_fp32": GOAL,
              "timing_input": timing_item.id, "image_set_sha256": image_set_hash(items),
              "parity": {"images": [i.id for i in par_items], "threads": tp,
                         "reference": "PyTorch float64 on this machine" if refs is not None else None,
                         "note": "LiteRT rows are timing twins (random weights): not in parity", "rows": par},
              "threads": results}
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(report, f, indent=2)
    return report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=["prepare", "export-onnx", "run"])
    ap.add_argument("--onnx", default=None, help="prepare: the dynamic FP32 .onnx (default: the release's); "
                                                 "run: the one export-onnx wrote (default DIR/model.onnx)")
    ap.add_argument("--release", default=RELEASE, help="prepare: the release folder (518x686 .tflite, onnx/)")
    ap.add_argument("--dev", default=DEV, help="what travels: ir.tar.xz, ir.json, twins/")
    ap.add_argument("--dir", default=os.path.join(ROOT, "out", "ovint8"), help="working folder")
    ap.add_argument("--threads", default="2", help="comma-separated (run); prepare's parity uses the first")
    ap.add_argument("--heldout-views", default="full,c60")
    ap.add_argument("--calib-limit", type=int, default=None, help="prepare: at most N calibration views (tests)")
    ap.add_argument("--once", action="store_true", help="prepare: quantise once (skip the reproducibility check)")
    ap.add_argument("--images-root", default=None, help="a flat folder of the default set's photos")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=6)
    ap.add_argument("--no-float64", action="store_true")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    threads = [int(t) for t in a.threads.split(",")]
    if a.step == "prepare":
        rep = prepare(a.onnx or os.path.join(a.release, "onnx", "model.onnx"), a.release, a.dev, a.dir, threads[0],
                      tuple(a.heldout_views.split(",")), not a.once,
                      a.out or os.path.join(ROOT, "benchmarks", "results", "openvino_int8_prepare.json"),
                      a.calib_limit)
        print(json.dumps({"quantisation_runs": rep["quantisation"]["runs"],
                          "bytes_reproducible": rep["quantisation"]["bytes_reproducible"], "ir": rep["ir"],
                          "parity": {k: v.get("vs_float64", v).get("pooled_rel_l2", v)
                                     for k, v in rep["parity"]["rows"].items()}}, indent=1))
    elif a.step == "export-onnx":
        print(export_onnx(a.dir))
    else:
        run(a.dir, a.onnx or os.path.join(a.dir, "model.onnx"), a.dev, a.images_root, threads, a.rounds, a.warmup,
            a.iters, a.out or os.path.join(a.dir, "cpu_int8_xeon.json"), not a.no_float64)


if __name__ == "__main__":
    main()
