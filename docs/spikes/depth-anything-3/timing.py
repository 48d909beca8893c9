"""CPU latency (LiteRT CompiledModel, CPU/XNNPACK, 2 threads), interleaved rounds; median per file."""
import sys, time, statistics, numpy as np
from ai_edge_litert.compiled_model import CompiledModel
from ai_edge_litert.hardware_accelerator import HardwareAccelerator as HA
from ai_edge_litert.options import CpuOptions, Options
files, rounds = sys.argv[1:], 5
runs = {}
x = np.random.default_rng(0).standard_normal((1, 3, 518, 518)).astype(np.float32)
for f in files:
    cm = CompiledModel.from_file(f, options=Options(hardware_accelerators=HA.CPU, cpu_options=CpuOptions(num_threads=2)))
    ib, ob = cm.create_input_buffers(0), cm.create_output_buffers(0)
    ib[0].write(x); cm.run_by_index(0, ib, ob)      # warm-up
    runs[f] = (cm, ib, ob, [])
for r in range(rounds):
    order = files[r % len(files):] + files[: r % len(files)]
    for f in order:
        cm, ib, ob, ts = runs[f]
        t = time.perf_counter(); cm.run_by_index(0, ib, ob); ts.append(time.perf_counter() - t)
for f in files:
    ts = runs[f][3]
    print(f"{f}: median {statistics.median(ts)*1e3:.0f} ms  (min {min(ts)*1e3:.0f}, max {max(ts)*1e3:.0f}, n={len(ts)})")
