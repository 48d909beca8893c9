// The playground's runtimes, in the order of the Runtime list. Adding one = a file here with the shape litert.js
// describes (its default export) and one entry below; the page then lists its manifest files (by their `format`),
// offers it under Runtime and runs it with the page's backend rules. The first one starts with the page and its wasm
// thread count is the others'.

import litert from './litert.js';
import ort from './ort.js';
import tjs from './tjs.js';

export const RUNTIMES = [litert, ort, tjs];
export const RT = Object.fromEntries(RUNTIMES.map((rt) => [rt.id, rt]));   // id -> runtime
