import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { appiumIosDevice, installationProxy, replyAsDecoded, startService, type DtxClient, type DtxReply, type UsbmuxdAddress } from './usbmux.js';

/** What Appium's WebDriverAgent project builds its runner as, unless a team renames it. */
export const DEFAULT_WDA_BUNDLE_ID = 'com.facebook.WebDriverAgentRunner.xctrunner';

/**
 * How this host can start WebDriverAgent's runner on a phone of that iOS version: through lockdown's testmanagerd
 * (iOS < 17, any host, what Xcode did before CoreDevice), with `xcrun devicectl` (iOS 17+, a Mac with Xcode 15+),
 * or not at all (iOS 17+ elsewhere: testmanagerd is only behind a RemoteXPC tunnel, which needs root and a TUN device).
 */
export type WdaStrategy = 'testmanagerd' | 'devicectl' | 'none';

export interface WdaLaunchOptions {
  /** The runner's bundle id (BENCHTOP_WDA_BUNDLE_ID). */
  bundleId: string;
  /** The xcrun to run devicectl with, or null where there is none (BENCHTOP_XCRUN). */
  xcrun: string | null;
  /** Where xcrun runs: on this host when absent; on a Mac provider, over SSH on that Mac (the phone is plugged in there). */
  runXcrun?: XcrunRunner;
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
  /** Ends the run (testmanagerd: closes the IDE's sessions, which stops the runner). */
  close(): void;
}

/** A start that failed, with why and what to do, in the words the fleet shows. */
export class WdaStartError extends Error {}

export function wdaStrategy(osVersion: string, xcrun: string | null): WdaStrategy {
  const major = parseInt(osVersion, 10);
  if (Number.isFinite(major) && major < 17) return 'testmanagerd';
  return xcrun ? 'devicectl' : 'none';
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
  return (
    `iOS ${osVersion}: from iOS 17 on, XCTest runners start only through a RemoteXPC tunnel (root and a TUN device on ` +
    'Linux), which Benchtop does not open, so it cannot start WebDriverAgent here. Start it yourself: on a Mac with ' +
    `Xcode 15+, xcrun devicectl device process launch --device ${udid} ${bundleId}, or the xcodebuild ... test ` +
    'command (docs/iphones.md); on Linux, a tunnel tool such as pymobiledevice3 or go-ios. Benchtop uses it within 5 s of ' +
    `it answering. ${installSteps(udid)}`
  );
}

export async function startWda(address: UsbmuxdAddress, udid: string, osVersion: string, options: WdaLaunchOptions): Promise<StartedWda> {
  const strategy = wdaStrategy(osVersion, options.xcrun);
  if (strategy === 'testmanagerd') return startOverTestmanagerd(address, udid, osVersion, options.bundleId);
  if (strategy === 'devicectl') return startWithDevicectl(options.xcrun!, udid, options.bundleId, options.runXcrun ?? runXcrunHere);
  throw new WdaStartError(manualSteps(udid, osVersion, options.bundleId));
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
