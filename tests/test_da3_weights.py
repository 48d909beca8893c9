"""Depth Anything 3's released weights (issue 31; edgedepth.models.depth_anything_3.weights): a folder written the way
the depth-anything-3 package's ``DepthAnything3`` (PyTorchModelHubMixin) writes the hub's DA3-SMALL / -BASE / -LARGE
(config.json ``{"model_name": ...}``, model.safetensors of the wrapper: keys ``model.<DepthAnything3Net key>``, shared
tensors under one name) loads bit-exactly as the seeded stand-in it was made from, from a folder or a hub id (the
cache, offline), as its member (licence included); every bad folder is one CLI line.

The ~137 MB weight file is written once per module (``da3_folder``)."""

import json
import os
import time
import types

import numpy as np
import pytest
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint, state_dict_digest
from edgedepth.errors import EdgedepthError
from edgedepth.fsutil import sha256_file
from edgedepth.models import CC_BY_NC, Checkpoint, family_of_config, family_of_member, member_of_hub_id
from conftest import TINY_SIZE, assert_one_line_error, run_cli

SMALL = {"model_name": "da3-small"}


def _write_config(folder, config) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        f.write(config if isinstance(config, str) else json.dumps(config))


@pytest.fixture(scope="module")
def da3_folder(tmp_path_factory):
    """(folder, seeded DA3Mono): the package's format, written as its mixin does (safetensors ``save_model`` of a
    module holding the net as ``.model``) from ``package_net("da3-small")`` with synthetic-da3-small's seeded
    backbone and head (``synthetic.realistic_init`` on ``mono.build(members.SMALL)``) and the net's own camera
    encoder / decoder."""
    import safetensors.torch

    from edgedepth.models.depth_anything_3 import members, mono
    from edgedepth.models.depth_anything_3.synthetic import realistic_init
    from edgedepth.progress import quiet_output

    seeded = mono.build(members.SMALL)
    realistic_init(seeded, 0)
    with quiet_output():
        net = mono.package_net("da3-small")
    own = seeded.state_dict()           # backbone.* / head.*: the same names in the net
    rest = {k: v for k, v in net.state_dict().items() if k not in own}
    assert rest and {k.split(".")[0] for k in rest} <= {"cam_enc", "cam_dec"}, sorted(rest)[:5]
    net.load_state_dict({**own, **rest}, strict=True)
    wrapper = torch.nn.Module()
    wrapper.model = net
    folder = tmp_path_factory.mktemp("DA3-SMALL")
    _write_config(folder, SMALL)
    safetensors.torch.save_model(wrapper, str(folder / "model.safetensors"))
    return folder, seeded


def _outputs(model, x):
    with torch.no_grad():
        out = model(pixel_values=x)
    return out.predicted_depth, out.confidence


def test_package_folder_loads_bit_exact(da3_folder):
    folder, seeded = da3_folder
    ckpt = load_checkpoint(str(folder))
    assert ckpt.source == "local" and ckpt.member.name == "da3-small" and ckpt.member.license == "apache-2.0"
    assert ckpt.file_stem == "depth_anything_3_da3_small" and not ckpt.is_metric
    sha = sha256_file(str(folder / "model.safetensors"))
    assert ckpt.weight_files == {"model.safetensors": sha} and ckpt.provenance()["weight_files"] == ckpt.weight_files
    assert state_dict_digest(ckpt.model) == state_dict_digest(seeded)
    assert not hasattr(ckpt.model, "cam_enc") and not hasattr(ckpt.model, "cam_dec")     # backbone + head only
    x = torch.from_numpy(np.random.default_rng(3).standard_normal((1, 3, *TINY_SIZE), dtype=np.float32))
    for got, want in zip(_outputs(ckpt.model, x), _outputs(seeded, x)):
        assert torch.equal(got, want)
    with torch.no_grad():
        assert torch.equal(DepthModule(ckpt.model)(x), DepthModule(seeded)(x))


def test_every_name_of_a_shared_tensor_may_be_in_the_file(da3_folder, tmp_path):
    """safetensors' save_model keeps one name of tensors that share storage; a file that has all of them (save_file
    of clones) loads too."""
    import safetensors.torch

    folder, seeded = da3_folder
    tensors = {k: v.clone() for k, v in safetensors.torch.load_file(str(folder / "model.safetensors")).items()}
    aux = "model.head.scratch.output_conv2_aux.{}.2.weight"
    assert aux.format(0) in tensors and aux.format(1) not in tensors      # what save_model did
    for i in (1, 2, 3):
        for p in ("weight", "bias"):
            tensors[aux.format(i)[:-len("weight")] + p] = tensors[aux.format(0)[:-len("weight")] + p].clone()
    _write_config(tmp_path, SMALL)
    safetensors.torch.save_file(tensors, str(tmp_path / "model.safetensors"))
    assert state_dict_digest(load_checkpoint(str(tmp_path)).model) == state_dict_digest(seeded)


def test_hub_id_from_the_cache_offline(da3_folder, tmp_path, monkeypatch):
    """``--model da3-small`` is depth-anything/DA3-SMALL: with no network, the hub cache's snapshot (symlinks into its
    blobs, followed for the cache only) is loaded as that member."""
    from huggingface_hub import constants

    folder, seeded = da3_folder
    repo = tmp_path / "models--depth-anything--DA3-SMALL"
    commit = "0123456789abcdef0123456789abcdef01234567"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    (repo / "blobs").mkdir()
    (repo / "blobs" / "cfg").write_text(json.dumps(SMALL))
    snap = repo / "snapshots" / commit
    snap.mkdir(parents=True)
    os.symlink("../../blobs/cfg", snap / "config.json")
    os.symlink(folder / "model.safetensors", snap / "model.safetensors")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    ckpt = load_checkpoint("da3-small")
    assert (ckpt.source, ckpt.name, ckpt.member.name) == ("hf", "depth-anything/DA3-SMALL", "da3-small")
    assert ckpt.weight_files == {"model.safetensors": sha256_file(str(folder / "model.safetensors"))}
    assert state_dict_digest(ckpt.model) == state_dict_digest(seeded)
    # the same snapshot folder given as a local path: its symlinks are refused (a folder's files must be its own)
    with pytest.raises(EdgedepthError, match="config.json is a symlink"):
        load_checkpoint(str(snap))


def test_routing_and_licences():
    """config.json's ``model_name`` routes a folder to DA3 (``model_type`` to V2); the member, and so the licence the
    card, LICENSE and the CLI's note carry, is the preset config.json names: da3-large is CC BY-NC like V2's Large."""
    from edgedepth.models.depth_anything_3 import FAMILY

    assert family_of_config(SMALL) is FAMILY and family_of_config({"model_name": "anything"}) is FAMILY
    assert family_of_config({"model_type": "depth_anything"}).name == "depth_anything_v2"
    assert family_of_config({"model_type": "bert", "model_name": "da3-small"}) is None
    assert family_of_member(member_of_hub_id("depth-anything/DA3-LARGE")) is FAMILY
    for preset, licence in (("da3-small", "apache-2.0"), ("da3-base", "apache-2.0"), ("da3-large", CC_BY_NC),
                            ("da3mono-large", "apache-2.0"), ("da3metric-large", "apache-2.0")):
        ckpt = Checkpoint(model=types.SimpleNamespace(preset=preset), source="local", name="x", family=FAMILY)
        assert (ckpt.member.name, ckpt.member.license) == (preset, licence)


# ------------------------------------------------------------------------------------------------ one-line errors


def _bad_folders(root, weights):
    """name -> (folder, fragments of the one error line)."""
    cases = {}

    def case(name, config, fragments, make_weights=None):
        d = root / name
        if config is not None:
            _write_config(d, config)
        else:
            d.mkdir()
        if make_weights:
            make_weights(d / "model.safetensors")
        cases[name] = (d, fragments)

    def garbage(p):
        p.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header}" + bytes(64))

    def other_keys(p):
        import safetensors.torch

        safetensors.torch.save_file({"model.foo": torch.zeros(2), "bar": torch.zeros(1)}, str(p))

    case("no-config", None, ("no config.json",))
    case("not-json", "{\"model_name\": ", ("config.json", "JSONDecodeError"))
    case("no-model-name", {"foo": 1}, ("not Depth Anything", "model_name 'da3-small'"))
    case("model-name-number", {"model_name": 3}, ("model_name is a JSON number",))
    case("unknown-preset", {"model_name": "da3-tiny"}, ("'da3-tiny' is not a Depth Anything 3 preset",
                                                         "known: da3-base, da3-giant", "loads da3-small"))
    case("giant", {"model_name": "da3-giant"}, ("'da3-giant' is not supported here yet", "Gaussian-splatting"))
    case("no-weights", SMALL, ("model.safetensors is missing",))
    case("corrupt", SMALL, ("model.safetensors is not a readable safetensors file",), garbage)
    case("other-keys", SMALL, ("not the state dict", "da3-small", "443 key(s) missing (model.backbone.",
                               "2 key(s) it does not have (bar, model.foo)"), other_keys)
    case("other-preset", {"model_name": "da3-base"}, ("does not fit", "da3-base", "tensor(s) of another shape",
                                                      "(384,) (needs (768,))"), lambda p: os.link(weights, p))
    case("weights-symlink", SMALL, ("model.safetensors is a symlink",), lambda p: os.symlink(weights, p))
    case("weights-fifo", SMALL, ("model.safetensors is not a regular file",), lambda p: os.mkfifo(p))
    case("weights-folder", SMALL, ("model.safetensors is not a regular file",), lambda p: p.mkdir())
    d = root / "config-symlink"
    _write_config(root / "elsewhere", SMALL)
    d.mkdir()
    os.symlink(root / "elsewhere" / "config.json", d / "config.json")
    os.link(weights, d / "model.safetensors")
    cases["config-symlink"] = (d, ("config.json is a symlink",))
    return cases


def test_bad_folders_are_one_line_each(da3_folder, tmp_path):
    """Every way a DA3 folder can be wrong is one ``edgedepth: error:`` line and exit 2 (three children at a time:
    each is ~1.5 s of start-up); nothing is written, nothing hangs (a FIFO is never opened)."""
    from concurrent.futures import ThreadPoolExecutor

    cases = _bad_folders(tmp_path, da3_folder[0] / "model.safetensors")
    with ThreadPoolExecutor(3) as pool:
        runs = {n: pool.submit(run_cli, "export", "--model", d, "--out", tmp_path / f"out-{n}", "--quiet", timeout=300)
                for n, (d, _) in cases.items()}
    for name, run in runs.items():
        try:
            assert_one_line_error(run.result(), *cases[name][1])
        except AssertionError as e:
            raise AssertionError(f"{name}: {e}") from None
        assert not (tmp_path / f"out-{name}").exists(), name


@pytest.mark.parametrize("env", [{"HF_HUB_OFFLINE": "1"}, {"HF_ENDPOINT": "http://127.0.0.1:9"}],
                         ids=["offline", "unreachable"])
def test_hub_id_without_network_is_one_quick_line(tmp_path, env):
    t = time.monotonic()
    r = run_cli("export", "--model", "da3-small", "--out", tmp_path / "out", "--quiet",
                env={**os.environ, "HF_HUB_CACHE": str(tmp_path / "cache"), **env})
    assert_one_line_error(r, "cannot load depth-anything/DA3-SMALL from the Hugging Face hub", "no network",
                          "--model PATH", "synthetic-da3-small")
    assert time.monotonic() - t < 60 and not (tmp_path / "out").exists()
