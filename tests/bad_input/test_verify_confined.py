"""Issue 27 item 2: ``edgedepth verify`` (and predict/serve, which read manifests the same way) stays inside the release
folder: a well-formed manifest only (one line, exit 2 otherwise), no symlink followed, special files and symlinks
reported, printed paths escaped.  Release folders are built by hand (small files + manifest.write), no real release."""

from __future__ import annotations

import json
import os
import shutil
import types

import pytest

from conftest import assert_one_line_error, run_cli

PHOTO = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "vectors", "rgb_97x61.png")


def _release(folder) -> str:
    """A small valid release folder: model.tflite, onnx/model.onnx, README.md, LICENSE; returns its path."""
    from edgedepth.release import manifest as mf

    folder = str(folder)
    os.makedirs(os.path.join(folder, "onnx"))
    for rel, data in {"model.tflite": b"TFL3" * 64, "onnx/model.onnx": b"onnx" * 32, "README.md": b"# card\n",
                      "LICENSE": b"licence\n"}.items():
        with open(os.path.join(folder, rel), "wb") as f:
            f.write(data)
    entries = [mf.file_entry(folder, "model.tflite", format="tflite"), mf.file_entry(folder, "onnx/model.onnx",
               format="onnx"), mf.file_entry(folder, "README.md"), mf.file_entry(folder, "LICENSE")]
    mf.write(folder, {"name": "confined-test", "files": entries})
    return folder


@pytest.fixture()
def release(tmp_path):
    return _release(tmp_path / "rel")


def _manifest(folder) -> dict:
    with open(os.path.join(folder, "manifest.json"), encoding="utf-8") as f:
        return json.load(f)


def _raw_manifest(folder, m) -> None:
    """Write ``m`` as manifest.json as-is (bypassing manifest.write, which sorts a valid files list)."""
    with open(os.path.join(folder, "manifest.json"), "w", encoding="utf-8") as f:
        json.dump(m, f)


def _verify(capsys, folder):
    """``edgedepth verify FOLDER`` in this process (the CLI's own main: one line or not, exit code): a child per case
    would import torch each time."""
    from edgedepth.cli import main

    code = main(["verify", str(folder)])
    out = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


def _problems(r) -> list[str]:
    assert r.returncode == 1, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert all(l.startswith("edgedepth: verify: ") for l in lines) and "Traceback" not in r.stderr, r.stderr
    return [l[len("edgedepth: verify: "):] for l in lines]


def test_a_valid_release_still_verifies(release):
    """D3/D4: the confinement rules leave a clean release alone (a real `edgedepth verify` child: exit 0)."""
    r = run_cli("verify", release)
    assert r.returncode == 0 and "all 4 files match manifest.json" in r.stdout, r.stderr


def _outside_copy(tmp_path, release, rel="model.tflite") -> str:
    """A byte-identical copy of ``rel`` outside the release folder: its hash matches the manifest."""
    os.makedirs(tmp_path / "outside", exist_ok=True)
    dst = str(tmp_path / "outside" / os.path.basename(rel))
    shutil.copyfile(os.path.join(release, rel), dst)
    return dst


def test_absolute_and_escaping_paths_are_refused(capsys, tmp_path, release):
    """D3: an absolute path or ../outside/ with the right bytes and SHA-256 is a malformed manifest, not a match."""
    outside = _outside_copy(tmp_path, release)
    for path, words in ((outside, "absolute"), ("../outside/model.tflite", "normalised")):
        m = _manifest(release)
        m["files"][1]["path"] = path             # files sorted: LICENSE, README.md, model.tflite, onnx/model.onnx
        _raw_manifest(release, m)
        assert_one_line_error(_verify(capsys, release), "files[1]", words)


def test_verify_is_no_oracle_for_files_outside(capsys, release):
    """D3: huge ``bytes`` on a system path reveals neither its size ("truncated: ... (651 of ...)") nor its existence
    ("missing:"): the path is refused before any file is looked at."""
    for path in ("/etc/passwd", "/no/such/file", "../../../../etc/hostname"):
        m = _manifest(release)
        m["files"].append({"path": path, "bytes": 10 ** 12, "sha256": "0" * 64})
        _raw_manifest(release, m)
        r = _verify(capsys, release)
        assert_one_line_error(r, "files[4]")
        assert "truncated" not in r.stderr and "missing" not in r.stderr and "bytes)" not in r.stderr


@pytest.mark.parametrize("path", ["./model.tflite", "onnx/../model.tflite", "onnx//model.onnx", "onnx/", "",
                                  "onnx\\model.onnx", "model.tflite\x00", "/model.tflite", ".."])
def test_unnormalised_paths_are_refused(capsys, release, path):
    """D3: only relative, normalised POSIX paths (no '.', '..', empty component, backslash, NUL, leading /)."""
    m = _manifest(release)
    m["files"][2]["path"] = path
    _raw_manifest(release, m)
    r = _verify(capsys, release)
    assert_one_line_error(r, "files[2]", "path")
    assert "\x00" not in r.stderr


def test_symlinked_file_to_an_identical_copy_is_reported(capsys, tmp_path, release):
    """D4: a listed file replaced by a symlink to an identical copy outside fails ("symlink:"), never hashed."""
    target = _outside_copy(tmp_path, release)
    os.remove(os.path.join(release, "model.tflite"))
    os.symlink(target, os.path.join(release, "model.tflite"))
    assert _problems(_verify(capsys, release)) == ["symlink: model.tflite (not followed)"]


def test_symlinked_folder_with_an_extra_file_is_reported(capsys, tmp_path, release):
    """D4: onnx/ replaced by a symlinked folder (same model.onnx plus evil.sh): the folder symlink and the entry
    through it are named; nothing behind the link is hashed or listed."""
    moved = str(tmp_path / "elsewhere")
    shutil.move(os.path.join(release, "onnx"), moved)
    with open(os.path.join(moved, "evil.sh"), "w") as f:
        f.write("#!/bin/sh\n")
    os.symlink(moved, os.path.join(release, "onnx"))
    assert _problems(_verify(capsys, release)) == [
        "symlink: onnx (not in the manifest; not followed)",
        "symlink: onnx/model.onnx (onnx is a symlink; not followed)"]


def test_symlink_to_a_system_folder_and_special_files_are_reported(capsys, release):
    """D4: a symlink to a system folder inside the release, a FIFO listed as a model and an unlisted FIFO are each
    reported (and verify does not block opening a FIFO)."""
    os.symlink("/etc", os.path.join(release, "etc"))
    os.symlink("/nonexistent-target", os.path.join(release, "dangling"))
    os.remove(os.path.join(release, "model.tflite"))
    os.mkfifo(os.path.join(release, "model.tflite"))
    os.mkfifo(os.path.join(release, "onnx", "pipe"))
    assert _problems(_verify(capsys, release)) == [
        "not a regular file: model.tflite", "not a regular file: onnx/pipe (not in the manifest)",
        "symlink: dangling (not in the manifest; not followed)", "symlink: etc (not in the manifest; not followed)"]


def test_printed_paths_are_escaped(capsys, release):
    """D4: file names with control characters (ESC, newline) are printed escaped, one line each, in problems and in
    a manifest error."""
    with open(os.path.join(release, "evil\x1b[2J\nname.bin"), "w") as f:
        f.write("x")
    r = _verify(capsys, release)
    assert _problems(r) == ["extra: evil\\x1b[2J\\nname.bin (not in the manifest)"]
    assert "\x1b" not in r.stderr
    m = _manifest(release)
    m["files"][0]["path"] = "LICENSE\x1b]0;pwned\x07"
    _raw_manifest(release, m)
    r = _verify(capsys, release)
    assert_one_line_error(r, "files[0]", "\\x1b]0;pwned\\x07", "control")
    assert "\x1b" not in r.stderr and "\x07" not in r.stderr


def _entry(**fields) -> dict:
    return {"path": "model.tflite", "bytes": 256, "sha256": "a" * 64} | fields


@pytest.mark.parametrize("manifest,words", [
    ([], "not an edgedepth manifest"),
    ("files", "not an edgedepth manifest"),
    ({"files": []}, "not an edgedepth manifest"),
    ({"schema_version": True, "files": []}, "not an edgedepth manifest"),
    ({"schema_version": 1, "files": {}}, "not an edgedepth manifest"),
    ({"schema_version": 1, "files": ["model.tflite"]}, "files[0]: is a str"),
    ({"schema_version": 1, "files": [None]}, "files[0]: is a NoneType"),
    ({"schema_version": 1, "files": [{"path": "model.tflite", "sha256": "a" * 64}]}, "bytes is not"),
    ({"schema_version": 1, "files": [_entry(path=None)]}, "path is not a non-empty string"),
    ({"schema_version": 1, "files": [_entry(path=["model.tflite"])]}, "path is not a non-empty string"),
    ({"schema_version": 1, "files": [_entry(bytes="256")]}, "bytes is not"),
    ({"schema_version": 1, "files": [_entry(bytes=True)]}, "bytes is not"),
    ({"schema_version": 1, "files": [_entry(bytes=-1)]}, "bytes is not"),
    ({"schema_version": 1, "files": [_entry(bytes=2.5)]}, "bytes is not"),
    ({"schema_version": 1, "files": [_entry(sha256="A" * 64)]}, "sha256 is not"),
    ({"schema_version": 1, "files": [_entry(sha256=None)]}, "sha256 is not"),
    ({"schema_version": 1, "files": [_entry(), _entry()]}, "files[1] ('model.tflite'): path is listed twice"),
    ({"schema_version": 1, "files": [], "model": "metric"}, "model is not an object"),
])
def test_malformed_manifests_are_one_line(capsys, tmp_path, manifest, words):
    """D5: a manifest of the wrong shape (a list, entries without bytes, strings, null paths, string bytes, ...) is
    one line naming the entry and the problem, exit 2 (was "unexpected ...", exit 1)."""
    folder = tmp_path / "rel"
    folder.mkdir()
    _raw_manifest(folder, manifest)
    assert_one_line_error(_verify(capsys, folder), words)


@pytest.mark.parametrize("data,words", [
    (b'{"schema_version": 1, "files": [{"path": "caf\xe9.tflite"}]}', "not UTF-8 text (byte 0xe9"),
    (b'{"schema_version": 1, "files": [{"path": "model.tflite',
     "not valid JSON: Unterminated string starting at (line"),
    (b"[" * 100000, "not valid JSON"),
    (b'{"schema_version": 1, "files": [], "n": ' + b"9" * 5000 + b"}", "not valid JSON"),
])
def test_undecodable_manifests_are_one_line(capsys, tmp_path, data, words):
    """D5: a non-UTF-8 manifest, an unterminated string (worded without "at at"), nesting or a number too large for
    the parser: one line, exit 2."""
    folder = tmp_path / "rel"
    folder.mkdir()
    (folder / "manifest.json").write_bytes(data)
    r = _verify(capsys, folder)
    assert_one_line_error(r, words)
    assert "at at" not in r.stderr


def test_symlinked_or_special_manifest_is_refused(capsys, tmp_path, release):
    """D4: manifest.json itself must be a regular file in the folder (not a symlink to one elsewhere, not a FIFO)."""
    outside = _outside_copy(tmp_path, release, "manifest.json")
    os.remove(os.path.join(release, "manifest.json"))
    os.symlink(outside, os.path.join(release, "manifest.json"))
    assert_one_line_error(_verify(capsys, release), "is a symlink")
    os.remove(os.path.join(release, "manifest.json"))
    os.mkfifo(os.path.join(release, "manifest.json"))
    assert_one_line_error(_verify(capsys, release), "not a regular file")


def test_predict_and_serve_read_manifests_the_same_way(tmp_path, release):
    """D5: `predict` on a model in a release folder whose manifest is a JSON list, and `serve` on a non-UTF-8 manifest:
    one line, exit 2 (real CLI children)."""
    model = os.path.join(release, "model.tflite")
    _raw_manifest(release, [])
    assert_one_line_error(run_cli("predict", PHOTO, "--model", model, "-o", tmp_path / "o"),
                          "not an edgedepth manifest")
    (tmp_path / "rel" / "manifest.json").write_bytes(b'{"schema_version": 1, "files": ["\xff"]}')
    assert_one_line_error(run_cli("serve", release, "--port", "0", timeout=300), "not UTF-8")


def test_predict_refuses_a_symlinked_release_file(capsys, tmp_path, release):
    """D4: a model file in a release folder reached through a symlink (identical bytes) is refused by predict's
    manifest check, like verify; a malformed ``model`` block is one line too."""
    from edgedepth.cli import main

    target = _outside_copy(tmp_path, release)
    os.remove(os.path.join(release, "model.tflite"))
    os.symlink(target, os.path.join(release, "model.tflite"))
    code = main(["predict", PHOTO, "--model", os.path.join(release, "model.tflite"), "-o", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert_one_line_error(types.SimpleNamespace(returncode=code, stderr=err), "symlink: model.tflite",
                          "refusing to use it")


def _remove_deep(top: str) -> None:
    """Remove a deep chain of folders bottom-up without recursion (shutil.rmtree recurses once per level)."""
    chain = [top]
    while True:
        subs = [e.path for e in os.scandir(chain[-1]) if e.is_dir(follow_symlinks=False)]
        if not subs:
            break
        chain.append(subs[0])
    for d in reversed(chain):
        for e in os.scandir(d):
            if not e.is_dir(follow_symlinks=False):
                os.remove(e.path)
        os.rmdir(d)


def test_a_deeply_nested_folder_is_walked(release):
    """Folders nested 1200 deep in a release (deeper than Python's recursion limit): verify walks them all and names
    the stray file at the bottom and the FIFO half way, one line each, exit 1 (a real child; was "unexpected
    RecursionError")."""
    deep = release
    try:
        for _ in range(1200):       # os.makedirs recurses once per level too
            deep = os.path.join(deep, "d")
            os.mkdir(deep)
        with open(os.path.join(deep, "stray.bin"), "wb") as f:
            f.write(b"x")
        os.mkfifo(os.path.join(release, *["d"] * 600, "pipe"))
        r = run_cli("verify", release, timeout=300)
        assert "unexpected" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert _problems(r) == ["extra: " + "d/" * 1200 + "stray.bin (not in the manifest)",
                                "not a regular file: " + "d/" * 600 + "pipe (not in the manifest)"]
        from edgedepth.errors import EdgedepthError
        from edgedepth.release.outdir import check_out_dir

        with pytest.raises(EdgedepthError, match="not an edgedepth release"):    # release --out walks it too
            check_out_dir(release)
    finally:
        _remove_deep(os.path.join(release, "d"))


def test_look_alike_names_say_how_they_differ(capsys, release):
    """A listed file renamed to a look-alike (NFD for NFC "é", Cyrillic "Е" for Latin "E") is one line saying which
    name is there instead and how it differs, not an "extra" and a "missing" line that print the same; unrelated
    missing and extra files stay separate lines."""
    import unicodedata

    from edgedepth.release import manifest as mf

    nfc, latin = "caf\u00e9.txt", "MODEL.bin"
    for name in (nfc, latin, "gone.txt"):
        with open(os.path.join(release, name), "wb") as f:
            f.write(name.encode())
    m = _manifest(release)
    m["files"] += [mf.file_entry(release, n) for n in (nfc, latin, "gone.txt")]
    mf.write(release, {k: v for k, v in m.items() if k != "schema_version"})
    assert _verify(capsys, release).returncode == 0
    os.rename(os.path.join(release, nfc), os.path.join(release, unicodedata.normalize("NFD", nfc)))
    os.rename(os.path.join(release, latin), os.path.join(release, "MOD\u0415L.bin"))
    os.rename(os.path.join(release, "gone.txt"), os.path.join(release, "other.txt"))
    assert _problems(_verify(capsys, release)) == [
        "extra: other.txt (not in the manifest)",
        "missing: MODEL.bin; MOD\u0415L.bin is there instead: other code points that look alike (at character 4: "
        "U+0415 CYRILLIC CAPITAL LETTER IE there, U+0045 LATIN CAPITAL LETTER E in the manifest)",
        "missing: caf\u00e9.txt; cafe\u0301.txt is there instead: the same text in another Unicode normalisation (NFD "
        "there, NFC in the manifest)",
        "missing: gone.txt"]


@pytest.mark.parametrize("listed,found,words", [
    ("caf\u00e9", "cafe\u0301", "another Unicode normalisation (NFD there, NFC in the manifest)"),
    ("\uff4dodel", "model", "compatibility normalisation (NFKC), other code points: at character 1: U+006D LATIN "
                            "SMALL LETTER M there, U+FF4D FULLWIDTH LATIN SMALL LETTER M in the manifest"),
    ("p\u03bfrt", "port", "at character 2: U+006F LATIN SMALL LETTER O there, U+03BF GREEK SMALL LETTER OMICRON"),
    ("model", "modal", None), ("a.txt", "a.txt", None), ("EE", "E", None)])
def test_lookalike(listed, found, words):
    from edgedepth.release.manifest import lookalike

    how = lookalike(listed, found)
    assert (how is None) if words is None else (words in how), how
