import pytest
import torch

from edgedepth.checkpoint import DepthModule, load_checkpoint
from edgedepth.errors import EdgedepthError
from conftest import TINY_SIZE, run_cli


def test_full_synthetic_matches_pinned_architecture():
    ckpt = load_checkpoint("synthetic", quiet=True)
    m = ckpt.model
    assert sum(p.numel() for p in m.parameters()) == 24_785_089
    bb = m.config.backbone_config
    assert (bb.hidden_size, bb.num_hidden_layers, bb.num_attention_heads, bb.patch_size) == (384, 12, 6, 14)
    assert bb.out_indices == [3, 6, 9, 12] and m.config.reassemble_factors == [4, 2, 1, 0.5]
    assert ckpt.provenance() == {"source": "synthetic", "name": "synthetic", "seed": 0}


def test_synthetic_weights_are_realistic(tiny_ckpt):
    """Nothing zero, no unit scales: otherwise the converter folds away the op patterns real weights produce."""
    for name, p in tiny_ckpt.model.named_parameters():
        if name.endswith("mask_token"):
            continue  # unused at inference
        assert p.abs().min() > 0, f"{name} has an exact zero"   # Irwin-Hall init: no zero in any tensor, any size
        if "lambda1" in name or ("norm" in name and name.endswith("weight")):
            assert not torch.allclose(p, torch.ones_like(p)), name


def test_synthetic_is_seeded_and_gives_a_varied_positive_map(tiny_ckpt, tiny_input):
    again = load_checkpoint("synthetic-tiny", quiet=True)
    x = torch.from_numpy(tiny_input)
    with torch.no_grad():
        a, b = DepthModule(tiny_ckpt.model)(x), DepthModule(again.model)(x)
    assert torch.equal(a, b)
    assert a.shape == (1, *TINY_SIZE)
    assert (a > 0).float().mean() > 0.8 and a.std() > 0.1 * a.mean()


def test_local_folder_round_trip(tmp_path, tiny_ckpt, tiny_input):
    tiny_ckpt.model.save_pretrained(tmp_path)
    local = load_checkpoint(str(tmp_path))
    assert local.source == "local" and "model.safetensors" in local.weight_files
    x = torch.from_numpy(tiny_input)
    with torch.no_grad():
        assert torch.equal(DepthModule(local.model)(x), DepthModule(tiny_ckpt.model)(x))


def test_folder_without_config(tmp_path):
    with pytest.raises(EdgedepthError, match="no config.json"):
        load_checkpoint(str(tmp_path))


@pytest.mark.parametrize("spec", ["not-a-model", "a/b/c"])
def test_unknown_spec(spec):
    with pytest.raises(EdgedepthError, match="hub id"):
        load_checkpoint(spec)


def test_hub_offline_gives_one_clear_line(tmp_path):
    import os

    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_HOME=str(tmp_path))
    r = run_cli("predict", __file__, "-o", tmp_path, env=env)  # not an image: the image check fails first
    assert r.returncode == 2
    img = tmp_path / "x.png"
    from PIL import Image

    Image.new("RGB", (8, 8)).save(img)
    r = run_cli("predict", img, "-o", tmp_path / "o", env=env)  # default --model: the pinned hub checkpoint
    assert r.returncode == 2, r.stderr
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("edgedepth: error: cannot load depth-anything/Depth-Anything-V2-Small-hf@5426e4f0")
    assert "--model PATH" in last and "synthetic" in last and "Traceback" not in r.stderr


def test_synthetic_warning_is_visible(tmp_path):
    from PIL import Image

    img = tmp_path / "x.png"
    Image.new("RGB", (20, 20), (9, 99, 199)).save(img)
    r = run_cli("predict", img, "--model", "synthetic-tiny", "--size", "28x28", "-o", tmp_path / "o")
    assert r.returncode == 0, r.stderr
    assert "synthetic weights" in r.stderr and "meaningless" in r.stderr
