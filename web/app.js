// edgedepth playground: manifest.json -> verified download (Cache Storage) -> LiteRT.js (WebGPU or wasm) -> depth map.
// Plain ES module, no framework, no bundler. Test hooks live on window.edgedepth (see web/README.md).

import * as litert from '@litertjs/core';
import { colorizeDepth } from './colormap.js';
import { decodeImage, preprocessRGBA } from './preprocess.js';

const params = new URLSearchParams(location.search);
const RELEASE = withSlash(params.get('release') || './release/');
const VENDOR = './vendor/@litertjs/core/';
const CACHE_NAME = 'edgedepth-models-v1';
const PHOTO_MAX = 1280;   // longest side of the displayed photo

const $ = (id) => document.getElementById(id);
const ui = {
  artifact: $('artifact'), backend: $('backend'), load: $('load'), progress: $('progress'),
  progressText: $('progress-text'), artifactInfo: $('artifact-info'), messages: $('messages'),
  state: $('st-state'), backendOut: $('st-backend'), adapter: $('st-adapter'), runtime: $('st-runtime'),
  latency: $('st-latency'), file: $('file'), drop: $('drop'), webcam: $('webcam'), photo: $('photo'),
  depth: $('depth'), video: $('video'), depthCaption: $('depth-caption'), depthAt: $('depth-at'),
};

// Everything a test (or a curious user in the console) may read.
const E = {
  state: 'starting',          // starting | idle | downloading | verifying | compiling | ready | running | error
  artifact: null,             // manifest path of the loaded file
  backend: null,              // 'webgpu' | 'wasm' (what actually runs)
  backendRequested: null,     // 'auto' | 'webgpu' | 'wasm'
  backendReason: null,        // why wasm runs when WebGPU was possible to ask for
  adapter: null,              // WebGPU adapter name, or null
  adapterIsFallback: null,
  runtime: null,              // {litertjs, threads, crossOriginIsolated}
  source: null,               // 'network' | 'cache' for the loaded file
  downloads: 0,               // network downloads of model files in this page
  lastInput: null,            // Float32Array [1,3,H,W] of the last inference
  lastOutput: null,           // Float32Array [1,H,W]
  lastOutputShape: null,
  lastLatencyMs: null,        // model.run + output read-back
  lastPreprocessMs: null,
  latencies: [],
  runs: 0,
  errors: [],
  messages: [],
  manifest: null,
  webcam: null,               // null | 'running' | 'stopped' | message when unavailable
  maxDepth: null,             // metres, for a metric release (manifest.model.kind 'metric'); null: relative depth
  depthAt: null,              // {x, y, value} under the cursor, in the model output's pixels
};
window.edgedepth = E;

let manifestFiles = [];
let current = null;           // {key, entry, choice, model, backend, reason}
let loading = null;           // {key, promise} of the load in progress
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
  return [f.size || f.input?.shape?.slice(2).join('x'), (f.precision || '?').toUpperCase(), `${mb(f.bytes)} MB`, gpu]
    .filter(Boolean).join(' · ');
}

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
  const files = m.files.filter((f) => f.format === 'tflite' || /\.tflite$/i.test(f.path || ''));
  const bad = files.filter((f) => !f.sha256 || !Number.isFinite(f.bytes) || !Array.isArray(f.input?.shape) ||
    f.input.shape.length !== 4);
  if (bad.length) throw new Error(`manifest.json: ${bad[0].path} lacks sha256, bytes or a [1,3,H,W] input shape`);
  if (!files.length) throw new Error('manifest.json lists no .tflite file: nothing to run');
  return { manifest: m, files };
}

// The default file: manifest.json's recommendation for the backend that will run (WebGPU on a real adapter:
// the fp16-weight file, half the download; wasm: the file recommended for the CPU / wasm).
function fillArtifacts(recommended) {
  const order = (f) => [f.size === '518x686' ? 0 : 1, f.size || '', f.precision === 'fp32' ? 0 : 1];
  manifestFiles.sort((a, b) => {
    const x = order(a);
    const y = order(b);
    return x[0] - y[0] || x[1].localeCompare(y[1]) || x[2] - y[2];
  });
  ui.artifact.replaceChildren(...manifestFiles.map((f) => new Option(label(f), f.path)));
  const wanted = params.get('artifact');
  if (!wanted && recommended && manifestFiles.some((f) => f.path === recommended.path)) {
    ui.artifact.value = recommended.path;
    say('info', `Default file ${recommended.path}: recommended for ${recommended.use} (${recommended.why}).`);
  }
  if (wanted) {
    if (manifestFiles.some((f) => f.path === wanted)) ui.artifact.value = wanted;
    else say('warn', `?artifact=${wanted} is not in manifest.json; using ${ui.artifact.value}`);
  }
  ui.artifact.disabled = false;
  showArtifactInfo();
}

function selectedEntry() { return manifestFiles.find((f) => f.path === ui.artifact.value); }

function showArtifactInfo() {
  const f = selectedEntry();
  if (!f) return;
  const [, , h, w] = f.input.shape;
  ui.artifactInfo.textContent = `${f.path} — input ${f.input.name || ''} [1,3,${h},${w}] float32 NCHW, ` +
    `output [1,${h},${w}]` + (f.ops ? `, ${f.ops} ops` : '') +
    `, sha256 ${f.sha256.slice(0, 16)}…`;
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
  E.runtime = { litertjs: version, threads: threads ? n : 1, crossOriginIsolated: isolated };
  ui.runtime.textContent = `LiteRT.js ${version}, wasm ${threads ? `${n} threads` : '1 thread'}` +
    (isolated ? '' : ' (page not cross-origin isolated: no threads)');
  if (!isolated) say('warn', 'The page is not cross-origin isolated (COOP/COEP headers missing): wasm runs single-threaded.');
  return lr;
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

async function compile(bytes, entry, choice) {
  const lr = litert.getGlobalLiteRt();
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
    } else if (!litert.getWebGpuDevice()) {
      reason = `LiteRT.js could not create a WebGPU device on ${gpu.name}`;
    } else {
      if (gpu.fallback) say('warn', `WebGPU adapter ${gpu.name} is a software (CPU) fallback adapter: expect it to be slow.`);
      const seq = consoleSeq;
      try {
        const m = await lr.loadAndCompile(bytes, { accelerator: 'webgpu', gpuOptions: { precision: 'fp32' } });
        if (m.options.accelerator === 'webgpu' && m.isFullyAccelerated) {
          return { model: m, backend: 'webgpu', reason: null };
        }
        const split = m.options.accelerator === 'webgpu';
        m.delete();
        reason = 'the model is not fully delegated to WebGPU (' +
          (split ? 'LiteRT.js would split it between WebGPU and wasm' : 'LiteRT.js fell back to wasm') + ')' +
          (entry.gpu_fully_delegated === false ? '; manifest.json also says gpu_fully_delegated: false' : '') +
          diagnostics(linesSince(seq));
      } catch (e) {
        reason = `WebGPU compilation failed: ${msg(e)}${diagnostics(linesSince(seq))}`;
      }
    }
    reason = reason.replace(/[.\s]+$/, '');
    say('warn', `Running on wasm: ${reason}.`);
  }
  const model = await lr.loadAndCompile(bytes, { accelerator: 'wasm' });
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

/** Bytes of `entry`, verified against manifest.json: from Cache Storage (re-verified) or downloaded and cached. */
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
        E.source = 'cache';
        return bytes;
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
  E.source = 'network';
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
  return bytes;
}

// ---------------------------------------------------------------------------------------------------- model

function keyOf(entry, choice) { return `${entry ? entry.path : ''}|${choice}`; }

/** The compiled model for the selected artifact and backend: the current one, the one loading, or a new load. */
function ensureModel() {
  const entry = selectedEntry();
  const choice = ui.backend.value;
  const key = keyOf(entry, choice);
  if (current && current.key === key) return Promise.resolve(current);
  if (loading && loading.key === key) return loading.promise;
  const before = loading ? loading.promise.catch(() => {}) : Promise.resolve();
  const promise = before.then(() => (current && current.key === key ? current : loadModel(entry, choice)));
  loading = { key, promise };
  promise.catch(() => {}).finally(() => { if (loading && loading.promise === promise) loading = null; });
  return promise;
}

// A model is deleted only when no inference is using it.
const retired = [];
function retire(model) {
  retired.push(model);
  flushRetired();
}
function flushRetired() {
  if (busy) return;
  for (const m of retired.splice(0)) {
    try { m.delete(); } catch { /* already gone */ }
  }
}

async function loadModel(entry, choice) {
  if (!entry) throw new Error('no artifact selected');
  ui.load.disabled = true;
  try {
    Object.assign(E, { artifact: entry.path, backend: null, backendReason: null, backendRequested: choice, source: null });
    ui.backendOut.textContent = '—';
    const bytes = await verifiedBytes(entry);
    say('info', `${entry.path}: ${mb(entry.bytes)} MB, SHA-256 verified (${E.source === 'cache' ? 'from Cache Storage' : 'downloaded'}).`);
    setState('compiling');
    await runtimeReady;
    const t0 = performance.now();
    const compiled = await compile(bytes, entry, choice);
    const ms = performance.now() - t0;
    if (current) retire(current.model);
    current = { key: keyOf(entry, choice), entry, choice, ...compiled };
    Object.assign(E, { backend: compiled.backend, backendReason: compiled.reason });
    ui.backendOut.textContent = compiled.backend === 'webgpu' ? 'WebGPU (FP32 precision requested)' :
      `wasm (CPU)${compiled.reason ? ` — ${compiled.reason}` : ''}`;
    ui.adapter.textContent = E.adapter ? `${E.adapter}${E.adapterIsFallback ? ' (software fallback adapter)' : ''}` :
      (choice === 'wasm' ? 'not used (wasm chosen)' : 'none');
    say('info', `Compiled for ${compiled.backend} in ${ms.toFixed(0)} ms.`);
    setState('ready');
    return current;
  } catch (e) {
    if (current) retire(current.model);
    current = null;
    setState('error');
    say('error', e instanceof Refused ? e.message : `Could not load ${entry.path}: ${msg(e)}`);
    throw e;
  } finally {
    ui.load.disabled = false;
  }
}

async function infer(rgba, width, height) {
  if (!current) throw new Error('no model is loaded');
  const { entry, model } = current;
  const [, , H, W] = entry.input.shape;
  const t0 = performance.now();
  const { tensor } = preprocessRGBA(rgba, width, height, H, W);
  const t1 = performance.now();
  const input = new litert.Tensor(tensor, [1, 3, H, W]);
  let outputs;
  try {
    outputs = await model.run(input);
  } finally {
    input.delete();
  }
  const first = outputs[0];
  const host = first.accelerator === 'wasm' ? first : await first.moveTo('wasm');
  const y = host.toTypedArray().slice();
  const t2 = performance.now();
  host.delete();
  for (const t of outputs.slice(1)) t.delete();
  if (y.length !== H * W) throw new Error(`output has ${y.length} values, expected ${H * W} ([1,${H},${W}])`);
  Object.assign(E, {
    lastInput: tensor, lastOutput: y, lastOutputShape: [1, H, W], lastLatencyMs: t2 - t1, lastPreprocessMs: t1 - t0,
  });
  E.latencies.push(t2 - t1);
  E.runs += 1;
  return { y, H, W };
}

function renderDepth(y, H, W) {
  ui.depth.width = W;
  ui.depth.height = H;
  // Metric depth (metres): near = small, so colour -depth to keep "bright = near" (as predict does).
  const shown = E.maxDepth === null ? y : y.map((v) => -v);
  ui.depth.getContext('2d').putImageData(new ImageData(colorizeDepth(shown), W, H), 0, 0);
  if (photoAspect) ui.depth.style.aspectRatio = photoAspect;
  if (E.maxDepth !== null) {
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of y) { lo = Math.min(lo, v); hi = Math.max(hi, v); }
    ui.depthCaption.textContent = `metric depth, ${lo.toFixed(2)}–${hi.toFixed(2)} m (model range 0–${E.maxDepth} m; ` +
      'bright = near); hover for metres';
  }
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

function showLatency() {
  const l = E.latencies;
  const sorted = [...l].sort((a, b) => a - b);
  const med = sorted[Math.floor(sorted.length / 2)];
  ui.latency.textContent = `${E.lastLatencyMs.toFixed(1)} ms per inference on ${E.backend}` +
    (l.length > 1 ? ` (median ${med.toFixed(1)} ms over ${l.length})` : '') +
    `; preprocessing ${E.lastPreprocessMs.toFixed(1)} ms`;
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
      await ensureModel();
    } catch {
      return;   // already reported
    }
    setState('running');
    await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));   // let "running" paint
    const { y, H, W } = await infer(img.data, img.width, img.height);
    renderDepth(y, H, W);
    showLatency();
    setState('ready');
  } catch (e) {
    setState(current ? 'ready' : 'error');
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

async function startWebcam() {
  if (!navigator.mediaDevices || !navigator.mediaDevices.getUserMedia) {
    E.webcam = 'no camera API in this context (navigator.mediaDevices is unavailable; it needs a secure context)';
    say('warn', `Webcam: ${E.webcam}.`);
    return;
  }
  try {
    stream = await navigator.mediaDevices.getUserMedia({ video: { width: { ideal: 640 }, height: { ideal: 480 } }, audio: false });
  } catch (e) {
    const n = e && e.name;
    E.webcam = n === 'NotFoundError' || n === 'OverconstrainedError' || n === 'DevicesNotFoundError' ? 'no camera found' :
      n === 'NotAllowedError' || n === 'SecurityError' ? 'camera permission denied (allow it in the address bar and try again)' :
        n === 'NotReadableError' ? 'the camera is in use by another application' : `camera unavailable: ${msg(e)}`;
    say('warn', `Webcam: ${E.webcam}.`);
    return;
  }
  ui.video.srcObject = stream;
  await ui.video.play();
  E.webcam = 'running';
  ui.webcam.textContent = 'Stop webcam';
  try {
    await ensureModel();
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
        await ensureModel();   // the user may switch artifact or backend while the camera runs
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
        const { y, H, W } = await infer(gctx.getImageData(0, 0, w, h).data, w, h);
        renderDepth(y, H, W);
        showLatency();
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

function stopWebcam() {
  if (stream) for (const t of stream.getTracks()) t.stop();
  stream = null;
  ui.video.srcObject = null;
  if (E.webcam === 'running') E.webcam = 'stopped';
  ui.webcam.textContent = 'Start webcam';
}

// ---------------------------------------------------------------------------------------------------- wiring

ui.load.addEventListener('click', () => { ensureModel().catch(() => {}); });
ui.artifact.addEventListener('change', () => {
  showArtifactInfo();
  if (current || loading) ensureModel().catch(() => {});
});
ui.backend.addEventListener('change', () => { if (current || loading) ensureModel().catch(() => {}); });
ui.file.addEventListener('change', () => { if (ui.file.files[0]) runPhoto(ui.file.files[0]); });
ui.webcam.addEventListener('click', () => { if (stream) stopWebcam(); else startWebcam(); });
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

E.load = () => ensureModel();

/** Latency of the loaded model on the last input: per call = input tensor + model.run + output read-back (ms). */
E.benchmark = async ({ warmup = 3, iters = 10 } = {}) => {
  if (!current || !E.lastInput) throw new Error('load a model and run it on a photo first');
  if (busy) throw new Error('an inference is running');
  busy = true;
  const times = [];
  try {
    const [, , H, W] = current.entry.input.shape;
    for (let i = 0; i < warmup + iters; i++) {
      const t0 = performance.now();
      const input = new litert.Tensor(E.lastInput, [1, 3, H, W]);
      const outputs = await current.model.run(input);
      const host = outputs[0].accelerator === 'wasm' ? outputs[0] : await outputs[0].moveTo('wasm');
      host.toTypedArray().slice();
      const t1 = performance.now();
      input.delete();
      host.delete();
      for (const t of outputs.slice(1)) t.delete();
      if (i >= warmup) times.push(t1 - t0);
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

async function main() {
  const b = params.get('backend');
  if (b && ['auto', 'webgpu', 'wasm'].includes(b)) ui.backend.value = b;
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
    fillArtifacts(rec ? { ...rec, use } : null);
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
  if (params.get('autoload') === '1') ensureModel().catch(() => {});
}

main();
