import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const CODE_CACHE = join(import.meta.dirname, '../../scripts/code-cache.mjs');

/**
 * scripts/code-cache.mjs runs the bundle `npm run serve` starts from V8's code cache. Each run here is a Node of its
 * own, as each start is: it runs a small CommonJS module through runWithCodeCache and prints what became of the cache
 * and what the module printed.
 */
describe('the engine bundle run from V8\'s code cache (scripts/code-cache.mjs)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-code-cache-'));
  const file = join(dir, 'bundle.cjs');
  const cacheFile = `${file}.v8-cache`;
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * A module of `answer`'s length whatever the answer (V8 checks a cache's source only by its length), which exports
   * `started` as the engine's entry does when given one.
   */
  const writeModule = (answer: string, started = '') => {
    const temporary = `${file}.tmp`;
    writeFileSync(temporary, [
      `const { basename } = require('node:path');`,
      `function work(n) { let sum = 0; for (let i = 0; i < n; i++) sum += i % 7; return sum; }`,
      `console.log(JSON.stringify({ answer: ${JSON.stringify(answer)}, file: basename(__filename), sum: work(1000), exported: typeof module.exports }));`,
      started && `exports.started = ${started};`,
    ].join('\n'));
    // As the build does: a new file renamed over the old one.
    renameSync(temporary, file);
  };
  /** One run in a Node of its own; `whileRunning` is code that runs 100 ms into it (its output is the last line). */
  const run = (whileRunning = '', failure = '') => {
    const result = spawnSync(process.execPath, ['--input-type=module', '-e', `
      const { runWithCodeCache } = await import(${JSON.stringify(CODE_CACHE)});
      const { existsSync } = await import('node:fs');
      console.log(runWithCodeCache(${JSON.stringify(file)}));
      setTimeout(() => { ${whileRunning} }, 100);`], { encoding: 'utf8' });
    if (failure) expect(result.stderr).toContain(failure);
    else expect(result.stderr).toBe('');
    const [printed, cache, during] = result.stdout.trim().split('\n');
    return { cache, printed: JSON.parse(printed!), during };
  };

  it('compiles the first run, caches it once it has run, and runs every later one from the cache', () => {
    writeModule('first');
    expect(run()).toMatchObject({ cache: 'none', printed: { answer: 'first', file: 'bundle.cjs', sum: 2997, exported: 'object' } });
    expect(statSync(cacheFile).size).toBeGreaterThan(100);
    expect(run()).toMatchObject({ cache: 'used', printed: { answer: 'first', file: 'bundle.cjs', sum: 2997, exported: 'object' } });
    expect(run().cache).toBe('used');
  });

  it('never runs a rebuilt module from the old module\'s cache, even at the same length', () => {
    writeModule('first');
    run();
    expect(run().cache).toBe('used');
    writeModule('other');
    expect(run()).toMatchObject({ cache: 'none', printed: { answer: 'other', file: 'bundle.cjs', sum: 2997, exported: 'object' } });
    expect(run()).toMatchObject({ cache: 'used', printed: { answer: 'other', file: 'bundle.cjs', sum: 2997, exported: 'object' } });
  });

  it('runs from source when V8 refuses the cache, and writes a good one', () => {
    writeModule('first');
    run();
    // The cache's first line names the module it was made from; what follows is V8's. Garbled, V8 refuses it.
    const cache = readFileSync(cacheFile);
    const body = cache.indexOf(0x0a) + 1;
    cache.fill(0x55, body + 16);
    writeFileSync(cacheFile, cache);
    expect(run()).toMatchObject({ cache: 'rejected', printed: { answer: 'first', file: 'bundle.cjs', sum: 2997, exported: 'object' } });
    expect(run().cache).toBe('used');
  });

  it('writes the cache once the module has started, and none when its start fails', () => {
    rmSync(cacheFile, { force: true });
    writeModule('first', 'new Promise((resolve) => setTimeout(resolve, 300))');
    expect(run('console.log(existsSync(' + JSON.stringify(cacheFile) + '))')).toMatchObject({ cache: 'none', during: 'false' });
    expect(run().cache).toBe('used');
    rmSync(cacheFile, { force: true });
    writeModule('first', 'Promise.reject(new Error("could not start"))');
    // The failure is Node's to report, as an uncaught error: never swallowed by the cache's wait.
    expect(run('console.log(existsSync(' + JSON.stringify(cacheFile) + '))', 'could not start')).toMatchObject({ cache: 'none' });
    expect(existsSync(cacheFile)).toBe(false);
  });
});
