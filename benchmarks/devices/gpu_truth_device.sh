#!/usr/bin/env bash
# Issue 30's two GPU calls on the lent H200 (Python 3.12, no registries), back to back while the machine is warm.
# Here, first:  .venv/bin/python benchmarks/gpu_options.py prepare out/depth-anything-v2-small      (-> .dev/gpu)
#               .whl: ai-edge-litert 2.3.0 cp312 + backports.strenum 1.2.8; .gl: benchmarks/devices/h200_prepare.sh's .deb part;
#               .whl2: transformers 5.24.0 (the device has 5.17)
# Call 1  carry [".gl", ".whl", ".dev/gpu"]   bash benchmarks/devices/gpu_truth_device.sh options
#         every LiteRT GpuOptions flag, interleaved, with correctness vs CPU -> $OUT/gpu_options.json
# Call 2  carry [".whl2"]                      bash benchmarks/devices/gpu_truth_device.sh limit
#         (on a fresh machine carry [".gl", ".whl", ".dev/gpu"] instead: compare then uses results/gpu_options.json's
#         choice and the device's own transformers)
#         the WebGPU file with the chosen flags vs none, then PyTorch CUDA (both timers) in the same call
#         -> $OUT/gpu_options_compare.json, $OUT/gpu_reference.json (+ logs)
source "$(dirname "$0")/device_env.sh"
case "${1:-}" in
options)
  timeout "${OPTIONS_TIMEOUT:-480}" python3 benchmarks/gpu_options.py run ${OPTIONS_ARGS:-} > "$OUT/gpu_options.log" 2>&1 \
    || echo "gpu_options exit $?"
  grep -v "^INFO\|^I0000\|^W0000\|^WARNING\|^VERBOSE\|^compiled" "$OUT/gpu_options.log" | tail -60 ;;
limit)
  # .whl2 carried: our pinned transformers; not carried: the device's own (5.17; it gives SDPA no mask under compile)
  if compgen -G ".whl2/*.whl" > /dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_tf .whl2/*.whl
  fi
  timeout "${COMPARE_TIMEOUT:-150}" python3 benchmarks/gpu_options.py compare > "$OUT/gpu_options_compare.log" 2>&1 \
    || echo "compare exit $?"
  grep -v "^INFO\|^I0000\|^W0000\|^WARNING\|^VERBOSE\|^compiled" "$OUT/gpu_options_compare.log" | tail -8
  PYTHONPATH=/tmp/site_tf:$PYTHONPATH timeout "${REF_TIMEOUT:-400}" python3 benchmarks/gpu_reference.py \
    --images-root .dev/gpu/images ${REF_ARGS:---rounds 5 --warmup 20 --iters 50} --out "$OUT/gpu_reference.json" \
    > "$OUT/gpu_reference.log" 2>&1 || echo "gpu_reference exit $?"
  grep "solo\|events\|wrote\|Error\|error" "$OUT/gpu_reference.log" | tail -30 ;;
probe)
  PYTHONPATH=/tmp/site_tf:$PYTHONPATH timeout "${PROBE_TIMEOUT:-300}" python3 benchmarks/gpu_limit_probe.py \
    > "$OUT/gpu_limit_probe.log" 2>&1 || echo "probe exit $?"
  grep -v "^W1\|^I1" "$OUT/gpu_limit_probe.log" | tail -40 ;;
*) echo "usage: $0 options|limit|probe" >&2; exit 2 ;;
esac
