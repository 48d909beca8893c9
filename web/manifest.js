// manifest.json: read and check it, and sort its files by the runtime that runs them. Which runtime runs a file is
// what the manifest states — the entry's `format` field ("tflite", "onnx": each runtime's `formats`, web/runtimes/),
// narrowed by the runtime's own `accepts(entry, manifest)` — never a guess from the file name.

import { mb, msg } from './files.js';

/** The release folder the page runs: `url` (ends with /), `manifest` (manifest.json), `files` ({runtime id: [entry]},
 * the runnable files by runtime), `recommended` (manifest.json's recommendation for the backend that will run:
 * {path, why, use}). load() fills it; nothing else writes it. */
export const release = { url: './release/', manifest: null, files: {}, recommended: null };

export function withSlash(s) { return s.endsWith('/') ? s : `${s}/`; }

/** The URL of a manifest entry (relative to the page): each path component percent-encoded. */
export function fileUrl(entry, base = release.url) {
  return base + entry.path.split('/').map(encodeURIComponent).join('/');
}

/** Whether `rt` (a runtime of web/runtimes/) runs `entry` of manifest `m`. */
export const runs = (rt, entry, m) => rt.formats.includes(entry.format) && (!rt.accepts || rt.accepts(entry, m));

/** Check a parsed manifest.json and sort its files: {manifest, files: {id: [entry]}}. Throws one-line errors. */
export function parseManifest(m, runtimes) {
  if (!m || m.schema_version !== 1 || !Array.isArray(m.files)) {
    throw new Error('manifest.json is not an edgedepth manifest (schema_version 1 with files)');
  }
  const formats = [...new Set(runtimes.flatMap((rt) => rt.formats))];
  const models = m.files.filter((f) => f && formats.includes(f.format));
  const bad = models.filter((f) => !f.sha256 || !Number.isFinite(f.bytes) || !Array.isArray(f.input?.shape) ||
    f.input.shape.length !== 4);
  if (bad.length) throw new Error(`manifest.json: ${bad[0].path} lacks sha256, bytes or a [1,3,H,W] input shape`);
  if (!models.length) {
    throw new Error(`manifest.json lists no ${formats.map((f) => `.${f}`).join(' or ')} file: nothing to run`);
  }
  const files = Object.fromEntries(runtimes.map((rt) => [rt.id, models.filter((f) => runs(rt, f, m))]));
  return { manifest: m, files };
}

/** Fetch `url`manifest.json and parse it (parseManifest); fills `release` (not its recommendation). */
export async function load(url, runtimes) {
  let res;
  try {
    res = await fetch(`${url}manifest.json`, { cache: 'no-store' });
  } catch (e) {
    throw new Error(`could not fetch ${url}manifest.json: ${msg(e)} (is \`edgedepth serve\` still running?)`);
  }
  if (!res.ok) throw new Error(`${url}manifest.json: HTTP ${res.status} ${res.statusText}`);
  let m;
  try {
    m = await res.json();
  } catch (e) {
    throw new Error(`manifest.json is not valid JSON: ${msg(e)}`);
  }
  const { manifest, files } = parseManifest(m, runtimes);
  Object.assign(release, { url, manifest, files });
  return release;
}

/** The artifact list's order: 518x686 first, then by size, FP32 before the other precisions of a size. */
export function sortFiles(files) {
  const order = (f) => [f.size === '518x686' ? 0 : 1, f.size || '', f.precision === 'fp32' ? 0 : 1];
  return [...files].sort((a, b) => {
    const x = order(a);
    const y = order(b);
    return x[0] - y[0] || x[1].localeCompare(y[1]) || x[2] - y[2];
  });
}

/** The .onnx compared with a .tflite: same input size; the same precision, else FP32, else any. */
export function partnerOf(f, onnx = release.files.ort || []) {
  if (!f) return null;
  const [, , h, w] = f.input.shape;
  const same = onnx.filter((o) => o.input.shape[2] === h && o.input.shape[3] === w);
  return same.find((o) => o.precision === f.precision) || same.find((o) => o.precision === 'fp32') || same[0] || null;
}

/** The transformers.js file compared with ONNX Runtime Web's: the same .onnx when transformers.js can load it (same
 * bytes, two ORT-web builds), else its FP32 file. */
export function tjsPartnerOf(o, files = release.files.tjs || []) {
  return (o && files.find((f) => f.path === o.path)) || files.find((f) => f.precision === 'fp32') || files[0] || null;
}

/** The default file: for LiteRT.js, manifest.json's recommendation for the backend that will run (WebGPU on a real
 * adapter: the fp16-weight file, half the download; wasm: the file recommended for the CPU / wasm); for compare, an
 * FP32 .tflite that has a matching .onnx (the recommended size first); else the first of the sorted list. */
export function defaultFile(files, compare, recommended = release.recommended) {
  const rec = recommended && files.find((f) => f.path === recommended.path);
  if (compare) {
    const pairs = files.filter((f) => partnerOf(f));
    const fp32 = pairs.filter((f) => f.precision === 'fp32');
    return fp32.find((f) => rec && f.size === rec.size) || fp32[0] || pairs[0] || files[0];
  }
  return rec || files[0];
}

/** The artifact list's text for a file: the runtime's label(f) if it has one, else size · precision · MB · GPU. */
export function label(f, rt) {
  if (rt && rt.label) return rt.label(f);
  const gpu = f.gpu_fully_delegated === true ? 'GPU: fully delegated' :
    f.gpu_fully_delegated === false ? 'GPU: not fully delegated' : '';
  const pixels = f.input?.dtype === 'uint8' ? 'uint8 pixels in' : '';   // _u8in: the WebGPU file
  return [f.size || f.input?.shape?.slice(2).join('x'), (f.precision || '?').toUpperCase(), pixels, `${mb(f.bytes)} MB`,
    gpu].filter(Boolean).join(' · ');
}

/** The second map of a run, `{ role, map }` (map: Float32Array [H*W]), when the manifest entry lists a "confidence"
 * or "sky" output after the depth (Depth Anything 3; manifest `outputs`, depth first, in the file's order), else
 * null. */
export function secondOutputOf(entry, y) {
  const roles = Array.isArray(entry.outputs) ? entry.outputs.map((o) => o && o.role) : ['depth'];
  const i = roles.findIndex((r) => r === 'confidence' || r === 'sky');
  const map = i > 0 && y.more && y.more[i - 1] && y.more[i - 1].length === y.length ? y.more[i - 1] : null;
  return map ? { role: roles[i], map } : null;
}
