"""``edgedepth publish``: a verified release folder to a Hugging Face Hub model repository, in one commit.

What goes up is what the manifest vouches for and nothing else: its listed files (``.gitattributes`` among them:
model files go to Git LFS, :mod:`.hub`) and manifest.json itself -- never build-report.json (this machine's
measurements) nor any unlisted file -- by ``HfApi.upload_folder`` with ``allow_patterns`` naming exactly those paths.

1. The repository id is checked by huggingface_hub's own ``validate_repo_id`` and must name its owner
   (``NAMESPACE/NAME``); 2. the folder must verify (:func:`.manifest.verify`: a changed, missing or extra file refuses
   before anything is sent); 3. the plan -- each file, its size, its address on the Hub -- is all a dry run does (no
   token, no network); 4. with a token, the repository is created if asked (``create_repo(exist_ok=True)``) and the
   files are uploaded.

A clone or ``snapshot_download(local_dir=...)`` of the result verifies like the folder (:mod:`.hub`).  upload_folder
adds and replaces; it deletes nothing: a file an earlier publish left in the repository under another name stays
there, and a copy of the repository reports it as extra.  huggingface_hub is imported only when publishing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import glob
import hashlib
import os
from urllib.parse import quote

from ..errors import EdgedepthError
from . import manifest as mf

REPO_TYPE = "model"
DEFAULT_REVISION = "main"


class NotVerified(EdgedepthError):
    """The folder does not match its manifest: refused like ``verify`` refuses it (exit 1)."""

    exit_code = 1


@dataclasses.dataclass(frozen=True)
class Upload:
    """One file of the plan: its path in the folder and in the repository (the same), its size, its Hub address."""

    path: str
    bytes: int
    url: str


def check_repo_id(repo_id: str) -> str:
    """``repo_id`` if huggingface_hub's ``validate_repo_id`` accepts it and it names its owner (``NAMESPACE/NAME``),
    else one EdgedepthError line."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as e:
        raise EdgedepthError(f"repository id {repo_id!r} is not valid: {mf.escape(' '.join(str(e).split()))}") \
            from None
    if "/" not in repo_id:
        raise EdgedepthError(f"repository id {repo_id!r} names no owner: write it NAMESPACE/NAME (a user or an "
                             "organisation, then the model's name)")
    return repo_id


def repo_url(repo_id: str) -> str:
    """The repository's page, ``https://huggingface.co/REPO_ID`` (huggingface_hub's endpoint: HF_ENDPOINT if set)."""
    from huggingface_hub import constants

    return f"{constants.ENDPOINT}/{repo_id}"


def published_paths(manifest: dict) -> list[str]:
    """What a publish uploads: every path the manifest lists, and manifest.json; sorted."""
    return sorted({f["path"] for f in manifest["files"]} | {mf.MANIFEST})


def plan(folder: str, repo_id: str, revision: str = DEFAULT_REVISION) -> list[Upload]:
    """The files a publish of ``folder`` to ``repo_id`` sends, after the folder verified (else :class:`NotVerified`,
    or the manifest's own EdgedepthError); each with its size and its address on the Hub."""
    check_repo_id(repo_id)
    problems = mf.verify(folder)
    if problems:
        more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
        raise NotVerified(f"{folder!r} does not match its manifest ({problems[0]}{more}): not published; "
                          "`edgedepth verify` lists every problem")
    base = f"{repo_url(repo_id)}/blob/{quote(revision, safe='')}"
    return [Upload(p, os.path.getsize(os.path.join(folder, p)), f"{base}/{quote(p)}")
            for p in published_paths(mf.load(folder))]


def commit_message(folder: str) -> str:
    """The commit's message: the release's name and the SHA-256 of the manifest that vouches for every file."""
    with open(os.path.join(folder, mf.MANIFEST), "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    return f"edgedepth publish: {mf.load(folder).get('name') or 'release'} (manifest.json sha256 {digest[:16]})"


def publish(folder: str, repo_id: str, *, revision: str = DEFAULT_REVISION, create: bool = False,
            private: bool = False) -> tuple[list[Upload], str]:
    """Upload the :func:`plan` of ``folder`` to ``repo_id`` (created first when ``create`` or ``private``; a private
    one then: :func:`_create`); returns (the plan, the commit's URL).  A missing or refused token, an unknown
    repository or branch, and an unreachable Hub are one EdgedepthError line each."""
    from huggingface_hub import HfApi, get_token

    files = plan(folder, repo_id, revision)
    if not get_token():
        raise EdgedepthError("no Hugging Face token: log in with `hf auth login`, or set HF_TOKEN to a token that may "
                             f"write to {repo_id}")
    api = HfApi()
    with _hub_errors(repo_id, revision):
        if create or private:
            _create(api, repo_id, private)
        info = api.upload_folder(repo_id=repo_id, folder_path=folder, repo_type=REPO_TYPE, revision=revision,
                                 allow_patterns=[glob.escape(u.path) for u in files],
                                 commit_message=commit_message(folder))
    return files, getattr(info, "commit_url", None) or repo_url(repo_id)


def _create(api, repo_id: str, private: bool) -> None:
    """``create_repo(exist_ok=True)``; a repository that exists keeps its visibility, so a public one is refused
    when ``private`` was asked for (nothing is uploaded)."""
    api.create_repo(repo_id, repo_type=REPO_TYPE, private=private, exist_ok=True)
    if private and not api.repo_info(repo_id, repo_type=REPO_TYPE).private:
        raise EdgedepthError(f"model repository {repo_id} exists and is public, but a private one was asked for: "
                             "nothing uploaded (make it private on the Hub, or publish without private)")


@contextlib.contextmanager
def _hub_errors(repo_id: str, revision: str):
    """huggingface_hub's errors as one EdgedepthError line naming the problem (exit 2: the token, the repository id,
    the branch or the network is the user's to fix); anything else passes unchanged."""
    try:
        yield
    except EdgedepthError:
        raise
    except Exception as e:
        line = _hub_problem(e, repo_id, revision)
        if line is None:
            raise
        raise EdgedepthError(line) from None


def _hub_problem(e: Exception, repo_id: str, revision: str) -> str | None:
    """One line for an error of huggingface_hub or of its HTTP client, else None (an unexpected failure)."""
    from huggingface_hub import constants, errors

    text = mf.escape(" ".join(str(e).split())[:300])
    if isinstance(e, errors.RevisionNotFoundError):
        return f"branch {revision!r} not found in {repo_id} (create it on the Hub first): {text}"
    if isinstance(e, errors.RepositoryNotFoundError):
        return (f"model repository {repo_id} not found, or this token cannot see it: create it on the Hub, or let "
                f"publish create it ({text})")
    if isinstance(e, errors.HfHubHTTPError):
        status = getattr(getattr(e, "response", None), "status_code", None)
        if status in (401, 403):
            return f"the Hub refused this token for {repo_id} (HTTP {status}; does it have write access?): {text}"
        return f"upload to {repo_id} failed: {text}"
    if isinstance(e, errors.OfflineModeIsEnabled):
        return f"cannot publish while HF_HUB_OFFLINE is set: {text}"
    if isinstance(e, (OSError, getattr(errors, "HTTPError", OSError))):
        return f"cannot reach the Hub at {constants.ENDPOINT}: {type(e).__name__}: {text}"
    return None
