"""What the BENCHMARKS.md generators share: the results folder and its JSON loader."""

from __future__ import annotations

import json
import os

R = "benchmarks/results"
LOADED: list[str] = []      # every report name load() was asked for (pages.Topic.body: which reports a section used)


def load(name: str):
    """benchmarks/results/NAME as a dict, or None when it was not measured."""
    LOADED.append(name)
    p = os.path.join(R, name)
    return json.load(open(p)) if os.path.isfile(p) else None


def webgpu_file_row(run: dict) -> dict:
    """The release's WebGPU file (``*_fp16_u8in.tflite``) among a ``gpu_floor.py`` run's files (by ``stands_for``)."""
    return next(f for f in run["files"].values()
                if (f.get("stands_for") or {}).get("file", "").endswith("_fp16_u8in.tflite"))


# The device limit and the WebGPU file timed in ONE device call (benchmarks/devices/gpu_truth_device.sh limit): the
# first pair present wins. The H100 pair has the "-nomask" arms (gpu_reference.py: the attention mask transformers
# 5.24 builds on the device's torch 2.11 under torch.compile, left out); the H200 pair has not, so its compiled rows
# ran PyTorch's math attention. (An H100 pair with transformers 5.17, no mask either: *_h100_transformers517.json.)
LIMIT_PAIRS = (("gpu_options_compare_h100.json", "gpu_reference_limit_h100.json"),
               ("gpu_options_compare.json", "gpu_reference.json"))


def fastest(variants: dict) -> tuple[str, dict]:
    """(name, row) of the fastest timed variant of a gpu_reference.py size (rows without ``median_ms`` failed)."""
    timed = {k: x for k, x in variants.items() if x.get("median_ms")}
    best = min(timed, key=lambda k: timed[k]["median_ms"])
    return best, timed[best]


def limit_pair(cmp_name: str, ref_name: str) -> dict | None:
    """The WebGPU file with the runner's chosen flags, both precisions, and PyTorch CUDA at 518×686 from one device
    call (``gpu_options.py compare`` then ``gpu_reference.py``): {gpu, transformers, date, ours: {precision: (ms,
    flags)}, eager: variant, limit: (name, variant), files} or None when either was not measured."""
    cmp_, ref = load(cmp_name), load(ref_name)
    if not (cmp_ and ref and "wall_median_ms" in ref["sizes"]["518x686"]["variants"].get("eager-fp32", {})):
        return None
    chosen = cmp_["chosen"]["chosen"]
    ours = {n.split(" | ")[1]: (v["median_ms"], chosen) for n, v in cmp_["bench"]["variants"].items()
            if n.split(" | ")[2] == chosen}
    v, e = ref["sizes"]["518x686"]["variants"], ref["environment"]
    return {"gpu": e.get("gpu", "?"), "transformers": e["versions"].get("transformers"), "date": e.get("date"),
            "ours": ours, "eager": v["eager-fp32"], "limit": fastest(v), "files": (cmp_name, ref_name)}


def gpu_limit_pair() -> dict | None:
    """The first pair of LIMIT_PAIRS measured (limit_pair), or None."""
    return next((p for p in (limit_pair(*names) for names in LIMIT_PAIRS) if p), None)
