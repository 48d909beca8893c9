// ONNX Runtime Web for the playground: manifest files of format "onnx", one [1,3,H,W] float32 input -> one [1,H,W]
// output, on WebGPU or wasm (the runtime shape of web/runtimes/: see litert.js; the default export below).
// ORT-web (its WebGPU + wasm build, `onnxruntime-web/webgpu`) is imported on first use, from /vendor/ (never a CDN),
// so a missing install only breaks the ONNX runtime, not the page. The backend choice and fallback rules are model.js's.

import { msg } from '../files.js';

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

function sessionError(e) {
  const text = e instanceof Error ? e.message : String(e);
  const err = new Error(text.replace(/^Can't create a session\. ERROR_CODE: \d+, ERROR_MESSAGE: /, '').trim());
  err.notFullyDelegated = text.includes(STRICT);
  return err;
}

/**
 * A session on `backend` ('webgpu' | 'wasm'). WebGPU is strict unless told otherwise: a graph ORT would split between
 * WebGPU and the CPU fails with {notFullyDelegated: true} (session.disable_cpu_ep_fallback), like LiteRT.js's
 * isFullyAccelerated check. `log` (an array): ORT logs at verbose severity while it creates this session (its node
 * placement among other things), and the lines it prints are pushed there.
 */
export async function createSession(bytes, backend, { strict = true, log = null } = {}) {
  const options = { executionProviders: [backend], graphOptimizationLevel: 'all' };
  if (backend === 'webgpu' && strict) options.extra = { session: { disable_cpu_ep_fallback: '1' } };
  if (log) Object.assign(options, { logSeverityLevel: 0, logVerbosityLevel: 0 });   // this session's log only
  try {
    return await tapped(() => ort.InferenceSession.create(bytes, options), log);
  } catch (e) {
    throw sessionError(e);
  }
}

// ---------------------------------------------------------------------------------------------------- WebGPU + CPU

/** The op types accepted on the CPU beside a WebGPU session, each only with int64 (or int32 index) inputs and int64
 * outputs: the shape computations ORT keeps on its CPU EP in a dynamic-size graph (the WebGPU EP has no int64 kernels
 * for them), e.g. Shape (on WebGPU) -> Squeeze -> Div -> Reshape -> Concat -> Resize `sizes` / Reshape `shape`.
 * Observed on the release's onnx/model.onnx with ORT-web 1.31.1: Squeeze, Div, Mul, Reshape, Concat. Not Shape or
 * Size: on the CPU they would read a copy of a float tensor (their input check refuses that in any case). */
export const SHAPE_OPS = new Set(['Gather', 'Slice', 'Concat', 'Unsqueeze', 'Squeeze', 'Reshape', 'Cast', 'Div', 'Mul',
  'Add', 'Sub', 'ConstantOfShape', 'Range', 'Identity']);

const DUPLICATE = Symbol('duplicate node name');
const INT32 = 6;
const INT64 = 7;
const TYPE_NAMES = { 1: 'float32', 2: 'uint8', 3: 'int8', 4: 'uint16', 5: 'int16', 6: 'int32', 7: 'int64',
  8: 'string', 9: 'bool', 10: 'float16', 11: 'float64', 12: 'uint32', 13: 'uint64', 16: 'bfloat16' };

function varint(buf, p) {
  let v = 0;
  let mul = 1;
  let b;
  do {
    if (p >= buf.length) throw new Error('truncated protobuf');
    b = buf[p++];
    v += (b & 0x7f) * mul;
    mul *= 128;
  } while (b & 0x80);
  return [v, p];
}

/** The protobuf fields of buf[start, end): {field, value} (varint) or {field, start, end} (bytes, fixed32/64). */
function* fields(buf, start, end) {
  let p = start;
  while (p < end) {
    const [key, q] = varint(buf, p);
    const field = Math.floor(key / 8);
    const wire = key % 8;
    p = q;
    if (wire === 0) {
      const [value, r] = varint(buf, p);
      p = r;
      yield { field, value };
      continue;
    }
    let len;
    if (wire === 2) [len, p] = varint(buf, p);
    else if (wire === 1) len = 8;
    else if (wire === 5) len = 4;
    else throw new Error(`protobuf wire type ${wire}`);
    if (p + len > end) throw new Error('truncated protobuf');
    yield { field, start: p, end: p + len };
    p += len;
  }
}

/**
 * What the checks below need of an .onnx file's main graph, read from its bytes (no ONNX library: initializer data is
 * skipped, not decoded): {nodes: Map name -> {op, domain, inputs, outputs}, types: Map tensor -> ONNX element type
 * (declared: inputs, initializers, value_info, Constant; else inferred for the ops whose output type follows from their
 * inputs or attributes), dynamic: whether an input has a dimension without a fixed value}.
 */
export function onnxGraph(bytes) {
  const buf = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const dec = new TextDecoder();
  const str = (f) => dec.decode(buf.subarray(f.start, f.end));
  const sub = (f, n) => [...fields(buf, f.start, f.end)].filter((x) => x.field === n);
  let graph = null;
  for (const f of fields(buf, 0, buf.length)) if (f.field === 7 && f.end !== undefined) graph = f;
  if (!graph) throw new Error('no graph in the file');
  const tensorType = (f) => {   // TensorProto: data_type 2, name 8
    let type = 0;
    let name = '';
    for (const x of fields(buf, f.start, f.end)) {
      if (x.field === 2 && x.value !== undefined) type = x.value;
      if (x.field === 8 && x.end !== undefined) name = str(x);
    }
    return { name, type };
  };
  const valueInfo = (f) => {    // ValueInfoProto: name 1, type 2 -> TypeProto.tensor_type 1 -> elem_type 1, shape 2
    let name = '';
    let type = 0;
    let dims = [];
    for (const x of fields(buf, f.start, f.end)) {
      if (x.field === 1 && x.end !== undefined) name = str(x);
      if (x.field !== 2 || x.end === undefined) continue;
      for (const t of sub(x, 1)) {
        for (const y of fields(buf, t.start, t.end)) {
          if (y.field === 1 && y.value !== undefined) type = y.value;
          if (y.field === 2 && y.end !== undefined) {
            dims = sub(y, 1).map((d) => sub(d, 1).find((v) => v.value !== undefined)?.value ?? null);
          }
        }
      }
    }
    return { name, type, dims };
  };
  const nodes = new Map();
  const order = [];
  const types = new Map();
  const initializers = new Set();
  const inputs = [];
  for (const f of fields(buf, graph.start, graph.end)) {
    if (f.end === undefined) continue;
    if (f.field === 5) {                      // initializer
      const t = tensorType(f);
      types.set(t.name, t.type);
      initializers.add(t.name);
    } else if (f.field === 11 || f.field === 13) {   // input, value_info
      const v = valueInfo(f);
      if (v.type) types.set(v.name, v.type);
      if (f.field === 11) inputs.push(v);
    } else if (f.field === 1) {               // node: input 1, output 2, name 3, op_type 4, attribute 5, domain 7
      const n = { inputs: [], outputs: [], name: '', op: '', domain: '', attrs: {} };
      for (const x of fields(buf, f.start, f.end)) {
        if (x.end === undefined) continue;
        if (x.field === 1) n.inputs.push(str(x));
        else if (x.field === 2) n.outputs.push(str(x));
        else if (x.field === 3) n.name = str(x);
        else if (x.field === 4) n.op = str(x);
        else if (x.field === 7) n.domain = str(x);
        else if (x.field === 5) {             // AttributeProto: name 1, i 3, t 5, floats 7, ints 8
          let name = '';
          let value = null;
          for (const a of fields(buf, x.start, x.end)) {
            if (a.field === 1 && a.end !== undefined) name = str(a);
            else if (a.field === 3 && a.value !== undefined) value = a.value;
            else if (a.field === 5 && a.end !== undefined) value = { tensor: tensorType(a).type };
          }
          n.attrs[name] = value;
        }
      }
      order.push(n);
      nodes.set(n.name, nodes.has(n.name) ? DUPLICATE : n);
    }
  }
  // Output types, in the file's (topological) order, where the file does not declare them.
  const same = new Set(['Squeeze', 'Unsqueeze', 'Reshape', 'Concat', 'Slice', 'Gather', 'Div', 'Mul', 'Add', 'Sub',
    'Identity', 'Neg', 'Abs', 'Max', 'Min', 'Mod', 'Transpose', 'Expand', 'Tile', 'Flatten', 'Range', 'Split',
    'ReduceProd', 'ReduceSum', 'ReduceMin', 'ReduceMax']);
  for (const n of order) {
    if (n.domain && n.domain !== 'ai.onnx') continue;
    let t = 0;
    if (n.op === 'Shape' || n.op === 'Size') t = INT64;
    else if (n.op === 'Cast') t = n.attrs.to ?? 0;
    else if (n.op === 'ConstantOfShape') t = n.attrs.value?.tensor ?? 1;
    else if (n.op === 'Constant') {
      const a = n.attrs;
      t = a.value?.tensor ?? ('value_int' in a || 'value_ints' in a ? INT64 :
        'value_float' in a || 'value_floats' in a ? 1 : 0);
    } else if (same.has(n.op)) t = types.get(n.inputs[0]) ?? 0;
    for (const o of n.outputs) if (o && !types.has(o) && t) types.set(o, t);
  }
  const dynamic = inputs.filter((v) => !initializers.has(v.name)).some((v) => v.dims.some((d) => d === null));
  return { nodes, types, dynamic };
}

/**
 * The node placement ORT logs at verbose severity while it creates a session (session_state.cc,
 * VerifyEachNodeIsAssignedToAnEp): " Node(s) placed on [EP]. Number of nodes: N" then one "  OpType (name)" line per
 * node, per EP; " All nodes placed on [EP]. Number of nodes: N" when one EP has them all. Returns
 * {cpu: [{op, name}], total} or {error} when the lines are missing or their counts do not add up.
 */
export function placementsFromLog(lines) {
  const groups = [];
  let header = false;
  for (const raw of lines) {
    // eslint-disable-next-line no-control-regex
    const m = /VerifyEachNodeIsAssignedToAnEp\]\s?(.*)$/.exec(raw.replace(/\x1b\[[0-9;]*m/g, ''));   // (ANSI colours)
    if (!m) continue;
    const text = m[1].replace(/\s+$/, '');
    let g;
    if (/^\s*Node placements$/.test(text)) {
      header = true;
    } else if ((g = /^\s*(Node\(s\)|All nodes) placed on \[(\w+)\]\. Number of nodes: (\d+)$/.exec(text))) {
      groups.push({ ep: g[2], count: Number(g[3]), all: g[1] === 'All nodes', nodes: [] });
    } else if ((g = /^\s{2,}(\S+) \((.*)\)$/.exec(text)) && groups.length) {
      groups[groups.length - 1].nodes.push({ op: g[1], name: g[2] });
    }
  }
  if (!header || !groups.length) {
    return { error: 'no node placement in what ONNX Runtime printed (its verbose log did not reach ort.js: ORT-web ' +
      'prints through the console functions it bound when its wasm module started, and these were not ort.js\'s)' };
  }
  const bad = groups.find((g) => (g.all ? g.nodes.length !== 0 : g.nodes.length !== g.count));
  if (bad) {
    return { error: `ONNX Runtime's placement log lists ${bad.nodes.length} node(s) on ${bad.ep} where it says ` +
      `${bad.count}` };
  }
  const cpu = groups.filter((g) => g.ep === 'CPUExecutionProvider');
  if (cpu.some((g) => g.all)) return { error: 'ONNX Runtime placed every node on the CPU' };
  return { cpu: cpu.flatMap((g) => g.nodes), total: groups.reduce((s, g) => s + g.count, 0) };
}

/** "Concat×10, Reshape×6, ..." (most frequent first) for a list of {op}. */
export function opCounts(nodes) {
  const counts = new Map();
  for (const n of nodes) counts.set(n.op, (counts.get(n.op) || 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([op, k]) => `${op}×${k}`).join(', ');
}

/** Why a CPU-placed node {op, name} is not an int64 shape computation of `graph`, or null when it is. */
export function notShapeComputation(graph, { op, name }) {
  const what = `${op} (${name || 'unnamed'})`;
  if (!SHAPE_OPS.has(op)) return `${what} is not a shape-computation op`;
  const n = graph.nodes.get(name);
  if (!name || n === DUPLICATE) return `${what}: no node of the file has this name alone, its types cannot be checked`;
  if (!n) return `${what} is not a node of the file (ORT's graph optimizer made it): its types cannot be checked`;
  if (n.op !== op || (n.domain && n.domain !== 'ai.onnx')) return `${what} is ${n.domain || ''}${n.op} in the file`;
  const type = (t) => TYPE_NAMES[graph.types.get(t)] || 'of a type not known here';
  const input = n.inputs.find((t) => t && ![INT64, INT32].includes(graph.types.get(t)));
  if (input !== undefined) return `${what} reads ${input}, ${type(input)}`;
  const output = n.outputs.find((t) => t && graph.types.get(t) !== INT64);
  if (output !== undefined) return `${what} writes ${output}, ${type(output)}`;
  return null;
}

// ORT-web's wasm module binds console.log and console.error once, when it starts (inside the first session creation),
// and prints ORT's log through them. Every session is therefore created with both wrapped in a tap (for that call
// only): the functions the module binds are taps, which pass everything through to what they wrapped, except while
// `ortLog` collects the log of a session created at verbose severity (its verbose and info lines are collected, not
// shown; warnings and errors are collected and shown).
let ortLog = null;

function tap(orig) {
  return (...a) => {
    if (ortLog) {
      const text = a.map(String).join(' ');
      const m = /\[([VIWEF]):onnxruntime:/.exec(text);
      if (m) {
        ortLog.push(text);
        if (m[1] === 'V' || m[1] === 'I') return undefined;
      }
    }
    return orig.apply(console, a);
  };
}

async function tapped(create, log = null) {
  const saved = { log: console.log, error: console.error };
  console.log = tap(saved.log);
  console.error = tap(saved.error);
  ortLog = log;
  try {
    return await create();
  } finally {
    ortLog = null;
    Object.assign(console, saved);
  }
}

/**
 * A WebGPU session: strict first (createSession). Refused as not fully delegated, a dynamic-size graph (an input
 * dimension without a fixed value) gets a second session without the strict flag, with ORT's node placement read
 * from its verbose log: accepted only when every node ORT placed on the CPU is a shape computation on int64 tensors
 * (SHAPE_OPS, types checked in the file), else released and refused with what went to the CPU. A static-size graph,
 * an unreadable file or log: refused as the strict session was. Returns {session, cpuNodes: [{op, name}]}.
 */
export async function createWebGpuSession(bytes) {
  let strict;
  try {
    return { session: await createSession(bytes, 'webgpu'), cpuNodes: [] };
  } catch (e) {
    if (!e.notFullyDelegated) throw e;
    strict = e;
  }
  const refuse = (why) => {
    const err = new Error(`${strict.message.replace(/[.\s]+$/, '')}; ${why}`);
    err.notFullyDelegated = true;
    return err;
  };
  let graph;
  try {
    graph = onnxGraph(bytes);
  } catch (e) {
    throw refuse(`its graph could not be read to check what ORT puts on the CPU (${e.message})`);
  }
  if (!graph.dynamic) throw strict;
  let session;
  const lines = [];
  try {
    session = await createSession(bytes, 'webgpu', { strict: false, log: lines });
  } catch (e) {
    throw refuse(`without the strict flag, session creation failed too: ${e.message}`);
  }
  const placed = placementsFromLog(lines);
  let why = null;
  if (placed.error) {
    why = `not accepted without knowing which nodes run on the CPU: ${placed.error}`;
  } else if (!placed.cpu.length) {
    why = 'not accepted: ONNX Runtime\'s placement log shows no node on the CPU, yet the strict session was refused';
  } else {
    const others = placed.cpu.filter((n) => notShapeComputation(graph, n));
    if (others.length) {
      why = `without the strict flag ORT places ${placed.cpu.length} nodes on the CPU, ${others.length} of them not ` +
        `int64 shape computations: ${opCounts(others)} (e.g. ${notShapeComputation(graph, others[0])})`;
    }
  }
  await session.release().catch(() => {});
  if (why) throw refuse(why);
  // The session that runs: the same options without the verbose log (ORT's WebGPU EP keeps its session's log
  // severity for every run, and a log line per dispatch would be timed with each inference). Log severity plays no
  // part in ORT's partitioning: it places the same nodes on the CPU.
  try {
    session = await createSession(bytes, 'webgpu', { strict: false });
  } catch (e) {
    throw refuse(`without the strict flag (and without the verbose log), session creation failed: ${e.message}`);
  }
  return { session, cpuNodes: placed.cpu };
}

/** One inference: input tensor + session.run + output read-back (timed by the caller). Returns a Float32Array. */
export async function runSession(session, tensor, H, W) {
  const input = new ort.Tensor('float32', tensor, [1, 3, H, W]);
  const outputs = await session.run({ [session.inputNames[0]]: input });
  const read = async (t) => (t.location === 'cpu' ? t.data : await t.getData()).slice();
  try {
    const y = await read(outputs[session.outputNames[0]]);
    y.more = [];            // the file's other outputs in order (Depth Anything 3: confidence)
    for (const n of session.outputNames.slice(1)) y.more.push(await read(outputs[n]));
    return y;
  } finally {
    for (const t of Object.values(outputs)) t.dispose();
  }
}

/** A session as the page's model shape: input tensor + session.run + output read-back; release on dispose. */
function wrap(session) {
  return { session, run: (tensor, H, W) => runSession(session, tensor, H, W), dispose: () => session.release() };
}

/** ONNX Runtime Web on WebGPU (its WebGPU execution provider): {model, cpuNodes} or {reason}. No CPU fallback, except
 * the int64 shape computations ORT keeps on the CPU in a dynamic-size graph, read from its node-placement log and
 * checked (createWebGpuSession): cpuNodes lists them ([] = the whole graph on WebGPU; then `label` and `note` say so). */
async function webgpu(bytes) {
  try {
    const { session, cpuNodes } = await createWebGpuSession(bytes);
    const r = { model: wrap(session), cpuNodes };
    if (cpuNodes.length) {
      r.note = `ONNX Runtime Web on WebGPU: ${cpuNodes.length} nodes run on the CPU, all of them int64 shape ` +
        'computations (checked in ONNX Runtime\'s node-placement log and in the file\'s types), as ONNX Runtime ' +
        `places them for dynamic-size models: ${opCounts(cpuNodes)} (${cpuNodes.map((n) => n.name).join(', ')}).`;
      r.label = `WebGPU (${cpuNodes.length} shape-computation nodes on the CPU, as ONNX Runtime places them for ` +
        `dynamic-size models: ${opCounts(cpuNodes)})`;
    }
    return r;
  } catch (e) {
    return {
      reason: e.notFullyDelegated ? 'the model is not fully delegated to WebGPU (ONNX Runtime would run some nodes ' +
        `on the CPU: ${e.message})` : `WebGPU session creation failed: ${e.message}`,
    };
  }
}

export default {
  id: 'ort',
  name: 'ONNX Runtime Web',
  formats: ['onnx'],
  /** Load ORT-web with the page's wasm thread count (the same CPU budget as LiteRT.js): {version, threads}. */
  async start(threads) {
    try {
      return await loadOrt(threads);
    } catch (e) {
      throw new Error(`ONNX Runtime Web could not start (${msg(e)}). Is \`npm ci --prefix web\` done? Run it and ` +
        'restart `edgedepth serve`');
    }
  },
  info: ortInfo,     // after a session: ORT drops to 1 thread where SharedArrayBuffer is unavailable
  webgpu,
  wasm: async (bytes) => wrap(await createSession(bytes, 'wasm')),
};
