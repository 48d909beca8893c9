// Model lifecycle: start the runtimes, get a file's verified bytes (files.js), compile it on WebGPU or wasm with the
// same rules for every runtime, run the mode's models on one photo, free a model once nothing uses it. The loaded
// models are `current` (by runtime id); one inference (or benchmark) at a time (`exclusive`).

import { Refused, mb, msg, openCache, pathSource, verifiedBytes } from './files.js';
import { GpuFrames } from './gpuframes.js';
import { fileUrl, partnerOf, release, secondOutputOf, tjsPartnerOf } from './manifest.js';
import { normaliseToNCHW, pixelsToNCHW, preprocessRGBA, resizeBicubicPIL } from './preprocess.js';
import { RT, RUNTIMES } from './runtimes/index.js';
import { dtypeOf, served, unverified } from './runtimes/tjs.js';
import { compareTjs, E, mode, NAMES, primary, progress, say, selectedEntry, setState, showBackends, showRuntime,
  showTjs, ui } from './view.js';

const BASE = RUNTIMES[0];     // LiteRT.js: starts with the page; the others start on first use, with its threads

export const current = Object.fromEntries(RUNTIMES.map((rt) => [rt.id, null]));   // {key, entry, choice, model, ...}
const loading = Object.fromEntries(RUNTIMES.map((rt) => [rt.id, null]));         // {key, promise} of a load
const started = {};           // runtime id -> the promise of its start
let lastInputs = null;        // the last inference's inputs by dtype: {float32: Float32Array, uint8: Uint8Array | null}
let busy = false;

// ---------------------------------------------------------------------------------------------------- runtimes

/** Start the page's first runtime (LiteRT.js): E.runtime. */
export function startBase() {
  started[BASE.id] = (async () => {
    const info = await BASE.start(0, (text) => say('warn', text));
    E.runtime = { ...info, ...Object.fromEntries(RUNTIMES.slice(1).map((rt) => [rt.id, null])) };
    showRuntime();
  })();
  return started[BASE.id];
}

/** Start runtime `id` once (again after a failure), after the first one and with its wasm thread count. */
export function ensureRuntime(id) {
  if (!started[id]) {
    started[id] = (async () => {
      await started[BASE.id];
      E.runtime[id] = await RT[id].start(E.runtime.threads);
      showRuntime();
    })();
    started[id].catch(() => { started[id] = null; });   // try again on the next load
  }
  return started[id];
}

/** Start loading the runtimes the mode needs beyond the first one (ORT-web, transformers.js) before the first photo. */
export function warmRuntimes() {
  const ids = mode() === 'compare' ? ['ort', ...(compareTjs() ? ['tjs'] : [])] : [primary()];
  for (const id of ids) if (id !== BASE.id) ensureRuntime(id).catch((e) => say('error', e.message));
}

export async function detectWebGPU() {
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

/** The same backend rules for every runtime: 'wasm' is wasm; otherwise WebGPU on a usable adapter ('auto': not a
 * software fallback adapter) when the runtime can run the whole model there, else wasm with the reason. */
async function compile(rt, source, entry, choice) {
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
      const r = await RT[rt].webgpu(source, entry, gpu);
      if (r.note) say('info', r.note);
      if (r.model) return { model: r.model, backend: 'webgpu', reason: null, cpuNodes: r.cpuNodes ?? null, label: r.label };
      reason = r.reason;
    }
    reason = reason.replace(/[.\s]+$/, '');
    say('warn', `Running on wasm${rt === BASE.id ? '' : ` (${NAMES[rt]})`}: ${reason}.`);
  }
  const model = await RT[rt].wasm(source, entry);
  return { model, backend: 'wasm', reason };
}

// ---------------------------------------------------------------------------------------------------- files

const hooks = { state: setState, progress, warn: (text) => say('warn', text), downloaded: () => { E.downloads += 1; } };

/** {bytes, source} of a manifest entry, verified (files.js verifiedBytes: Cache Storage or download). */
async function fetchVerified(entry) {
  const cache = await openCache(hooks);
  return verifiedBytes(entry, new URL(fileUrl(entry), location.href).href, { cache, hooks });
}

/** The source a folder runtime (transformers.js) builds from: manifest path -> verified bytes, null for a path
 * manifest.json does not list (it then treats the file as missing). Each file is verified once per load, even when
 * the pipeline is built twice (WebGPU, then wasm); `sources` gets where each came from (network | cache). */
function folderSource(rt, sources) {
  return pathSource(E.manifest.files, (entry) => fetchVerified(entry).then(({ bytes, source }) => {
    sources[entry.path] = source;
    const size = entry.bytes < 1e5 ? `${entry.bytes} bytes` : `${mb(entry.bytes)} MB`;
    const where = source === 'cache' ? 'from Cache Storage' : 'downloaded';
    say('info', `${entry.path}: ${size}, SHA-256 verified (${where}) for ${NAMES[rt]}.`);
    setState('compiling');
    return bytes;
  }));
}

// ---------------------------------------------------------------------------------------------------- models

function keyOf(entry, choice) { return `${entry ? entry.path : ''}|${choice}`; }

/** What the mode runs: [{rt, entry}] (compare: the selected .tflite, then its .onnx partner, then transformers.js's
 * file when it is compared too). */
function wanted() {
  const entry = selectedEntry();
  if (mode() !== 'compare') return [{ rt: primary(), entry }];
  const other = partnerOf(entry);
  if (entry && !other) {
    const [, , h, w] = entry.input.shape;
    throw new Error(`compare needs an .onnx file of the same input size (${h}x${w}) as ${entry.path}; ` +
      'manifest.json lists none');
  }
  const both = [{ rt: 'litert', entry }, { rt: 'ort', entry: other }];
  return compareTjs() && other ? [...both, { rt: 'tjs', entry: tjsPartnerOf(other) }] : both;
}

export const anyModel = () => Object.values(current).some(Boolean) || Object.values(loading).some(Boolean);

/** The compiled models the mode needs, loaded one after the other (current[rt] each). */
export async function ensureModels() {
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
  showBackends(current);
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
  if (rt === 'litert') dropGpuFrames();
  retired.push(current[rt]);
  current[rt] = null;
  flushRetired();
}
function flushRetired() {
  if (busy) return;
  for (const { model } of retired.splice(0)) {
    try {
      Promise.resolve(model.dispose()).catch(() => {});
    } catch { /* already gone */ }
  }
}

export const isBusy = () => busy;

/** Run `fn` holding the page's one inference slot (callers check isBusy() first); models retired meanwhile are freed
 * after it. */
export async function exclusive(fn) {
  busy = true;
  try {
    return await fn();
  } finally {
    busy = false;
    flushRetired();
  }
}

async function loadModel(rt, entry, choice) {
  if (!entry) throw new Error('no artifact selected');
  const main = rt === primary();
  const folder = RT[rt].folder;
  ui.load.disabled = true;
  try {
    if (main) {
      Object.assign(E, { artifact: entry.path, backend: null, backendReason: null, backendRequested: choice, source: null });
    }
    if (rt === 'ort') {
      E.ort = { artifact: entry.path, backend: null, backendReason: null, cpuNodes: null, source: null,
        lastLatencyMs: null, latencies: null };
    }
    if (rt === 'tjs') {
      E.tjs = { artifact: entry.path, dtype: dtypeOf(entry.path), backend: null, backendReason: null, source: null,
        sources: {}, files: [], unverified: [], lastLatencyMs: null, latencies: null, outputSize: null, pixelSize: null,
        preprocessing: null };
    }
    const ready = rt === BASE.id ? started[BASE.id] : ensureRuntime(rt);
    const sources = rt === 'tjs' ? E.tjs.sources : {};
    let bytes;
    let source;
    if (folder) {
      // a folder runtime asks for the files it needs while it builds its model; each comes from here, verified
      await ready;
      bytes = folderSource(rt, sources);
    } else {
      ({ bytes, source } = await fetchVerified(entry));
      const where = source === 'cache' ? 'from Cache Storage' : 'downloaded';
      say('info', `${entry.path}: ${mb(entry.bytes)} MB, SHA-256 verified (${where}).`);
      if (main) E.source = source;
      if (rt === 'ort') E.ort.source = source;
      setState('compiling');
    }
    await ready;
    const t0 = performance.now();
    let compiled;
    try {
      compiled = await compile(rt, bytes, entry, choice);
    } finally {
      if (rt === 'tjs') Object.assign(E.tjs, { files: [...served], unverified: [...unverified] });
    }
    const ms = performance.now() - t0;
    if (folder) {
      source = sources[entry.path] || null;
      if (main) E.source = source;
    }
    if (rt === 'tjs') {
      E.tjs.source = source;
      if (!E.tjs.files.includes(entry.path)) {
        try { Promise.resolve(compiled.model.dispose()).catch(() => {}); } catch { /* already gone */ }
        throw new Error(`transformers.js did not load ${entry.path} (it loaded ${E.tjs.files.join(', ') || 'nothing'})`);
      }
      if (E.tjs.unverified.length) {
        say('info', `transformers.js asked for ${E.tjs.unverified.length} file(s) that manifest.json does not list ` +
          `(${E.tjs.unverified.join(', ')}): answered "not found", nothing fetched.`);
      }
    }
    retire(rt);
    current[rt] = { rt, key: keyOf(entry, choice), entry, choice, source, latencies: [], ...compiled };
    if (RT[rt].info) {
      E.runtime[rt] = RT[rt].info();   // e.g. ORT drops to 1 thread where SharedArrayBuffer is unavailable
      showRuntime();
    }
    if (rt === 'ort') {
      Object.assign(E.ort, { backend: compiled.backend, backendReason: compiled.reason,
        cpuNodes: compiled.cpuNodes ?? null, latencies: current.ort.latencies });
    }
    if (rt === 'tjs') {
      Object.assign(E.tjs, { backend: compiled.backend, backendReason: compiled.reason, latencies: current.tjs.latencies });
      showTjs();
    }
    if (main) Object.assign(E, { backend: compiled.backend, backendReason: compiled.reason, latencies: current[rt].latencies });
    showBackends(current);
    ui.adapter.textContent = E.adapter ? `${E.adapter}${E.adapterIsFallback ? ' (software fallback adapter)' : ''}` :
      (choice === 'wasm' ? 'not used (wasm chosen)' : 'none');
    say('info', rt === 'tjs' ? `transformers.js: pipeline('depth-estimation') ready on ${compiled.backend} in ` +
      `${ms.toFixed(0)} ms (dtype ${dtypeOf(entry.path)}; every file it loaded was SHA-256-verified by this page: ` +
      `${E.tjs.files.join(', ')}).` : `${NAMES[rt]}: compiled for ${compiled.backend} in ${ms.toFixed(0)} ms.`);
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

// ---------------------------------------------------------------------------------------------------- inference

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

/** Bilinear resize of a [inH, inW] map to [outH, outW]: ONNX Resize 'linear' with half_pixel coordinates, no
 * antialiasing (what transformers.js's interpolate_4d runs on predicted_depth), float64 arithmetic, float32 result. */
function resizeBilinear(src, inH, inW, outH, outW) {
  if (inH === outH && inW === outW) return src;
  const axis = (n, m) => {
    const i0 = new Int32Array(m);
    const i1 = new Int32Array(m);
    const f = new Float64Array(m);
    for (let o = 0; o < m; o++) {
      const c = Math.min(Math.max((o + 0.5) * (n / m) - 0.5, 0), n - 1);
      i0[o] = Math.floor(c);
      i1[o] = Math.min(i0[o] + 1, n - 1);
      f[o] = c - i0[o];
    }
    return { i0, i1, f };
  };
  const ys = axis(inH, outH);
  const xs = axis(inW, outW);
  const out = new Float32Array(outH * outW);
  for (let y = 0; y < outH; y++) {
    const r0 = ys.i0[y] * inW;
    const r1 = ys.i1[y] * inW;
    const fy = ys.f[y];
    for (let x = 0; x < outW; x++) {
      const a = xs.i0[x];
      const b = xs.i1[x];
      const fx = xs.f[x];
      const top = src[r0 + a] + (src[r0 + b] - src[r0 + a]) * fx;
      const bottom = src[r1 + a] + (src[r1 + b] - src[r1 + a]) * fx;
      out[y * outW + x] = top + (bottom - top) * fy;
    }
  }
  return out;
}

/** transformers.js on one photo: its pipeline (its preprocessing, inference, resize to the photo's size), then its
 * preprocessing alone against ours (preprocess.js) at its input size. In compare mode also: its model on our tensor of
 * that size (how much its preprocessing moves the map), on the tensor the other runtimes got (runtime differences
 * only), and its pipeline map against theirs, both resized to the photo's size. */
async function inferTjs(m, rgba, width, height, out, H, W) {
  try {
    return await inferTjsOnce(m, rgba, width, height, out, H, W);
  } catch (e) {
    retire('tjs');    // a failed run leaves transformers.js unusable (runtimes/tjs.js): the next photo builds anew
    throw e;
  }
}

async function inferTjsOnce(m, rgba, width, height, out, H, W) {
  const pipe = m.model;
  const s = performance.now();
  const r = await pipe.pipeline(rgba, width, height);
  const ms = performance.now() - s;
  m.latencies.push(ms);
  const [h0, w0] = r.dims;
  if (r.y.length !== h0 * w0) throw new Error(`transformers.js returned ${r.y.length} values for a ${h0}x${w0} map`);
  const pv = await pipe.pixelValues(rgba, width, height);
  const [, , ph, pw] = pv.dims;
  const q0 = performance.now();
  const ours = preprocessRGBA(rgba, width, height, ph, pw).tensor;
  const oursMs = performance.now() - q0;
  const preprocessing = { size: [ph, pw], inputs: relL2(pv.data, ours) };
  const res = { y: r.y, H: h0, W: w0, ms, backend: m.backend, artifact: m.entry.path, pixelValues: pv.data, oursMs };
  if (out.ort || out.litert) {
    const yOwn = await pipe.run(pv.data, ph, pw);
    const yOurs = await pipe.run(ours, ph, pw);
    preprocessing.maps = relL2(yOwn, yOurs);
    const ySame = await pipe.run(lastInputs.float32, H, W);
    const vs = {};
    for (const rt of ['ort', 'litert']) {
      if (!out[rt]) continue;
      vs[rt] = { sameTensor: relL2(ySame, out[rt].y), pipeline: relL2(r.y, resizeBilinear(out[rt].y, H, W, h0, w0)) };
    }
    E.tjsSameTensorOutput = ySame;
    res.compare = { ms, backend: m.backend, artifact: m.entry.path, dtype: dtypeOf(m.entry.path), outputSize: [h0, w0],
      pixelSize: [ph, pw], modelSize: [H, W], vs, preprocessing };
  }
  Object.assign(E.tjs, { lastLatencyMs: ms, outputSize: [h0, w0], pixelSize: [ph, pw], preprocessing });
  E.tjsLastOutput = r.y;
  E.tjsPixelValues = pv.data;
  return res;
}

/** The mode's loaded models: {page: the runtimes fed our tensor, tjs: transformers.js's (its own pipeline) or null}. */
function modeModels() {
  const models = wanted().map(({ rt }) => current[rt]);
  if (models.some((m) => !m)) throw new Error('no model is loaded');
  return { page: models.filter((m) => m.rt !== 'tjs'), tjs: models.find((m) => m.rt === 'tjs') || null };
}

/** Whether a webcam frame can be preprocessed while the GPU still computes the previous one: every model of the mode
 * runs on WebGPU (a wasm run keeps this thread busy, so preparing ahead would only show an older frame). */
export function canOverlap() {
  try {
    const { page, tjs } = modeModels();
    return E.overlapAllowed && !tjs && page.length > 0 && page.every((m) => m.backend === 'webgpu');
  } catch {
    return false;
  }
}

/** Why webcam frames cannot stay on the GPU (gpuframes.js) for the mode's model, or null when they can: LiteRT.js
 * alone, on WebGPU, one output, and a map the GPU colours as the page would (no smoothing: the EMA is on the CPU; no
 * metric caption or -depth colouring), on a hardware adapter unless ?gpuframes=1 / 0 says otherwise. */
export function gpuFramesBlocker() {
  if (E.gpuFramesAllowed === false) return 'turned off (?gpuframes=0)';
  if (E.gpuFramesError) return `they failed here (${E.gpuFramesError})`;
  if (mode() !== 'litert') return 'only for LiteRT.js alone (not in compare mode or with another runtime)';
  const m = current.litert;
  if (!m || m.backend !== 'webgpu' || !m.model.gpu) return 'the model does not run on WebGPU';
  if (E.gpuFramesAllowed !== true && E.adapterIsFallback !== false) {
    return 'the adapter is a software fallback: its GPU passes would run on the CPU (?gpuframes=1 forces them)';
  }
  if (Array.isArray(m.entry.outputs) && m.entry.outputs.length > 1) return 'the file has a second output to show';
  if (E.smoothing.on) return 'smoothing is on (it runs on the CPU)';
  if (E.maxDepth !== null || E.largerIsFarther) return 'this release colours -depth (metric or larger = farther)';
  return null;
}

let frames = null;            // {key, g: GpuFrames} for the LiteRT.js model that made it

/** The GpuFrames of the current LiteRT.js model (made once per model); gpuFramesBlocker first. */
export function gpuFramesFor() {
  const m = current.litert;
  if (frames && frames.key === m.key) return frames.g;
  dropGpuFrames();
  const [, , H, W] = m.entry.input.shape;
  const { dtype } = m.entry.input;
  const g = new GpuFrames(m.model.gpu.device(), { H, W, dtype,
    bind: (buffer) => m.model.gpu.bind(buffer, [1, 3, H, W], dtype) });
  frames = { key: m.key, g };
  return g;
}

export function dropGpuFrames() {
  if (frames) frames.g.destroy();
  frames = null;
}

/** After GPU frames: the last frame read back once ({input, output}: GpuFrames.readBack) becomes the page's
 * last inference, as runPrepared would have left it. -> the {out} that showResults draws. */
export function adoptGpuFrame(rb, ms) {
  const m = current.litert;
  const [, , H, W] = m.entry.input.shape;
  Object.assign(E, { lastInput: rb.input, lastOutput: rb.output, lastOutputShape: [1, H, W], lastLatencyMs: ms,
    lastSecondOutput: null, lastSecondRole: null });
  lastInputs = { float32: rb.input instanceof Float32Array ? rb.input : null,
    uint8: rb.input instanceof Uint8Array ? rb.input : null };
  return { out: { litert: { y: rb.output, H, W, ms, backend: m.backend, artifact: m.entry.path, second: null } } };
}

/** Which models a prepared frame was made for (a frame prepared ahead is dropped when the user switched). */
export function prepKey() {
  try {
    return modeModels().page.map((m) => m.key).join('|');
  } catch {
    return null;
  }
}

/** Preprocess one frame for the mode's models (CPU only, no await): {rgba, width, height, H, W, inputs, ms}; the
 * float32 tensor is made only when a model takes it (the WebGPU file takes the resized uint8 pixels as they are). */
export function prepare(rgba, width, height) {
  const { page, tjs } = modeModels();
  const [, , H, W] = (page[0] || tjs).entry.input.shape;
  if (!page.length) return { rgba, width, height, H, W, inputs: null, ms: null, key: prepKey() };
  const t0 = performance.now();
  const dtypes = new Set(page.map((m) => m.entry.input.dtype));
  const rgb = resizeBicubicPIL(rgba, width, height, W, H);
  const inputs = { float32: dtypes.has('float32') || tjs ? normaliseToNCHW(rgb, H, W) : null,
    uint8: dtypes.has('uint8') ? pixelsToNCHW(rgb, H, W) : null };
  return { rgba, width, height, H, W, inputs, ms: performance.now() - t0, key: prepKey() };
}

/** Run every loaded model of the mode on one prepared frame (`prepare`); latency per runtime = input tensor + run +
 * output read-back (preprocessing timed in `prepare`). transformers.js runs its whole pipeline (inferTjs). */
export async function runPrepared(prep) {
  const { page, tjs: tjsModel } = modeModels();
  const { rgba, width, height, H, W } = prep;
  const out = {};
  if (page.length) {
    lastInputs = prep.inputs;
    for (const m of page) {
      const s = performance.now();
      const y = await m.model.run(lastInputs[m.entry.input.dtype], H, W);
      const ms = performance.now() - s;
      m.latencies.push(ms);
      if (y.length !== H * W) {
        throw new Error(`${NAMES[m.rt]} output has ${y.length} values, expected ${H * W} ([1,${H},${W}])`);
      }
      out[m.rt] = { y, H, W, ms, backend: m.backend, artifact: m.entry.path, second: secondOutputOf(m.entry, y) };
    }
  }
  if (tjsModel) out.tjs = await inferTjs(tjsModel, rgba, width, height, out, H, W);
  const p = out[primary()];
  Object.assign(E, {
    lastInput: primary() === 'tjs' ? out.tjs.pixelValues : lastInputs[current[primary()].entry.input.dtype],
    lastOutput: p.y, lastOutputShape: [1, p.H, p.W], lastLatencyMs: p.ms,
    lastSecondOutput: p.second ? p.second.map : null, lastSecondRole: p.second ? p.second.role : null,
    lastPreprocessMs: page.length ? prep.ms : out.tjs.oursMs,
  });
  if (out.ort) {
    E.ortLastOutput = out.ort.y;
    E.ort.lastLatencyMs = out.ort.ms;
  }
  if (out.litert && out.ort) {
    const d = relL2(out.ort.y, out.litert.y);
    E.compare = { ...d, litert: { ms: out.litert.ms, backend: out.litert.backend, artifact: out.litert.artifact },
      ort: { ms: out.ort.ms, backend: out.ort.backend, artifact: out.ort.artifact } };
    if (out.tjs) E.compare.tjs = out.tjs.compare;
  }
  E.runs += 1;
  return { out };
}

/** Preprocess once, run every loaded model of the mode on the same tensor (prepare + runPrepared). */
export async function infer(rgba, width, height) {
  return runPrepared(prepare(rgba, width, height));
}

/** Latency of a loaded model (default: the page's runtime) on the last input: per call = input tensor + run + output
 * read-back (ms), as the page measures it. `split: true` (LiteRT.js): [{ms, write, run, read}] per call instead. */
export async function benchmark({ warmup = 3, iters = 10, runtime = primary(), split = false } = {}) {
  const c = current[runtime];
  if (!c || !E.lastInput) throw new Error('load a model and run it on a photo first');
  if (busy) throw new Error('an inference is running');
  return exclusive(async () => {
    const times = [];
    // transformers.js alone: its model on its last pixel_values (tjs mode), else on the page's tensor
    const own = runtime === 'tjs' && !lastInputs;
    const [H, W] = own ? E.tjs.pixelSize : c.entry.input.shape.slice(2);
    const input = own ? E.tjsPixelValues : lastInputs[c.entry.input.dtype];
    for (let i = 0; i < warmup + iters; i++) {
      const parts = split ? {} : null;
      const t0 = performance.now();
      await c.model.run(input, H, W, parts);
      const t1 = performance.now();
      if (i >= warmup) times.push(parts && 'run' in parts ? { ms: t1 - t0, ...parts } : t1 - t0);
    }
    return times;
  });
}
