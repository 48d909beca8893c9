"""Which file for which use (edgedepth.release.recommend): decided from the manifest entries' own measurements."""

from edgedepth.release.recommend import recommend


def _entry(precision, mb, *, gpu=True, rel=None, cpu_ms=None, size="518x686", h200=None, wasm_ms=None):
    lat = [{"backend": "cpu", "median_ms": cpu_ms, "threads": 2, "cpu": "test CPU",
            **({"h200_gpu_fp32_median_ms": h200} if h200 else {})}] if cpu_ms else []
    lat += [{"backend": "litertjs-wasm", "median_ms": wasm_ms, "threads": 2, "cpu": "test CPU"}] if wasm_ms else []
    return {"format": "tflite", "path": f"m_{size}_{precision}.tflite", "precision": precision, "size": size,
            "bytes": int(mb * 1e6), "gpu_fully_delegated": gpu, "latency": lat,
            "parity": [{"pooled_rel_l2": rel}] if rel is not None else []}


def test_measured_release():
    entries = [_entry("fp32", 99.7, rel=1e-6, cpu_ms=1100, h200=15.3, wasm_ms=6000),
               _entry("fp16", 51.6, rel=3e-4, cpu_ms=1400, h200=15.2, wasm_ms=6500),
               _entry("int8", 27.9, rel=2e-2, cpu_ms=900), _entry("int8", 27.0, size="518x518", rel=2e-2, cpu_ms=800)]
    r = recommend(entries, "518x686", 0.1)
    assert r["webgpu"]["path"].endswith("518x686_fp16.tflite") and "52% of the FP32 download" in r["webgpu"]["why"]
    assert "H200 WebGPU 15.2 ms" in r["webgpu"]["why"]
    assert r["cpu"]["path"].endswith("518x686_int8.tflite")          # other sizes are never chosen
    assert r["wasm"]["path"].endswith("518x686_fp32.tflite") and "fp16 6500 ms" in r["wasm"]["why"]  # browser numbers
    # within 5 % of the fastest, the most accurate wins: a 2 % CPU difference is noise, not a reason to lose accuracy
    close = [_entry("fp32", 99.7, rel=1e-6, cpu_ms=1100), _entry("fp16", 51.6, rel=3e-4, cpu_ms=1076)]
    assert recommend(close, "518x686", 0.1)["cpu"]["path"].endswith("_fp32.tflite")
    assert r["smallest"]["path"].endswith("518x686_int8.tflite")


def test_uint8_input_file_is_the_webgpu_file_and_nothing_else():
    """A fully delegated uint8-input float file wins WebGPU (less to write per call) even when larger; CPU / wasm /
    smallest keep to float32-input files (what their callers feed), also when the uint8 file is measured faster."""
    u8 = {**_entry("fp32", 99.7, rel=1e-6, cpu_ms=900, wasm_ms=100), "path": "m_518x686_fp32_u8in.tflite",
          "input": {"dtype": "uint8"}}
    entries = [_entry("fp32", 99.7, rel=1e-6, cpu_ms=1100), _entry("fp16", 51.6, rel=3e-4, cpu_ms=1400), u8]
    r = recommend(entries, "518x686", 0.1)
    assert r["webgpu"]["path"] == "m_518x686_fp32_u8in.tflite" and "uint8 RGB pixels" in r["webgpu"]["why"]
    assert r["cpu"]["path"] == r["wasm"]["path"] == "m_518x686_fp32.tflite"
    assert r["smallest"]["path"].endswith("_fp16.tflite")
    # not fully delegated: back to the smallest float-input file
    assert recommend(entries[:2] + [{**u8, "gpu_fully_delegated": False}], "518x686", 0.1)["webgpu"]["path"] \
        .endswith("_fp16.tflite")


def test_unmeasured_or_failing_files_are_not_recommended():
    entries = [_entry("fp32", 99.7), _entry("fp16", 51.6, gpu=False), _entry("int8", 27.9, rel=0.5, cpu_ms=500)]
    r = recommend(entries, "518x686", 0.1)
    assert r["webgpu"]["path"].endswith("_fp32.tflite")          # fp16 did not compile fully on the GPU
    assert r["cpu"]["path"].endswith("_fp32.tflite") and "no CPU latency" in r["cpu"]["why"]  # int8 fails the gate
    assert "smallest" not in r
    assert recommend(entries, "224x224", 0.1) == {}


def test_accuracy_is_compared_inside_one_parity_report():
    """A file measured by two parity reports (22 and 110 images) is ranked by the report that measured most files."""
    fp32, fp16 = _entry("fp32", 99.7, cpu_ms=1100), _entry("fp16", 51.6, cpu_ms=1090)
    fp32["parity"] = [{"pooled_rel_l2": 9e-4, "source": "release_22.json"}, {"pooled_rel_l2": 6e-7, "source": "ladder.json"}]
    fp16["parity"] = [{"pooled_rel_l2": 3e-4, "source": "ladder.json"}]
    r = recommend([fp32, fp16], "518x686", 0.1)
    assert r["cpu"]["path"].endswith("_fp32.tflite") and "6.0e-07" in r["cpu"]["why"]   # first-row rule: fp16


def test_why_states_only_what_was_checked():
    """Built with --no-gpu-check (gpu_fully_delegated None): the webgpu pick may stand, but its reason says the
    delegation was not checked and never claims "fully on the GPU delegate"."""
    entries = [_entry("fp32", 99.7, gpu=None), _entry("fp16", 51.6, gpu=None)]
    why = recommend(entries, "518x686", 0.1)["webgpu"]["why"]
    assert "not checked" in why and "fully on the GPU" not in why
    assert "fully on the GPU delegate" in recommend([_entry("fp16", 51.6)], "518x686", 0.1)["webgpu"]["why"]
