// web/manifest.js's pure helpers in Node (no browser). `node --test tests/js/manifest_test.mjs`
// (tests/test_playground.py runs it with files_test.mjs).

import assert from 'node:assert/strict';
import test from 'node:test';

import { secondOutputOf } from '../../web/manifest.js';

const run = (n, ...more) => Object.assign(new Float32Array(n), { more: more.map((v) => new Float32Array(n).fill(v)) });
const entry = (...roles) => ({ outputs: roles.map((role, i) => ({ role, name: `output_${i}` })) });

test('a Depth Anything 3 file shows its confidence, a Mono/Metric-Large file its sky, in the file\'s order', () => {
  const y = run(4, 2);
  assert.deepEqual(secondOutputOf(entry('depth', 'confidence'), y), { role: 'confidence', map: y.more[0] });
  assert.deepEqual(secondOutputOf(entry('depth', 'sky'), y), { role: 'sky', map: y.more[0] });
});

test('no second map: V2 (no outputs list, or depth alone), an unknown role, or a map of the wrong length', () => {
  assert.equal(secondOutputOf({}, run(4)), null);
  assert.equal(secondOutputOf(entry('depth'), run(4)), null);
  assert.equal(secondOutputOf(entry('depth', 'rays'), run(4, 1)), null);
  const short = Object.assign(new Float32Array(4), { more: [new Float32Array(3)] });
  assert.equal(secondOutputOf(entry('depth', 'sky'), short), null);
});
