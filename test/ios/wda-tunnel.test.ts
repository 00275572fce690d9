import { execFile, spawn } from 'node:child_process';
import { rmSync, mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { promisify } from 'node:util';
import { findGoIos, freePortPair } from '../../src/main/engine/fleet/ios/tunnel.js';
import { alive, goIosProcesses } from '../support/go-ios.js';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { SETTINGS, type SimulatedIPhone } from '../../src/sim/ios/index.js';
import { call, client, startEngine, type TestEngine } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { waitFor } from '../support/lab.js';
import { remotePorts } from '../support/remote.js';
import { labSession } from '../support/webdriver.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';
import { buildRenderer } from '../../scripts/build-renderer.mjs';
import { buildServe } from '../../scripts/build-serve.mjs';

const WDA_PORTS = new Set([8100, 9100]);

const agentPortOf = (p: { args: string[] }) => Number(p.args.find((a) => a.startsWith('--tunnel-info-port='))?.split('=')[1]);
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });

/**
 * Counts the phone's WDA connections by the way they came: usbmuxd's Connect (the bus side) or its CoreDeviceProxy
 * tunnel. Observes the simulated phone; nothing of the engine is replaced.
 */
function countWdaRoutes(phone: SimulatedIPhone): { usbmuxd: number; tunnel: number } {
  const counts = { usbmuxd: 0, tunnel: 0 };
  const accept = phone.accept.bind(phone);
  phone.accept = (port, socket) => {
    if (WDA_PORTS.has(port)) counts.usbmuxd++;
    accept(port, socket);
  };
  const listener = phone.tunnelListener.bind(phone);
  phone.tunnelListener = (port: number) => {
    const take = listener(port);
    if (!take || !WDA_PORTS.has(port)) return take;
    return (socket: Duplex) => {
      counts.tunnel++;
      take(socket);
    };
  };
  return counts;
}

/**
 * iOS 17.4+ on a Linux lab box: WebDriverAgent started by go-ios 1.2.0 (npm, unchanged) through a userspace tunnel to a
 * simulated phone whose WDA runs only once launched that way; 17.0-17.3 and pre-17 phones beside it.
 */
describe('iPhones on iOS 17.4+: WDA through a go-ios userspace tunnel', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;
  let five: SimulatedIPhone;
  let early: SimulatedIPhone;
  let sixteen: SimulatedIPhone;
  let eighteen: SimulatedIPhone;
  let routes: { usbmuxd: number; tunnel: number };

  const fleet = async () => (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<Record<string, any>>;
  const row = async (udid: string) => (await fleet()).find((p) => p.serial === udid);
  const allocate = async (name: string) => {
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id as string;
    const r = await c.call('POST', `/sessions/${session}/devices`, {
      token: owner,
      body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }, { attribute: 'name', operator: 'EQUALS', value: name }] },
    });
    expect(r.status).toBe(201);
    await waitFor('in_use', async () => (await c.call('GET', `/sessions/${session}/devices/${r.body.id}`, { token: owner })).body.status === 'in_use', 30_000);
    return { session, id: r.body.id as string };
  };

  beforeAll(async () => {
    bus = await startIosBus();
    // As the field has them: none runs WDA when plugged in.
    five = await bus.plug({ name: 'Seventeen Five', version: '17.5.1', wda: false });
    routes = countWdaRoutes(five);
    early = await bus.plug({ name: 'Seventeen Two', version: '17.2.1', wda: false });
    sixteen = await bus.plug({ name: 'Sixteen', version: '16.7.8', wda: false });
    eighteen = await bus.plug({ name: 'Eighteen', version: '18.1', wda: false });
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), deviceGraceSeconds: 60, remotePorts: remotePorts(6), remotePortRestSeconds: 1 });
    c = client(engine.api);
    owner = await c.login();
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  it('17.5 gets WDA through the tunnel (wdaLaunch tunnel), 16 through lockdown, 17.2 stays wda_unavailable with the 17.0-17.3 steps; live screen, tap, screenshot and webDriverAgentUrl go through the tunnel', async () => {
    const rows = await waitFor('17.5 and 16 ready, 17.2 explained', async () => {
      const all = await fleet();
      const by = (udid: string) => all.find((p) => p.serial === udid);
      return by(five.udid)?.state === 'device' && by(sixteen.udid)?.state === 'device' && by(early.udid)?.steps?.includes('17.0-17.3') ? by : undefined;
    }, 45_000);
    expect(rows(five.udid)).toMatchObject({ state: 'device', wdaLaunch: 'tunnel' });
    expect(rows(sixteen.udid)).toMatchObject({ state: 'device', wdaLaunch: 'lockdown' });
    const seventeenTwo = rows(early.udid)!;
    expect(seventeenTwo.state).toBe('wda_unavailable');
    expect(seventeenTwo.wdaLaunch).toBeUndefined();
    expect(seventeenTwo.steps).toMatch(/iOS 17\.2\.1: iOS 17\.0-17\.3/);
    expect(seventeenTwo.steps).toContain('Mac provider');
    expect(seventeenTwo.steps).toContain('17.4 or later');
    // Nothing was tried on it: no tunnel process, no launch over lockdown.
    expect(goIosProcesses(early.udid)).toEqual([]);
    expect(early.testManager.received).toEqual([]);
    // The schema says what the field may be.
    const spec = (await call(engine.api, 'GET', '/openapi.json')).body;
    const wdaLaunch = JSON.stringify(JSON.stringify(spec).match(/"wdaLaunch":\{.*?"description"/)?.[0]);
    for (const value of ['lockdown', 'tunnel', 'devicectl', 'external']) expect(wdaLaunch).toContain(value);

    // The lab owner sees the tunnel's parts: npm's go-ios, and no Developer Disk Image set.
    expect((await c.call('GET', '/lab/settings', { token: owner })).body.iosTunnel).toEqual({ enabled: true, goIos: expect.stringContaining('node_modules/go-ios/dist/'), developerDiskImage: null });

    // Only go-ios's runwda started WDA on the 17.5 phone: its tunnel agent and runner are running, for this phone alone.
    const processes = goIosProcesses(five.udid);
    expect(processes.map((p) => p.args[1]).sort()).toEqual(['runwda', 'tunnel']);
    expect(five.wdaRunning).toBe(true);

    const { session } = await allocate('Seventeen Five');
    const device = `/sessions/${session}/devices/${five.udid}`;
    const before = { ...routes };
    const ws = new WebSocket(`${engine.api.replace(/^http/, 'ws')}${device}/screen?token=${owner}`);
    const frames: Buffer[] = [];
    ws.on('message', (data: Buffer, binary: boolean) => binary && frames.push(data));
    await waitFor('a live frame', () => frames.length >= 1, 15_000);
    expect([jpeg.decode(frames[0]!).width, jpeg.decode(frames[0]!).height]).toEqual([750, 1334]);
    const seen = frames.length;
    expect((await c.call('POST', `${device}/actions`, { token: owner, body: { type: 'launchApp', packageName: SETTINGS } })).status).toBe(200);
    const icon = await c.call('POST', `${device}/actions`, { token: owner, body: { type: 'tap', x: 375, y: 600 } });
    expect(icon.status).toBe(200);
    await waitFor('a later frame', () => frames.length > seen, 10_000);
    ws.close();
    const shot = await fetch(`${engine.api}${device}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(shot.status).toBe(200);
    expect((await shot.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    expect(five.board.foreground).toBe(SETTINGS);
    // Appium's way in: remote connect's webDriverAgentUrl, relayed into the tunnel too.
    const remote = await c.call('POST', `${device}/remote-connect`, { token: owner, body: {} });
    expect(remote.status).toBe(201);
    const status = await fetch(`${remote.body.webDriverAgentUrl}/status`);
    expect(status.status).toBe(200);
    expect((await status.json()).value.ready).toBe(true);
    // Every WDA connection since the launch came through the tunnel; none through usbmuxd.
    expect(routes.tunnel).toBeGreaterThan(before.tunnel);
    expect(routes.usbmuxd).toBe(before.usbmuxd);
    expect((await c.call('POST', `${device}/release`, { token: owner })).status).toBe(202);
    await waitFor('cleaned', async () => (await row(five.udid))?.held === false || undefined, 20_000);
  }, 90_000);

  it("Appium's XCUITest driver through /wd/hub drives a 17.5 and an 18 phone, reaching WDA through each one's tunnel", async () => {
    const key = await c.createKey(owner);
    for (const [phone, version] of [[five, '17.5'], [eighteen, '18.1']] as const) {
      const counted = phone === five ? routes : countWdaRoutes(phone);
      const before = { ...counted };
      const driver = await labSession(engine.api, key, { platformName: 'iOS', 'appium:platformVersion': version, 'benchtop:options': { name: `tunnel run on ${version}` } });
      expect((driver.capabilities as Record<string, unknown>)['appium:udid']).toBe(phone.udid);
      await (await driver.$('~Settings')).click();
      expect(phone.board.foreground).toBe(SETTINGS);
      expect(await driver.getPageSource()).toContain('name="Settings"');
      await driver.deleteSession();
      expect(counted.tunnel).toBeGreaterThan(before.tunnel);
      expect(counted.usbmuxd).toBe(before.usbmuxd);
      expect((await row(phone.udid))?.wdaLaunch).toBe('tunnel');
      await waitFor('released', async () => (await row(phone.udid))?.held === false || undefined, 30_000);
    }
  }, 180_000);

  it("the holder's own go-ios opens its userspace tunnel through remote connect's private usbmuxd, to that phone alone", async () => {
    const { session } = await allocate('Seventeen Five');
    const remote = await c.call('POST', `/sessions/${session}/devices/${five.udid}/remote-connect`, { token: owner, body: {} });
    expect(remote.status).toBe(201);
    const env = { ...process.env, USBMUXD_SOCKET_ADDRESS: /USBMUXD_SOCKET_ADDRESS=(\S+)/.exec(remote.body.command)![1]! };
    const goIos = findGoIos()!;
    const run = (args: string[]) => promisify(execFile)(goIos, args, { env }).then((r) => r.stdout, () => '');
    // Three phones on the lab's usbmuxd; the checkout's shows its own.
    expect(JSON.parse(await run(['list'])).deviceList).toEqual([five.udid]);
    const port = await freePortPair();
    const records = mkdtempSync(join(tmpdir(), 'benchtop-holder-go-ios-'));
    const agent = spawn(goIos, ['tunnel', 'start', '--userspace', `--udid=${five.udid}`, `--tunnel-info-port=${port}`, `--pair-record-path=${records}`], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    // go-ios logs to stderr: a tunnel that never comes up fails the test with what it said (seen once in 35 runs).
    let said = '';
    agent.stderr!.on('data', (chunk: Buffer) => (said = (said + chunk.toString()).slice(-4000)));
    try {
      const listed = await waitFor('the holder\'s tunnel', async () => {
        const out = await run(['tunnel', 'ls', `--tunnel-info-port=${port}`]);
        return out.includes(five.udid) ? (JSON.parse(out) as Array<{ udid: string; rsdPort: number; userspaceTun: boolean }>) : undefined;
      }, 30_000).catch((error: Error) => {
        throw new Error(`${error.message}; the holder's go-ios said:\n${said || '(nothing)'}`);
      });
      expect(listed).toEqual([expect.objectContaining({ udid: five.udid, userspaceTun: true })]);
      const services = JSON.parse(await run(['rsd', 'ls', `--udid=${five.udid}`, `--tunnel-info-port=${port}`])) as Record<string, unknown>;
      expect(Object.keys(services)).toContain('com.apple.dt.testmanagerd.remote');
    } finally {
      agent.kill('SIGKILL');
      rmSync(records, { recursive: true, force: true });
    }
    // The lab's own tunnel and WDA went on meanwhile.
    expect((await row(five.udid))).toMatchObject({ state: 'device', wdaLaunch: 'tunnel' });
    expect((await c.call('POST', `/sessions/${session}/devices/${five.udid}/release`, { token: owner })).status).toBe(202);
    await waitFor('cleaned', async () => (await row(five.udid))?.held === false || undefined, 20_000);
  }, 90_000);

  it('the go-ios tunnel killed mid-session comes back: WDA answers again and the holder keeps the phone', async () => {
    const { session, id } = await allocate('Seventeen Five');
    const device = `/sessions/${session}/devices/${five.udid}`;
    const agent = goIosProcesses(five.udid).find((p) => p.args[1] === 'tunnel')!;
    process.kill(agent.pid, 'SIGKILL');
    const back = await waitFor('a new tunnel, WDA answering', async () => {
      // Reading every process's command line is work on the engine's own thread (this process is the engine):
      // looked at twice a second, not twenty times, so that the recovery it waits for is not slowed by the looking.
      await new Promise((resolve) => setTimeout(resolve, 500));
      const now = goIosProcesses(five.udid);
      const r = await row(five.udid);
      return r?.state === 'device' && r.wdaLaunch === 'tunnel' && now.length === 2 && !now.some((p) => p.pid === agent.pid) ? now : undefined;
    }, 45_000);
    expect(back.map((p) => p.args[1]).sort()).toEqual(['runwda', 'tunnel']);
    expect(alive(agent.pid)).toBe(false);
    // The same allocation, in use, driving the phone.
    await waitFor('in_use again', async () => (await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body.status === 'in_use', 15_000);
    expect((await c.call('POST', `${device}/actions`, { token: owner, body: { type: 'tap', x: 100, y: 100 } })).status).toBe(200);
    expect((await c.call('POST', `${device}/release`, { token: owner })).status).toBe(202);
    await waitFor('cleaned', async () => (await row(five.udid))?.held === false || undefined, 20_000);
  }, 90_000);

  it('unplugged, everything of the phone stops (no go-ios process by pid, no port); 20 plug/unplug cycles leave none either, nor a socket or pipe in the engine, nor memory', async () => {
    const running = goIosProcesses(five.udid);
    expect(running).toHaveLength(2);
    const ports = new Set(running.map(agentPortOf));
    five.unplug();
    await waitFor('its go-ios processes ended', () => running.every((p) => !alive(p.pid)) || undefined, 10_000);
    expect(goIosProcesses(five.udid)).toEqual([]);

    // What the engine holds open (sockets, servers, pipes and child processes, by Node's own count of its handles):
    // after the cycles it must come back to this.
    const HANDLES = ['TCPSocketWrap', 'TCPServerWrap', 'PipeWrap', 'ProcessWrap'];
    const handles = () => {
      const counts = new Map<string, number>();
      for (const kind of process.getActiveResourcesInfo()) if (HANDLES.includes(kind)) counts.set(kind, (counts.get(kind) ?? 0) + 1);
      return counts;
    };
    const held = handles();
    const heapBefore = heapAfterGc();

    // Cycles that end at every stage of a start: some before the tunnel, some during, some once WDA answers.
    const seen = new Map<number, { pid: number; args: string[] }>();
    for (let cycle = 0; cycle < 20; cycle++) {
      await five.plugInto(bus.usbmuxd);
      await waitFor('a tunnel process', () => goIosProcesses(five.udid).length > 0 || undefined, 20_000);
      if (cycle % 10 === 9) await waitFor('WDA ready', async () => (await row(five.udid))?.state === 'device' || undefined, 30_000);
      for (const p of goIosProcesses(five.udid)) seen.set(p.pid, p);
      five.unplug();
    }
    await waitFor('every go-ios process of the cycles ended', () => [...seen.keys()].every((pid) => !alive(pid)) || undefined, 15_000);
    expect(goIosProcesses(five.udid)).toEqual([]);
    for (const p of seen.values()) ports.add(agentPortOf(p));
    // The agents' HTTP ports and the proxy ports after them: none listens any more.
    for (const port of ports) {
      expect(await listening(port)).toBe(false);
      expect(await listening(port + 1)).toBe(false);
    }
    expect((await row(five.udid))?.state).toBe('gone');
    const more = () => HANDLES.filter((kind) => (handles().get(kind) ?? 0) > (held.get(kind) ?? 0));
    await waitFor('the engine holds no more sockets, pipes or child processes than before the cycles', () => more().length === 0 || undefined, 15_000)
      .catch(() => expect(more(), JSON.stringify(Object.fromEntries(handles()))).toEqual([]));
    // Nor memory: the heap after a full collection is where it was, within what one cycle's tunnel holds (its
    // connections' buffers are up to 256 KiB each), not twenty of them. The simulated phone shares this heap.
    const grown = heapAfterGc() - heapBefore;
    console.log(`heap after 20 plug/unplug cycles: ${(grown / 1024 / 1024).toFixed(1)} MB more than before`);
    expect(grown).toBeLessThan(6 * 1024 * 1024);
  }, 240_000);
});

/** The heap in use after a full collection, with the Buffers it holds outside it, (gc exposed at run time: the worker was started without --expose-gc). */
function heapAfterGc(): number {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  // Twice: a Buffer's memory outside the heap is given back by its finalizer, which the first collection only queues.
  gc();
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

/** `npm run serve --demo`'s bundle: go-ios is found from out/serve, and four demo iPhones are one of each kind. */
describe('the bundle finds go-ios; BENCHTOP_DEMO_IPHONES=4 gives one iPhone of each kind', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-tunnel-demo-'));
  let serve: ServeProcess | undefined;
  // The bundle and the GUI are built first (as bundle.test.ts does), so that serve's 20 s to start are its own.
  beforeAll(async () => {
    await buildServe();
    await buildRenderer();
  }, 300_000);
  afterAll(() => {
    serve?.child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  // One `npm run serve` for both: demo mode's own checks (the simulated usbmuxd, allocation, exit) ride along.
  it('17.5.1 and 18.1 through the tunnel, 16.7.8 running WDA already, 17.2.1 with the 17.0-17.3 steps; the demo usbmuxd in /lab/settings, an iPhone allocatable, and all gone on exit', async () => {
    serve = await startServeProcess({ BENCHTOP_DATA_DIR: dir, BENCHTOP_OWNER_EMAIL: 'demo@lab.test', BENCHTOP_OWNER_PASSWORD: 'password-1', BENCHTOP_DEMO_IPHONES: '4' });
    const demo = /Demo: 4 simulated iPhones on usbmuxd (127\.0\.0\.1:\d+)/.exec(serve.output());
    expect(demo).not.toBeNull();
    const token = (await call(serve.api, 'POST', '/auth/login', { body: { email: 'demo@lab.test', password: 'password-1' } })).body.token;
    expect((await call(serve.api, 'GET', '/lab/settings', { token })).body.usbmuxd).toEqual({ enabled: true, address: demo![1] });
    const rows = await waitFor('three ready, one explained', async () => {
      const data = (await call(serve!.api, 'GET', '/fleet/devices', { token })).body.data as Array<Record<string, any>>;
      const ios = data.filter((p) => p.platform === 'ios');
      return ios.filter((p) => p.state === 'device').length === 3 && ios.some((p) => p.steps?.includes('17.0-17.3')) ? ios : undefined;
    }, 60_000);
    const byVersion = Object.fromEntries(rows.map((p) => [p.osVersion, p]));
    expect(Object.keys(byVersion).sort()).toEqual(['16.7.8', '17.2.1', '17.5.1', '18.1']);
    expect(byVersion['17.5.1']).toMatchObject({ state: 'device', wdaLaunch: 'tunnel' });
    expect(byVersion['18.1']).toMatchObject({ state: 'device', wdaLaunch: 'tunnel' });
    // The demo's iPhone before 17 runs WDA from the start, as one a host started over lockdown would.
    expect(byVersion['16.7.8']).toMatchObject({ state: 'device', wdaLaunch: 'external' });
    expect(byVersion['17.2.1']).toMatchObject({ state: 'wda_unavailable' });
    // The binary the bundle ran is npm's go-ios, in place.
    const processes = goIosProcesses(byVersion['17.5.1'].serial);
    expect(processes.length).toBeGreaterThan(0);
    expect(processes[0]!.args[0]).toMatch(/node_modules\/go-ios\/dist\/go-ios-linux-(amd64|arm64)_linux_(amd64|arm64)\/ios$/);
    expect(rows.map((p) => p.name)).toEqual(expect.arrayContaining(['QA iPhone', 'iPhone SE']));

    // An iPhone before 17 is allocated and tapped, as any phone of the lab.
    const session = (await call(serve.api, 'POST', '/sessions', { token })).body.id;
    const allocation = await call(serve.api, 'POST', `/sessions/${session}/devices`, {
      token,
      body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }, { attribute: 'version', operator: 'LESS_THAN', value: '17' }] },
    });
    expect(allocation.status).toBe(201);
    const device = await waitFor('in_use', async () => {
      const d = (await call(serve!.api, 'GET', `/sessions/${session}/devices/${allocation.body.id}`, { token })).body;
      return d.status === 'in_use' ? d : undefined;
    }, 15_000);
    expect((await call(serve.api, 'POST', `/sessions/${session}/devices/${device.info.serial}/actions`, { token, body: { type: 'tap', x: 100, y: 100 } })).status).toBe(200);

    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);
    await waitFor('the demo\'s go-ios processes ended with it', () => processes.every((p) => !alive(p.pid)) || undefined, 10_000);
  }, 120_000);
});
