// edgedepth playground: manifest.json -> verified download (Cache Storage) -> LiteRT.js, ONNX Runtime Web and/or
// transformers.js (WebGPU or wasm) -> depth map(s). Plain ES module, no framework, no bundler. Test hooks live on
// window.edgedepth (see web/README.md).

import * as litert from '@litertjs/core';
import { colorizeDepth, colorizeUnit, normalizeDepth } from './colormap.js';
import { createSession, createWebGpuSession, loadOrt, opCounts, ortInfo, runSession } from './ort.js';
import { decodeImage, pixelsToNCHW, preprocessRGBA } from './preprocess.js';
import { createPipeline, disposePipeline, dtypeOf, loadTjs, pixelValues, runModel, runPipeline, served, tjsInfo,
  unverified } from './tjs.js';
import { emaStep, FpsMeter } from './video.js';

const params = new URLSearchParams(location.search);
const RELEASE = withSlash(params.get('release') || './release/');
const VENDOR = './vendor/@litertjs/core/';
const CACHE_NAME = 'edgedepth-models-v1';
const PHOTO_MAX = 1280;   // longest side of the displayed photo
const NAMES = { litert: 'LiteRT.js', ort: 'ONNX Runtime Web', tjs: 'transformers.js' };
const MODES = ['litert', 'ort', 'tjs', 'compare'];

const $ = (id) => document.getElementById(id);
const ui = {
  mode: $('runtime'), artifact: $('artifact'), backend: $('backend'), load: $('load'), progress: $('progress'),
  progressText: $('progress-text'), artifactInfo: $('artifact-info'), messages: $('messages'),
  state: $('st-state'), backendOut: $('st-backend'), adapter: $('st-adapter'), runtime: $('st-runtime'),
  latency: $('st-latency'), compareRow: $('st-compare-row'), compare: $('st-compare'), file: $('file'),
  drop: $('drop'), webcam: $('webcam'), photo: $('photo'), views: $('views'), depth: $('depth'), video: $('video'),
  depthCaption: $('depth-caption'), depthAt: $('depth-at'), depthTitle: $('depth-title'), ortFigure: $('ort-figure'),
  depthOrt: $('depth-ort'), smooth: $('smooth'), smoothAlpha: $('smooth-alpha'), smoothAlphaOut: $('smooth-alpha-out'),
  videoRow: $('st-video-row'), videoOut: $('st-video'), compareTjs: $('compare-tjs'),
  compareTjsLabel: $('compare-tjs-label'), tjsFigure: $('tjs-figure'), depthTjs: $('depth-tjs'),
  tjsRow: $('st-tjs-row'), tjsOut: $('st-tjs'),
};

// Everything a test (or a curious user in the console) may read.
const E = {
  state: 'starting',          // starting | idle | downloading | verifying | compiling | ready | running | error
  mode: 'litert',             // 'litert' | 'ort' | 'tjs' | 'compare': which runtime(s) run the photo
  // The fields below describe the page's runtime: LiteRT.js ('litert' and 'compare'), ONNX Runtime Web ('ort') or
  // transformers.js ('tjs': lastOutput is the pipeline's map at the photo's size, lastInput its pixel_values).
  artifact: null,             // manifest path of the loaded file
  backend: null,              // 'webgpu' | 'wasm' (what actually runs)
  backendRequested: null,     // 'auto' | 'webgpu' | 'wasm'
  backendReason: null,        // why wasm runs when WebGPU was possible to ask for
  adapter: null,              // WebGPU adapter name, or null
  adapterIsFallback: null,
  runtime: null,              // {litertjs, threads, crossOriginIsolated, ort: {version, threads} once ORT-web loaded,
                              //   tjs: {version, ort, threads} once transformers.js loaded}
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
                              //   lastLatencyMs, latencies, cpuNodes: on WebGPU, [{op, name}] ORT placed on the CPU
                              //   (int64 shape computations of a dynamic-size graph; [] = all on WebGPU), else null}
  ortLastOutput: null,        // Float32Array [1,H,W] of ONNX Runtime Web's last inference
  compare: null,              // 'compare': {relL2, maxAbs, litert: {ms, backend, artifact}, ort: {...}, tjs: {...}
                              //   with transformers.js (see web/README.md)}
  tjs: null,                  // transformers.js ('tjs', compare with it): {artifact, dtype, backend, backendReason,
                              //   source, sources {path: network|cache}, files (what it got, all verified),
                              //   unverified (URLs it tried to fetch itself: answered 404), lastLatencyMs, latencies,
                              //   outputSize [h, w], pixelSize [h, w], preprocessing {size, inputs {relL2, maxAbs}}}
  tjsLastOutput: null,        // Float32Array [h*w]: the pipeline's predicted_depth (resized to the photo by it)
  tjsPixelValues: null,       // Float32Array [1,3,h,w]: its pixel_values for the last photo
  tjsSameTensorOutput: null,  // compare: Float32Array [1,H,W], its model on the tensor the other runtimes got
  tjsReady: false,            // manifest.json lists config.json + preprocessor_config.json + onnx/model*.onnx
};
window.edgedepth = E;

let manifestFiles = { litert: [], ort: [], tjs: [] };   // .tflite, .onnx, transformers.js .onnx entries
let lastInputs = null;        // the last inference's inputs by dtype: {float32: Float32Array, uint8: Uint8Array | null}
let recommended = null;       // manifest.json's recommendation for the backend that will run, {path, why, use}
const current = { litert: null, ort: null, tjs: null };   // per runtime: {key, entry, choice, model, backend, ...}
const loading = { litert: null, ort: null, tjs: null };   // per runtime: {key, promise} of the load in progress
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
  if (mode() === 'tjs') {
    return [`dtype ${dtypeOf(f.path)}`, f.path, `${mb(f.bytes)} MB`, f.dynamic_size ? 'dynamic size' : ''].filter(Boolean)
      .join(' · ');
  }
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
  // transformers.js needs the folder's config.json + preprocessor_config.json (verified like the models) and runs
  // onnx/model<dtype suffix>.onnx
  const verifiable = (f) => f && typeof f.sha256 === 'string' && Number.isFinite(f.bytes);
  const tjsReady = ['config.json', 'preprocessor_config.json']
    .every((p) => verifiable(m.files.find((f) => f.path === p)));
  const tjs = tjsReady ? files.filter((f) => isOnnx(f) && dtypeOf(f.path)) : [];
  return { manifest: m, files: { litert: files.filter(isTflite), ort: files.filter(isOnnx), tjs },
    tjsReady: tjs.length > 0 };
}

function mode() { return ui.mode.value; }
/** The runtime whose state the page's main fields show (LiteRT.js also in compare mode). */
function primary() { return mode() === 'ort' || mode() === 'tjs' ? mode() : 'litert'; }
/** compare mode with transformers.js as a third runtime (the checkbox, ?tjs=1). */
function compareTjs() { return mode() === 'compare' && E.tjsReady && ui.compareTjs.checked; }
/** The transformers.js file compared with ONNX Runtime Web's: the same .onnx when transformers.js can load it (same
 * bytes, two ORT-web builds), else its FP32 file. */
function tjsPartnerOf(o) {
  const files = manifestFiles.tjs;
  return (o && files.find((f) => f.path === o.path)) || files.find((f) => dtypeOf(f.path) === 'fp32') || files[0] || null;
}
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
    if (keep && announce) say('warn', `?artifact=${keep} is not a ${{ ort: '.onnx', tjs: 'transformers.js .onnx ' +
      '(onnx/model*.onnx)' }[primary()] || '.tflite'} file of manifest.json; using the default file`);
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
  if (mode() === 'tjs') {
    ui.artifactInfo.textContent = `${f.path} — transformers.js pipeline('depth-estimation'), dtype ${dtypeOf(f.path)}, ` +
      'with this folder\'s config.json and preprocessor_config.json (its own preprocessing and input size; ' +
      `manifest.json verified the file at ${h}x${w}` + (f.dynamic_size ? ', dynamic height and width' : '') +
      `), sha256 ${f.sha256.slice(0, 16)}…`;
    return;
  }
  const other = mode() === 'compare' ? partnerOf(f) : null;
  const dtype = f.input.dtype === 'uint8' ? 'uint8 NCHW (resized RGB pixels; the graph normalises)' : 'float32 NCHW';
  ui.artifactInfo.textContent = `${f.path} — input ${f.input.name || ''} [1,3,${h},${w}] ${dtype}, ` +
    `output [1,${h},${w}]` + (f.ops ? `, ${f.ops} ops` : '') + `, sha256 ${f.sha256.slice(0, 16)}…` +
    (mode() !== 'compare' ? '' : other ? `; compared with ${other.path} (${(other.precision || '?').toUpperCase()}, ` +
      `sha256 ${other.sha256.slice(0, 16)}…)` : `; no .onnx of ${h}x${w} in manifest.json to compare with`) +
    (other && compareTjs() ? `; transformers.js runs ${tjsPartnerOf(other).path} ` +
      `(dtype ${dtypeOf(tjsPartnerOf(other).path)})` : '');
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
  E.runtime = { litertjs: version, threads: threads ? n : 1, crossOriginIsolated: isolated, ort: null, tjs: null };
  showRuntime();
  if (!isolated) say('warn', 'The page is not cross-origin isolated (COOP/COEP headers missing): wasm runs single-threaded.');
  return lr;
}

function showRuntime() {
  const r = E.runtime;
  const t = (n) => `wasm ${n === 1 ? '1 thread' : `${n} threads`}`;
  ui.runtime.textContent = `LiteRT.js ${r.litertjs}, ${t(r.threads)}` +
    (r.ort ? ` · ONNX Runtime Web ${r.ort.version}, ${t(r.ort.threads)}` : '') +
    (r.tjs ? ` · transformers.js ${r.tjs.version} (its ONNX Runtime Web ${r.tjs.ort}), ${t(r.tjs.threads)}` : '') +
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

// transformers.js likewise, when first needed (its own ORT-web build, same thread count).
let tjsStart = null;
function ensureTjs() {
  if (!tjsStart) {
    tjsStart = (async () => {
      await runtimeReady;
      try {
        E.runtime.tjs = await loadTjs(E.runtime.threads);
      } catch (e) {
        throw new Error(`transformers.js could not start (${msg(e)}). Is \`make setup\` (or \`npm ci --prefix web\`) ` +
          'done? Run it and restart `edgedepth serve`');
      }
      showRuntime();
    })();
    tjsStart.catch(() => { tjsStart = null; });
  }
  return tjsStart;
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

/** ONNX Runtime Web on WebGPU (its WebGPU execution provider): {model, cpuNodes} or {reason}. No CPU fallback, except
 * the int64 shape computations ORT keeps on the CPU in a dynamic-size graph, read from its node-placement log and
 * checked (ort.js createWebGpuSession): cpuNodes lists them ([] = the whole graph on WebGPU). */
async function ortWebGPU(bytes) {
  try {
    const { session, cpuNodes } = await createWebGpuSession(bytes);
    if (cpuNodes.length) {
      say('info', `ONNX Runtime Web on WebGPU: ${cpuNodes.length} nodes run on the CPU, all of them int64 shape ` +
        'computations (checked in ONNX Runtime\'s node-placement log and in the file\'s types), as ONNX Runtime ' +
        `places them for dynamic-size models: ${opCounts(cpuNodes)} (${cpuNodes.map((n) => n.name).join(', ')}).`);
    }
    return { model: session, cpuNodes };
  } catch (e) {
    return {
      reason: e.notFullyDelegated ? 'the model is not fully delegated to WebGPU (ONNX Runtime would run some nodes ' +
        `on the CPU: ${e.message})` : `WebGPU session creation failed: ${e.message}`,
    };
  }
}

/** transformers.js on WebGPU (device 'webgpu': ORT-web's WebGPU execution provider, as transformers.js sets it up):
 * {model} or {reason}. `files` resolves manifest paths to verified bytes; a refused file is an error, not a reason to
 * try wasm. */
async function tjsWebGPU(files, entry) {
  try {
    return { model: await createPipeline(dtypeOf(entry.path), 'webgpu', files) };
  } catch (e) {
    if (e instanceof Refused) throw e;
    return { reason: `transformers.js could not build its pipeline on WebGPU: ${e.message}` };
  }
}

/** Per runtime: compile on WebGPU or wasm, run one [1,3,H,W] tensor (input + run + output read-back), free.
 * (transformers.js: "compile" = build its pipeline from the verified files; run = its model alone on a tensor; the
 * pipeline itself runs in inferTjs.) */
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
  tjs: {
    webgpu: tjsWebGPU,
    wasm: (files, entry) => createPipeline(dtypeOf(entry.path), 'wasm', files),
    run: runModel,
    dispose: disposePipeline,
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
      if (r.model) return { model: r.model, backend: 'webgpu', reason: null, cpuNodes: r.cpuNodes ?? null };
      reason = r.reason;
    }
    reason = reason.replace(/[.\s]+$/, '');
    say('warn', `Running on wasm${rt === 'litert' ? '' : ` (${NAMES[rt]})`}: ${reason}.`);
  }
  const model = await runners[rt].wasm(bytes, entry);
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

/** transformers.js's file source: manifest path -> verified bytes (downloaded or from Cache Storage, the same rules
 * as the models), null for a path manifest.json does not list (transformers.js then treats it as missing). Each file
 * is verified once per load, even when the pipeline is built twice (WebGPU, then wasm). */
function tjsFiles(sources) {
  const done = new Map();
  return (path) => {
    if (!done.has(path)) {
      const entry = E.manifest.files.find((f) => f.path === path);
      done.set(path, !entry || typeof entry.sha256 !== 'string' || !Number.isFinite(entry.bytes) ? Promise.resolve(null) :
        verifiedBytes(entry).then(({ bytes, source }) => {
          sources[path] = source;
          const size = entry.bytes < 1e5 ? `${entry.bytes} bytes` : `${mb(entry.bytes)} MB`;
          const where = source === 'cache' ? 'from Cache Storage' : 'downloaded';
          say('info', `${path}: ${size}, SHA-256 verified (${where}) for transformers.js.`);
          setState('compiling');
          return bytes;
        }));
    }
    return done.get(path);
  };
}

// ---------------------------------------------------------------------------------------------------- model

function keyOf(entry, choice) { return `${entry ? entry.path : ''}|${choice}`; }

/** What the mode runs: [{rt, entry}] (compare: the selected .tflite, then its .onnx partner, then transformers.js's
 * file when it is compared too). */
function wanted() {
  const entry = selectedEntry();
  if (mode() === 'ort' || mode() === 'tjs') return [{ rt: mode(), entry }];
  if (mode() === 'litert') return [{ rt: 'litert', entry }];
  const other = partnerOf(entry);
  if (entry && !other) {
    const [, , h, w] = entry.input.shape;
    throw new Error(`compare needs an .onnx file of the same input size (${h}x${w}) as ${entry.path}; ` +
      'manifest.json lists none');
  }
  const both = [{ rt: 'litert', entry }, { rt: 'ort', entry: other }];
  return compareTjs() && other ? [...both, { rt: 'tjs', entry: tjsPartnerOf(other) }] : both;
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
    if (rt === 'ort' && c.backend === 'webgpu' && c.cpuNodes?.length) {
      return `WebGPU (${c.cpuNodes.length} shape-computation nodes on the CPU, as ONNX Runtime places them for ` +
        `dynamic-size models: ${opCounts(c.cpuNodes)})`;
    }
    return c.backend === 'webgpu' ? `WebGPU${{ litert: ' (FP32 precision requested)', tjs: ' (as transformers.js ' +
      'runs it: ORT-web may keep shape computations on the CPU)' }[rt] || ''}` :
      `wasm (CPU)${c.reason ? ` — ${c.reason}` : ''}`;
  };
  ui.backendOut.textContent = mode() === 'compare' ? `${NAMES.litert}: ${one('litert')} · ${NAMES.ort}: ${one('ort')}` +
    (compareTjs() ? ` · ${NAMES.tjs}: ${one('tjs')}` : '') : one(primary());
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
      E.ort = { artifact: entry.path, backend: null, backendReason: null, cpuNodes: null, source: null,
        lastLatencyMs: null, latencies: null };
    }
    if (rt === 'tjs') {
      E.tjs = { artifact: entry.path, dtype: dtypeOf(entry.path), backend: null, backendReason: null, source: null,
        sources: {}, files: [], unverified: [], lastLatencyMs: null, latencies: null, outputSize: null, pixelSize: null,
        preprocessing: null };
    }
    const ready = { ort: ensureOrt, tjs: ensureTjs }[rt]?.() || runtimeReady;
    let bytes;
    let source;
    if (rt === 'tjs') {
      // transformers.js asks for the files it needs while its pipeline is built; each comes from here, verified
      await ready;
      bytes = tjsFiles(E.tjs.sources);
    } else {
      ({ bytes, source } = await verifiedBytes(entry));
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
    if (rt === 'tjs') {
      source = E.tjs.sources[entry.path] || null;
      E.tjs.source = source;
      if (main) E.source = source;
      if (!E.tjs.files.includes(entry.path)) {
        compiled.model && Promise.resolve(disposePipeline(compiled.model)).catch(() => {});
        throw new Error(`transformers.js did not load ${entry.path} (it loaded ${E.tjs.files.join(', ') || 'nothing'})`);
      }
      if (E.tjs.unverified.length) {
        say('info', `transformers.js asked for ${E.tjs.unverified.length} file(s) that manifest.json does not list ` +
          `(${E.tjs.unverified.join(', ')}): answered "not found", nothing fetched.`);
      }
    }
    retire(rt);
    current[rt] = { rt, key: keyOf(entry, choice), entry, choice, source, latencies: [], ...compiled };
    if (rt === 'ort') {
      Object.assign(E.ort, { backend: compiled.backend, backendReason: compiled.reason,
        cpuNodes: compiled.cpuNodes ?? null, latencies: current.ort.latencies });
      E.runtime.ort = ortInfo();   // ORT drops to 1 thread where SharedArrayBuffer is unavailable
      showRuntime();
    }
    if (rt === 'tjs') {
      Object.assign(E.tjs, { backend: compiled.backend, backendReason: compiled.reason, latencies: current.tjs.latencies });
      E.runtime.tjs = tjsInfo();
      showRuntime();
      showTjs();
    }
    if (main) Object.assign(E, { backend: compiled.backend, backendReason: compiled.reason, latencies: current[rt].latencies });
    showBackends();
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
    retire('tjs');    // a failed run leaves transformers.js unusable (tjs.js): the next photo builds a new pipeline
    throw e;
  }
}

async function inferTjsOnce(m, rgba, width, height, out, H, W) {
  const pipe = m.model;
  const s = performance.now();
  const r = await runPipeline(pipe, rgba, width, height);
  const ms = performance.now() - s;
  m.latencies.push(ms);
  const [h0, w0] = r.dims;
  if (r.y.length !== h0 * w0) throw new Error(`transformers.js returned ${r.y.length} values for a ${h0}x${w0} map`);
  const pv = await pixelValues(pipe, rgba, width, height);
  const [, , ph, pw] = pv.dims;
  const q0 = performance.now();
  const ours = preprocessRGBA(rgba, width, height, ph, pw).tensor;
  const oursMs = performance.now() - q0;
  const preprocessing = { size: [ph, pw], inputs: relL2(pv.data, ours) };
  const res = { y: r.y, H: h0, W: w0, ms, backend: m.backend, artifact: m.entry.path, pixelValues: pv.data, oursMs };
  if (out.ort || out.litert) {
    const yOwn = await runModel(pipe, pv.data, ph, pw);
    const yOurs = await runModel(pipe, ours, ph, pw);
    preprocessing.maps = relL2(yOwn, yOurs);
    const ySame = await runModel(pipe, lastInputs.float32, H, W);
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

/** Preprocess once, run every loaded model of the mode on the same tensor; latency per runtime = input tensor +
 * run + output read-back (preprocessing timed separately). transformers.js runs its whole pipeline (inferTjs). */
async function infer(rgba, width, height) {
  const models = wanted().map(({ rt }) => current[rt]);
  if (models.some((m) => !m)) throw new Error('no model is loaded');
  const page = models.filter((m) => m.rt !== 'tjs');
  const tjsModel = models.find((m) => m.rt === 'tjs');
  const [, , H, W] = models[0].entry.input.shape;
  const out = {};
  const t0 = performance.now();
  let t1 = t0;
  const inputOf = (m) => lastInputs[m.entry.input.dtype];
  if (page.length) {
    const { rgb, tensor } = preprocessRGBA(rgba, width, height, H, W);
    // a file whose manifest input dtype is uint8 (_u8in.tflite, the WebGPU file) takes the resized pixels as they are
    const u8 = page.some((m) => m.entry.input.dtype === 'uint8');
    lastInputs = { float32: tensor, uint8: u8 ? pixelsToNCHW(rgb, H, W) : null };
    t1 = performance.now();
    for (const m of page) {
      const s = performance.now();
      const y = await runners[m.rt].run(m.model, inputOf(m), H, W);
      const ms = performance.now() - s;
      m.latencies.push(ms);
      if (y.length !== H * W) {
        throw new Error(`${NAMES[m.rt]} output has ${y.length} values, expected ${H * W} ([1,${H},${W}])`);
      }
      out[m.rt] = { y, H, W, ms, backend: m.backend, artifact: m.entry.path };
    }
  }
  if (tjsModel) out.tjs = await inferTjs(tjsModel, rgba, width, height, out, H, W);
  const p = out[primary()];
  Object.assign(E, {
    lastInput: primary() === 'tjs' ? out.tjs.pixelValues : inputOf(current[primary()]), lastOutput: p.y,
    lastOutputShape: [1, p.H, p.W], lastLatencyMs: p.ms, lastPreprocessMs: page.length ? t1 - t0 : out.tjs.oursMs,
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

/** Draw what infer() returned: one map, or (compare) LiteRT.js's and ONNX Runtime Web's (and transformers.js's)
 * side by side, each at its own size (transformers.js: the photo's). */
function showResults({ out }, video = false) {
  const p = out[primary()];
  renderDepth(ui.depth, p.y, p.H, p.W, video);
  if (out.litert && out.ort) renderDepth(ui.depthOrt, out.ort.y, out.ort.H, out.ort.W, video);
  if (out.tjs && primary() !== 'tjs') renderDepth(ui.depthTjs, out.tjs.y, out.tjs.H, out.tjs.W, video);
  showLatency();
  showTjs();
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

/** transformers.js's latency: one pipeline call (its preprocessing, inference, resize to the photo's size). */
function tjsLatency() {
  const t = E.tjs;
  const l = t.latencies || [];
  return `${NAMES.tjs} ${t.lastLatencyMs.toFixed(1)} ms per pipeline call on ${t.backend}` +
    (l.length > 1 ? ` (median ${median(l).toFixed(1)} ms over ${l.length})` : '') +
    ` (its preprocessing to ${t.pixelSize.join('x')}, inference, resize to ${t.outputSize.join('x')})`;
}

function showLatency() {
  const pre = `; preprocessing ${E.lastPreprocessMs.toFixed(1)} ms`;
  const c = E.compare;
  if (mode() === 'compare' && c) {
    const one = (rt, l) => `${NAMES[rt]} ${c[rt].ms.toFixed(1)} ms on ${c[rt].backend}` +
      (l.length > 1 ? ` (median ${median(l).toFixed(1)})` : '');
    ui.latency.textContent = `${one('litert', E.latencies)} · ${one('ort', E.ort.latencies)} per inference${pre}` +
      (c.tjs ? ` · ${tjsLatency()}` : '');
    ui.compare.textContent = `rel-L2 ${c.relL2.toExponential(2)} (ONNX Runtime Web vs LiteRT.js, same input), ` +
      `max |Δ| ${c.maxAbs.toExponential(2)}` + (c.tjs ? '; transformers.js: see below' : '');
    return;
  }
  if (mode() === 'tjs') {
    ui.latency.textContent = `${tjsLatency()}; our preprocessing at that size (for the comparison below) ` +
      `${E.lastPreprocessMs.toFixed(1)} ms`;
    return;
  }
  const l = E.latencies;
  ui.latency.textContent = `${E.lastLatencyMs.toFixed(1)} ms per inference on ${E.backend}` +
    (l.length > 1 ? ` (median ${median(l).toFixed(1)} ms over ${l.length})` : '') + pre;
}

const ex = (v) => (Number.isFinite(v) ? v.toExponential(2) : String(v));

/** The transformers.js row: which files it ran (all verified by this page), where its preprocessing differs from
 * ours, and (compare) how its maps differ from the other runtimes'. */
function showTjs() {
  const on = mode() === 'tjs' || compareTjs();
  ui.tjsRow.hidden = !on;
  if (!on) return;
  const t = E.tjs;
  if (!t || !t.backend) {
    ui.tjsOut.textContent = '—';
    return;
  }
  const lines = [`${t.artifact} (dtype ${t.dtype}) on ${t.backend === 'webgpu' ? 'WebGPU' : 'wasm (CPU)'}` +
    (t.backendReason ? ` — ${t.backendReason}` : '') + `; every file it loaded was SHA-256-verified by this page ` +
    `against manifest.json (${t.files.join(', ')}); ` + (t.unverified.length ? `${t.unverified.length} request(s) ` +
    'for files manifest.json does not list were answered "not found", nothing fetched' : 'it fetched nothing itself')];
  const pre = t.preprocessing;
  if (pre) {
    lines.push(`its preprocessing (canvas resize) vs ours (Pillow bicubic, preprocess.js) at ${pre.size.join('x')}: ` +
      `pixel_values rel-L2 ${ex(pre.inputs.relL2)}, max |Δ| ${ex(pre.inputs.maxAbs)}` +
      (pre.maps ? `; its model on each: depth rel-L2 ${ex(pre.maps.relL2)}, max |Δ| ${ex(pre.maps.maxAbs)}` : ''));
  }
  const c = mode() === 'compare' && E.compare && E.compare.tjs;
  if (c) {
    for (const rt of ['ort', 'litert']) {
      const v = c.vs[rt];
      if (!v) continue;
      lines.push(`vs ${NAMES[rt]}: same ${c.modelSize.join('x')} tensor rel-L2 ${ex(v.sameTensor.relL2)} ` +
        `(max |Δ| ${ex(v.sameTensor.maxAbs)}); pipeline map (its preprocessing, ${c.pixelSize.join('x')}) vs ` +
        `${NAMES[rt]}'s (${c.modelSize.join('x')}), both at ${c.outputSize.join('x')}: rel-L2 ${ex(v.pipeline.relL2)}`);
    }
  }
  ui.tjsOut.textContent = lines.join('\n');
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

const anyModel = () => Object.values(current).some(Boolean) || Object.values(loading).some(Boolean);

/** Show what the mode needs: compare draws a second depth map (ONNX Runtime Web), with transformers.js a third, and
 * the rel-L2 rows. */
function applyMode() {
  E.mode = mode();
  const compare = mode() === 'compare';
  const withTjs = compareTjs();
  ui.views.classList.toggle('compare', compare && !withTjs);
  ui.views.classList.toggle('compare4', withTjs);
  ui.ortFigure.hidden = !compare;
  ui.tjsFigure.hidden = !withTjs;
  ui.compareRow.hidden = !compare;
  ui.compareTjsLabel.hidden = !compare || !E.tjsReady;
  if (!compare) E.compare = null;
  ui.depthTitle.textContent = compare ? `${NAMES.litert} · ` : mode() === 'litert' ? '' : `${NAMES[mode()]} · `;
  ui.depthCaption.textContent = mode() === 'tjs' ? 'depth (its predicted_depth at the photo\'s size; inferno, min–max ' +
    'normalised, bright = near)' : 'depth (inferno, min–max normalised, bright = near)';
  showBackends();
  showTjs();
}

ui.load.addEventListener('click', () => { ensureModels().catch(() => {}); });
ui.mode.addEventListener('change', () => {
  fillArtifacts(ui.artifact.value);
  applyMode();
  warmRuntimes();
  if (anyModel()) ensureModels().catch(() => {});
});
ui.compareTjs.addEventListener('change', () => {
  applyMode();
  showArtifactInfo();
  warmRuntimes();
  if (anyModel()) ensureModels().catch(() => {});
});

/** Start loading the runtimes the mode needs beyond LiteRT.js (ORT-web, transformers.js) before the first photo. */
function warmRuntimes() {
  if (mode() === 'ort' || mode() === 'compare') ensureOrt().catch((e) => say('error', e.message));
  if (mode() === 'tjs' || compareTjs()) ensureTjs().catch((e) => say('error', e.message));
}
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
    // transformers.js alone: its model on its last pixel_values (tjs mode), else on the page's tensor
    const own = runtime === 'tjs' && !lastInputs;
    const [H, W] = own ? E.tjs.pixelSize : c.entry.input.shape.slice(2);
    const input = own ? E.tjsPixelValues : lastInputs[c.entry.input.dtype];
    for (let i = 0; i < warmup + iters; i++) {
      const parts = split && runtime === 'litert' ? {} : null;
      const t0 = performance.now();
      await runners[runtime].run(c.model, input, H, W, parts);
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

/** The mode the release allows: LiteRT.js needs a .tflite, ONNX Runtime Web an .onnx, compare both, transformers.js
 * a transformers.js folder (config.json, preprocessor_config.json, onnx/model*.onnx). */
function checkMode() {
  const has = Object.fromEntries(['litert', 'ort', 'tjs'].map((rt) => [rt, manifestFiles[rt].length > 0]));
  for (const o of ui.mode.options) o.disabled = o.value === 'compare' ? !(has.litert && has.ort) : !has[o.value];
  ui.compareTjs.disabled = !has.tjs;
  if (mode() === 'tjs' && !has.tjs) {
    say('warn', 'manifest.json lists no transformers.js folder (config.json, preprocessor_config.json and ' +
      'onnx/model*.onnx): transformers.js has nothing to run; using ' + (has.litert ? 'LiteRT.js.' : 'ONNX Runtime Web.'));
    ui.mode.value = has.litert ? 'litert' : 'ort';
  }
  if (mode() === 'tjs') return;
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
  else if (r) say('warn', `?runtime=${r}: expected litert, ort, tjs or compare; using LiteRT.js.`);
  ui.compareTjs.checked = params.get('tjs') === '1';
  const tjs = params.get('tjs');
  if (tjs && !['0', '1'].includes(tjs)) say('warn', `?tjs=${tjs}: expected 1 or 0.`);
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
    const { manifest, files, tjsReady } = await readManifest();
    E.manifest = manifest;
    E.tjsReady = tjsReady;
    manifestFiles = files;
    const model = manifest.model || {};
    if (model.kind === 'metric') E.maxDepth = model.max_depth_m;
    const gpu = ui.backend.value === 'wasm' ? {} : await detectWebGPU();
    const use = gpu.adapter && (!gpu.fallback || ui.backend.value === 'webgpu') ? 'webgpu' : 'wasm';
    const rec = (manifest.recommended || {})[use];
    recommended = rec ? { ...rec, use } : null;
    checkMode();
    if (ui.compareTjs.checked && !E.tjsReady) {
      say('warn', '?tjs=1: manifest.json lists no transformers.js folder (config.json, preprocessor_config.json and ' +
        'onnx/model*.onnx); compare runs without transformers.js.');
    }
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
  else warmRuntimes();
}

main();
