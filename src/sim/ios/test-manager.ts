import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { MediaFs, serveAfc } from './afc.js';
import { buildBinary, parseBinary } from 'plist';
import { Archived, DtxConnection } from './dtx.js';
import type { InstalledApp } from './installation-proxy.js';
import { archive, NSError, NSURL, unarchive } from './nskeyed.js';
import { PlistChannel } from '../../protocols/apple/plist-wire.js';

export const HOUSE_ARREST_SERVICE = 'com.apple.mobile.house_arrest';
/** Before iOS 14 these two run in plain text after a TLS handshake; since, in TLS throughout (the ".secure" names). */
export const INSTRUMENTS_SERVICE = 'com.apple.instruments.remoteserver';
export const INSTRUMENTS_SECURE_SERVICE = 'com.apple.instruments.remoteserver.DVTSecureSocketProxy';
export const TESTMANAGERD_SERVICE = 'com.apple.testmanagerd.lockdown';
export const TESTMANAGERD_SECURE_SERVICE = 'com.apple.testmanagerd.lockdown.secure';

const PROCESS_CONTROL = 'com.apple.instruments.server.services.processcontrol';
const DEVICE_INFO = 'com.apple.instruments.server.services.deviceinfo';
/** Daemons every phone runs, listed with the apps it launched (as instruments' deviceinfo and CoreDevice list them). */
const SYSTEM_PROCESSES: Array<{ pid: number; path: string; isApplication: boolean }> = [
  { pid: 1, path: '/sbin/launchd', isApplication: false },
  { pid: 58, path: '/System/Library/CoreServices/SpringBoard.app/SpringBoard', isApplication: true },
  { pid: 211, path: '/Developer/usr/libexec/testmanagerd', isApplication: false },
];
const DAEMON_CONNECTION = 'dtxproxy:XCTestManager_IDEInterface:XCTestManager_DaemonConnectionInterface';
/** The channel a test runner's testmanagerd opens to the IDE on iOS 17+, by code 1 (go-ios answers on -1 whatever the code). */
const DRIVER_INTERFACE = 'dtxproxy:XCTestDriverInterface:XCTestManager_IDEInterface';
const DRIVER_INTERFACE_CODE = 1;
/** What testmanagerd of iOS 17 says it can do, in answer to the IDE's capabilities. */
const DAEMON_CAPABILITIES = { 'XCTIssue capability': 1, 'daemon container sandbox extension': 1, 'request diagnostics for specific devices': 1, 'skipped test capability': 1, 'test timeout capability': 1 };
const RUNNER_CAPABILITIES = { 'XCTIssue capability': 1, 'delayed attachment transfer': 1, 'expected failure test capability': 1, 'skipped test capability': 1, 'test case run configurations': 1, 'test timeout capability': 1, 'ubiquitous test identifiers': 1 };
/** XCTest's protocol version as testmanagerd announces it in _XCT_testBundleReadyWithProtocolVersion:minimumVersion:. */
const XCTEST_PROTOCOL = 36;
const XCTEST_MINIMUM_PROTOCOL = 16;
const CONFIGURATION = /^\/tmp\/[^/]+\.xctestconfiguration$/;

/** What the developer services need of their phone. */
export interface DeveloperHost {
  apps: Map<string, InstalledApp>;
  /** The app's data container (what house_arrest vends), or undefined for an app without one. */
  container(bundleId: string): { path: string; fs: MediaFs } | undefined;
  /** When set, launching a process fails with this description (an untrusted profile, an expired certificate). */
  launchFailure(): string | undefined;
  /** WebDriverAgent's test plan runs: its HTTP server (8100) and MJPEG server (9100) start. */
  startWda(): void;
  stopWda(): void;
  log(process: string, message: string): void;
}

interface RunnerProcess {
  pid: number;
  bundleId: string;
  /** The XCTest session the runner's configuration names; undefined for an app launched plainly. */
  sessionId?: string;
  /**
   * Launched as Xcode 15+ launches it on iOS 17 (XCTestManagerVariant DDI): no configuration file, the session in its
   * environment; it asks the IDE for its configuration through testmanagerd once authorized.
   */
  ddi?: boolean;
  authorized: boolean;
  /** Whether WebDriverAgent's server runs in it. */
  servesWda?: boolean;
  /** The IDE connection its test plan reports to: the run ends when it closes. */
  session?: DtxConnection;
  /** Where its standard output goes, when the launch named a stdio socket (CoreDevice's openstdiosocket). */
  stdout?: (text: string) => void;
}

/**
 * The phone's XCTest machinery, reached through lockdown as Xcode reaches it on iOS < 17: house_arrest (the test
 * runner's container, where the host writes the .xctestconfiguration), the instruments remote server's process
 * control (launching the runner with that file in its environment) and testmanagerd (the IDE's control and
 * execution sessions, to which the runner reports "bundle ready" once authorized, and which starts its test plan:
 * for WebDriverAgent, the plan that serves HTTP on 8100 until the IDE's session closes).
 */
export class TestManager {
  /** Every DTX selector the phone received, in order, with its channel and when (ms, performance.now()). */
  readonly received: Array<{ selector: string; channel: string; at: number }> = [];
  private readonly processes = new Map<number, RunnerProcess>();
  /** Execution sessions the IDE opened, by the session identifier it gave. */
  private readonly sessions = new Map<string, DtxConnection>();
  private nextPid = 1200;

  constructor(private readonly host: DeveloperHost) {}

  /** The processes it launched that still run, oldest first. */
  running(): Array<{ pid: number; bundleId: string }> {
    return [...this.processes.values()].map((p) => ({ pid: p.pid, bundleId: p.bundleId }));
  }

  /** Every process of the phone by pid: its daemons, then the apps it launched, each with its executable's path. */
  processTable(): Array<{ pid: number; path: string; name: string; isApplication: boolean; bundleId?: string }> {
    const apps = this.running().map(({ pid, bundleId }) => {
      const app = this.host.apps.get(bundleId);
      const bundle = app?.path ?? `/private/var/containers/Bundle/Application/${bundleId}/${app?.name ?? bundleId}.app`;
      return { pid, bundleId, path: `${bundle}/${app?.executable ?? app?.name ?? bundleId}`, isApplication: true };
    });
    return [...SYSTEM_PROCESSES, ...apps].map((p) => ({ ...p, name: p.path.slice(p.path.lastIndexOf('/') + 1) }));
  }

  /** Sends what a running process writes to its standard output and error to `write` (a launch's stdio socket). */
  attachOutput(pid: number, write: (text: string) => void): void {
    const process = this.processes.get(pid);
    if (process) process.stdout = write;
  }

  /** The pid of a running process of this app, if any. */
  pidOf(bundleId: string): number | undefined {
    for (const p of this.processes.values()) if (p.bundleId === bundleId) return p.pid;
    return undefined;
  }

  /**
   * com.apple.mobile.house_arrest: a command, then the connection speaks AFC in the app's data container.
   * VendContainer opens the whole container, for developer-signed apps only (get-task-allow); VendDocuments only its
   * Documents, for apps that share them (UIFileSharingEnabled, required since iOS 8.3). An app that is not installed is
   * ApplicationLookupFailed; one that does not allow the command, InstallationLookupFailed.
   */
  serveHouseArrest(socket: Socket): void {
    socket.on('error', () => undefined);
    const channel = new PlistChannel(socket, (request) => {
      const id = String(request.Identifier ?? '');
      const documents = request.Command === 'VendDocuments';
      if (request.Command !== 'VendContainer' && !documents) return channel.send({ Error: 'UnknownCommand' });
      const app = this.host.apps.get(id);
      const allowed = documents ? app?.fileSharing === true : !!app?.signer;
      const container = allowed ? this.host.container(id) : undefined;
      if (!container) return channel.send({ Error: app ? 'InstallationLookupFailed' : 'ApplicationLookupFailed' });
      channel.send({ Status: 'Complete' });
      channel.detach();
      serveAfc(socket, container.fs, documents ? { only: '/Documents' } : {});
    });
  }

  serveInstruments(stream: Duplex): void {
    stream.on('error', () => undefined);
    new DtxConnection(stream, (channel, selector, args) => this.processControl(channel, selector, args), this.record);
  }

  serveTestmanagerd(stream: Duplex): void {
    stream.on('error', () => undefined);
    let sessionId: string | undefined;
    const connection = new DtxConnection(
      stream,
      (channel, selector, args, conn) => {
        // _IDE_startExecutingTestPlanWithProtocolVersion: comes on the reverse of that channel (code -1), the same one here.
        if (channel !== DAEMON_CONNECTION) return new NSError('XCTestManager', 1, `testmanagerd has no channel ${channel}.`);
        switch (selector) {
          case '_IDE_initiateControlSessionWithProtocolVersion:':
            return XCTEST_PROTOCOL;
          // Xcode 12+ (and go-ios) exchange capabilities instead of protocol versions.
          case '_IDE_initiateControlSessionWithCapabilities:':
            return capabilities(DAEMON_CAPABILITIES);
          case '_IDE_initiateSessionWithIdentifier:capabilities:': {
            sessionId = String(args[0]).toUpperCase();
            this.sessions.set(sessionId, conn);
            this.host.log('testmanagerd', `IDE session ${sessionId} with capabilities`);
            return capabilities(DAEMON_CAPABILITIES);
          }
          case '_IDE_initiateSessionWithIdentifier:forClient:atPath:protocolVersion:': {
            sessionId = String(args[0]).toUpperCase();
            this.sessions.set(sessionId, conn);
            this.host.log('testmanagerd', `IDE session ${sessionId} from ${String(args[1])}`);
            return XCTEST_PROTOCOL;
          }
          case '_IDE_authorizeTestSessionWithProcessID:':
          case '_IDE_initiateControlSessionForTestProcessID:':
          case '_IDE_initiateControlSessionForTestProcessID:protocolVersion:': {
            const runner = this.processes.get(Number(args[0]));
            if (!runner?.sessionId) return new NSError('XCTestManager', 2, `No test runner with pid ${String(args[0])}.`);
            runner.authorized = true;
            this.runnerReady(runner);
            return true;
          }
          case '_IDE_startExecutingTestPlanWithProtocolVersion:': {
            const runner = [...this.processes.values()].find((p) => p.session === conn);
            if (!runner) return new NSError('XCTestManager', 3, 'No test runner is ready in this session.');
            this.host.log('WebDriverAgentRunner-Runner', 'Built at ... ServerURLHere->http://127.0.0.1:8100<-ServerURLHere');
            // WDA's NSLog goes to its standard error, the launch's stdio socket: what go-ios's runwda --log-output shows.
            runner.stdout?.('WebDriverAgentRunner-Runner ServerURLHere->http://127.0.0.1:8100<-ServerURLHere\n');
            runner.servesWda = true;
            this.host.startWda();
            return undefined;
          }
          default:
            return new NSError('XCTestManager', 4, `Unrecognized selector ${selector}`);
        }
      },
      this.record,
    );
    // The IDE's execution session going away ends the test run, and with it the runner: WDA stops serving.
    stream.on('close', () => {
      if (sessionId && this.sessions.get(sessionId) === connection) this.sessions.delete(sessionId);
      for (const runner of this.processes.values()) {
        if (runner.session !== connection) continue;
        this.processes.delete(runner.pid);
        this.host.log('testmanagerd', `IDE session closed: terminating ${runner.bundleId} (${runner.pid})`);
        if (runner.servesWda) this.host.stopWda();
      }
    });
  }

  /**
   * Launches an app the way SpringBoard does for a developer tool. A test runner (CFBundleExecutable ending in
   * "-Runner") must be told where its .xctestconfiguration is (XCTestConfigurationFilePath, inside its container);
   * without a readable one it cannot run, and the launch is refused here rather than crashing later.
   */
  launch(path: string, bundleId: string, env: Record<string, unknown>): number | NSError {
    const app = this.host.apps.get(bundleId);
    if (!app) return new NSError('FBSOpenApplicationServiceErrorDomain', 4, `The request to open "${bundleId}" failed: the application is not installed.`);
    if (path && path !== app.path) return new NSError('FBSOpenApplicationServiceErrorDomain', 4, `No application at ${path}.`);
    const refused = this.host.launchFailure();
    if (refused) return new NSError('FBSOpenApplicationServiceErrorDomain', 1, refused);
    const running = this.pidOf(bundleId);
    if (running !== undefined) this.kill(running);
    const pid = this.nextPid++;
    const runner: RunnerProcess = { pid, bundleId, authorized: false };
    if (app.executable?.endsWith('-Runner') && path) {
      const configured = this.readConfiguration(bundleId, env.XCTestConfigurationFilePath);
      if (configured instanceof NSError) return configured;
      runner.sessionId = configured;
    } else if (app.executable?.endsWith('-Runner') && env.XCTestManagerVariant === 'DDI' && typeof env.XCTestSessionIdentifier === 'string') {
      const plugin = `${app.path}/PlugIns/${app.executable.replace(/-Runner$/, '')}.xctest`;
      if (env.XCTestBundlePath !== plugin) {
        return new NSError('XCTestErrorDomain', 10, `${bundleId} cannot run its tests: XCTestBundlePath is not ${plugin}.`);
      }
      runner.sessionId = env.XCTestSessionIdentifier.toUpperCase();
      runner.ddi = true;
    }
    this.processes.set(pid, runner);
    this.host.log(app.name, `launched (pid ${pid})`);
    return pid;
  }

  kill(pid: number): boolean {
    const runner = this.processes.get(pid);
    if (!runner) return false;
    this.processes.delete(pid);
    if (runner.servesWda) this.host.stopWda();
    return true;
  }

  /**
   * CoreDevice's launch (what `devicectl device process launch` asks of an iOS 17+ phone): by bundle id, no debugger.
   * A WebDriverAgent runner launched this way starts its server itself, as Appium's preinstalled-WDA path relies on.
   */
  launchApp(bundleId: string, env: Record<string, unknown>, terminateExisting: boolean): number | NSError {
    const running = this.pidOf(bundleId);
    if (running !== undefined && !terminateExisting) return running;
    const pid = this.launch('', bundleId, env);
    if (pid instanceof NSError) return pid;
    // A runner launched for an XCTest session waits for testmanagerd to authorize it rather than serve at once.
    if (this.host.apps.get(bundleId)?.executable?.endsWith('-Runner') && !this.processes.get(pid)!.ddi) {
      this.processes.get(pid)!.servesWda = true;
      this.host.log('WebDriverAgentRunner-Runner', 'ServerURLHere->http://127.0.0.1:8100<-ServerURLHere');
      this.host.startWda();
    }
    return pid;
  }

  private readonly record = (selector: string, channel: string) => {
    this.received.push({ selector, channel, at: performance.now() });
    if (this.received.length > 500) this.received.shift();
  };

  private processControl(channel: string, selector: string, args: unknown[]): unknown {
    if (channel === DEVICE_INFO) {
      if (selector !== 'runningProcesses') return new NSError('DTXMessage', 4, `Unrecognized selector ${selector}`);
      return this.processTable().map((p) => ({ pid: p.pid, name: p.name, realAppName: p.path, isApplication: p.isApplication }));
    }
    if (channel !== PROCESS_CONTROL) return new NSError('DTXMessage', 3, `The instruments server has no channel ${channel}.`);
    switch (selector) {
      case 'processIdentifierForBundleIdentifier:':
        // 0 when no process of that app runs, as the process control service answers.
        return this.pidOf(String(args[0])) ?? 0;
      case 'launchSuspendedProcessWithDevicePath:bundleIdentifier:environment:arguments:options:': {
        const [path, bundleId, env] = args as [string, string, Record<string, unknown> | null];
        return this.launch(String(path), String(bundleId), env ?? {});
      }
      case 'startObservingPid:':
        return undefined;
      case 'killPid:':
        this.kill(Number(args[0]));
        return undefined;
      default:
        return new NSError('DTXMessage', 4, `Unrecognized selector ${selector}`);
    }
  }

  /** The session identifier of a runner's configuration, or why it cannot be read. */
  private readConfiguration(bundleId: string, where: unknown): string | NSError {
    const fail = (why: string) => new NSError('XCTestErrorDomain', 10, `${bundleId} cannot run its tests: ${why}`);
    const container = this.host.container(bundleId);
    if (typeof where !== 'string' || !container) return fail('XCTestConfigurationFilePath is not set in its environment.');
    if (!where.startsWith(container.path + '/')) return fail(`${where} is outside its container ${container.path}.`);
    const relative = where.slice(container.path.length);
    if (!CONFIGURATION.test(relative)) return fail(`${where} is not a .xctestconfiguration in its container's tmp.`);
    const bytes = container.fs.read(relative);
    if (!bytes) return fail(`${where} does not exist.`);
    let configuration: Record<string, unknown>;
    try {
      configuration = unarchive(bytes) as Record<string, unknown>;
    } catch (error) {
      return fail(`${where} is not an archived XCTestConfiguration (${(error as Error).message}).`);
    }
    const app = this.host.apps.get(bundleId)!;
    const plugin = `${app.path}/PlugIns/${app.executable!.replace(/-Runner$/, '')}.xctest`;
    if (configuration?.$class !== 'XCTestConfiguration') return fail(`${where} holds a ${String(configuration?.$class)}, not an XCTestConfiguration.`);
    const url = configuration.testBundleURL;
    if (!(url instanceof NSURL) || url.relative.replace(/^file:\/\//, '') !== plugin) return fail(`its testBundleURL is not ${plugin}.`);
    if (typeof configuration.sessionIdentifier !== 'string') return fail('its configuration names no session.');
    return configuration.sessionIdentifier.toUpperCase();
  }

  /** An authorized runner whose IDE session exists connects to testmanagerd and says its bundle is ready. */
  private runnerReady(runner: RunnerProcess): void {
    const session = runner.sessionId ? this.sessions.get(runner.sessionId) : undefined;
    if (!session || !runner.authorized || session.closed) return;
    runner.session = session;
    if (runner.ddi) {
      // iOS 17: testmanagerd opens the driver interface to the IDE on the runner's behalf, and the runner asks for its
      // configuration there; the IDE then starts the test plan on it.
      session.requestChannel(DRIVER_INTERFACE_CODE, DRIVER_INTERFACE);
      session.sendOnOwnChannel(DRIVER_INTERFACE_CODE, '_XCT_testRunnerReadyWithCapabilities:', [{ object: capabilities(RUNNER_CAPABILITIES) }]);
      return;
    }
    const code = session.codeOf(DAEMON_CONNECTION) ?? 1;
    session.send(code, '_XCT_testBundleReadyWithProtocolVersion:minimumVersion:', [{ object: XCTEST_PROTOCOL }, { object: XCTEST_MINIMUM_PROTOCOL }]);
  }
}

/** An XCTCapabilities archived (nskeyed.ts knows no such class): its dictionary under "capabilities-dictionary". */
function capabilities(dictionary: Record<string, number>): Archived {
  const inner = parseBinary(new Uint8Array(archive(dictionary))) as { $objects: unknown[]; $top: { root: { UID: number } } };
  const objects = inner.$objects;
  const classUid = objects.length;
  objects.push({ $classes: ['XCTCapabilities', 'NSObject'], $classname: 'XCTCapabilities' });
  const root = objects.length;
  objects.push({ 'capabilities-dictionary': inner.$top.root, $class: { UID: classUid } });
  return new Archived(Buffer.from(buildBinary({ $version: 100000, $archiver: 'NSKeyedArchiver', $top: { root: { UID: root } }, $objects: objects } as never)));
}
