"""The Hugging Face Hub round trip: what a release folder carries for the Hub, and what a Hub copy of it may add.

A release goes to the Hub as a model repository (``edgedepth publish``: :mod:`.publish`) and comes back as a folder:
``git clone`` of the repository (with git-lfs), or ``huggingface_hub.snapshot_download(local_dir=...)``.  Two rules
make that copy verify like the folder that was built:

1. **The release writes ``.gitattributes``** (:func:`gitattributes_text`), listed in manifest.json like the card, so
   ``verify`` checks its bytes and a Hub copy made by ``publish`` carries these very bytes.  It routes every model
   file type to Git LFS, one line per :class:`~edgedepth.formats.base.Format`'s ``suffix`` (the only binary files a
   release writes; its other files are text), sorted: ``*.tflite filter=lfs diff=lfs merge=lfs -text``.

2. **verify accepts exactly the housekeeping of those two clients** (:data:`HOUSEKEEPING`, :func:`is_housekeeping`)
   and reports anything else unlisted as before:

   - ``.git/`` at the top of the folder, only a real folder (not a symlink, not a ``.git`` file): a clone's
     repository.  Skipped whole: never entered, followed or hashed.  A ``.git`` anywhere deeper is not skipped.
   - ``.cache/huggingface/`` at the top of the folder, as ``huggingface_hub._local_folder`` lays it out for a
     local-dir download or upload: its ``.gitignore``, ``.gitignore.lock`` and ``CACHEDIR.TAG``, and
     ``download/P.metadata``, ``download/P.lock``, ``upload/P.metadata``, ``upload/P.lock`` only for a path ``P`` the
     folder publishes (a path the manifest lists, or manifest.json itself).  A ``.metadata`` or ``.lock`` of any other
     path, a ``.incomplete`` partial download, or any other file there is reported as extra.

   Nothing else: an unlisted model file (or any unlisted file) anywhere outside ``.git/`` is extra, under
   ``.cache/huggingface/`` included.  Symlinks and special files are reported wherever they are, as before.
"""

from __future__ import annotations

import os

from .. import formats
from ..fsutil import write_bytes_atomic

GITATTRIBUTES = ".gitattributes"
LFS_ATTRIBUTES = "filter=lfs diff=lfs merge=lfs -text"      # what `git lfs track` writes, and the Hub's own file

GIT_DIR = ".git"                    # a clone's repository folder (top level, a real folder): skipped whole
HF_LOCAL_DIR = ".cache/huggingface"  # huggingface_hub's local-dir metadata folder (top level)
HOUSEKEEPING = {
    "skipped_folders": (GIT_DIR,),
    "files": tuple(f"{HF_LOCAL_DIR}/{n}" for n in (".gitignore", ".gitignore.lock", "CACHEDIR.TAG")),
    # f"{HF_LOCAL_DIR}/{kind}/{P}{suffix}" for each (kind, suffix), only for a published path P
    "per_published_file": (("download", ".metadata"), ("download", ".lock"), ("upload", ".metadata"),
                           ("upload", ".lock")),
}


def lfs_patterns() -> list[str]:
    """The ``.gitattributes`` patterns routed to Git LFS: ``*SUFFIX`` of every registered format, sorted."""
    return sorted({f"*{f.suffix}" for f in formats.FORMATS})


def gitattributes_text() -> str:
    """The release's ``.gitattributes``: one ``PATTERN filter=lfs diff=lfs merge=lfs -text`` line per pattern."""
    return "".join(f"{p} {LFS_ATTRIBUTES}\n" for p in lfs_patterns())


def write_gitattributes(folder: str) -> str:
    """Write :func:`gitattributes_text` to ``folder/.gitattributes`` (atomically); returns its path."""
    path = os.path.join(folder, GITATTRIBUTES)
    write_bytes_atomic(path, gitattributes_text().encode())
    return path


def is_housekeeping(rel: str, published: set[str]) -> bool:
    """Whether ``rel`` (a regular file of the folder, not in the manifest) is huggingface_hub's local-dir metadata for
    a folder that publishes ``published`` (the manifest's paths and manifest.json): :data:`HOUSEKEEPING`."""
    if rel in HOUSEKEEPING["files"]:
        return True
    prefix = HF_LOCAL_DIR + "/"
    if not rel.startswith(prefix):
        return False
    kind, _, name = rel[len(prefix):].partition("/")
    return any(kind == k and name.endswith(suffix) and name[:-len(suffix)] in published
               for k, suffix in HOUSEKEEPING["per_published_file"])
