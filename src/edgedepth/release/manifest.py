"""``manifest.json``: what a runtime or browser checks before using a release folder's files.

Deterministic: keys sorted, files sorted by path, no timestamps — two builds of the same recipe give the same bytes.
``verify`` re-hashes every file against it and names each changed, missing, extra or truncated file (a missing
file with a look-alike name there instead: how the two names differ).  It walks folders of any depth.  It stays
inside the folder: :func:`load` schema-checks the whole manifest first (relative, normalised paths only), listed files
are opened without following any symlink, and symlinks or special files anywhere in the folder are reported, never
followed or hashed.  Paths are printed escaped (:func:`escape`).  ``predict``/``validate``/``bench`` and ``serve`` use
the same reader and checks.  A Hugging Face Hub copy of the folder verifies too: the housekeeping its clients add
(a clone's top-level ``.git/``, huggingface_hub's ``.cache/huggingface/`` metadata of published files) is accepted by
the one rule of :mod:`.hub` (``HOUSEKEEPING``); nothing else unlisted is.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import stat
import unicodedata
from typing import BinaryIO

from ..errors import EdgedepthError
from ..models import MEMBERS, Member, member_of_file_name
from ..fsutil import open_regular, sha256_file, write_bytes_atomic
from ..preprocess import MEAN, STD
from . import hub

SCHEMA_VERSION = 1
MANIFEST = "manifest.json"
BUILD_REPORT = "build-report.json"
# Files of a release folder that the manifest does not list: itself (it cannot hash itself) and the build report
# (what the building machine measured; machine-dependent, so outside the reproducible set).
UNLISTED = {MANIFEST, BUILD_REPORT}
# The build report's pictures: each gated file's worst photo side by side (a build on the user's own photos)
WORST_PNG = ("build-report.", ".worst.png")


def is_unlisted(rel: str) -> bool:
    """Whether ``rel`` is a file a release folder holds unlisted: :data:`UNLISTED`, or a top-level build-report
    picture (:data:`WORST_PNG`)."""
    return rel in UNLISTED or ("/" not in rel and rel.startswith(WORST_PNG[0]) and rel.endswith(WORST_PNG[1])
                               and len(rel) > len(WORST_PNG[0]) + len(WORST_PNG[1]))

INPUT_NORMALISATION = {"color": "RGB", "scale": "1/255", "mean": list(MEAN), "std": list(STD), "resize": "bicubic",
                       "range_after": "ImageNet-normalised"}
# uint8-input files (``edgedepth.formats.tflite.pixel_input``): the caller only resizes; the graph does the rest
PIXEL_INPUT = {"color": "RGB", "resize": "bicubic", "range": "0..255 (uint8 pixels as resized)",
               "in_graph": {"scale": "1/255", "mean": list(MEAN), "std": list(STD)}}
OUTPUT_SEMANTICS = "relative inverse depth, larger = closer"


def io_contract(height: int, width: int, input_name: str = "args_0", output_name: str = "output_0",
                semantics: str = OUTPUT_SEMANTICS, input_dtype: str = "float32", more_outputs=()) -> dict:
    """The file's input/output contract; ``semantics`` is the family member's (metric members: metres); ``input_dtype``
    "uint8": the file takes resized pixels and normalises in the graph.

    ``output`` is the depth, the file's first output.  ``more_outputs`` (``[{"role", "name", "semantics"}]``, the
    family's outputs after the depth: Depth Anything 3's confidence) adds ``outputs``: every output in the file's
    order, each with its ``role`` ("depth", "confidence"; what ``run_all`` names it), the depth first.  A file with one
    output (V2's) has no ``outputs``."""
    io = {
        "input": {"name": input_name, "shape": [1, 3, height, width], "dtype": input_dtype, "layout": "NCHW",
                  "normalisation": PIXEL_INPUT if input_dtype == "uint8" else INPUT_NORMALISATION},
        "output": {"name": output_name, "shape": [1, height, width], "dtype": "float32", "semantics": semantics},
    }
    if more_outputs:
        io["outputs"] = [{"role": "depth", **io["output"]}] + [
            {"role": o["role"], "name": o["name"], "shape": [1, height, width], "dtype": "float32",
             "semantics": o["semantics"]} for o in more_outputs]
    return io


def output_roles(entry: dict) -> tuple[str, ...]:
    """What a manifest entry's file outputs, in order (``io_contract``): ``("depth",)`` unless it lists more."""
    outs = entry.get("outputs")
    if isinstance(outs, list) and outs and all(isinstance(o, dict) and isinstance(o.get("role"), str) for o in outs):
        return tuple(o["role"] for o in outs)
    return ("depth",)


def file_entry(folder: str, rel: str, **fields) -> dict:
    """bytes + sha256 of ``folder/rel`` merged with the caller's fields (format, precision, io, ops, ...)."""
    path = os.path.join(folder, rel)
    return {"path": rel, "bytes": os.path.getsize(path), "sha256": sha256_file(path), **fields}


def artifact_entry(art, rel: str, **fields) -> dict:
    """:func:`file_entry` of a model file already opened as a :class:`formats.Artifact` (its hash is not computed
    again): the build describes and hashes each file once, for its GPU check, its parity gate and this entry."""
    return {"path": rel, "bytes": os.path.getsize(art.path), "sha256": art.sha256, **fields}


def dumps(manifest: dict) -> str:
    m = dict(manifest)
    m["files"] = sorted(m["files"], key=lambda f: f["path"])
    return json.dumps(m, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write(folder: str, manifest: dict) -> str:
    manifest = {"schema_version": SCHEMA_VERSION, **manifest}
    path = os.path.join(folder, MANIFEST)
    write_bytes_atomic(path, dumps(manifest).encode())
    return path


MAX_MANIFEST_BYTES = 64 << 20     # far above any real manifest; a bigger file is not read into memory
_SHA256 = re.compile(r"[0-9a-f]{64}")


def escape(text: str) -> str:
    """``text`` safe for a terminal: non-printable characters (control, bidi, undecodable bytes) as \\xNN escapes."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text))


def _read_manifest(folder: str) -> object:
    """manifest.json of ``folder`` parsed (a regular file, UTF-8 JSON), else one EdgedepthError line."""
    path = os.path.join(folder, MANIFEST)
    try:
        st = os.lstat(path)
    except OSError:
        raise EdgedepthError(f"{folder!r} has no {MANIFEST}") from None
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode):
        raise EdgedepthError(f"{path!r} is {'a symlink' if stat.S_ISLNK(st.st_mode) else 'not a regular file'}: "
                             "a manifest must be a regular file in the release folder")
    if st.st_size > MAX_MANIFEST_BYTES:
        raise EdgedepthError(f"{path!r} is too large for a manifest ({st.st_size} bytes)")
    f, problem = open_regular(folder, MANIFEST)     # non-blocking, re-checked on the open file: never a FIFO
    if f is None:
        raise EdgedepthError(f"cannot read {path!r}: it is {problem}")
    try:
        with f:
            text = f.read(MAX_MANIFEST_BYTES + 1).decode("utf-8")
    except UnicodeDecodeError as e:
        bad = e.object[e.start]
        raise EdgedepthError(f"{path!r} is not UTF-8 text (byte 0x{bad:02x} at offset {e.start})") from None
    except OSError as e:
        raise EdgedepthError(f"cannot read {path!r}: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise EdgedepthError(f"{path!r} is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from None
    except (ValueError, RecursionError) as e:      # a 5000-digit number, arrays nested 100000 deep
        raise EdgedepthError(f"{path!r} is not valid JSON: {escape(' '.join(str(e).split())[:200])}") from None


def path_problem(rel: object) -> str | None:
    """Why ``rel`` cannot name a file of a release folder, or None: it must be a relative, normalised POSIX path
    (no ``.``/``..``/empty component, no leading ``/``, no backslash, only printable characters)."""
    if not isinstance(rel, str) or not rel:
        return "path is not a non-empty string"
    if not rel.isprintable():
        return "path has control or non-printable characters"
    if "\\" in rel:
        return "path has a backslash (manifest paths use /)"
    if rel.startswith("/"):
        return "path is absolute (it must be relative to the release folder)"
    if any(part in ("", ".", "..") for part in rel.split("/")) or posixpath.normpath(rel) != rel:
        return "path is not a normalised path inside the release folder (no '.', '..' or empty components)"
    return None


def _entry_problem(f: object, seen: set[str]) -> str | None:
    if not isinstance(f, dict):
        return f"is a {type(f).__name__}, not an object"
    problem = path_problem(f.get("path"))
    if problem:
        return problem
    if f["path"] in seen:
        return "path is listed twice"
    n = f.get("bytes")
    if not isinstance(n, int) or isinstance(n, bool) or n < 0:
        return "bytes is not a non-negative integer"
    if not isinstance(f.get("sha256"), str) or not _SHA256.fullmatch(f["sha256"]):
        return "sha256 is not 64 lowercase hex digits"
    return None


def check_schema(m: object, where: str) -> dict:
    """``m`` if it is an edgedepth manifest (every entry well formed), else one EdgedepthError naming the entry."""
    if not isinstance(m, dict) or type(m.get("schema_version")) is not int or m["schema_version"] != SCHEMA_VERSION \
            or not isinstance(m.get("files"), list):
        raise EdgedepthError(f"{where} is not an edgedepth manifest (an object with schema_version {SCHEMA_VERSION} "
                             "and a files list)")
    if "model" in m and not isinstance(m["model"], dict):
        raise EdgedepthError(f"{where}: model is not an object")
    seen: set[str] = set()
    for i, f in enumerate(m["files"]):
        problem = _entry_problem(f, seen)
        if problem:
            rel = f.get("path") if isinstance(f, dict) else None
            name = f" ({rel!r})" if isinstance(rel, str) else ""   # repr: control characters escaped
            raise EdgedepthError(f"{where}: files[{i}]{name}: {problem}")
        seen.add(f["path"])
    return m


def load(folder: str) -> dict:
    """The manifest of ``folder``, schema-checked (:func:`check_schema`); one EdgedepthError line otherwise."""
    return check_schema(_read_manifest(folder), repr(os.path.join(folder, MANIFEST)))


def open_listed(folder: str, rel: str) -> tuple[BinaryIO | None, str | None]:
    """Open ``folder/rel`` for reading without following any symlink below ``folder``: (file, None), or (None, the
    problem as a verify line).  ``rel`` must pass :func:`path_problem`.  Only a regular file is ever opened."""
    parts, shown = rel.split("/"), escape(rel)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, part in enumerate(parts):
            try:
                st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                return None, f"missing: {shown}"
            except OSError as e:
                return None, f"unreadable: {shown} ({e.strerror})"
            last = i == len(parts) - 1
            if stat.S_ISLNK(st.st_mode):
                where = "" if last else f"{escape('/'.join(parts[:i + 1]))} is a symlink; "
                return None, f"symlink: {shown} ({where}not followed)"
            if not last and not stat.S_ISDIR(st.st_mode):
                return None, f"missing: {shown} ({escape('/'.join(parts[:i + 1]))} is not a folder)"
            if last and not stat.S_ISREG(st.st_mode):
                return None, f"not a regular file: {shown}"
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | (os.O_NONBLOCK if last else os.O_DIRECTORY)
            try:
                nfd = os.open(part, flags, dir_fd=fd)
            except OSError as e:   # replaced since the stat (a symlink now: ELOOP)
                return None, f"unreadable: {shown} ({e.strerror})"
            os.close(fd)
            fd = nfd
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None, f"not a regular file: {shown}"
        f, fd = os.fdopen(fd, "rb"), -1
        return f, None
    finally:
        if fd >= 0:
            os.close(fd)


def _sha256_of(f: BinaryIO) -> str:
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()


def check_entry(folder: str, f: dict) -> str | None:
    """The verify line for entry ``f`` (missing, symlink, not a regular file, truncated, changed), or None if the file
    matches.  Sizes and hashes are taken only of regular files inside ``folder``, never through a symlink."""
    fh, problem = open_listed(folder, f["path"])
    if fh is None:
        return problem
    with fh:
        rel, size = escape(f["path"]), os.fstat(fh.fileno()).st_size
        if size < f["bytes"]:
            return f"truncated: {rel} ({size} of {f['bytes']} bytes)"
        if size > f["bytes"]:
            return f"changed: {rel} ({size} bytes, manifest says {f['bytes']})"
        if _sha256_of(fh) != f["sha256"]:
            return f"changed: {rel} (sha256 differs from the manifest)"
    return None


def walk(folder: str, problems: list[str], keep_out: frozenset[str] = frozenset()):
    """(relative path, lstat mode) of every entry below ``folder``, symlinks not followed; iterative (a stack, not
    recursion), so any depth is walked.  A folder that cannot be listed is an "unreadable:" line in ``problems``.
    Folders whose relative path is in ``keep_out`` are yielded but not entered."""
    stack = [""]
    while stack:
        here = stack.pop()
        try:
            with os.scandir(os.path.join(folder, here) if here else folder) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as e:
            problems.append(f"unreadable: {escape(here or '.')} ({e.strerror})")
            continue
        for e in entries:
            rel = f"{here}/{e.name}" if here else e.name
            try:
                mode = e.stat(follow_symlinks=False).st_mode
            except OSError as err:
                problems.append(f"unreadable: {escape(rel)} ({err.strerror})")
                continue
            yield rel, mode
            if stat.S_ISDIR(mode) and rel not in keep_out:
                stack.append(rel)


def _unlisted(folder: str, listed: set[str]) -> tuple[list[str], list[str]]:
    """Walk ``folder`` (symlinks not followed): (problems: symlinks, special files, unreadable folders; the relative
    paths of regular files not in the manifest).  A Hub copy's housekeeping (:mod:`.hub`) is not extra: the top-level
    ``.git`` folder is not entered, and huggingface_hub's metadata of published files is accepted."""
    problems: list[str] = []
    extra: list[str] = []
    published = listed | {MANIFEST}
    for rel, mode in walk(folder, problems, keep_out=frozenset(hub.HOUSEKEEPING["skipped_folders"])):
        if rel in listed:
            continue      # checked (and any symlink named) by check_entry
        if stat.S_ISLNK(mode):
            problems.append(f"symlink: {escape(rel)} (not in the manifest; not followed)")
        elif stat.S_ISDIR(mode):
            continue
        elif not stat.S_ISREG(mode):
            problems.append(f"not a regular file: {escape(rel)} (not in the manifest)")
        elif not is_unlisted(rel) and not hub.is_housekeeping(rel, published):
            extra.append(rel)
    return problems, extra


# Letters of other scripts drawn like a Latin letter (Cyrillic, Greek): the common look-alikes of file names.
CONFUSABLES = dict(zip("АВЕЅІЈКМНОРСТХУаеіјоѕрсхуһԁԛԝ" "ΑΒΕΖΗΙΚΜΝΟΡΤΥΧοικνρυχ",
                       "ABESIJKMHOPCTXYaeijospcxyhdqw" "ABEZHIKMNOPTYXoikvpux", strict=True))


def _norm_form(text: str) -> str:
    return next((f for f in ("NFC", "NFD") if unicodedata.normalize(f, text) == text), "mixed normalisation")


def _char(c: str) -> str:
    return f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed character')}"


def _code_points(listed: str, found: str) -> str:
    """Where two names of the same length differ: "at character K: U+.... NAME there, U+.... NAME in the manifest"."""
    diffs = [(i, x, y) for i, (x, y) in enumerate(zip(listed, found)) if x != y]
    shown = "; ".join(f"at character {i + 1}: {_char(y)} there, {_char(x)} in the manifest" for i, x, y in diffs[:3])
    return shown + ("; ..." if len(diffs) > 3 else "")


def lookalike(listed: str, found: str) -> str | None:
    """How ``found`` (a name in the folder) differs from ``listed`` (the manifest's) when the two look alike, else
    None: the same text in another Unicode normalisation (NFC/NFD), the same after compatibility normalisation (NFKC:
    full-width letters, ligatures), or letters of another script drawn the same (:data:`CONFUSABLES`)."""
    if listed == found:
        return None
    if unicodedata.normalize("NFC", listed) == unicodedata.normalize("NFC", found):
        return (f"the same text in another Unicode normalisation ({_norm_form(found)} there, {_norm_form(listed)} "
                "in the manifest)")
    same_length = len(listed) == len(found)
    if unicodedata.normalize("NFKC", listed) == unicodedata.normalize("NFKC", found):
        where = f": {_code_points(listed, found)}" if same_length else ""
        return f"the same text after compatibility normalisation (NFKC), other code points{where}"
    skeleton = lambda t: "".join(CONFUSABLES.get(c, c) for c in t)     # noqa: E731
    if same_length and skeleton(listed) == skeleton(found):
        return f"other code points that look alike ({_code_points(listed, found)})"
    return None


def _paired(missing: list[str], extra: list[str]) -> tuple[list[str], list[str]]:
    """Problem lines for files listed but missing and files there but unlisted; a missing and an extra name that
    look alike (:func:`lookalike`) are one line that says how they differ."""
    lines, left = [], list(extra)
    for rel in missing:
        match = next(((e, how) for e in left for how in [lookalike(rel, e)] if how), None)
        if match is None:
            lines.append(f"missing: {escape(rel)}")
            continue
        left.remove(match[0])
        lines.append(f"missing: {escape(rel)}; {escape(match[0])} is there instead: {match[1]}")
    return lines, [f"extra: {escape(e)} (not in the manifest)" for e in left]


def verify(folder: str) -> list[str]:
    """Problems, one line each (empty list = the folder matches its manifest exactly).  Every listed path is checked
    inside ``folder`` only (no symlink followed); every symlink, special file and unlisted file in it is named, and
    a missing file with a look-alike name there instead says how the names differ."""
    m = load(folder)
    problems, missing = [], []
    for f in m["files"]:
        p = check_entry(folder, f)
        if p == f"missing: {escape(f['path'])}":
            missing.append(f["path"])
        elif p:
            problems.append(p)
    walked, extra = _unlisted(folder, {f["path"] for f in m["files"]})
    return sorted(problems + walked + [line for part in _paired(missing, extra) for line in part])


def enclosing_release(path: str) -> str | None:
    """The nearest folder at or above ``path`` (symlinks resolved) holding a manifest.json that :func:`load` accepts:
    the release folder ``path`` is in, or None."""
    d = os.path.realpath(path)
    while True:
        if os.path.isfile(os.path.join(d, MANIFEST)):
            try:
                load(d)
                return d
            except EdgedepthError:
                pass
        if os.path.dirname(d) == d:
            return None
        d = os.path.dirname(d)


def _release_folder(path: str) -> str | None:
    """The release folder holding ``path``: beside the file, or one folder up (the onnx-community layout's onnx/)."""
    here = os.path.dirname(os.path.abspath(path))
    return next((d for d in (here, os.path.dirname(here)) if os.path.isfile(os.path.join(d, MANIFEST))), None)


def member_of_file(path: str) -> Member | None:
    """The family member a model file says it came from: its release manifest's ``model`` block, else its name."""
    folder = _release_folder(path)
    name = (load(folder).get("model") or {}).get("family_member") if folder else None
    return MEMBERS.get(name) if isinstance(name, str) and name else member_of_file_name(path)


def check_made_from(paths: list[str], member: Member | None, model: str) -> None:
    """One line when a file says it came from another family member than ``--model`` (validate would compare a metric
    file with a relative model, Large with Small, ...).  Files that say nothing (renamed, no manifest) pass."""
    for p in paths:
        said = member_of_file(p)
        if said and member and said.name != member.name:
            raise EdgedepthError(f"{os.path.basename(p)} was exported from {said.name} ({said.hub_id}) but --model "
                                 f"{model} is {member.name}: pass the checkpoint the file came from")


def verify_next_to(path: str) -> dict | None:
    """If ``path`` sits in a release folder (manifest beside it), check that file against it with :func:`verify`'s
    rules (inside the folder, no symlink, a regular file, same size and sha256); returns its entry."""
    folder = _release_folder(path)
    if folder is None:
        return None
    m = load(folder)
    rel = os.path.relpath(os.path.abspath(path), folder).replace(os.sep, "/")
    entry = next((f for f in m["files"] if f["path"] == rel), None)
    if entry is None:
        raise EdgedepthError(f"{rel!r} is not listed in {os.path.join(folder, MANIFEST)!r}")
    problem = check_entry(folder, entry)
    if problem and problem.startswith(("changed:", "truncated:")):
        raise EdgedepthError(f"{path!r} does not match its manifest (size or sha256 differs): refusing to use it")
    if problem:
        raise EdgedepthError(f"{path!r} fails its manifest check ({problem}): refusing to use it")
    return entry


def verify_files_next_to(paths: list[str]) -> list[str]:
    """:func:`verify_next_to` for each path (files inside a release folder must match it before they are used)."""
    for p in paths:
        verify_next_to(p)
    return paths
