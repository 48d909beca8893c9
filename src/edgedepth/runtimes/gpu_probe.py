"""GPU delegation probe, run in a child process: ``python -m edgedepth.runtimes.gpu_probe FILE.tflite``.

Compiles the file on LiteRT's GPU accelerator *alone* (``enforce_f32=True``) and prints one JSON line.  The native
library reports what it delegates on stderr (which Python cannot capture in-process), and a broken driver can crash
the process: hence a child.  The parent (inspect.gpu_check) parses the child's stderr.
"""

from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
    from ai_edge_litert.options import GpuOptions, Options

    result = {"compiled": False, "fully_accelerated": False, "exception": None}
    try:
        cm = CompiledModel.from_file(path, options=Options(hardware_accelerators=HA.GPU,
                                                           gpu_options=GpuOptions(enforce_f32=True)))
        result["compiled"] = True
        result["fully_accelerated"] = bool(cm.is_fully_accelerated())
    except Exception as e:  # reported to the parent, which turns it into data
        result["exception"] = " ".join(str(e).split())
    sys.stderr.flush()
    print("EDGEDEPTH_GPU_PROBE " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
