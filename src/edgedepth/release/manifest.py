"""``manifest.json``: what a runtime or browser checks before using a release folder's files.

Deterministic: keys sorted, files sorted by path, no timestamps — two builds of the same recipe give the same bytes.
``verify`` re-hashes every file against it and names each changed, missing, extra or truncated file.
"""

from __future__ import annotations

import json
import os

from ..errors import EdgedepthError
from ..family import MEMBERS, Member, member_of_file_name
from ..fsutil import sha256_file, write_bytes_atomic  # noqa: F401  (sha256_file is part of this API)
from ..preprocess import MEAN, STD

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
BUILD_REPORT = "build-report.json"
# Files of a release folder that the manifest does not list: itself (it cannot hash itself) and the build report
# (what the building machine measured; machine-dependent, so outside the reproducible set).
UNLISTED = {MANIFEST, BUILD_REPORT}

INPUT_NORMALISATION = {"color": "RGB", "scale": "1/255", "mean": list(MEAN), "std": list(STD), "resize": "bicubic",
                       "range_after": "ImageNet-normalised"}
# uint8-input files (``edgedepth.formats.tflite.pixel_input``): the caller only resizes; the graph does the rest
PIXEL_INPUT = {"color": "RGB", "resize": "bicubic", "range": "0..255 (uint8 pixels as resized)",
               "in_graph": {"scale": "1/255", "mean": list(MEAN), "std": list(STD)}}
OUTPUT_SEMANTICS = "relative inverse depth, larger = closer"


def io_contract(height: int, width: int, input_name: str = "args_0", output_name: str = "output_0",
                semantics: str = OUTPUT_SEMANTICS, input_dtype: str = "float32") -> dict:
    """The file's input/output contract; ``semantics`` is the family member's (metric members: metres); ``input_dtype``
    "uint8": the file takes resized pixels and normalises in the graph."""
    return {
        "input": {"name": input_name, "shape": [1, 3, height, width], "dtype": input_dtype, "layout": "NCHW",
                  "normalisation": PIXEL_INPUT if input_dtype == "uint8" else INPUT_NORMALISATION},
        "output": {"name": output_name, "shape": [1, height, width], "dtype": "float32", "semantics": semantics},
    }


def file_entry(folder: str, rel: str, **fields) -> dict:
    """bytes + sha256 of ``folder/rel`` merged with the caller's fields (format, precision, io, ops, ...)."""
    path = os.path.join(folder, rel)
    return {"path": rel, "bytes": os.path.getsize(path), "sha256": sha256_file(path), **fields}


def dumps(manifest: dict) -> str:
    m = dict(manifest)
    m["files"] = sorted(m["files"], key=lambda f: f["path"])
    return json.dumps(m, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(folder: str, manifest: dict) -> str:
    manifest = {"schema_version": SCHEMA_VERSION, **manifest}
    path = os.path.join(folder, MANIFEST)
    write_bytes_atomic(path, dumps(manifest).encode())
    return path


def load(folder: str) -> dict:
    path = os.path.join(folder, MANIFEST)
    if not os.path.isfile(path):
        raise EdgedepthError(f"{folder!r} has no {MANIFEST}")
    try:
        m = json.load(open(path))
    except json.JSONDecodeError as e:
        raise EdgedepthError(f"{path!r} is not valid JSON: {e.msg} at line {e.lineno}") from None
    if m.get("schema_version") != SCHEMA_VERSION or not isinstance(m.get("files"), list):
        raise EdgedepthError(f"{path!r} is not an edgedepth manifest (schema_version {SCHEMA_VERSION} with files)")
    return m


def verify(folder: str) -> list[str]:
    """Problems, one line each (empty list = the folder matches its manifest exactly)."""
    m = load(folder)
    problems = []
    listed = set()
    for f in m["files"]:
        rel = f["path"]
        listed.add(rel)
        p = os.path.join(folder, rel)
        if not os.path.isfile(p):
            problems.append(f"missing: {rel}")
            continue
        size = os.path.getsize(p)
        if size < f["bytes"]:
            problems.append(f"truncated: {rel} ({size} of {f['bytes']} bytes)")
        elif size > f["bytes"]:
            problems.append(f"changed: {rel} ({size} bytes, manifest says {f['bytes']})")
        elif sha256_file(p) != f["sha256"]:
            problems.append(f"changed: {rel} (sha256 differs from the manifest)")
    for root, _dirs, names in os.walk(folder):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), folder)
            if rel not in listed and rel not in UNLISTED:
                problems.append(f"extra: {rel} (not in the manifest)")
    return sorted(problems)


def _release_folder(path: str) -> str | None:
    """The release folder holding ``path``: beside the file, or one folder up (the onnx-community layout's onnx/)."""
    here = os.path.dirname(os.path.abspath(path))
    return next((d for d in (here, os.path.dirname(here)) if os.path.isfile(os.path.join(d, MANIFEST))), None)


def member_of_file(path: str) -> Member | None:
    """The family member a model file says it came from: its release manifest's ``model`` block, else its name."""
    folder = _release_folder(path)
    name = (load(folder).get("model") or {}).get("family_member") if folder else None
    return MEMBERS.get(name) if name else member_of_file_name(path)


def check_made_from(paths: list[str], member: Member | None, model: str) -> None:
    """One line when a file says it came from another family member than ``--model`` (validate would compare a metric
    file with a relative model, Large with Small, ...).  Files that say nothing (renamed, no manifest) pass."""
    for p in paths:
        said = member_of_file(p)
        if said and member and said.name != member.name:
            raise EdgedepthError(f"{os.path.basename(p)} was exported from {said.name} ({said.hub_id}) but --model "
                                 f"{model} is {member.name}: pass the checkpoint the file came from")


def verify_next_to(path: str) -> dict | None:
    """If ``path`` sits in a release folder (manifest beside it), check that file against it; returns its entry."""
    folder = _release_folder(path)
    if folder is None:
        return None
    m = load(folder)
    rel = os.path.relpath(os.path.abspath(path), folder)
    entry = next((f for f in m["files"] if f["path"] == rel), None)
    if entry is None:
        raise EdgedepthError(f"{rel!r} is not listed in {os.path.join(folder, MANIFEST)!r}")
    if os.path.getsize(path) != entry["bytes"] or sha256_file(path) != entry["sha256"]:
        raise EdgedepthError(f"{path!r} does not match its manifest (size or sha256 differs): refusing to use it")
    return entry


def verify_files_next_to(paths: list[str]) -> list[str]:
    """:func:`verify_next_to` for each path (files inside a release folder must match it before they are used)."""
    for p in paths:
        verify_next_to(p)
    return paths
