"""Record golden SHA-256s from a release folder built on this machine (run only when the bytes are meant to change).

    python tests/golden/record.py tiny DIR   # DIR built with tests/test_release.py's ARGS
    python tests/golden/record.py full DIR   # DIR from `make demo` (the synthetic full-size release)
    python tests/golden/record.py state      # state-dict digests of the synthetic checkpoints, raw and rewritten

Writes tests/golden/release_sha256.json, keeping the other section.  The tests rebuild and compare on whatever machine
runs them, so a CPU on which a number comes out differently fails CI.
"""

import hashlib
import json
import os
import platform
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "release_sha256.json")
TINY_ARGS = ["--model", "synthetic-tiny", "--sizes", "28x42", "--parity-images", "2", "--quiet"]
FULL_FILES = tuple(f"depth_anything_v2_small_518x686_{p}.tflite" for p in ("fp32", "fp16", "int8", "fp16_u8in"))


def _sha(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _cpu():
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor()


STATE_DICTS = {"synthetic": None, "synthetic rewritten 518x686": (518, 686),
               "synthetic-tiny": None, "synthetic-tiny rewritten 56x70": (56, 70)}


def state_dicts() -> dict:
    """Digests of the synthetic checkpoints' state dicts, raw and after the default rewrites (no conversion)."""
    from edgedepth.checkpoint import load_checkpoint, state_dict_digest
    from edgedepth.rewrites import apply_rewrites

    out = {}
    for key, size in STATE_DICTS.items():
        model = load_checkpoint(key.split()[0], quiet=True).model
        out[key] = state_dict_digest(apply_rewrites(model, *size)[0] if size else model)
    return out


def main(kind, folder=None):
    data = json.load(open(PATH)) if os.path.isfile(PATH) else {}
    # relative paths of every file, subfolders included ("onnx/model.onnx"), as tests/test_release.py lists them
    names = sorted(os.path.relpath(os.path.join(d, f), folder) for d, _, fs in os.walk(folder) for f in fs) \
        if folder else []
    if kind == "state":
        data["state_dicts"] = state_dicts()
    elif kind == "tiny":
        data["synthetic-tiny release"] = {
            "args": TINY_ARGS, "recorded_on": _cpu(),
            "sha256": {n: _sha(os.path.join(folder, n)) for n in names if n != "build-report.json"}}
    else:
        m = json.load(open(os.path.join(folder, "manifest.json")))
        data["synthetic release"] = {
            "recorded_on": _cpu(),
            "state_dict_sha256": m["provenance"]["checkpoint"]["state_dict_sha256"],
            "sha256": {n: _sha(os.path.join(folder, n)) for n in names
                       if n.endswith((".tflite", ".pte")) or n in ("LICENSE",)}}
    tmp = PATH + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, PATH)


if __name__ == "__main__":
    main(*sys.argv[1:3])

