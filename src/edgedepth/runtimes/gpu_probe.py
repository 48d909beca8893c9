"""GPU delegation probe, run in a child process: ``python -m edgedepth.runtimes.gpu_probe FILE [X.npy Y.npy]``.

Compiles the file on LiteRT's GPU accelerator *alone* (``enforce_f32=True``) and prints one JSON line.  The native
library reports what it delegates on stderr (which Python cannot capture in-process), and a broken driver can crash
the process: hence a child.  The parent (inspect.gpu_check) parses the child's stderr.
"""

from __future__ import annotations

import json
import sys


def main(path: str, x_path: str | None = None, y_path: str | None = None, enforce_f32: bool = True) -> int:
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
    from ai_edge_litert.options import GpuOptions, Options

    result = {"compiled": False, "fully_accelerated": False, "exception": None}
    try:
        cm = CompiledModel.from_file(path, options=Options(hardware_accelerators=HA.GPU,
                                                           gpu_options=GpuOptions(enforce_f32=enforce_f32)))
        result["compiled"] = True
        result["fully_accelerated"] = bool(cm.is_fully_accelerated())
        if x_path:  # optionally run one input through it (GPU parity checks from a clean process)
            import numpy as np

            x = np.load(x_path)
            ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
            ib[0].write(np.ascontiguousarray(x, np.float32))
            cm.run_by_index(0, ib, ob)
            np.save(y_path, ob[0].read(x.shape[2] * x.shape[3], np.float32).reshape(1, x.shape[2], x.shape[3]))
    except Exception as e:  # reported to the parent, which turns it into data
        result["exception"] = " ".join(str(e).split())
    sys.stderr.flush()
    print("EDGEDEPTH_GPU_PROBE " + json.dumps(result), flush=True)
    return 0


if __name__ == "__main__":
    a = sys.argv[1:]
    sys.exit(main(a[0], *(a[1:3] if len(a) >= 3 else []), enforce_f32="--default-precision" not in a))
