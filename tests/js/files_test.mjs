// web/files.js in Node (no browser): SHA-256, the manifest check, download with progress, the Cache Storage rules.
// `node --test tests/js/files_test.mjs` (tests/test_playground.py runs it). Node >= 20: crypto.subtle, fetch's
// Response and ReadableStream are globals, as in the page; the cache and the network are fakes.

import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import test from 'node:test';

import { download, msg, openCache, pathSource, Refused, sha256hex, verifiedBytes, verify } from '../../web/files.js';

const enc = (s) => new TextEncoder().encode(s);
const sha = (b) => createHash('sha256').update(b).digest('hex');
const entryOf = (path, bytes) => ({ path, bytes: bytes.byteLength, sha256: sha(bytes) });
const URL0 = 'http://127.0.0.1:8000/release/m%20odel.tflite';

/** A fetch that answers `body` in chunks of `chunk` bytes (Content-Length: `length`, default the body's). */
function fakeFetch(body, { chunk = 3, length = body.byteLength, status = 200 } = {}) {
  const calls = [];
  const fn = async (url, init) => {
    calls.push({ url, init });
    if (status !== 200) return new Response('no', { status, statusText: 'Not Found' });
    let at = 0;
    const stream = new ReadableStream({
      pull(c) {
        if (at >= body.byteLength) c.close();
        else c.enqueue(body.slice(at, (at += chunk)));
      },
    });
    return new Response(stream, { headers: { 'Content-Length': String(length) } });
  };
  fn.calls = calls;
  return fn;
}

/** The subset of the Cache API verifiedBytes uses, in memory. */
function fakeCache() {
  const store = new Map();
  return {
    store,
    async match(key) { return store.has(key) ? new Response(store.get(key)) : undefined; },
    async put(key, res) { store.set(key, new Uint8Array(await res.arrayBuffer())); },
    async delete(req) { return store.delete(typeof req === 'string' ? req : req.url); },
    async keys() { return [...store.keys()].map((url) => ({ url })); },
  };
}

function recorder() {
  const log = { states: [], progress: [], warn: [], downloads: 0 };
  const hooks = { state: (s) => log.states.push(s), progress: (...a) => log.progress.push(a),
    warn: (t) => log.warn.push(t), downloaded: () => { log.downloads += 1; } };
  return { log, hooks };
}

test('sha256hex: known vectors; Refused without crypto.subtle', async () => {
  assert.equal(await sha256hex(enc('abc')),
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  assert.equal(await sha256hex(new Uint8Array(0)),
    'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  await assert.rejects(sha256hex(enc('abc'), null), (e) => e instanceof Refused && /crypto\.subtle is unavailable/.test(e.message));
});

test('verify: size first, then SHA-256; each refusal names the file and the copy', async () => {
  const b = enc('depth model bytes');
  const entry = entryOf('a/model.tflite', b);
  await verify(b, entry, 'download');
  await assert.rejects(verify(b.subarray(1), entry, 'download'), (e) => e instanceof Refused &&
    e.message.startsWith(`a/model.tflite (download) has ${b.byteLength - 1} bytes but manifest.json says ${b.byteLength}`));
  const changed = b.slice();
  changed[0] ^= 1;
  await assert.rejects(verify(changed, entry, 'Cache Storage copy'), (e) => e instanceof Refused &&
    e.message.startsWith(`SHA-256 mismatch for a/model.tflite (Cache Storage copy): expected ${entry.sha256}, got ` +
      `${sha(changed)}.`));
  await assert.rejects(verify(b, entry, 'download', null), Refused);
});

test('download: streams with progress, counts the download, refuses more bytes than the manifest says', async () => {
  const b = enc('0123456789abcdef');
  const entry = entryOf('m.onnx', b);
  const { log, hooks } = recorder();
  const f = fakeFetch(b);
  const got = await download(URL0, entry, hooks, f);
  assert.deepEqual([...got], [...b]);
  assert.equal(log.downloads, 1);
  assert.deepEqual(f.calls[0].init, { cache: 'no-store' });
  assert.deepEqual(log.progress.at(-1), [b.byteLength, b.byteLength, '0.00 / 0.00 MB downloaded']);
  await assert.rejects(download(URL0, { ...entry, bytes: 10 }, hooks, fakeFetch(b, { length: 10 })),
    (e) => e instanceof Refused && e.message === 'm.onnx is larger than manifest.json says (10 bytes): refusing to use it.');
  await assert.rejects(download(URL0, entry, {}, fakeFetch(b, { status: 404 })), /download of m\.onnx failed: HTTP 404/);
  await assert.rejects(download(URL0, entry, {}, async () => { throw new TypeError('offline'); }),
    /^Error: download of m\.onnx failed: offline$/);
});

test('verifiedBytes: network then cache; a bad cached copy is deleted and downloaded again', async () => {
  const b = enc('weights'.repeat(20));
  const entry = entryOf('m odel.tflite', b);
  const cache = fakeCache();
  const key = `${URL0}?sha256=${entry.sha256}`;
  cache.store.set(`${URL0}?sha256=${'0'.repeat(64)}`, enc('an older version of the same file'));
  const first = recorder();
  const r1 = await verifiedBytes(entry, URL0, { cache, hooks: first.hooks, fetchFn: fakeFetch(b) });
  assert.equal(r1.source, 'network');
  assert.deepEqual(first.log.states, ['downloading', 'verifying']);
  assert.deepEqual([...cache.store.keys()], [key]);          // stored under ?sha256=, the older version dropped
  const second = recorder();
  const r2 = await verifiedBytes(entry, URL0, { cache, hooks: second.hooks, fetchFn: () => assert.fail('fetched') });
  assert.equal(r2.source, 'cache');
  assert.deepEqual([...r2.bytes], [...b]);
  assert.deepEqual(second.log.states, ['verifying']);
  cache.store.get(key)[3] ^= 1;                              // the cached copy changes
  const third = recorder();
  const r3 = await verifiedBytes(entry, URL0, { cache, hooks: third.hooks, fetchFn: fakeFetch(b) });
  assert.equal(r3.source, 'network');
  assert.match(third.log.warn[0], /^SHA-256 mismatch for m odel\.tflite \(Cache Storage copy\).* The cached copy was deleted; downloading again\.$/);
  assert.deepEqual([...cache.store.get(key)], [...b]);
  const tampered = b.slice();
  tampered[0] ^= 1;
  await assert.rejects(verifiedBytes(entry, URL0, { fetchFn: fakeFetch(tampered) }), Refused);   // no cache: still checked
});

test('openCache: null without Cache Storage; a failure to open is a warning', async () => {
  assert.equal(await openCache({}, 'x', undefined), null);
  const { log, hooks } = recorder();
  assert.equal(await openCache(hooks, 'x', { open: async () => { throw new Error('quota'); } }), null);
  assert.deepEqual(log.warn, ['Cache Storage unavailable (quota): the model will be downloaded on every load.']);
});

test('pathSource: listed paths loaded once each, anything else null', async () => {
  const files = [{ path: 'config.json', bytes: 2, sha256: 'a'.repeat(64) }, { path: 'no-hash.json', bytes: 2 }];
  const loads = [];
  const src = pathSource(files, async (e) => { loads.push(e.path); return enc('{}'); });
  assert.deepEqual([...await src('config.json')], [...enc('{}')]);
  await src('config.json');
  assert.equal(await src('no-hash.json'), null);
  assert.equal(await src('onnx/model_q4.onnx'), null);
  assert.deepEqual(loads, ['config.json']);
});

test('msg: errors, LiteRT native error codes, anything else', () => {
  assert.equal(msg(new Error('x')), 'x');
  assert.equal(msg(7), 'LiteRT native error (code 7)');
  assert.equal(msg('plain'), 'plain');
});
