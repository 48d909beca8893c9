// The page: its elements (ui), window.edgedepth (E: what tests and the console read), messages, the artifact list,
// the status rows and the depth maps. Reads the models it shows from its callers (model.js owns them).

import { colorizeUnit, normalizeDepth } from './colormap.js';
import { msg } from './files.js';
import { defaultFile, label, partnerOf, release, sortFiles, tjsPartnerOf } from './manifest.js';
import { RT, RUNTIMES } from './runtimes/index.js';
import { dtypeOf } from './runtimes/tjs.js';
import { emaStep } from './video.js';

const PHOTO_MAX = 1280;   // longest side of the displayed photo
export const NAMES = Object.fromEntries(RUNTIMES.map((rt) => [rt.id, rt.name]));

const $ = (id) => document.getElementById(id);
export const ui = {
  mode: $('runtime'), artifact: $('artifact'), backend: $('backend'), load: $('load'), progress: $('progress'),
  progressText: $('progress-text'), artifactInfo: $('artifact-info'), messages: $('messages'),
  state: $('st-state'), backendOut: $('st-backend'), adapter: $('st-adapter'), runtime: $('st-runtime'),
  latency: $('st-latency'), compareRow: $('st-compare-row'), compare: $('st-compare'), file: $('file'),
  drop: $('drop'), webcam: $('webcam'), photo: $('photo'), views: $('views'), depth: $('depth'), video: $('video'),
  depthCaption: $('depth-caption'), depthAt: $('depth-at'), depthTitle: $('depth-title'), ortFigure: $('ort-figure'),
  depthOrt: $('depth-ort'), smooth: $('smooth'), smoothAlpha: $('smooth-alpha'), smoothAlphaOut: $('smooth-alpha-out'),
  videoRow: $('st-video-row'), videoOut: $('st-video'), compareTjs: $('compare-tjs'),
  compareTjsLabel: $('compare-tjs-label'), tjsFigure: $('tjs-figure'), depthTjs: $('depth-tjs'),
  confFigure: $('conf-figure'), confidence: $('confidence'), confCaption: $('conf-caption'),
  tjsRow: $('st-tjs-row'), tjsOut: $('st-tjs'),
};
// A runtime of web/runtimes/ that index.html does not list gets its option here (before "compare").
for (const rt of RUNTIMES) {
  if (![...ui.mode.options].some((o) => o.value === rt.id)) {
    ui.mode.add(new Option(`${rt.name} (${rt.formats.map((f) => `.${f}`).join(', ')})`, rt.id),
      [...ui.mode.options].find((o) => o.value === 'compare') || null);
  }
}

// Everything a test (or a curious user in the console) may read.
export const E = {
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
  lastSecondOutput: null,     // Float32Array [1,H,W]: the file's confidence or sky output (Depth Anything 3), else null
  lastSecondRole: null,       // its role: 'confidence' | 'sky' | null
  largerIsFarther: false,     // manifest model.larger_is_farther (Depth Anything 3): relative depth, not inverse
  lastOutputShape: null,
  lastLatencyMs: null,        // model.run + output read-back
  lastPreprocessMs: null,
  latencies: [],              // this model's latencies (ms), one per inference since it was loaded
  runs: 0,
  errors: [],
  messages: [],
  manifest: null,
  webcam: null,               // null | 'running' | 'stopped' | message when unavailable
  video: null,                // while/after the webcam runs: {fps, frames, backend, overlap, prevShown, frameTimes,
                              //   preprocessMs, gpuFrames, gpuReason, lastFrame}; prevShown = the normalised map shown
                              //   before the last frame (what smoothing blended with); frameTimes = performance.now()
                              //   of each frame shown; gpuFrames: frames stay on the GPU (else gpuReason says why not);
                              //   lastFrame = {rgba, width, height, colours} of the last GPU frame, read back at stop
  overlapAllowed: true,       // webcam on WebGPU: preprocess frame N+1 while the GPU runs frame N (?overlap=0: off)
  gpuFramesAllowed: null,     // webcam, LiteRT.js on WebGPU, frames computed on the GPU (gpuframes.js): true/false
                              // = ?gpuframes=1/0; null = on a hardware adapter only
  gpuFramesError: null,       // why GPU frames failed on this page (then every frame is read back), or null
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

// ---------------------------------------------------------------------------------------------------- messages

export function say(kind, text) {
  E.messages.push({ kind, text });
  if (kind === 'error') E.errors.push(text);
  const p = document.createElement('p');
  p.className = `msg ${kind}`;
  p.textContent = text;
  ui.messages.appendChild(p);
  while (ui.messages.children.length > 30) ui.messages.firstChild.remove();
  (kind === 'error' ? console.error : console.log)(`[edgedepth] ${text}`);
}

export function setState(s) {
  E.state = s;
  ui.state.textContent = s;
  ui.state.dataset.state = s;
}

window.addEventListener('error', (e) => say('error', `Unexpected error: ${e.message || e}`));
window.addEventListener('unhandledrejection', (e) => say('error', `Unexpected error: ${msg(e.reason)}`));

export function progress(done, total, text) {
  ui.progress.max = total || 1;
  ui.progress.value = done;
  ui.progressText.textContent = text;
}

// ---------------------------------------------------------------------------------------------------- mode, artifact

export function mode() { return ui.mode.value; }
/** The runtime whose state the page's main fields show (LiteRT.js also in compare mode). */
export function primary() { return RT[mode()] ? mode() : RUNTIMES[0].id; }
/** compare mode with transformers.js as a third runtime (the checkbox, ?tjs=1). */
export function compareTjs() { return mode() === 'compare' && E.tjsReady && ui.compareTjs.checked; }
function listed() { return release.files[primary()] || []; }
export function selectedEntry() { return listed().find((f) => f.path === ui.artifact.value); }

/** Fill the artifact list for the runtime mode; keep `keep` (a path) when it is listed, else the default file. */
export function fillArtifacts(keep, announce = false) {
  const rt = RT[primary()];
  const files = sortFiles(listed());
  ui.artifact.replaceChildren(...files.map((f) => new Option(label(f, rt), f.path)));
  const keepable = files.find((f) => f.path === keep);
  if (keepable && (mode() !== 'compare' || partnerOf(keepable))) {
    ui.artifact.value = keep;
  } else {
    if (keep && announce) {
      say('warn', `?artifact=${keep} is not a ${rt.kind || `.${rt.formats[0]}`} file of manifest.json; using the ` +
        'default file');
    }
    const f = defaultFile(files, mode() === 'compare');
    const rec = release.recommended;
    if (f) ui.artifact.value = f.path;
    if (announce && f && rec && f.path === rec.path) {
      say('info', `Default file ${f.path}: recommended for ${rec.use} (${rec.why}).`);
    }
  }
  ui.artifact.disabled = !files.length;
  showArtifactInfo();
}

export function showArtifactInfo() {
  const f = selectedEntry();
  if (!f) {
    ui.artifactInfo.textContent = '';
    return;
  }
  const rt = RT[primary()];
  if (rt.about) {
    ui.artifactInfo.textContent = rt.about(f);
    return;
  }
  const [, , h, w] = f.input.shape;
  const other = mode() === 'compare' ? partnerOf(f) : null;
  const dtype = f.input.dtype === 'uint8' ? 'uint8 NCHW (resized RGB pixels; the graph normalises)' : 'float32 NCHW';
  ui.artifactInfo.textContent = `${f.path} — input ${f.input.name || ''} [1,3,${h},${w}] ${dtype}, ` +
    `output [1,${h},${w}]` + (f.ops ? `, ${f.ops} ops` : '') + `, sha256 ${f.sha256.slice(0, 16)}…` +
    (mode() !== 'compare' ? '' : other ? `; compared with ${other.path} (${(other.precision || '?').toUpperCase()}, ` +
      `sha256 ${other.sha256.slice(0, 16)}…)` : `; no .onnx of ${h}x${w} in manifest.json to compare with`) +
    (other && compareTjs() ? `; transformers.js runs ${tjsPartnerOf(other).path} ` +
      `(dtype ${dtypeOf(tjsPartnerOf(other).path)})` : '');
}

/** The mode the release allows: LiteRT.js needs a .tflite, ONNX Runtime Web an .onnx, compare both, transformers.js
 * a transformers.js folder (config.json, preprocessor_config.json, onnx/model*.onnx). */
export function checkMode() {
  const has = Object.fromEntries(RUNTIMES.map((rt) => [rt.id, (release.files[rt.id] || []).length > 0]));
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

/** Show what the mode needs: compare draws a second depth map (ONNX Runtime Web), with transformers.js a third, and
 * the rel-L2 rows. `current`: the loaded models (model.js). */
export function applyMode(current) {
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
  showBackends(current);
  showTjs();
}

// ---------------------------------------------------------------------------------------------------- status rows

export function showRuntime() {
  const r = E.runtime;
  const t = (n) => `wasm ${n === 1 ? '1 thread' : `${n} threads`}`;
  ui.runtime.textContent = `${RUNTIMES[0].name} ${r.litertjs}, ${t(r.threads)}` +
    RUNTIMES.slice(1).map((rt) => (r[rt.id] ? ` · ${rt.title ? rt.title(r[rt.id]) : `${rt.name} ${r[rt.id].version}`}, ` +
      t(r[rt.id].threads) : '')).join('') +
    (r.crossOriginIsolated ? '' : ' (page not cross-origin isolated: no threads)');
}

/** The backend row; `current`: the loaded models by runtime id ({backend, reason, label} each, or null). */
export function showBackends(current) {
  const one = (rt) => {
    const c = current[rt];
    if (!c) return '—';
    return c.backend === 'webgpu' ? c.label || RT[rt].webgpuLabel || 'WebGPU' :
      `wasm (CPU)${c.reason ? ` — ${c.reason}` : ''}`;
  };
  ui.backendOut.textContent = mode() === 'compare' ? `${NAMES.litert}: ${one('litert')} · ${NAMES.ort}: ${one('ort')}` +
    (compareTjs() ? ` · ${NAMES.tjs}: ${one('tjs')}` : '') : one(primary());
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
export function showTjs() {
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

/** The webcam row: frames per second actually shown (inference + drawing + waiting for a frame), the backend(s) in
 * use, whether smoothing is on. */
export function showVideo() {
  if (!E.video) return;
  E.video.backend = ui.backendOut.textContent;
  const fps = E.video.fps === null ? '— frames/s (one frame so far)' : `${E.video.fps.toFixed(1)} frames/s`;
  const sm = E.smoothing.on ? `smoothing on (new-frame weight ${E.smoothing.alpha.toFixed(2)})` : 'smoothing off';
  const ov = E.video.gpuFrames ? ' · frames on the GPU (preprocessed, run and coloured in WebGPU; only the colours ' +
    'come back)' : E.video.overlap ? ' · next frame preprocessed while the GPU runs' : '';
  ui.videoOut.textContent = `${fps} · ${E.video.frames} frames · ${E.video.backend} · ${sm}${ov}`;
}

export function setSmoothing() {
  E.smoothing = { on: ui.smooth.checked, alpha: Number(ui.smoothAlpha.value) };
  ui.smoothAlphaOut.textContent = E.smoothing.alpha.toFixed(2);
  ui.smoothAlpha.disabled = !E.smoothing.on;
  showVideo();
}

// ---------------------------------------------------------------------------------------------------- drawing

let photoAspect = null;
let shownMaps = {};           // canvas id -> the normalised map last drawn there (the EMA's state on video)

/** Forget the maps shown so far: the next map is not blended with them (a new photo, a new webcam run). */
export function resetShown() { shownMaps = {}; }

export function drawPhoto(source, w, h) {
  const s = Math.min(1, PHOTO_MAX / Math.max(w, h));
  ui.photo.width = Math.max(1, Math.round(w * s));
  ui.photo.height = Math.max(1, Math.round(h * s));
  ui.photo.getContext('2d').drawImage(source, 0, 0, ui.photo.width, ui.photo.height);
  photoAspect = `${w} / ${h}`;
}

/** Colour y into canvas. Video frames with smoothing on show the EMA of the normalised maps instead of this frame's. */
function renderDepth(canvas, y, H, W, video = false) {
  canvas.width = W;
  canvas.height = H;
  // Metric depth (metres) and Depth Anything 3's relative depth: near = small, so colour -depth to keep
  // "bright = near" (as predict does).
  const shown = E.maxDepth === null && !E.largerIsFarther ? y : y.map((v) => -v);
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
export function showResults({ out }, video = false) {
  const p = out[primary()];
  renderDepth(ui.depth, p.y, p.H, p.W, video);
  renderSecond(p.second || null, p.H, p.W);
  if (out.litert && out.ort) renderDepth(ui.depthOrt, out.ort.y, out.ort.H, out.ort.W, video);
  if (out.tjs && primary() !== 'tjs') renderDepth(ui.depthTjs, out.tjs.y, out.tjs.H, out.tjs.W, video);
  showLatency();
  showTjs();
}

const SECOND_CAPTIONS = {
  confidence: 'confidence (the model\'s second output; grey, min–max normalised, bright = more confident)',
  sky: 'sky score (the model\'s second output; grey, min–max normalised, bright = more sky; ≥ 0.3 counts as sky)',
};

/** The second output (Depth Anything 3: confidence, or the mono / metric models' sky score) in grey, min–max
 * normalised, bright = larger; hidden without one. */
function renderSecond(second, H, W) {
  ui.confFigure.hidden = !second;
  if (!second) return;
  const c = second.map;
  ui.confCaption.textContent = SECOND_CAPTIONS[second.role];
  ui.confidence.setAttribute('aria-label', `${second.role} map`);
  ui.confidence.width = W;
  ui.confidence.height = H;
  const unit = normalizeDepth(c);
  const img = new ImageData(W, H);
  for (let i = 0; i < unit.length; i++) {
    const g = Math.round(unit[i] * 255);
    img.data[i * 4] = g;
    img.data[i * 4 + 1] = g;
    img.data[i * 4 + 2] = g;
    img.data[i * 4 + 3] = 255;
  }
  ui.confidence.getContext('2d').putImageData(img, 0, 0);
}

/** The model's value under the cursor: metres for a metric release, else relative inverse depth (no unit). */
export function showDepthAt(ev) {
  if (!E.lastOutput) return;
  const [, H, W] = E.lastOutputShape;
  const r = ui.depth.getBoundingClientRect();
  const x = Math.min(W - 1, Math.max(0, Math.floor(((ev.clientX - r.left) / r.width) * W)));
  const y = Math.min(H - 1, Math.max(0, Math.floor(((ev.clientY - r.top) / r.height) * H)));
  const value = E.lastOutput[y * W + x];
  E.depthAt = { x, y, value };
  const conf = E.lastSecondOutput ? `, ${E.lastSecondRole} ${E.lastSecondOutput[y * W + x].toPrecision(4)}` : '';
  ui.depthAt.textContent = E.maxDepth !== null ? `${value.toFixed(2)} m at (${x}, ${y})${conf}`
    : `${E.largerIsFarther ? 'relative depth (larger = farther)' : 'relative inverse depth'} ${value.toPrecision(4)} at ` +
      `(${x}, ${y})${conf} — no unit`;
}
