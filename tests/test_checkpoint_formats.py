"""Depth Anything V2 checkpoints in the official repository's format (edgedepth.models.depth_anything_v2.official):
plain .pth state dicts named as its releases are, the metric training script's {"model": ...} checkpoints (``module.``
keys under DDP), and .safetensors files of the same keys.  Stand-ins saved in that format load back as the same
tensors and the same member, and export to the same bytes; every bad file is one line."""

from __future__ import annotations

import hashlib
import os

import pytest
import torch

import edgedepth
from conftest import assert_one_line_error, run_cli
from edgedepth.checkpoint import load_checkpoint, state_dict_digest
from edgedepth.errors import EdgedepthError
from edgedepth.models.depth_anything_v2 import official

TINY_STAND_INS = ("synthetic-tiny", "synthetic-tiny-metric-indoor", "synthetic-tiny-large")
# The official file name of each stand-in's member (depth_anything_v2[_metric_<dataset>]_vit<size>.pth)
OFFICIAL_NAMES = {"small": "depth_anything_v2_vits", "large": "depth_anything_v2_vitl",
                  "metric-indoor-small": "depth_anything_v2_metric_hypersim_vits"}


def official_keys(blocks: int) -> list[str]:
    """Every tensor name of the official model in its state dict's order (its depth_anything_v2/dinov2.py and dpt.py
    modules: parameters, then submodules, each in registration order), written out from the module structure: what
    the mapping must cover, independently of how it is built."""
    wb = ("weight", "bias")
    keys = ["pretrained.cls_token", "pretrained.pos_embed", "pretrained.mask_token"]
    keys += [f"pretrained.patch_embed.proj.{p}" for p in wb]
    for n in range(blocks):     # a Block: norm1, attn (fused qkv, proj), ls1, norm2, mlp, ls2
        b = f"pretrained.blocks.{n}."
        keys += [f"{b}{m}.{p}" for m in ("norm1", "attn.qkv", "attn.proj") for p in wb] + [b + "ls1.gamma"]
        keys += [f"{b}{m}.{p}" for m in ("norm2", "mlp.fc1", "mlp.fc2") for p in wb] + [b + "ls2.gamma"]
    keys += [f"pretrained.norm.{p}" for p in wb]
    keys += [f"depth_head.projects.{i}.{p}" for i in range(4) for p in wb]
    keys += [f"depth_head.resize_layers.{i}.{p}" for i in (0, 1, 3) for p in wb]      # 2 is an nn.Identity
    keys += [f"depth_head.scratch.layer{i}_rn.weight" for i in range(1, 5)]            # bias=False
    keys += [f"depth_head.scratch.refinenet{r}.{m}.{p}" for r in range(1, 5)
             for m in ("out_conv", "resConfUnit1.conv1", "resConfUnit1.conv2", "resConfUnit2.conv1",
                       "resConfUnit2.conv2") for p in wb]
    keys += [f"depth_head.scratch.{m}.{p}" for m in ("output_conv1", "output_conv2.0", "output_conv2.2") for p in wb]
    return keys


@pytest.fixture(scope="module")
def full_small():
    """The full-size Small stand-in (loaded once for this module)."""
    return load_checkpoint("synthetic", quiet=True)


def _save(ckpt, folder, kind: str) -> tuple[str, object]:
    """``ckpt`` saved with to_official as ``kind`` in ``folder``: (path, the max_depth to load it with)."""
    member = ckpt.member
    sd = official.to_official(ckpt.model)
    if kind == "pth":       # the release's own name says the head
        path = os.path.join(folder, OFFICIAL_NAMES[member.name] + ".pth")
        torch.save(sd, path)
        return path, None
    head = member.max_depth if member.is_metric else "relative"
    if kind == "train":     # metric_depth/train.py under DDP: names that say nothing, so max_depth
        path = os.path.join(folder, "latest.pth")
        optimizer = {"state": {0: {"step": torch.tensor(3.0), "exp_avg": torch.zeros(4)}},
                     "param_groups": [{"lr": 5e-6, "params": [0]}]}
        torch.save({"model": {"module." + k: v for k, v in sd.items()}, "optimizer": optimizer, "epoch": 3,
                    "previous_best": {"d1": 0.5, "abs_rel": 0.2}}, path)
        return path, head
    import safetensors.torch

    path = os.path.join(folder, "finetune.safetensors")
    safetensors.torch.save_file(sd, path)
    return path, head


@pytest.mark.parametrize("arch", official.ARCHS, ids=lambda a: f"{a.hidden_size}x{a.num_hidden_layers}")
def test_mapping_covers_every_official_tensor(arch):
    """Every official name maps to a transformers name and back, none left over on either side, and the result loads
    strictly into transformers' own DepthAnythingForDepthEstimation."""
    from transformers import DepthAnythingForDepthEstimation

    from edgedepth.models.depth_anything_v2.synthetic import model_config

    with torch.device("meta"):
        model = DepthAnythingForDepthEstimation(model_config(arch))
    hf = model.state_dict()
    sd = official.to_official(model)
    assert list(sd) == official_keys(arch.num_hidden_layers)
    assert len(hf) == len(sd) + 4 * arch.num_hidden_layers        # each fused qkv weight and bias: 3 tensors
    back = official.to_transformers(sd)
    assert set(back) == set(hf) and all(back[k].shape == hf[k].shape for k in hf)
    result = model.load_state_dict(back, strict=True, assign=True)
    assert not result.missing_keys and not result.unexpected_keys


def test_round_trip_is_exact(tiny_ckpt):
    hf = tiny_ckpt.model.state_dict()
    sd = official.to_official(tiny_ckpt.model)
    qkv = sd["pretrained.blocks.0.attn.qkv.weight"]
    assert qkv.shape == (96, 32) and torch.equal(qkv[32:64], hf["backbone.encoder.layer.0.attention.k_proj.weight"])
    assert torch.equal(sd["depth_head.scratch.refinenet4.out_conv.weight"],
                       hf["neck.fusion_stage.layers.0.projection.weight"])
    back = official.to_transformers(sd)
    assert back.keys() == hf.keys() and all(torch.equal(back[k], hf[k]) and back[k].dtype == hf[k].dtype for k in hf)
    assert official.to_official(back).keys() == sd.keys()


@pytest.mark.parametrize("kind", ["pth", "train", "safetensors"])
@pytest.mark.parametrize("name", TINY_STAND_INS)
def test_stand_in_loads_back(tmp_path, name, kind):
    stand_in = load_checkpoint(name, quiet=True)
    path, head = _save(stand_in, tmp_path, kind)
    ckpt = load_checkpoint(path, quiet=True, max_depth=head)
    assert state_dict_digest(ckpt.model) == state_dict_digest(stand_in.model)
    assert ckpt.member == stand_in.member and ckpt.file_stem == stand_in.file_stem
    assert ckpt.is_metric == stand_in.is_metric
    assert ckpt.model.config.max_depth == stand_in.model.config.max_depth
    with open(path, "rb") as f:
        sha = hashlib.sha256(f.read()).hexdigest()
    assert ckpt.provenance() == {"source": "local", "name": path, "weight_files": {os.path.basename(path): sha},
                                 "format": "safetensors" if kind == "safetensors" else "pth"}


def test_full_small_loads_back(tmp_path, full_small):
    path, head = _save(full_small, tmp_path, "pth")
    ckpt = load_checkpoint(path)
    assert head is None and ckpt.member.name == "small" and not ckpt.is_metric
    assert state_dict_digest(ckpt.model) == state_dict_digest(full_small.model)


def test_exported_file_is_the_stand_ins(tmp_path, tiny_ckpt):
    """The .pth exported by the CLI gives the stand-in's file, byte for byte (ONNX FP32: the quickest target)."""
    path, _ = _save(tiny_ckpt, tmp_path, "pth")
    want = edgedepth.export(tiny_ckpt, size="28x42", out_dir=tmp_path / "standin", target="onnx", precisions=["fp32"])
    r = run_cli("export", "--model", path, "--size", "28x42", "--target", "onnx", "--precision", "fp32", "--out",
                tmp_path / "pth", "--quiet")
    assert r.returncode == 0, r.stderr[-3000:]
    got = sorted(os.listdir(tmp_path / "pth"))
    assert got == [os.path.basename(f) for f in want] == ["depth_anything_v2_small_28x42_fp32.onnx"]
    with open(want[0], "rb") as a, open(tmp_path / "pth" / got[0], "rb") as b:
        assert a.read() == b.read()


def _bad_files(folder, tiny_ckpt) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Bad checkpoint files, each in a folder of its own: case -> (path, what its one error line must say)."""
    sd = official.to_official(tiny_ckpt.model)
    out = {}

    def save(case, obj, *says, name="depth_anything_v2_vits.pth"):
        path = os.path.join(folder, case, name)
        os.makedirs(os.path.dirname(path))
        torch.save(obj, path)
        out[case] = (path, says)

    save("missing", {k: v for k, v in sd.items() if k != "pretrained.blocks.2.ls1.gamma"},
         "missing key 'pretrained.blocks.2.ls1.gamma'", "closest: synthetic-tiny")
    save("shape", {**sd, "depth_head.projects.1.weight": torch.zeros(16, 32, 3, 3)},
         "'depth_head.projects.1.weight': shape (16, 32, 3, 3), expected (16, 32, 1, 1)")
    save("extra", {**sd, "pretrained.register_tokens": torch.zeros(1, 4, 32)},
         "extra key 'pretrained.register_tokens'")
    save("no-head-name", sd, "cannot be told from its weights", "--max-depth METRES", "--max-depth relative",
         name="latest.pth")
    save("truncated", sd, "is not a readable PyTorch checkpoint", "RuntimeError")
    with open(out["truncated"][0], "r+b") as f:
        f.truncate(os.path.getsize(out["truncated"][0]) // 2)
    save("code", {"model": _Code(os.path.join(folder, "ran"))}, "refused", "posix.system", "no code in one is run")
    return out


class _Code:
    """A pickle that runs a shell command when unpickled without weights_only."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("case", ["missing", "shape", "extra", "no-head-name", "truncated", "code"])
def test_bad_file_is_one_line(tmp_path, tiny_ckpt, case):
    path, says = _bad_files(tmp_path, tiny_ckpt)[case]
    with pytest.raises(EdgedepthError) as e:
        load_checkpoint(path)
    assert "\n" not in str(e.value) and all(s in str(e.value) for s in says), str(e.value)
    assert not os.path.exists(tmp_path / "ran")


def test_bad_files_via_the_cli(tmp_path, tiny_ckpt):
    """The same files through ``edgedepth export``: exit 2, one ``edgedepth: error:`` line, no traceback, nothing
    written, and the pickle's code never run."""
    from concurrent.futures import ThreadPoolExecutor

    cases = _bad_files(tmp_path, tiny_ckpt)

    def export(case):
        return run_cli("export", "--model", cases[case][0], "--size", "28x42", "--target", "onnx", "--out",
                       tmp_path / "o" / case, "--quiet")

    with ThreadPoolExecutor(2) as pool:        # two children at a time: each is mostly its start-up
        results = dict(zip(cases, pool.map(export, cases)))
    for case, (path, says) in cases.items():
        assert_one_line_error(results[case], repr(path), *says)
        assert not (tmp_path / "o" / case).exists()
    assert not os.path.exists(tmp_path / "ran")


def test_safetensors_and_other_files(tmp_path, tiny_ckpt):
    import safetensors.torch

    sd = official.to_official(tiny_ckpt.model)
    bad = tmp_path / "depth_anything_v2_vits.safetensors"
    safetensors.torch.save_file(sd, str(bad))
    bad.write_bytes(bad.read_bytes()[:-100])
    with pytest.raises(EdgedepthError, match="is not a readable safetensors file"):
        load_checkpoint(str(bad))
    other = tmp_path / "other.pth"        # a PyTorch file of another model: no family's
    torch.save({"encoder.weight": torch.zeros(2)}, other)
    with pytest.raises(EdgedepthError, match=r"expected a checkpoint .*official Depth Anything V2 state dict"):
        load_checkpoint(str(other))
    empty = tmp_path / "empty.pth"
    empty.write_bytes(b"")
    with pytest.raises(EdgedepthError, match="is empty"):
        load_checkpoint(str(empty))


@pytest.mark.parametrize("spec", ["synthetic-tiny", "small", "depth-anything/Depth-Anything-V2-Small-hf", "."])
def test_max_depth_only_for_files(spec):
    with pytest.raises(EdgedepthError, match="max_depth applies to a .pth/.safetensors checkpoint file") as e:
        load_checkpoint(spec, max_depth=10)
    assert e.value.for_cli().startswith("--max-depth applies")


@pytest.mark.parametrize("value", [0, -1, "ten", float("inf"), float("nan"), True, "Relative"])
def test_max_depth_value(tmp_path, tiny_ckpt, value):
    path, _ = _save(tiny_ckpt, tmp_path, "train")
    with pytest.raises(EdgedepthError, match="metres of a metric head") as e:
        load_checkpoint(path, max_depth=value)
    assert e.value.option == "max_depth"


def test_max_depth_names_the_head(tmp_path, tiny_ckpt):
    """A relative stand-in's weights with max_depth: a metric model of that range (the head is the caller's word)."""
    path, _ = _save(tiny_ckpt, tmp_path, "pth")
    ckpt = load_checkpoint(path, max_depth="10")
    assert ckpt.is_metric and ckpt.member.name == "metric-indoor-small" and ckpt.member.max_depth == 10
    assert state_dict_digest(ckpt.model) == state_dict_digest(tiny_ckpt.model)


def test_folder_of_another_max_depth(tmp_path, full_small):
    """A metric fine-tune with its own max_depth (10 m) is its architecture's first metric member, at 0..10."""
    import copy

    from transformers import DepthAnythingForDepthEstimation

    config = copy.deepcopy(full_small.model.config)
    config.depth_estimation_type, config.max_depth = "metric", 10
    model = DepthAnythingForDepthEstimation(config)
    model.load_state_dict(full_small.model.state_dict())
    model.save_pretrained(tmp_path)
    ckpt = load_checkpoint(str(tmp_path))
    member = ckpt.member
    assert member.name == "metric-indoor-small" and member.max_depth == 10 and ckpt.is_metric
    assert "0..10 " in member.output_semantics
    assert ckpt.provenance()["source"] == "local" and "format" not in ckpt.provenance()
