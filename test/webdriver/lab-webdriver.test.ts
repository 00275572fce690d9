import Database from 'better-sqlite3';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startEngine } from '../support/engine.js';
import { remotePorts } from '../support/remote.js';
import { labSession } from '../support/webdriver.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';

/**
 * The lab's WebDriver endpoint (/wd/hub) driven by WebdriverIO, unchanged, as a suite points it at a cloud: an API key
 * in the URL's credentials, capabilities that choose the phone, and real Appium behind the lab.
 */

const hasAdb = adbOrSkip();
/** Debian's own Python, where apt puts python3-selenium (a python3 earlier on PATH may be another install). */
const SYSTEM_PYTHON = '/usr/bin/python3';

function seleniumOrSkip(): boolean {
  if (spawnSync(SYSTEM_PYTHON, ['-c', 'import selenium']).status === 0) return true;
  if (process.env.CI === 'true') throw new Error('Selenium for Python is missing: install the Debian package `python3-selenium` (apt-get install -y python3-selenium).');
  console.warn('SKIPPING the Selenium client test: apt-get install -y python3-selenium.');
  return false;
}

type Driver = WebdriverIO.Browser;
interface ResultRow {
  id: string;
  status: string;
  name: string;
  sessionId: string;
}

describe.skipIf(!hasAdb)('WebDriver for the lab: WebdriverIO against /wd/hub with Android phones', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let key: string;
  let origin: string;
  let port: number;

  beforeAll(async () => {
    lab = await startLab(
      [
        { model: 'Pixel 8', osVersion: '14' },
        { model: 'Pixel 7', osVersion: '13' },
        { model: 'Galaxy S23', osVersion: '15' },
      ],
      { remotePorts: remotePorts(12), remotePortRestSeconds: 1 },
    );
    c = client(lab.engine.api);
    owner = await c.login();
    key = await c.createKey(owner);
    origin = new URL(lab.engine.api).origin;
    port = Number(new URL(lab.engine.api).port);
    // The engine learns of the phones from adb's tracking and reads their names after startLab returns: a new
    // session before that finds no phone that could match, which is the right answer then.
    await waitFor('the three phones in the fleet', async () => {
      const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ name: string; state: string }>;
      return ['Pixel 8', 'Pixel 7', 'Galaxy S23'].every((name) => fleet.some((d) => d.name === name && d.state === 'device'));
    }, 30_000);
  }, 60_000);

  afterAll(async () => {
    await lab?.stop();
  });

  const session = (capabilities: Record<string, unknown>, apiKey = key): Promise<Driver> =>
    labSession(lab.engine.api, apiKey, { platformName: 'Android', 'appium:automationName': 'UiAutomator2', ...capabilities });

  const serialOf = (name: string) => lab.serials[['Pixel 8', 'Pixel 7', 'Galaxy S23'].indexOf(name)]!;
  const resultNamed = (name: string) =>
    waitFor(`test result ${name} to end`, async () => {
      const list = (await c.call('GET', '/test-results', { token: owner })).body.data as ResultRow[];
      const r = list.find((x) => x.name === name);
      return r && r.status !== 'running' ? r : undefined;
    }, 30_000);
  const assetText = async (resultId: string, name: string) => {
    const assets = (await c.call('GET', `/test-results/${resultId}/assets`, { token: owner })).body.data as Array<{ id: string; name: string }>;
    const asset = assets.find((a) => a.name === name)!;
    return (await fetch(`${lab.engine.api}/test-results/${resultId}/assets/${asset.id}`, { headers: { authorization: `Bearer ${owner}` } })).text();
  };
  /** A raw WebDriver request, as a client that is not WebdriverIO would send it. */
  const wd = async (method: string, path: string, body?: unknown, headers: Record<string, string> = { authorization: `Bearer ${key}` }) => {
    const r = await fetch(`${origin}/wd/hub${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as { value: { error?: string; message?: string } & Record<string, unknown> } };
  };
  const allocations = async () => {
    const sessions = (await c.call('GET', '/sessions', { token: owner })).body.data as Array<{ devices: Array<{ status: string; info?: { serial?: string } }> }>;
    return sessions.flatMap((s) => s.devices).filter((d) => d.status !== 'released');
  };

  it('drives Settings on the phone the capabilities chose, and keeps the run as a test result with its assets', async () => {
    const driver = await session({ 'appium:platformVersion': '14', 'benchtop:options': { name: 'settings smoke', build: '42' } });
    const caps = driver.capabilities as Record<string, unknown>;
    // The phone as the lab knows it, not the bridge address Appium reached it by.
    expect(caps['appium:udid']).toBe(serialOf('Pixel 8'));
    expect(caps['benchtop:device']).toBe('Pixel 8');
    const labSession = caps['benchtop:session'] as string;
    expect((await c.call('GET', `/sessions/${labSession}`, { token: owner })).body.devices[0]).toMatchObject({ status: 'in_use', info: { serial: serialOf('Pixel 8') } });

    await driver.activateApp('com.android.settings');
    const wifi = await driver.$('//android.widget.TextView[@text="Wi-Fi"]');
    expect(await wifi.getText()).toBe('Wi-Fi');
    await wifi.click();
    expect(lab.phone(serialOf('Pixel 8')).state.foregroundPackage).toBe('com.android.settings');
    expect(await driver.getPageSource()).toContain('<hierarchy');
    expect(Buffer.from(await driver.takeScreenshot(), 'base64').subarray(1, 4).toString()).toBe('PNG');
    // What the session's page and the Fleet show while it runs: its commands so far, and who holds the phone how.
    const runs = (await c.call('GET', `/sessions/${labSession}/webdriver-runs`, { token: owner })).body.data;
    expect(runs).toEqual([expect.objectContaining({ serial: serialOf('Pixel 8'), deviceName: 'Pixel 8', createdBy: 'owner@lab.test', newCommandTimeoutSeconds: 60 })]);
    expect(runs[0].commands.map((c: { path: string }) => c.path)).toEqual(expect.arrayContaining(['/source', '/screenshot']));
    expect(JSON.stringify(runs)).not.toContain(driver.sessionId);
    const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ serial: string; heldBy?: Record<string, unknown> }>;
    expect(fleet.find((d) => d.serial === serialOf('Pixel 8'))!.heldBy).toMatchObject({ sessionId: labSession, memberEmail: 'owner@lab.test', webdriver: true });
    expect((await c.call('GET', `/sessions/${labSession}`, { token: owner })).body.name).toBe('WebDriver: settings smoke');
    await driver.execute('benchtop: status', { status: 'failed', reason: 'the assertion on Wi-Fi failed' });
    await driver.deleteSession();

    const result = await resultNamed('settings smoke');
    expect(result).toMatchObject({ status: 'failed', sessionId: labSession });
    const assets = (await c.call('GET', `/test-results/${result.id}/assets`, { token: owner })).body.data as Array<{ name: string; size: number; contentType: string }>;
    expect(assets.map((a) => a.name).sort()).toEqual(['appium.log', 'commands.log', 'logcat.txt', 'screenshot.png', 'video.mp4']);
    const commands = await assetText(result.id, 'commands.log');
    expect(commands).toMatch(/POST \/element \(xpath [^)]*\) 200 \d+ ms/);
    expect(commands).toMatch(/POST \/element\/[^/]+\/click \(xpath [^)]*\) 200/);
    expect(commands).toContain('Reason given: the assertion on Wi-Fi failed');
    // The session's own lines of Appium's log: the driver installed its server on this phone's first session.
    expect(await assetText(result.id, 'appium.log')).toContain('Server packages are going to be (re)installed');
    expect((await assetText(result.id, 'logcat.txt')).length).toBeGreaterThan(0);
    const video = Buffer.from(await (await fetch(`${lab.engine.api}/test-results/${result.id}/assets/${(assets as unknown as Array<{ id: string; name: string }>).find((a) => a.name === 'video.mp4')!.id}`, { headers: { authorization: `Bearer ${owner}` } })).arrayBuffer());
    expect(video.subarray(4, 8).toString('latin1')).toBe('ftyp');
    // Released through the usual release; the lab session made for the run ends with it.
    const after = (await c.call('GET', `/sessions/${labSession}`, { token: owner })).body;
    expect(after.devices[0]).toMatchObject({ status: 'released', releaseReason: 'webdriver_ended' });
    expect(after.endedAt).toEqual(expect.any(String));
    // Cleaned up (the phone is free again), with the UiAutomator2 server kept for the next session.
    await waitFor('the cleanup', async () => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ serial: string; held: boolean }>).find((d) => d.serial === serialOf('Pixel 8'))?.held === false, 15_000);
    expect(lab.phone(serialOf('Pixel 8')).state.thirdPartyPackages).toEqual(expect.arrayContaining(['io.appium.uiautomator2.server', 'io.appium.uiautomator2.server.test']));

    // The next session on that phone finds its server installed, and skips the install.
    const again = await session({ 'appium:deviceName': 'Pixel 8', 'benchtop:options': { name: 'second run' } });
    await again.deleteSession();
    const second = await resultNamed('second run');
    expect(second.status).toBe('passed');
    expect(await assetText(second.id, 'appium.log')).toContain('Server packages are not going to be (re)installed');
  }, 180_000);

  it('runs sessions on two phones at once; a request for a busy phone waits without holding up one for a free phone, and an impossible one fails at once', async () => {
    const first = await session({ 'appium:deviceName': 'Pixel 8' });
    // Waits in the queue for the busy Pixel 8.
    let waited: Driver | undefined;
    const waiting = session({ 'appium:deviceName': 'pixel 8', 'benchtop:options': { queueTimeout: 120 } }).then((d) => (waited = d));
    await new Promise((r) => setTimeout(r, 500));
    // A request for a free phone starts at once all the same (no head-of-line blocking), and runs beside the first.
    const other = await session({ 'appium:platformVersion': '15' });
    expect((other.capabilities as Record<string, unknown>)['appium:udid']).toBe(serialOf('Galaxy S23'));
    const [a, b] = await Promise.all([first.getPageSource(), other.getPageSource()]);
    expect(a).toContain('<hierarchy');
    expect(b).toContain('<hierarchy');
    expect(waited).toBeUndefined();

    const started = performance.now();
    const impossible = await session({ 'appium:platformVersion': '99' }).then(() => 'started', (error: Error) => error.message);
    expect(performance.now() - started).toBeLessThan(5000);
    expect(impossible).toContain('No phone in this lab matches appium:platformVersion 99');
    expect(impossible).toContain('versions here: 13, 14, 15');

    await first.deleteSession();
    await waiting;
    expect((waited!.capabilities as Record<string, unknown>)['appium:udid']).toBe(serialOf('Pixel 8'));
    // W3C's release-actions is a DELETE under the session: it releases the pressed keys and buttons, not the phone.
    await waited!.releaseActions();
    expect(await waited!.getPageSource()).toContain('<hierarchy');
    await waited!.deleteSession();
    await other.deleteSession();
    expect(await allocations()).toEqual([]);
  }, 180_000);

  it.runIf(seleniumOrSkip())("Selenium's own Python client (Debian's python3-selenium, what Appium's Python client is built on) drives a phone through the lab", async () => {
    const script = [
      'import os',
      'from selenium import webdriver',
      'from selenium.webdriver.common.by import By',
      'from selenium.webdriver.common.options import ArgOptions',
      'options = ArgOptions()',
      "options.set_capability('platformName', 'Android')",
      "options.set_capability('appium:automationName', 'UiAutomator2')",
      "options.set_capability('appium:deviceName', 'Pixel 7')",
      // The key as the URL's password: Selenium sends it as HTTP Basic.
      "driver = webdriver.Remote(command_executor=os.environ['LAB_URL'], options=options)",
      "print('udid', driver.capabilities['appium:udid'])",
      "driver.execute_script('mobile: activateApp', {'appId': 'com.android.settings'})",
      "driver.find_element(By.XPATH, '//android.widget.TextView[@text=\"Wi-Fi\"]').click()",
      "print('wifi page', 'Use Wi-Fi' in driver.page_source)",
      'driver.quit()',
    ].join('\n');
    // Not spawnSync: the lab answering the client runs in this very process.
    const run = await promisify(execFile)(SYSTEM_PYTHON, ['-c', script], { env: { ...process.env, LAB_URL: `http://ci:${key}@127.0.0.1:${port}/wd/hub` }, encoding: 'utf8', timeout: 90_000 });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe(`udid ${serialOf('Pixel 7')}\nwifi page True\n`);
  }, 120_000);

  it('a client that vanishes loses its phone after its newCommandTimeout, and its next command is an invalid session id', async () => {
    const driver = await session({ 'appium:deviceName': 'Pixel 7', 'appium:newCommandTimeout': 2, 'benchtop:options': { name: 'vanished' } });
    const id = driver.sessionId;
    expect(await allocations()).toHaveLength(1);
    await waitFor('the phone to be released', async () => (await allocations()).length === 0, 15_000);
    const after = await wd('GET', `/session/${id}/source`, undefined, {});
    expect(after).toMatchObject({ status: 404, body: { value: { error: 'invalid session id' } } });
    expect((await resultNamed('vanished')).status).toBe('interrupted');
  }, 60_000);

  it('a phone its holder releases ends the session; another organization finds nothing; a wrong key is refused', async () => {
    const driver = await session({ 'appium:deviceName': 'Pixel 7' });
    const caps = driver.capabilities as Record<string, unknown>;
    const id = driver.sessionId;

    const stranger = await c.signup('stranger@lab.test');
    const strangerKey = await c.createKey(stranger.token, stranger.personalOrgId);
    expect(await wd('GET', `/session/${id}/source`, undefined, { authorization: `Bearer ${strangerKey}` })).toMatchObject({ status: 404, body: { value: { error: 'invalid session id' } } });
    const basic = (k: string) => ({ authorization: `Basic ${Buffer.from(`ci:${k}`).toString('base64')}` });
    expect((await wd('GET', `/session/${id}/source`, undefined, basic(strangerKey))).status).toBe(404);
    // The session's own organization, or no credentials at all: the session id is what authorizes a command.
    expect((await wd('GET', `/session/${id}/source`, undefined, basic(key))).status).toBe(200);
    expect((await wd('GET', `/session/${id}/source`, undefined, {})).status).toBe(200);
    // Appium 3's session discovery, for Appium Inspector: the organization's own sessions only.
    expect((await wd('GET', '/appium/sessions')).body.value).toEqual([expect.objectContaining({ id })]);
    expect((await wd('GET', '/appium/sessions', undefined, { authorization: `Bearer ${strangerKey}` })).body.value).toEqual([]);

    const refused = await session({}, 'mob_not-a-key').then(() => 'started', (error: Error) => error.message);
    expect(refused).toMatch(/invalid|deleted/i);
    expect((await wd('POST', '/session', { capabilities: { alwaysMatch: { platformName: 'Android' } } }, {})).status).toBe(401);

    const released = await c.call('POST', `/sessions/${caps['benchtop:session']}/devices/${caps['appium:udid']}/release`, { token: owner });
    expect(released.status).toBe(202);
    await waitFor('the session to end', async () => (await wd('GET', `/session/${id}/source`, undefined, {})).status === 404, 15_000);
  }, 90_000);

  it('refuses bad input with W3C errors, and holds no phone for it, nor for a start that failed', async () => {
    const caps = (alwaysMatch: Record<string, unknown>) => ({ capabilities: { alwaysMatch } });
    expect(await wd('POST', '/session', 'not json')).toMatchObject({ status: 400, body: { value: { error: 'invalid argument' } } });
    expect(await wd('POST', '/session', { desiredCapabilities: {} })).toMatchObject({ status: 400, body: { value: { error: 'invalid argument' } } });
    expect(await wd('POST', '/session', caps({}))).toMatchObject({ status: 400, body: { value: { error: 'invalid argument' } } });
    expect(await wd('POST', '/session', caps({ platformName: 'Windows' }))).toMatchObject({ status: 500, body: { value: { error: 'session not created' } } });
    expect(await wd('POST', '/session', caps({ platformName: 'Android', 'appium:automationName': 'Espresso' }))).toMatchObject({ status: 500, body: { value: { error: 'session not created' } } });
    expect(await wd('POST', '/session', caps({ platformName: 'Android', 'appium:systemPort': 8200 }))).toMatchObject({ status: 400, body: { value: { error: 'invalid argument', message: expect.stringContaining('appium:systemPort') } } });
    expect(await wd('POST', '/session', caps({ platformName: 'Android', 'appium:udid': 'emulator-5554' }))).toMatchObject({ status: 500, body: { value: { error: 'session not created', message: expect.stringContaining('appium:udid emulator-5554') } } });
    expect(await wd('POST', '/session', caps({ platformName: 'Android', 'benchtop:options': { queueTimeout: -1 } }))).toMatchObject({ status: 400 });
    expect(await wd('GET', '/session/0123456789abcdef/source')).toMatchObject({ status: 404, body: { value: { error: 'invalid session id' } } });
    expect(await wd('GET', '/no-such-command')).toMatchObject({ status: 404, body: { value: { error: 'unknown command' } } });

    // A start Appium refuses (a capability of the wrong type) frees the phone it took: none is left held.
    const failed = await wd('POST', '/session', caps({ platformName: 'Android', 'appium:deviceName': 'Pixel 7', 'appium:appWaitDuration': 'soon' }));
    expect(failed).toMatchObject({ status: 500, body: { value: { error: 'session not created', message: expect.stringContaining('Pixel 7') } } });
    await waitFor('the phone to be freed', async () => (await allocations()).length === 0, 15_000);

    // Half a request, then silence: nothing is allocated for it.
    const socket = connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`POST /wd/hub/session HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: 200\r\n\r\n{"capabilities":`);
    await new Promise((r) => setTimeout(r, 300));
    expect(await allocations()).toEqual([]);
    socket.destroy();
    expect(await allocations()).toEqual([]);
  }, 60_000);

  it('Appium dying ends its sessions as interrupted and frees their phones; the next session starts a new Appium', async () => {
    const driver = await session({ 'appium:deviceName': 'Galaxy S23', 'benchtop:options': { name: 'appium crash' } });
    const { pid } = lab.engine.engine.services.webdriver.status().appium.android;
    expect(pid).toBeGreaterThan(0);
    // Appium runs a process for each platform, started by its platform's first session: no iPhone session, no XCUITest.
    expect(lab.engine.engine.services.webdriver.status().appium.ios).toEqual({ running: false });
    process.kill(-pid!, 'SIGKILL');
    expect((await resultNamed('appium crash')).status).toBe('interrupted');
    await waitFor('the phone to be freed', async () => (await allocations()).length === 0, 15_000);
    expect((await wd('GET', `/session/${driver.sessionId}/source`, undefined, {})).status).toBe(404);
    expect((await fetch(`${lab.engine.api}/health`)).status).toBe(200);
    const next = await session({ 'appium:deviceName': 'Galaxy S23' });
    expect(lab.engine.engine.services.webdriver.status().appium.android.pid).not.toBe(pid);
    await next.deleteSession();
  }, 120_000);

  it('a run the engine died with ends at the next start, and its phone goes back to the lab', async () => {
    const driver = await session({ 'appium:deviceName': 'Pixel 7', 'benchtop:options': { name: 'engine restart' } });
    const labSession = (driver.capabilities as Record<string, unknown>)['benchtop:session'] as string;
    const { dataDir } = lab.engine;
    await lab.engine.engine.stop();
    // What a crash leaves in the database: the run, its phone and its test result still running.
    const db = new Database(join(dataDir, 'benchtop.db'));
    expect(db.prepare('UPDATE webdriver_runs SET ended_at = NULL, end_reason = NULL WHERE started_at = (SELECT MAX(started_at) FROM webdriver_runs)').run().changes).toBe(1);
    db.prepare("UPDATE device_allocations SET status = 'in_use', released_at = NULL, release_reason = NULL, cleaned_at = NULL WHERE session_id = ?").run(labSession);
    db.prepare("UPDATE test_results SET status = 'running' WHERE name = 'engine restart'").run();
    db.close();
    lab.engine = await startEngine({ adb: { host: '127.0.0.1', port: lab.adb.port }, remotePorts: remotePorts(12), remotePortRestSeconds: 1, dataDir });
    c = client(lab.engine.api);
    owner = await c.login();
    expect((await resultNamed('engine restart')).status).toBe('interrupted');
    expect((await c.call('GET', `/sessions/${labSession}`, { token: owner })).body.devices[0]).toMatchObject({ status: 'released', releaseReason: 'webdriver_engine_restarted' });
  }, 90_000);
});
