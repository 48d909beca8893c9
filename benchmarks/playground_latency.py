"""LiteRT.js wasm (headless chromium, threaded build) vs ai_edge_litert CPU (Python), same .tflite, same input.
Interleaved rounds; per call = write input + run + read output; medians."""
import sys, json, statistics, time, os
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'tests'))
from playwright.sync_api import sync_playwright
from edgedepth.serve import make_server, start_in_thread, url_of
from edgedepth.runtimes.litert import LiteRTRunner
from edgedepth.release import manifest as mf
folder, rounds, warm, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
only = sys.argv[5:] 
srv = make_server(folder, port=0); start_in_thread(srv); base = url_of(srv)
m = mf.load(folder)
photo = os.path.join(os.path.dirname(__file__), '..', 'tests', 'vectors', 'rgb_160x120.png')
res = {}
with sync_playwright() as p:
    b = p.chromium.launch(executable_path='/usr/bin/chromium', args=['--no-sandbox','--disable-background-networking','--disable-component-update','--disable-sync','--disable-quic','--no-first-run'])
    for e in m['files']:
        if only and e['precision'] not in only: continue
        pg = b.new_page()
        pg.goto(f"{base}?backend=wasm&artifact={e['path']}")
        pg.wait_for_function("edgedepth.state !== 'starting'")
        pg.set_input_files('#file', photo)
        pg.wait_for_function("edgedepth.runs >= 1 || edgedepth.state === 'error'", timeout=600000)
        rt = pg.evaluate("edgedepth.runtime")
        x = np.asarray(pg.evaluate("Array.from(edgedepth.lastInput)"), np.float32).reshape(e['input']['shape'])
        r = LiteRTRunner(os.path.join(folder, e['path']), 'cpu', threads=2)
        js, py = [], []
        for k in range(rounds):
            for _ in range(warm): r.run(x)
            for _ in range(iters):
                t = time.perf_counter(); r.run(x); py.append((time.perf_counter() - t) * 1000)
            js += pg.evaluate(f"edgedepth.benchmark({{warmup: {warm}, iters: {iters}}})")
        y_js = np.asarray(pg.evaluate("Array.from(edgedepth.lastOutput)"), np.float32)
        y_py = r.run(x).ravel()
        rel = float(np.linalg.norm(y_js - y_py) / np.linalg.norm(y_py))
        res[e['path']] = {"litertjs_wasm_median_ms": statistics.median(js), "litertjs_p25_p75": [float(np.percentile(js,25)), float(np.percentile(js,75))],
                          "ai_edge_litert_cpu_median_ms": statistics.median(py), "py_p25_p75": [float(np.percentile(py,25)), float(np.percentile(py,75))],
                          "n_js": len(js), "n_py": len(py), "rel_l2": rel, "runtime": rt,
                          "sha256": e['sha256'], "precision": e['precision'], "size": e.get('size')}
        print(e['path'], json.dumps(res[e['path']]), flush=True)
        r.close(); pg.close()
    b.close()
srv.shutdown()

# merge into the committed record (entries keyed by file name; rows with sha256 reach the release's manifest/card)
from edgedepth.verify.bench import environment
out = os.path.join(os.path.dirname(__file__), 'results', 'playground_latency.json')
rec = json.load(open(out)) if os.path.exists(out) else {"kind": "edgedepth.playground_latency", "files": {}}
rec["files"].update(res)
rec["method_counts"] = {"rounds": rounds, "warmup": warm, "iters": iters}
rec["cpu"] = environment(2).get("cpu")
rec["method"] = ("headless Debian chromium, LiteRT.js threaded wasm (2 threads, cross-origin isolated) vs ai_edge_litert "
                 f"CPU 2 threads, same .tflite, same preprocessed input; interleaved rounds {rounds} x ({warm} warm-up + "
                 f"{iters} timed); call = write input + run + read output")
with open(out + '.tmp', 'w') as f:
    json.dump(rec, f, indent=1)
os.replace(out + '.tmp', out)
print('wrote', out)
