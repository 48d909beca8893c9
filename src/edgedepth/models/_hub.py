"""Loading a family's checkpoint with transformers' ``from_pretrained`` (or a hub snapshot of named files, for families
without a transformers class): from a local folder, or from the hub with a quick reachability probe first (no
network: the local cache only, at once), and the weight files' SHA-256s."""

from __future__ import annotations

import os

from ..errors import EdgedepthError
from ..fsutil import regular_file, sha256_file


HUB_PROBE_TIMEOUT_S = 3.0


def hub_unreachable() -> str | None:
    """None when the Hugging Face hub answers an HTTP request within :data:`HUB_PROBE_TIMEOUT_S`; else why not.

    The endpoint is the one huggingface_hub uses (``HF_ENDPOINT``), through the proxy urllib picks for it, if any;
    ``HF_HUB_OFFLINE`` counts as no network.  An HTTP answer of any status counts as reachable; a refused or failed
    connection, or one that is accepted but never answered (a captive or dead proxy), does not.  Without this, a hub
    id with no network meant ~30 s of huggingface_hub's retries, or a hang, before the error."""
    import threading
    import urllib.error
    import urllib.request

    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "HF_HUB_OFFLINE is set"
    where = f"the hub {constants.ENDPOINT}"
    outcome: list = []

    def probe() -> None:        # in a thread: name resolution has no timeout of its own
        try:
            req = urllib.request.Request(constants.ENDPOINT, method="HEAD")
            urllib.request.urlopen(req, timeout=HUB_PROBE_TIMEOUT_S).close()
            outcome.append(None)
        except urllib.error.HTTPError:          # it answered (401, 404, 5xx): the network works
            outcome.append(None)
        except Exception as e:  # noqa: BLE001  (URLError, timeouts, resets, a garbled reply: no usable hub)
            reason = getattr(e, "reason", None) or e
            outcome.append(getattr(reason, "strerror", None) or str(reason) or type(reason).__name__)

    t = threading.Thread(target=probe, daemon=True)
    t.start()
    t.join(HUB_PROBE_TIMEOUT_S + 0.5)
    if not outcome:
        return f"{where} did not answer within {HUB_PROBE_TIMEOUT_S:g} s"
    return None if outcome[0] is None else f"{where} cannot be reached ({outcome[0]})"


CHECKPOINT_SUFFIXES = (".json", ".safetensors", ".bin", ".pth", ".pt", ".txt", ".model")


def check_checkpoint_files(folder: str) -> None:
    """Every file of a local checkpoint folder that a loader may open (config, weights, tokenizer) is a regular file
    (:func:`edgedepth.fsutil.regular_file`; a symlink to one is fine), else one EdgedepthError line naming it."""
    for name in sorted(os.listdir(folder)):
        if name.endswith(CHECKPOINT_SUFFIXES):
            regular_file(os.path.join(folder, name), "checkpoint file")


def from_pretrained(model_class, path_or_id: str, revision: str | None, source: str, title: str):
    """``(eval-mode model, {weight file: sha256})`` of a hub id (``source="hf"``) or a local folder (``"local"``);
    every failure is one :class:`EdgedepthError` (``title`` names the family: "not a Depth Anything checkpoint")."""
    if source == "local":       # transformers opens these by name: a FIFO among them would block it
        check_checkpoint_files(path_or_id)
    offline = hub_unreachable() if source == "hf" else None   # then only the local cache, at once, no retries
    try:
        model = model_class.from_pretrained(path_or_id, revision=revision,
                                            **({"local_files_only": True} if offline else {}))
        model = model.eval()
    except (ValueError, KeyError, TypeError) as e:     # a cached hub checkpoint of another architecture
        raise EdgedepthError(f"{path_or_id}: not a {title} checkpoint ({str(e).splitlines()[0][:200]})",
                             option="model") from None
    except OSError as e:
        if source == "local":
            raise EdgedepthError(f"cannot load a checkpoint from folder {path_or_id!r}: {str(e).splitlines()[0]}") from e
        if offline:
            from huggingface_hub import constants

            raise EdgedepthError(
                f"cannot load {path_or_id}{'@' + revision if revision else ''} from the Hugging Face hub (no network: "
                f"{offline}; not in the local cache {constants.HF_HUB_CACHE}); download it elsewhere and pass the "
                "folder with --model PATH, or use --model synthetic") from None
        raise EdgedepthError(
            f"cannot load {path_or_id}@{revision} from the Hugging Face hub (no network and not in the local cache); "
            "download it elsewhere and pass the folder with --model PATH, or use --model synthetic"
        ) from e
    return model, _weight_files(path_or_id, revision, source)


def snapshot(hub_id: str, revision: str | None, files: list[str], synthetic: str = "synthetic") -> str:
    """The local folder of hub checkpoint ``hub_id@revision`` holding ``files`` (downloaded, or from the local cache
    only when the hub cannot be reached, at once: :func:`hub_unreachable`); every failure is one EdgedepthError.
    Files the repository lacks are simply absent from the folder: the caller names what is missing.  ``synthetic``:
    the stand-in the message offers instead."""
    from huggingface_hub import constants, snapshot_download

    offline = hub_unreachable()
    shown = hub_id + ("@" + revision if revision else "")
    try:
        return snapshot_download(hub_id, revision=revision, allow_patterns=list(files),
                                 **({"local_files_only": True} if offline else {}))
    except Exception as e:  # noqa: BLE001  (not cached, no such repo or revision, gated, HTTP and disk errors)
        if offline:
            raise EdgedepthError(
                f"cannot load {shown} from the Hugging Face hub (no network: {offline}; not in the local cache "
                f"{constants.HF_HUB_CACHE}); download it elsewhere and pass the folder with --model PATH, or use "
                f"--model {synthetic}", option="model") from None
        why = " ".join(str(e).split())[:300] or type(e).__name__
        raise EdgedepthError(f"cannot load {shown} from the Hugging Face hub: {why}", option="model") from None


def _weight_files(path_or_id: str, revision: str | None, source: str) -> dict[str, str]:
    folder = path_or_id if source == "local" else None
    if folder is None:
        try:
            from huggingface_hub import snapshot_download

            folder = snapshot_download(path_or_id, revision=revision, local_files_only=True)
        except Exception:  # provenance is best effort when the cache layout is unusual
            folder = None
    if not folder:
        return {}
    return {fn: sha256_file(os.path.join(folder, fn)) for fn in sorted(os.listdir(folder))
            if fn.endswith((".safetensors", ".bin"))}
