"""Peers side by side: every file edgedepth makes and every path a user would pick instead, one interleaved CPU run.

Rows (518x686, full synthetic model; "ours" = files edgedepth writes, "peer" = what users run without it):

  ours  LiteRT optimised FP32 / INT8 (.tflite)      peer  LiteRT plain conversion FP32 / INT8
  ours  ExecuTorch XNNPACK FP32 / INT8 (.pte)        peer  ONNX Runtime, plain torch.onnx export FP32 / quantize_dynamic INT8
  ours  ONNX Runtime, edgedepth .onnx FP32 / INT8    peer  OpenVINO, plain .onnx FP32
  ours  OpenVINO, edgedepth .onnx FP32               peer  PyTorch eager FP32

Method: same input (the first photo of the bundled image set, preprocessed), same timed call as ``edgedepth bench``
(input write + synchronous invoke + output read), all runners loaded first, then R rounds with the order rotated per
round, W warm-ups + N timed calls per variant per round; median over all timed calls.  Parity: pooled rel-L2 of each
row vs PyTorch FP32 on K photos of the bundled set (``--images``).  Summary: per precision, the fastest of ours
÷ the fastest peer (goal ≤ 0.90, i.e. ≥ 10 % faster), and edgedepth's .onnx ÷ the plain .onnx in ONNX Runtime.

    .venv/bin/python benchmarks/peers.py export [--dir out/peers]            # all files (~12 min here)
    .venv/bin/python benchmarks/peers.py run --tag epyc-2t [--threads 2]     # -> benchmarks/results/peers_cpu_<tag>.json

On the lent H200 machine (no converters there): ``export-onnx`` builds the .onnx files with that machine's torch, and
LiteRT files arrive as timing twins (``--twins DIR``, see ``prepare-twins``: same graphs, seeded random weights; their
parity is not measured).  A runtime that is missing there is a row with its error, not a crash.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

import numpy as np  # noqa: E402

H, W = 518, 686
P = f"depth_anything_v2_small_{H}x{W}"
# key: (file or None for PyTorch, backend, precision, side, label)
ROWS = {
    "litert_fp32": (f"{P}_fp32.tflite", "cpu", "fp32", "ours", "LiteRT, edgedepth .tflite"),
    "litert_int8": (f"{P}_int8.tflite", "cpu", "int8", "ours", "LiteRT, edgedepth .tflite"),
    "executorch_fp32": (f"{P}_xnnpack_fp32.pte", "cpu", "fp32", "ours", "ExecuTorch XNNPACK, edgedepth .pte"),
    "executorch_int8": (f"{P}_xnnpack_int8.pte", "cpu", "int8", "ours", "ExecuTorch XNNPACK, edgedepth .pte"),
    "ort_fp32": (f"{P}_fp32.onnx", "cpu", "fp32", "ours", "ONNX Runtime, edgedepth .onnx"),
    "ort_int8": (f"{P}_int8.onnx", "cpu", "int8", "ours", "ONNX Runtime, edgedepth .onnx"),
    "openvino_fp32": (f"{P}_fp32.onnx", "openvino", "fp32", "ours", "OpenVINO, edgedepth .onnx"),
    "litert_plain_fp32": (f"{P}_fp32_plain.tflite", "cpu", "fp32", "peer", "LiteRT, plain conversion"),
    "litert_plain_int8": (f"{P}_int8_plain.tflite", "cpu", "int8", "peer", "LiteRT, plain conversion"),
    "ort_plain_fp32": (f"{P}_fp32_plain.onnx", "cpu", "fp32", "peer", "ONNX Runtime, plain torch.onnx export"),
    "ort_plain_int8": (f"{P}_int8_plain.onnx", "cpu", "int8", "peer", "ONNX Runtime, plain export + quantize_dynamic"),
    "openvino_plain_fp32": (f"{P}_fp32_plain.onnx", "openvino", "fp32", "peer", "OpenVINO, plain .onnx"),
    "pytorch_eager_fp32": (None, "cpu", "fp32", "peer", "PyTorch eager"),
}
GOAL = 0.90     # fastest of ours ÷ fastest peer, per precision


def export(d: str, targets=("litert", "executorch", "onnx")) -> None:
    from edgedepth import formats
    from edgedepth.checkpoint import load_checkpoint

    os.makedirs(d, exist_ok=True)
    model = load_checkpoint("synthetic", quiet=True).model
    jobs = {"litert": [("default", ("fp32", "int8")), ((), ("fp32", "int8"))],
            "executorch": [("default", ("fp32", "int8"))],
            "onnx": [("default", ("fp32", "int8")), ((), ("fp32", "int8"))]}
    for t in targets:
        for rewrites, precisions in jobs[t]:
            t0 = time.time()
            files = formats.export(model, H, W, d, target_name=t, precisions=precisions, rewrites=rewrites)
            print(f"{t} {'plain' if rewrites == () else 'edgedepth'}: {[os.path.basename(f.path) for f in files]} "
                  f"({time.time() - t0:.0f} s)", flush=True)


def prepare_twins(d: str, twins: str, kinds=("", "_plain")) -> None:
    """Here: LiteRT timing twins of the .tflite files in ``d`` (edgedepth.formats.tflite.transport), gzipped, into ``twins``;
    ``kinds``: "" the edgedepth files, "_plain" the plain conversions."""
    from edgedepth.formats.tflite import transport

    os.makedirs(twins, exist_ok=True)
    for kind in kinds:
        fp32, int8 = (os.path.join(d, f"{P}_{p}{kind}.tflite") for p in ("fp32", "int8"))
        transport.strip(fp32, os.path.join(twins, os.path.basename(fp32) + ".stripped"))
        zeroed = os.path.join(twins, "zeroed.tflite")
        transport.zero_int8(int8, zeroed)
        with open(zeroed, "rb") as src, gzip.open(os.path.join(twins, os.path.basename(int8) + ".zeroed.gz"), "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.remove(zeroed)


def materialise_twins(twins: str, d: str, kinds=("", "_plain")) -> list[str]:
    """There: refill the INT8 twins (seeded) and rebuild the FP32 files from them, under the normal names in ``d``."""
    from edgedepth.formats.tflite import transport

    os.makedirs(d, exist_ok=True)
    made = []
    for kind in kinds:
        fp32, int8 = (os.path.join(d, f"{P}_{p}{kind}.tflite") for p in ("fp32", "int8"))
        zeroed = int8 + ".zeroed"
        with gzip.open(os.path.join(twins, os.path.basename(int8) + ".zeroed.gz"), "rb") as src, open(zeroed, "wb") as dst:
            shutil.copyfileobj(src, dst)
        transport.fill_int8(zeroed, int8, seed=0)
        os.remove(zeroed)
        transport.rebuild(os.path.join(twins, os.path.basename(fp32) + ".stripped"), int8, fp32)
        made += [os.path.basename(fp32), os.path.basename(int8)]
    return made


# What the lent machine lacks (Python 3.12, no registry): wheels fetched here, the two runtimes slimmed to CPU only.
SITE_WHEELS = {"openvino": "openvino==2026.4.1", "litert": "ai-edge-litert==2.3.0"}
SITE_PLAIN_WHEELS = ("transformers==5.24.0", "backports.strenum==1.2.8")   # installed there with pip --no-index
_SITE_DROP = {   # wheel members left out (regular expressions on the path inside the wheel)
    "openvino": [r"openvino/libs/libopenvino_intel_(gpu|npu)_plugin\.so", r"openvino/libs/cache\.json",
                 r"openvino/libs/libopenvino_(auto|auto_batch|hetero)_plugin\.so", r"openvino/libs/libopenvino_c\.so",
                 r"openvino/libs/libopenvino_(tensorflow|tensorflow_lite|paddle|pytorch|jax|gguf)_frontend\.so",
                 r"openvino/frontend/(tensorflow|paddle|pytorch|jax)/", r"openvino/(include|cmake|tools)/"],
    "litert": [r"ai_edge_litert/libLiteRtWebGpuAccelerator\.so", r"ai_edge_litert/(vendors|aot|tools)/"],
}


def prepare_site(dest: str, py: str = "312") -> dict:
    """Here: ``dest``/ov_slim.tar.xz (OpenVINO: CPU plugin, ONNX and IR frontends), ``dest``/litert_slim.tar.xz
    (ai-edge-litert: CPU only), ``dest``/whl/ (transformers, backports.strenum) for CPython ``py`` on manylinux x86-64,
    and ``dest``/images/ (the default image set's photos).  Unpacked there into one folder on PYTHONPATH."""
    import re
    import subprocess
    import tarfile
    import tempfile
    import zipfile

    from edgedepth.images import source_files

    whl = os.path.join(dest, "whl")
    os.makedirs(whl, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        "--only-binary=:all:", "--python-version", py, "--implementation", "cp",
                        *[a for p in ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64",
                                      "manylinux2014_x86_64") for a in ("--platform", p)],
                        "-d", tmp, *SITE_WHEELS.values(), *SITE_PLAIN_WHEELS], check=True)
        sizes = {}
        for key, spec in SITE_WHEELS.items():
            name = spec.split("==")[0].replace("-", "_")
            (wheel,) = [f for f in os.listdir(tmp) if f.startswith(name + "-")]
            drop = re.compile("|".join(f"^{d}" for d in _SITE_DROP[key]))
            tar_path = os.path.join(dest, f"{'ov' if key == 'openvino' else key}_slim.tar.xz")
            with zipfile.ZipFile(os.path.join(tmp, wheel)) as z, tarfile.open(tar_path + ".part", "w:xz") as t:
                for m in sorted(z.infolist(), key=lambda m: m.filename):
                    if m.is_dir() or drop.search(m.filename):
                        continue
                    ti = tarfile.TarInfo(m.filename)
                    ti.size, ti.mode, ti.mtime = m.file_size, 0o755 if m.filename.endswith(".so") or ".so." in \
                        m.filename else 0o644, 0
                    with z.open(m) as src:
                        t.addfile(ti, src)
            os.replace(tar_path + ".part", tar_path)
            sizes[os.path.basename(tar_path)] = os.path.getsize(tar_path)
        for f in os.listdir(tmp):
            if not any(f.startswith(spec.split("==")[0].replace("-", "_") + "-") for spec in SITE_WHEELS.values()):
                shutil.copy(os.path.join(tmp, f), whl)
                sizes[f"whl/{f}"] = os.path.getsize(os.path.join(whl, f))
    img = os.path.join(dest, "images")
    os.makedirs(img, exist_ok=True)
    for p in source_files():
        shutil.copy(p, img)
    sizes["images/"] = sum(os.path.getsize(os.path.join(img, f)) for f in os.listdir(img))
    return sizes


def _one_line(e: BaseException) -> str:
    return f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"


def run(d: str, tag: str, threads: int, rounds: int, warmup: int, iters: int, n_images: int, out: str,
        twins: list[str], only: list[str] | None, images_root: str | None = None) -> dict:
    import torch

    from edgedepth import formats
    from edgedepth.checkpoint import DepthModule, load_checkpoint
    from edgedepth.images import default_image_set, image_set_hash
    from edgedepth.preprocess import preprocess
    from edgedepth.runtimes.torch import TorchRunner
    from edgedepth.verify.bench import environment, run_interleaved
    from edgedepth.verify.parity import ParityAccumulator

    torch.set_num_threads(threads)
    module = DepthModule(load_checkpoint("synthetic", quiet=True).model)
    items = default_image_set(images_root)[:max(1, n_images)]
    xs = [preprocess(it.load(), (H, W)) for it in items]
    torch_ref = TorchRunner(module, (H, W), threads)
    refs = [torch_ref.run(x) for x in xs]
    torch_ref.close()
    rows, factories = {}, {}
    for key, (fname, backend, precision, side, label) in ROWS.items():
        if only and key not in only:
            continue
        row = {"label": label, "side": side, "precision": precision, "backend": backend, "file": fname,
               "sha256": None, "status": "ok", "error": None}
        rows[key] = row
        try:
            if fname is None:
                factory = (lambda: TorchRunner(module, (H, W), threads))
                row["runtime"] = f"torch {torch.__version__}"
            else:
                art = formats.open_artifact(os.path.join(d, fname))
                row["sha256"], row["ops"] = art.sha256, art.info.get("ops")
                factory = (lambda art=art, backend=backend: art.open_runner(backend=backend, threads=threads))
            r = factory()       # load once here to catch a missing runtime / bad file as a row, then parity
            row["runner"] = r.name
            if getattr(r, "inference_precision", None):
                row["inference_precision"] = r.inference_precision
            if fname in twins:
                row["parity"] = None
                row["transport"] = "timing twin (same graph, seeded random weights): latency only"
            else:
                acc = ParityAccumulator()
                for x, ref in zip(xs, refs):
                    acc.add(r.run(x), ref)
                row["parity"] = {"pooled_rel_l2_vs_pytorch_fp32": acc.summary()["pooled_rel_l2"], "images": len(xs)}
            r.close()
            factories[key] = factory
        except Exception as e:  # a missing runtime or file is a result
            row.update(status="unavailable", error=_one_line(e))
            print(f"{key}: {row['error']}", file=sys.stderr, flush=True)
    t0 = time.time()
    res = run_interleaved(factories, xs[0], rounds=rounds, warmup=warmup, iters=iters,
                          progress=lambda done, total: print(f"\r{done}/{total} calls", end="", file=sys.stderr,
                                                             flush=True))
    print(f"  ({time.time() - t0:.0f} s)", file=sys.stderr)
    for key, v in res["variants"].items():
        rows[key].update({k: v[k] for k in ("median_ms", "p25_ms", "p75_ms", "iqr_ms", "round_medians_ms", "load_s")})
    summary = summarise(rows)
    summary["device_limit"] = gemm_limit(threads, rows)
    report = {"kind": "edgedepth.peers", "tag": tag, "model": "synthetic", "size": [H, W], "threads": threads,
              "image_set": {"count": len(items), "sha256": image_set_hash(items), "timing_input": items[0].id},
              "environment": environment(threads), "method": res["method"], "goal_ours_over_peer": GOAL,
              "rows": rows, "summary": summary}
    from lib.records import attach as attach_records      # benchmarks/lib: the measurement records the release reads

    report = attach_records(report, out)
    with open(out, "w") as f:
        json.dump(report, f, indent=2)
    print_table(report)
    return report


MACS = 83_733_000_000   # multiply-accumulates of the model at 518x686 (edgedepth inspect, all formats: same arithmetic)


def gemm_limit(threads: int, rows: dict, n: int = 2048, calls: int = 10) -> dict:
    """The CPU's own limit for this model: FP32 GEMM throughput measured now (PyTorch, n x n x n, same threads), and the
    time 83.7 G MACs would take at that rate -- no runtime can do the model's arithmetic much faster in FP32."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        torch.mm(a, b)
    best = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    gflops = 2 * n ** 3 / best / 1e9
    limit_ms = 2 * MACS / (gflops * 1e9) * 1e3
    fastest = min((r["median_ms"] for r in rows.values() if r.get("median_ms") and r["precision"] == "fp32"),
                  default=None)
    return {"gemm": f"torch.mm {n}x{n}x{n} FP32, best of {calls}", "gemm_gflops": gflops, "model_gmac": MACS / 1e9,
            "fp32_limit_ms": limit_ms, "fastest_fp32_over_limit": fastest / limit_ms if fastest else None}


def summarise(rows: dict) -> dict:
    """Per precision: fastest of ours, fastest peer, their ratio, goal met; ORT edgedepth .onnx ÷ plain .onnx."""
    timed = {k: r for k, r in rows.items() if r.get("median_ms")}
    out = {}
    for p in ("fp32", "int8"):
        ours = sorted((r["median_ms"], k) for k, r in timed.items() if r["precision"] == p and r["side"] == "ours")
        peer = sorted((r["median_ms"], k) for k, r in timed.items() if r["precision"] == p and r["side"] == "peer")
        if ours and peer:
            out[p] = {"fastest_ours": ours[0][1], "fastest_peer": peer[0][1], "ours_ms": ours[0][0],
                      "peer_ms": peer[0][0], "ours_over_peer": ours[0][0] / peer[0][0],
                      "goal_met": ours[0][0] / peer[0][0] <= GOAL}
    for p in ("fp32", "int8"):
        a, b = timed.get(f"ort_{p}"), timed.get(f"ort_plain_{p}")
        if a and b:
            out[f"onnx_{p}_ours_over_plain"] = a["median_ms"] / b["median_ms"]
    return out


def print_table(report: dict) -> None:
    for k, r in report["rows"].items():
        par = (r.get("parity") or {}).get("pooled_rel_l2_vs_pytorch_fp32")
        print(f"{k:22s} {r['side']:4s} {r['status']:11s} "
              f"{(r.get('median_ms') or float('nan')):8.1f} ms  rel-L2 {par if par is None else f'{par:.2e}'}")
    print(json.dumps(report["summary"], indent=1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=["export", "export-onnx", "prepare-twins", "prepare-site", "run"])
    ap.add_argument("--dir", default=os.path.join(ROOT, "out", "peers"))
    ap.add_argument("--twins", default=None, help="prepare-twins: write here; run: materialise LiteRT twins from here")
    ap.add_argument("--tag", default="local")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--images", type=int, default=4, help="photos for the parity column")
    ap.add_argument("--only", default=None, help="comma-separated row keys")
    ap.add_argument("--images-root", default=None, help="a flat folder of the default set's photos (no scikit-image)")
    ap.add_argument("--out", default=None)
    ap.add_argument("--py", default="312", help="prepare-site: the CPython version of the wheels (the device's: 312)")
    a = ap.parse_args()
    if a.step == "export":
        export(a.dir)
    elif a.step == "export-onnx":
        export(a.dir, ("onnx",))
    elif a.step == "prepare-site":
        print(json.dumps(prepare_site(a.dir, a.py), indent=1))
    elif a.step == "prepare-twins":
        prepare_twins(a.dir, a.twins or os.path.join(ROOT, ".dev", "peers"))
    else:
        twins = materialise_twins(a.twins, a.dir) if a.twins else []
        out = a.out or os.path.join(ROOT, "benchmarks", "results", f"peers_cpu_{a.tag}.json")
        run(a.dir, a.tag, a.threads, a.rounds, a.warmup, a.iters, a.images, out, twins,
            a.only.split(",") if a.only else None, a.images_root)


if __name__ == "__main__":
    main()
