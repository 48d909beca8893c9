import os

import pytest

from edgedepth import transport
from edgedepth.errors import EdgedepthError
from edgedepth.inspect import describe
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
