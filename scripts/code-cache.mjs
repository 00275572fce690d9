// Runs the engine bundle (CommonJS) with V8's code cache: compiling the bundle was the largest single part of the
// engine's start-up (about 30 ms of 220, docs/performance.md), and Node 20 caches no compiled code of its own. The
// first start after a build compiles as usual and, once the engine serves, writes what V8 compiled beside the bundle;
// every start after it reads that instead of parsing and compiling the same code again.
import { openSync, readFileSync, fstatSync, readSync, closeSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { randomUUID } from 'node:crypto';
import vm from 'node:vm';

/**
 * V8 checks that a cache was made by the same V8 with the same flags, but of the source only its length: a rebuilt
 * bundle of the same length would run with the old bundle's code. So the cache names the file it was made from
 * (inode, size and modification time; the build replaces the bundle by renaming a new file over it).
 */
const identity = (stat) => `${stat.ino}:${stat.size}:${stat.mtimeMs}\n`;

/** The cache made for exactly this bundle, or undefined. */
function cachedFor(cacheFile, key) {
  let data;
  try {
    data = readFileSync(cacheFile);
  } catch {
    return undefined;
  }
  const end = data.indexOf(0x0a);
  return end >= 0 && data.subarray(0, end + 1).toString('latin1') === key ? data.subarray(end + 1) : undefined;
}

const cacheFileOf = (file) => `${file}.v8-cache`;

/** Whether the cache beside `file` was made for it as it is now: what the next start of it would read. */
export const hasCodeCache = (file) => cachedFor(cacheFileOf(file), identity(statSync(file))) !== undefined;

function writeCache(cacheFile, key, script) {
  try {
    const temporary = `${cacheFile}.${randomUUID()}.tmp`;
    writeFileSync(temporary, Buffer.concat([Buffer.from(key, 'latin1'), script.createCachedData()]));
    renameSync(temporary, cacheFile);
  } catch {
    // A read-only checkout starts without a cache, as it would without this.
  }
}

/**
 * Runs `file`, a CommonJS module, as Node would require it, compiled from `${file}.v8-cache` when that was made for
 * it. Otherwise the cache is written once the promise the module exports as `started` resolves (straight away when
 * it exports none): a cache made straight after compiling holds little more than the top level, one made when the
 * engine serves holds every function its start ran, and one made later also what its requests ran, which every start
 * would then read. Returns what became of the cache: 'used', 'none' (there was none for this file) or 'rejected'
 * (V8 refused it: another Node, or other flags).
 */
export function runWithCodeCache(file) {
  const cacheFile = cacheFileOf(file);
  // The bundle's identity and its text from the same open file: a build renaming a new one over it meanwhile cannot
  // pair the old cache with the new text.
  const fd = openSync(file, 'r');
  const stat = fstatSync(fd);
  const text = Buffer.allocUnsafe(stat.size);
  for (let read = 0; read < stat.size;) read += readSync(fd, text, read, stat.size - read, read);
  closeSync(fd);
  const key = identity(stat);
  const cachedData = cachedFor(cacheFile, key);
  // Node's own CommonJS wrapper, on the first line, so that stack traces keep the bundle's line numbers.
  const wrapped = `(function (exports, require, module, __filename, __dirname) {${text.toString('utf8')}\n})`;
  const script = new vm.Script(wrapped, { filename: file, cachedData });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, dirname(file));
  const cache = !cachedData ? 'none' : script.cachedDataRejected ? 'rejected' : 'used';
  // A start that fails leaves no cache, and its failure is left for Node to report.
  if (cache !== 'used') Promise.resolve(module.exports.started).then(() => writeCache(cacheFile, key, script));
  return cache;
}
