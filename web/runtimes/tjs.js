// transformers.js for the playground: `pipeline('depth-estimation')` on the release folder, on WebGPU or wasm (the
// runtime shape of web/runtimes/: see litert.js; the default export below). It runs the manifest's "onnx" files that
// it can load as onnx/model<dtype suffix>.onnx, when the manifest also lists config.json and preprocessor_config.json.
// Its browser bundle (with the ONNX Runtime Web build it was made with, 1.31.0-dev, not the page's 1.31.1) is imported
// on first use from /vendor/ (never a CDN), its wasm from /vendor/@huggingface/transformers/ort/. The backend choice
// and fallback rules are model.js's.
//
// Every byte transformers.js runs comes from the page's verified store: the folder is exposed to it as a "local model"
// under a virtual path (LOCAL, never on the server) whose files it can only get through `env.customCache`, which answers
// with the bytes model.js downloaded, checked against manifest.json's SHA-256 and kept in Cache Storage. `env.fetch`
// (its only other way to the network) answers 404 and records the URL, and `env.allowRemoteModels` is false: a file
// that is not in manifest.json is "not found", never fetched.

import { mb, msg, Refused, verifiable } from '../files.js';

const BUNDLE = './vendor/@huggingface/transformers/dist/transformers.min.js';
const ORT_DIST = './vendor/@huggingface/transformers/ort/';
const ORT_WASM = 'ort-wasm-simd-threaded.asyncify';    // the build transformers.js itself selects (its default paths)
export const LOCAL = '/edgedepth-verified/';           // env.localModelPath: a virtual prefix, never requested
export const MODEL_ID = 'release';
// transformers.js's dtype -> file name suffix (DEFAULT_DTYPE_SUFFIX_MAPPING); files are onnx/model<suffix>.onnx
export const DTYPES = { '': 'fp32', _fp16: 'fp16', _quantized: 'q8', _int8: 'int8', _uint8: 'uint8', _q4: 'q4',
  _q4f16: 'q4f16', _bnb4: 'bnb4' };

let tjsPromise = null;
let T = null;
let threadCount = 1;
let generation = 0;         // a fresh module instance after a failed session creation (see createPipeline)
let poisoned = false;
let source = null;          // path -> Promise<Uint8Array | null>: the verified bytes of a manifest file (model.js)
const asked = new Map();    // path -> the promise given for it during the current load (one verification per file)
export const served = [];   // manifest paths transformers.js got through the verified cache
export const unverified = [];   // URLs transformers.js tried to fetch itself (answered 404)
let refusal = null;         // the first error while answering transformers.js (it swallows cache errors)

/** The transformers.js dtype of a manifest .onnx path (onnx/model<suffix>.onnx), or null. */
export function dtypeOf(path) {
  const m = /^onnx\/model(_[a-z0-9]+)?\.onnx$/.exec(path || '');
  return m ? (DTYPES[m[1] || ''] || null) : null;
}

function pathOf(key) {
  const url = typeof key === 'string' ? key : key && key.url;
  if (typeof url !== 'string') return null;
  const prefix = `${LOCAL}${MODEL_ID}/`;
  let p = url;
  if (!p.startsWith(prefix)) {
    try { p = new URL(url).pathname; } catch { return null; }    // an absolute URL: its path
    if (!p.startsWith(prefix)) return null;
  }
  return decodeURIComponent(p.slice(prefix.length));
}

// The Web Cache API subset transformers.js calls (match, put): every hit is a verified manifest file.
const verifiedCache = {
  async match(key) {
    const path = pathOf(key);
    if (path === null || !source) return undefined;
    if (!asked.has(path)) asked.set(path, source(path));
    let bytes;
    try {
      bytes = await asked.get(path);
    } catch (e) {
      refusal = refusal || e;
      throw e;
    }
    if (!bytes) return undefined;
    if (!served.includes(path)) served.push(path);
    return new Response(bytes, { headers: { 'content-length': String(bytes.byteLength),
      'content-type': path.endsWith('.json') ? 'application/json' : 'application/octet-stream' } });
  },
  async put() { /* the page keeps its own verified copies (Cache Storage, edgedepth-models-v1) */ },
};

/** Load transformers.js once and point it at the verified store and the local ORT wasm. `threads` = the page's
 * wasm threads. Returns {version, ort, threads}. */
export async function loadTjs(threads) {
  threadCount = threads;
  if (!tjsPromise) {
    // ?instance=N: a second, independent copy of the module (the server ignores the query)
    const url = new URL(BUNDLE, location.href).href;   // the page's vendor/, not runtimes/vendor/
    tjsPromise = import(generation ? `${url}?instance=${generation}` : url).then((m) => {
      const { env } = m;
      Object.assign(env, {
        allowRemoteModels: false, allowLocalModels: true, localModelPath: LOCAL, useFS: false, useBrowserCache: false,
        useFSCache: false, useWasmCache: false, useCustomCache: true, customCache: verifiedCache,
        experimental_useCrossOriginStorage: false,
      });
      env.fetch = async (url) => {
        unverified.push(String(url && url.url ? url.url : url));
        return new Response('not in manifest.json: the playground gives transformers.js verified files only',
          { status: 404, statusText: 'Not Found' });
      };
      const onnx = env.backends.onnx;
      onnx.wasm.wasmPaths = { mjs: new URL(`${ORT_DIST}${ORT_WASM}.mjs`, location.href).href,
        wasm: new URL(`${ORT_DIST}${ORT_WASM}.wasm`, location.href).href };
      onnx.wasm.numThreads = threads;
      onnx.wasm.proxy = false;
      T = m;
      return m;
    });
    tjsPromise.catch(() => { tjsPromise = null; });
  }
  await tjsPromise;
  return tjsInfo();
}

/** {version, ort, threads}: transformers.js's version, its ORT-web's version and wasm threads. */
export function tjsInfo() {
  const onnx = T.env.backends.onnx;
  return { version: T.env.version, ort: onnx.versions?.web || onnx.versions?.common || '?',
    threads: onnx.wasm.numThreads };
}

/**
 * pipeline('depth-estimation') on the release folder: `dtype` (fp32 | fp16 | q8 ...), `device` ('webgpu' | 'wasm').
 * `files(path)` resolves a manifest path to its verified bytes (null: not listed). WebGPU runs as transformers.js
 * runs it, not strict like ort.js: ORT-web keeps the shape computations of the dynamic-size graph (Shape, Gather,
 * Concat on int64) on the CPU, which session.disable_cpu_ep_fallback would refuse.
 */
export async function createPipeline(dtype, device, files) {
  source = files;
  asked.clear();
  served.length = 0;
  unverified.length = 0;
  refusal = null;
  if (poisoned) {
    // transformers.js creates every ORT session on one promise chain (webInitChain): after one creation failed, all
    // later ones fail with the same error. A fresh copy of the module (and of its ORT-web) starts a new chain.
    poisoned = false;
    generation += 1;
    tjsPromise = null;
    await loadTjs(threadCount);
  }
  try {
    const pipe = await T.pipeline('depth-estimation', MODEL_ID, { dtype, device });
    if (refusal) {
      // a refused file is one transformers.js treated as missing (it swallows cache errors) and may have done
      // without (preprocessor_config.json is optional to it): never run such a pipeline
      await Promise.resolve(pipe.dispose()).catch(() => {});
      throw refusal;
    }
    return pipe;
  } catch (e) {
    poisoned = true;
    if (refusal) throw refusal;
    const text = e instanceof Error ? e.message : String(e);
    throw new Error(text.replace(/^Can't create a session\. ERROR_CODE: \d+, ERROR_MESSAGE: /, '').trim());
  } finally {
    source = null;    // nothing is fetched after the pipeline is built: a later lookup would be a bug, not a load
  }
}

function rawImage(rgba, width, height) {
  const rgb = new Uint8ClampedArray(width * height * 3);
  for (let i = 0, j = 0; i < rgb.length; i += 3, j += 4) {
    rgb[i] = rgba[j];
    rgb[i + 1] = rgba[j + 1];
    rgb[i + 2] = rgba[j + 2];
  }
  return new T.RawImage(rgb, width, height, 3);
}

/** Mark the module instance unusable after a failed run (its inference chain stays rejected: see createPipeline). */
async function guarded(promise) {
  try {
    return await promise;
  } catch (e) {
    poisoned = true;
    throw e;
  }
}

/** The pipeline on RGBA pixels: its own preprocessing (preprocessor_config.json), inference and bilinear resize of
 * predicted_depth to the photo's size. Returns {y: Float32Array [height*width], dims: [height, width]}. */
export async function runPipeline(pipe, rgba, width, height) {
  const out = await guarded(pipe(rawImage(rgba, width, height)));
  const d = out.predicted_depth;
  const y = Float32Array.from(d.data);
  d.dispose?.();
  return { y, dims: d.dims.slice(-2) };
}

/** transformers.js's preprocessing alone (the pipeline's processor): {data: Float32Array, dims: [1, 3, h, w]}. */
export async function pixelValues(pipe, rgba, width, height) {
  const { pixel_values: pv } = await guarded(pipe.processor(rawImage(rgba, width, height)));
  return { data: Float32Array.from(pv.data), dims: pv.dims.slice() };
}

/** The pipeline's model alone on a [1, 3, H, W] float32 tensor: predicted_depth as a Float32Array [H*W]. */
export async function runModel(pipe, tensor, H, W) {
  const { predicted_depth: d } = await guarded(pipe.model({ pixel_values: new T.Tensor('float32', tensor, [1, 3, H, W]) }));
  const y = Float32Array.from(d.data);
  d.dispose?.();
  return y;
}

export async function disposePipeline(pipe) {
  await pipe.dispose();
}

// ---------------------------------------------------------------------------------------------------- the runtime

const CONFIGS = ['config.json', 'preprocessor_config.json'];    // what its pipeline reads beside the model

/** The pipeline as the page's model shape: run = its model alone on a tensor; pipeline / pixelValues for the page's
 * transformers.js comparisons (model.js inferTjs). */
function wrap(pipe) {
  return { pipe, run: (tensor, H, W) => runModel(pipe, tensor, H, W), dispose: () => disposePipeline(pipe),
    pipeline: (rgba, width, height) => runPipeline(pipe, rgba, width, height),
    pixelValues: (rgba, width, height) => pixelValues(pipe, rgba, width, height) };
}

export default {
  id: 'tjs',
  name: 'transformers.js',
  formats: ['onnx'],
  /** An .onnx at the path transformers.js loads for a dtype, in a folder whose manifest lists (verifiably) the two
   * configs its pipeline needs. */
  accepts: (f, manifest) => !!dtypeOf(f.path) &&
    CONFIGS.every((p) => verifiable(manifest.files.find((x) => x.path === p))),
  kind: 'transformers.js .onnx (onnx/model*.onnx)',   // what ?artifact= must name
  folder: true,    // webgpu/wasm get a source (manifest path -> verified bytes), not one file's bytes
  label: (f) => [`dtype ${dtypeOf(f.path)}`, f.path, `${mb(f.bytes)} MB`, f.dynamic_size ? 'dynamic size' : '']
    .filter(Boolean).join(' · '),
  about(f) {
    const [, , h, w] = f.input.shape;
    return `${f.path} — transformers.js pipeline('depth-estimation'), dtype ${dtypeOf(f.path)}, ` +
      'with this folder\'s config.json and preprocessor_config.json (its own preprocessing and input size; ' +
      `manifest.json verified the file at ${h}x${w}` + (f.dynamic_size ? ', dynamic height and width' : '') +
      `), sha256 ${f.sha256.slice(0, 16)}…`;
  },
  title: (info) => `transformers.js ${info.version} (its ONNX Runtime Web ${info.ort})`,
  webgpuLabel: 'WebGPU (as transformers.js runs it: ORT-web may keep shape computations on the CPU)',
  /** Load it with the page's wasm thread count (its own ORT-web build): {version, ort, threads}. */
  async start(threads) {
    try {
      return await loadTjs(threads);
    } catch (e) {
      throw new Error(`transformers.js could not start (${msg(e)}). Is \`make setup\` (or \`npm ci --prefix web\`) ` +
        'done? Run it and restart `edgedepth serve`');
    }
  },
  info: tjsInfo,
  /** On WebGPU (device 'webgpu': ORT-web's WebGPU execution provider, as transformers.js sets it up): {model} or
   * {reason}. A refused file is an error, not a reason to try wasm. */
  async webgpu(files, entry) {
    try {
      return { model: wrap(await createPipeline(dtypeOf(entry.path), 'webgpu', files)) };
    } catch (e) {
      if (e instanceof Refused) throw e;
      return { reason: `transformers.js could not build its pipeline on WebGPU: ${e.message}` };
    }
  },
  wasm: async (files, entry) => wrap(await createPipeline(dtypeOf(entry.path), 'wasm', files)),
};
