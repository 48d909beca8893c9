"""The Hugging Face Hub round trip (edgedepth.release.hub, .publish): a release folder, a Hub copy of it and
``edgedepth publish``, checked against the real clients' own code -- git with git-lfs, huggingface_hub's local-dir
metadata writers (``huggingface_hub._local_folder``) and its ``filter_repo_objects`` -- not against our idea of them.

1. The release's ``.gitattributes`` is listed in manifest.json and routes every binary file of the release, and no
   text file, to Git LFS (``git lfs ls-files`` in a real repository made of a copy).
2. verify accepts a clone's ``.git/`` and huggingface_hub's ``.cache/huggingface/`` metadata of published files, and
   still reports anything else (an extra model file, an unknown file under .cache, metadata of an unlisted path).
3. ``publish --dry-run`` prints exactly the manifest's files and manifest.json with their Hub addresses; a tampered
   folder, a bad repository id and a missing token are refused before any upload (``HfApi.upload_folder`` patched to
   fail the test if called); with a token, ``upload_folder`` gets exactly those paths as ``allow_patterns``; an
   unreachable Hub is one line.

The real upload to huggingface.co is not tested: the test machine has no network and no Hub account (the upload call
itself is huggingface_hub's; its arguments are checked here).  git and git-lfs come from ``make setup``
(APT_PACKAGES); a missing one fails the test with a message, it is not skipped.  Every test works on a copy of the
session's ``tiny_release`` (shutil.copytree), never on the fixture itself.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from conftest import assert_one_line_error

REPO = "edgedepth-tests/tiny-depth"
FAKE_COMMIT = "0" * 40


# ----------------------------------------------------------------------------------------------------------- helpers

def _copy(tiny_release, tmp_path, name="copy") -> str:
    dst = tmp_path / name
    shutil.copytree(tiny_release, dst, symlinks=True)
    return str(dst)


def _manifest(folder) -> dict:
    from edgedepth.release import manifest as mf

    return mf.load(str(folder))


def _listed(folder) -> list[str]:
    return sorted(f["path"] for f in _manifest(folder)["files"])


def _cli(capsys, *args):
    """``edgedepth ARGS`` in this process (its own main): exit code, stdout, stderr."""
    from edgedepth.cli import main

    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return types.SimpleNamespace(returncode=code, stdout=out.out, stderr=out.err)


def _verify_ok(capsys, folder) -> None:
    r = _cli(capsys, "verify", folder)
    n = len(_manifest(folder)["files"])
    assert r.returncode == 0 and f"all {n} files match manifest.json" in r.stdout, r.stderr


def _verify_problems(capsys, folder) -> list[str]:
    r = _cli(capsys, "verify", folder)
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert lines and all(l.startswith("edgedepth: verify: ") for l in lines), r.stderr
    return [l[len("edgedepth: verify: "):] for l in lines]


def _is_binary(path: str) -> bool:
    """A file git would not diff as text: a NUL byte, or not UTF-8."""
    data = Path(path).read_bytes()
    if b"\0" in data:
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return True
    return False


GIT_ENV = {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"}
LFS_CONFIG = ("filter.lfs.smudge=git-lfs smudge -- %f", "filter.lfs.process=git-lfs filter-process",
              "filter.lfs.required=true", "filter.lfs.clean=git-lfs clean -- %f")


def _git(cwd, *args) -> str:
    """git ARGS in ``cwd``, hermetic (no user or system config); its stdout.  A missing git/git-lfs fails the test."""
    for tool in ("git", "git-lfs"):
        assert shutil.which(tool), f"{tool} is not installed (apt-get install {tool}; `make setup` installs it)"
    r = subprocess.run(["git", "-c", "user.name=edgedepth tests", "-c", "user.email=tests@edgedepth.invalid",
                        "-c", "init.defaultBranch=main", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=300, env={**os.environ, **GIT_ENV})
    assert r.returncode == 0, f"git {' '.join(args)}: {r.stderr[-2000:]}"
    return r.stdout


def _git_repo(folder) -> None:
    """``folder`` made a git repository with git-lfs (``git lfs install --local``), everything added."""
    _git(folder, "init", "-q")
    _git(folder, "lfs", "install", "--local")
    _git(folder, "add", "-A")


# ------------------------------------------------------------------------------------------------ 1 .gitattributes

def test_gitattributes_is_listed_and_routes_model_files_to_lfs(capsys, tiny_release):
    """.gitattributes is one of the manifest's files (verify checks its bytes), one sorted LFS line per format."""
    from edgedepth import formats
    from edgedepth.release import hub

    entry = next((f for f in _manifest(tiny_release)["files"] if f["path"] == ".gitattributes"), None)
    assert entry is not None, _listed(tiny_release)
    text = Path(tiny_release, ".gitattributes").read_text(encoding="utf-8")
    assert text == hub.gitattributes_text()
    lines = text.splitlines()
    assert lines == sorted(lines) and text.endswith("\n")
    assert lines == sorted(f"*{f.suffix} filter=lfs diff=lfs merge=lfs -text" for f in formats.FORMATS), text
    _verify_ok(capsys, tiny_release)


def test_gitattributes_bytes_are_verified(capsys, tmp_path, tiny_release):
    """A Hub copy carries our .gitattributes: the Hub's default one (other bytes) in its place is reported."""
    copy = _copy(tiny_release, tmp_path)
    with open(os.path.join(copy, ".gitattributes"), "a", encoding="utf-8") as f:
        f.write("*.bin filter=lfs diff=lfs merge=lfs -text\n")
    assert any(p.startswith("changed: .gitattributes") for p in _verify_problems(capsys, copy))


def test_git_lfs_tracks_every_binary_file_and_no_text_file(tmp_path, tiny_release):
    """With real git + git-lfs: ``git lfs ls-files -n`` after ``git add -A`` lists exactly the release's binary files
    (every model file, by content: NUL bytes or not UTF-8), and no text file."""
    copy = _copy(tiny_release, tmp_path)
    _git_repo(copy)
    in_lfs = set(_git(copy, "lfs", "ls-files", "-n").splitlines())
    files = _listed(copy) + ["manifest.json", "build-report.json"]
    binary = {p for p in files if _is_binary(os.path.join(copy, p))}
    from edgedepth import formats

    models = {f["path"] for f in _manifest(copy)["files"] if formats.entry_format(f) is not None}
    assert models and models <= binary, (models, binary)
    assert {os.path.splitext(p)[1] for p in models} == {f.suffix for f in formats.FORMATS}, models
    assert in_lfs == binary, f"in LFS: {sorted(in_lfs)}; binary: {sorted(binary)}"


# ------------------------------------------------------------------------------------------------------ 2 a clone

def test_a_git_clone_of_the_release_verifies(capsys, tmp_path, tiny_release):
    """A committed copy and a real ``git clone`` of it (LFS files smudged back) verify: .git/ is skipped whole, also
    with a model-named file inside it; an extra file beside it is still reported."""
    repo = _copy(tiny_release, tmp_path, "repo")
    _git_repo(repo)
    _git(repo, "commit", "-q", "-m", "release")
    _verify_ok(capsys, repo)
    clone = str(tmp_path / "clone")
    _git(tmp_path, "clone", "-q", *(x for c in LFS_CONFIG for x in ("--config", c)), repo, clone)
    assert os.path.isdir(os.path.join(clone, ".git"))
    _verify_ok(capsys, clone)
    model = next(p for p in _listed(clone) if _is_binary(os.path.join(clone, p)))
    shutil.copyfile(os.path.join(clone, model), os.path.join(clone, ".git", os.path.basename(model)))
    _verify_ok(capsys, clone)
    shutil.copyfile(os.path.join(clone, model), os.path.join(clone, "extra_" + os.path.basename(model)))
    assert _verify_problems(capsys, clone) == [f"extra: extra_{os.path.basename(model)} (not in the manifest)"]


def test_only_a_real_top_level_git_folder_is_skipped(capsys, tmp_path, tiny_release):
    """A .git symlink is reported (not followed), a .git file is extra, a .git folder deeper down is entered."""
    copy = _copy(tiny_release, tmp_path)
    os.makedirs(tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", os.path.join(copy, ".git"))
    assert _verify_problems(capsys, copy) == ["symlink: .git (not in the manifest; not followed)"]
    os.remove(os.path.join(copy, ".git"))
    Path(copy, ".git").write_text("gitdir: ../elsewhere\n")
    assert _verify_problems(capsys, copy) == ["extra: .git (not in the manifest)"]
    os.remove(os.path.join(copy, ".git"))
    os.makedirs(os.path.join(copy, "onnx", ".git"))
    Path(copy, "onnx", ".git", "HEAD").write_text("ref: refs/heads/main\n")
    assert _verify_problems(capsys, copy) == ["extra: onnx/.git/HEAD (not in the manifest)"]


# ------------------------------------------------------------------------------ 2 huggingface_hub's local-dir copy

def _hf_local_dir(folder, paths) -> None:
    """huggingface_hub's own local-dir metadata for ``paths``, as ``snapshot_download(local_dir=...)`` and
    ``upload_large_folder`` leave it (``_local_folder``'s writers; no network)."""
    from huggingface_hub import _local_folder as lf

    for p in paths:
        lf.write_download_metadata(Path(folder), p, commit_hash=FAKE_COMMIT, etag="1" * 64)
        lf.LocalUploadFileMetadata(size=os.path.getsize(os.path.join(folder, p))).save(
            lf.get_local_upload_paths(Path(folder), p))


def test_a_huggingface_hub_local_dir_copy_verifies(capsys, tmp_path, tiny_release):
    """The .cache/huggingface/ metadata huggingface_hub writes for every published file (the manifest's paths and
    manifest.json) is accepted, whatever its own layout holds (.gitignore, CACHEDIR.TAG, .metadata, .lock)."""
    from huggingface_hub import _local_folder as lf

    copy = _copy(tiny_release, tmp_path)
    published = _listed(copy) + ["manifest.json"]
    _hf_local_dir(copy, published)
    cache = Path(copy, ".cache", "huggingface")
    made = {str(p.relative_to(copy)) for p in cache.rglob("*") if p.is_file()}
    assert f".cache/huggingface/download/{published[-1]}.metadata" in made and ".cache/huggingface/.gitignore" in made
    assert lf.read_download_metadata(Path(copy), published[0]) is not None     # huggingface_hub reads it back
    _verify_ok(capsys, copy)


@pytest.mark.parametrize("case", ["model file beside", "model file under .cache", "unknown file under .cache",
                                  "metadata of an unlisted path", "partial download", "build report metadata"])
def test_anything_else_in_a_hub_copy_is_reported(capsys, tmp_path, tiny_release, case):
    """Only the local-dir layout's files for published paths are accepted: an extra model file anywhere, an unknown
    file under .cache/huggingface/, and a .metadata (with its .lock) of an unlisted path are extra, exit 1."""
    from huggingface_hub import _local_folder as lf

    copy = _copy(tiny_release, tmp_path)
    _hf_local_dir(copy, _listed(copy) + ["manifest.json"])
    model = next(p for p in _listed(copy) if _is_binary(os.path.join(copy, p)))
    dl = ".cache/huggingface/download"
    if case == "model file beside":
        shutil.copyfile(os.path.join(copy, model), os.path.join(copy, "copy_" + os.path.basename(model)))
        expected = ["copy_" + os.path.basename(model)]
    elif case == "model file under .cache":
        shutil.copyfile(os.path.join(copy, model), os.path.join(copy, dl, os.path.basename(model)))
        expected = [f"{dl}/{os.path.basename(model)}"]
    elif case == "unknown file under .cache":
        Path(copy, ".cache", "huggingface", "notes.txt").write_text("hello\n")
        expected = [".cache/huggingface/notes.txt"]
    elif case == "metadata of an unlisted path":
        lf.write_download_metadata(Path(copy), "other_model.tflite", commit_hash=FAKE_COMMIT, etag="2" * 64)
        expected = [f"{dl}/other_model.tflite.lock", f"{dl}/other_model.tflite.metadata"]
    elif case == "partial download":
        paths = lf.get_local_download_paths(Path(copy), model)
        shutil.copyfile(os.path.join(copy, model), paths.incomplete_path("3" * 64))
        expected = [str(paths.incomplete_path("3" * 64).relative_to(copy))]
    else:       # build-report.json is never published: its metadata is not a published file's
        lf.write_download_metadata(Path(copy), "build-report.json", commit_hash=FAKE_COMMIT, etag="4" * 40)
        expected = [f"{dl}/build-report.json.lock", f"{dl}/build-report.json.metadata"]
    assert _verify_problems(capsys, copy) == [f"extra: {p} (not in the manifest)" for p in expected]


# ---------------------------------------------------------------------------------------------------- 3 publish

@pytest.fixture()
def no_upload(monkeypatch):
    """HfApi's write calls fail the test if called; the token is a dummy (never sent anywhere)."""
    import huggingface_hub

    def fail(*a, **kw):
        pytest.fail("publish called the Hub although it should have refused first")

    for name in ("upload_folder", "create_repo", "repo_info"):
        monkeypatch.setattr(huggingface_hub.HfApi, name, fail)
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_dummy_token_for_tests")


def _plan_lines(stdout: str) -> dict[str, tuple[int, str]]:
    """``  PATH  N bytes  -> URL`` lines of publish's output: {path: (bytes, url)}."""
    rows = {}
    for line in stdout.splitlines():
        if line.startswith("  "):
            path, size, url = line.strip().split("  ")
            assert size.endswith(" bytes") and url.startswith("-> "), line
            rows[path] = (int(size[:-len(" bytes")]), url[len("-> "):])
    return rows


@pytest.mark.parametrize("revision", [None, "dev"])
def test_publish_dry_run_prints_exactly_the_published_files(capsys, tmp_path, tiny_release, no_upload, revision):
    """--dry-run: every listed file and manifest.json (not build-report.json, not housekeeping), its size and its
    address https://huggingface.co/REPO/blob/BRANCH/PATH; nothing uploaded, no token needed, exit 0."""
    from huggingface_hub import constants

    copy = _copy(tiny_release, tmp_path)
    _hf_local_dir(copy, ["manifest.json"])                  # housekeeping is never published
    r = _cli(capsys, "publish", copy, REPO, "--dry-run", *(["--revision", revision] if revision else []))
    assert r.returncode == 0, r.stderr
    rows = _plan_lines(r.stdout)
    assert sorted(rows) == sorted(_listed(copy) + ["manifest.json"]) and "build-report.json" not in rows
    endpoint = constants.ENDPOINT
    assert endpoint == "https://huggingface.co" or os.environ.get("HF_ENDPOINT"), endpoint
    for path, (size, url) in rows.items():
        assert size == os.path.getsize(os.path.join(copy, path)), path
        assert url == f"{endpoint}/{REPO}/blob/{revision or 'main'}/{path}", url
    assert r.stdout.splitlines()[-1] == "dry run: nothing uploaded"
    assert f"would publish {len(rows)} files" in r.stdout.splitlines()[0]


@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("tamper", ["changed", "extra", "missing"])
def test_publish_refuses_a_folder_that_does_not_verify(capsys, tmp_path, tiny_release, no_upload, tamper, dry_run):
    """A changed, extra or missing file: one line, exit 1 (as verify), before any call to the Hub."""
    copy = _copy(tiny_release, tmp_path)
    model = next(p for p in _listed(copy) if _is_binary(os.path.join(copy, p)))
    if tamper == "changed":
        with open(os.path.join(copy, model), "r+b") as f:
            f.seek(100)
            b = f.read(1)
            f.seek(100)
            f.write(bytes([b[0] ^ 1]))
    elif tamper == "extra":
        shutil.copyfile(os.path.join(copy, model), os.path.join(copy, "x_" + os.path.basename(model)))
    else:
        os.remove(os.path.join(copy, model))
    r = _cli(capsys, "publish", copy, REPO, "--create", *(["--dry-run"] if dry_run else []))
    assert_one_line_error(r, "does not match its manifest", f"{tamper}: ", "not published", code=1)
    assert r.stdout == ""


def test_publish_refuses_a_folder_without_a_manifest(capsys, tmp_path, no_upload):
    os.makedirs(tmp_path / "empty")
    assert_one_line_error(_cli(capsys, "publish", tmp_path / "empty", REPO), "has no manifest.json")


@pytest.mark.parametrize("repo_id", ["not a repo", "a/b/c", "user/bad--name", "user/name.git", "user/name-", "noowner",
                                     "user/\x1b[31mred"])
def test_publish_refuses_a_bad_repo_id(capsys, tiny_release, no_upload, repo_id):
    """huggingface_hub's validate_repo_id, and an owner required: one line, exit 2, also for a dry run."""
    for extra in ((), ("--dry-run",)):
        r = _cli(capsys, "publish", tiny_release, repo_id, *extra)
        assert_one_line_error(r, "repository id")
        assert "\x1b" not in r.stderr


def test_publish_without_a_token_uploads_nothing(capsys, tiny_release, no_upload, monkeypatch):
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    assert_one_line_error(_cli(capsys, "publish", tiny_release, REPO), "no Hugging Face token", "HF_TOKEN")


def test_publish_uploads_exactly_the_manifest_files(capsys, tmp_path, tiny_release, no_upload, monkeypatch):
    """With a token: upload_folder(repo_id, folder_path, repo_type="model", allow_patterns=[the published paths]);
    huggingface_hub's own filter_repo_objects picks exactly those from everything in the folder (build-report.json,
    .git/, .cache/huggingface/ left out).  --create: create_repo(exist_ok=True) first."""
    import huggingface_hub
    from huggingface_hub.utils import filter_repo_objects

    copy = _copy(tiny_release, tmp_path)
    _hf_local_dir(copy, ["manifest.json"])
    calls = []
    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda self, repo_id, **kw: calls.append(
        ("create_repo", repo_id, kw)))
    monkeypatch.setattr(huggingface_hub.HfApi, "upload_folder", lambda self, **kw: calls.append(
        ("upload_folder", kw)) or types.SimpleNamespace(commit_url=f"https://huggingface.co/{REPO}/commit/abc"))
    r = _cli(capsys, "publish", copy, REPO, "--create")
    assert r.returncode == 0, r.stderr
    assert calls[0] == ("create_repo", REPO, {"repo_type": "model", "private": False, "exist_ok": True})
    kw = calls[1][1]
    published = sorted(_listed(copy) + ["manifest.json"])
    assert (kw["repo_id"], kw["folder_path"], kw["repo_type"], kw["revision"]) == (REPO, copy, "model", "main")
    assert sorted(kw["allow_patterns"]) == published and kw["commit_message"].startswith("edgedepth publish: ")
    everything = [str(p.relative_to(copy)) for p in Path(copy).rglob("*") if p.is_file()]
    assert sorted(filter_repo_objects(everything, allow_patterns=kw["allow_patterns"])) == published
    assert r.stdout.splitlines()[-1] == f"commit: https://huggingface.co/{REPO}/commit/abc"


def test_publish_private_refuses_an_existing_public_repo(capsys, tiny_release, no_upload, monkeypatch):
    """--private on a repository that exists and is public: create_repo(exist_ok) leaves it public, so nothing goes."""
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.HfApi, "create_repo", lambda self, repo_id, **kw: None)
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", lambda self, repo_id, **kw: types.SimpleNamespace(
        private=False))
    assert_one_line_error(_cli(capsys, "publish", tiny_release, REPO, "--private"), "exists and is public",
                          "nothing uploaded")


def test_publish_to_an_unreachable_hub_is_one_line(tiny_release):
    """The real huggingface_hub client against an endpoint where nothing listens (HF_ENDPOINT, a closed local port;
    no outside network): one line naming the problem, exit 2."""
    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9", "HF_TOKEN": "hf_dummy_token_for_tests",
           "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_ETAG_TIMEOUT": "5", "HF_HUB_DOWNLOAD_TIMEOUT": "5"}
    r = subprocess.run([sys.executable, "-m", "edgedepth", "publish", str(tiny_release), REPO], capture_output=True,
                       text=True, timeout=300, env=env)
    assert_one_line_error(r, "cannot reach the Hub at http://127.0.0.1:9")
