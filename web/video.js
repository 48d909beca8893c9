// Webcam helpers: a frames-per-second meter and temporal smoothing of the depth map.

/** Exponential moving average of normalised depth maps: out = alpha * next + (1 - alpha) * prev, per pixel, computed
 * in float64 and stored as float32 (a test replays it in numpy bit for bit). alpha = weight of the new frame: 1 = no
 * smoothing; smaller = steadier but slower to follow motion. Without a usable prev (first frame, other size) -> next. */
export function emaStep(prev, next, alpha) {
  if (!prev || prev.length !== next.length) return Float32Array.from(next);
  const keep = 1 - alpha;
  const out = new Float32Array(next.length);
  for (let i = 0; i < next.length; i++) out[i] = alpha * next[i] + keep * prev[i];
  return out;
}

/** Frames per second over the frames shown in the last `windowMs` (at least the last two frames). */
export class FpsMeter {
  constructor(windowMs = 3000) {
    this.windowMs = windowMs;
    this.times = [];
    this.frames = 0;
  }

  /** Record a frame shown at time t (ms, performance.now()); returns the current rate or null before two frames. */
  tick(t) {
    this.frames += 1;
    this.times.push(t);
    while (this.times.length > 2 && t - this.times[0] > this.windowMs) this.times.shift();
    return this.fps();
  }

  fps() {
    const n = this.times.length;
    if (n < 2) return null;
    return ((n - 1) * 1000) / (this.times[n - 1] - this.times[0]);
  }
}
