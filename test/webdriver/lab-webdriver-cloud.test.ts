import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generate } from 'selfsigned';
import { remote } from 'webdriverio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../src/main/engine/blobs/blob-store.js';
import { downloadApp } from '../../src/main/engine/blobs/app-download.js';
import { buildApk, sha256 } from '../support/app-fixtures.js';
import { client } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, uploadReadyApp, waitFor, type TestLab } from '../support/lab.js';
import { netnsOrSkip } from '../support/provider/index.js';
import { remotePorts } from '../support/remote.js';
import { startServerNamespace, type Namespace } from '../support/app-server-namespace.js';
import { labSession, NO_VIDEO } from '../support/webdriver.js';

/**
 * Appium the way a cloud lab takes it (issue 43.1-3), through /wd/hub with WebdriverIO unchanged: apps by reference
 * (a stored file, or a URL the lab downloads itself: here from a server in a network namespace, reachable only through
 * a veth pair's address, never loopback), a retry that keeps its place in the queue, and answers that name the phone.
 */
const hasAdb = adbOrSkip();
const hasNetns = hasAdb && netnsOrSkip();
const MAX_ASSET_BYTES = 1_000_000;
/** How long an abandoned request's place is kept for its retry: 30 s by default, shorter here to see it given up. */
const RETRY_SECONDS = 8;
/**
 * A download that sends nothing for this long is given up. Short, so that the silent server costs the test little, but
 * not 1 s: a full run's loaded machine once kept the namespace's just-started server from answering the first request
 * within a second.
 */
const UPLOAD_IDLE_SECONDS = 3;


/**
 * A TCP relay to the lab that counts the new-session requests it carries, and can cut every connection it carries
 * (what a client's time-out does to its request: the lab sees the connection close).
 */
async function countingRelay(port: number): Promise<{ port: number; newSessions: () => number; cut(): void; close(): void }> {
  let count = 0;
  const open = new Set<() => void>();
  const server = createServer((socket) => {
    const upstream = connect(port, '127.0.0.1');
    socket.on('data', (chunk: Buffer) => {
      if (chunk.toString('latin1').startsWith('POST /wd/hub/session ')) count++;
    });
    socket.pipe(upstream).pipe(socket);
    const end = () => {
      open.delete(end);
      socket.destroy();
      upstream.destroy();
    };
    open.add(end);
    socket.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { port: (server.address() as { port: number }).port, newSessions: () => count, cut: () => [...open].forEach((end) => end()), close: () => server.close() };
}

describe.skipIf(!hasNetns)('/wd/hub as a cloud lab takes Appium (issue 43)', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let key: string;
  let origin: string;
  let dir: string;
  let net: Namespace;
  let strangerKey: string;
  const tls = { ca: '' };

  const stored = buildApk({ packageName: 'com.example.stored', label: 'Stored' });
  const downloaded = buildApk({ packageName: 'com.example.downloaded', label: 'Downloaded' });
  const installedLater = buildApk({ packageName: 'com.example.later', label: 'Later' });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'benchtop-wd-apps-'));
    writeFileSync(join(dir, 'app.apk'), downloaded);
    writeFileSync(join(dir, 'later.apk'), installedLater);
    writeFileSync(join(dir, 'not-an-app.apk'), 'just text');
    // A private CA, and the https server's certificate from it for apps.lab.test alone.
    const ca = await generate([{ name: 'commonName', value: 'Benchtop test CA' }], { keyType: 'ec', algorithm: 'sha256', extensions: [{ name: 'basicConstraints', cA: true, critical: true }, { name: 'keyUsage', keyCertSign: true, critical: true }] });
    const server = await generate([{ name: 'commonName', value: 'apps.lab.test' }], { keyType: 'ec', algorithm: 'sha256', ca: { key: ca.private, cert: ca.cert }, extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'apps.lab.test' }] }] });
    tls.ca = ca.cert;
    writeFileSync(join(dir, 'tls.json'), JSON.stringify({ key: server.private, cert: server.cert }));
    net = await startServerNamespace(dir, MAX_ASSET_BYTES);
    lab = await startLab(
      [
        { model: 'Pixel 8', osVersion: '14', uiautomator2ServerInstalled: true },
        { model: 'Pixel 7', osVersion: '13', uiautomator2ServerInstalled: true },
      ],
      { remotePorts: remotePorts(8), remotePortRestSeconds: 1, maxAssetBytes: MAX_ASSET_BYTES, uploadIdleSeconds: UPLOAD_IDLE_SECONDS, webDriverRetrySeconds: RETRY_SECONDS },
    );
    c = client(lab.engine.api);
    owner = await c.login();
    key = await c.createKey(owner);
    origin = new URL(lab.engine.api).origin;
    const stranger = await c.signup('elsewhere@lab.test');
    strangerKey = await c.createKey(stranger.token, stranger.personalOrgId);
    await waitFor('both phones in the fleet', async () => {
      const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ name: string; state: string }>;
      return ['Pixel 8', 'Pixel 7'].every((name) => fleet.some((d) => d.name === name && d.state === 'device'));
    }, 30_000);
  }, 60_000);

  afterAll(async () => {
    await lab?.stop();
    net?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const serialOf = (name: string) => lab.serials[['Pixel 8', 'Pixel 7'].indexOf(name)]!;
  const wd = async (method: string, path: string, body?: unknown, apiKey: string | undefined = key) => {
    const r = await fetch(`${origin}/wd/hub${path}`, {
      method,
      headers: { 'content-type': 'application/json', ...(apiKey ? { authorization: `Bearer ${apiKey}` } : {}) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: r.status, body: (await r.json()) as { value: Record<string, unknown> & { error?: string; message?: string } } };
  };
  const newSession = (caps: Record<string, unknown>, apiKey = key) =>
    wd('POST', '/session', { capabilities: { alwaysMatch: { platformName: 'Android', 'appium:deviceName': 'Pixel 8', 'benchtop:options': NO_VIDEO, ...caps } } }, apiKey);
  const hits = async () => (await (await fetch(`http://${net.ns}:8080/hits`)).json()) as Array<{ url: string; ifNoneMatch: string | null }>;

  it('installs apps by reference (a stored file, a URL it downloads once), launches the app, and names the phone everywhere', async () => {
    const fileId = await uploadReadyApp(c, owner, stored, 'stored.apk');
    const url = `http://${net.ns}:8080/app.apk`;
    const driver = await labSession(lab.engine.api, key, {
      platformName: 'Android',
      'appium:deviceName': 'Pixel 8',
      'appium:app': url,
      'appium:otherApps': [`lab://files/${fileId}`],
      'appium:newCommandTimeout': 120,
      'benchtop:options': { name: 'apps by reference', build: 'nightly 7', ...NO_VIDEO },
    });
    const serial = serialOf('Pixel 8');
    const phone = lab.phone(serial);
    // The lab installed both with its own install path, and Appium launched the app by its package.
    expect(phone.state.foregroundPackage).toBe('com.example.downloaded');
    expect(await driver.isAppInstalled('com.example.stored')).toBe(true);
    expect(await driver.getCurrentPackage()).toBe('com.example.downloaded');

    // The answer names the phone as the Fleet does, with the client's own timeout; no bridge, no lab port.
    const caps = driver.capabilities as Record<string, unknown>;
    expect(caps['benchtop:testResultUrl']).toBe(`${new URL(lab.engine.api).origin}/test-results/${caps['benchtop:testResult']}`);
    // Its build's page, every run of the build: a second link for the CI log.
    expect(caps['benchtop:buildUrl']).toBe(`${new URL(lab.engine.api).origin}/test-results?tag=build%3Anightly%207`);
    const named = (capabilities: Record<string, unknown>) => {
      // The simulated phones' serials are adb connect addresses themselves; the bridge's is another, new each session.
      // The lab's own address is the one the client used (the run's page), not a port of the lab's plumbing.
      const text = JSON.stringify(capabilities).replaceAll(serial, '<serial>').replaceAll(new URL(lab.engine.api).origin, '<lab>');
      expect(text).not.toMatch(/127\.0\.0\.1:\d+/);
      expect(text).not.toMatch(/adbPort|systemPort|mjpegServerPort|webDriverAgentUrl|remoteAdbHost/);
      for (const [name, value] of Object.entries(capabilities)) {
        const bare = name.replace(/^appium:/, '');
        if (bare === 'udid' || bare === 'deviceUDID') expect(value, name).toBe(serial);
        if (bare === 'deviceName') expect(value, name).toBe('Pixel 8');
        if (bare === 'newCommandTimeout') expect(value, name).toBe(120);
      }
    };
    named(caps);
    // Appium answers these without a prefix, and the lab adds appium:udid.
    expect(caps).toMatchObject({ 'appium:udid': serial, udid: serial, deviceUDID: serial, deviceName: 'Pixel 8', newCommandTimeout: 120 });
    // Attaching by a typed id (Appium Inspector), and Appium's own view of the session: the same names.
    const attached = await wd('GET', `/session/${driver.sessionId}`);
    expect(attached.status).toBe(200);
    expect(attached.body.value).toEqual(caps);
    const appiumView = await wd('GET', `/session/${driver.sessionId}/appium/capabilities`);
    expect(appiumView.status).toBe(200);
    named(appiumView.body.value);
    expect(await wd('GET', `/session/${driver.sessionId}`, undefined, strangerKey)).toMatchObject({ status: 404, body: { value: { error: 'invalid session id' } } });

    // An install during the run, from the URL server; Appium never sees the path.
    await driver.execute('mobile: installApp', { appPath: `http://${net.ns}:8080/later.apk` });
    expect(await driver.isAppInstalled('com.example.later')).toBe(true);
    await driver.deleteSession();

    // The same URL again: the lab asks with the ETag it kept, the server answers 304, and the stored file is reused.
    const again = await labSession(lab.engine.api, key, { platformName: 'Android', 'appium:deviceName': 'Pixel 8', 'appium:app': url, 'benchtop:options': NO_VIDEO });
    expect(lab.phone(serial).state.foregroundPackage).toBe('com.example.downloaded');
    await again.deleteSession();
    const asked = (await hits()).filter((h) => h.url === '/app.apk');
    expect(asked).toHaveLength(2);
    expect(asked[1]!.ifNoneMatch).toMatch(/^"[0-9a-f]{16}"$/);
    const files = (await c.call('GET', '/files', { token: owner })).body.data as Array<{ filename: string; sha256: string }>;
    expect(files.filter((f) => f.sha256 === sha256(downloaded))).toHaveLength(1);
  }, 180_000);

  it('refuses, in a W3C error that says why, an app it cannot or will not fetch, before any phone is taken', async () => {
    const refusal = async (app: string, apiKey = key) => {
      const reply = await newSession({ 'appium:app': app }, apiKey);
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.body.value.error).toBe('invalid argument');
      return reply.body.value.message!;
    };
    expect(await refusal('http://127.0.0.1:8080/app.apk')).toMatch(/127\.0\.0\.1.*loopback/);
    expect(await refusal('http://localhost:7676/app.apk')).toMatch(/loopback|own addresses/);
    expect(await refusal(`http://${net.hub}:8080/app.apk`)).toContain("the lab box's own addresses");
    expect(await refusal('http://169.254.169.254/latest/meta-data')).toContain('link-local');
    expect(await refusal(`http://[::1]:8080/app.apk`)).toContain('loopback');
    expect(await refusal(`http://${net.ns}:8080/to-the-lab.apk`)).toContain("the lab box's own addresses");
    expect(await refusal(`http://${net.ns}:8080/missing.apk`)).toContain('answered 404');
    expect(await refusal(`http://${net.ns}:8080/big.apk`)).toContain(`limit of ${MAX_ASSET_BYTES} bytes`);
    expect(await refusal(`http://${net.ns}:8080/endless.apk`)).toContain(`limit of ${MAX_ASSET_BYTES} bytes`);
    expect(await refusal(`http://${net.ns}:8080/silent.apk`)).toContain(`sent nothing for ${UPLOAD_IDLE_SECONDS} s`);
    // A byte every 100 ms is never silent for the idle limit, but far under the least rate once that much time has passed.
    expect(await refusal(`http://${net.ns}:8080/trickle.apk`)).toMatch(/sent \d+ bytes in \d+ s, under 16 KiB\/s/);
    expect(await refusal(`http://${net.ns}:8080/not-an-app.apk`)).toContain('not an app');
    expect(await refusal('file:///etc/passwd')).toContain('names a path');
    expect(await refusal(Buffer.from(stored).toString('base64'))).toContain('takes no app as base64');
    // Another organization's stored file is refused in the very words of an id that never existed.
    const theirs = await uploadReadyApp(c, owner, installedLater, 'later.apk');
    const unknown = '00000000-0000-4000-8000-000000000000';
    expect(await refusal(`lab://files/${theirs}`, strangerKey)).toBe((await refusal(`lab://files/${unknown}`, strangerKey)).replace(unknown, theirs));
    // Nothing was allocated for any of them.
    const sessions = (await c.call('GET', '/sessions', { token: owner })).body.data as Array<{ devices: Array<{ status: string }> }>;
    expect(sessions.flatMap((s) => s.devices).filter((d) => d.status !== 'released')).toEqual([]);
  }, 60_000);

  it('connects to the address it checked: a name that resolves elsewhere the next time (DNS rebinding) is not asked again', async () => {
    const blobs = new BlobStore(join(dir, 'blobs'));
    const answers: string[] = [];
    // The first answer is the namespace's address; any later one would be the lab box's own loopback.
    const resolve = async (host: string) => {
      answers.push(host);
      return [{ address: answers.length === 1 ? net.ns : '127.0.0.1', family: 4 }];
    };
    const got = await downloadApp('http://apps.rebind.test:8080/app.apk', blobs, { maxBytes: MAX_ASSET_BYTES, timeoutMs: 5_000, resolve });
    expect(got.notModified).toBe(false);
    expect(got.notModified === false && got.content.sha256).toBe(sha256(downloaded));
    expect(answers).toEqual(['apps.rebind.test']);
    if (!got.notModified) await got.content.discard();
    // And a name that resolves to loopback at once is refused before any connection.
    await expect(downloadApp('http://apps.rebind.test:8080/app.apk', blobs, { maxBytes: MAX_ASSET_BYTES, timeoutMs: 5_000, resolve })).rejects.toThrow(/127\.0\.0\.1, a loopback/);
  });

  it('downloads over https from the address it checked, verifying the certificate against the URL\'s own name', async () => {
    const blobs = new BlobStore(join(dir, 'blobs'));
    const toNamespace = async () => [{ address: net.ns, family: 4 }];
    const options = { maxBytes: MAX_ASSET_BYTES, timeoutMs: 5_000, resolve: toNamespace, ca: tls.ca };
    const got = await downloadApp('https://apps.lab.test:8443/app.apk', blobs, options);
    expect(got.notModified === false && got.content.sha256).toBe(sha256(downloaded));
    if (!got.notModified) await got.content.discard();
    // The same address under a name its certificate does not carry, and a CA the lab does not trust: refused, saying why.
    await expect(downloadApp('https://other.lab.test:8443/app.apk', blobs, options)).rejects.toThrow(/could not be downloaded: ERR_TLS_CERT_ALTNAME_INVALID, its certificate was not accepted \(Hostname\/IP does not match/);
    await expect(downloadApp('https://apps.lab.test:8443/app.apk', blobs, { ...options, ca: undefined })).rejects.toThrow(/could not be downloaded: UNABLE_TO_VERIFY_LEAF_SIGNATURE, its certificate was not accepted .*NODE_EXTRA_CA_CERTS/);
  });

  it('a retry of a request its client gave up on keeps its place; /status is ready only while a phone is free to the caller', async () => {
    expect((await wd('GET', '/status', undefined, '')).body.value).toMatchObject({ ready: false });
    // Free once the last run's cleanup on its phone has finished.
    await waitFor('both phones free to the key', async () => (await wd('GET', '/status')).body.value.freePhones === 2, 30_000);
    expect((await wd('GET', '/status')).body.value).toMatchObject({ ready: true, freePhones: 2 });
    // Both phones taken: one by the lab's owner through the API, the other by another team's WebDriver session. The
    // contested one is Pixel 8, whose first session (the driver's server installed) the first test has had.
    const holder = await allocateInUse(c, owner, 'Pixel 8');
    const theirs = await labSession(lab.engine.api, strangerKey, { platformName: 'Android', 'appium:deviceName': 'Pixel 7', 'benchtop:options': NO_VIDEO });
    expect((await wd('GET', '/status')).body.value).toMatchObject({ ready: false, freePhones: 0 });
    expect((await wd('GET', '/status', undefined, strangerKey)).body.value).toMatchObject({ ready: false, freePhones: 0 });

    const queued = async () => {
      const list = (await c.call('GET', '/sessions', { token: owner })).body.data as Array<{ devices: Array<{ id: string; status: string }> }>;
      return list.flatMap((s) => s.devices).filter((d) => d.status === 'queued');
    };
    // WebdriverIO's request is cut (as its own time-out cuts it after connectionRetryTimeout, 120 s by default), and
    // WebdriverIO sends it again on a new connection, as it does after a time-out or a reset.
    const relay = await countingRelay(Number(new URL(origin).port));
    const first = remote({
      protocol: 'http', hostname: '127.0.0.1', port: relay.port, path: '/wd/hub', user: 'ci', key, logLevel: 'silent',
      connectionRetryTimeout: 120_000, connectionRetryCount: 1,
      capabilities: { platformName: 'Android', 'appium:deviceName': 'Pixel 8', 'appium:automationName': 'UiAutomator2', 'benchtop:options': NO_VIDEO } as WebdriverIO.Capabilities,
    });
    const [mine] = await waitFor('the first request queued', async () => ((await queued()).length === 1 ? queued() : undefined));
    // A later request for the same phone, from the same organization.
    const later = new AbortController();
    const second = fetch(`${origin}/wd/hub/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: JSON.stringify({ capabilities: { alwaysMatch: { platformName: 'Android', 'appium:deviceName': 'Pixel 8', 'benchtop:options': { name: 'later', ...NO_VIDEO } } } }),
      signal: later.signal,
    }).catch(() => undefined);
    await waitFor('the later request queued', async () => (await queued()).length === 2);
    relay.cut();
    await waitFor('the first request sent again', () => relay.newSessions() === 2, 10_000);
    // The phone comes free: the retry, in its first request's place, gets it; the later request still waits.
    expect((await c.call('POST', `/sessions/${holder.session}/devices/${holder.id}/release`, { token: owner })).status).toBe(202);
    const driver = await first;
    expect((driver.capabilities as Record<string, unknown>)['appium:udid']).toBe(serialOf('Pixel 8'));
    const waiting = await queued();
    expect(waiting).toHaveLength(1);
    expect(waiting[0]!.id).not.toBe(mine!.id);
    // Nobody sends the later request again: its place is kept for the retry window, then given up and its phone's
    // allocation released, so an abandoned request cannot hold a place in the queue for ever.
    later.abort();
    await second;
    const abandonedAt = performance.now();
    const devices = async () => ((await c.call('GET', '/sessions', { token: owner })).body.data as Array<{ devices: Array<{ id: string; status: string; releaseReason: string | null }> }>).flatMap((s) => s.devices);
    await new Promise((r) => setTimeout(r, 1000));
    expect((await devices()).find((d) => d.id === waiting[0]!.id)).toMatchObject({ status: 'queued' });
    await waitFor('the abandoned place given up', async () => (await devices()).find((d) => d.id === waiting[0]!.id)?.status === 'released', (RETRY_SECONDS + 10) * 1000);
    expect(performance.now() - abandonedAt).toBeGreaterThan((RETRY_SECONDS - 1) * 1000);
    expect((await devices()).find((d) => d.id === waiting[0]!.id)).toMatchObject({ releaseReason: 'webdriver_client_gone' });
    await driver.deleteSession();
    await theirs.deleteSession();
    relay.close();
  }, 150_000);
});
