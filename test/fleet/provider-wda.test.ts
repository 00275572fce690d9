import { execFile } from 'node:child_process';
import { connect } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeMuxMessage, MUX_RESULT, MuxReader } from '../../src/protocols/apple/usbmuxd-wire.js';
import type { PlistDict } from '../../src/protocols/apple/plist-wire.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { alive, envOf, GO_IOS, goIosOrSkip, goIosProcesses } from '../support/go-ios.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { netnsOrSkip, startNetnsProvider, type NetnsProvider } from '../support/provider/index.js';

const ready = adbOrSkip() && netnsOrSkip() && goIosOrSkip();
const WDA = 'com.facebook.WebDriverAgentRunner.xctrunner';

/** One request to a usbmuxd on TCP, on a connection of its own: its reply (a Connect's, before the phone's bytes). */
function muxRequest(port: number, request: PlistDict): Promise<PlistDict | undefined> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const reader = new MuxReader();
    socket.on('data', (chunk: Buffer) => {
      const [first] = reader.push(chunk);
      if (!first) return;
      socket.destroy();
      resolve(first.message);
    });
    socket.on('error', () => resolve(undefined));
    socket.on('close', () => resolve(undefined));
    socket.write(encodeMuxMessage(1, { ProgName: 'test', ...request }));
  });
}
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/**
 * WDA on a provider's iOS 17+ iPhones: a Mac provider (its SSH account's PATH has xcrun, here the scripted one that
 * reaches the namespace's own simulated CoreDevice) gets WDA started by the hub running `xcrun devicectl` there, over
 * SSH; on a Linux provider (no xcrun) the hub's own go-ios starts it through a userspace tunnel, as on a local
 * iOS 17.4+ iPhone. The hub has no xcrun.
 */
describe.skipIf(!ready)('WebDriverAgent on a provider\'s iOS 17 iPhone', () => {
  let engine: TestEngine;
  let mac: NetnsProvider;
  let linux: NetnsProvider;
  let c: ReturnType<typeof client>;
  let owner: string;
  const started: Array<Promise<NetnsProvider>> = [];

  const fleet = async () => (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<Record<string, any>>;
  const phone = async (udid: string) => (await fleet()).find((p) => p.serial === udid);
  /** Holds the named iPhone in a new session and drives it through WDA: a screenshot (a PNG) and a tap. Answers the session. */
  const holdAndDrive = async (name: string, udid: string) => {
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id as string;
    const filters = [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }, { attribute: 'name', operator: 'EQUALS', value: name }];
    const a = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters } });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    await waitFor('in_use', async () => (await c.call('GET', `/sessions/${session}/devices/${a.body.id}`, { token: owner })).body.status === 'in_use' || undefined);
    const shot = await fetch(`${engine.api}/sessions/${session}/devices/${udid}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(shot.status).toBe(200);
    expect(Buffer.from(await shot.arrayBuffer()).subarray(1, 4).toString()).toBe('PNG');
    const tap = await c.call('POST', `/sessions/${session}/devices/${udid}/actions`, { token: owner, body: { type: 'tap', x: 10, y: 10 } });
    expect(tap.status, JSON.stringify(tap.body)).toBe(200);
    return session;
  };

  beforeAll(async () => {
    const macStarting = startNetnsProvider(0, { phones: [], iphones: [
      { name: 'Mac-side iPhone', version: '17.5', wda: false },
      { name: 'Bare Mac-side iPhone', version: '17.5', wda: false, wdaInstalled: false },
    ], mac: true });
    // A second iPhone beside it (running WDA already): what go-ios's loopback usbmuxd must not let through.
    const linuxStarting = startNetnsProvider(1, { phones: [], iphones: [{ name: 'Linux-side iPhone', version: '17.5', wda: false }, { name: 'Linux-side iPhone 16', version: '16.7.8' }] });
    started.push(macStarting, linuxStarting);
    [mac, linux] = await Promise.all([macStarting, linuxStarting]);
    engine = await startEngine({ xcrun: null, providerCheckMs: 300, providerProbeTimeoutMs: 1000, providerBackoffMaxMs: 1000 });
    c = client(engine.api);
    owner = await c.login();
  }, 60_000);

  afterAll(async () => {
    await engine?.stop();
    await Promise.all(started.map((p) => p.then((x) => x.stop(), () => undefined)));
  });

  it('the health check tells a Mac with devicectl from a Linux box, and the answer says so', async () => {
    const m = await c.call('POST', '/lab/providers', { token: owner, body: mac.body({ name: 'mac-provider' }) });
    expect(m.status, JSON.stringify(m.body)).toBe(201);
    expect(m.body).toMatchObject({ health: 'up', os: 'Linux', devicectl: '/Applications/Xcode.app/Contents/Developer/usr/bin/devicectl' });
    const l = await c.call('POST', '/lab/providers', { token: owner, body: linux.body({ name: 'linux-provider' }) });
    expect(l.status, JSON.stringify(l.body)).toBe(201);
    expect(l.body).toMatchObject({ health: 'up', os: 'Linux', devicectl: null });
    // Detecting ran xcrun --find only: nothing was launched yet by the check itself.
    expect(mac.xcrunRuns()).toContain('--find devicectl');
  });

  it('a Mac provider: the hub runs xcrun devicectl on it over SSH, and WDA answers through the hub once allocated', async () => {
    const udid = mac.udids[0]!;
    await waitFor('the Mac-side iPhone is device', async () => (await phone(udid))?.state === 'device' || undefined, 20_000);
    const launches = mac.xcrunRuns().filter((r) => r.startsWith(`devicectl device process launch --device ${udid} `));
    expect(launches).toHaveLength(1);
    expect(launches[0]).toMatch(new RegExp(`^devicectl device process launch --device ${udid} --terminate-existing --json-output /\\S+/launch\\.json ${WDA.replace(/\./g, '\\.')}$`));

    // Through WDA, which the devicectl launch started: a screenshot (WDA's /screenshot) and a tap.
    const session = await holdAndDrive('Mac-side iPhone', udid);
    await c.call('POST', `/sessions/${session}/devices/${udid}/release`, { token: owner });
  });

  it('a Mac provider whose iPhone lacks the runner: devicectl\'s failure on the Mac, in its words, is the phone\'s steps', async () => {
    const udid = mac.udids[1]!;
    const listed = await waitFor('the bare iPhone\'s steps', async () => {
      const p = await phone(udid);
      return p?.steps?.includes('could not launch') ? p : undefined;
    }, 15_000);
    expect(listed.state).toBe('wda_unavailable');
    expect(listed.steps).toContain(`xcrun devicectl could not launch ${WDA}`);
    expect(listed.steps).toContain('is not installed');
  });

  it("a Linux provider's 17.5 iPhone: the hub's go-ios starts WDA through a userspace tunnel, on a loopback usbmuxd that lets that phone alone through; the provider removed, none of it is left", async () => {
    const [udid, other] = linux.udids as [string, string];
    const listed = await waitFor('the Linux-side iPhone through the tunnel', async () => {
      const p = await phone(udid);
      return p?.state === 'device' ? p : undefined;
    }, 45_000);
    expect(listed).toMatchObject({ state: 'device', wdaLaunch: 'tunnel', host: 'linux-provider' });
    const running = goIosProcesses(udid);
    expect(running.map((p) => p.args[1]).sort()).toEqual(['runwda', 'tunnel']);
    // go-ios's usbmuxd: a loopback port of the hub's, where go-ios itself, unchanged, sees this phone and not the other.
    const relay = envOf(running[0]!.pid, 'USBMUXD_SOCKET_ADDRESS')!;
    expect(relay).toMatch(/^127\.0\.0\.1:\d+$/);
    const port = Number(relay.split(':')[1]);
    const goIos = (...args: string[]) => promisify(execFile)(GO_IOS, args, { env: { ...process.env, USBMUXD_SOCKET_ADDRESS: relay } }).then((r) => r.stdout, (e: { stdout?: string }) => e.stdout ?? '');
    expect(JSON.parse(await goIos('list')).deviceList).toEqual([udid]);
    // A Connect to any other device is refused, however its DeviceID is guessed.
    const held = ((await muxRequest(port, { MessageType: 'ListDevices' }))!.DeviceList as PlistDict[])[0]!.DeviceID as number;
    for (let id = 1; id <= 8; id++) {
      if (id === held) continue;
      expect((await muxRequest(port, { MessageType: 'Connect', DeviceID: id, PortNumber: 0x7ef2 }))?.Number).toBe(MUX_RESULT.BADDEV);
    }
    expect((await phone(other))).toMatchObject({ state: 'device', wdaLaunch: 'external' });

    // Driven as a local one: a screenshot and a tap through WDA in the tunnel.
    const session = await holdAndDrive('Linux-side iPhone', udid);
    expect((await c.call('POST', `/sessions/${session}/devices/${udid}/release`, { token: owner })).status).toBe(202);
    await waitFor('released', async () => (await phone(udid))?.held === false || undefined, 20_000);

    // The provider removed: its go-ios processes end (by pid), and go-ios's usbmuxd no longer listens.
    const id = (await c.call('GET', '/lab/providers', { token: owner })).body.data.find((p: { name: string }) => p.name === 'linux-provider').id as string;
    expect((await c.call('DELETE', `/lab/providers/${id}`, { token: owner })).status).toBe(204);
    await waitFor('its go-ios processes ended', () => running.every((p) => !alive(p.pid)) || undefined, 10_000);
    expect(goIosProcesses(udid)).toEqual([]);
    expect(await listening(port)).toBe(false);
  }, 90_000);
});
