/**
 * The lab owner's switch for plain adb on the LAN (PATCH /lab/settings {remoteConnectOnLan}): off, remote-connect
 * listens on loopback alone; on, it listens on the LAN address (LAN sharing's first one) and answers that address, and
 * Debian's adb connects to it as a teammate's would. Switching either way closes what listens on the other address.
 * On this box the LAN address is the machine's own non-loopback IPv4 address, which the lab box itself can reach.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { client, errorCode } from '../support/engine.js';
import { refused, remotePorts } from '../support/remote.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

/** The local addresses something listens on at this TCP port (iproute2's ss). */
function listeningOn(port: number): string[] {
  const out = execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' });
  return out.split('\n').filter(Boolean).map((line) => line.trim().split(/\s+/)[3]!.replace(/:\d+$/, ''));
}

describe.skipIf(!hasAdb)('remote connect on the LAN: the lab owner\'s switch for plain adb', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let mine: AdbServer;
  let held: { session: string; serial: string };
  let lanHost: string;
  const remotePath = () => `/sessions/${held.session}/devices/${held.serial}/remote-connect`;
  const open = async () => {
    const r = await c.call('POST', remotePath(), { token: owner });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { address: string; command: string };
  };
  const portOf = (address: string) => Number(address.split(':').at(-1));
  const showsOffline = (address: string) =>
    waitFor(`${address} to show offline`, async () => (await mine.run(['devices'])).stdout.toString().includes(`${address}\toffline`), 3000);

  beforeAll(async () => {
    [lab, mine] = await Promise.all([
      startLab([{ model: 'Pixel Plain', osVersion: '14' }], { remotePorts: remotePorts(4), remotePortRestSeconds: 1 }),
      startAdbServer(),
    ]);
    c = client(lab.engine.api);
    owner = await c.login();
    const key = readFileSync(join(mine.env.HOME!, '.android', 'adbkey.pub'), 'utf8');
    expect((await c.call('POST', '/adb-keys', { token: owner, body: { publicKey: key } })).status).toBe(201);
    held = await allocateInUse(c, owner, 'Pixel Plain');
    const settings = (await c.call('GET', '/lab/settings', { token: owner })).body;
    expect(settings.remoteConnectOnLan.enabled).toBe(false);
    expect(settings.remoteConnectOnLan.host, 'this machine needs a non-loopback IPv4 address (a LAN, or a dummy interface)').toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    lanHost = settings.remoteConnectOnLan.host;
  }, 60_000);
  afterAll(async () => {
    await mine?.stop();
    await lab?.stop();
  });

  it('off (the default): the listener is on loopback alone, and the LAN address refuses', async () => {
    const { address } = await open();
    const port = portOf(address);
    expect(address).toBe(`127.0.0.1:${port}`);
    expect(listeningOn(port)).toEqual(['127.0.0.1']);
    expect(await refused(port, lanHost)).toBe(true);
  });

  it('only the lab owner switches it: 403 for a member and for an API key, 400 for a non-boolean, nothing changes', async () => {
    const member = await c.signup('plain-lan-member@lab.test');
    const r = await c.call('PATCH', '/lab/settings', { token: member.token, body: { remoteConnectOnLan: true } });
    expect([r.status, errorCode(r)]).toEqual([403, 'not_lab_owner']);
    const key = await c.createKey(owner);
    expect((await c.call('PATCH', '/lab/settings', { token: key, body: { remoteConnectOnLan: true } })).status).toBe(403);
    const bad = await c.call('PATCH', '/lab/settings', { token: owner, body: { remoteConnectOnLan: 'yes' } });
    expect(bad.status).toBe(400);
    errorCode(bad);
    expect((await c.call('GET', '/lab/settings', { token: owner })).body.remoteConnectOnLan.enabled).toBe(false);
    expect((await c.call('GET', remotePath(), { token: owner })).status).toBe(200);
  });

  it('on: the open loopback listener closes, a new one listens on the LAN address, and Debian adb connects there', async () => {
    const before = (await c.call('GET', remotePath(), { token: owner })).body.address as string;
    expect((await mine.run(['connect', before])).stdout.toString()).toContain(`connected to ${before}`);
    await waitFor('a device', async () => (await mine.run(['devices'])).stdout.toString().includes(`${before}\tdevice`));

    const on = await c.call('PATCH', '/lab/settings', { token: owner, body: { remoteConnectOnLan: true } });
    expect(on.status).toBe(200);
    expect(on.body.remoteConnectOnLan).toEqual({ enabled: true, host: lanHost });
    await showsOffline(before);
    expect(await refused(portOf(before))).toBe(true);
    expect((await c.call('GET', remotePath(), { token: owner })).status).toBe(404);

    const { address, command } = await open();
    const port = portOf(address);
    expect([address, command]).toEqual([`${lanHost}:${port}`, `adb connect ${lanHost}:${port}`]);
    expect(listeningOn(port)).toEqual([lanHost]);
    expect(await refused(port)).toBe(true);

    expect((await mine.run(['connect', address])).stdout.toString()).toContain(`connected to ${address}`);
    await waitFor('a device', async () => (await mine.run(['devices'])).stdout.toString().includes(`${address}\tdevice`));
    const sh = (args: string[]) => mine.run(['-s', address, ...args], { timeoutMs: 30_000 });
    expect((await sh(['shell', 'getprop', 'ro.product.model'])).stdout.toString().trim()).toBe('Pixel Plain');
    const failing = await sh(['shell', 'echo e >&2; exit 3']);
    expect([failing.code, failing.stderr.toString()]).toEqual([3, 'e\n']);
    const connections = (await c.call('GET', remotePath(), { token: owner })).body.connections;
    expect(connections).toHaveLength(1);
    expect(connections[0].peer).toMatch(new RegExp(`^${lanHost.replaceAll('.', '\\.')}:\\d+$`));
  }, 30_000);

  it('off again: the LAN listener closes at once (adb offline, the port refuses) and a new one is on loopback', async () => {
    const lan = (await c.call('GET', remotePath(), { token: owner })).body.address as string;
    const off = await c.call('PATCH', '/lab/settings', { token: owner, body: { remoteConnectOnLan: false } });
    expect(off.body.remoteConnectOnLan).toEqual({ enabled: false, host: lanHost });
    await showsOffline(lan);
    expect(await refused(portOf(lan), lanHost)).toBe(true);
    expect((await c.call('GET', remotePath(), { token: owner })).status).toBe(404);

    const { address } = await open();
    expect(address.startsWith('127.0.0.1:')).toBe(true);
    expect(listeningOn(portOf(address))).toEqual(['127.0.0.1']);
  });
});
