import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { GoIosError, goIosEnv, UserspaceTunnel, type UserspaceTunnelOptions } from './tunnel.js';
import { appiumIosDevice, formatUsbmuxdAddress, installationProxy, replyAsDecoded, startService, type DtxClient, type DtxReply, type UsbmuxdAddress } from './usbmux.js';

/** What Appium's WebDriverAgent project builds its runner as, unless a team renames it. */
export const DEFAULT_WDA_BUNDLE_ID = 'com.facebook.WebDriverAgentRunner.xctrunner';

/**
 * How this host can start WebDriverAgent's runner on a phone of that iOS version: through lockdown's testmanagerd
 * (iOS < 17, any host, what Xcode did before CoreDevice), with `xcrun devicectl` (iOS 17+, a Mac with Xcode 15+),
 * through a userspace CoreDeviceProxy tunnel that go-ios opens (iOS 17.4+ anywhere, no root), or not at all (iOS
 * 17.0-17.3 without a Mac: no CoreDeviceProxy, and the tunnel they need takes root and a TUN device).
 */
export type WdaStrategy = 'testmanagerd' | 'devicectl' | 'tunnel' | 'none';

/** How the fleet row says WDA runs: the strategy that started it, or `external` when it was answering already. */
export type WdaLaunch = 'lockdown' | 'tunnel' | 'devicectl' | 'external';
export const launchOf = (via: Exclude<WdaStrategy, 'none'>): WdaLaunch => (via === 'testmanagerd' ? 'lockdown' : via);

export interface WdaLaunchOptions {
  /** The runner's bundle id (BENCHTOP_WDA_BUNDLE_ID). */
  bundleId: string;
  /** The xcrun to run devicectl with, or null where there is none (BENCHTOP_XCRUN). */
  xcrun: string | null;
  /** Where xcrun runs: on this host when absent; on a Mac provider, over SSH on that Mac (the phone is plugged in there). */
  runXcrun?: XcrunRunner;
  /** go-ios, for iOS 17.4+ userspace tunnels (a provider's phones too); absent where there is none (BENCHTOP_GO_IOS=off). */
  goIos?: Omit<UserspaceTunnelOptions, 'usbmuxd' | 'log'>;
  /** The personalized Developer Disk Image the lab mounts on iOS 17+ phones (BENCHTOP_DDI_PATH): Xcode's Restore folder. */
  ddiPath?: string | null;
}

/** What one xcrun run left: why it failed (its last line of stderr), if it did, and its --json-output report, if it wrote one. */
export interface XcrunOutcome {
  failure?: string;
  report?: string;
}

/** Runs `xcrun` with the arguments `args(report)` gives for a --json-output file at `report`, a path where xcrun runs. */
export type XcrunRunner = (xcrun: string, args: (report: string) => string[], timeoutMs: number) => Promise<XcrunOutcome>;

/** xcrun on this host, its report in a temporary directory of its own. */
export const runXcrunHere: XcrunRunner = async (xcrun, args, timeoutMs) => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-devicectl-'));
  const report = join(dir, 'launch.json');
  try {
    const failure = await new Promise<string | undefined>((resolve) => {
      execFile(xcrun, args(report), { timeout: timeoutMs }, (error, _stdout, stderr) => {
        if (!error) return resolve(undefined);
        const code = (error as NodeJS.ErrnoException).code;
        resolve(code === 'ENOENT' ? `${xcrun} was not found` : String(stderr).trim().split('\n').pop() || error.message);
      });
    });
    let written: string | undefined;
    try {
      written = readFileSync(report, 'utf8');
    } catch {
      // No report: xcrun failed before writing one; its stderr says why.
    }
    return { failure, report: written };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};

/** A runner this engine started; for testmanagerd, the connections its test run lives on. */
export interface StartedWda {
  via: Exclude<WdaStrategy, 'none'>;
  /** Ends the run (testmanagerd: closes the IDE's sessions, which stops the runner; tunnel: stops go-ios, resolving once it has). */
  close(): void | Promise<void>;
  /** A connection to a port on the phone by the way this run reaches it (the tunnel); absent: through usbmuxd. */
  connect?(port: number): Promise<Socket>;
  /** The tunnel it runs in, if any. */
  tunnel?: UserspaceTunnel;
}

/** A start that failed, with why and what to do, in the words the fleet shows. */
export class WdaStartError extends Error {}

/** The dotted parts of a version as numbers: "17.4.1" is [17, 4, 1], "17.4" is [17, 4, 0]. */
function versionParts(osVersion: string): [number, number, number] {
  const [major = NaN, minor = 0, patch = 0] = osVersion.split('.').map((p) => parseInt(p, 10));
  return [major, Number.isFinite(minor) ? minor : 0, Number.isFinite(patch) ? patch : 0];
}

/** iOS 17.0 to 17.3: no CoreDeviceProxy, so no tunnel without root. */
export function isIos17Early(osVersion: string): boolean {
  const [major, minor] = versionParts(osVersion);
  return major === 17 && minor < 4;
}

/**
 * iOS 17.4.0 exactly: go-ios 1.2.0 (up to 1.3.2) opens a userspace tunnel only on a version greater than 17.4.0
 * (tunnel_api.go: `version.GreaterThan(semver.MustParse("17.4.0"))`), and refuses 17.4 itself as older.
 */
export function isIos174Exactly(osVersion: string): boolean {
  const [major, minor, patch] = versionParts(osVersion);
  return major === 17 && minor === 4 && patch === 0;
}

export function wdaStrategy(osVersion: string, xcrun: string | null, goIos = false): WdaStrategy {
  const [major] = versionParts(osVersion);
  if (Number.isFinite(major) && major < 17) return 'testmanagerd';
  if (xcrun) return 'devicectl';
  if (!goIos || isIos17Early(osVersion) || isIos174Exactly(osVersion)) return 'none';
  return 'tunnel';
}

/** BENCHTOP_XCRUN names the xcrun to use ("off": none); by default xcrun on a Mac, or wherever PATH has one. */
export function findXcrun(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string | null {
  if (env.BENCHTOP_XCRUN === 'off') return null;
  if (env.BENCHTOP_XCRUN) return env.BENCHTOP_XCRUN;
  if (platform === 'darwin') return 'xcrun';
  const found = (env.PATH ?? '').split(delimiter).find((dir) => dir && existsSync(join(dir, 'xcrun')));
  return found ? join(found, 'xcrun') : null;
}

const installSteps = (udid: string) =>
  'Install and sign it once from a Mac: clone appium/WebDriverAgent, set the WebDriverAgentRunner team in Xcode, then run ' +
  `xcodebuild -project WebDriverAgent.xcodeproj -scheme WebDriverAgentRunner -destination id=${udid} test (docs/iphones.md).`;

/** The steps for a phone this host cannot start WDA on (iOS 17+ without a Mac). */
export function manualSteps(udid: string, osVersion: string, bundleId: string): string {
  if (isIos17Early(osVersion)) {
    return (
      `iOS ${osVersion}: iOS 17.0-17.3 starts XCTest runners only through a RemoteXPC tunnel that needs root and a TUN ` +
      'device (they have no CoreDeviceProxy, which 17.4 added), so Benchtop cannot start WebDriverAgent on it here. What ' +
      'works: plug it into a Mac provider (Xcode 15+), whose devicectl starts it; or update the phone to iOS 17.4 or later ' +
      `(Settings > General > Software Update), which Benchtop starts through a userspace tunnel on any host. ${installSteps(udid)}`
    );
  }
  if (isIos174Exactly(osVersion)) {
    return (
      `iOS ${osVersion}: the go-ios release Benchtop uses (1.2.0) opens its userspace tunnel on iOS later than 17.4.0 only, ` +
      'so it cannot start WebDriverAgent on this phone. Update the phone to iOS 17.4.1 or later (Settings > General > ' +
      `Software Update), or plug it into a Mac provider (Xcode 15+). ${installSteps(udid)}`
    );
  }
  return (
    `iOS ${osVersion}: from iOS 17 on, XCTest runners start only through a RemoteXPC tunnel (root and a TUN device on ` +
    'Linux), which Benchtop does not open, so it cannot start WebDriverAgent here. Start it yourself: on a Mac with ' +
    `Xcode 15+, xcrun devicectl device process launch --device ${udid} ${bundleId}, or the xcodebuild ... test ` +
    'command (docs/iphones.md); on Linux, a tunnel tool such as pymobiledevice3 or go-ios. Benchtop uses it within 5 s of ' +
    `it answering. ${installSteps(udid)}`
  );
}

export async function startWda(
  address: UsbmuxdAddress,
  udid: string,
  osVersion: string,
  options: WdaLaunchOptions,
  /** For a run that lives in processes of the lab's (go-ios): one ended on its own, so WDA is gone with it. */
  onEnded: () => void = () => undefined,
  log: (message: string) => void = () => undefined,
): Promise<StartedWda> {
  const strategy = wdaStrategy(osVersion, options.xcrun, !!options.goIos);
  if (strategy === 'testmanagerd') return startOverTestmanagerd(address, udid, osVersion, options.bundleId);
  if (strategy === 'devicectl') return startWithDevicectl(options.xcrun!, udid, options.bundleId, options.runXcrun ?? runXcrunHere);
  if (strategy === 'tunnel') return startThroughTunnel(address, udid, osVersion, options, onEnded, log);
  throw new WdaStartError(manualSteps(udid, osVersion, options.bundleId));
}

// ---- iOS 17.4+ anywhere: go-ios's userspace tunnel ----

/** What go-ios's complaints mean, in the words the fleet shows. */
function tunnelProblem(udid: string, osVersion: string, why: string, options: WdaLaunchOptions): string {
  if (/CoreDeviceProxy/.test(why) && /InvalidService/.test(why)) {
    return (
      `the phone refused a CoreDeviceProxy tunnel (${why}). iOS ${osVersion} offers it from 17.4 on to a trusted host with ` +
      'Developer Mode on (Settings > Privacy & Security > Developer Mode): check both, then unplug and plug it in again.'
    );
  }
  if (/testmanagerd|dt\.|Developer ?Disk ?Image|ddi/i.test(why)) return `${ddiSteps(osVersion, options.ddiPath)} (go-ios: ${why})`;
  return `go-ios could not start WebDriverAgent through the tunnel: ${why}. ${installSteps(udid)}`;
}

/**
 * The personalized Developer Disk Image (iOS 17+): without it RSD lists no testmanagerd, and no test runner starts.
 * Xcode keeps it at Xcode.app/Contents/Resources/CoreDevice/Device Support/iOS.ddi/Restore (BuildManifest.plist,
 * Image.dmg, Image.dmg.trustcache); mounting it asks Apple's signing server (TSS) for a signature for this phone.
 */
export function ddiSteps(osVersion: string, ddiPath: string | null | undefined): string {
  const where =
    'Copy the Restore folder of Xcode 15+\'s personalized image (Xcode.app/Contents/Resources/CoreDevice/Device Support/' +
    'iOS.ddi/Restore, holding BuildManifest.plist, Image.dmg and Image.dmg.trustcache) to this computer and set ' +
    'BENCHTOP_DDI_PATH to that folder; the lab mounts it when it sees the phone. Mounting asks Apple\'s signing server ' +
    '(TSS, gs.apple.com) to sign it for this phone, so this computer needs the internet the first time (docs/iphones.md).';
  return ddiPath
    ? `the Developer Disk Image for iOS ${osVersion} is not mounted, and mounting ${ddiPath} failed. ${where}`
    : `the phone's personalized Developer Disk Image (iOS ${osVersion}) is not mounted: without it no test runner starts. ${where}`;
}

/** Runs one go-ios command to its end (`internet`: with the proxy settings, see goIosEnv); resolves with its exit code and output. */
function runGoIos(binary: string, args: string[], usbmuxd: string, timeoutMs: number, internet = false): Promise<{ code: number | null; stdout: string; output: string }> {
  return new Promise((resolve) => {
    execFile(binary, args, { timeout: timeoutMs, env: goIosEnv({ USBMUXD_SOCKET_ADDRESS: usbmuxd }, internet) }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout: String(stdout), output: `${String(stdout)}${String(stderr)}` });
    });
  });
}

/** The services `ios rsd ls` printed (a JSON object by name); none when it reached no RSD (it then prints {}). */
function rsdServices(stdout: string): string[] {
  try {
    const listed = JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as unknown;
    return listed && typeof listed === 'object' ? Object.keys(listed) : [];
  } catch {
    return [];
  }
}

const RSD_TESTMANAGERD = 'com.apple.dt.testmanagerd.remote';
const GO_IOS_COMMAND_MS = 30_000;

/** How long `ios runwda` has to get WDA answering /status through the tunnel. */
const TUNNEL_READY_MS = 30_000;

/** GET /status through the tunnel: whether WDA answers 200 on port 8100. */
async function statusAnswers(tunnel: UserspaceTunnel): Promise<boolean> {
  const socket = await tunnel.connect(8100).catch(() => undefined);
  if (!socket) return false;
  try {
    return await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 2000);
      socket.once('data', (chunk: Buffer) => {
        clearTimeout(timer);
        resolve(/^HTTP\/1\.[01] 200/.test(chunk.toString('latin1')));
      });
      socket.once('close', () => {
        clearTimeout(timer);
        resolve(false);
      });
      socket.write('GET /status HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n');
    });
  } finally {
    socket.destroy();
  }
}

/**
 * The tunnel (tunnel.ts), then `ios runwda` through it until WDA answers. Should runwda end first, RSD's service list
 * says why: no testmanagerd there means no personalized Developer Disk Image, which the lab mounts when
 * BENCHTOP_DDI_PATH names one (`ios image mount --path`), then tries once more, and otherwise explains. (Listing RSD
 * first would cost every start another go-ios process: 2.5 s on a busy 2-core box.)
 */
async function startThroughTunnel(
  address: UsbmuxdAddress,
  udid: string,
  osVersion: string,
  options: WdaLaunchOptions,
  onEnded: () => void,
  log: (message: string) => void,
): Promise<StartedWda> {
  // A provider's usbmuxd is a channel over SSH, which go-ios cannot open: it gets a loopback usbmuxd of this phone
  // alone, relaying there (loaded with the first: the pairing it makes brings X.509 libraries).
  const relay = 'open' in address
    ? await import('./private-usbmuxd.js').then(({ startLoopbackUsbmuxd }) => startLoopbackUsbmuxd(address, udid, log)).catch((error: Error) => {
      throw new WdaStartError(tunnelProblem(udid, osVersion, `no usbmuxd for go-ios: ${error.message}`, options));
    })
    : undefined;
  const usbmuxd = relay?.address ?? formatUsbmuxdAddress(address);
  // Until WDA answers, a process that ends is this start's failure; after, it is the run's end.
  let live = false;
  const tunnel = new UserspaceTunnel(udid, { ...options.goIos!, usbmuxd, log }, () => {
    if (!live) return;
    live = false;
    onEnded();
  });
  // The relay goes with go-ios: closed once its processes are, so that neither outlives the other.
  const close = () => tunnel.close().finally(() => relay?.close());
  try {
    await tunnel.open();
    const binary = options.goIos!.binary;
    for (let mounted = false; ; ) {
      tunnel.runWda(options.bundleId);
      const deadline = Date.now() + TUNNEL_READY_MS;
      let ready = false;
      while (!ready && tunnel.runnerAlive() && Date.now() < deadline) {
        ready = await statusAnswers(tunnel);
        if (!ready) await new Promise((r) => setTimeout(r, 50));
      }
      if (ready) break;
      if (tunnel.runnerAlive()) throw new WdaStartError(`go-ios's runwda ran, but WebDriverAgent did not answer through the tunnel within ${TUNNEL_READY_MS / 1000} s (${tunnel.lastComplaint() ?? 'no complaint'}).`);
      const why = tunnel.lastComplaint() ?? 'runwda ended';
      const listed = await runGoIos(binary, ['rsd', 'ls', `--udid=${udid}`, `--tunnel-info-port=${tunnel.agentPort}`], usbmuxd, GO_IOS_COMMAND_MS);
      const services = rsdServices(listed.stdout);
      if (services.length === 0 || services.includes(RSD_TESTMANAGERD)) throw new WdaStartError(tunnelProblem(udid, osVersion, why, options));
      if (!options.ddiPath) throw new WdaStartError(ddiSteps(osVersion, null));
      if (mounted) throw new WdaStartError(`${ddiSteps(osVersion, options.ddiPath)} (it mounted, yet RSD lists no testmanagerd)`);
      log(`${udid}: mounting the personalized Developer Disk Image from ${options.ddiPath}`);
      // Through the lab's proxy, if it has one: go-ios asks Apple's TSS (https://gs.apple.com) to sign the image.
      const mount = await runGoIos(binary, ['image', 'mount', `--path=${options.ddiPath}`, `--udid=${udid}`], usbmuxd, GO_IOS_COMMAND_MS, true);
      if (mount.code !== 0) throw new WdaStartError(`${ddiSteps(osVersion, options.ddiPath)} go-ios said: ${lastLine(mount.output)}`);
      mounted = true;
    }
    live = true;
    return {
      via: 'tunnel',
      tunnel,
      connect: (port) => tunnel.connect(port),
      close: () => {
        live = false;
        return close();
      },
    };
  } catch (error) {
    await close();
    if (error instanceof WdaStartError) throw error;
    throw new WdaStartError(tunnelProblem(udid, osVersion, error instanceof GoIosError ? error.message : (error as Error).message, options));
  }
}

/** go-ios's last complaint in a command's output (its JSON log lines), else its last line. */
function lastLine(output: string): string {
  const lines = output.trim().split('\n').filter((l) => l.trim());
  for (const line of lines.reverse()) {
    try {
      const entry = JSON.parse(line) as { level?: string; msg?: string; error?: string; err?: string };
      if (entry.level === 'ERROR' || entry.level === 'WARN') return [entry.msg, entry.error ?? entry.err].filter(Boolean).join(': ');
    } catch {
      return line;
    }
  }
  return 'no output';
}

// ---- iOS 17+ on a Mac: devicectl ----

const DEVICECTL_TIMEOUT_MS = 60_000;

/**
 * `xcrun devicectl device process launch --device <udid> --terminate-existing <bundle id>` (Xcode 15+): CoreDevice
 * launches the runner, which serves WDA by itself (Appium's preinstalled-WDA path on iOS 17+). Its JSON report
 * (`--json-output`) says whether it did; the process outlives devicectl.
 */
async function startWithDevicectl(xcrun: string, udid: string, bundleId: string, run: XcrunRunner): Promise<StartedWda> {
  const { failure, report } = await run(
    xcrun,
    (path) => ['devicectl', 'device', 'process', 'launch', '--device', udid, '--terminate-existing', '--json-output', path, bundleId],
    DEVICECTL_TIMEOUT_MS,
  );
  let outcome: { info?: { outcome?: string }; error?: { userInfo?: { NSLocalizedDescription?: { string?: string } } } } = {};
  try {
    if (report) outcome = JSON.parse(report) as typeof outcome;
  } catch {
    // A report cut short: devicectl's stderr says why.
  }
  if (failure || outcome.info?.outcome !== 'success') {
    const why = outcome.error?.userInfo?.NSLocalizedDescription?.string ?? failure ?? 'devicectl did not report success';
    throw new WdaStartError(
      `xcrun devicectl could not launch ${bundleId}: ${why}. If the runner is not installed or its profile is not trusted ` +
        `(Settings > General > VPN & Device Management), fix that first. ${installSteps(udid)}`,
    );
  }
  // Nothing to hold: the runner lives on its own until it is terminated or the phone restarts.
  return { via: 'devicectl', close: () => undefined };
}

// ---- iOS < 17: XCTest through testmanagerd, as Xcode did ----

const PROCESS_CONTROL = 'com.apple.instruments.server.services.processcontrol';
const DAEMON_CONNECTION = 'dtxproxy:XCTestManager_IDEInterface:XCTestManager_DaemonConnectionInterface';
/** The XCTest protocol version Xcode announces; testmanagerd accepts it from iOS 11 to 16. */
const XCODE_PROTOCOL = 29;
/** Marks a call on the reverse of the first channel the IDE opened (code -1): how the test plan is started. */
const REVERSE_OF_FIRST_CHANNEL = 0xffffffff;
const REPLY_TIMEOUT_MS = 10_000;

/** A DTX reply's object, or the NSError's description when the phone answered with one. */
function failureOf(reply: DtxReply | undefined): string | undefined {
  const object = reply?.selector as { $class?: string; domain?: string; code?: number; userinfo?: { NSLocalizedDescription?: string } } | undefined;
  if (object?.$class !== 'NSError') return undefined;
  return object.userinfo?.NSLocalizedDescription ?? `${String(object.domain)} error ${String(object.code)}`;
}

/** DTX calls whose replies are taken as they are decoded: polling every 500 ms would add seconds to a launch of ten calls. */
function replyOnArrival(service: DtxClient): void {
  const aid = appiumIosDevice();
  service._callChannel = (sync, code, selector, ...aux) => {
    const identifier = service._nextIdentifier++;
    const auxiliaries = aux.length === 1 && aux[0] instanceof aid.DTXMessageAuxBuffer ? aux[0] : aux;
    if (!sync) {
      service._encoder.write({ sync, channelCode: code, selector, auxiliaries, identifier } as never);
      return Promise.resolve(undefined);
    }
    const reply = replyAsDecoded(service._decoder, () => service._replyQueues[identifier]!.shift(), REPLY_TIMEOUT_MS, () =>
      new Error(`the phone did not answer ${selector} within ${REPLY_TIMEOUT_MS / 1000} s`));
    service._encoder.write({ sync, channelCode: code, selector, auxiliaries, identifier } as never);
    return reply;
  };
}

/**
 * Starts the runner the way Xcode does, with appium-ios-device's DTX clients on this engine's own usbmuxd connections
 * (its `Xctest` class opens the system's usbmuxd only). The order matters to testmanagerd:
 * 1. a control session (`_IDE_initiateControlSessionWithProtocolVersion:`), which will authorize the runner's pid;
 * 2. an execution session (`_IDE_initiateSessionWithIdentifier:...`) under a fresh session id, which the runner
 *    reports to: it says `_XCT_testBundleReadyWithProtocolVersion:minimumVersion:`, the IDE answers by starting the
 *    test plan, and WDA's plan serves HTTP on 8100 for as long as this session stays open;
 * 3. an .xctestconfiguration naming that session, written into the runner's container's tmp through house_arrest
 *    (the runner reads it at launch from XCTestConfigurationFilePath);
 * 4. the launch, through instruments' process control, with that path in the environment;
 * 5. `_IDE_authorizeTestSessionWithProcessID:` on the control session, which lets the runner connect.
 */
async function startOverTestmanagerd(address: UsbmuxdAddress, udid: string, osVersion: string, bundleId: string): Promise<StartedWda> {
  const aid = appiumIosDevice();
  const major = parseInt(osVersion, 10);
  const opened: Socket[] = [];
  // Every connection is tracked, so that a failure at any step leaves none open on the phone.
  const open = async (name: string, handshakeOnly = false) => {
    try {
      const socket = await startService(address, udid, name, { handshakeOnly });
      opened.push(socket);
      return socket;
    } catch (error) {
      if (/InvalidService/.test((error as Error).message)) {
        throw new WdaStartError(
          `the phone offers no ${name}: its Developer Disk Image is not mounted (it is unmounted at every restart). Plug it ` +
            `into a Mac and open Xcode's Devices window once, or mount the image for iOS ${osVersion} with ideviceimagemounter.`,
        );
      }
      throw error;
    }
  };
  const dtx = async (kind: 'testmanagerd' | 'instruments') => {
    // From iOS 14 the services are TLS throughout under ".secure" names; before, TLS only for the handshake.
    const name =
      kind === 'testmanagerd'
        ? major >= 14 ? 'com.apple.testmanagerd.lockdown.secure' : 'com.apple.testmanagerd.lockdown'
        : major >= 14 ? 'com.apple.instruments.remoteserver.DVTSecureSocketProxy' : 'com.apple.instruments.remoteserver';
    const socket = await open(name, major < 14);
    const service = kind === 'testmanagerd' ? new aid.TestmanagerdService(socket) : new aid.InstrumentService(socket);
    replyOnArrival(service);
    return service;
  };
  const check = (reply: DtxReply | undefined, what: string) => {
    const failure = failureOf(reply);
    if (failure) throw new WdaStartError(`${what} failed: ${failure}`);
    return reply;
  };
  const auxOf = (...values: unknown[]) => {
    const aux = new aid.DTXMessageAuxBuffer();
    for (const v of values) aux.appendObject(v);
    return aux;
  };

  try {
    // The runner: installed, an XCTest runner, and where it lives.
    const proxy = await installationProxy(address, udid);
    let app: Record<string, unknown> | undefined;
    try {
      app = (await proxy.lookupApplications({ bundleIds: [bundleId] }))[bundleId];
    } finally {
      proxy.close();
    }
    if (!app) throw new WdaStartError(`WebDriverAgent's runner ${bundleId} is not installed on the phone. ${installSteps(udid)} If yours has another bundle id, set BENCHTOP_WDA_BUNDLE_ID.`);
    const executable = String(app.CFBundleExecutable ?? '');
    if (!executable.endsWith('-Runner')) throw new WdaStartError(`${bundleId} is not an XCTest runner (its executable is "${executable}"); BENCHTOP_WDA_BUNDLE_ID must name WebDriverAgent's .xctrunner.`);
    const appPath = String(app.Path);
    const container = String(app.Container ?? '');
    const target = executable.slice(0, -'-Runner'.length);
    const sessionId = randomUUID().toUpperCase();

    // 1. Control session.
    const control = await dtx('testmanagerd');
    if (major >= 11) check(await control.callChannel(DAEMON_CONNECTION, '_IDE_initiateControlSessionWithProtocolVersion:', auxOf(XCODE_PROTOCOL)), 'testmanagerd control session');

    // 2. Execution session; the runner's "bundle ready" starts the test plan.
    const exec = await dtx('testmanagerd');
    const bundleReady = new Promise<void>((resolve) => {
      exec.registerSelectorCallback('_XCT_testBundleReadyWithProtocolVersion:minimumVersion:', () => {
        void exec._callChannel(false, REVERSE_OF_FIRST_CHANNEL, '_IDE_startExecutingTestPlanWithProtocolVersion:', auxOf(XCODE_PROTOCOL));
        resolve();
      });
    });
    check(
      await exec.callChannel(
        DAEMON_CONNECTION,
        '_IDE_initiateSessionWithIdentifier:forClient:atPath:protocolVersion:',
        // The client string and the xcodebuild path are what Xcode sends; testmanagerd only logs them.
        auxOf(new aid.NSUUID(sessionId.toLowerCase()), `${sessionId}-746F-006D726964646C79`, '/Applications/Xcode.app/Contents/Developer/usr/bin/xcodebuild', XCODE_PROTOCOL),
      ),
      'testmanagerd execution session',
    );

    // 3. The test configuration, in the runner's container.
    const configPath = `/tmp/${target}-${sessionId}.xctestconfiguration`;
    const configuration = new aid.XCTestConfiguration({ testBundleURL: `file://${appPath}/PlugIns/${target}.xctest`, sessionIdentifier: sessionId.toLowerCase(), targetApplicationBundleID: null });
    const houseArrest = new aid.HouseArrestService(await open('com.apple.mobile.house_arrest'));
    try {
      const afc = await houseArrest.vendContainer(bundleId).catch((error: Error) => {
        throw new WdaStartError(`the phone would not open ${bundleId}'s container (${error.message}); the runner must be a development build. ${installSteps(udid)}`);
      });
      // Earlier runs' configurations are removed, as Xcode does.
      for (const name of await afc.listDirectory('/tmp')) if (name.endsWith('.xctestconfiguration')) await afc.deleteDirectory(`/tmp/${name}`);
      const stream = await afc.createWriteStream(configPath, {});
      await new Promise<void>((resolve, reject) => {
        stream.once('error', reject);
        stream.write(configuration.getBytes(), (error) => (error ? reject(error) : resolve()));
      });
      // The stream closes its AFC file handle after it finishes; the container is closed only after that ('close').
      await new Promise<void>((resolve) => {
        stream.once('close', resolve);
        stream.end();
      });
    } finally {
      houseArrest.close();
      opened.pop()?.destroy();
    }

    // 4. The launch.
    const instruments = await dtx('instruments');
    await instruments.callChannel(PROCESS_CONTROL, 'processIdentifierForBundleIdentifier:', bundleId);
    const env: Record<string, string> = {
      XCTestConfigurationFilePath: container + configPath,
      DYLD_FRAMEWORK_PATH: `${appPath}/Frameworks:`,
      DYLD_LIBRARY_PATH: `${appPath}/Frameworks`,
      NSUnbufferedIO: 'YES',
      // WDA's ports, as Benchtop reaches them through usbmuxd.
      USE_PORT: '8100',
      MJPEG_SERVER_PORT: '9100',
    };
    const options: Record<string, boolean> = { StartSuspendedKey: false };
    if (major >= 12) options.ActivateSuspended = true;
    const launched = await instruments.callChannel(
      PROCESS_CONTROL,
      'launchSuspendedProcessWithDevicePath:bundleIdentifier:environment:arguments:options:',
      appPath, bundleId, env, ['-NSTreatUnknownArgumentsAsOpen', 'NO', '-ApplePersistenceIgnoreState', 'YES'], options,
    );
    const pid = launched.selector;
    if (typeof pid !== 'number') {
      throw new WdaStartError(
        `the phone refused to launch ${bundleId}: ${failureOf(launched) ?? String(pid)}. If the developer is not trusted, trust it ` +
          'in Settings > General > VPN & Device Management; if its profile expired (free accounts: 7 days), build and install it again.',
      );
    }
    check(await instruments.callChannel(PROCESS_CONTROL, 'startObservingPid:', auxOf(pid)), 'observing the runner');

    // 5. Authorization; the runner then reports to the execution session.
    const authorize =
      major >= 12 ? control.callChannel(DAEMON_CONNECTION, '_IDE_authorizeTestSessionWithProcessID:', auxOf(pid))
      : major <= 9 ? control.callChannel(DAEMON_CONNECTION, '_IDE_initiateControlSessionForTestProcessID:', auxOf(pid))
      : control.callChannel(DAEMON_CONNECTION, '_IDE_initiateControlSessionForTestProcessID:protocolVersion:', auxOf(pid, XCODE_PROTOCOL));
    check(await authorize, 'authorizing the runner');
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      bundleReady,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new WdaStartError(`the runner (pid ${pid}) launched but never reported to testmanagerd within ${REPLY_TIMEOUT_MS / 1000} s; its syslog says why.`)), REPLY_TIMEOUT_MS);
      }),
    ]).finally(() => clearTimeout(timer));
    const sockets = [...opened];
    return { via: 'testmanagerd', close: () => sockets.forEach((s) => s.destroy()) };
  } catch (error) {
    for (const socket of opened) socket.destroy();
    throw error instanceof WdaStartError ? error : new WdaStartError(`starting WebDriverAgent through testmanagerd failed: ${(error as Error).message}`);
  }
}
