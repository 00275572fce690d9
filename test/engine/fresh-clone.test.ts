// The newcomer's path, from `git clone` on: `npm run serve` installs node_modules itself (one line saying so, and no
// npm warning a newcomer has to judge) and answers /health; `npm test` then passes without installing again.
//
// It compiles better-sqlite3 (npm ci takes 2 to 4 minutes on 2 cores), so it runs under CI=true or with
// BENCHTOP_FRESH_CLONE=1, and is skipped loudly otherwise. The clone runs only a few test files (BENCHTOP_FRESH_CLONE_TESTS,
// passed to vitest through `npm test -- <files>`): the whole suite already runs here.
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const ENABLED = process.env.CI === 'true' || process.env.BENCHTOP_FRESH_CLONE === '1';
const SUBSET = (process.env.BENCHTOP_FRESH_CLONE_TESTS ?? 'test/engine/serve.test.ts test/engine/fresh-clone-without-adb.test.ts').split(/\s+/).filter(Boolean);
// Electron 45 and its download tooling declare Node >= 22.12, for fetching the Electron binary `npm start` runs; the
// engine and the tests run on Node 20.19 (README, Prerequisites). No other package may warn.
const ELECTRON_TOOLING = ['electron', '@electron/get', '@electron-internal/extract-zip'];

if (!ENABLED) console.warn('SKIPPING the fresh-clone test (it installs from scratch for minutes): set BENCHTOP_FRESH_CLONE=1, or CI=true.');

const work = mkdtempSync(join(tmpdir(), 'benchtop-fresh-clone-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

/**
 * The environment of a newcomer's shell: none of the variables this run's npm and vitest set (an npm_package_* or
 * VITEST_* from here would steer the clone's npm and vitest). The user npmrc loses only `nodedir`, which this
 * machine's npm config carried for node-gyp: npm 11 warns about it, and the project no longer needs it.
 */
function newcomerEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !/^(npm_|VITEST|NODE_ENV$)/.test(key)));
  const userNpmrc = process.env.NPM_CONFIG_USERCONFIG ?? join(homedir(), '.npmrc');
  const npmrc = join(work, 'npmrc');
  const lines = existsSync(userNpmrc) ? readFileSync(userNpmrc, 'utf8').split('\n') : [];
  writeFileSync(npmrc, lines.filter((line) => !/^\s*nodedir\s*=/.test(line)).join('\n'));
  return { ...env, NPM_CONFIG_USERCONFIG: npmrc };
}

interface Run {
  output: () => string;
  exited: Promise<number | null>;
  /** Ends the npm process and the commands it started (its own process group). */
  stop: () => void;
}

function npm(args: string[], cwd: string, env: NodeJS.ProcessEnv): Run {
  const child = spawn('npm', args, { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout.on('data', (d) => (text += d));
  child.stderr.on('data', (d) => (text += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { output: () => text, exited, stop: () => process.kill(-child.pid!, 'SIGTERM') };
}

async function firstHealth(run: Run): Promise<void> {
  const deadline = Date.now() + 8 * 60_000;
  for (;;) {
    const url = /serving (http:\/\/\S+\/api\/v1)/.exec(run.output())?.[1];
    if (url) {
      const reply = await fetch(`${url}/health`).catch(() => undefined);
      if (reply?.status === 200) return;
    }
    if (Date.now() > deadline) throw new Error(`npm run serve did not answer /health in 8 minutes:\n${run.output()}`);
    await Promise.race([new Promise((r) => setTimeout(r, 200)), run.exited.then((code) => {
      throw new Error(`npm run serve exited (${code}) before answering /health:\n${run.output()}`);
    })]);
  }
}

describe.skipIf(!ENABLED)('from a fresh clone', () => {
  it('npm run serve installs first and answers /health; npm test then passes without installing again', async () => {
    const clone = join(work, 'benchtop');
    const env = newcomerEnv();
    const started = Date.now();
    execFileSync('git', ['clone', '--quiet', ROOT, clone]);
    // The Android fleet is off so that no adb server outlives the test; the fleet plays no part in the install.
    const serve = npm(['run', 'serve'], clone, { ...env, BENCHTOP_DATA_DIR: join(work, 'data'), BENCHTOP_PORT: '0', BENCHTOP_ADB: 'off' });
    try {
      await firstHealth(serve);
    } finally {
      serve.stop();
    }
    const seconds = (Date.now() - started) / 1000;
    console.log(`fresh clone: from git clone to the first /health answer in ${seconds.toFixed(0)} s`);

    const lines = serve.output().split('\n');
    expect(lines.filter((line) => line.includes('npm ci'))[0]).toMatch(/^node_modules is missing: installing the locked dependencies with npm ci/);
    const warnings = lines.filter((line) => /^npm warn/i.test(line));
    expect(warnings.filter((line) => !line.startsWith('npm warn EBADENGINE'))).toEqual([]);
    const engineWarned = warnings.map((line) => /package: '(@?[^@']+)@/.exec(line)?.[1]).filter(Boolean);
    expect(engineWarned.filter((name) => !ELECTRON_TOOLING.includes(name!))).toEqual([]);
    await serve.exited;

    const test = npm(['test', '--', ...SUBSET], clone, env);
    const code = await test.exited;
    expect(code, test.output()).toBe(0);
    expect(test.output()).not.toContain('installing the locked dependencies');
    expect(stripVTControlCharacters(test.output())).toMatch(new RegExp(`Test Files\\s+${SUBSET.length} passed`));
  }, 15 * 60_000);
});
