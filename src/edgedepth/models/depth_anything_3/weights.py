"""Depth Anything 3's released weights: the hub folders (``depth-anything/DA3-SMALL`` ...) as the depth-anything-3
package writes them, read without importing its ``api`` module (which needs moviepy and more).

The package's ``DepthAnything3(nn.Module, PyTorchModelHubMixin)`` is built as ``DepthAnything3(**config)`` and holds
the network as ``self.model`` (a ``DepthAnything3Net``); huggingface_hub's mixin saves the init kwargs to
``config.json`` (``{"model_name": "da3-small"}``) and the wrapper's state dict to ``model.safetensors`` with
safetensors' ``save_model``, so every key is prefixed ``model.`` and of tensors that share storage only one name is
kept (DualDPT's ray branch reuses one LayerNorm four times).  Here: the preset named by ``model_name`` is built with
:func:`.mono.package_net`, the file is loaded into it strictly (every key, every shape; a shared tensor is present
under any one of its names) and only its backbone and head are kept, as :func:`.mono.build` does.

Files are read only when they are regular files inside the folder (no symlink, FIFO or device:
:func:`edgedepth.fsutil.open_regular`); the hub cache's snapshot folders are symlinks into its blob store, so those
are followed for hub ids.
"""

from __future__ import annotations

import hashlib
import json
import os

from ...errors import EdgedepthError
from ...fsutil import open_regular
from ...progress import quiet_output
from .members import MEMBERS

CONFIG = "config.json"              # huggingface_hub constants.CONFIG_NAME
WEIGHTS = "model.safetensors"       # huggingface_hub constants.SAFETENSORS_SINGLE_FILE
PREFIX = "model."                   # the package's wrapper holds the net as ``self.model``
MAX_CONFIG_BYTES = 1 << 20
_SHOWN = 3                          # key names an error message lists

PRESET_MEMBERS = {m.arch.preset: m for m in MEMBERS.values()}      # da3-small -> the da3-small member
# The package's other presets, and why edgedepth does not take them yet.
NOT_YET = {
    "da3-giant": "ViT-g with a Gaussian-splatting head: no member, licence or measurement here",
    "da3nested-giant-large": "two nested networks, ViT-g any-view and a metric ViT-L",
}


def known_presets() -> list[str]:
    """The presets of the installed depth-anything-3 package (its configs/*.yaml)."""
    from depth_anything_3.registry import MODEL_REGISTRY

    return list(MODEL_REGISTRY)


def _open(folder: str, name: str, where: str, follow_symlinks: bool):
    f, problem = open_regular(folder, name, follow_symlinks=follow_symlinks)
    if problem is None:
        return f
    if problem == "missing":
        why = " (the package writes config.json and model.safetensors)"
    elif problem.startswith("unreadable"):
        why = ""
    else:
        why = ": the checkpoint's files must be regular files in the folder itself"
    raise EdgedepthError(f"{where}: {name} is {problem}{why}", option="model")


def read_model_name(folder: str, where: str, follow_symlinks: bool) -> str:
    """config.json's ``model_name``, a preset this family loads (one of :data:`PRESET_MEMBERS`); else one line."""
    f = _open(folder, CONFIG, where, follow_symlinks)
    with f:
        data = f.read(MAX_CONFIG_BYTES + 1)
    if len(data) > MAX_CONFIG_BYTES:
        raise EdgedepthError(f"{where}: {CONFIG} is too large for a config ({MAX_CONFIG_BYTES} bytes at most)",
                             option="model")
    try:
        config = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise EdgedepthError(f"{where}: {CONFIG} is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset "
                             f"{e.start})", option="model") from None
    except json.JSONDecodeError as e:
        raise EdgedepthError(f"{where}: {CONFIG} is not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})",
                             option="model") from None
    except (ValueError, RecursionError) as e:
        raise EdgedepthError(f"{where}: {CONFIG} is not usable JSON ({type(e).__name__})", option="model") from None
    supported = ", ".join(PRESET_MEMBERS)
    if not isinstance(config, dict) or "model_name" not in config:
        raise EdgedepthError(f"{where}: {CONFIG} has no \"model_name\" (the depth-anything-3 package's preset: "
                             f"{supported})", option="model")
    name = config["model_name"]
    if not isinstance(name, str):
        kind = {bool: "boolean", int: "number", float: "number", list: "array", dict: "object",
                type(None): "null"}.get(type(name), type(name).__name__)
        raise EdgedepthError(f"{where}: {CONFIG}'s model_name is a JSON {kind}, not a preset name "
                             f"({supported})", option="model")
    if name in PRESET_MEMBERS:
        return name
    shown = repr(name[:80])
    if name in NOT_YET or name in known_presets():
        why = NOT_YET.get(name, "no member of this family")
        raise EdgedepthError(f"{where}: Depth Anything 3 preset {shown} is not supported here yet ({why}); "
                             f"edgedepth loads {supported}", option="model")
    raise EdgedepthError(f"{where}: model_name {shown} is not a Depth Anything 3 preset (known: "
                         f"{', '.join(known_presets())}; edgedepth loads {supported})", option="model")


def _esc(text: str) -> str:
    """A key name as one line of printable text (a file's names are arbitrary strings)."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:200])


def _names(keys) -> str:
    keys = sorted(keys)
    return ", ".join(map(_esc, keys[:_SHOWN])) + (", ..." if len(keys) > _SHOWN else "")


def _shared_groups(state_dict: dict) -> dict[str, frozenset[str]]:
    """Each name of ``state_dict`` -> the names of tensors that are the same storage (itself included)."""
    by_storage: dict[tuple, set[str]] = {}
    for k, t in state_dict.items():
        by_storage.setdefault((t.device, t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape)),
                              set()).add(k)
    return {k: frozenset(g) for g in by_storage.values() for k in g}


def check_state_dict(tensors: dict, net, where: str, preset: str) -> dict:
    """``tensors`` (the file's, ``model.``-prefixed) as ``net``'s state dict: every key of the net present (a tensor
    that shares storage with others under any one of its names), none unknown, every shape the net's; else one line
    that says how many are missing / unexpected / mis-shaped and names the first few."""
    own = net.state_dict()
    loaded = {k[len(PREFIX):]: v for k, v in tensors.items() if k.startswith(PREFIX)}
    unexpected = [k for k in tensors if not k.startswith(PREFIX)] + [PREFIX + k for k in loaded if k not in own]
    groups = _shared_groups(own)
    missing = [PREFIX + k for k in own if not any(n in loaded for n in groups[k])]
    if missing or unexpected:
        parts = [f"{len(missing)} key(s) missing ({_names(missing)})" if missing else "",
                 f"{len(unexpected)} key(s) it does not have ({_names(unexpected)})" if unexpected else ""]
        raise EdgedepthError(f"{where}: {WEIGHTS} is not the state dict of the depth-anything-3 package's {preset}: "
                             f"{', '.join(p for p in parts if p)}", option="model")
    shapes = [f"{PREFIX}{_esc(k)} {tuple(v.shape)} (needs {tuple(own[k].shape)})" for k, v in sorted(loaded.items())
              if tuple(v.shape) != tuple(own[k].shape)]
    if shapes:
        raise EdgedepthError(f"{where}: {WEIGHTS} does not fit the depth-anything-3 package's {preset}: "
                             f"{len(shapes)} tensor(s) of another shape ({', '.join(shapes[:_SHOWN])}"
                             f"{', ...' if len(shapes) > _SHOWN else ''})", option="model")
    floating = [PREFIX + k for k, v in loaded.items() if not v.is_floating_point() and own[k].is_floating_point()]
    if floating:
        raise EdgedepthError(f"{where}: {WEIGHTS} holds non-float tensors where {preset} has weights "
                             f"({_names(floating)})", option="model")
    return loaded


def load_folder(folder: str, where: str, follow_symlinks: bool):
    """``(DA3Mono, {"model.safetensors": sha256})`` of a folder the package wrote (``where``: how messages
    name it); every problem is one EdgedepthError line."""
    preset = read_model_name(folder, where, follow_symlinks)
    f = _open(folder, WEIGHTS, where, follow_symlinks)
    path = os.path.join(folder, WEIGHTS)
    with f:
        before = os.fstat(f.fileno())
        h = hashlib.sha256()
        try:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        except OSError as e:
            raise EdgedepthError(f"{where}: cannot read {WEIGHTS}: {e.strerror or e}", option="model") from None
        sha = h.hexdigest()

        import safetensors.torch

        from .mono import DA3Mono, package_net

        try:        # by path (memory-mapped): the same file as the open one, checked below
            tensors = safetensors.torch.load_file(path)
        except Exception as e:  # noqa: BLE001  (SafetensorError: a truncated or garbled file; OSError)
            why = " ".join(str(e).split())[:200] or type(e).__name__
            raise EdgedepthError(f"{where}: {WEIGHTS} is not a readable safetensors file ({why})",
                                 option="model") from None
        after = os.stat(path, follow_symlinks=follow_symlinks)
        if (before.st_dev, before.st_ino, before.st_size, before.st_mtime_ns) != \
                (after.st_dev, after.st_ino, after.st_size, after.st_mtime_ns):
            raise EdgedepthError(f"{where}: {WEIGHTS} changed while it was loaded", option="model")
    with quiet_output():        # the package logs as it builds
        net = package_net(preset)
    loaded = check_state_dict(tensors, net, where, preset)
    net.load_state_dict(loaded, strict=False)      # strict above: shared names counted once
    del tensors, loaded
    return DA3Mono(net.backbone, net.head, preset).eval(), {WEIGHTS: sha}
