import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, useEngine } from '../support/engine.js';

const CHROMIUM = '/usr/bin/chromium';
const ROOT = resolve(import.meta.dirname, '../..');

/** The reporter test drives Debian's Chromium: under CI its absence is a failure, elsewhere the suite is skipped loudly. */
function chromiumOrSkip(): boolean {
  if (existsSync(CHROMIUM)) return true;
  if (process.env.CI === 'true') throw new Error('chromium is missing: install the Debian package `chromium` (apt-get install -y chromium).');
  console.warn('SKIPPING the Playwright reporter test: chromium is not installed (apt-get install -y chromium).');
  return false;
}
const hasChromium = chromiumOrSkip();

/** A tiny Playwright project in a temp git repository: one passing test that takes a screenshot, traced. */
function project(): string {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-reporter-'));
  // The project resolves @playwright/test from this repository's packages.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  writeFileSync(join(dir, 'playwright.config.mjs'), `
export default {
  testDir: '.',
  reporter: [['line'], [${JSON.stringify(join(ROOT, 'src/reporter/playwright.ts'))}, { name: 'reporter smoke', tags: ['smoke'] }]],
  workers: 1,
  use: {
    browserName: 'chromium',
    trace: 'on',
    launchOptions: {
      executablePath: ${JSON.stringify(CHROMIUM)},
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
    },
  },
};
`);
  writeFileSync(join(dir, 'hello.spec.mjs'), `
import { test, expect } from '@playwright/test';
test('greets', async ({ page }, testInfo) => {
  await page.setContent('<h1>Hello from the lab</h1>');
  await expect(page.getByRole('heading')).toHaveText('Hello from the lab');
  const path = testInfo.outputPath('greeting.png');
  await page.screenshot({ path });
  await testInfo.attach('screenshot', { path, contentType: 'image/png' });
});
test.fixme('is not ready yet, so the run counts it as skipped', async () => {});
`);
  return dir;
}

/** Runs a command to its end; resolves to its exit code and its stdout and stderr together. */
function run(command: string, args: string[], cwd: string, env: Record<string, string> = {}): Promise<{ code: number | null; out: string }> {
  return new Promise((done) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => done({ code, out }));
  });
}

/** The run sees only the configuration the test gives it: not this machine's CI variables. */
const runPlaywright = (dir: string, env: Record<string, string>, args: string[] = []) =>
  run(process.execPath, [join(ROOT, 'node_modules/@playwright/test/cli.js'), 'test', '--config', join(dir, 'playwright.config.mjs'), ...args], dir, {
    CI: '',
    GITHUB_SHA: '',
    GITHUB_REF_NAME: '',
    GITHUB_HEAD_REF: '',
    BENCHTOP_RUN_NAME: '',
    BENCHTOP_BUILD: '',
    GITHUB_RUN_ID: '',
    CI_PIPELINE_ID: '',
    BUILDKITE_BUILD_NUMBER: '',
    CIRCLE_WORKFLOW_ID: '',
    BUILD_BUILDID: '',
    BUILD_NUMBER: '',
    ...env,
  });

describe.skipIf(!hasChromium)('the Playwright reporter', () => {
  let key: string;
  let dir: string;

  const lab = useEngine();

  beforeAll(async () => {
    key = await lab.c.createKey(lab.owner);
    dir = project();
    const author = { GIT_AUTHOR_NAME: 'Ada Lovelace', GIT_AUTHOR_EMAIL: 'ada@lab.test', GIT_COMMITTER_NAME: 'Ada Lovelace', GIT_COMMITTER_EMAIL: 'ada@lab.test' };
    for (const args of [['init', '-q', '-b', 'feature/reporter'], ['add', 'playwright.config.mjs', 'hello.spec.mjs'], ['commit', '-q', '-m', 'Add the smoke test']]) {
      const r = await run('git', args, dir, author);
      if (r.code !== 0) throw new Error(`git ${args.join(' ')}: ${r.out}`);
    }
  }, 60_000);
  afterAll(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('files the run with its stats, git info, screenshot, trace and CI build, and prints the result\'s URL and its build\'s', async () => {
    // GitHub Actions' run of the whole workflow: every job's run of it is one build.
    const pw = await runPlaywright(dir, { BENCHTOP_URL: lab.t.api.replace(/\/api\/v1$/, ''), BENCHTOP_API_KEY: key, GITHUB_RUN_ID: '4242' });
    expect(pw.code, pw.out).toBe(0);
    const url = /\[benchtop\] Test result: (\S+)/.exec(pw.out)?.[1];
    expect(url, pw.out).toMatch(new RegExp(`^${lab.t.api}/test-results/[0-9a-f-]{36}$`));
    expect(pw.out).toContain(`[benchtop] The build's runs: ${lab.t.api.replace(/\/api\/v1$/, '')}/test-results?tag=build%3A4242`);

    const c = client(lab.t.api);
    const result = (await c.call('GET', url!.slice(lab.t.api.length), { token: key })).body;
    const sha = (await run('git', ['rev-parse', 'HEAD'], dir)).out.trim();
    expect(result).toMatchObject({
      name: 'reporter smoke',
      status: 'passed',
      tags: ['smoke', 'build:4242'],
      userAgent: expect.stringMatching(/^benchtop-playwright-reporter\//),
      git: { commitSha: sha, branch: 'feature/reporter', authorName: 'Ada Lovelace', commitMessage: 'Add the smoke test' },
      stats: { expected: 1, unexpected: 0, flaky: 0, skipped: 1 },
    });
    expect(result.stats.duration).toBeGreaterThan(0);
    expect(Date.parse(result.stats.startTime)).toBe(Date.parse(result.startedAt));
    expect(Date.parse(result.finishedAt)).toBeGreaterThanOrEqual(Date.parse(result.startedAt));

    const assets = (await c.call('GET', `/test-results/${result.id}/assets`, { token: key })).body.data as Array<{ id: string; name: string; contentType: string; size: number }>;
    const screenshot = assets.find((a) => a.name === 'hello.spec.mjs › greets - screenshot.png');
    const trace = assets.find((a) => a.name === 'hello.spec.mjs › greets - trace.zip');
    expect(screenshot, JSON.stringify(assets)).toMatchObject({ contentType: 'image/png' });
    expect(trace, JSON.stringify(assets)).toBeDefined();
    const png = await fetch(`${lab.t.api}/test-results/${result.id}/assets/${screenshot!.id}`, { headers: { authorization: `Bearer ${key}` } });
    const bytes = Buffer.from(await png.arrayBuffer());
    expect(bytes.subarray(1, 4).toString('latin1')).toBe('PNG');
    expect(bytes.length).toBe(screenshot!.size);
  }, 120_000);

  // What the reporter does with a lab it cannot use does not depend on the tests it reports: these runs take only the
  // skipped test, which starts no browser, each with its own output dir so that they can run at once.
  const withoutBrowser = (env: Record<string, string>, name: string) =>
    runPlaywright(dir, env, ['--grep', 'is not ready', '--output', join(dir, `out-${name}`)]);

  it('a lab that cannot be reached, or is not named, or refuses the key, is a warning, never a failed run', async () => {
    const [unreachable, missing, refused] = await Promise.all([
      withoutBrowser({ BENCHTOP_URL: 'http://127.0.0.1:9', BENCHTOP_API_KEY: key }, 'unreachable'),
      withoutBrowser({ BENCHTOP_URL: '', BENCHTOP_API_KEY: '' }, 'missing'),
      withoutBrowser({ BENCHTOP_URL: lab.t.api, BENCHTOP_API_KEY: 'mob_not-a-key' }, 'refused'),
    ]);
    expect(unreachable.code, unreachable.out).toBe(0);
    expect(unreachable.out).toContain('[benchtop] Warning: the run was not reported');
    expect(missing.code, missing.out).toBe(0);
    expect(missing.out).toContain('[benchtop] Warning: set BENCHTOP_URL and BENCHTOP_API_KEY');
    expect(refused.code, refused.out).toBe(0);
    expect(refused.out).toMatch(/\[benchtop\] Warning: the run was not reported: the lab answered 401/);
  }, 120_000);
});
