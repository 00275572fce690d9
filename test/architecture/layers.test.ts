import { createRequire } from 'node:module';
import { join } from 'node:path';
import { cruise, type ICruiseResult } from 'dependency-cruiser';
import { describe, expect, it } from 'vitest';

/*
 * The layer rules of DESIGN.md run in `npm run lint` through dependency-cruiser. These tests prove the rules can
 * fail: a fixture tree shaped like src/ breaks each rule once, and the real src/ breaks none.
 */

const root = join(import.meta.dirname, '..', '..');
const config = createRequire(import.meta.url)(join(root, '.dependency-cruiser.cjs'));

async function violations(baseDir: string): Promise<string[]> {
  const result = await cruise(['src'], {
    ...config.options,
    validate: true,
    ruleSet: { forbidden: config.forbidden },
    baseDir,
    tsConfig: { fileName: join(root, 'tsconfig.json') },
  });
  const output = result.output as ICruiseResult;
  return output.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
}

describe('the architecture rules', () => {
  it('fail on a cycle, fleet importing services, I/O in domain, a route importing a store (types too), the renderer importing the engine, and a protocol module importing the engine', async () => {
    const found = await violations(join(import.meta.dirname, 'fixtures'));
    expect(found).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^no-cycles: src\/main\/engine\/services\/(a|b)\.ts/),
        'fleet-below-services: src/main/engine/fleet/phone.ts -> src/main/engine/services/a.ts',
        expect.stringMatching(/^domain-(is-pure|no-io-builtins): src\/main\/engine\/domain\/rule\.ts -> (node:)?fs$/),
        'clients-not-into-main: src/renderer/page.ts -> src/main/engine/fleet/phone.ts',
        'routes-call-services-not-stores: src/main/engine/api/routes/things.ts -> src/main/engine/store/rows.ts',
        'protocols-stand-alone: src/protocols/adb/wire.ts -> src/main/engine/fleet/phone.ts',
      ]),
    );
  });

  it('hold for src/', async () => {
    expect(await violations(root)).toEqual([]);
  });
});
