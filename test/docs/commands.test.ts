/**
 * The docs' commands (curl, and mobilecli), run as written against a demo engine (`npm run serve` with simulated
 * phones and an iPhone), so that the docs cannot drift from the code. Each ```sh block marked `<!-- run: NAME -->` runs in bash, in page order,
 * with the variables its page's `<!-- env -->` block names supplied from the engine, and the variables earlier blocks
 * of the page assigned; CHECKS[NAME] then asserts what the docs say the block answers. docs/README.md tells writers
 * how to mark a block.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../../src/sim/android/apk.js';
import { runAdb, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { mobilecli, MOBILECLI } from '../support/mobile-next.js';
import { freePort } from '../support/remote.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';
import { assignedVariables, shellBlocks, type ShellBlock } from './doc-blocks.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const APPIUM = createRequire(import.meta.url).resolve('appium/index.js');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const BLOCKS = new Map(PAGES.map((page) => [page, shellBlocks(join(ROOT, page), page)]));
const PASSWORD = 'docs-owner-password';
/** The app the docs upload, as the fixture in the directory the commands run in. */
const APP = 'com.example.benchtopdocs';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** What one block printed and assigned. */
interface BlockRun {
  stdout: string;
  /** Each line of stdout that is a JSON value: one per curl, since each curl's answer ends its own line here. */
  json: any[];
  /** The variables the block and the blocks of its page before it assigned. */
  vars: Record<string, string>;
  /** The directory the block ran in, with the files it wrote. */
  dir: string;
}

const CHECKS: Record<string, (r: BlockRun) => void> = {
  'login-and-key': (r) => {
    expect(r.vars.TOKEN).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(r.vars.KEY).toMatch(/^mob_/);
  },
  sessions: (r) => {
    expect(r.vars.S).toMatch(UUID);
    const [list] = r.json;
    expect(list.object).toBe('list');
    expect(list.data[0]).toMatchObject({ id: r.vars.S, devices: [], instances: [] });
  },
  allocate: (r) => {
    const [allocation] = r.json;
    expect(allocation.status).toBe('provisioning');
    expect(allocation.allocationId).toBe(allocation.id);
    expect(r.vars.SERIAL).toMatch(/^127\.0\.0\.1:\d+$/);
  },
  drive: (r) => {
    expect(readFileSync(join(r.dir, 'screen.png')).subarray(1, 4).toString()).toBe('PNG');
    const [elements, tap, info] = r.json;
    expect(elements.data.length).toBeGreaterThan(0);
    expect(elements.data[0].bounds).toMatchObject({ x: expect.any(Number), width: expect.any(Number) });
    expect(tap).toEqual({ ok: true });
    expect(info).toMatchObject({ serial: r.vars.SERIAL, platform: 'android', model: expect.any(String), abi: expect.any(String) });
    expect(info.screen.width).toBeGreaterThan(0);
    expect(info.battery.level).toBeGreaterThan(0);
  },
  fleet: (r) => {
    const [fleet] = r.json;
    expect(fleet.object).toBe('list');
    expect(new Set(fleet.data.map((p: { platform: string }) => p.platform))).toEqual(new Set(['android', 'ios']));
    expect(fleet.data.every((p: { model: unknown }) => typeof p.model === 'string')).toBe(true);
  },
  chat: (r) => {
    expect(r.vars.C).toMatch(UUID);
    const [done] = r.json;
    expect(done).toMatchObject({ role: 'assistant', status: 'completed' });
    expect(done.toolCalls.map((t: { name: string }) => t.name)).toContain('launch_app');
    expect(r.stdout).toMatch(/^event: assistant\.message\.delta$/m);
    expect(r.stdout).toMatch(/^event: execution\.completed$/m);
  },
  upload: (r) => {
    expect(r.vars.F).toMatch(UUID);
    const [file, apps] = r.json;
    expect(file).toMatchObject({ id: r.vars.F, status: 'ready', platform: 'android', bundleId: APP, filename: 'app-debug.apk' });
    expect(apps.data.find((a: { bundleId: string }) => a.bundleId === APP).files).toBeDefined();
  },
  'declared-upload': (r) => {
    const upload = JSON.parse(r.vars.UPLOAD!);
    expect(upload).toMatchObject({ status: 'pendingUpload', upload: { method: 'PUT' } });
    const completed = r.json.at(-1);
    expect(completed.id).toBe(upload.id);
    expect(['processing', 'ready']).toContain(completed.status);
  },
  install: (r) => {
    const [installed, allocation] = r.json;
    expect(installed).toMatchObject({ status: 'installed', bundleId: APP, launched: true });
    expect(allocation.status).toBe('provisioning');
  },
  release: (r) => {
    const [released, named, ended] = r.json;
    expect(['releasing', 'released']).toContain(released.status);
    expect(named).toMatchObject({ id: r.vars.S, name: 'first walk-through' });
    expect(ended.id).toBe(r.vars.S);
  },
  paging: (r) => {
    const [created, page] = r.json;
    expect(r.vars.CURSOR).toMatch(/^\d{4}-\d\d-\d\dT/);
    // The second page holds the session created before the one just made.
    expect(page.data).toHaveLength(1);
    expect(page.data[0].id).not.toBe(created.id);
    expect(page.nextCursor).toBeUndefined();
  },
  'test-result': (r) => {
    expect(r.vars.R).toMatch(UUID);
    const [asset, finished, assets] = r.json;
    expect(asset).toMatchObject({ name: 'trace.zip', size: 22 });
    expect(finished).toMatchObject({ id: r.vars.R, name: 'e2e', status: 'passed', git: { commitSha: '0123abc', branch: 'main' } });
    expect(finished.stats).toMatchObject({ expected: 42, flaky: 1 });
    expect(assets.data.map((a: { id: string }) => a.id)).toEqual([asset.id]);
  },
  'lan-sharing': (r) => {
    const [settings] = r.json;
    expect(settings.lanSharing).toMatchObject({ enabled: true, urls: expect.arrayContaining([expect.stringMatching(/^https:\/\//)]) });
    expect(settings.lanSharing.certificateSha256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(settings.quotas).toEqual({ devices: 8, instances: 2 });
  },
  signup: (r) => {
    const [signedUp, settings] = r.json;
    expect(signedUp).toMatchObject({ token: expect.any(String), user: { email: 'dana@example.com' } });
    expect(settings.signupOpen).toBe(false);
  },
  'lab-settings': (r) => {
    const [settings] = r.json;
    expect(settings).toMatchObject({ signupOpen: true, secretStore: 'file', quotas: { devices: 5, instances: 2 } });
    expect(settings.adb).toMatchObject({ enabled: true, host: '127.0.0.1' });
    expect(settings.usbmuxd.enabled).toBe(true);
  },
  iphone: (r) => {
    const [allocation, launched, home] = r.json;
    expect(allocation.status).toBe('provisioning');
    expect(r.vars.UDID).toMatch(/^[0-9A-F]{8}-[0-9A-F]{16}$|^[0-9a-f]{40}$/);
    expect([launched, home]).toEqual([{ ok: true }, { ok: true }]);
  },
  'iphone-files': (r) => {
    const [apps, listing, ended] = r.json;
    expect(apps.data, r.stdout).toEqual([{ packageName: 'com.benchtop.demo.fieldnotes', name: 'Field Notes' }]);
    expect(listing.data.map((e: { name: string }) => e.name), r.stdout).toEqual(['fixture.json', 'Welcome.txt']);
    expect(readFileSync(join(r.dir, 'from-iphone.json'))).toEqual(readFileSync(join(r.dir, 'fixture.json')));
    expect(ended.id).toBe(r.vars.S);
  },
  'mcp-initialize': (r) => {
    const [reply] = r.json;
    expect(reply).toMatchObject({ jsonrpc: '2.0', id: 1, result: { serverInfo: { name: 'benchtop' }, capabilities: { tools: {} } } });
  },
  'readme-demo': (r) => {
    expect(r.vars.TOKEN).toMatch(/^ey/);
    const phones = r.stdout.split('\n').filter((l) => l.includes('\t')).map((l) => l.split('\t'));
    expect(phones).toContainEqual(['android', 'Pixel 8', 'device']);
    expect(phones.some(([platform]) => platform === 'ios')).toBe(true);
  },
  mobilecli: (r) => {
    expect(r.vars.SERIAL).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(readFileSync(join(r.dir, 'screen.png')).subarray(1, 4).toString()).toBe('PNG');
    // Each command prints {"status": "ok", ...}: the list, the screenshot, the UI dump, the tap and the release.
    expect(r.stdout.match(/"status":\s*"ok"/g)).toHaveLength(5);
    expect(r.stdout).toMatch(/"name":\s*"Pixel 8"/);
    expect(r.stdout).not.toMatch(/"status":\s*"error"/);
  },
  'login-burst': (r) => {
    const counts = Object.fromEntries(r.stdout.trim().split('\n').map((line) => line.trim().split(/\s+/).reverse()));
    expect(counts).toEqual({ 401: '10', 429: '10' });
  },
  'adb-key': (r) => {
    const [key] = r.json;
    expect(key).toMatchObject({ title: 'my laptop' });
    // The MD5 of the key, as adb's "Allow USB debugging?" dialog shows it.
    expect(key.fingerprint).toMatch(/^([0-9a-f]{2}:){15}[0-9a-f]{2}$/i);
  },
  'ci-recipe': (r) => {
    expect(r.stdout).toMatch(/connected to 127\.0\.0\.1:\d+/);
    // The stand-in ./gradlew asks the phone named by ANDROID_SERIAL for its model, through the user's own adb.
    expect(r.stdout).toMatch(new RegExp(`^gradlew connectedAndroidTest on ${r.vars.ADDRESS}: (Pixel 8|Galaxy S23|Pixel 6a)$`, 'm'));
  },
  'phone-page-take': (r) => {
    expect(r.vars.SESSION).toMatch(UUID);
    expect(r.vars.SERIAL).toMatch(/^127\.0\.0\.1:\d+$/);
  },
  'phone-files': (r) => {
    const [listing, afterDelete] = r.json;
    expect(listing?.data, r.stdout).toEqual(expect.arrayContaining([expect.objectContaining({ name: 'fixture.json', type: 'file' })]));
    expect(readFileSync(join(r.dir, 'copy.json'))).toEqual(readFileSync(join(r.dir, 'fixture.json')));
    expect(afterDelete?.data.map((e: { name: string }) => e.name), r.stdout).not.toContain('fixture.json');
  },
  'phone-apps': (r) => {
    const [apps, cleared] = r.json;
    expect(apps.object).toBe('list');
    expect(cleared, r.stdout).toEqual({ ok: true });
  },
  'phone-recording': (r) => {
    // An MP4 starts with its ftyp box; a PNG with its signature.
    expect(readFileSync(join(r.dir, 'run.mp4')).subarray(4, 8).toString()).toBe('ftyp');
    expect(readFileSync(join(r.dir, 'screen.png')).subarray(1, 4).toString()).toBe('PNG');
  },
  backup: (r) => {
    const [backup] = r.json;
    expect(backup.path).toMatch(/benchtop-.*\.db$/);
    // SQLite's own header: the backup is a complete database file.
    expect(readFileSync(backup.path).subarray(0, 15).toString()).toBe('SQLite format 3');
  },
  'sharing-keep': (r) => {
    const [kept] = r.json.slice(-1);
    expect(kept.status).toBe('in_use');
    expect(Date.parse(kept.idleReleaseAt)).toBeGreaterThan(Date.now());
  },
  'test-result-files': (r) => {
    expect(r.json[0]).toEqual({ keepDays: 90, storedBytes: expect.any(Number) });
  },
  'sharing-idle-setting': (r) => {
    expect(r.json[0]).toEqual({ deviceIdleSeconds: 1800, reservationMaxHours: 8 });
  },
  'sharing-reserve': (r) => {
    expect(r.vars.RESERVATION).toMatch(UUID);
    expect(r.vars.DAY).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  },
  'sharing-calendar': (r) => {
    const [calendar] = r.json;
    expect(calendar.data).toEqual([expect.objectContaining({ id: r.vars.RESERVATION, own: true, title: 'RC regression', startsAt: `${r.vars.DAY}T09:00:00.000Z` })]);
  },
  'sharing-cancel': (r) => {
    expect(r.stdout.trim()).toBe('204');
  },
  'sharing-usage': (r) => {
    const [usage] = r.json;
    expect(usage.groupBy).toBe('member');
    expect(usage.data[0]).toMatchObject({ label: 'owner@benchtop.local' });
    expect(usage.data[0].seconds).toBeGreaterThan(0);
    expect(readFileSync(join(r.dir, 'usage.csv'), 'utf8').split(/\r?\n/)[0]).toBe('serial,name,seconds,allocations');
  },
  'appium-take': (r) => {
    expect(r.vars.SERIAL).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(r.stdout).toMatch(new RegExp(`connected to ${r.vars.ADDRESS}`));
  },
  'appium-server': (r) => {
    expect(Number(r.vars.APPIUM_PID)).toBeGreaterThan(0);
    expect(readFileSync(join(r.dir, 'appium.log'), 'utf8')).toMatch(/uiautomator2@\d+\.\d+\.\d+ \(automationName 'UiAutomator2'\)/);
  },
  'appium-android-session': (r) => {
    expect(r.vars.WD).toMatch(UUID);
    expect(r.vars.WIFI).toMatch(/^[\w-]+$/);
    // The click reached the lab phone: its Wi-Fi page is in the source Appium read back from it.
    expect(r.stdout).toContain('text="Use Wi-Fi"');
    expect(readFileSync(join(r.dir, 'appium.log'), 'utf8')).toContain('io.appium.uiautomator2.server');
  },
  'webdriver-wdio': (r) => {
    // WebdriverIO reached a demo phone through the lab's /wd/hub with the key, and the click landed on it.
    expect(r.stdout).toMatch(/^phone 127\.0\.0\.1:\d+ (Pixel 8|Galaxy S23|Pixel 6a)$/m);
    expect(r.stdout).toContain('on the Wi-Fi page');
    // The run's page, a link a CI log prints.
    expect(r.stdout).toMatch(/^the run: http:\/\/127\.0\.0\.1:\d+\/test-results\/[0-9a-f-]{36}$/m);
  },
  'appium-release': (r) => {
    const [released] = r.json;
    expect(['releasing', 'released']).toContain(released.status);
  },
  openapi: (r) => {
    const summary = JSON.parse(r.stdout);
    expect(summary.openapi).toMatch(/^3\.1\./);
    expect(summary.operations).toBeGreaterThan(80);
  },
};

/** Runs one block in bash in `dir`, after the state earlier blocks of its page left in `stateFile`. */
function runBlock(block: ShellBlock, env: Record<string, string>, dir: string, stateFile: string): Promise<BlockRun> {
  const names = assignedVariables(block.code);
  const script = [
    'set -euo pipefail',
    'shopt -s inherit_errexit',
    // Each answer on a line of its own, and an HTTP error fails the block, as a wrong path or body in a doc would.
    'curl() { command curl --fail-with-body "$@" || return; echo; }',
    `if [ -f '${stateFile}' ]; then source '${stateFile}'; fi`,
    block.code,
    ...names.map((n) => `declare -p ${n} >> '${stateFile}'; printf '\\n@@var ${n}=%s\\n' "$${n}"`),
  ].join('\n');
  return new Promise((resolve, reject) => {
    execFile('bash', ['-c', script], { cwd: dir, env, timeout: 75_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) {
        reject(new Error(`${block.where} failed (${error.code ?? error.signal}):\n${block.code}\n--- stdout\n${stdout}\n--- stderr\n${stderr}`));
        return;
      }
      const vars: Record<string, string> = {};
      const lines: string[] = [];
      for (const line of stdout.split('\n')) {
        const v = /^@@var ([A-Za-z_]\w*)=(.*)$/.exec(line);
        if (v) vars[v[1]!] = v[2]!;
        else lines.push(line);
      }
      const json = lines.flatMap((line) => {
        if (!/^[[{]/.test(line)) return [];
        try {
          return [JSON.parse(line)];
        } catch {
          return [];
        }
      });
      resolve({ stdout: lines.join('\n'), json, vars, dir });
    });
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
const anchorOf = (heading: string) => heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');

/** The docs' commands need curl and jq: under CI their absence is a failure, elsewhere the run is skipped loudly. */
function curlAndJqOrSkip(): boolean {
  const missing = ['curl', 'jq'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
  if (missing.length === 0) return true;
  const install = `apt-get install -y ${missing.join(' ')}`;
  if (process.env.CI === 'true') throw new Error(`${missing.join(' and ')} missing: install the Debian packages (${install}).`);
  console.warn(`SKIPPING the docs' commands: ${missing.join(' and ')} not installed (${install}).`);
  return false;
}

const ready = adbOrSkip() && curlAndJqOrSkip();

describe('the docs mark each shell block', () => {
  const all = [...BLOCKS.values()].flat();
  it('every ```sh block is marked run, not run (saying why) or env', () => {
    expect(all.filter((b) => b.mark.kind === 'unmarked').map((b) => b.where)).toEqual([]);
    expect(all.filter((b) => b.mark.kind === 'not run' && b.mark.why === '').map((b) => b.where)).toEqual([]);
  });
  it('every link between the pages names a page and a heading that exist', () => {
    const broken: string[] = [];
    for (const page of PAGES) {
      const text = readFileSync(join(ROOT, page), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [file, anchor] = target!.split('#');
        const path = file ? join(ROOT, dirname(page), file) : join(ROOT, page);
        if (!existsSync(path)) broken.push(`${page}: ${target}`);
        else if (anchor && path.endsWith('.md')) {
          const headings = [...readFileSync(path, 'utf8').matchAll(/^#+ (.+)$/gm)].map((m) => anchorOf(m[1]!));
          if (!headings.includes(anchor)) broken.push(`${page}: ${target}`);
        }
      }
    }
    expect(broken).toEqual([]);
  });
  it('every run block has a check, and every check a block, once', () => {
    const names = all.flatMap((b) => (b.mark.kind === 'run' ? [b.mark.name] : []));
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
    expect(names.filter((n) => !CHECKS[n]).sort()).toEqual([]);
    expect(Object.keys(CHECKS).filter((n) => !names.includes(n)).sort()).toEqual([]);
  });
});

describe.runIf(ready)('the docs commands, against a demo engine', () => {
  const work = mkdtempSync(join(tmpdir(), 'benchtop-docs-'));
  let adb: AdbServer | undefined;
  let serve: ServeProcess | undefined;
  /** What the env blocks name, from the running engine. */
  const supplied: Record<string, string> = { PASSWORD, MOBILECLI_REMOTE_ONLY: '1' };
  /** The reader's own adb server (remote-connect's pages start it), on a port of its own rather than 5037. */
  let userAdbPort = 0;
  /** The HOME the blocks run with: mobilecli starts its daemon there, and close() stops it. */
  const home = mobilecli(MOBILECLI, {});
  /** `mobilecli` on the blocks' PATH is 1.0.9, as `npm i -g mobilecli` installs it. */
  const bin = join(work, 'bin');

  beforeAll(async () => {
    adb = await startAdbServer();
    serve = await startServeProcess({
      ...(adb.env as Record<string, string>),
      BENCHTOP_DATA_DIR: join(work, 'data'),
      BENCHTOP_OWNER_PASSWORD: PASSWORD,
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
      // Three: the phone page and the sharing page keep theirs, and the WebDriver page takes the one left.
      BENCHTOP_DEMO_PHONES: '3',
      BENCHTOP_DEMO_IPHONES: '1',
      // LAN sharing, which a page turns on, on a free port rather than 7677.
      BENCHTOP_LAN_PORT: '0',
    });
    supplied.BENCHTOP = serve.api;
    supplied.LAB = new URL(serve.api).host;
    // A reader's script imports webdriverio from their own project: here, this one's.
    symlinkSync(join(ROOT, 'node_modules'), join(work, 'node_modules'));
    const owner = await call(serve.api, 'POST', '/auth/login', { body: { email: 'owner@benchtop.local', password: PASSWORD } });
    supplied.TOKEN = owner.body.token;
    supplied.KEY = (await call(serve.api, 'POST', '/keys', { token: supplied.TOKEN, body: { name: 'docs' } })).body.apiKey;
    supplied.MOBILECLI_FLEET_URL = serve.api.replace(/^http/, 'ws').replace(/\/api\/v1$/, '/ws');
    supplied.MOBILECLI_TOKEN = supplied.KEY!;
    mkdirSync(bin);
    writeFileSync(join(bin, 'mobilecli'), `#!/bin/sh\nexec '${process.execPath}' '${MOBILECLI}' "$@"\n`);
    chmodSync(join(bin, 'mobilecli'), 0o755);
    // `appium` on PATH is the project's Appium 3 with its drivers, as `npm i -g appium` plus `appium driver install`
    // gives a reader; its pid is kept so that a failed page still stops it.
    writeFileSync(join(bin, 'appium'), `#!/bin/sh\necho $$ > '${join(work, 'appium.pid')}'\nAPPIUM_HOME='${ROOT}' exec '${process.execPath}' '${APPIUM}' "$@"\n`);
    chmodSync(join(bin, 'appium'), 0o755);
    // The files the docs' commands read, in the directory they run in.
    writeFileSync(join(work, 'app-debug.apk'), buildApk({ packageName: APP, label: 'Docs Demo', versionName: '1.0.0' }));
    writeFileSync(join(work, 'app-release.apk'), buildApk({ packageName: APP, label: 'Docs Demo', versionName: '1.0.1' }));
    // remote-connect.md's CI recipe runs ./gradlew connectedAndroidTest: this stand-in asks the phone it would test
    // (ANDROID_SERIAL, as Gradle picks it) for its model through the reader's adb, which is what Gradle would reach.
    writeFileSync(join(work, 'gradlew'), '#!/bin/sh\necho "gradlew $1 on $ANDROID_SERIAL: $(adb shell getprop ro.product.model)"\n');
    chmodSync(join(work, 'gradlew'), 0o755);
    userAdbPort = await freePort();
    writeFileSync(join(work, 'fixture.json'), JSON.stringify({ user: 'docs', items: [1, 2, 3] }));
    writeFileSync(join(work, 'trace.zip'), Buffer.from('PK\u0005\u0006'.padEnd(22, '\u0000'), 'binary'));
    await waitFor('the demo phones in the fleet', async () => {
      const fleet = (await call(serve!.api, 'GET', '/fleet/devices', { token: supplied.TOKEN })).body.data as Array<{ platform: string; state: string }>;
      const ready = fleet.filter((p) => p.state === 'device');
      return ready.filter((p) => p.platform === 'android').length === 3 && ready.some((p) => p.platform === 'ios');
    }, 20_000);
  });
  afterAll(async () => {
    await home.close();
    if (existsSync(join(work, 'appium.pid'))) {
      try {
        process.kill(Number(readFileSync(join(work, 'appium.pid'), 'utf8')), 'SIGKILL');
      } catch {
        // It ended with its page.
      }
    }
    if (userAdbPort) await runAdb(['kill-server'], { serverPort: userAdbPort, env: { ...process.env, HOME: home.home } }).catch(() => undefined);
    serve?.child.kill('SIGTERM');
    await serve?.exited;
    await adb?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  for (const [page, blocks] of BLOCKS) {
    const runnable = blocks.filter((b) => b.mark.kind === 'run');
    if (runnable.length === 0) continue;
    describe(page, () => {
      const stateFile = join(work, `${page.replace(/\W/g, '_')}.state`);
      /** The variables the page's blocks have assigned so far, as the next block sees them. */
      const pageVars: Record<string, string> = {};
      it('names in its env blocks only what the test supplies', () => {
        const named = blocks.filter((b) => b.mark.kind === 'env').flatMap((b) => assignedVariables(b.code));
        expect(named.filter((n) => !(n in supplied))).toEqual([]);
      });
      for (const block of runnable) {
        const name = (block.mark as { name: string }).name;
        it(`${name} (${block.where})`, async () => {
          const env: Record<string, string> = {
            PATH: `${bin}:${process.env.PATH}`,
            HOME: home.home,
            LANG: 'C.UTF-8',
            ANDROID_ADB_SERVER_PORT: String(userAdbPort),
            TMPDIR: work,
            ...supplied,
          };
          const run = await runBlock(block, env, work, stateFile);
          run.vars = Object.assign(pageVars, run.vars);
          CHECKS[name]!(run);
        }, 90_000);
      }
    });
  }
});
