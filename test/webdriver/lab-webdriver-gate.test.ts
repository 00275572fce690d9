import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServe } from '../../scripts/build-serve.mjs';
import { call, client } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { remotePorts } from '../support/remote.js';
import { DEMO_OWNER, startDemoLab, type DemoLab } from '../support/lab-processes.js';
import type { ServeProcess } from '../support/serve-process.js';
import { labSession, NO_VIDEO } from '../support/webdriver.js';

/**
 * The WebDriver gate (issue 41, findings 1, 2, 3, 7 and 9's first): what a caller names reaches Appium, which acts on
 * the lab's host, only through allowlists; a command is a route of its own session, parsed on the bytes that came on
 * the socket; large bodies stream on, few at a time; Appium's errors lose its stack and the host's paths.
 */
const hasAdb = adbOrSkip();

interface RawReply {
  status: number;
  headers: string;
  body: string;
}

/** One request written byte for byte on a TCP socket: no client library normalises its path. */
async function raw(port: number, head: string, body = '', type = 'application/json'): Promise<RawReply> {
  const socket = connect(port, '127.0.0.1');
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const length = body ? `${type ? `Content-Type: ${type}\r\n` : ''}Content-Length: ${Buffer.byteLength(body)}\r\n` : '';
  socket.end(`${head}\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n${length}\r\n${body}`);
  const chunks: Buffer[] = [];
  for await (const chunk of socket) chunks.push(chunk as Buffer);
  return parseReply(Buffer.concat(chunks).toString('utf8'));
}

function parseReply(text: string): RawReply {
  const split = text.indexOf('\r\n\r\n');
  const headers = text.slice(0, split);
  let body = text.slice(split + 4);
  if (/transfer-encoding: chunked/i.test(headers)) {
    let out = '';
    for (let at = 0; ;) {
      const eol = body.indexOf('\r\n', at);
      const size = parseInt(body.slice(at, eol), 16);
      if (!size) break;
      out += body.slice(eol + 2, eol + 2 + size);
      at = eol + 2 + size + 2;
    }
    body = out;
  }
  return { status: Number(/^HTTP\/1\.1 (\d+)/.exec(headers)?.[1]), headers, body };
}

/** The three requests of finding 1, on the raw socket: each must be refused by the lab itself, as a W3C error. */
async function traversals(port: number, mine: string, otherSerial: string, adbPort: number): Promise<RawReply[]> {
  const other = JSON.stringify({ capabilities: { alwaysMatch: { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'appium:udid': otherSerial, 'appium:adbPort': adbPort } } });
  return [
    await raw(port, `GET /wd/hub/session/${mine}/url/../../../status HTTP/1.1`),
    await raw(port, `GET /wd/hub/session/${mine}/%2E%2E/%2E%2E/status HTTP/1.1`),
    await raw(port, `GET /wd/hub/session/${mine}/%2e./source HTTP/1.1`),
    await raw(port, `GET /wd/hub/session/${mine}/element/x%2F..%2F..%2F..%2Fstatus/text HTTP/1.1`),
    await raw(port, `GET /wd/hub/session/${mine}//source HTTP/1.1`),
    await raw(port, `POST /wd/hub/session/${mine}/../../session HTTP/1.1`, other),
    await raw(port, `POST /wd/hub/session/${mine}/%2E%2E/%2E%2E/session HTTP/1.1`, other),
  ];
}

/** A W3C error of the lab's, never Appium's own /status or a session Appium made. */
function expectRefused(reply: RawReply): void {
  const value = JSON.parse(reply.body).value;
  expect(reply.status, reply.body).toBeGreaterThanOrEqual(400);
  expect(reply.status, reply.body).toBeLessThan(500);
  expect(value.error, reply.body).toEqual(expect.any(String));
  expect(reply.body).not.toContain('The server is ready');
  expect(value.sessionId).toBeUndefined();
}

describe.skipIf(!hasAdb)('The WebDriver gate: allowlists in front of Appium', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let key: string;
  let origin: string;
  let port: number;
  let mine: WebdriverIO.Browser;
  /** Another organization's holding of the Pixel 7, which nothing of the owner's may touch. */
  let theirs: { token: string; session: string; id: string; serial: string };
  let scratch: string;
  let listener: http.Server;
  let listened: string[];
  let listenerUrl: string;

  beforeAll(async () => {
    // A disk that has less free than this lab wants for a run's video (every disk: 1 EB): the runs record none, as a
    // lab whose disk is nearly full would.
    lab = await startLab([{ model: 'Pixel 8', osVersion: '14', uiautomator2ServerInstalled: true }, { model: 'Pixel 7', osVersion: '13' }], { remotePorts: remotePorts(8), remotePortRestSeconds: 1, videoMinFreeMb: 2 ** 40 });
    c = client(lab.engine.api);
    owner = await c.login();
    key = await c.createKey(owner);
    origin = new URL(lab.engine.api).origin;
    port = Number(new URL(lab.engine.api).port);
    await waitFor('both phones in the fleet', async () => {
      const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ name: string; state: string }>;
      return ['Pixel 8', 'Pixel 7'].every((name) => fleet.some((d) => d.name === name && d.state === 'device'));
    }, 30_000);
    const stranger = await c.signup('other-team@lab.test');
    theirs = { token: stranger.token, ...(await allocateInUse(c, stranger.token, 'Pixel 7')) };
    mine = await labSession(lab.engine.api, key, { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'appium:deviceName': 'Pixel 8', 'appium:newCommandTimeout': 0, 'benchtop:options': { name: 'the gate', video: true } });

    scratch = mkdtempSync(join(tmpdir(), 'benchtop-gate-'));
    listened = [];
    listener = http.createServer((request, response) => {
      listened.push(`${request.method} ${request.url}`);
      response.end('ok');
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    listenerUrl = `http://127.0.0.1:${(listener.address() as { port: number }).port}`;
  }, 120_000);

  afterAll(async () => {
    await mine?.deleteSession().catch(() => undefined);
    listener?.close();
    await lab?.stop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  const wd = async (method: string, path: string, body?: unknown) => {
    const r = await fetch(`${origin}/wd/hub${path}`, {
      method,
      headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await r.text();
    return { status: r.status, text, body: JSON.parse(text) as { value: { error?: string; message?: string; stacktrace?: string } & Record<string, unknown> } };
  };
  const newSession = (alwaysMatch: Record<string, unknown>) =>
    wd('POST', '/session', { capabilities: { alwaysMatch: { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'benchtop:options': NO_VIDEO, ...alwaysMatch } } });
  const ownAllocations = async () => {
    const sessions = (await c.call('GET', '/sessions', { token: owner })).body.data as Array<{ devices: Array<{ status: string }> }>;
    return sessions.flatMap((s) => s.devices).filter((d) => d.status !== 'released');
  };
  /** The other organization's phone as its holder sees it: still theirs, and never driven by Appium. */
  const expectTheirsUntouched = async () => {
    const row = (await c.call('GET', `/sessions/${theirs.session}/devices/${theirs.id}`, { token: theirs.token })).body;
    expect(row).toMatchObject({ status: 'in_use', info: { serial: theirs.serial } });
    expect(lab.phone(theirs.serial).state.thirdPartyPackages).not.toContain('io.appium.uiautomator2.server');
  };
  const privateAdbPort = () => (lab.engine.engine.services.webdriver as unknown as { options: { privateAdb: { ensure(): Promise<number> } } }).options.privateAdb.ensure();

  it('dot segments after a session id, encoded or not, on a raw socket, are refused by the lab: Appium never sees them', async () => {
    const replies = await traversals(port, mine.sessionId, theirs.serial, await privateAdbPort());
    for (const reply of replies) expectRefused(reply);
    expect(JSON.parse(replies[0]!.body).value.error).toBe('unknown command');
    await expectTheirsUntouched();
    // The session still answers its own commands.
    expect(await mine.getPageSource()).toContain('<hierarchy');
  }, 60_000);

  it('appium:options cannot carry the lab\'s own capabilities (another team\'s phone, the lab\'s adb port)', async () => {
    const adbPort = await privateAdbPort();
    const before = (await ownAllocations()).length;
    for (const options of [{ udid: theirs.serial, adbPort }, { adbPort }, { 'appium:systemPort': 8200 }, { webDriverAgentUrl: 'http://127.0.0.1:8100' }]) {
      const refused = await newSession({ 'appium:options': options });
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.value.error).toBe('invalid argument');
    }
    expect((await newSession({ 'appium:options': { adbPort } })).body.value.message).toContain('appium:adbPort');
    expect((await ownAllocations()).length).toBe(before);
    await expectTheirsUntouched();
  }, 30_000);

  it('a malformed or oversized request is a W3C client error, never a 500', async () => {
    const auth = `Authorization: Bearer ${key}`;
    const noType = await raw(port, `POST /wd/hub/session HTTP/1.1\r\n${auth}`, '{}', '');
    const huge = await raw(port, `POST /wd/hub/session HTTP/1.1\r\n${auth}`, JSON.stringify({ capabilities: { alwaysMatch: { platformName: 'Android', pad: 'x'.repeat(2 * 1024 * 1024) } } }));
    const hugeScript = await raw(port, `POST /wd/hub/session/${mine.sessionId}/execute/sync HTTP/1.1`, JSON.stringify({ script: 'mobile: shell', args: [{ command: 'x'.repeat(2 * 1024 * 1024) }] }));
    const noScript = await raw(port, `POST /wd/hub/session/${mine.sessionId}/execute/sync HTTP/1.1`);
    for (const reply of [noType, huge, hugeScript, noScript]) {
      expect(reply.status, reply.body).toBe(400);
      expect(JSON.parse(reply.body).value.error).toBe('invalid argument');
    }
  }, 30_000);

  it('a host executable named as chromedriver never runs', async () => {
    const marker = join(scratch, 'chromedriver-ran');
    const program = join(scratch, 'chromedriver');
    writeFileSync(program, `#!/bin/sh\necho "$@" > ${marker}\n`);
    chmodSync(program, 0o755);
    for (const caps of [
      { browserName: 'chrome', 'appium:chromedriverExecutable': program, 'appium:chromedriverArgs': ['--verbose'] },
      { 'appium:chromedriverExecutable': program },
      { 'appium:options': { chromedriverExecutable: program } },
      { 'appium:chromedriverExecutableDir': scratch },
      { 'appium:chromedriverChromeMappingFile': join(scratch, 'map.json') },
      { 'appium:keystorePath': join(scratch, 'x.keystore'), 'appium:useKeystore': true },
    ]) {
      const refused = await newSession(caps);
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.value.error).toBe('invalid argument');
    }
    // In a running session, a webview's context would start chromedriver: refused too.
    expect((await wd('POST', `/session/${mine.sessionId}/context`, { name: 'WEBVIEW_1' })).status).toBe(404);
    expect((await wd('POST', `/session/${mine.sessionId}/execute/sync`, { script: 'return 1', args: [] })).body.value.error).toBe('invalid argument');
    await new Promise((r) => setTimeout(r, 1000));
    expect(existsSync(marker)).toBe(false);
    expect(await ownAllocations()).toHaveLength(1);
  }, 30_000);

  it('a loopback URL named as an app or an upload gets no request from the lab\'s host', async () => {
    const url = `${listenerUrl}/app.apk`;
    for (const caps of [{ 'appium:app': url }, { app: url }, { 'appium:otherApps': [url] }, { 'appium:options': { app: url } }]) {
      const refused = await newSession(caps);
      expect(refused.status, refused.text).toBe(400);
      // The lab reads apps itself (issue 43), and never from its own loopback.
      expect(refused.body.value.message).toContain('loopback');
    }
    const session = `/session/${mine.sessionId}`;
    const commands: Array<[string, unknown, number]> = [
      ['/execute/sync', { script: 'mobile: installApp', args: [{ appPath: url }] }, 400],
      ['/execute/sync', { script: 'mobile: installMultipleApks', args: [{ apks: [url] }] }, 400],
      ['/execute/sync', { script: 'mobile: stopMediaProjectionRecording', args: [{ remotePath: url }] }, 400],
      ['/appium/device/install_app', { appPath: url }, 400],
      ['/appium/stop_recording_screen', { options: { remotePath: url, method: 'PUT' } }, 400],
      ['/appium/start_recording_screen', { options: { remotePath: url } }, 400],
    ];
    for (const [path, body, status] of commands) {
      const refused = await wd('POST', `${session}${path}`, body);
      expect(refused.status, `${path}: ${refused.text}`).toBe(status);
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(listened).toEqual([]);
    // What the allowlist forwards still works: a mobile: extension, and mobile: shell on the held phone.
    expect(await mine.execute('mobile: shell', { command: 'echo', args: ['gate'] })).toContain('gate');
  }, 60_000);

  it('a benchtop: status body over 64 KiB is refused, never sent on to Appium', async () => {
    const big = await wd('POST', `/session/${mine.sessionId}/execute/sync`, { script: 'benchtop: status', args: [{ status: 'passed', reason: 'x'.repeat(70 * 1024) }] });
    expect(big.status).toBe(400);
    expect(big.body.value).toMatchObject({ error: 'invalid argument', message: expect.stringContaining('64 KiB') });
    expect((await wd('POST', `/session/${mine.sessionId}/execute/sync`, { script: 'benchtop: status', args: [{ status: 'passed' }] })).status).toBe(200);
  }, 30_000);

  it('Appium\'s errors reach the caller without a stack trace or the host\'s paths', async () => {
    // Appium's own failure (its adb pull of a file the phone does not have), not the phone's UiAutomator2 server's.
    const error = await wd('POST', `/session/${mine.sessionId}/appium/device/pull_file`, { path: '/sdcard/Download/no-such-file.txt' });
    expect(error.status).toBeGreaterThanOrEqual(400);
    expect(error.body.value.error).toEqual(expect.any(String));
    expect(error.body.value.stacktrace).toBe('');
    expect(error.body.value.message).toContain('/sdcard/Download/no-such-file.txt');
    // The host's adb (under its Android SDK), the data dir Appium's files are in, the install, HOME, the temp dir.
    for (const path of ['platform-tools', process.cwd(), join(process.cwd(), 'node_modules'), homedir(), lab.engine.dataDir, tmpdir()]) expect(error.text).not.toContain(path);
  }, 30_000);

  it('a large body streams on to Appium; a third large one of a session at once is refused at once, not held', async () => {
    const session = `/session/${mine.sessionId}`;
    // A 3 MiB file with its length stated: streamed, and on the phone as sent.
    const file = Buffer.alloc(3 * 1024 * 1024, 'benchtop-gate ');
    const pushed = await wd('POST', `${session}/appium/device/push_file`, { path: '/sdcard/Download/gate.txt', data: file.toString('base64') });
    expect(pushed.status, pushed.text).toBe(200);
    const pulled = await wd('POST', `${session}/appium/device/pull_file`, { path: '/sdcard/Download/gate.txt' });
    expect(Buffer.from(pulled.body.value as unknown as string, 'base64').equals(file)).toBe(true);

    // Bodies of no stated length (chunked) are large: two go on, their ends held back; a third gets its answer at once.
    const open = async () => {
      const socket = connect(port, '127.0.0.1');
      await new Promise((resolve) => socket.once('connect', resolve));
      const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
      socket.write(`POST /wd/hub${session}/appium/device/push_file HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${chunk('{"path":"/sdcard/Download/chunked.txt","data":"')}`);
      const reply = (async () => {
        const chunks: Buffer[] = [];
        for await (const c of socket) chunks.push(c as Buffer);
        return parseReply(Buffer.concat(chunks).toString('utf8'));
      })();
      return { finish: () => socket.write(`${chunk(`${Buffer.from('hello').toString('base64')}"}`)}0\r\n\r\n`), reply };
    };
    const first = await open();
    const second = await open();
    await new Promise((r) => setTimeout(r, 500));
    const started = performance.now();
    const third = await open();
    const refused = await third.reply;
    expect(performance.now() - started).toBeLessThan(2000);
    expect(refused.status).toBe(400);
    expect(JSON.parse(refused.body).value.message).toContain('at most 2');
    first.finish();
    second.finish();
    expect((await first.reply).status).toBe(200);
    expect((await second.reply).status).toBe(200);
  }, 60_000);

  it('three concurrent 64 MiB bodies on one session: the engine holds none of them whole, and its memory comes back', async () => {
    const MiB = 1024 * 1024;
    // Large enough that holding one whole shows far above the noise (the engine's peak grows by about 1 MB when it
    // streams them), small enough that Appium parses the two it is sent in a few seconds.
    const size = 64 * MiB;
    const rss = () => process.memoryUsage().rss;
    global.gc?.();
    const before = rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50);
    /** A JSON body of `size` bytes made as it is sent: the sender holds 1 MiB of it at a time. */
    const send = () =>
      new Promise<{ status: number; ms: number }>((resolve, reject) => {
        const started = performance.now();
        const head = '{"vendor":"benchtop","event":"large body","padding":"';
        const tail = '"}';
        let left = size - head.length - tail.length;
        const pad = Buffer.alloc(MiB, 'a');
        const body = Readable.from((function* () {
          yield Buffer.from(head);
          while (left > 0) {
            const n = Math.min(left, MiB);
            left -= n;
            yield n === MiB ? pad : pad.subarray(0, n);
          }
          yield Buffer.from(tail);
        })());
        const request = http.request(`${origin}/wd/hub/session/${mine.sessionId}/appium/log_event`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': size } }, (response) => {
          response.resume();
          response.on('end', () => resolve({ status: response.statusCode!, ms: performance.now() - started }));
        });
        request.on('error', (error) => (error.message.includes('EPIPE') || error.message.includes('ECONNRESET') ? resolve({ status: 0, ms: performance.now() - started }) : reject(error)));
        body.pipe(request);
      });
    const results = await Promise.all([send(), send(), send()]);
    const done = performance.now();
    const afterAll = rss();
    let settled = afterAll;
    while (performance.now() - done < 30_000 && settled - before > size / 2) {
      global.gc?.();
      await new Promise((r) => setTimeout(r, 500));
      settled = rss();
    }
    clearInterval(sampler);
    const mb = (n: number) => `${Math.round(n / MiB)} MB`;
    console.log(`three concurrent 64 MiB bodies on one session: answers ${results.map((r) => `${r.status} in ${Math.round(r.ms)} ms`).join(', ')}; engine RSS before ${mb(before)}, peak ${mb(peak)} (+${mb(peak - before)}), at the end ${mb(afterAll)}, ${Math.round((performance.now() - done) / 1000)} s later ${mb(settled)}`);
    // Two went on to Appium (which answers them), the third was refused at once.
    expect(results.filter((r) => r.status === 400 || r.status === 0)).not.toHaveLength(0);
    expect(peak - before).toBeLessThan(size * 0.75);
    expect(settled - before).toBeLessThan(size / 2);
    // The session goes on.
    expect(await mine.getPageSource()).toContain('<hierarchy');
  }, 180_000);

  it("a run that asked for a video on a disk nearly full records none (the phone encodes nothing), and its result says why", async () => {
    expect((await lab.phones[0]!.shell('ps -A')).output.toString()).not.toContain('screenrecord');
    await mine.deleteSession();
    const result = await waitFor('the gate\'s test result', async () => {
      const list = (await c.call('GET', '/test-results', { token: owner })).body.data as Array<{ id: string; name: string; status: string; stats: Record<string, unknown> }>;
      const r = list.find((x) => x.name === 'the gate');
      return r && r.status !== 'running' ? r : undefined;
    }, 30_000);
    expect(result.stats).toMatchObject({ video: 'low-disk' });
    const assets = (await c.call('GET', `/test-results/${result.id}/assets`, { token: owner })).body.data as Array<{ id: string; name: string }>;
    expect(assets.map((a) => a.name)).not.toContain('video.mp4');
    const appiumLog = assets.find((a) => a.name === 'appium.log')!;
    const text = await (await fetch(`${lab.engine.api}/test-results/${result.id}/assets/${appiumLog.id}`, { headers: { authorization: `Bearer ${owner}` } })).text();
    expect(text).toMatch(/\[benchtop\] no video: the lab's disk has \d+ MB free, under the \d+ MB a run's video needs \(BENCHTOP_VIDEO_MIN_FREE_MB\)/);
  }, 60_000);
});

describe.skipIf(!hasAdb)('The WebDriver gate in the bundle npm run serve runs', () => {
  let lab: DemoLab;
  let serve: ServeProcess;
  let dir: string;

  beforeAll(async () => {
    await buildServe();
    dir = mkdtempSync(join(tmpdir(), 'benchtop-gate-bundle-'));
    lab = await startDemoLab(dir);
    serve = await lab.serve();
  }, 120_000);

  afterAll(async () => {
    serve?.child.kill('SIGTERM');
    await serve?.exited;
    await lab?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('refuses the traversals on a raw socket, and keeps the run\'s log with its elements named', async () => {
    const c = client(serve.api);
    const token = (await call(serve.api, 'POST', '/auth/login', { body: DEMO_OWNER })).body.token as string;
    const key = await c.createKey(token);
    const fleet = await waitFor('the demo phone in the fleet', async () =>
      ((await call(serve.api, 'GET', '/fleet/devices', { token })).body.data as Array<{ serial: string; state: string }>).find((d) => d.state === 'device'), 30_000);
    const driver = await labSession(serve.api, key, { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'benchtop:options': NO_VIDEO });
    const replies = await traversals(Number(new URL(serve.api).port), driver.sessionId, fleet.serial, lab.adb.port);
    for (const reply of replies) expectRefused(reply);
    expect(await driver.getPageSource()).toContain('<hierarchy');
    // The run's log, as the bundle keeps it: a click names the locator that found its element.
    await driver.activateApp('com.android.settings');
    await (await driver.$('//android.widget.TextView[@text="Wi-Fi"]')).click();
    const resultId = (driver.capabilities as Record<string, unknown>)['benchtop:testResult'] as string;
    // A link a CI log can print: the run's page, at the address the suite reached the lab by.
    const page = (driver.capabilities as Record<string, unknown>)['benchtop:testResultUrl'] as string;
    expect(page).toBe(`${new URL(serve.api).origin}/test-results/${resultId}`);
    const opened = await fetch(page);
    expect(opened.status).toBe(200);
    expect(opened.headers.get('content-type')).toMatch(/^text\/html/);
    await driver.deleteSession();
    const log = await waitFor('the run\'s commands.log', async () => {
      const assets = (await call(serve.api, 'GET', `/test-results/${resultId}/assets`, { token })).body.data as Array<{ id: string; name: string }> | undefined;
      const asset = assets?.find((a) => a.name === 'commands.log');
      return asset && (await fetch(`${serve.api}/test-results/${resultId}/assets/${asset.id}`, { headers: { authorization: `Bearer ${token}` } })).text();
    }, 30_000);
    expect(log).toMatch(/POST \/element\/[^/ ]+\/click \(xpath \/\/android\.widget\.TextView\[@text="Wi-Fi"\]\) 200/);
  }, 120_000);
});
