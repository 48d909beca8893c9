// ONNX Runtime Web for the playground: one [1,3,H,W] float32 input -> one [1,H,W] output, on WebGPU or wasm.
// ORT-web (its WebGPU + wasm build, `onnxruntime-web/webgpu`) is imported on first use, from /vendor/ (never a CDN),
// so a missing install only breaks the ONNX runtime, not the page. The backend choice and fallback rules are app.js's.

const DIST = './vendor/onnxruntime-web/dist/';
const STRICT = 'fallback to CPU EP has been explicitly disabled';
let ortPromise = null;
let ort = null;

/** Load ORT-web once, with `threads` wasm threads (the count LiteRT.js uses). Returns {version, threads}. */
export async function loadOrt(threads) {
  if (!ortPromise) {
    ortPromise = import('onnxruntime-web/webgpu').then((m) => {
      m.env.wasm.wasmPaths = new URL(DIST, location.href).href;
      m.env.wasm.numThreads = threads;
      m.env.wasm.proxy = false;   // run on the page's thread, as LiteRT.js does (latencies timed alike)
      m.env.webgpu.powerPreference = 'high-performance';
      ort = m;
      return m;
    });
    ortPromise.catch(() => { ortPromise = null; });
  }
  await ortPromise;
  return ortInfo();
}

/** {version, threads}: threads is what ORT runs with (it drops to 1 where SharedArrayBuffer is unavailable). */
export function ortInfo() {
  return { version: ort.env.versions.web || ort.env.versions.common, threads: ort.env.wasm.numThreads };
}

/**
 * A session on `backend` ('webgpu' | 'wasm'). WebGPU is strict: a graph ORT would split between WebGPU and the CPU
 * fails with {notFullyDelegated: true} (session.disable_cpu_ep_fallback), like LiteRT.js's isFullyAccelerated check.
 */
export async function createSession(bytes, backend) {
  const options = { executionProviders: [backend], graphOptimizationLevel: 'all' };
  if (backend === 'webgpu') options.extra = { session: { disable_cpu_ep_fallback: '1' } };
  try {
    return await ort.InferenceSession.create(bytes, options);
  } catch (e) {
    const text = e instanceof Error ? e.message : String(e);
    const err = new Error(text.replace(/^Can't create a session\. ERROR_CODE: \d+, ERROR_MESSAGE: /, '').trim());
    err.notFullyDelegated = text.includes(STRICT);
    throw err;
  }
}

/** One inference: input tensor + session.run + output read-back (timed by the caller). Returns a Float32Array. */
export async function runSession(session, tensor, H, W) {
  const input = new ort.Tensor('float32', tensor, [1, 3, H, W]);
  const outputs = await session.run({ [session.inputNames[0]]: input });
  const out = outputs[session.outputNames[0]];
  try {
    const data = out.location === 'cpu' ? out.data : await out.getData();
    return data.slice();
  } finally {
    for (const t of Object.values(outputs)) t.dispose();
  }
}
