// Model files: SHA-256, the check against manifest.json, download with progress, Cache Storage. No DOM and no page
// state: the page passes `hooks` ({state, progress, warn, downloaded}, each optional) and the Cache it opened, so
// tests/js/files_test.mjs runs all of this in Node.

export const CACHE_NAME = 'edgedepth-models-v1';

/** A file refused by its checks (size, SHA-256, no crypto.subtle to check with): the message is shown as it is. */
export class Refused extends Error {}

/** One line of text for anything thrown (LiteRT.js throws bare numbers: its native error codes). */
export function msg(e) {
  if (e instanceof Error) return e.message || String(e);
  if (typeof e === 'number') return `LiteRT native error (code ${e})`;
  return String(e);
}

export function mb(n) { return (n / 1e6).toFixed(n < 1e7 ? 2 : 1); }

/** A manifest entry the page can check: a sha256 string and a byte count. */
export const verifiable = (f) => !!f && typeof f.sha256 === 'string' && Number.isFinite(f.bytes);

export function hex(digest) {
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** SHA-256 of `bytes` as lowercase hex; Refused without crypto.subtle (a page that is not a secure context). */
export async function sha256hex(bytes, subtle = globalThis.crypto?.subtle) {
  if (!subtle) {
    throw new Refused('crypto.subtle is unavailable (not a secure context): cannot verify the model, refusing to ' +
      'use it. Open the page via http://127.0.0.1:PORT/.');
  }
  return hex(await subtle.digest('SHA-256', bytes));
}

/** Resolves when `bytes` are the manifest's `entry` (size, then SHA-256), else Refused; `where` names the copy. */
export async function verify(bytes, entry, where, subtle = globalThis.crypto?.subtle) {
  if (bytes.byteLength !== entry.bytes) {
    throw new Refused(`${entry.path} (${where}) has ${bytes.byteLength} bytes but manifest.json says ${entry.bytes}: ` +
      'truncated or changed — refusing to use it.');
  }
  const got = await sha256hex(bytes, subtle);
  if (got !== entry.sha256) {
    throw new Refused(`SHA-256 mismatch for ${entry.path} (${where}): expected ${entry.sha256}, got ${got}. ` +
      'The file is corrupt or was changed after manifest.json was written — refusing to use it.');
  }
}

/** The bytes at `url` (entry: its manifest entry), streamed with hooks.progress(done, total, text); Refused as soon as
 * more arrive than the manifest says. Not verified here (verifiedBytes does that). */
export async function download(url, entry, hooks = {}, fetchFn = globalThis.fetch) {
  const progress = hooks.progress || (() => {});
  let res;
  try {
    res = await fetchFn(url, { cache: 'no-store' });
  } catch (e) {
    throw new Error(`download of ${entry.path} failed: ${msg(e)}`);
  }
  if (!res.ok) throw new Error(`download of ${entry.path} failed: HTTP ${res.status} ${res.statusText}`);
  hooks.downloaded?.();
  const total = Number(res.headers.get('Content-Length')) || entry.bytes;
  if (!res.body) {
    const bytes = new Uint8Array(await res.arrayBuffer());
    progress(bytes.byteLength, total, `${mb(bytes.byteLength)} MB`);
    return bytes;
  }
  const limit = Math.max(total, entry.bytes);
  const buf = new Uint8Array(limit);
  const reader = res.body.getReader();
  let received = 0;
  let last = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (received + value.byteLength > limit) {
      await reader.cancel();
      throw new Refused(`${entry.path} is larger than manifest.json says (${entry.bytes} bytes): refusing to use it.`);
    }
    buf.set(value, received);
    received += value.byteLength;
    const now = performance.now();
    if (now - last > 60) {
      last = now;
      progress(received, total, `${mb(received)} / ${mb(total)} MB`);
    }
  }
  progress(received, total, `${mb(received)} / ${mb(total)} MB downloaded`);
  return buf.subarray(0, received);
}

/** Cache Storage's `name` cache, or null where there is none (hooks.warn says why when opening it failed). */
export async function openCache(hooks = {}, name = CACHE_NAME, storage = globalThis.caches) {
  if (!storage) return null;
  try {
    return await storage.open(name);
  } catch (e) {
    hooks.warn?.(`Cache Storage unavailable (${msg(e)}): the model will be downloaded on every load.`);
    return null;
  }
}

/** {bytes, source} of `entry` at `url` (absolute), verified against manifest.json: from `cache` (re-verified, source
 * 'cache'; a bad copy is deleted and downloaded again) or downloaded and cached ('network'). The cache key is the URL
 * with ?sha256=; older versions of the same file are dropped. The same rules for every file of every runtime. */
export async function verifiedBytes(entry, url, { cache = null, hooks = {}, fetchFn = globalThis.fetch } = {}) {
  const state = hooks.state || (() => {});
  const key = new URL(`${url}?sha256=${entry.sha256}`).href;
  if (cache) {
    const hit = await cache.match(key);
    if (hit) {
      state('verifying');
      const bytes = new Uint8Array(await hit.arrayBuffer());
      hooks.progress?.(bytes.byteLength, entry.bytes, `${mb(bytes.byteLength)} MB from Cache Storage`);
      try {
        await verify(bytes, entry, 'Cache Storage copy');
        return { bytes, source: 'cache' };
      } catch (e) {
        if (!(e instanceof Refused)) throw e;
        await cache.delete(key);
        hooks.warn?.(`${e.message} The cached copy was deleted; downloading again.`);
      }
    }
  }
  state('downloading');
  const bytes = await download(url, entry, hooks, fetchFn);
  state('verifying');
  await verify(bytes, entry, 'download');
  if (cache) {
    try {
      await cache.put(key, new Response(bytes, { headers: { 'Content-Type': 'application/octet-stream' } }));
      const path = new URL(url).pathname;
      for (const req of await cache.keys()) {
        const u = new URL(req.url);
        if (u.pathname === path && req.url !== key) await cache.delete(req);
      }
    } catch (e) {
      hooks.warn?.(`Could not store ${entry.path} in Cache Storage (${msg(e)}); it will be downloaded next time.`);
    }
  }
  return { bytes, source: 'network' };
}

/** A file source for a runtime that asks for files by manifest path (transformers.js): path -> Promise of the bytes
 * `load(entry)` gives, null for a path the manifest does not list with a sha256 and size. Each path is loaded once. */
export function pathSource(files, load) {
  const done = new Map();
  return (path) => {
    if (!done.has(path)) {
      const entry = files.find((f) => f.path === path);
      done.set(path, verifiable(entry) ? load(entry) : Promise.resolve(null));
    }
    return done.get(path);
  };
}
