"""Your own checkpoint, in every format edgedepth reads: load time, identity and parity per format.

    .venv/bin/python benchmarks/finetune_formats.py [--bases synthetic-tiny,synthetic] [--out results/finetune_formats.json]

For each base (a synthetic stand-in) a stand-in fine-tune (benchmarks/lib/finetune.py: a few Adam steps, so its
weights are no member's) is saved as a ``save_pretrained`` folder, an official-repository ``.pth``, its training
script's checkpoint and an official-key ``.safetensors``.  Per format, in one process:

- **load**: ``edgedepth.checkpoint.load_checkpoint`` wall time, median of 3 loads (files in the page cache: the first,
  cold-ish load is reported apart);
- **identity**: the loaded state dict's SHA-256 against the fine-tuned model's own;
- **file**: the LiteRT FP32 file exported from it (``edgedepth.api``), its SHA-256 (equal across formats = byte-identical
  files);
- **parity**: that file against PyTorch FP32 of the loaded checkpoint, pooled rel-L2 on 8 bundled photos, CPU, 2 threads
  (``edgedepth.verify.validate``) -- and PyTorch FP32's own distance to float64 on the first photo, for scale.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

from lib.finetune import FORMATS, finetune, save_all
from lib.machine import cpu_name

HERE = os.path.dirname(os.path.abspath(__file__))
METHOD = ("a stand-in fine-tune (a few Adam steps on the synthetic stand-in) saved in each format; per format: "
          "load_checkpoint wall time (first load, then median of 3), the loaded state dict's SHA-256 against the "
          "model's, the LiteRT FP32 file exported from it (SHA-256), and its pooled rel-L2 against PyTorch FP32 of "
          "the loaded checkpoint on 8 bundled photos (CPU, 2 threads), with PyTorch FP32 vs float64 for scale")
SIZES = {"synthetic-tiny": (56, 70), "synthetic": (518, 686)}
MAX_DEPTH = {"training": "relative"}        # its name follows no convention: the head is said


def _load_times(path: str, max_depth) -> tuple[float, list[float], object]:
    from edgedepth.checkpoint import load_checkpoint

    times, ckpt = [], None
    for _ in range(4):
        t = time.perf_counter()
        ckpt = load_checkpoint(path, quiet=True, max_depth=max_depth)
        times.append(time.perf_counter() - t)
    return times[0], times[1:], ckpt


def _measure(kind: str, path: str, size, digest: str, work: str) -> dict:
    from edgedepth import formats
    from edgedepth.checkpoint import DepthModule, state_dict_digest
    from edgedepth.images import image_set
    from edgedepth.release.build import fp32_noise
    from edgedepth.preprocess import preprocess
    from edgedepth.verify.validate import validate

    first, warm, ckpt = _load_times(path, MAX_DEPTH.get(kind))
    os.makedirs(os.path.join(work, kind), exist_ok=True)
    (f,) = formats.export(ckpt.model, *size, os.path.join(work, kind), precisions=["fp32"], stem=ckpt.file_stem)
    items = image_set(limit=8)
    (row,) = validate([f.path], ["cpu"], DepthModule(ckpt.model), items)
    return {"format": kind, "file_name": os.path.basename(path), "load_first_s": round(first, 3),
            "load_warm_median_s": round(statistics.median(warm), 3),
            "state_dict_sha256": state_dict_digest(ckpt.model), "same_state_dict": state_dict_digest(ckpt.model) == digest,
            "member": ckpt.member.name, "exported": os.path.basename(f.path), "exported_sha256": _sha(f.path),
            "pooled_rel_l2": row["metrics"]["pooled_rel_l2"],
            "pytorch_fp32_vs_float64": fp32_noise(DepthModule(ckpt.model), preprocess(items[0].load(), size))}


def _sha(path: str) -> str:
    from edgedepth.fsutil import sha256_file

    return sha256_file(path)


def main(argv=None) -> int:
    from edgedepth.checkpoint import state_dict_digest
    from edgedepth.fsutil import write_bytes_atomic

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bases", default="synthetic-tiny,synthetic")
    p.add_argument("--out", default=os.path.join(HERE, "results", "finetune_formats.json"))
    a = p.parse_args(argv)
    bases = []
    with tempfile.TemporaryDirectory() as work:
        for base in a.bases.split(","):
            model = finetune(base)
            digest = state_dict_digest(model)
            paths = save_all(model, os.path.join(work, base))
            rows = [_measure(k, paths[k], SIZES[base], digest, os.path.join(work, base + "-out")) for k in FORMATS]
            bases.append({"base": base, "size": "x".join(map(str, SIZES[base])), "state_dict_sha256": digest,
                          "bytes": {k: _bytes(paths[k]) for k in FORMATS}, "rows": rows,
                          "byte_identical_files": len({r["exported_sha256"] for r in rows}) == 1})
    report = {"kind": "edgedepth.finetune_formats", "date": datetime.date.today().isoformat(), "cpu": cpu_name(),
              "cores": os.cpu_count(), "python": platform.python_version(), "commit": _commit(),
              "method": METHOD,
              "bases": bases}
    write_bytes_atomic(a.out, (json.dumps(report, indent=2) + "\n").encode())
    print(json.dumps(report, indent=2))
    return 0


def _bytes(path: str) -> int:
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def _commit() -> str:
    r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
    return r.stdout.strip() or "unknown"


if __name__ == "__main__":
    sys.exit(main())
