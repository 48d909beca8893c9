// edgedepth playground: manifest.json -> verified download (Cache Storage) -> LiteRT.js, ONNX Runtime Web and/or
// transformers.js (WebGPU or wasm) -> depth map(s). Plain ES modules, no framework, no bundler; this one reads the URL
// parameters, wires the controls, runs photos and the webcam. The rest (web/README.md, "Module layout"): manifest.js,
// files.js, model.js, view.js, runtimes/. Test hooks live on window.edgedepth (view.js E; see web/README.md).

import { colorizeDepth, colorizeUnit } from './colormap.js';
import { msg } from './files.js';
import { load, release, withSlash } from './manifest.js';
import { adoptGpuFrame, anyModel, benchmark, canOverlap, current, detectWebGPU, dropGpuFrames, ensureModels, exclusive,
  gpuFramesBlocker, gpuFramesFor, infer, isBusy, prepare, prepKey, runPrepared, startBase,
  warmRuntimes } from './model.js';
import { decodeImage, preprocessRGBA } from './preprocess.js';
import { RUNTIMES } from './runtimes/index.js';
import { applyMode, checkMode, drawPhoto, E, fillArtifacts, primary, resetShown, say, setSmoothing, setState,
  showArtifactInfo, showDepthAt, showResults, showVideo, ui } from './view.js';
import { emaStep, FpsMeter } from './video.js';

const params = new URLSearchParams(location.search);
const MODES = [...RUNTIMES.map((rt) => rt.id), 'compare'];
let pending = null;           // latest image waiting while an inference runs

/** Run on one photo (File/Blob). Later calls while busy replace the pending photo. */
async function runPhoto(blob) {
  if (isBusy()) {
    pending = blob;
    return;
  }
  try {
    await exclusive(async () => {
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
      resetShown();   // a photo is never blended with video frames
      showResults(await infer(img.data, img.width, img.height));
      setState('ready');
    });
  } catch (e) {
    setState(current[primary()] ? 'ready' : 'error');
    say('error', `Inference failed: ${msg(e)}`);
  } finally {
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
  E.video = { fps: null, frames: 0, backend: null, prevShown: null, frameTimes: [], preprocessMs: [], gpuFrames: false,
    gpuReason: null, lastFrame: null };
  resetShown();
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
  // Two grab canvases: with the GPU computing frame N, frame N+1 is grabbed and preprocessed into the other one
  // (canOverlap: every model on WebGPU); the photo drawn beside a map is always the frame that map was computed from.
  const grabs = [0, 1].map(() => document.createElement('canvas'));
  let ahead = null;            // {canvas, prep} of the next frame, prepared while the previous one ran
  let slot = 0;
  let overlapped = false;
  const grabFrame = (w, h) => {
    const canvas = grabs[slot];
    slot ^= 1;
    if (canvas.width !== w || canvas.height !== h) {
      canvas.width = w;
      canvas.height = h;
    }
    const ctx = canvas.getContext('2d', { willReadFrequently: true });
    ctx.drawImage(ui.video, 0, 0, w, h);
    return { canvas, prep: prepare(ctx.getImageData(0, 0, w, h).data, w, h) };
  };
  const gpu = new GpuWebcam(meter);
  while (stream) {
    const w = ui.video.videoWidth;
    const h = ui.video.videoHeight;
    if (w && h && !isBusy()) {
      try {
        await ensureModels();   // the user may switch runtime, artifact or backend while the camera runs
      } catch {
        stopWebcam();
        break;
      }
      E.video.gpuReason = gpuFramesBlocker();
      if (!E.video.gpuReason) {
        await gpu.step(w, h);   // frames stay on the GPU; its completion paces the loop
        continue;
      }
      await gpu.leave();
      E.video.gpuFrames = false;
      try {
        await exclusive(async () => {
          const overlap = canOverlap();
          overlapped = overlap;
          // a frame prepared for other models or another size (the user switched) is dropped
          const cur = ahead && overlap && ahead.prep.key === prepKey() ? ahead : grabFrame(w, h);
          ahead = null;
          setState('running');
          const running = runPrepared(cur.prep);
          if (overlap) {
            await yieldToRuntime();          // let the runtime submit its GPU work before this thread gets busy
            ahead = grabFrame(w, h);
          }
          const result = await running;
          drawPhoto(cur.canvas, w, h);
          showResults(result, true);
          const t = performance.now();
          E.video.fps = meter.tick(t);
          E.video.frames = meter.frames;
          E.video.overlap = overlap;
          if (E.video.frameTimes.length < 100000) {
            E.video.frameTimes.push(t);
            E.video.preprocessMs.push(E.lastPreprocessMs);
          }
          showVideo();
          setState('ready');
        });
      } catch (e) {
        say('error', `Inference failed: ${msg(e)}`);
        stopWebcam();
      }
    }
    // overlapped: the page painted while this thread waited for the GPU, and the next frame is ready, so go on at once
    if (overlapped && ahead) await yieldToRuntime();
    else await new Promise((r) => requestAnimationFrame(r));
    overlapped = false;
  }
  await gpu.leave();
}

/** The webcam loop's GPU path (gpuframes.js): each step grabs the current video frame into a canvas (GPU-backed: no
 * willReadFrequently), queues it, and waits for the frame before it (at most two in flight), whose colours it then
 * draws; a frame counts when its colours are drawn. leave() waits for the rest and reads the last frame back once:
 * the page then holds that frame's input, output and map, as after a photo. A failure is said once and the loop
 * reads frames back from then on. */
class GpuWebcam {
  constructor(meter) {
    this.meter = meter;
    this.grabs = [0, 1].map(() => document.createElement('canvas'));
    this.slot = 0;
    this.inflight = [];     // promises of {t, t0, queueMs, canvas, w, h, rgba, H, W} (or null), oldest first
    this.g = null;
  }

  async step(w, h) {
    try {
      await exclusive(async () => {
        const g = gpuFramesFor();
        if (g !== this.g) await this.drain();     // another model: the old one's frames first
        if (!this.g) setState('running');         // 'ready' again once leave() has read the last frame back
        this.g = g;
        E.video.gpuFrames = true;
        const canvas = this.grabs[this.slot];
        this.slot ^= 1;
        if (canvas.width !== w || canvas.height !== h) Object.assign(canvas, { width: w, height: h });
        canvas.getContext('2d').drawImage(ui.video, 0, 0, w, h);
        const t0 = performance.now();
        const { done } = await g.frame(canvas, w, h);
        const queueMs = performance.now() - t0;
        // a frame whose GpuFrames was dropped meanwhile (another model) never comes back: null, skipped
        const { H, W } = g;
        this.inflight.push(done.then((rgba) => ({ t: performance.now(), t0, queueMs, canvas, w, h, rgba, H, W }),
          () => null));
        if (this.inflight.length >= 2) this.finish(await this.inflight.shift());
      });
    } catch (e) {
      E.gpuFramesError = msg(e);
      say('warn', `Webcam frames on the GPU failed (${E.gpuFramesError}); reading every frame back instead.`);
      this.inflight = [];
      this.g = null;
      dropGpuFrames();
    }
  }

  finish(f) {
    if (!f) return;
    drawPhoto(f.canvas, f.w, f.h);
    Object.assign(ui.depth, { width: f.W, height: f.H });
    ui.depth.style.aspectRatio = `${f.w} / ${f.h}`;
    ui.depth.getContext('2d').putImageData(new ImageData(f.rgba, f.W, f.H), 0, 0);
    E.video.fps = this.meter.tick(f.t);
    E.video.frames = this.meter.frames;
    E.video.overlap = false;
    if (E.video.frameTimes.length < 100000) {
      E.video.frameTimes.push(f.t);
      E.video.preprocessMs.push(f.queueMs);     // this thread's time to queue the frame (the GPU does the rest)
    }
    const m = current.litert;
    if (m) m.latencies.push(f.t - f.t0);        // queued -> done on the GPU: preprocessing + model + colouring
    this.last = f;
    showVideo();
  }

  async drain() {
    while (this.inflight.length) this.finish(await this.inflight.shift());
  }

  async leave() {
    if (!this.g) return;
    try {
      await this.drain();
      const rb = await this.g.readBack();
      if (rb && this.last) {
        const c = this.last.canvas;
        E.video.lastFrame = { rgba: c.getContext('2d').getImageData(0, 0, c.width, c.height).data, width: c.width,
          height: c.height, colours: this.last.rgba };
        showResults(adoptGpuFrame(rb, this.last.t - this.last.t0), true);
      }
    } catch (e) {
      say('warn', `Reading the last webcam frame back from the GPU failed: ${msg(e)}`);
    } finally {
      this.g = null;
      dropGpuFrames();
      setState('ready');
    }
  }
}

/** One trip through the event loop without setTimeout's clamp: the runtime's pending continuations (its GPU
 * submission) run before the caller goes on. */
function yieldToRuntime() {
  return new Promise((r) => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => r();
    ch.port2.postMessage(null);
  });
}

function stopWebcam() {
  if (stream) for (const t of stream.getTracks()) t.stop();
  stream = null;
  ui.video.srcObject = null;
  if (E.webcam === 'running') E.webcam = 'stopped';
  ui.webcam.textContent = 'Start webcam';
}

// ---------------------------------------------------------------------------------------------------- wiring

ui.load.addEventListener('click', () => { ensureModels().catch(() => {}); });
ui.mode.addEventListener('change', () => {
  fillArtifacts(ui.artifact.value);
  applyMode(current);
  warmRuntimes();
  if (anyModel()) ensureModels().catch(() => {});
});
ui.compareTjs.addEventListener('change', () => {
  applyMode(current);
  showArtifactInfo();
  warmRuntimes();
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

Object.assign(E, { load: () => ensureModels(), benchmark, runPhoto, preprocessRGBA, decodeImage, colorizeDepth,
  colorizeUnit, emaStep });

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
  const ov = params.get('overlap');  // ?overlap=0: webcam frames one after another, never prepared ahead (benchmarks)
  if (ov !== null) E.overlapAllowed = ov !== '0';
  // Webcam frames computed on the GPU (gpuframes.js): by default on a hardware adapter (3.2x the read-back path's
  // frames/s at 518x686 on an H100), not on a software fallback, where its passes run on the CPU and it gave half the
  // read-back path's frames/s (web/README.md). ?gpuframes=1 forces them there too, ?gpuframes=0 turns them off.
  const gf = params.get('gpuframes');
  E.gpuFramesAllowed = gf === null ? null : gf === '1';
  const r = params.get('runtime');
  if (MODES.includes(r)) ui.mode.value = r;
  else if (r) say('warn', `?runtime=${r}: expected ${MODES.slice(0, -1).join(', ')} or compare; using LiteRT.js.`);
  ui.compareTjs.checked = params.get('tjs') === '1';
  const tjs = params.get('tjs');
  if (tjs && !['0', '1'].includes(tjs)) say('warn', `?tjs=${tjs}: expected 1 or 0.`);
  if (!window.isSecureContext) {
    say('warn', 'Not a secure context: WebGPU, SHA-256 verification (crypto.subtle) and Cache Storage are ' +
      'unavailable here. Open the page via http://127.0.0.1:PORT/ (what `edgedepth serve` prints).');
  }
  const runtimeReady = startBase();
  runtimeReady.catch((e) => {
    setState('error');
    say('error', `LiteRT.js could not start: ${msg(e)}. Is \`npm ci --prefix web\` done?`);
  });
  try {
    const { manifest, files } = await load(withSlash(params.get('release') || './release/'), RUNTIMES);
    E.manifest = manifest;
    E.tjsReady = files.tjs.length > 0;
    const model = manifest.model || {};
    if (model.kind === 'metric') E.maxDepth = model.max_depth_m;
    E.largerIsFarther = model.larger_is_farther === true;   // Depth Anything 3: colour -depth, bright = near
    const gpu = ui.backend.value === 'wasm' ? {} : await detectWebGPU();
    const use = gpu.adapter && (!gpu.fallback || ui.backend.value === 'webgpu') ? 'webgpu' : 'wasm';
    const rec = (manifest.recommended || {})[use];
    release.recommended = rec ? { ...rec, use } : null;
    checkMode();
    if (ui.compareTjs.checked && !E.tjsReady) {
      say('warn', '?tjs=1: manifest.json lists no transformers.js folder (config.json, preprocessor_config.json and ' +
        'onnx/model*.onnx); compare runs without transformers.js.');
    }
    fillArtifacts(params.get('artifact'), true);
    applyMode(current);
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
