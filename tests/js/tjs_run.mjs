#!/usr/bin/env node
// transformers.js / @huggingface/tasks helper for the Python tests (see tests/js/README.md).
//
// Package resolution: the packages live in web/node_modules (installed by `make web/node_modules/.package-lock.json`
// from web/package-lock.json). ESM `import 'x'` only looks in node_modules folders above *this file* and ignores
// NODE_PATH, so instead this script uses `createRequire(<web>/package.json)`: Node's own resolver, anchored at web/,
// independent of the current directory. That loads the packages' CommonJS builds (`require` export condition:
// transformers.node.cjs, @huggingface/tasks dist/commonjs), which load onnxruntime-node and sharp from their own
// location. <web> = $EDGEDEPTH_WEB_DIR if set, else ../../web relative to this file.
//
// Usage (one JSON object on stdout; errors: one line on stderr, exit 1; DEBUG=1: the stack and the libraries' logs):
//   node tests/js/tjs_run.mjs raw      FOLDER DTYPE PIXELS.npy OUT.npy   AutoModel on a float32 [1,3,H,W] .npy
//        (more PIXELS.npy OUT.npy pairs: one model load, sizes may differ; stdout then a list, one object per pair)
//   node tests/js/tjs_run.mjs pipeline FOLDER DTYPE IMAGE OUT.npy [PIXELS_OUT.npy]
//        pipeline('depth-estimation') on an image (PIXELS_OUT.npy: also the processor's pixel_values)
//   node tests/js/tjs_run.mjs pixels   FOLDER IMAGE OUT.npy              the folder's processor: pixel_values
//   node tests/js/tjs_run.mjs tasks                                      @huggingface/tasks pipeline types + libraries
//   node tests/js/tjs_run.mjs versions                                   node, the packages and libvips versions
// FOLDER is a local model folder (config.json, preprocessor_config.json, onnx/model{,_fp16,_quantized}.onnx); it is
// loaded offline (env.allowRemoteModels = false, env.localModelPath = its parent, model id = its name).
// DTYPE: fp32 | fp16 | q8 (→ onnx/model.onnx, onnx/model_fp16.onnx, onnx/model_quantized.onnx).
// EDGEDEPTH_TJS_THREADS=N: onnxruntime-node's intra-op thread count (session_options.intraOpNumThreads; default: ORT's).

import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import util from 'node:util';

// The libraries' own console output (transformers.js logs the whole input tensors when a run fails) never goes to
// stdout (the JSON) and is kept until the end: shown on stderr after a success, dropped after a failure (DEBUG: shown).
const logged = [];
for (const k of ['log', 'info', 'debug', 'warn', 'error']) {
  console[k] = (...a) => logged.push(a.map((x) => (typeof x === 'string' ? x : util.inspect(x))).join(' '));
}
const flushLogged = () => logged.length && process.stderr.write(logged.join('\n') + '\n');

const HERE = path.dirname(fileURLToPath(import.meta.url));
const WEB_DIR = path.resolve(process.env.EDGEDEPTH_WEB_DIR || path.join(HERE, '..', '..', 'web'));
const requireWeb = createRequire(path.join(WEB_DIR, 'package.json'));

function load(name) {
  try {
    return requireWeb(name);
  } catch (e) {
    if (e && e.code === 'MODULE_NOT_FOUND' && String(e.message).includes(name)) {
      throw new Error(`${name} not found under ${WEB_DIR}/node_modules: run \`make setup\` ` +
                      '(or `make web/node_modules/.package-lock.json`)');
    }
    throw e;
  }
}

// ---- .npy (float32 little-endian, C order; format 1.0/2.0/3.0) ----

function readNpy(file) {
  const buf = fs.readFileSync(file);
  if (buf.length < 10 || buf.readUInt8(0) !== 0x93 || buf.toString('latin1', 1, 6) !== 'NUMPY') {
    throw new Error(`${file}: not a .npy file`);
  }
  const major = buf.readUInt8(6);
  const headerLen = major === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + headerLen;
  const header = buf.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']*)'/.exec(header)?.[1];
  const fortran = /'fortran_order':\s*(True|False)/.exec(header)?.[1];
  const shapeStr = /'shape':\s*\(([^)]*)\)/.exec(header)?.[1];
  if (descr !== '<f4') throw new Error(`${file}: dtype ${descr}, expected float32 little-endian ('<f4')`);
  if (fortran !== 'False') throw new Error(`${file}: Fortran order not supported (write a C-contiguous array)`);
  if (shapeStr === undefined) throw new Error(`${file}: no shape in header`);
  const dims = shapeStr.split(',').map((s) => s.trim()).filter((s) => s.length).map(Number);
  const n = dims.reduce((a, b) => a * b, 1);
  if (buf.length - start !== 4 * n) throw new Error(`${file}: ${buf.length - start} data bytes for shape [${dims}]`);
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = buf.readFloatLE(start + 4 * i);
  return { data, dims };
}

function writeNpy(file, data, dims) {
  let f32 = data;
  if (!(data instanceof Float32Array)) f32 = Float32Array.from(data, Number);
  const shape = dims.length === 1 ? `(${dims[0]},)` : `(${dims.join(', ')})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  const total = 10 + header.length + 1;
  header += ' '.repeat((64 - (total % 64)) % 64) + '\n';
  const pre = Buffer.alloc(10);
  pre.writeUInt8(0x93, 0);
  pre.write('NUMPY', 1, 'latin1');
  pre.writeUInt8(1, 6);
  pre.writeUInt8(0, 7);
  pre.writeUInt16LE(header.length, 8);
  const body = Buffer.alloc(4 * f32.length);
  for (let i = 0; i < f32.length; i++) body.writeFloatLE(f32[i], 4 * i);
  fs.writeFileSync(file, Buffer.concat([pre, Buffer.from(header, 'latin1'), body]));
}

// ---- transformers.js ----

const DTYPES = new Set(['fp32', 'fp16', 'q8']);

function setupLocal(folder) {
  const tjs = load('@huggingface/transformers');
  const abs = path.resolve(folder);
  if (!fs.existsSync(path.join(abs, 'config.json'))) throw new Error(`${abs}: no config.json`);
  tjs.env.allowRemoteModels = false;
  tjs.env.allowLocalModels = true;
  tjs.env.localModelPath = path.dirname(abs) + path.sep;
  return { tjs, name: path.basename(abs) };
}

function checkDtype(dtype) {
  if (!DTYPES.has(dtype)) throw new Error(`dtype ${JSON.stringify(dtype)}: expected one of ${[...DTYPES].join(', ')}`);
}

function tensorOut(t, out) {
  writeNpy(out, t.data, t.dims);
  return { dims: t.dims, dtype: t.type };
}

function sessionOptions() {
  const t = process.env.EDGEDEPTH_TJS_THREADS;
  if (t === undefined || t === '') return {};
  if (!/^[1-9][0-9]*$/.test(t)) throw new Error(`EDGEDEPTH_TJS_THREADS=${JSON.stringify(t)}: expected a whole number >= 1`);
  return { intraOpNumThreads: Number(t) };
}

async function loadModel(tjs, name, dtype) {
  const opts = { dtype, device: 'cpu', local_files_only: true, session_options: sessionOptions() };
  try {
    return await tjs.AutoModelForDepthEstimation.from_pretrained(name, opts);
  } catch (e) {
    // model_type without a depth-estimation mapping: the base model still returns predicted_depth for our graphs
    if (!/Unsupported model type|not supported/i.test(String(e?.message))) throw e;
    return await tjs.AutoModel.from_pretrained(name, opts);
  }
}

async function cmdRaw([folder, dtype, ...pairs]) {
  if (pairs.length < 2 || pairs.length % 2) throw new Error('usage: raw FOLDER DTYPE PIXELS.npy OUT.npy [PIXELS.npy OUT.npy ...]');
  checkDtype(dtype);
  const { tjs, name } = setupLocal(folder);
  const inputs = [];
  for (let i = 0; i < pairs.length; i += 2) {
    const { data, dims } = readNpy(pairs[i]);
    if (dims.length !== 4 || dims[1] !== 3) throw new Error(`${pairs[i]}: shape [${dims}], expected [1,3,H,W]`);
    inputs.push({ data, dims, out: pairs[i + 1] });
  }
  const model = await loadModel(tjs, name, dtype);
  try {
    const results = [];
    for (const { data, dims, out } of inputs) {
      const res = await model({ pixel_values: new tjs.Tensor('float32', data, dims) });
      if (!res.predicted_depth) throw new Error(`model outputs ${Object.keys(res)}: no predicted_depth`);
      results.push(tensorOut(res.predicted_depth, out));
    }
    return results.length === 1 ? results[0] : results;
  } finally {
    await model.dispose?.();
  }
}

async function processorPixels(tjs, name, image) {
  const processor = await tjs.AutoProcessor.from_pretrained(name, { local_files_only: true });
  const img = await tjs.RawImage.read(path.resolve(image));
  const { pixel_values } = await processor(img);
  return pixel_values;
}

async function cmdPixels([folder, image, out]) {
  if (!out) throw new Error('usage: pixels FOLDER IMAGE OUT.npy');
  if (!fs.existsSync(image)) throw new Error(`${image}: no such file`);
  const { tjs, name } = setupLocal(folder);
  return tensorOut(await processorPixels(tjs, name, image), out);
}

async function cmdPipeline([folder, dtype, image, out, pixelsOut]) {
  if (!out) throw new Error('usage: pipeline FOLDER DTYPE IMAGE OUT.npy [PIXELS_OUT.npy]');
  checkDtype(dtype);
  if (!fs.existsSync(image)) throw new Error(`${image}: no such file`);
  const { tjs, name } = setupLocal(folder);
  const pipe = await tjs.pipeline('depth-estimation', name,
    { dtype, device: 'cpu', local_files_only: true, session_options: sessionOptions() });
  try {
    const res = await pipe(path.resolve(image));
    const pd = res.predicted_depth;
    writeNpy(out, pd.data, pd.dims);
    const pv = await processorPixels(tjs, name, image);
    if (pixelsOut) writeNpy(pixelsOut, pv.data, pv.dims);
    return {
      depth_size: [res.depth.width, res.depth.height],
      predicted_depth_dims: pd.dims,
      pixel_values_dims: pv.dims,
    };
  } finally {
    await pipe.dispose?.();
  }
}

async function cmdTasks() {
  const tasks = load('@huggingface/tasks');
  return {
    pipeline_types: Object.keys(tasks.PIPELINE_DATA),
    libraries: Object.keys(tasks.MODEL_LIBRARIES_UI_ELEMENTS),
  };
}

// The installed version of package `name` as the packages themselves resolve it: the package.json above its entry point
// (package.json subpaths are not always exported). `req`: the require to resolve with.
function packageVersion(req, name) {
  let dir = path.dirname(req.resolve(name));
  for (;;) {
    const pj = path.join(dir, 'package.json');
    if (fs.existsSync(pj)) {
      const j = JSON.parse(fs.readFileSync(pj, 'utf8'));
      if (j.name === name) return j.version;
    }
    const up = path.dirname(dir);
    if (up === dir) throw new Error(`${name}: no package.json above ${req.resolve(name)}`);
    dir = up;
  }
}

async function cmdVersions() {
  load('@huggingface/transformers');               // the one-line "run make setup" error when it is missing
  const tjsRequire = createRequire(requireWeb.resolve('@huggingface/transformers'));
  return {
    node: process.versions.node,
    '@huggingface/transformers': packageVersion(requireWeb, '@huggingface/transformers'),
    '@huggingface/tasks': packageVersion(requireWeb, '@huggingface/tasks'),
    'onnxruntime-node': packageVersion(tjsRequire, 'onnxruntime-node'),     // the copy transformers.js loads
    sharp: packageVersion(tjsRequire, 'sharp'),
    libvips: tjsRequire('sharp').versions.vips,
  };
}

const COMMANDS = { raw: cmdRaw, pipeline: cmdPipeline, pixels: cmdPixels, tasks: cmdTasks, versions: cmdVersions };

async function main() {
  const [cmd, ...args] = process.argv.slice(2);
  const fn = COMMANDS[cmd];
  if (!fn) throw new Error(`usage: tjs_run.mjs {${Object.keys(COMMANDS).join('|')}} ARGS... (got ${cmd ?? 'nothing'})`);
  const result = await fn(args);
  flushLogged();
  process.stdout.write(JSON.stringify(result) + '\n');
}

main().catch((e) => {
  if (process.env.DEBUG) {
    flushLogged();
    process.stderr.write(`${e?.stack ?? e}\n`);
  } else {
    const msg = String(e?.message ?? e).split('\n').map((l) => l.trim()).filter(Boolean).join(' ');
    process.stderr.write(`tjs_run: ${msg}\n`);
  }
  process.exitCode = 1;
});
