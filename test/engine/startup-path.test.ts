import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildServe, metafile } from '../../scripts/build-serve.mjs';

/**
 * What the engine's own modules may load on the way to its first answer: the packages it needs to serve the API at
 * all. Anything else waits for its first use (docs/performance.md, "What start-up does, and what waits"): undici,
 * imported at the top of Appium's client, and adbkit with Bluebird and node-forge, pulled in by the iPhone's address
 * helpers, had taken start-up from 2.4x to 2.8-3.1x of a bare Fastify server's.
 */
const ON_THE_WAY_TO_THE_FIRST_ANSWER = [
  'fastify', '@fastify/fast-json-stringify-compiler', '@fastify/multipart', '@fastify/static', '@fastify/swagger', '@fastify/websocket',
  'ajv', 'ajv-formats', 'typebox', 'better-sqlite3', 'jose', 'eventsource-parser',
];

interface Metafile {
  inputs: Record<string, { imports: Array<{ path: string; kind: string; external?: boolean; original?: string }> }>;
}

describe('the bundle npm run serve runs (out/serve)', () => {
  it('loads no package before its first answer that the engine can load at first use', async () => {
    await buildServe();
    const meta = JSON.parse(readFileSync(metafile, 'utf8')) as Metafile;
    // The bundle is CommonJS: a module that only import() reaches is initialized at that import, so what runs
    // before the entry's first line is what the entry's static imports reach, and from our sources on, the packages
    // they import statically.
    const entry = 'src/main/serve.ts';
    expect(meta.inputs[entry], `${entry} is the bundle's entry`).toBeDefined();
    const reached = new Set<string>();
    const packages = new Set<string>();
    for (const queue = [entry]; queue.length > 0;) {
      const input = queue.pop()!;
      if (reached.has(input)) continue;
      reached.add(input);
      for (const i of meta.inputs[input]!.imports.filter((i) => i.kind === 'import-statement')) {
        const specifier = i.original ?? i.path;
        if (!specifier.startsWith('.') && !specifier.startsWith('node:')) packages.add(/^(@[^/]+\/)?[^/]+/.exec(specifier)![0]);
        else if (i.path.startsWith('src/')) queue.push(i.path);
      }
    }
    // The walk itself went somewhere: the engine's modules and the packages of its HTTP server.
    expect(reached.size).toBeGreaterThan(100);
    expect(packages).toContain('fastify');
    expect([...packages].filter((p) => !ON_THE_WAY_TO_THE_FIRST_ANSWER.includes(p)).sort()).toEqual([]);
  }, 120_000);

  it('stops a start whose setting does not parse with one line and exit code 1 (the bundle runs through scripts/code-cache.mjs, which must not swallow it)', async () => {
    await buildServe();
    const dataDir = mkdtempSync(join(tmpdir(), 'benchtop-bad-setting-'));
    try {
      // Twice, the same both times: a start that failed leaves nothing that changes the next.
      for (let i = 0; i < 2; i++) {
        const start = spawnSync(process.execPath, ['scripts/serve.mjs'], {
          cwd: join(import.meta.dirname, '../..'),
          encoding: 'utf8',
          env: { ...process.env, BENCHTOP_DATA_DIR: dataDir, BENCHTOP_PORT: 'notaport', BENCHTOP_ADB: 'off' },
          timeout: 30_000,
        });
        expect(start.status).toBe(1);
        expect(start.stderr.trim()).toBe('Benchtop could not start: BENCHTOP_PORT must be a non-negative integer, got "notaport"');
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
