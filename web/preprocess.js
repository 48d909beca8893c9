// The edgedepth image -> tensor contract in the browser, identical to src/edgedepth/preprocess.py:
// RGB -> Pillow BICUBIC resize on uint8 to exactly H x W -> /255 -> (x - mean) / std -> float32 NCHW [1, 3, H, W].
//
// Pillow's BICUBIC (libImaging/Resample.c) is a separable convolution: horizontal pass first, then vertical; the
// filter (Keys cubic, a = -0.5, support 2) is widened by the scale factor when downscaling (antialiasing); the
// coefficients are normalised, converted to 22-bit fixed point, and each pass rounds and clips to uint8. Every step
// below mirrors that code, so the uint8 image is bit-exact and the float32 tensor is exact too (float32 rounding after
// each operation, as numpy does). tests/test_playground.py checks both against vectors written by Python.

export const MEAN = [0.485, 0.456, 0.406];
export const STD = [0.229, 0.224, 0.225];

const PRECISION_BITS = 32 - 8 - 2;          // Resample.c: 22 fractional bits for 8-bit images
const ONE = 2 ** PRECISION_BITS;
const HALF = 2 ** (PRECISION_BITS - 1);     // rounding offset added before the shift
const BICUBIC_SUPPORT = 2.0;

function bicubicFilter(x) {
  const a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
  if (x < 2.0) return (((x - 5.0) * x + 8.0) * x - 4.0) * a;
  return 0.0;
}

/** precompute_coeffs + normalize_coeffs_8bpc: per output pixel, [first input index, count] and int coefficients. */
function precomputeCoeffs(inSize, outSize) {
  const scale = inSize / outSize;
  const filterscale = scale < 1.0 ? 1.0 : scale;
  const support = BICUBIC_SUPPORT * filterscale;
  const ksize = Math.ceil(support) * 2 + 1;
  const bounds = new Int32Array(outSize * 2);
  const kk = new Int32Array(outSize * ksize);
  const k = new Float64Array(ksize);
  const ss = 1.0 / filterscale;
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    let xmin = Math.trunc(center - support + 0.5);   // C's (int) cast truncates toward zero
    if (xmin < 0) xmin = 0;
    let xmax = Math.trunc(center + support + 0.5);
    if (xmax > inSize) xmax = inSize;
    xmax -= xmin;
    let ww = 0.0;
    for (let x = 0; x < xmax; x++) {
      const w = bicubicFilter((x + xmin - center + 0.5) * ss);
      k[x] = w;
      ww += w;
    }
    for (let x = 0; x < ksize; x++) {
      let v = x < xmax ? (ww !== 0.0 ? k[x] / ww : k[x]) : 0.0;
      kk[xx * ksize + x] = v < 0 ? Math.trunc(-0.5 + v * ONE) : Math.trunc(0.5 + v * ONE);
    }
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = xmax;
  }
  return { ksize, bounds, kk };
}

function clip8(ss) {
  // C: arithmetic shift right by PRECISION_BITS. |ss| < 2^31 (255 x the coefficients' absolute sum, ~1.25 x 2^22), so
  // the int32 shift is exact and equals Math.floor(ss / ONE)
  const v = ss >> PRECISION_BITS;
  return v < 0 ? 0 : v > 255 ? 255 : v;
}

/**
 * Pillow-exact BICUBIC resize of an RGB(A) uint8 image (alpha ignored, as PIL's RGBA -> RGB drops it).
 *
 * Pass order and rows: resamplePlan. The vectors in tests/vectors pin both orders.
 * @param {Uint8Array|Uint8ClampedArray} src pixels, `channels` bytes per pixel, row-major
 * @returns {Uint8Array} RGB, outH * outW * 3
 */
export function resizeBicubicPIL(src, inW, inH, outW, outH, channels = 4) {
  const passes = resamplePlan(inW, inH, outW, outH);
  let cur = src;      // the first pass reads the source in place, `channels` bytes a pixel (alpha skipped)
  let ch = channels;
  if (!passes.length) {
    cur = new Uint8Array(inW * inH * 3);
    for (let i = 0, j = 0; i < inW * inH; i++, j += channels) {
      cur[i * 3] = src[j];
      cur[i * 3 + 1] = src[j + 1];
      cur[i * 3 + 2] = src[j + 2];
    }
    return cur;
  }
  for (const p of passes) {
    cur = p.axis === 'h' ? horizontalPass(cur, p.inW, p.rows, p.outW, p, p.yFirst, ch)
      : verticalPass(cur, p.w, p.outH, p, p.yFirst, ch);
    ch = 3;
  }
  return cur;
}

/**
 * The passes resizeBicubicPIL runs, in order (web/gpuframes.js runs the same plan in WGSL): [] = no resize;
 * {axis: 'h', inW, rows, outW, yFirst, ksize, bounds, kk} reads rows yFirst.. of an inW-wide image and writes `rows`
 * rows outW wide; {axis: 'v', w, outH, yFirst, ksize, bounds, kk} reads a w-wide image whose first row is source row
 * yFirst and writes outH rows. Pillow 13 (the version edgedepth pins) runs the vertical pass first when the height
 * shrinks and 2 * (outW - inW) > outH - inH, else the horizontal pass first (measured on 1,000+ random size pairs; each
 * pass rounds to uint8, so the order changes results); the horizontal pass then covers only the rows the vertical pass
 * reads (as Resample.c does; same values either way).
 */
export function resamplePlan(inW, inH, outW, outH) {
  const needH = outW !== inW;
  const needV = outH !== inH;
  const h = (rows, yFirst) => ({ axis: 'h', inW, rows, outW, yFirst, ...precomputeCoeffs(inW, outW) });
  const v = (w, yFirst, coeffs) => ({ axis: 'v', w, outH, yFirst, ...coeffs });
  if (needV && outH < inH && 2 * (outW - inW) > outH - inH) {      // vertical pass first
    const first = v(inW, 0, precomputeCoeffs(inH, outH));
    return needH ? [first, h(outH, 0)] : [first];
  }
  if (!needH) return needV ? [v(inW, 0, precomputeCoeffs(inH, outH))] : [];
  if (!needV) return [h(inH, 0)];
  const vert = precomputeCoeffs(inH, outH);
  const yFirst = vert.bounds[0];
  const rows = vert.bounds[outH * 2 - 2] + vert.bounds[outH * 2 - 1] - yFirst;
  return [h(rows, yFirst), v(outW, yFirst, vert)];
}

/** One Resample.c pass along rows: `ch` bytes per input pixel (3 or 4), RGB out (the output's rows start at yFirst). */
function horizontalPass(cur, inW, rows, outW, { ksize, bounds, kk }, yFirst, ch) {
  const out = new Uint8Array(outW * rows * 3);
  for (let yy = 0; yy < rows; yy++) {
    const rowIn = (yy + yFirst) * inW * ch;
    for (let xx = 0; xx < outW; xx++) {
      const xmin = bounds[xx * 2];
      const xmax = bounds[xx * 2 + 1];
      const kOff = xx * ksize;
      let s0 = HALF, s1 = HALF, s2 = HALF;
      for (let x = 0; x < xmax; x++) {
        const c = kk[kOff + x];
        const p = rowIn + (x + xmin) * ch;
        s0 += cur[p] * c;
        s1 += cur[p + 1] * c;
        s2 += cur[p + 2] * c;
      }
      const o = (yy * outW + xx) * 3;
      out[o] = clip8(s0);
      out[o + 1] = clip8(s1);
      out[o + 2] = clip8(s2);
    }
  }
  return out;
}

/** One Resample.c pass along columns: `ch` bytes per input pixel (3 or 4), RGB out. */
function verticalPass(cur, w, outH, { ksize, bounds, kk }, yFirst, ch) {
  const out = new Uint8Array(w * outH * 3);
  const stride = w * ch;
  for (let yy = 0; yy < outH; yy++) {
    const ymin = bounds[yy * 2] - yFirst;
    const ymax = bounds[yy * 2 + 1];
    const kOff = yy * ksize;
    for (let xx = 0; xx < w; xx++) {
      let s0 = HALF, s1 = HALF, s2 = HALF;
      const p0 = ymin * stride + xx * ch;
      for (let y = 0; y < ymax; y++) {
        const c = kk[kOff + y];
        const p = p0 + y * stride;
        s0 += cur[p] * c;
        s1 += cur[p + 1] * c;
        s2 += cur[p + 2] * c;
      }
      const o = (yy * w + xx) * 3;
      out[o] = clip8(s0);
      out[o + 1] = clip8(s1);
      out[o + 2] = clip8(s2);
    }
  }
  return out;
}

const INV255 = Math.fround(1 / 255);
const MEAN32 = MEAN.map(Math.fround);
const STD32 = STD.map(Math.fround);

/** uint8 RGB (HWC) -> float32 NCHW, with numpy's float32 rounding after each operation. */
export function normaliseToNCHW(rgb, height, width) {
  const plane = height * width;
  const out = new Float32Array(3 * plane);
  for (let i = 0; i < plane; i++) {
    for (let c = 0; c < 3; c++) {
      const x = Math.fround(rgb[i * 3 + c] * INV255);
      out[c * plane + i] = Math.fround(x - MEAN32[c]) / STD32[c];
    }
  }
  return out;
}

/** uint8 RGB (HWC) -> uint8 NCHW: the input of a `_u8in.tflite` file (it scales and normalises in its graph). */
export function pixelsToNCHW(rgb, height, width) {
  const plane = height * width;
  const out = new Uint8Array(3 * plane);
  for (let i = 0; i < plane; i++) {
    for (let c = 0; c < 3; c++) out[c * plane + i] = rgb[i * 3 + c];
  }
  return out;
}

/** RGBA pixels of a photo -> {rgb: uint8 H*W*3, tensor: Float32Array [1,3,H,W]} (the model input). */
export function preprocessRGBA(rgba, inW, inH, height, width, channels = 4) {
  const rgb = resizeBicubicPIL(rgba, inW, inH, width, height, channels);
  return { rgb, tensor: normaliseToNCHW(rgb, height, width) };
}

/**
 * Decode an image file (Blob) to 8-bit RGBA pixels the way PIL sees them: EXIF orientation applied, embedded colour
 * profiles ignored (PIL does not apply them either), no alpha premultiplication where the browser allows it.
 */
export async function decodeImage(blob) {
  let bitmap;
  try {
    bitmap = await createImageBitmap(blob, {
      colorSpaceConversion: 'none', premultiplyAlpha: 'none', imageOrientation: 'from-image',
    });
  } catch (e) {
    throw new Error(`could not decode ${blob.name || 'the image'} (${blob.type || 'unknown type'}): ` +
      `${e && e.message ? e.message : e}. Use a PNG, JPEG, WebP, GIF or BMP file.`);
  }
  return bitmapToRGBA(bitmap);
}

/** Any drawable (ImageBitmap, <video>, <canvas>) -> {data: RGBA, width, height, source}. */
export function bitmapToRGBA(source, width = source.width, height = source.height) {
  if (!width || !height) throw new Error('the image has no pixels (0 x 0)');
  const canvas = document.createElement('canvas');
  canvas.width = width;
  canvas.height = height;
  const ctx = canvas.getContext('2d', { willReadFrequently: true, colorSpace: 'srgb' });
  ctx.drawImage(source, 0, 0, width, height);
  return { data: ctx.getImageData(0, 0, width, height).data, width, height, source };
}
