import os

import numpy as np

import pytest

from edgedepth.formats.tflite import transport
from edgedepth.errors import EdgedepthError
from edgedepth.formats.tflite import describe
from edgedepth.runtimes.litert import LiteRTRunner
from conftest import rel_l2


def test_strip_then_rebuild_keeps_the_graph(tmp_path, tiny_plain_export, tiny_input):
    fp32, int8 = tiny_plain_export["fp32"], tiny_plain_export["int8"]
    stripped, rebuilt = tmp_path / "s.tflite", tmp_path / "r.tflite"
    emptied = transport.strip(fp32, str(stripped), min_bytes=256)
    assert emptied > 10 and os.path.getsize(stripped) < os.path.getsize(fp32) / 2
    assert transport.rebuild(str(stripped), int8, str(rebuilt)) == emptied
    a, b = describe(fp32), describe(str(rebuilt))
    assert a["op_histogram"] == b["op_histogram"] and a["inputs"] == b["inputs"] and a["weights"] == b["weights"]
    y0 = LiteRTRunner(fp32).run(tiny_input)
    y = LiteRTRunner(str(rebuilt)).run(tiny_input)
    err = rel_l2(y, y0)
    assert 0 < err < 0.1  # weights rounded to 8 bits: close to, not equal to, the original


def test_rebuild_needs_a_stripped_file(tmp_path, tiny_plain_export):
    with pytest.raises(EdgedepthError, match="not made by transport.strip"):
        transport.rebuild(tiny_plain_export["fp32"], tiny_plain_export["int8"], str(tmp_path / "r.tflite"))


def test_int8_timing_twin_keeps_the_graph_and_compresses(tmp_path, tiny_plain_export, tiny_input):
    import gzip

    int8 = tiny_plain_export["int8"]
    zeroed, filled = tmp_path / "z.tflite", tmp_path / "f.tflite"
    n = transport.zero_int8(int8, str(zeroed))
    assert n > 10
    raw = zeroed.read_bytes()
    int8_bytes = describe(int8)["weights"]["int8"]["bytes"]
    saved = len(gzip.compress(open(int8, "rb").read())) - len(gzip.compress(raw))
    assert saved > 0.8 * int8_bytes          # the int8 weights were the incompressible part; zeros cost ~nothing
    assert transport.fill_int8(str(zeroed), str(filled), seed=1) == n
    a, b = describe(int8), describe(str(filled))
    assert a["op_histogram"] == b["op_histogram"] and a["weights"] == b["weights"] and a["macs"] == b["macs"]
    y = LiteRTRunner(str(filled)).run(tiny_input)
    assert y.shape == LiteRTRunner(int8).run(tiny_input).shape and y.std() > 0   # random weights: runs, not constant


def test_float_timing_twin_refills_every_stripped_tensor(tmp_path, tiny_plain_export, tiny_input):
    """fill_float: the stripped graph comes back with seeded weights of the same shapes (deterministic per seed)."""
    fp32 = tiny_plain_export["fp32"]
    stripped, a_path, b_path = tmp_path / "s.tflite", tmp_path / "a.tflite", tmp_path / "b.tflite"
    emptied = transport.strip(fp32, str(stripped), min_bytes=256)
    assert transport.fill_float(str(stripped), str(a_path), seed=3) == emptied
    transport.fill_float(str(stripped), str(b_path), seed=3)
    assert a_path.read_bytes() == b_path.read_bytes()
    a, b = describe(fp32), describe(str(a_path))
    assert a["op_histogram"] == b["op_histogram"] and a["weights"] == b["weights"] and a["macs"] == b["macs"]
    y = LiteRTRunner(str(a_path)).run(tiny_input)
    assert y.shape == LiteRTRunner(fp32).run(tiny_input).shape and np.isfinite(y).all() and y.std() > 0
    with pytest.raises(EdgedepthError, match="not made by transport.strip"):
        transport.fill_float(fp32, str(tmp_path / "c.tflite"))
