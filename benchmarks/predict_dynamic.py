"""predict on a release's dynamic ONNX against the model card's own ONNX Runtime snippet, per photo shape.

    .venv/bin/python benchmarks/predict_dynamic.py RELEASE_DIR [--out results/predict_dynamic.json]

For each photo (portrait, square, landscape; bundled with matplotlib / scikit-image):

- **reference**: the card's ONNX Runtime block, taken from RELEASE_DIR/README.md and executed as written in a
  scratch folder holding ``photo.jpg`` and the release's ``onnx/`` (upstream's size for the photo);
- **now**: ``edgedepth.open(onnx/model.onnx).predict(photo)`` (what ``edgedepth predict`` writes);
- **fixed size**: the same file run at the size it records (``--size`` set to it: what predict did before it sized each
  photo as upstream does).

Both depth maps are resized back to the photo's size (edgedepth's bicubic ``resize_depth``) and compared by rel-L2
with the reference.  FP32 noise for scale: the snippet again with ONNX Runtime's graph optimisations off (other
kernels and fusions, same float32 model).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
from lib.machine import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))


def _photos() -> list[tuple[str, str]]:
    import matplotlib
    import skimage

    mpl = os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "sample_data")
    sk = os.path.join(os.path.dirname(skimage.__file__), "data")
    return [("grace_hopper (portrait)", os.path.join(mpl, "grace_hopper.jpg")),
            ("astronaut (square)", os.path.join(sk, "astronaut.png")),
            ("chelsea (landscape)", os.path.join(sk, "chelsea.png")),
            ("coffee (landscape)", os.path.join(sk, "coffee.png"))]


def _ort_block(readme: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    return next(b for b in blocks if "import onnxruntime" in b)


def _rel(a, b) -> float:
    return float(np.linalg.norm(a - b) / np.linalg.norm(b))


def main(argv=None) -> int:
    import edgedepth
    from edgedepth.fsutil import write_bytes_atomic
    from edgedepth.predict import resize_depth
    from PIL import Image

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("release")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "predict_dynamic.json"))
    args = ap.parse_args(argv)
    readme = open(os.path.join(args.release, "README.md"), encoding="utf-8").read()
    block = _ort_block(readme)
    onnx = os.path.join(args.release, "onnx", "model.onnx")
    model = edgedepth.open(onnx)
    recorded = tuple(model.artifact.size)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(os.path.join(args.release, "onnx")), os.path.join(tmp, "onnx"))
        for name, path in _photos():
            shutil.copyfile(path, os.path.join(tmp, "photo.jpg"))
            img = Image.open(path).convert("RGB")
            orig = (img.height, img.width)
            ns: dict = {}
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                exec(compile(block, "card ONNX Runtime snippet", "exec"), ns)       # the card's code, as written
                one = dict(ns)
                exec(compile(block.replace("so.intra_op_num_threads = 4", "so.intra_op_num_threads = 4\n"
                                           "so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL"),
                             "snippet, graph optimisations off", "exec"), one)
            finally:
                os.chdir(cwd)
            ref = resize_depth(np.asarray(ns["depth"], np.float32), orig)
            noise = _rel(resize_depth(np.asarray(one["depth"], np.float32), orig), ref)
            now = model.predict(img)
            fixed = resize_depth(_at(onnx, img, recorded), orig)
            rows.append({"photo": name, "photo_hxw": list(orig), "snippet_hxw": [int(ns["H"]), int(ns["W"])],
                         "recorded_hxw": list(recorded), "rel_l2_now": _rel(now, ref),
                         "rel_l2_fixed_size": _rel(fixed, ref), "fp32_noise_rel_l2": noise})
            print(f"{name:26s} {orig} -> snippet {ns['H']}x{ns['W']}: now {rows[-1]['rel_l2_now']:.2e}, "
                  f"at the recorded {recorded[0]}x{recorded[1]} {rows[-1]['rel_l2_fixed_size']:.3f} "
                  f"(FP32 noise {noise:.1e})", flush=True)
    m = json.load(open(os.path.join(args.release, "manifest.json")))
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    record = {"what": "edgedepth predict on a release's dynamic onnx/model.onnx vs the model card's ONNX Runtime snippet",
              "method": __doc__.split("\n\n", 2)[2].strip().replace("\n", " "),
              "release": m["name"], "checkpoint": m["provenance"]["checkpoint"]["name"],
              "onnx_sha256": next(f["sha256"] for f in m["files"] if f["path"] == "onnx/model.onnx"),
              "date": datetime.date.today().isoformat(), "commit": commit, "cpu": cpu_name(),
              "machine": platform.machine(), "rows": rows}
    write_bytes_atomic(args.out, (json.dumps(record, indent=2) + "\n").encode())
    print(f"wrote {args.out}")
    return 0


def _at(onnx: str, img, size: tuple[int, int]) -> np.ndarray:
    """The file's runner as opened for bench/validate: at the size the file records (``predict --size HxW``)."""
    from edgedepth import formats
    from edgedepth.preprocess import model_input

    runner = formats.open_artifact(onnx).open_runner("cpu", 2)
    try:
        return np.asarray(runner.run(model_input(img, size, "float32")), np.float32).reshape(size)
    finally:
        runner.close()


if __name__ == "__main__":
    sys.exit(main())
