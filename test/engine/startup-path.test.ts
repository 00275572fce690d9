import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { buildServe, bundle, metafile } from '../../scripts/build-serve.mjs';

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
  inputs: Record<string, { imports: Array<{ path: string; kind: string; original?: string }> }>;
  outputs: Record<string, { imports: Array<{ path: string; kind: string; external?: boolean }>; inputs: Record<string, unknown> }>;
}

describe('the bundle npm run serve runs (out/serve)', () => {
  it('loads no package before its first answer that the engine can load at first use', async () => {
    await buildServe();
    const meta = JSON.parse(readFileSync(metafile, 'utf8')) as Metafile;
    // The entry and every chunk it imports statically: what Node loads before the entry's first line runs.
    const entry = Object.keys(meta.outputs).find((output) => bundle.endsWith(output))!;
    const loaded = new Set<string>();
    for (const queue = [entry]; queue.length > 0;) {
      const output = queue.pop()!;
      if (loaded.has(output)) continue;
      loaded.add(output);
      for (const i of meta.outputs[output]!.imports) if (i.kind === 'import-statement' && meta.outputs[i.path]) queue.push(i.path);
    }
    const packages = new Set<string>();
    for (const output of loaded) {
      for (const input of Object.keys(meta.outputs[output]!.inputs).filter((path) => path.startsWith('src/'))) {
        for (const i of meta.inputs[input]!.imports.filter((i) => i.kind === 'import-statement')) {
          const specifier = i.original ?? i.path;
          if (!specifier.startsWith('.') && !specifier.startsWith('node:')) packages.add(/^(@[^/]+\/)?[^/]+/.exec(specifier)![0]);
        }
      }
    }
    expect([...packages].filter((p) => !ON_THE_WAY_TO_THE_FIRST_ANSWER.includes(p)).sort()).toEqual([]);
  }, 120_000);
});
