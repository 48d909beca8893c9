// Webcam frames computed on the GPU (LiteRT.js on WebGPU). Per frame: the grabbed frame is copied into a texture,
// resized and normalised by WGSL compute passes running preprocess.js's integer arithmetic (so the model input is
// bit-identical to Pillow's, i.e. to edgedepth.preprocess), fed to the model as a GPU tensor; its output is min-max
// normalised and coloured (colormap.js's inferno) by two more passes, and only the colours come back, through a ring of
// staging buffers, so frame N's read-back waits while frame N+1 already runs. The CPU path waits for each frame's
// read-back before it can start the next model call (93 % of the browser's model call on the H200: BENCHMARKS, "the
// playground on a real GPU") and spends tens of ms per frame resizing in JavaScript. (A WebGPU canvas would skip the
// read-back altogether, but presenting one lost the device in headless Chromium 156 on SwiftShader, where this is
// tested.) readBack() returns the last frame's input and output once: for the page when the webcam stops, and tests.

import { INFERNO } from './colormap.js';
import { normaliseToNCHW, resamplePlan } from './preprocess.js';

const WG = 64;                // workgroup size of the per-element passes
const MAX_GROUPS = 65535;     // WebGPU's default maxComputeWorkgroupsPerDimension

// Element index of a 2-D dispatch (x: up to MAX_GROUPS groups, y: the rest).
const INDEX = 'fn index(g: vec3u, nw: vec3u) -> u32 { return g.x + g.y * nw.x * 64u; }';

const UNPACK = `${INDEX}
@group(0) @binding(0) var frame: texture_2d<f32>;
@group(0) @binding(1) var<storage, read_write> rgb: array<u32>;
@group(0) @binding(2) var<uniform> dims: vec4u;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= dims.x * dims.y) { return; }
  let b = vec3u(round(clamp(textureLoad(frame, vec2u(i % dims.x, i / dims.x), 0).rgb, vec3f(0.0), vec3f(1.0)) * 255.0));
  rgb[i * 3u] = b.x; rgb[i * 3u + 1u] = b.y; rgb[i * 3u + 2u] = b.z;
}`;

// One Resample.c pass (preprocess.js horizontalPass / verticalPass): 22-bit fixed point, i32 sums (|sum| < 2^31), an
// arithmetic shift, clipped to 0..255. mode 0: along rows (src row = out row + yfirst); 1: along columns.
const RESAMPLE = `${INDEX}
struct P { mode: u32, win: u32, wout: u32, rows: u32, yfirst: u32, ksize: u32, pad0: u32, pad1: u32 }
@group(0) @binding(0) var<uniform> p: P;
@group(0) @binding(1) var<storage, read> src: array<u32>;
@group(0) @binding(2) var<storage, read> bounds: array<i32>;
@group(0) @binding(3) var<storage, read> kk: array<i32>;
@group(0) @binding(4) var<storage, read_write> dst: array<u32>;
fn px(q: u32) -> vec3i { return vec3i(i32(src[q]), i32(src[q + 1u]), i32(src[q + 2u])); }
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let o = index(g, nw);
  if (o >= p.rows * p.wout) { return; }
  let yy = o / p.wout;
  let xx = o % p.wout;
  var s = vec3i(2097152);
  if (p.mode == 0u) {
    let n = u32(bounds[xx * 2u + 1u]);
    let base = ((yy + p.yfirst) * p.win + u32(bounds[xx * 2u])) * 3u;
    for (var x = 0u; x < n; x++) { s += kk[xx * p.ksize + x] * px(base + x * 3u); }
  } else {
    let n = u32(bounds[yy * 2u + 1u]);
    let base = ((u32(bounds[yy * 2u]) - p.yfirst) * p.win + xx) * 3u;
    for (var y = 0u; y < n; y++) { s += kk[yy * p.ksize + y] * px(base + y * p.win * 3u); }
  }
  let v = vec3u(clamp(s >> vec3u(22u), vec3i(0), vec3i(255)));
  dst[o * 3u] = v.x; dst[o * 3u + 1u] = v.y; dst[o * 3u + 2u] = v.z;
}`;

// RGB (HWC, a u32 a byte) -> the model input, NCHW: uint8 (four bytes a word) or float32 through a 3 x 256 table that
// preprocess.js's normaliseToNCHW made (so each value is exactly the CPU's).
const PACK_U8 = `${INDEX}
@group(0) @binding(0) var<uniform> q: vec4u;
@group(0) @binding(1) var<storage, read> rgb: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<u32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let w = index(g, nw);
  if (w * 4u >= q.y) { return; }
  var v = 0u;
  for (var j = 0u; j < 4u; j++) {
    let e = w * 4u + j;
    if (e < q.y) { v |= rgb[(e % q.x) * 3u + e / q.x] << (8u * j); }
  }
  dst[w] = v;
}`;
const PACK_F32 = `${INDEX}
@group(0) @binding(0) var<uniform> q: vec4u;
@group(0) @binding(1) var<storage, read> rgb: array<u32>;
@group(0) @binding(2) var<storage, read_write> dst: array<f32>;
@group(0) @binding(3) var<storage, read> lut: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let e = index(g, nw);
  if (e >= q.y) { return; }
  let c = e / q.x;
  dst[e] = lut[c * 256u + rgb[(e % q.x) * 3u + c]];
}`;

// min and max of the map: one workgroup (the map is read once; a few hundred microseconds on a real GPU).
const MINMAX = `
@group(0) @binding(0) var<storage, read> d: array<f32>;
@group(0) @binding(1) var<storage, read_write> r: array<f32>;
@group(0) @binding(2) var<uniform> n: vec4u;
var<workgroup> lo: array<f32, 256>;
var<workgroup> hi: array<f32, 256>;
@compute @workgroup_size(256) fn main(@builtin(local_invocation_index) t: u32) {
  var a = d[0];
  var b = d[0];
  for (var i = t; i < n.x; i += 256u) { a = min(a, d[i]); b = max(b, d[i]); }
  lo[t] = a;
  hi[t] = b;
  workgroupBarrier();
  for (var s = 128u; s > 0u; s >>= 1u) {
    if (t < s) { lo[t] = min(lo[t], lo[t + s]); hi[t] = max(hi[t], hi[t + s]); }
    workgroupBarrier();
  }
  if (t == 0u) { r[0] = lo[0]; r[1] = hi[0]; }
}`;

// colormap.js colorizeDepth: unit = (d - lo) / (hi - lo) (0 for a constant map), index = floor(unit * 256) clipped to
// 0..255, inferno, as RGBA bytes (dims = W, H). WGSL's division may be 2.5 ULP
// off where JavaScript's is exact, so an index may differ by one where unit * 256 is that close to an integer.
const COLOUR = `${INDEX}
@group(0) @binding(0) var<storage, read> d: array<f32>;
@group(0) @binding(1) var<storage, read> r: array<f32>;
@group(0) @binding(2) var<storage, read> lut: array<u32>;
@group(0) @binding(3) var<storage, read_write> out: array<u32>;
@group(0) @binding(4) var<uniform> dims: vec4u;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = index(g, nw);
  if (i >= dims.x * dims.y) { return; }
  let range = r[1] - r[0];
  var unit = 0.0;
  if (range > 0.0) { unit = (d[i] - r[0]) / range; }
  out[i] = lut[u32(clamp(floor(unit * 256.0), 0.0, 255.0))];
}`;

const INFERNO_RGBA = new Uint32Array(256).map((_, k) =>
  (INFERNO[k * 3] | (INFERNO[k * 3 + 1] << 8) | (INFERNO[k * 3 + 2] << 16) | (255 << 24)) >>> 0);

/** The model input's float32 values for every byte and channel: normaliseToNCHW on a 1 x 256 ramp. */
function normaliseTable() {
  const ramp = new Uint8Array(256 * 3);
  for (let i = 0; i < 256; i++) ramp.fill(i, i * 3, i * 3 + 3);
  return normaliseToNCHW(ramp, 1, 256);     // [c * 256 + byte]
}

export class GpuFrames {
  /**
   * @param {GPUDevice} device the runtime's device (the model's buffers live there)
   * @param {{H: number, W: number, dtype: 'uint8'|'float32',
   *          bind: (buffer: GPUBuffer) => {run: () => Promise<{buffer: GPUBuffer, release: () => void}>, release}}} o
   *   bind: the runtime's model on this input buffer (runtimes/litert.js gpu.bind)
   */
  constructor(device, { H, W, dtype, bind }) {
    Object.assign(this, { device, H, W, dtype, source: null, last: null });
    const d = device;
    const plane = H * W;
    this.pipes = Object.fromEntries(Object.entries({ UNPACK, RESAMPLE, PACK_U8, PACK_F32, MINMAX, COLOUR })
      .map(([k, code]) => [k, d.createComputePipeline({ layout: 'auto',
        compute: { module: d.createShaderModule({ code }), entryPoint: 'main' } })]));
    const storage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
    const bytes = (dtype === 'uint8' ? 3 * plane + 3 : 12 * plane) & ~3;
    this.input = d.createBuffer({ size: bytes, usage: storage });
    this.rgb = d.createBuffer({ size: 12 * plane, usage: storage });
    this.range = d.createBuffer({ size: 8, usage: storage });
    this.rgba = d.createBuffer({ size: 4 * plane, usage: storage });
    this.inferno = this.upload(INFERNO_RGBA, GPUBufferUsage.STORAGE);
    this.lut = this.upload(normaliseTable(), GPUBufferUsage.STORAGE);
    this.packDims = this.upload(new Uint32Array([plane, 3 * plane, 0, 0]), GPUBufferUsage.UNIFORM);
    this.mapDims = this.upload(new Uint32Array([W, H, 0, 0]), GPUBufferUsage.UNIFORM);
    this.mapCount = this.upload(new Uint32Array([plane, 0, 0, 0]), GPUBufferUsage.UNIFORM);
    this.model = bind(this.input);
    // staging buffers the colours come back through: one per frame in flight, plus the one being drawn
    this.staging = [0, 1, 2].map(() => d.createBuffer({ size: 4 * plane,
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST }));
    this.next = 0;
  }

  upload(data, usage) {
    const b = this.device.createBuffer({ size: Math.max(16, data.byteLength), usage: usage | GPUBufferUsage.COPY_DST });
    this.device.queue.writeBuffer(b, 0, data);
    return b;
  }

  bindGroup(pipe, resources) {
    return this.device.createBindGroup({ layout: pipe.getBindGroupLayout(0),
      entries: resources.map((r, binding) => ({ binding, resource: r instanceof GPUBuffer ? { buffer: r } : r })) });
  }

  /** Passes that turn a w x h frame into the model input, made once per frame size. */
  ensureSource(w, h) {
    if (this.source && this.source.w === w && this.source.h === h) return this.source;
    this.releaseSource();
    const d = this.device;
    const storage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC;
    const texture = d.createTexture({ size: [w, h], format: 'rgba8unorm',
      usage: GPUTextureUsage.TEXTURE_BINDING | GPUTextureUsage.COPY_DST | GPUTextureUsage.RENDER_ATTACHMENT });
    const owned = [texture];
    const buffer = (size) => {
      const b = d.createBuffer({ size: Math.max(16, size), usage: storage });
      owned.push(b);
      return b;
    };
    const frameRGB = buffer(12 * w * h);
    const steps = [[this.pipes.UNPACK, [texture.createView(), frameRGB, this.own(owned, new Uint32Array([w, h, 0, 0]))],
      w * h]];
    const passes = resamplePlan(w, h, this.W, this.H);
    let src = frameRGB;
    passes.forEach((p, i) => {
      const h2 = p.axis === 'h';
      const [win, wout, rows] = h2 ? [p.inW, p.outW, p.rows] : [p.w, p.w, p.outH];
      const dst = i === passes.length - 1 ? this.rgb : buffer(12 * wout * rows);
      const params = new Uint32Array([h2 ? 0 : 1, win, wout, rows, p.yFirst, p.ksize, 0, 0]);
      steps.push([this.pipes.RESAMPLE, [this.own(owned, params), src, this.own(owned, p.bounds, GPUBufferUsage.STORAGE),
        this.own(owned, p.kk, GPUBufferUsage.STORAGE), dst], wout * rows]);
      src = dst;
    });
    const rgb = passes.length ? this.rgb : frameRGB;
    const plane = this.H * this.W;
    steps.push(this.dtype === 'uint8'
      ? [this.pipes.PACK_U8, [this.packDims, rgb, this.input], Math.ceil((3 * plane) / 4)]
      : [this.pipes.PACK_F32, [this.packDims, rgb, this.input, this.lut], 3 * plane]);
    this.source = { w, h, texture, owned, steps: steps.map(([pipe, res, n]) => [pipe, this.bindGroup(pipe, res), n]) };
    return this.source;
  }

  own(list, data, usage = GPUBufferUsage.UNIFORM) {
    const b = this.upload(data, usage);
    list.push(b);
    return b;
  }

  releaseSource() {
    if (this.source) for (const o of this.source.owned) o.destroy();
    this.source = null;
  }

  dispatch(pass, pipe, group, n) {
    const groups = Math.ceil(n / WG);
    pass.setPipeline(pipe);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(Math.min(groups, MAX_GROUPS), Math.ceil(groups / MAX_GROUPS));
  }

  /**
   * Queue one frame: `source` (a canvas, video or ImageBitmap, w x h) -> input -> model -> colours. Resolves once the
   * frame is queued, with {done}: a promise of its colours (Uint8ClampedArray RGBA, H*W*4) when the GPU is through.
   * At most staging.length - 1 frames may be in flight (the caller waits for the oldest).
   */
  async frame(source, w, h) {
    const d = this.device;
    // The first frame's own passes run inside an error scope (LiteRT's run stays outside it: it keeps its own scopes).
    const check = !this.checked;
    if (check) d.pushErrorScope('validation');
    const s = this.ensureSource(w, h);
    d.queue.copyExternalImageToTexture({ source }, { texture: s.texture }, [w, h]);
    let enc = d.createCommandEncoder();
    let pass = enc.beginComputePass();
    for (const [pipe, group, n] of s.steps) this.dispatch(pass, pipe, group, n);
    pass.end();
    d.queue.submit([enc.finish()]);
    if (check) await this.popScope('preprocessing');
    const out = await this.model.run();
    if (this.last) this.last.release();     // the previous frame's output (its passes are already queued)
    this.last = out;
    if (check) d.pushErrorScope('validation');
    enc = d.createCommandEncoder();
    pass = enc.beginComputePass();
    this.dispatchMap(pass, out.buffer);
    pass.end();
    const staging = this.staging[this.next];
    this.next = (this.next + 1) % this.staging.length;
    enc.copyBufferToBuffer(this.rgba, 0, staging, 0, staging.size);
    d.queue.submit([enc.finish()]);
    if (check) {
      await this.popScope('colouring');
      this.checked = true;
    }
    return { done: staging.mapAsync(GPUMapMode.READ).then(() => {
      const rgba = new Uint8ClampedArray(staging.getMappedRange().slice(0));
      staging.unmap();
      return rgba;
    }) };
  }

  async popScope(what) {
    const err = await this.device.popErrorScope();
    if (err) throw new Error(`WebGPU validation error in the ${what} passes: ${err.message}`);
  }

  /** min/max, then colours, of the model's output buffer (bind groups made again only when LiteRT hands a new one). */
  dispatchMap(pass, output) {
    if (!this.mapGroups || this.mapGroups.output !== output) {
      this.mapGroups = { output,
        minmax: this.bindGroup(this.pipes.MINMAX, [output, this.range, this.mapCount]),
        colour: this.bindGroup(this.pipes.COLOUR, [output, this.range, this.inferno, this.rgba, this.mapDims]) };
    }
    pass.setPipeline(this.pipes.MINMAX);
    pass.setBindGroup(0, this.mapGroups.minmax);
    pass.dispatchWorkgroups(1);
    this.dispatch(pass, this.pipes.COLOUR, this.mapGroups.colour, this.H * this.W);
  }

  /** The last frame's model input (Uint8Array or Float32Array, NCHW) and output (Float32Array H*W), read back once
   * (call it after the frames in flight are done). */
  async readBack() {
    if (!this.last) return null;
    const plane = this.H * this.W;
    const [input, output] = await Promise.all([
      this.read(this.input, this.dtype === 'uint8' ? 3 * plane : 12 * plane),
      this.read(this.last.buffer, 4 * plane)]);
    return { input: this.dtype === 'uint8' ? input : new Float32Array(input.buffer),
      output: new Float32Array(output.buffer) };
  }

  /** The first `size` bytes of `buffer`. */
  async read(buffer, size) {
    const padded = (size + 3) & ~3;
    const usage = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
    const staging = this.device.createBuffer({ size: padded, usage });
    const enc = this.device.createCommandEncoder();
    enc.copyBufferToBuffer(buffer, 0, staging, 0, padded);
    this.device.queue.submit([enc.finish()]);
    await staging.mapAsync(GPUMapMode.READ);
    const bytes = new Uint8Array(staging.getMappedRange().slice(0, size));
    staging.destroy();
    return bytes;
  }

  destroy() {
    this.releaseSource();
    if (this.last) this.last.release();
    this.last = null;
    this.model.release();
    for (const b of [this.input, this.rgb, this.range, this.rgba, this.inferno, this.lut, this.packDims, this.mapDims,
      this.mapCount, ...this.staging]) b.destroy();
  }
}
