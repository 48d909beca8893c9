// edgedepth playground: manifest.json -> verified download (Cache Storage) -> LiteRT.js and/or ONNX Runtime Web
// (WebGPU or wasm) -> depth map(s). Plain ES module, no framework, no bundler. Test hooks live on window.edgedepth
// (see web/README.md).

import * as litert from '@litertjs/core';
import { colorizeDepth, colorizeUnit, normalizeDepth } from './colormap.js';
import { createSession, loadOrt, ortInfo, runSession } from './ort.js';
import { decodeImage, pixelsToNCHW, preprocessRGBA } from './preprocess.js';
import { emaStep, FpsMeter } from './video.js';

const params = new URLSearchParams(location.search);
const RELEASE = withSlash(params.get('release') || './release/');
const VENDOR = './vendor/@litertjs/core/';
const CACHE_NAME = 'edgedepth-models-v1';
const PHOTO_MAX = 1280;   // longest side of the displayed photo
const NAMES = { litert: 'LiteRT.js', ort: 'ONNX Runtime Web' };
const MODES = ['litert', 'ort', 'compare'];

const $ = (id) => document.getElementById(id);
const ui = {
  mode: $('runtime'), artifact: $('artifact'), backend: $('backend'), load: $('load'), progress: $('progress'),
  progressText: $('progress-text'), artifactInfo: $('artifact-info'), messages: $('messages'),
  state: $('st-state'), backendOut: $('st-backend'), adapter: $('st-adapter'), runtime: $('st-runtime'),
  latency: $('st-latency'), compareRow: $('st-compare-row'), compare: $('st-compare'), file: $('file'),
  drop: $('drop'), webcam: $('webcam'), photo: $('photo'), views: $('views'), depth: $('depth'), video: $('video'),
  depthCaption: $('depth-caption'), depthAt: $('depth-at'), depthTitle: $('depth-title'), ortFigure: $('ort-figure'),
  depthOrt: $('depth-ort'), smooth: $('smooth'), smoothAlpha: $('smooth-alpha'), smoothAlphaOut: $('smooth-alpha-out'),
  videoRow: $('st-video-row'), videoOut: $('st-video'),
};

// Everything a test (or a curious user in the console) may read.
const E = {
  state: 'starting',          // starting | idle | downloading | verifying | compiling | ready | running | error
  mode: 'litert',             // 'litert' | 'ort' | 'compare': which runtime(s) run the photo
  // The fields below describe the page's runtime: LiteRT.js ('litert' and 'compare') or ONNX Runtime Web ('ort').
  artifact: null,             // manifest path of the loaded file
  backend: null,              // 'webgpu' | 'wasm' (what actually runs)
  backendRequested: null,     // 'auto' | 'webgpu' | 'wasm'
  backendReason: null,        // why wasm runs when WebGPU was possible to ask for
  adapter: null,              // WebGPU adapter name, or null
  adapterIsFallback: null,
  runtime: null,              // {litertjs, threads, crossOriginIsolated, ort: {version, threads} once ORT-web loaded}
  source: null,               // 'network' | 'cache' for the loaded file
  downloads: 0,               // network downloads of model files in this page
  lastInput: null,            // [1,3,H,W] of the last inference: Float32Array, or Uint8Array pixels for a _u8in file
  lastOutput: null,           // Float32Array [1,H,W]
  lastOutputShape: null,
  lastLatencyMs: null,        // model.run + output read-back
  lastPreprocessMs: null,
  latencies: [],              // this model's latencies (ms), one per inference since it was loaded
  runs: 0,
  errors: [],
  messages: [],
  manifest: null,
  webcam: null,               // null | 'running' | 'stopped' | message when unavailable
  video: null,                // while/after the webcam runs: {fps, frames, backend, prevShown, frameTimes,
                              //   preprocessMs}; prevShown = the normalised map shown before the last frame (what
                              //   smoothing blended with); frameTimes = performance.now() of each frame shown
  smoothing: { on: false, alpha: 0.3 },   // webcam only: EMA of the normalised map, alpha = weight of the new frame
  shownMap: null,             // Float32Array [H*W]: the normalised (and, on video, smoothed) map drawn in #depth
  maxDepth: null,             // metres, for a metric release (manifest.model.kind 'metric'); null: relative depth
  depthAt: null,              // {x, y, value} under the cursor, in the model output's pixels
  ort: null,                  // ONNX Runtime Web's model ('ort', 'compare'): {artifact, backend, backendReason, source,
                              //   lastLatencyMs, latencies}
  ortLastOutput: null,        // Float32Array [1,H,W] of ONNX Runtime Web's last inference
  compare: null,              // 'compare': {relL2, maxAbs, litert: {ms, backend, artifact}, ort: {...}}
};
window.edgedepth = E;

let manifestFiles = { litert: [], ort: [] };   // .tflite and .onnx entries of manifest.json
let lastInputs = null;        // the last inference's inputs by dtype: {float32: Float32Array, uint8: Uint8Array | null}
let recommended = null;       // manifest.json's recommendation for the backend that will run, {path, why, use}
const current = { litert: null, ort: null };   // per runtime: {key, entry, choice, model, backend, reason, source}
const loading = { litert: null, ort: null };   // per runtime: {key, promise} of the load in progress
let busy = false;
let pending = null;           // latest image waiting while an inference runs
let photoAspect = null;

// ---------------------------------------------------------------------------------------------------- messages

function msg(e) {
  if (e instanceof Error) return e.message || String(e);
  if (typeof e === 'number') return `LiteRT native error (code ${e})`;
  return String(e);
}

function say(kind, text) {
  E.messages.push({ kind, text });
  if (kind === 'error') E.errors.push(text);
  const p = document.createElement('p');
  p.className = `msg ${kind}`;
  p.textContent = text;
  ui.messages.appendChild(p);
  while (ui.messages.children.length > 30) ui.messages.firstChild.remove();
  (kind === 'error' ? console.error : console.log)(`[edgedepth] ${text}`);
}

function setState(s) {
  E.state = s;
  ui.state.textContent = s;
  ui.state.dataset.state = s;
}

class Refused extends Error {}

window.addEventListener('error', (e) => say('error', `Unexpected error: ${e.message || e}`));
window.addEventListener('unhandledrejection', (e) => say('error', `Unexpected error: ${msg(e.reason)}`));

// ---------------------------------------------------------------------------------------------------- manifest

function withSlash(s) { return s.endsWith('/') ? s : `${s}/`; }
function fileUrl(entry) { return RELEASE + entry.path.split('/').map(encodeURIComponent).join('/'); }
function mb(n) { return (n / 1e6).toFixed(n < 1e7 ? 2 : 1); }

function label(f) {
  const gpu = f.gpu_fully_delegated === true ? 'GPU: fully delegated' :
    f.gpu_fully_delegated === false ? 'GPU: not fully delegated' : '';
  const pixels = f.input?.dtype === 'uint8' ? 'uint8 pixels in' : '';   // _u8in: the WebGPU file
  return [f.size || f.input?.shape?.slice(2).join('x'), (f.precision || '?').toUpperCase(), pixels, `${mb(f.bytes)} MB`,
    gpu]
    .filter(Boolean).join(' · ');
}

const isTflite = (f) => f.format === 'tflite' || /\.tflite$/i.test(f.path || '');
const isOnnx = (f) => f.format === 'onnx' || /\.onnx$/i.test(f.path || '');

async function readManifest() {
  let res;
  try {
    res = await fetch(`${RELEASE}manifest.json`, { cache: 'no-store' });
  } catch (e) {
    throw new Error(`could not fetch ${RELEASE}manifest.json: ${msg(e)} (is \`edgedepth serve\` still running?)`);
  }
  if (!res.ok) throw new Error(`${RELEASE}manifest.json: HTTP ${res.status} ${res.statusText}`);
  let m;
  try {
    m = await res.json();
  } catch (e) {
    throw new Error(`manifest.json is not valid JSON: ${msg(e)}`);
  }
  if (m.schema_version !== 1 || !Array.isArray(m.files)) {
    throw new Error('manifest.json is not an edgedepth manifest (schema_version 1 with files)');
  }
  const files = m.files.filter((f) => isTflite(f) || isOnnx(f));
  const bad = files.filter((f) => !f.sha256 || !Number.isFinite(f.bytes) || !Array.isArray(f.input?.shape) ||
    f.input.shape.length !== 4);
  if (bad.length) throw new Error(`manifest.json: ${bad[0].path} lacks sha256, bytes or a [1,3,H,W] input shape`);
  if (!files.length) throw new Error('manifest.json lists no .tflite or .onnx file: nothing to run');
  return { manifest: m, files: { litert: files.filter(isTflite), ort: files.filter(isOnnx) } };
}

function mode() { return ui.mode.value; }
/** The runtime whose state the page's main fields show (LiteRT.js also in compare mode). */
function primary() { return mode() === 'ort' ? 'ort' : 'litert'; }
function listed() { return manifestFiles[primary()]; }

/** The .onnx compared with a .tflite: same input size; the same precision, else FP32, else any. */
function partnerOf(f) {
  if (!f) return null;
  const [, , h, w] = f.input.shape;
  const same = manifestFiles.ort.filter((o) => o.input.shape[2] === h && o.input.shape[3] === w);
  return same.find((o) => o.precision === f.precision) || same.find((o) => o.precision === 'fp32') || same[0] || null;
}

/** The default file: for LiteRT.js, manifest.json's recommendation for the backend that will run (WebGPU on a real
 * adapter: the fp16-weight file, half the download; wasm: the file recommended for the CPU / wasm); for compare, an
 * FP32 .tflite that has a matching .onnx (the recommended size first); else the first of the sorted list. */
function defaultFile(files) {
  const rec = recommended && files.find((f) => f.path === recommended.path);
  if (mode() === 'compare') {
    const pairs = files.filter((f) => partnerOf(f));
    const fp32 = pairs.filter((f) => f.precision === 'fp32');
    return fp32.find((f) => rec && f.size === rec.size) || fp32[0] || pairs[0] || files[0];
  }
  return rec || files[0];
}

/** Fill the artifact list for the runtime mode; keep `keep` (a path) when it is listed, else the default file. */
function fillArtifacts(keep, announce = false) {
  const order = (f) => [f.size === '518x686' ? 0 : 1, f.size || '', f.precision === 'fp32' ? 0 : 1];
  const files = [...listed()].sort((a, b) => {
    const x = order(a);
    const y = order(b);
    return x[0] - y[0] || x[1].localeCompare(y[1]) || x[2] - y[2];
  });
  ui.artifact.replaceChildren(...files.map((f) => new Option(label(f), f.path)));
  const keepable = files.find((f) => f.path === keep);
  if (keepable && (mode() !== 'compare' || partnerOf(keepable))) {
    ui.artifact.value = keep;
  } else {
    if (keep && announce) say('warn', `?artifact=${keep} is not a ${primary() === 'ort' ? '.onnx' : '.tflite'} file of ` +
      'manifest.json; using the default file');
    const f = defaultFile(files);
    if (f) ui.artifact.value = f.path;
    if (announce && f && recommended && f.path === recommended.path) {
      say('info', `Default file ${f.path}: recommended for ${recommended.use} (${recommended.why}).`);
    }
  }
  ui.artifact.disabled = !files.length;
  showArtifactInfo();
}

function selectedEntry() { return listed().find((f) => f.path === ui.artifact.value); }

function showArtifactInfo() {
  const f = selectedEntry();
  if (!f) {
    ui.artifactInfo.textContent = '';
    return;
  }
  const [, , h, w] = f.input.shape;
  const other = mode() === 'compare' ? partnerOf(f) : null;
  const dtype = f.input.dtype === 'uint8' ? 'uint8 NCHW (resized RGB pixels; the graph normalises)' : 'float32 NCHW';
  ui.artifactInfo.textContent = `${f.path} — input ${f.input.name || ''} [1,3,${h},${w}] ${dtype}, ` +
    `output [1,${h},${w}]` + (f.ops ? `, ${f.ops} ops` : '') + `, sha256 ${f.sha256.slice(0, 16)}…` +
    (mode() !== 'compare' ? '' : other ? `; compared with ${other.path} (${(other.precision || '?').toUpperCase()}, ` +
      `sha256 ${other.sha256.slice(0, 16)}…)` : `; no .onnx of ${h}x${w} in manifest.json to compare with`);
}

// ---------------------------------------------------------------------------------------------------- runtime

let runtimeReady = null;

async function loadRuntime() {
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
    say('warn', `Threaded LiteRT.js failed to load (${msg(e)}); using the single-threaded build.`);
    threads = false;
    lr = await litert.loadLiteRt(`${VENDOR}wasm/`);
  }
  let version = '?';
  try { version = (await (await fetch(`${VENDOR}package.json`)).json()).version; } catch { /* shown as ? */ }
  const n = lr.liteRtWasm.getThreadCount ? lr.liteRtWasm.getThreadCount() : 1;
  E.runtime = { litertjs: version, threads: threads ? n : 1, crossOriginIsolated: isolated, ort: null };
  showRuntime();
  if (!isolated) say('warn', 'The page is not cross-origin isolated (COOP/COEP headers missing): wasm runs single-threaded.');
  return lr;
}

function showRuntime() {
  const r = E.runtime;
  const t = (n) => `wasm ${n === 1 ? '1 thread' : `${n} threads`}`;
  ui.runtime.textContent = `LiteRT.js ${r.litertjs}, ${t(r.threads)}` +
    (r.ort ? ` · ONNX Runtime Web ${r.ort.version}, ${t(r.ort.threads)}` : '') +
    (r.crossOriginIsolated ? '' : ' (page not cross-origin isolated: no threads)');
}

// ONNX Runtime Web is loaded when first needed, with LiteRT.js's wasm thread count (same CPU budget for both).
let ortReady = null;
function ensureOrt() {
  if (!ortReady) {
    ortReady = (async () => {
      await runtimeReady;
      try {
        E.runtime.ort = await loadOrt(E.runtime.threads);
      } catch (e) {
        throw new Error(`ONNX Runtime Web could not start (${msg(e)}). Is \`npm ci --prefix web\` done? Run it and ` +
          'restart `edgedepth serve`');
      }
      showRuntime();
    })();
    ortReady.catch(() => { ortReady = null; });   // try again on the next load
  }
  return ortReady;
}

async function detectWebGPU() {
  if (!window.isSecureContext) return { reason: 'WebGPU needs a secure context (open the page via http://127.0.0.1 or https)' };
  if (!navigator.gpu) return { reason: 'this browser has no WebGPU (navigator.gpu is missing)' };
  let adapter = null;
  try {
    adapter = await navigator.gpu.requestAdapter({ powerPreference: 'high-performance' });
  } catch (e) {
    return { reason: `navigator.gpu.requestAdapter() failed: ${msg(e)}` };
  }
  if (!adapter) return { reason: 'no WebGPU adapter (navigator.gpu.requestAdapter() returned null: WebGPU disabled or no usable GPU)' };
  const info = adapter.info || {};
  const name = [info.vendor, info.architecture, info.device, info.description].filter(Boolean).join(' ') || 'unknown adapter';
  const fallback = info.isFallbackAdapter === true || adapter.isFallbackAdapter === true ||
    /swiftshader|llvmpipe|lavapipe|software/i.test(name);
  return { adapter, name, fallback };
}

// What LiteRT prints (its compile diagnostics) goes to the console through functions bound when the runtime loads,
// so the console is tapped once, up front, into a ring buffer; compile() reads the lines printed while it ran.
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

/** LiteRT.js on WebGPU: {model} when fully delegated, else {reason}. */
async function litertWebGPU(bytes, entry, gpu) {
  if (!litert.getWebGpuDevice()) return { reason: `LiteRT.js could not create a WebGPU device on ${gpu.name}` };
  const seq = consoleSeq;
  try {
    const m = await litert.getGlobalLiteRt().loadAndCompile(bytes, { accelerator: 'webgpu', gpuOptions: { precision: 'fp32' } });
    if (m.options.accelerator === 'webgpu' && m.isFullyAccelerated) return { model: m };
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

/** ONNX Runtime Web on WebGPU (its WebGPU execution provider, no CPU fallback): {model} or {reason}. */
async function ortWebGPU(bytes) {
  try {
    return { model: await createSession(bytes, 'webgpu') };
  } catch (e) {
    return {
      reason: e.notFullyDelegated ? 'the model is not fully delegated to WebGPU (ONNX Runtime would run some nodes ' +
        `on the CPU: ${e.message})` : `WebGPU session creation failed: ${e.message}`,
    };
  }
}

/** Per runtime: compile on WebGPU or wasm, run one [1,3,H,W] tensor (input + run + output read-back), free. */
const runners = {
  litert: {
    webgpu: litertWebGPU,
    wasm: (bytes) => litert.getGlobalLiteRt().loadAndCompile(bytes, { accelerator: 'wasm' }),
    async run(model, tensor, H, W, split = null) {   // split: {write, run, read} ms filled in when given
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
      for (const t of outputs.slice(1)) t.delete();
      if (split) Object.assign(split, { write: t1 - t0, run: t2 - t1, read: performance.now() - t2 });
      return y;
    },
    dispose: (model) => model.delete(),
  },
  ort: {
    webgpu: ortWebGPU,
    wasm: (bytes) => createSession(bytes, 'wasm'),
    run: runSession,
    dispose: (session) => session.release(),
  },
};

/** The same backend rules for both runtimes: 'wasm' is wasm; otherwise WebGPU on a usable adapter ('auto': not a
 * software fallback adapter) when the runtime can run the whole model there, else wasm with the reason. */
async function compile(rt, bytes, entry, choice) {
  let reason = null;
  E.adapter = null;
  E.adapterIsFallback = null;
  if (choice !== 'wasm') {
    const gpu = await detectWebGPU();
    E.adapter = gpu.name || null;
    E.adapterIsFallback = gpu.adapter ? gpu.fallback : null;
    if (!gpu.adapter) {
      reason = gpu.reason;
    } else if (gpu.fallback && choice === 'auto') {
      reason = `the WebGPU adapter (${gpu.name}) is a software fallback adapter, slower than wasm; ` +
        'choose "WebGPU" to use it anyway';
    } else {
      if (gpu.fallback) say('warn', `WebGPU adapter ${gpu.name} is a software (CPU) fallback adapter: expect it to be slow.`);
      const r = await runners[rt].webgpu(bytes, entry, gpu);
      if (r.model) return { model: r.model, backend: 'webgpu', reason: null };
      reason = r.reason;
    }
    reason = reason.replace(/[.\s]+$/, '');
    say('warn', `Running on wasm${rt === 'ort' ? ' (ONNX Runtime Web)' : ''}: ${reason}.`);
  }
  const model = await runners[rt].wasm(bytes);
  return { model, backend: 'wasm', reason };
}

// ---------------------------------------------------------------------------------------------------- files

function progress(done, total, text) {
  ui.progress.max = total || 1;
  ui.progress.value = done;
  ui.progressText.textContent = text;
}

async function sha256hex(bytes) {
  if (!crypto.subtle) {
    throw new Refused('crypto.subtle is unavailable (not a secure context): cannot verify the model, refusing to ' +
      'use it. Open the page via http://127.0.0.1:PORT/.');
  }
  const d = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(d, (b) => b.toString(16).padStart(2, '0')).join('');
}

async function verify(bytes, entry, where) {
  if (bytes.byteLength !== entry.bytes) {
    throw new Refused(`${entry.path} (${where}) has ${bytes.byteLength} bytes but manifest.json says ${entry.bytes}: ` +
      'truncated or changed — refusing to use it.');
  }
  const got = await sha256hex(bytes);
  if (got !== entry.sha256) {
    throw new Refused(`SHA-256 mismatch for ${entry.path} (${where}): expected ${entry.sha256}, got ${got}. ` +
      'The file is corrupt or was changed after manifest.json was written — refusing to use it.');
  }
}

async function download(entry) {
  const url = fileUrl(entry);
  let res;
  try {
    res = await fetch(url, { cache: 'no-store' });
  } catch (e) {
    throw new Error(`download of ${entry.path} failed: ${msg(e)}`);
  }
  if (!res.ok) throw new Error(`download of ${entry.path} failed: HTTP ${res.status} ${res.statusText}`);
  E.downloads += 1;
  const total = Number(res.headers.get('Content-Length')) || entry.bytes;
  if (!res.body) {
    const bytes = new Uint8Array(await res.arrayBuffer());
    progress(bytes.byteLength, total, `${mb(bytes.byteLength)} MB`);
    return bytes;
  }
  const limit = Math.max(total, entry.bytes);
  const buf = new Uint8Array(limit);
  const reader = res.body.getReader();
  let received = 0;
  let last = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (received + value.byteLength > limit) {
      await reader.cancel();
      throw new Refused(`${entry.path} is larger than manifest.json says (${entry.bytes} bytes): refusing to use it.`);
    }
    buf.set(value, received);
    received += value.byteLength;
    const now = performance.now();
    if (now - last > 60) {
      last = now;
      progress(received, total, `${mb(received)} / ${mb(total)} MB`);
    }
  }
  progress(received, total, `${mb(received)} / ${mb(total)} MB downloaded`);
  return buf.subarray(0, received);
}

async function openCache() {
  if (!('caches' in self)) return null;
  try {
    return await caches.open(CACHE_NAME);
  } catch (e) {
    say('warn', `Cache Storage unavailable (${msg(e)}): the model will be downloaded on every load.`);
    return null;
  }
}

/** {bytes, source} of `entry`, verified against manifest.json: from Cache Storage (re-verified, source 'cache') or
 * downloaded and cached ('network'). The same rules for .tflite and .onnx files. */
async function verifiedBytes(entry) {
  const cache = await openCache();
  const key = new URL(`${fileUrl(entry)}?sha256=${entry.sha256}`, location.href).href;
  if (cache) {
    const hit = await cache.match(key);
    if (hit) {
      setState('verifying');
      const bytes = new Uint8Array(await hit.arrayBuffer());
      progress(bytes.byteLength, entry.bytes, `${mb(bytes.byteLength)} MB from Cache Storage`);
      try {
        await verify(bytes, entry, 'Cache Storage copy');
        return { bytes, source: 'cache' };
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
        await cache.delete(key);
        say('warn', `${e.message} The cached copy was deleted; downloading again.`);
      }
    }
  }
  setState('downloading');
  const bytes = await download(entry);
  setState('verifying');
  await verify(bytes, entry, 'download');
  if (cache) {
    try {
      await cache.put(key, new Response(bytes, { headers: { 'Content-Type': 'application/octet-stream' } }));
      const path = new URL(fileUrl(entry), location.href).pathname;   // drop older versions of the same file
      for (const req of await cache.keys()) {
        const u = new URL(req.url);
        if (u.pathname === path && req.url !== key) await cache.delete(req);
      }
    } catch (e) {
      say('warn', `Could not store ${entry.path} in Cache Storage (${msg(e)}); it will be downloaded next time.`);
    }
  }
  return { bytes, source: 'network' };
}

// ---------------------------------------------------------------------------------------------------- model

function keyOf(entry, choice) { return `${entry ? entry.path : ''}|${choice}`; }

/** What the mode runs: [{rt, entry}] (compare: the selected .tflite, then its .onnx partner). */
function wanted() {
  const entry = selectedEntry();
  if (mode() === 'ort') return [{ rt: 'ort', entry }];
  if (mode() === 'litert') return [{ rt: 'litert', entry }];
  const other = partnerOf(entry);
  if (entry && !other) {
    const [, , h, w] = entry.input.shape;
    throw new Error(`compare needs an .onnx file of the same input size (${h}x${w}) as ${entry.path}; ` +
      'manifest.json lists none');
  }
  return [{ rt: 'litert', entry }, { rt: 'ort', entry: other }];
}

/** The compiled models the mode needs, loaded one after the other: [current.litert] and/or [current.ort]. */
async function ensureModels() {
  let want;
  try {
    want = wanted();
  } catch (e) {
    setState('error');
    say('error', e.message);
    throw e;
  }
  const out = [];
  for (const { rt, entry } of want) out.push(await ensureModel(rt, entry));
  const c = current[primary()];   // after a mode switch the main fields follow the mode's runtime
  if (c) {
    Object.assign(E, { artifact: c.entry.path, backend: c.backend, backendReason: c.reason, source: c.source,
      latencies: c.latencies });
  }
  showBackends();
  return out;
}

/** The compiled model for `entry` on the selected backend: the current one, the one loading, or a new load. */
function ensureModel(rt, entry) {
  const choice = ui.backend.value;
  const key = keyOf(entry, choice);
  if (current[rt] && current[rt].key === key) return Promise.resolve(current[rt]);
  if (loading[rt] && loading[rt].key === key) return loading[rt].promise;
  const before = loading[rt] ? loading[rt].promise.catch(() => {}) : Promise.resolve();
  const promise = before.then(() => (current[rt] && current[rt].key === key ? current[rt] : loadModel(rt, entry, choice)));
  loading[rt] = { key, promise };
  promise.catch(() => {}).finally(() => { if (loading[rt] && loading[rt].promise === promise) loading[rt] = null; });
  return promise;
}

// A model is freed only when no inference is using it.
const retired = [];
function retire(rt) {
  if (!current[rt]) return;
  retired.push(current[rt]);
  current[rt] = null;
  flushRetired();
}
function flushRetired() {
  if (busy) return;
  for (const { rt, model } of retired.splice(0)) {
    try {
      Promise.resolve(runners[rt].dispose(model)).catch(() => {});
    } catch { /* already gone */ }
  }
}

function showBackends() {
  const one = (rt) => {
    const c = current[rt];
    if (!c) return '—';
    return c.backend === 'webgpu' ? `WebGPU${rt === 'litert' ? ' (FP32 precision requested)' : ''}` :
      `wasm (CPU)${c.reason ? ` — ${c.reason}` : ''}`;
  };
  ui.backendOut.textContent = mode() === 'compare' ? `${NAMES.litert}: ${one('litert')} · ${NAMES.ort}: ${one('ort')}` :
    one(primary());
}

async function loadModel(rt, entry, choice) {
  if (!entry) throw new Error('no artifact selected');
  const main = rt === primary();
  ui.load.disabled = true;
  try {
    if (main) {
      Object.assign(E, { artifact: entry.path, backend: null, backendReason: null, backendRequested: choice, source: null });
    }
    if (rt === 'ort') {
      E.ort = { artifact: entry.path, backend: null, backendReason: null, source: null, lastLatencyMs: null, latencies: null };
    }
    const ready = rt === 'ort' ? ensureOrt() : runtimeReady;
    const { bytes, source } = await verifiedBytes(entry);
    const where = source === 'cache' ? 'from Cache Storage' : 'downloaded';
    say('info', `${entry.path}: ${mb(entry.bytes)} MB, SHA-256 verified (${where}).`);
    if (main) E.source = source;
    if (rt === 'ort') E.ort.source = source;
    setState('compiling');
    await ready;
    const t0 = performance.now();
    const compiled = await compile(rt, bytes, entry, choice);
    const ms = performance.now() - t0;
    retire(rt);
    current[rt] = { rt, key: keyOf(entry, choice), entry, choice, source, latencies: [], ...compiled };
    if (rt === 'ort') {
      Object.assign(E.ort, { backend: compiled.backend, backendReason: compiled.reason, latencies: current.ort.latencies });
      E.runtime.ort = ortInfo();   // ORT drops to 1 thread where SharedArrayBuffer is unavailable
      showRuntime();
    }
    if (main) Object.assign(E, { backend: compiled.backend, backendReason: compiled.reason, latencies: current[rt].latencies });
    showBackends();
    ui.adapter.textContent = E.adapter ? `${E.adapter}${E.adapterIsFallback ? ' (software fallback adapter)' : ''}` :
      (choice === 'wasm' ? 'not used (wasm chosen)' : 'none');
    say('info', `${NAMES[rt]}: compiled for ${compiled.backend} in ${ms.toFixed(0)} ms.`);
    setState('ready');
    return current[rt];
  } catch (e) {
    retire(rt);
    setState('error');
    say('error', e instanceof Refused ? e.message : `Could not load ${entry.path}: ${msg(e)}`);
    throw e;
  } finally {
    ui.load.disabled = false;
  }
}

function relL2(a, b) {
  let num = 0;
  let den = 0;
  let maxAbs = 0;
  for (let i = 0; i < b.length; i++) {
    const d = a[i] - b[i];
    num += d * d;
    den += b[i] * b[i];
    maxAbs = Math.max(maxAbs, Math.abs(d));
  }
  return { relL2: Math.sqrt(num) / Math.sqrt(den), maxAbs };
}

/** Preprocess once, run every loaded model of the mode on the same tensor; latency per runtime = input tensor +
 * run + output read-back (preprocessing timed separately). */
async function infer(rgba, width, height) {
  const models = wanted().map(({ rt }) => current[rt]);
  if (models.some((m) => !m)) throw new Error('no model is loaded');
  const [, , H, W] = models[0].entry.input.shape;
  const t0 = performance.now();
  const { rgb, tensor } = preprocessRGBA(rgba, width, height, H, W);
  // a file whose manifest input dtype is uint8 (_u8in.tflite, the WebGPU file) takes the resized pixels as they are
  const u8 = models.some((m) => m.entry.input.dtype === 'uint8');
  lastInputs = { float32: tensor, uint8: u8 ? pixelsToNCHW(rgb, H, W) : null };
  const inputOf = (m) => lastInputs[m.entry.input.dtype];
  const t1 = performance.now();
  const out = {};
  for (const m of models) {
    const s = performance.now();
    const y = await runners[m.rt].run(m.model, inputOf(m), H, W);
    const ms = performance.now() - s;
    m.latencies.push(ms);
    if (y.length !== H * W) {
      throw new Error(`${NAMES[m.rt]} output has ${y.length} values, expected ${H * W} ([1,${H},${W}])`);
    }
    out[m.rt] = { y, ms, backend: m.backend, artifact: m.entry.path };
  }
  const p = out[primary()];
  Object.assign(E, {
    lastInput: inputOf(current[primary()]), lastOutput: p.y, lastOutputShape: [1, H, W], lastLatencyMs: p.ms,
    lastPreprocessMs: t1 - t0,
  });
  if (out.ort) {
    E.ortLastOutput = out.ort.y;
    E.ort.lastLatencyMs = out.ort.ms;
  }
  if (out.litert && out.ort) {
    const d = relL2(out.ort.y, out.litert.y);
    E.compare = { ...d, litert: { ms: out.litert.ms, backend: out.litert.backend, artifact: out.litert.artifact },
      ort: { ms: out.ort.ms, backend: out.ort.backend, artifact: out.ort.artifact } };
  }
  E.runs += 1;
  return { out, H, W };
}

let shownMaps = {};           // canvas id -> the normalised map last drawn there (the EMA's state on video)

/** Colour y into canvas. Video frames with smoothing on show the EMA of the normalised maps instead of this frame's. */
function renderDepth(canvas, y, H, W, video = false) {
  canvas.width = W;
  canvas.height = H;
  // Metric depth (metres): near = small, so colour -depth to keep "bright = near" (as predict does).
  const shown = E.maxDepth === null ? y : y.map((v) => -v);
  const prev = shownMaps[canvas.id];
  let unit = normalizeDepth(shown);
  if (video && E.smoothing.on) unit = emaStep(prev, unit, E.smoothing.alpha);
  shownMaps[canvas.id] = unit;
  if (canvas === ui.depth) {
    E.shownMap = unit;
    if (video) E.video.prevShown = prev || null;
  }
  canvas.getContext('2d').putImageData(new ImageData(colorizeUnit(unit), W, H), 0, 0);
  if (photoAspect) canvas.style.aspectRatio = photoAspect;
  if (E.maxDepth !== null && canvas === ui.depth) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of y) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    ui.depthCaption.textContent = `metric depth, ${lo.toFixed(2)}–${hi.toFixed(2)} m (model range 0–${E.maxDepth} m; ` +
      'bright = near); hover for metres';
  }
}

/** Draw what infer() returned: one map, or (compare) LiteRT.js's and ONNX Runtime Web's side by side. */
function showResults({ out, H, W }, video = false) {
  renderDepth(ui.depth, out[primary()].y, H, W, video);
  if (out.litert && out.ort) renderDepth(ui.depthOrt, out.ort.y, H, W, video);
  showLatency();
}

/** The model's value under the cursor: metres for a metric release, else relative inverse depth (no unit). */
function showDepthAt(ev) {
  if (!E.lastOutput) return;
  const [, H, W] = E.lastOutputShape;
  const r = ui.depth.getBoundingClientRect();
  const x = Math.min(W - 1, Math.max(0, Math.floor(((ev.clientX - r.left) / r.width) * W)));
  const y = Math.min(H - 1, Math.max(0, Math.floor(((ev.clientY - r.top) / r.height) * H)));
  const value = E.lastOutput[y * W + x];
  E.depthAt = { x, y, value };
  ui.depthAt.textContent = E.maxDepth === null
    ? `relative inverse depth ${value.toPrecision(4)} at (${x}, ${y}) — no unit`
    : `${value.toFixed(2)} m at (${x}, ${y})`;
}

function median(l) { return [...l].sort((a, b) => a - b)[Math.floor(l.length / 2)]; }

function showLatency() {
  const pre = `; preprocessing ${E.lastPreprocessMs.toFixed(1)} ms`;
  const c = E.compare;
  if (mode() === 'compare' && c) {
    const one = (rt, l) => `${NAMES[rt]} ${c[rt].ms.toFixed(1)} ms on ${c[rt].backend}` +
      (l.length > 1 ? ` (median ${median(l).toFixed(1)})` : '');
    ui.latency.textContent = `${one('litert', E.latencies)} · ${one('ort', E.ort.latencies)} per inference${pre}`;
    ui.compare.textContent = `rel-L2 ${c.relL2.toExponential(2)} (ONNX Runtime Web vs LiteRT.js, same input), ` +
      `max |Δ| ${c.maxAbs.toExponential(2)}`;
    return;
  }
  const l = E.latencies;
  ui.latency.textContent = `${E.lastLatencyMs.toFixed(1)} ms per inference on ${E.backend}` +
    (l.length > 1 ? ` (median ${median(l).toFixed(1)} ms over ${l.length})` : '') + pre;
}

function drawPhoto(source, w, h) {
  const s = Math.min(1, PHOTO_MAX / Math.max(w, h));
  ui.photo.width = Math.max(1, Math.round(w * s));
  ui.photo.height = Math.max(1, Math.round(h * s));
  ui.photo.getContext('2d').drawImage(source, 0, 0, ui.photo.width, ui.photo.height);
  photoAspect = `${w} / ${h}`;
}

/** Run on one photo (File/Blob). Later calls while busy replace the pending photo. */
async function runPhoto(blob) {
  if (busy) {
    pending = blob;
    return;
  }
  busy = true;
  try {
    let img;
    try {
      img = await decodeImage(blob);
    } catch (e) {
      say('error', msg(e));
      return;
    }
    drawPhoto(img.source, img.width, img.height);
    try {
      await ensureModels();
    } catch {
      return;   // already reported
    }
    setState('running');
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));   // let "running" paint
    shownMaps = {};   // a photo is never blended with video frames
    showResults(await infer(img.data, img.width, img.height));
    setState('ready');
  } catch (e) {
    setState(current[primary()] ? 'ready' : 'error');
    say('error', `Inference failed: ${msg(e)}`);
  } finally {
    busy = false;
    flushRetired();
    if (pending) {
      const next = pending;
      pending = null;
      runPhoto(next);
    }
  }
}

// ---------------------------------------------------------------------------------------------------- webcam

let stream = null;
let opening = false;          // between the click and the camera's first frame (a second click is ignored)

async function startWebcam() {
  if (opening) return;
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
    E.webcam = 'no camera API in this context (navigator.mediaDevices is unavailable; it needs a secure context)';
    say('warn', `Webcam: ${E.webcam}.`);
    return;
  }
  opening = true;
  ui.webcam.disabled = true;
  E.video = { fps: null, frames: 0, backend: null, prevShown: null, frameTimes: [], preprocessMs: [] };
  shownMaps = {};
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { width: { ideal: 640 }, height: { ideal: 480 } }, audio: false });
    ui.video.srcObject = stream;
    await ui.video.play();
  } catch (e) {
    const n = e && e.name;
    E.webcam = n === 'NotFoundError' || n === 'OverconstrainedError' || n === 'DevicesNotFoundError' ? 'no camera found' :
      n === 'NotAllowedError' || n === 'SecurityError' ? 'camera permission denied (allow it in the address bar and try again)' :
        n === 'NotReadableError' ? 'the camera is in use by another application' : `camera unavailable: ${msg(e)}`;
    say('warn', `Webcam: ${E.webcam}.`);
    stopWebcam();
    return;
  } finally {
    opening = false;
    ui.webcam.disabled = false;
  }
  E.webcam = 'running';
  ui.webcam.textContent = 'Stop webcam';
  const meter = new FpsMeter();
  ui.videoRow.hidden = false;
  ui.videoOut.textContent = 'waiting for the first frame…';
  try {
    await ensureModels();
  } catch {
    stopWebcam();
    return;
  }
  const grab = document.createElement('canvas');
  const gctx = grab.getContext('2d', { willReadFrequently: true });
  while (stream) {
    const w = ui.video.videoWidth;
    const h = ui.video.videoHeight;
    if (w && h && !busy) {
      try {
        await ensureModels();   // the user may switch runtime, artifact or backend while the camera runs
      } catch {
        stopWebcam();
        break;
      }
      busy = true;
      try {
        if (grab.width !== w || grab.height !== h) {
          grab.width = w;
          grab.height = h;
        }
        gctx.drawImage(ui.video, 0, 0, w, h);
        drawPhoto(grab, w, h);
        setState('running');
        showResults(await infer(gctx.getImageData(0, 0, w, h).data, w, h), true);
        const t = performance.now();
        E.video.fps = meter.tick(t);
        E.video.frames = meter.frames;
        if (E.video.frameTimes.length < 100000) {
          E.video.frameTimes.push(t);
          E.video.preprocessMs.push(E.lastPreprocessMs);
        }
        showVideo();
        setState('ready');
      } catch (e) {
        say('error', `Inference failed: ${msg(e)}`);
        stopWebcam();
      } finally {
        busy = false;
        flushRetired();
      }
    }
    await new Promise((r) => requestAnimationFrame(r));
  }
}

/** The webcam row: frames per second actually shown (inference + drawing + waiting for a frame), the backend(s) in
 * use, whether smoothing is on. */
function showVideo() {
  if (!E.video) return;
  E.video.backend = ui.backendOut.textContent;
  const fps = E.video.fps === null ? '— frames/s (one frame so far)' : `${E.video.fps.toFixed(1)} frames/s`;
  const sm = E.smoothing.on ? `smoothing on (new-frame weight ${E.smoothing.alpha.toFixed(2)})` : 'smoothing off';
  ui.videoOut.textContent = `${fps} · ${E.video.frames} frames · ${E.video.backend} · ${sm}`;
}

function setSmoothing() {
  E.smoothing = { on: ui.smooth.checked, alpha: Number(ui.smoothAlpha.value) };
  ui.smoothAlphaOut.textContent = E.smoothing.alpha.toFixed(2);
  ui.smoothAlpha.disabled = !E.smoothing.on;
  showVideo();
}

function stopWebcam() {
  if (stream) for (const t of stream.getTracks()) t.stop();
  stream = null;
  ui.video.srcObject = null;
  if (E.webcam === 'running') E.webcam = 'stopped';
  ui.webcam.textContent = 'Start webcam';
}

// ---------------------------------------------------------------------------------------------------- wiring

const anyModel = () => current.litert || current.ort || loading.litert || loading.ort;

/** Show what the mode needs: compare draws a second depth map (ONNX Runtime Web) and the rel-L2 row. */
function applyMode() {
  E.mode = mode();
  const compare = mode() === 'compare';
  ui.views.classList.toggle('compare', compare);
  ui.ortFigure.hidden = !compare;
  ui.compareRow.hidden = !compare;
  if (!compare) E.compare = null;
  ui.depthTitle.textContent = compare ? `${NAMES.litert} · ` : mode() === 'ort' ? `${NAMES.ort} · ` : '';
  showBackends();
}

ui.load.addEventListener('click', () => { ensureModels().catch(() => {}); });
ui.mode.addEventListener('change', () => {
  fillArtifacts(ui.artifact.value);
  applyMode();
  if (mode() !== 'litert') ensureOrt().catch((e) => say('error', e.message));
  if (anyModel()) ensureModels().catch(() => {});
});
ui.artifact.addEventListener('change', () => {
  showArtifactInfo();
  if (anyModel()) ensureModels().catch(() => {});
});
ui.backend.addEventListener('change', () => { if (anyModel()) ensureModels().catch(() => {}); });
ui.file.addEventListener('change', () => { if (ui.file.files[0]) runPhoto(ui.file.files[0]); });
ui.webcam.addEventListener('click', () => {
  if (opening) return;
  if (stream) stopWebcam(); else startWebcam();
});
ui.smooth.addEventListener('change', setSmoothing);
ui.smoothAlpha.addEventListener('input', setSmoothing);
ui.depth.addEventListener('mousemove', showDepthAt);
for (const t of ['dragenter', 'dragover']) {
  document.addEventListener(t, (e) => { e.preventDefault(); ui.drop.classList.add('over'); });
}
document.addEventListener('dragleave', () => ui.drop.classList.remove('over'));
document.addEventListener('drop', (e) => {
  e.preventDefault();
  ui.drop.classList.remove('over');
  const f = e.dataTransfer && e.dataTransfer.files[0];
  if (f) runPhoto(f);
  else say('warn', 'Nothing to use in what was dropped: drop an image file.');
});

E.load = () => ensureModels();

/** Latency of a loaded model (default: the page's runtime) on the last input: per call = input tensor + run + output
 * read-back (ms), as the page measures it. `split: true` (LiteRT.js): [{ms, write, run, read}] per call instead. */
E.benchmark = async ({ warmup = 3, iters = 10, runtime = primary(), split = false } = {}) => {
  const c = current[runtime];
  if (!c || !E.lastInput) throw new Error('load a model and run it on a photo first');
  if (busy) throw new Error('an inference is running');
  busy = true;
  const times = [];
  try {
    const [, , H, W] = c.entry.input.shape;
    for (let i = 0; i < warmup + iters; i++) {
      const parts = split && runtime === 'litert' ? {} : null;
      const t0 = performance.now();
      await runners[runtime].run(c.model, lastInputs[c.entry.input.dtype], H, W, parts);
      const t1 = performance.now();
      if (i >= warmup) times.push(parts ? { ms: t1 - t0, ...parts } : t1 - t0);
    }
  } finally {
    busy = false;
    flushRetired();
  }
  return times;
};
E.runPhoto = runPhoto;
E.preprocessRGBA = preprocessRGBA;
E.decodeImage = decodeImage;
E.colorizeDepth = colorizeDepth;
E.colorizeUnit = colorizeUnit;
E.emaStep = emaStep;

/** The mode the release allows: LiteRT.js needs a .tflite, ONNX Runtime Web an .onnx, compare both. */
function checkMode() {
  const has = { litert: manifestFiles.litert.length > 0, ort: manifestFiles.ort.length > 0 };
  for (const o of ui.mode.options) o.disabled = o.value === 'compare' ? !(has.litert && has.ort) : !has[o.value];
  if (mode() !== 'litert' && !has.ort) {
    say('warn', 'manifest.json lists no .onnx file: ONNX Runtime Web has nothing to run; using LiteRT.js.');
    ui.mode.value = 'litert';
  } else if (mode() !== 'ort' && !has.litert) {
    say('info', 'manifest.json lists only .onnx files: running them with ONNX Runtime Web.');
    ui.mode.value = 'ort';
  }
}

async function main() {
  const b = params.get('backend');
  if (b && ['auto', 'webgpu', 'wasm'].includes(b)) ui.backend.value = b;
  const sm = params.get('smooth');   // ?smooth=ALPHA: webcam smoothing on with that new-frame weight
  if (sm !== null) {
    const a = Number(sm);
    if (a > 0 && a <= 1) {
      ui.smooth.checked = true;
      ui.smoothAlpha.value = String(a);
    } else say('warn', `?smooth=${sm}: expected a new-frame weight in (0, 1]; smoothing stays off.`);
  }
  setSmoothing();
  const r = params.get('runtime');
  if (MODES.includes(r)) ui.mode.value = r;
  else if (r) say('warn', `?runtime=${r}: expected litert, ort or compare; using LiteRT.js.`);
  if (!window.isSecureContext) {
    say('warn', 'Not a secure context: WebGPU, SHA-256 verification (crypto.subtle) and Cache Storage are ' +
      'unavailable here. Open the page via http://127.0.0.1:PORT/ (what `edgedepth serve` prints).');
  }
  runtimeReady = loadRuntime();
  runtimeReady.catch((e) => {
    setState('error');
    say('error', `LiteRT.js could not start: ${msg(e)}. Is \`npm ci --prefix web\` done?`);
  });
  try {
    const { manifest, files } = await readManifest();
    E.manifest = manifest;
    manifestFiles = files;
    const model = manifest.model || {};
    if (model.kind === 'metric') E.maxDepth = model.max_depth_m;
    const gpu = ui.backend.value === 'wasm' ? {} : await detectWebGPU();
    const use = gpu.adapter && (!gpu.fallback || ui.backend.value === 'webgpu') ? 'webgpu' : 'wasm';
    const rec = (manifest.recommended || {})[use];
    recommended = rec ? { ...rec, use } : null;
    checkMode();
    fillArtifacts(params.get('artifact'), true);
    applyMode();
    const ck = manifest.provenance && manifest.provenance.checkpoint;
    if (ck && ck.source === 'synthetic') {
      say('warn', `These files were made from synthetic weights (${ck.name}): depth maps are meaningless; they show ` +
        'structure, latency and parity only.');
    }
  } catch (e) {
    setState('error');
    say('error', `Cannot read the release folder: ${msg(e)}`);
    return;
  }
  try {
    await runtimeReady;
  } catch {
    return;
  }
  ui.load.disabled = false;
  setState('idle');
  if (params.get('autoload') === '1') ensureModels().catch(() => {});
  else if (mode() !== 'litert') ensureOrt().catch((e) => say('error', e.message));
}

main();
