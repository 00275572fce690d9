import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLabPairRecord } from '../../src/main/engine/fleet/ios/private-usbmuxd.js';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { buildIpa } from '../support/app-fixtures.js';
import { client, errorCode, startEngine, type TestEngine } from '../support/engine.js';
import { ideviceToolOrSkip, ideviceToolsOrSkip, startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';
import { freePort, refused, remotePorts } from '../support/remote.js';

const run = promisify(execFile);
const tools = ideviceToolsOrSkip() && ideviceToolOrSkip('ideviceinstaller', 'ideviceinstaller') && ideviceToolOrSkip('idevicesyslog', 'libimobiledevice-utils');

describe.runIf(tools)('remote connect: libimobiledevice through a private usbmuxd that shows only the held iPhone', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;
  let session: string;
  let held: string;
  let other: string;
  let dir: string;
  let opened: { address: string; command: string; webDriverAgentUrl: string };
  const env = () => ({ ...process.env, USBMUXD_SOCKET_ADDRESS: opened.address });
  const path = () => `/sessions/${session}/devices/${held}/remote-connect`;
  const ports = remotePorts(3);

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Held iPhone' }, { name: 'Other iPhone' }]);
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), adb: null, lanPort: 0, remotePorts: ports, remotePortRestSeconds: 2 });
    c = client(engine.api);
    owner = await c.login();
    dir = mkdtempSync(join(tmpdir(), 'benchtop-remote-ios-'));
    await waitFor('both iPhones in the fleet', async () => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ state: string }>).filter((p) => p.state === 'device').length === 2, 15_000);
    session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const filters = [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }, { attribute: 'name', operator: 'EQUALS', value: 'Held iPhone' }];
    const a = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters } });
    const device = await waitFor('in_use', async () => {
      const d = (await c.call('GET', `/sessions/${session}/devices/${a.body.id}`, { token: owner })).body;
      return d.status === 'in_use' && d;
    }, 15_000);
    held = device.info.serial;
    other = bus.phones.find((p) => p.udid !== held)!.udid;
    // The other iPhone is held too (for the last test), but never opened: the private usbmuxd must still hide it.
    const second = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters: [filters[0], { ...filters[1]!, value: 'Other iPhone' }] } });
    await waitFor('the other in_use', async () => (await c.call('GET', `/sessions/${session}/devices/${second.body.id}`, { token: owner })).body.status === 'in_use', 15_000);
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('opens a private usbmuxd (201, 200 again) with its export command and a WebDriverAgent URL of its own, passing over a pool port another program holds', async () => {
    const squatter = createServer();
    await new Promise<void>((resolve) => squatter.listen(ports.first, '127.0.0.1', () => resolve()));
    const r = await c.call('POST', path(), { token: owner }).finally(() => squatter.close());
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    opened = r.body;
    expect(opened.address).toBe(`127.0.0.1:${ports.first + 1}`);
    expect(opened.webDriverAgentUrl).toBe(`http://127.0.0.1:${ports.first + 2}`);
    expect(opened.command).toBe(`export USBMUXD_SOCKET_ADDRESS=${opened.address}`);
    expect(opened.webDriverAgentUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await c.call('POST', path(), { token: owner })).status).toBe(200);
  });

  it('idevice_id lists only the held phone, and ideviceinfo reads it but not another phone', async () => {
    const listed = await run('idevice_id', ['-l'], { env: env(), timeout: 10_000 });
    expect(listed.stdout.trim().split('\n')).toEqual([held]);
    const info = await run('ideviceinfo', ['-u', held, '-k', 'DeviceName'], { env: env(), timeout: 15_000 });
    expect(info.stdout.trim()).toBe('Held iPhone');
    await expect(run('ideviceinfo', ['-u', other, '-k', 'DeviceName'], { env: env(), timeout: 15_000 })).rejects.toThrow();
  }, 30_000);

  it('ideviceinstaller installs an IPA, idevicesyslog follows the phone, and WDA answers at its URL with no header', async () => {
    const ipa = join(dir, 'remote.ipa');
    writeFileSync(ipa, buildIpa({ bundleId: 'com.example.remote', displayName: 'Remote Hello', shortVersion: '1.0', build: '1' }));
    const installed = await run('ideviceinstaller', ['-u', held, '-i', ipa], { env: env(), timeout: 30_000 });
    expect(installed.stdout).toMatch(/Install: Complete/);
    const phone = bus.phones.find((p) => p.udid === held)!;
    expect(phone.apps.get('com.example.remote')).toMatchObject({ name: 'Remote Hello' });

    const child = spawn('idevicesyslog', ['-u', held], { env: env() });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await waitFor('idevicesyslog connected', () => out.includes('[connected]'), 10_000);
      const status = await fetch(`${opened.webDriverAgentUrl}/status`);
      expect(status.status).toBe(200);
      expect(((await status.json()) as { value: { ready: boolean } }).value.ready).toBe(true);
      const launched = await fetch(`${opened.webDriverAgentUrl}/wda/apps/launch`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bundleId: 'com.apple.mobilenotes' }) });
      expect(launched.status).toBe(200);
      await waitFor('the launch line in idevicesyslog', () => out.includes('Launching application com.apple.mobilenotes'), 5000);
    } finally {
      child.kill();
    }
    const shown = await c.call('GET', path(), { token: owner });
    expect(shown.body.connections.length).toBeGreaterThan(0);
    expect(shown.body.connections[0]).toMatchObject({ peer: expect.stringMatching(/^127\.0\.0\.1:\d+$/), fingerprint: null });
  }, 60_000);

  it('hands out a pair record of the checkout, never the lab\'s, whose keys open nothing but this checkout', async () => {
    const lab = await readLabPairRecord(parseUsbmuxdAddress(bus.address), held);
    const given = await readLabPairRecord(parseUsbmuxdAddress(opened.address), held);
    expect(given?.hostId).toMatch(/^[0-9A-F-]{36}$/);
    expect(given!.hostId).not.toBe(lab!.hostId);
    expect(given!.hostPrivateKey).not.toBe(lab!.hostPrivateKey);
    // Another phone's record is not there at all.
    expect(await readLabPairRecord(parseUsbmuxdAddress(opened.address), other)).toBeUndefined();
  }, 30_000);

  it('over LAN sharing, the teammate\'s command carries both usbmuxd and WebDriverAgent through the HTTPS port', async () => {
    expect((await c.call('PATCH', '/lab/settings', { token: owner, body: { lanSharing: true } })).body.lanSharing.enabled).toBe(true);
    const lanCommand: string = (await c.call('GET', path(), { token: owner })).body.lanCommand;
    const [mux, wda] = [opened.address, opened.webDriverAgentUrl].map((a) => a.split(':').at(-1));
    expect(lanCommand.endsWith(` ${mux},${wda}`)).toBe(true);
    // The teammate here is on the lab box: the LAN address is loopback, and the lab's own ports are taken.
    const local = [await freePort(), await freePort()];
    const command = lanCommand.replace(/https:\/\/\S+?:(\d+) /, 'https://127.0.0.1:$1 ').replace(/ [\d,]+$/, ` ${local.join(',')}`);
    const tunnel = spawn('sh', ['-c', `exec ${command}`], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    tunnel.stderr!.on('data', (d: Buffer) => (log += d.toString()));
    try {
      await waitFor('both local ends', () => log.split('now reaches the phone').length === 3, 10_000);
      const env = { ...process.env, USBMUXD_SOCKET_ADDRESS: `127.0.0.1:${local[0]}` };
      expect((await run('idevice_id', ['-l'], { env, timeout: 10_000 })).stdout.trim()).toBe(held);
      expect((await run('ideviceinfo', ['-u', held, '-k', 'DeviceName'], { env, timeout: 15_000 })).stdout.trim()).toBe('Held iPhone');
      const status = await fetch(`http://127.0.0.1:${local[1]}/status`);
      expect(status.status).toBe(200);
    } finally {
      tunnel.kill();
    }
  }, 30_000);

  it('at release the listeners close: the private usbmuxd and the WDA URL refuse, and their ports rest (no_free_port meanwhile)', async () => {
    const mux = Number(opened.address.split(':')[1]);
    const wda = Number(new URL(opened.webDriverAgentUrl).port);
    // The engine's clock stands still from the release to the refused checkout: on a loaded machine the 2 s rest
    // could pass between the two requests, and the ports be free again before the test asked.
    engine.clock.frozenAt = Date.now();
    try {
      expect((await c.call('POST', `/sessions/${session}/devices/${held}/release`, { token: owner })).status).toBe(202);
      // Three ports: the two just released rest a while, and an iPhone needs two.
      const short = await c.call('POST', `/sessions/${session}/devices/${other}/remote-connect`, { token: owner });
      expect([short.status, errorCode(short)]).toEqual([409, 'no_free_port']);
    } finally {
      delete engine.clock.frozenAt;
    }
    expect(await refused(mux)).toBe(true);
    expect(await refused(wda)).toBe(true);
    const after = await c.call('GET', path(), { token: owner });
    expect([after.status, errorCode(after)]).toEqual([409, 'device_not_in_use']);
  });

  it('once the released ports have rested, the next checkout gets them', async () => {
    const next = `/sessions/${session}/devices/${other}/remote-connect`;
    await new Promise((r) => setTimeout(r, 2100));
    const opened = await c.call('POST', next, { token: owner });
    expect(opened.status).toBe(201);
    const listed = await run('idevice_id', ['-l'], { env: { ...process.env, USBMUXD_SOCKET_ADDRESS: opened.body.address }, timeout: 10_000 });
    expect(listed.stdout.trim()).toBe(other);
  }, 30_000);

  it('with remote connect on the LAN (the lab owner\'s switch) usbmuxd and WebDriverAgent listen on the LAN address, and the tools work there', async () => {
    const next = `/sessions/${session}/devices/${other}/remote-connect`;
    const on = await c.call('PATCH', '/lab/settings', { token: owner, body: { remoteConnectOnLan: true } });
    const lanHost: string = on.body.remoteConnectOnLan.host;
    expect(lanHost, 'this machine needs a non-loopback IPv4 address').toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    // The loopback one closed at the switch; its ports rest before the pool of three has two for an iPhone again.
    expect((await c.call('GET', next, { token: owner })).status).toBe(404);
    await new Promise((r) => setTimeout(r, 2100));
    const lan = await c.call('POST', next, { token: owner });
    expect(lan.status, JSON.stringify(lan.body)).toBe(201);
    const mux = Number(lan.body.address.split(':')[1]);
    expect(lan.body.address).toBe(`${lanHost}:${mux}`);
    expect(lan.body.command).toBe(`export USBMUXD_SOCKET_ADDRESS=${lanHost}:${mux}`);
    expect(new URL(lan.body.webDriverAgentUrl).hostname).toBe(lanHost);
    const listed = await run('idevice_id', ['-l'], { env: { ...process.env, USBMUXD_SOCKET_ADDRESS: lan.body.address }, timeout: 10_000 });
    expect(listed.stdout.trim()).toBe(other);
    expect((await fetch(`${lan.body.webDriverAgentUrl}/status`)).status).toBe(200);
    expect(await refused(mux)).toBe(true);
  }, 30_000);
});
