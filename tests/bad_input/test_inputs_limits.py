"""Input limits (issue 27, item 3): the photo pixel cap, memory per photo, the --size cap, counts that must be positive,
one-line argparse errors, a config.json that is not a JSON object."""

import json
import os
import shutil
import struct
import tracemalloc
import warnings
import zlib

import numpy as np
import pytest
from PIL import Image

from conftest import assert_one_line_error, run_cli
from edgedepth.errors import EdgedepthError
from edgedepth.samples import sample_photo


def _bomb_png(path, width: int, height: int) -> None:
    """A valid 1-bit grayscale PNG of width x height, all black: tiny on disk, streamed (never held in memory)."""
    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    row = b"\x00" * (1 + (width + 7) // 8)          # filter byte + packed bits
    z, parts = zlib.compressobj(9), []
    for _ in range(0, height, 1000):
        parts.append(z.compress(row * 1000))
    parts.append(z.flush())
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)))
        f.write(chunk(b"IDAT", b"".join(parts)) + chunk(b"IEND", b""))


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    """A 30000x30000 PNG (900 MP) and a 12000x12000 one (144 MP), a folder holding the first."""
    d = tmp_path_factory.mktemp("bombs")
    _bomb_png(d / "bomb30000.png", 30000, 30000)
    _bomb_png(d / "big12000.png", 12000, 12000)
    os.makedirs(d / "folder")
    shutil.copy(d / "bomb30000.png", d / "folder" / "bomb30000.png")
    return d


def cli_error(capsys, *args) -> str:
    """``edgedepth ARGS`` in this process (faster than a child): exit 2 and exactly one ``edgedepth: error:`` line on
    stderr, never "unexpected"; returns that line."""
    from edgedepth.cli import main

    try:
        rc = main([str(a) for a in args])
    except SystemExit as e:         # argparse's errors
        rc = e.code
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and err[0].startswith("edgedepth: error:"), (rc, err)
    assert "unexpected" not in err[0]
    return err[0]


@pytest.fixture()
def small_photo(tmp_path):
    p = tmp_path / "small.png"
    Image.open(sample_photo()).convert("RGB").resize((60, 40)).save(p)      # 2400 pixels
    return p


def test_bomb_pngs_refused_from_the_header(tmp_path, bombs, capsys):
    """D8: a 30000x30000 PNG (a few hundred KB) and a 12000x12000 one are refused before decoding: one line naming the
    limit and --max-pixels, exit 2, no output folder made (was "unexpected DecompressionBombError"/MemoryError)."""
    assert os.path.getsize(bombs / "bomb30000.png") < 1_000_000
    r = run_cli("predict", bombs / "bomb30000.png", "--model", "synthetic-tiny", "--size", "56x70", "-o", tmp_path / "a")
    assert_one_line_error(r, "--max-pixels 120000000", "120 megapixels", "30000x30000")
    assert "Bomb" not in r.stderr and not (tmp_path / "a").exists()
    line = cli_error(capsys, "predict", bombs / "big12000.png", "--model", "synthetic-tiny", "-o", tmp_path / "b")
    assert "--max-pixels 120000000" in line and "12000x12000" in line and not (tmp_path / "b").exists()


def test_validate_folder_with_a_bomb_is_one_line(tmp_path, bombs, tiny_plain_export, capsys):
    """D8: `validate --images DIR` checks every photo's header up front: one line naming the limit and the flag; with
    the flag raised above the photo, the same folder passes that check (the API's ``max_pixels`` too)."""
    from edgedepth.images import image_set

    line = cli_error(capsys, "validate", tiny_plain_export["fp32"], "--model", "synthetic-tiny",
                     "--images", bombs / "folder", "--json", tmp_path / "r.json")
    assert "--max-pixels 120000000" in line and "30000x30000" in line and not (tmp_path / "r.json").exists()
    assert len(image_set(str(bombs / "folder"), max_pixels=900_000_000)) == 1


def test_max_pixels_flag_moves_the_limit(tmp_path, small_photo, capsys):
    """D8: --max-pixels below a photo refuses it (one line, nothing written); at its size the photo goes through."""
    line = cli_error(capsys, "predict", small_photo, "--model", "synthetic-tiny", "--size", "56x70",
                     "-o", tmp_path / "a", "--max-pixels", "2399")
    assert "--max-pixels 2399" in line and "60x40" in line and not (tmp_path / "a").exists()
    from edgedepth.cli import main

    assert main(["predict", str(small_photo), "--model", "synthetic-tiny", "--size", "56x70", "-o", str(tmp_path / "b"),
                 "--max-pixels", "2400", "--quiet"]) == 0
    assert Image.open(tmp_path / "b" / "small_depth.png").size == (60, 40)


def test_pil_own_limit_never_surfaces_and_is_restored(monkeypatch, small_photo):
    """D8: PIL's DecompressionBombWarning/Error never reach the user (ours applies instead), and PIL's global limit is
    the same after a load as before (lifted for that one open only)."""
    from edgedepth.preprocess import image_size, load_image

    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", 1000)       # 2400 pixels: above PIL's error threshold (2 x 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert load_image(str(small_photo)).size == (60, 40)
        assert image_size(str(small_photo)) == (60, 40)
    assert Image.MAX_IMAGE_PIXELS == 1000
    with pytest.raises(EdgedepthError, match="max_pixels 2000 .*60x40") as e:
        load_image(str(small_photo), max_pixels=2000)
    assert e.value.for_cli().startswith("--max-pixels 2000")
    with pytest.raises(EdgedepthError, match="max_pixels"):
        load_image(str(small_photo), max_pixels=0)
    assert Image.MAX_IMAGE_PIXELS == 1000


def _old_colorize(depth):
    """predict.colorize before issue 27: matplotlib's float64 RGBA at photo size."""
    from matplotlib import colormaps

    from edgedepth.predict import COLORMAP, normalise

    return (colormaps[COLORMAP](normalise(depth))[..., :3] * 255 + 0.5).astype(np.uint8)


def test_colorize_lut_is_bit_identical_to_matplotlib():
    """D8: colorize through a uint8 table gives matplotlib's colours bit for bit: random maps (float16/32/64), every
    bin edge k/256 and its float neighbours, 0 and 1, NaN, constant and integer maps, 1-D and 3-D arrays."""
    from edgedepth.predict import colorize

    rng = np.random.default_rng(0)
    edges = np.arange(257) / 256
    edges = np.clip(np.concatenate([edges, np.nextafter(edges, 2), np.nextafter(edges, -1)]), 0, 1)
    maps = [rng.standard_normal((123, 517)).astype(dt) for dt in (np.float16, np.float32, np.float64)]
    maps += [edges.astype(dt).reshape(3, -1) for dt in (np.float32, np.float64)]
    maps += [np.full((5, 7), 3.0, np.float32), np.zeros(4, np.float32), np.arange(12).reshape(3, 4),
             np.full((3, 3), 7, np.int32), np.array([[0.0, np.nan, 1.0]], np.float32),
             -rng.random((2, 40, 50), dtype=np.float32), rng.random((1, 3 * (1 << 20) // 2), dtype=np.float32)]
    for d in maps:
        old, new = _old_colorize(d), colorize(d)
        assert new.dtype == np.uint8 and new.shape == old.shape and np.array_equal(new, old), (d.dtype, d.shape)


def test_colorize_and_raw_outputs_use_slices_not_photo_sized_float64():
    """D8: colour PNG and 16-bit PNG of a 3000x3000 map allocate their result plus slice-sized temporaries (matplotlib's
    path needed ~80 bytes per pixel: the 4.29 GiB float64 RGBA of a 12000x12000 photo); the 16-bit maps are unchanged."""
    from edgedepth.predict import colorize, metres_png16

    depth = np.random.default_rng(1).random((3000, 3000), dtype=np.float32) * 30
    tracemalloc.start()
    try:
        rgb = colorize(depth)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < rgb.nbytes + 40e6, peak               # slices: 2^20 values x ~25 bytes of temporaries
    small = depth[:300, :400]
    mm, clipped = metres_png16(small * 3)
    mm0 = np.rint(np.clip(np.asarray(small * 3, np.float64), 0, None) * 1000.0)
    assert np.array_equal(mm, np.minimum(mm0, 65535).astype(np.uint16)) and clipped == float(np.mean(mm0 > 65535))
    assert 0 < clipped < 1


def test_relative_png16_unchanged(tmp_path):
    """D8: predict --raw's 16-bit PNG (now made a slice at a time) holds the same values as the whole-array formula."""
    from edgedepth.predict import normalise, write_outputs

    depth = np.random.default_rng(2).random((70, 90), dtype=np.float32)
    write_outputs(depth, "d", str(tmp_path), raw=True)
    assert np.array_equal(np.asarray(Image.open(tmp_path / "d_depth16.png")).astype(np.uint16),
                          (normalise(depth) * 65535 + 0.5).astype(np.uint16))
    assert np.array_equal(np.asarray(Image.open(tmp_path / "d_depth.png")), _old_colorize(depth))


def test_size_is_capped(tmp_path, small_photo, capsys):
    """D9: --size has an upper limit (1400 a side, 100 patches): one line naming it (was "unexpected MemoryError")."""
    from edgedepth.preprocess import MAX_SIDE, parse_size

    assert parse_size("1400x1400") == (1400, 1400) and MAX_SIDE == 1400
    with pytest.raises(EdgedepthError, match="at most 1400"):
        parse_size("1414x14")
    line = cli_error(capsys, "export", "--model", "synthetic-tiny", "--size", "140000x140000", "--out", tmp_path / "e")
    assert "--size '140000x140000'" in line and "1400" in line
    line = cli_error(capsys, "predict", small_photo, "--model", "synthetic-tiny", "--size", "1414x1414",
                     "-o", tmp_path / "p")
    assert "--size '1414x1414'" in line and "1400" in line
    assert not (tmp_path / "e").exists() and not (tmp_path / "p").exists()


@pytest.mark.parametrize("args, flag", [(["--rounds", "0"], "--rounds"), (["--rounds", "-1"], "--rounds"),
                                        (["--iters", "0"], "--iters"), (["--warmup", "-1"], "--warmup"),
                                        (["--threads", "0"], "--threads"), (["--rounds", "two"], "--rounds")])
def test_bench_counts_must_be_positive(tmp_path, args, flag, capsys):
    """D5: bench --rounds 0/-1, --iters 0, --warmup -1 (was IndexError), --threads 0: one line naming the flag."""
    line = cli_error(capsys, "bench", tmp_path / "m.tflite", *args, "--json", tmp_path / "b.json")
    assert f"argument {flag}: " in line and "at least" in line
    assert not (tmp_path / "b.json").exists()


def test_run_interleaved_checks_its_counts():
    """D5: the library refuses rounds/iters < 1 and warmup < 0 too (an EdgedepthError, not IndexError)."""
    from edgedepth.verify.bench import run_interleaved

    x = np.zeros((1, 3, 14, 14), np.float32)
    for kw, name in (({"rounds": 0}, "rounds"), ({"iters": 0}, "iters"), ({"warmup": -1}, "warmup")):
        with pytest.raises(EdgedepthError, match=f"^{name} ") as e:
            run_interleaved({"v": lambda: None}, x, **kw)
        assert e.value.option == name


@pytest.mark.parametrize("threads", ["0", "-3"])
def test_threads_must_be_positive(tmp_path, small_photo, threads, capsys):
    """D15: --threads 0 / -3 on predict, validate and bench is one line naming --threads (was accepted silently)."""
    m = tmp_path / "m.tflite"
    for args in (["predict", small_photo, "--model", m, "-o", tmp_path / "o"], ["validate", m], ["bench", m]):
        assert "argument --threads: " in cli_error(capsys, *args, "--threads", threads)
    assert not (tmp_path / "o").exists()


def test_argparse_errors_are_one_line(capsys):
    """D5/D15: argparse's own errors (unknown flag, missing argument, --limit 0, unknown command) are one
    `edgedepth: error:` line and exit 2, in a real process too (no usage block)."""
    assert_one_line_error(run_cli("predict", "x.jpg", "-o", "out", "--bogus"), "unrecognized arguments: --bogus")
    assert "ARTIFACT" in cli_error(capsys, "bench")
    assert "argument --limit: " in cli_error(capsys, "validate", "x.tflite", "--limit", "0")
    assert "nonsense" in cli_error(capsys, "nonsense")


def test_config_json_that_is_not_an_object(tmp_path, small_photo, capsys):
    """D5: a checkpoint folder whose config.json is a JSON list is one line (was "unexpected AttributeError")."""
    ckpt = tmp_path / "ckpt"
    ckpt.mkdir()
    (ckpt / "config.json").write_text(json.dumps([{"model_type": "depth_anything"}]))
    line = cli_error(capsys, "predict", small_photo, "--model", ckpt, "--size", "56x70", "-o", tmp_path / "o")
    assert "config.json" in line and "JSON array" in line and not (tmp_path / "o").exists()
