// LiteRT.js for the playground: manifest files of format "tflite", one [1,3,H,W] input -> one [1,H,W] output, on
// WebGPU or wasm. Every file of web/runtimes/ exports the same shape as its default (web/README.md, "Module layout"):
//   {id, name, formats, accepts?(entry, manifest), label?(entry), webgpuLabel?, start(threads, warn) -> info,
//    webgpu(bytes, entry, gpu) -> {model, label?, note?} | {reason}, wasm(bytes, entry) -> model}
// where a model is {run(tensor, H, W, parts?) -> Float32Array [H*W], dispose(), gpu?} and gpu (a WebGPU model whose
// tensors can stay on the GPU; gpuframes.js) is {device() -> GPUDevice, bind(GPUBuffer, shape, dtype) -> {run() ->
// {buffer: GPUBuffer of output 0, release()}, release()}}. The backend choice and fallback rules
// are model.js's. LiteRT.js starts with the page (its thread count is the other runtimes'); its wasm and package.json
// come from /vendor/ (never a CDN).

import * as litert from '@litertjs/core';
import { msg } from '../files.js';

const VENDOR = './vendor/@litertjs/core/';

// What LiteRT prints (its compile diagnostics) goes to the console through functions bound when the runtime loads,
// so the console is tapped once, up front (when this module is first imported), into a ring buffer; webgpu() reads
// the lines printed while it compiled.
const consoleLines = [];
let consoleSeq = 0;
for (const k of ['log', 'info', 'warn', 'error']) {
  const orig = console[k].bind(console);
  console[k] = (...a) => {
    // A '%c' format string's extra arguments are CSS, not text.
    const text = typeof a[0] === 'string' && a[0].includes('%c') ? a[0].replace(/%c/g, '') : a.map(String).join(' ');
    consoleLines.push(text);
    consoleSeq += 1;
    if (consoleLines.length > 300) consoleLines.shift();
    orig(...a);
  };
}
function linesSince(seq) { return consoleLines.slice(Math.max(0, consoleLines.length - (consoleSeq - seq))); }

function diagnostics(lines) {
  const useful = lines.map((l) => l.replace(/^(ERROR|WARNING|INFO):\s*/, '').trim())
    .filter((l) => /not supported|unsupported|unable|failed|will run on the CPU/i.test(l) && !/NPU accelerator/.test(l));
  return useful.length ? `. LiteRT says: ${[...new Set(useful)].slice(0, 4).join(' ').slice(0, 400)}` : '';
}

/** Load LiteRT.js: its threaded relaxed-SIMD build when the page is cross-origin isolated and the browser has both
 * features, else (or when that build fails to load) the single-threaded one. `warn(text)` gets what the page should
 * say. Returns {litertjs: version, threads, crossOriginIsolated}. */
async function start(_threads, warn = () => {}) {
  const isolated = self.crossOriginIsolated === true;
  let threads = false;
  if (isolated) {
    try {
      threads = (await litert.supportsFeature('threads')) && (await litert.supportsFeature('relaxedSimd'));
    } catch { threads = false; }
  }
  let lr;
  try {
    lr = await litert.loadLiteRt(`${VENDOR}wasm/`, threads ? { threads: true } : {});
  } catch (e) {
    if (!threads) throw e;
    warn(`Threaded LiteRT.js failed to load (${msg(e)}); using the single-threaded build.`);
    threads = false;
    lr = await litert.loadLiteRt(`${VENDOR}wasm/`);
  }
  let version = '?';
  try { version = (await (await fetch(`${VENDOR}package.json`)).json()).version; } catch { /* shown as ? */ }
  const n = lr.liteRtWasm.getThreadCount ? lr.liteRtWasm.getThreadCount() : 1;
  if (!isolated) warn('The page is not cross-origin isolated (COOP/COEP headers missing): wasm runs single-threaded.');
  return { litertjs: version, threads: threads ? n : 1, crossOriginIsolated: isolated };
}

/** A compiled model: input tensor + run + output read-back; `parts` ({write, run, read} ms) filled in when given.
 * On WebGPU also `gpu`: the model on an input that is already a GPU buffer, its first output left on the GPU. */
function wrap(model, onGpu = false) {
  return {
    gpu: onGpu ? { device: () => litert.getWebGpuDevice(),
      bind: (buffer, shape, dtype) => bindGpu(model, buffer, shape, dtype) } : null,
    async run(tensor, H, W, parts = null) {
      const t0 = performance.now();
      const input = new litert.Tensor(tensor, [1, 3, H, W]);
      const t1 = performance.now();
      let outputs;
      try {
        outputs = await model.run(input);
      } finally {
        input.delete();
      }
      const t2 = performance.now();
      const first = outputs[0];
      const host = first.accelerator === 'wasm' ? first : await first.moveTo('wasm');
      const y = host.toTypedArray().slice();
      host.delete();
      y.more = [];          // the file's other outputs in order (Depth Anything 3: confidence), read back likewise
      for (const t of outputs.slice(1)) {
        const h = t.accelerator === 'wasm' ? t : await t.moveTo('wasm');
        y.more.push(h.toTypedArray().slice());
        h.delete();
      }
      if (parts) Object.assign(parts, { write: t1 - t0, run: t2 - t1, read: performance.now() - t2 });
      return y;
    },
    dispose: () => model.delete(),
  };
}

/** `model` on a GPU input buffer (a Tensor made once): run() -> its first output's GPU buffer, nothing read back. */
function bindGpu(model, buffer, shape, dtype) {
  const input = new litert.Tensor(buffer, shape, dtype);
  return {
    async run() {
      const outputs = await model.run(input);
      for (const t of outputs.slice(1)) t.delete();
      const out = outputs[0];
      if (out.accelerator !== 'webgpu') {
        out.delete();
        throw new Error(`LiteRT.js returned the output on ${out.accelerator}, not on the GPU`);
      }
      return { buffer: out.toGpuBuffer(), release: () => out.delete() };
    },
    release: () => input.delete(),
  };
}

/** LiteRT.js on WebGPU: {model} when fully delegated, else {reason}. */
async function webgpu(bytes, entry, gpu) {
  if (!litert.getWebGpuDevice()) return { reason: `LiteRT.js could not create a WebGPU device on ${gpu.name}` };
  const seq = consoleSeq;
  try {
    const m = await litert.getGlobalLiteRt().loadAndCompile(bytes, { accelerator: 'webgpu', gpuOptions: { precision: 'fp32' } });
    if (m.options.accelerator === 'webgpu' && m.isFullyAccelerated) return { model: wrap(m, true) };
    const split = m.options.accelerator === 'webgpu';
    m.delete();
    return {
      reason: 'the model is not fully delegated to WebGPU (' +
        (split ? 'LiteRT.js would split it between WebGPU and wasm' : 'LiteRT.js fell back to wasm') + ')' +
        (entry.gpu_fully_delegated === false ? '; manifest.json also says gpu_fully_delegated: false' : '') +
        diagnostics(linesSince(seq)),
    };
  } catch (e) {
    return { reason: `WebGPU compilation failed: ${msg(e)}${diagnostics(linesSince(seq))}` };
  }
}

export default {
  id: 'litert',
  name: 'LiteRT.js',
  formats: ['tflite'],
  webgpuLabel: 'WebGPU (FP32 precision requested)',
  start,
  webgpu,
  wasm: async (bytes) => wrap(await litert.getGlobalLiteRt().loadAndCompile(bytes, { accelerator: 'wasm' })),
};
