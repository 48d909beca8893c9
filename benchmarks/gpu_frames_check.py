"""The playground's webcam frames on a real GPU, checked here against Python on the same pixels (issue 30).

Input: the ``.npz`` files ``webcam_fps.py --frames-out DIR`` saved on the device (benchmarks/devices/browser_device.sh
with ``WEBCAM_FRAMES_OUT``): per LiteRT.js variant, the last webcam frame's model input and output as the page held
them after stopping, and with frames computed on the GPU (web/gpuframes.js) the grabbed RGBA the WGSL passes read.
Per variant:

- frames on the GPU: the input the GPU made vs ``edgedepth.preprocess.model_input`` (Pillow) on the grabbed pixels —
  bit-identical is the claim (integer arithmetic in WGSL);
- the page's output vs Python LiteRT on the CPU running the same release file on the page's own input (pooled rel-L2,
  max |diff|), against ``validate``'s flag for an FP32-enforced GPU row (``FP32_SUSPECT_REL_L2``): the page asks
  LiteRT.js for FP32 on WebGPU, so a larger gap would mean the GPU computed in reduced precision.

    .venv/bin/python benchmarks/gpu_frames_check.py out/depth-anything-v2-small CALL_DIR/frames [CALL_DIR/frames ...] \\
      --out benchmarks/results/gpu_frames_check_h100.json --device "NVIDIA H100 80GB HBM3"

(each frames folder beside its run's ``webcam_fps_webgpu.json``, as the device call returns them)
"""

from __future__ import annotations

import argparse
import datetime
import glob
import json
import os

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def check(npz: str, release: str, variants: dict) -> dict:
    """One saved frame -> its row (``variants``: webcam_fps.py's JSON rows, for the file each variant ran)."""
    from PIL import Image

    from edgedepth import formats
    from edgedepth.preprocess import model_input
    from edgedepth.verify.validate import FP32_SUSPECT_REL_L2

    from webcam_fps import frame_file

    key = os.path.basename(npz)[:-4]
    row = next((r for k, r in variants.items() if frame_file(k) == os.path.basename(npz)), None)
    if row is None:
        raise SystemExit(f"{npz}: no variant of the webcam JSON saved this frame")
    d = np.load(npz)
    x, y = d["input"], d["output"]
    out = {"variant": key, "file": row["file"], "frames_on_the_gpu": bool(d["gpu_frames"]),
           "input_dtype": str(x.dtype), "input_shape": list(x.shape)}
    if "rgba" in d:
        h, w = x.shape[2:]
        want = model_input(Image.fromarray(np.ascontiguousarray(d["rgba"][..., :3])), (h, w),
                           "uint8" if x.dtype == np.uint8 else "float32")
        diff = want.astype(np.float64) - x.astype(np.float64)
        out["grabbed"] = list(d["rgba"].shape[:2])
        out["input_bit_identical_to_pillow"] = bool(np.array_equal(want, x))
        out["input_values_differing"] = int(np.count_nonzero(diff))
        out["input_max_abs_diff"] = float(np.abs(diff).max())
    runner = formats.open_artifact(os.path.join(release, row["file"])).open_runner("cpu", 2)
    try:
        ref = runner.run(x)
    finally:
        runner.close()
    rel = float(np.linalg.norm(y.astype(np.float64) - ref) / np.linalg.norm(ref.astype(np.float64)))
    out |= {"output_rel_l2_vs_litert_cpu": rel, "output_max_abs_diff": float(np.abs(y - ref).max()),
            "fp32_suspect_rel_l2": FP32_SUSPECT_REL_L2, "within_fp32_policy": rel <= FP32_SUSPECT_REL_L2}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("release", help="the release folder the page ran (manifest.json)")
    ap.add_argument("frames", nargs="+", help="folders of webcam_fps.py --frames-out .npz files, each beside its run's "
                                              "webcam_fps_webgpu.json")
    ap.add_argument("--device", default=None, help="the GPU the frames came from (from the run's log)")
    ap.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", "gpu_frames_check.json"))
    a = ap.parse_args(argv)
    from edgedepth.fsutil import write_bytes_atomic
    from edgedepth.verify.bench import environment

    rows, runs = [], []
    for d in a.frames:
        web = json.load(open(os.path.join(os.path.dirname(os.path.abspath(d)), "webcam_fps_webgpu.json")))
        runs.append({"date": web["date"], "method": web["method"], "variants": list(web["variants"]),
                     "adapter": next(iter(web["variants"].values())).get("adapter")})
        rows += [check(f, a.release, web["variants"]) | {"run": len(runs) - 1}
                 for f in sorted(glob.glob(os.path.join(d, "*.npz")))]
    report = {"kind": "edgedepth.gpu_frames_check", "date": datetime.date.today().isoformat(), "device": a.device,
              "runs": runs, "checked_here": environment(threads=2),
              "method": " ".join(__doc__.split("\n\n")[1].split()), "rows": rows}
    write_bytes_atomic(a.out, (json.dumps(report, indent=1) + "\n").encode())
    for r in rows:
        print(f"{r['variant']:34s} GPU frames {r['frames_on_the_gpu']!s:5s} input = Pillow "
              f"{r.get('input_bit_identical_to_pillow', '–')!s:5s} output vs LiteRT CPU rel-L2 "
              f"{r['output_rel_l2_vs_litert_cpu']:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
