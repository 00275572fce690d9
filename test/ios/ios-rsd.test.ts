import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT_CHANNEL } from '../../src/protocols/apple/remote-xpc.js';
import { encodeXpcMessage, readXpcMessage, XPC_FLAGS, xpcNumber, XpcInt64, type XpcMessage, type XpcValue } from '../../src/protocols/apple/xpc.js';
import { freePortPair } from '../../src/main/engine/fleet/ios/tunnel.js';
import { APP_SERVICE, DT_SERVICE_HUB, OPEN_STDIO_SOCKET_SERVICE, TESTMANAGERD_REMOTE_SERVICE } from '../../src/sim/ios/remote-services.js';
import type { SimulatedIPhone } from '../../src/sim/ios/index.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { GO_IOS, goIosOrSkip, throughTunnel, type GoIosTunnel } from '../support/go-ios.js';
import { waitFor } from '../support/lab.js';

const goIos = goIosOrSkip();

/** WDA's /status through the tunnel: its HTTP status, or 0 when the port is closed. */
async function wdaStatus(tunnel: GoIosTunnel): Promise<number> {
  const socket = await throughTunnel(tunnel, 8100);
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const closed = new Promise((resolve) => socket.once('close', resolve));
  socket.write('GET /status HTTP/1.1\r\nHost: device\r\nConnection: close\r\n\r\n');
  await closed;
  return Number(/^HTTP\/1\.1 (\d+)/.exec(Buffer.concat(chunks).toString('latin1'))?.[1] ?? 0);
}

/**
 * A minimal RemoteXPC host (HTTP/2 frames by hand, messages with the codec), go-ios's sequence, for what go-ios's
 * commands do not show: the body of a CoreDevice error.
 */
async function coreDevice(tunnel: GoIosTunnel, port: number): Promise<{ request(body: XpcValue): Promise<XpcValue>; received(count: number): Promise<XpcMessage>; close(): void }> {
  const socket = await throughTunnel(tunnel, port);
  const frame = (type: number, flags: number, stream: number, payload: Buffer = Buffer.alloc(0)) => {
    const head = Buffer.alloc(9);
    head.writeUIntBE(payload.length, 0, 3);
    head[3] = type;
    head[4] = flags;
    head.writeUInt32BE(stream, 5);
    return Buffer.concat([head, payload]);
  };
  const messages: Array<XpcMessage & { stream: number }> = [];
  let pending = Buffer.alloc(0);
  const streams = new Map<number, Buffer>();
  socket.on('data', (chunk: Buffer) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 9 && pending.length >= 9 + pending.readUIntBE(0, 3)) {
      const length = pending.readUIntBE(0, 3);
      const [type, stream] = [pending[3], pending.readUInt32BE(5)];
      const payload = pending.subarray(9, 9 + length);
      pending = pending.subarray(9 + length);
      if (type !== 0) continue;
      let buffered = Buffer.concat([streams.get(stream) ?? Buffer.alloc(0), payload]);
      for (let read = readXpcMessage(buffered); read; read = readXpcMessage(buffered)) {
        messages.push({ ...read.message, stream });
        buffered = buffered.subarray(read.length);
      }
      streams.set(stream, buffered);
    }
  });
  const next = (count: number) => waitFor('a RemoteXPC message', () => (messages.length >= count ? messages[count - 1] : undefined), 5000);
  const data = (stream: number, flags: number, body?: XpcValue, id = 0n) => frame(0, 0, stream, encodeXpcMessage({ flags, id, ...(body !== undefined ? { body } : {}) }));
  socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(4, 0, 0), frame(1, 4, 1), data(1, 1, {})]));
  await next(1);
  socket.write(Buffer.concat([frame(1, 4, 3), data(3, 0x400001)]));
  await next(2);
  socket.write(data(1, 0x201));
  await next(3);
  let id = 1n;
  return {
    async request(body) {
      const seen = messages.length;
      socket.write(data(ROOT_CHANNEL, XPC_FLAGS.ALWAYS_SET | XPC_FLAGS.DATA_PRESENT | XPC_FLAGS.WANTING_REPLY, body, id++));
      return (await next(seen + 1)).body ?? null;
    },
    received: next,
    close: () => socket.destroy(),
  };
}

const invocation = (feature: string, input: XpcValue) => ({
  'CoreDevice.CoreDeviceDDIProtocolVersion': new XpcInt64(0),
  'CoreDevice.action': {},
  'CoreDevice.deviceIdentifier': 'A7DD28AC-2911-4549-811D-85917B9AC72F',
  'CoreDevice.featureIdentifier': feature,
  'CoreDevice.input': input,
  'CoreDevice.invocationIdentifier': '62419FC1-5ABF-4D96-BCA8-7A5F6F9A69EE',
});

/**
 * go-ios 1.2.0 (nobody here wrote it), unchanged, against a simulated iOS 17.5 iPhone whose WebDriverAgent is not
 * running: through its userspace tunnel it reads RSD (`ios rsd ls`) and starts WDA as Xcode 15 does (`ios runwda`:
 * testmanagerd.remote, appservice's launch with an openstdiosocket, the XCTest session authorized, the test plan
 * started), and WDA then answers through the same tunnel.
 */
describe.runIf(goIos)('RSD and its services inside the tunnel, driven by go-ios', () => {
  let bus: IosBus;
  let dir: string;
  let agent: ChildProcess;
  let agentLog = '';
  let infoPort: number;
  let phone: SimulatedIPhone;
  let tunnel: GoIosTunnel;
  const env = () => ({ ...process.env, USBMUXD_SOCKET_ADDRESS: bus.address, HOME: dir });
  const args = (...command: string[]) => [...command, `--udid=${phone.udid}`, `--tunnel-info-port=${infoPort}`];
  const start = (command: string[]) => {
    const child = spawn(GO_IOS, command, { env: env(), cwd: dir });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    return { child, out: () => out, exited: new Promise<number | null>((resolve) => child.on('close', resolve)) };
  };
  const run = async (command: string[]) => {
    const started = start(command);
    const code = await started.exited;
    return { code, out: started.out() };
  };

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'iPhone 17.5', version: '17.5.1', buildVersion: '21F90', wda: false }]);
    phone = bus.phones[0]!;
    dir = mkdtempSync(join(tmpdir(), 'benchtop-go-ios-rsd-'));
    // go-ios's userspace tunnel listens on the port after its API's: both must be free.
    infoPort = await freePortPair();
    agent = spawn(GO_IOS, ['tunnel', 'start', '--userspace', `--tunnel-info-port=${infoPort}`, `--pair-record-path=${dir}`], { env: env(), cwd: dir });
    agent.stdout!.on('data', (d: Buffer) => (agentLog += d.toString()));
    agent.stderr!.on('data', (d: Buffer) => (agentLog += d.toString()));
    tunnel = await waitFor(
      "go-ios's tunnel",
      async () => {
        const { out } = await run(['tunnel', 'ls', `--tunnel-info-port=${infoPort}`]);
        const line = out.split('\n').find((l) => l.startsWith('['));
        return line ? (JSON.parse(line) as GoIosTunnel[]).find((t) => t.udid === phone.udid) : undefined;
      },
      20_000,
    );
  }, 40_000);

  afterAll(async () => {
    if (agent && agent.exitCode === null) {
      const exited = new Promise((resolve) => agent.once('exit', resolve));
      agent.kill();
      await exited;
    }
    await bus?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('`ios rsd ls` lists the services the phone serves, each on its own port; a hostile peer on RSD leaves it serving', async () => {
    // Baseline in the same run: a go-ios command that only asks usbmuxd (its own start-up and exit).
    let started = performance.now();
    expect((await run(['list'])).code).toBe(0);
    const baselineMs = performance.now() - started;
    started = performance.now();
    const { code, out } = await run(args('rsd', 'ls'));
    const rsdMs = performance.now() - started;
    // RSD's own share: from connecting through the tunnel to its Handshake, by a RemoteXPC host of ours.
    started = performance.now();
    const rsd = await coreDevice(tunnel, tunnel.rsdPort);
    const handshake = await rsd.received(4);
    const handshakeMs = performance.now() - started;
    rsd.close();
    expect(handshake.body).toMatchObject({ MessageType: 'Handshake', Properties: { UniqueDeviceID: phone.udid, OSVersion: '17.5.1', ProductType: phone.productType } });
    // As a phone's RSD: the version is OSVersion (what pymobiledevice3 reads); ProductVersion is lockdown's word.
    expect(handshake.body).not.toHaveProperty(['Properties', 'ProductVersion']);
    console.log(`go-ios: \`ios rsd ls\` ${rsdMs.toFixed(0)} ms against \`ios list\` ${baselineMs.toFixed(0)} ms; RSD's Handshake through the tunnel ${handshakeMs.toFixed(1)} ms`);
    expect(code).toBe(0);
    const listed = JSON.parse(out.split('\n').find((l) => l.startsWith('{"com.apple.'))!) as Record<string, { Port: number }>;
    expect(Object.keys(listed).sort()).toEqual([APP_SERVICE, OPEN_STDIO_SOCKET_SERVICE, TESTMANAGERD_REMOTE_SERVICE, DT_SERVICE_HUB].sort());
    const ports = Object.values(listed).map((s) => s.Port);
    expect(new Set(ports).size).toBe(4);
    expect(tunnel.rsdPort).toBe(58783);

    // Without the personalized Developer Disk Image mounted, testmanagerd and instruments are neither listed nor there.
    phone.developerImage = false;
    try {
      const bare = await run(args('rsd', 'ls'));
      expect(Object.keys(JSON.parse(bare.out.split('\n').find((l) => l.startsWith('{"com.apple.'))!) as object).sort()).toEqual([APP_SERVICE, OPEN_STDIO_SOCKET_SERVICE]);
      const closed = await throughTunnel(tunnel, listed[TESTMANAGERD_REMOTE_SERVICE]!.Port);
      await waitFor('go-ios hearing the reset', () => agentLog.includes(`"port":${listed[TESTMANAGERD_REMOTE_SERVICE]!.Port},"error":`), 5000);
      closed.destroy();
    } finally {
      phone.developerImage = true;
    }

    // Garbage, then a frame header declaring 16 MB: each gets the phone's GOAWAY (PROTOCOL_ERROR 1, FRAME_SIZE_ERROR 6)
    // and its connection ends; RSD answers the next host as before.
    const attacks: Array<[Buffer, number]> = [
      [Buffer.from('GET / HTTP/1.1\r\n\r\n'), 1],
      [Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), Buffer.from([0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1])]), 6],
    ];
    for (const [attack, code] of attacks) {
      const socket = await throughTunnel(tunnel, tunnel.rsdPort);
      let received = Buffer.alloc(0);
      socket.on('data', (chunk: Buffer) => (received = Buffer.concat([received, chunk])));
      socket.write(attack);
      const goaway = await waitFor('GOAWAY', () => {
        for (let at = 0; at + 9 <= received.length; at += 9 + received.readUIntBE(at, 3)) {
          if (received[at + 3] === 7 && at + 17 <= received.length) return received.readUInt32BE(at + 13);
        }
        return undefined;
      }, 5000);
      expect(goaway).toBe(code);
      socket.destroy();
    }
    expect((await run(args('rsd', 'ls'))).code).toBe(0);
  });

  it('`ios runwda` starts WDA as Xcode 15 does, WDA answers through the tunnel, and stops with runwda; appservice reports failures as a phone does', async () => {
    expect(phone.wdaRunning).toBe(false);
    expect(await wdaStatus(tunnel)).toBe(0);
    const before = phone.testManager.received.length;

    const started = performance.now();
    const runwda = start(args('runwda', '--log-output=-'));
    await waitFor('WDA running', () => phone.wdaRunning, 20_000);
    // WDA's own log line, through the launch's openstdiosocket to go-ios's log output, as tools that wait for it read it.
    await waitFor("WDA's ServerURLHere", () => runwda.out().includes('ServerURLHere->http://127.0.0.1:8100<-ServerURLHere'), 5000);
    expect(await wdaStatus(tunnel)).toBe(200);
    console.log(`go-ios: \`ios runwda\` to WDA answering /status through the tunnel: ${(performance.now() - started).toFixed(0)} ms`);
    expect(phone.testManager.received.slice(before).map((r) => r.selector).filter((s) => s.startsWith('_IDE_'))).toEqual([
      '_IDE_initiateSessionWithIdentifier:capabilities:',
      '_IDE_initiateControlSessionWithCapabilities:',
      '_IDE_authorizeTestSessionWithProcessID:',
      '_IDE_startExecutingTestPlanWithProtocolVersion:',
    ]);
    const runner = phone.testManager.pidOf(phone.wdaBundleId)!;
    expect(runwda.out()).toContain(`"msg":"authorized","module":"go-ios/testmanagerd","udid":"${phone.udid}","pid":${runner},"authorized":true`);

    // `ios ps --apps` (instruments' deviceinfo over dtservicehub) lists the runner under its pid.
    const ps = await run(args('ps', '--apps'));
    expect(ps.code).toBe(0);
    const apps = JSON.parse(ps.out.split('\n').find((l) => l.startsWith('[{'))!) as Array<{ Name: string; Pid: number; IsApplication: boolean }>;
    expect(apps).toContainEqual(expect.objectContaining({ Name: 'WebDriverAgentRunner-Runner', Pid: runner, IsApplication: true }));
    expect(apps.map((p) => p.Name)).not.toContain('launchd');

    // appservice's own process list and errors, through a RemoteXPC host of ours (go-ios prints neither).
    const appservice = await coreDevice(tunnel, (await run(args('rsd', 'ls'))).out.match(/"com\.apple\.coredevice\.appservice":\{"Port":(\d+)/)!.map(Number)[1]!);
    try {
      const listed = (await appservice.request(invocation('com.apple.coredevice.feature.listprocesses', {}))) as any;
      const tokens = listed['CoreDevice.output'].processTokens as Array<{ processIdentifier: XpcInt64; executableURL: { relative: string } }>;
      expect(tokens.find((t) => xpcNumber(t.processIdentifier) === runner)?.executableURL.relative).toMatch(/WebDriverAgentRunner-Runner\.app\/WebDriverAgentRunner-Runner$/);

      // Not installed: CoreDevice's launch error, with FrontBoard's underneath, as devicectl prints it.
      const missing = (await appservice.request(invocation('com.apple.coredevice.feature.launchapplication', { applicationSpecifier: { bundleIdentifier: { _0: 'com.example.missing' } }, options: {} }))) as any;
      expect(missing['CoreDevice.output']).toBeUndefined();
      expect(missing['CoreDevice.error']).toMatchObject({ code: new XpcInt64(10002), domain: 'com.apple.dt.CoreDeviceError', userInfo: { BundleIdentifier: 'com.example.missing', NSUnderlyingError: { domain: 'FBSOpenApplicationServiceErrorDomain', code: new XpcInt64(4) } } });
      const noSuch = (await appservice.request(invocation('com.apple.coredevice.feature.sendsignaltoprocess', { process: { processIdentifier: new XpcInt64(99999) }, signal: new XpcInt64(9) }))) as any;
      expect(noSuch['CoreDevice.error']).toMatchObject({ domain: 'NSPOSIXErrorDomain', code: new XpcInt64(3) });

      // Safari launched through appservice, then `ios kill` (instruments' process control) ends it.
      const safari = (await appservice.request(invocation('com.apple.coredevice.feature.launchapplication', { applicationSpecifier: { bundleIdentifier: { _0: 'com.apple.mobilesafari' } }, options: {} }))) as any;
      const safariPid = xpcNumber(safari['CoreDevice.output'].processToken.processIdentifier)!;
      expect(phone.testManager.pidOf('com.apple.mobilesafari')).toBe(safariPid);
      const kill = await run(args('kill', 'com.apple.mobilesafari'));
      expect(kill.code).toBe(0);
      expect(kill.out).toContain(`"msg":"killed","bundleID":"com.apple.mobilesafari","pid":${safariPid}`);
      expect(phone.testManager.pidOf('com.apple.mobilesafari')).toBeUndefined();
      expect(phone.wdaRunning).toBe(true);
    } finally {
      appservice.close();
    }

    // Ctrl-C: go-ios ends its testmanagerd session, and with it the runner: WDA's port closes.
    runwda.child.kill('SIGINT');
    expect(await runwda.exited).toBe(0);
    await waitFor('WDA stopped', () => !phone.wdaRunning, 5000);
    expect(await wdaStatus(tunnel)).toBe(0);
    expect(phone.testManager.pidOf(phone.wdaBundleId)).toBeUndefined();

    // A phone that refuses the launch (an untrusted developer profile): runwda fails, WDA stays down.
    phone.launchFailure = 'The developer profile used to sign WebDriverAgentRunner-Runner has not been trusted by the user.';
    try {
      const refused = await run(args('runwda'));
      expect(refused.code).toBe(1);
      expect(refused.out).toMatch(/"msg":"Failed running WDA","error":"runXUITestWithBundleIdsXcode15Ctx: cannot start test runner: LaunchAppWithStdIo: failed to launch app: launchApp: failed to get PID/);
      expect(phone.wdaRunning).toBe(false);
    } finally {
      phone.launchFailure = undefined;
    }
  });
});
