import { Duplex } from 'node:stream';
import type { Device, InstalledApp } from './device.js';
import { appUser, type ProcessTable } from './processes.js';
import type { Screen } from './screen.js';
import type { CommandContext, CommandFn } from './shell.js';
import { Uiautomator2Server } from './uiautomator2/server.js';
import type { ServiceSession, StreamIo } from '../../protocols/adb/transport.js';

/**
 * `am instrument`: a test runner from an installed APK's `<instrumentation>` element, loaded into its target
 * package's process. The UiAutomator2 server's runner serves Appium's HTTP API on the phone's port 6790 for as long
 * as that process lives; any other runner finds no tests and finishes at once.
 */

/** A TCP port on the phone, as `adb forward tcp:N tcp:<port>` reaches it through adbd's `tcp:<port>` service. */
export type PortListener = (io: StreamIo) => ServiceSession;

export const UIAUTOMATOR2_SERVER_PACKAGE = 'io.appium.uiautomator2.server';
/** Where the UiAutomator2 server listens (ServerConfig.DEFAULT_SERVER_PORT). */
export const UIAUTOMATOR2_SERVER_PORT = 6790;

export interface InstrumentationHost {
  device: Device;
  screen: Screen;
  processes: ProcessTable;
  ports: Map<number, PortListener>;
}

function findInstrumentation(device: Device, component: string): { app: InstalledApp; runner: string; target: string } | undefined {
  const slash = component.indexOf('/');
  if (slash <= 0) return undefined;
  const pkg = component.slice(0, slash);
  const cls = component.slice(slash + 1);
  const runner = cls.startsWith('.') ? pkg + cls : cls;
  const app = device.apps.get(pkg);
  const entry = app?.instrumentations?.find((i) => i.name === runner);
  return app && entry ? { app, runner, target: entry.targetPackage } : undefined;
}

/** `pm list instrumentation [TARGET]`: one line per runner of every installed package. */
export function listInstrumentation(device: Device, target?: string): string {
  const lines: string[] = [];
  for (const app of device.apps.values()) {
    for (const i of app.instrumentations ?? []) {
      if (target && i.targetPackage !== target) continue;
      lines.push(`instrumentation:${app.packageName}/${i.name} (target=${i.targetPackage})\n`);
    }
  }
  return lines.join('');
}

/** `am instrument [-r] [-e NAME VALUE]... [-w] [--no-window-animation] ... COMPONENT` */
export function amInstrument(host: InstrumentationHost): CommandFn {
  return async (ctx: CommandContext) => {
    const args = ctx.args;
    let wait = false;
    let component: string | undefined;
    for (let i = 0; i < args.length; i++) {
      const a = args[i]!;
      if (a === '-w') wait = true;
      else if (a === '-e') i += 2;
      else if (a === '-p' || a === '--user' || a === '--abi') i++;
      else if (!a.startsWith('-')) component = a;
    }
    if (!component) {
      await ctx.stderr.write('Error: No instrumentation component supplied\n');
      return 1;
    }
    const found = findInstrumentation(host.device, component);
    const target = found && host.device.apps.get(found.target);
    if (!found || !target) {
      // ActivityManagerService.startInstrumentation's two refusals, reported through the watcher.
      const error = found
        ? `Unable to find instrumentation target package: ${found.target}`
        : `Unable to find instrumentation info for: ComponentInfo{${component}}`;
      await ctx.stdout.write(`INSTRUMENTATION_STATUS: id=ActivityManagerService\nINSTRUMENTATION_STATUS: Error=${error}\nINSTRUMENTATION_STATUS_CODE: -1\n`);
      await ctx.stderr.write(
        `android.util.AndroidException: INSTRUMENTATION_FAILED: ${component}\n` +
          '\tat com.android.commands.am.Instrument.run(Instrument.java:519)\n' +
          '\tat com.android.commands.am.Am.runInstrument(Am.java:196)\n' +
          '\tat com.android.commands.am.Am.onRun(Am.java:80)\n',
      );
      return 1;
    }
    // Another instrumentation of the same target dies with its process, as ActivityManager restarts the process.
    host.device.forceStop(target.packageName);
    const started = Date.now();
    const run = start(host, target, found.app, wait ? ctx.signal : new AbortController().signal);
    if (!wait) return 0;
    // Without -r, am prints what AndroidJUnitRunner streams: the test class as it starts, a dot as a test passes.
    if (run.testClass) await ctx.stdout.write(`\n${run.testClass}:\n`);
    const how = await run.ended;
    const seconds = ((Date.now() - started) / 1000).toFixed(3);
    const tests = run.testClass ? 1 : 0;
    await ctx.stdout.write(
      how === 'crashed'
        ? 'INSTRUMENTATION_RESULT: shortMsg=Process crashed.\nINSTRUMENTATION_CODE: 0\n'
        : `${'.'.repeat(tests)}\nTime: ${seconds}\n\nOK (${tests} test${tests === 1 ? '' : 's'})\n\n\nINSTRUMENTATION_CODE: -1\n`,
    );
    return 0;
  };
}

/** The UiAutomator2 server's one test: it serves until its session is deleted. */
const UIAUTOMATOR2_TEST_CLASS = 'io.appium.uiautomator2.server.test.AppiumUiAutomator2Server';

/**
 * Starts the runner in the target's process. `ended` resolves 'finished' when its tests ran to the end (ActivityManager
 * then kills the process), 'crashed' when the process died first (force-stop, reinstall, `kill`, or the
 * `am instrument -w` stream hung up).
 */
function start(
  host: InstrumentationHost,
  target: InstalledApp,
  testApp: InstalledApp,
  parent: AbortSignal,
): { testClass?: string; ended: Promise<'finished' | 'crashed'> } {
  const { device, processes, ports } = host;
  const proc = processes.spawn(target.packageName, parent, { user: appUser(target.uid), packages: [target.packageName, testApp.packageName] });
  device.log.append('I', 'ActivityManager', `Start proc ${proc.pid}:${target.packageName}/${appUser(target.uid).replace('_', '')} for added application ${target.packageName}`);
  if (target.packageName !== UIAUTOMATOR2_SERVER_PACKAGE) {
    proc.exit();
    return { ended: Promise.resolve('finished') };
  }
  let finished = false;
  const server = new Uiautomator2Server(device, {
    screen: host.screen,
    // DELETE /session: the server's test method returns, and the instrumentation finishes.
    onStop: () => {
      finished = true;
      processes.kill(proc.pid);
    },
  });
  const streams = new Set<StreamIo>();
  const listener: PortListener = (io) => {
    streams.add(io);
    const session = streamSession(io, (stream) => server.handle(stream));
    io.signal.addEventListener('abort', () => streams.delete(io), { once: true });
    return session;
  };
  ports.set(UIAUTOMATOR2_SERVER_PORT, listener);
  const ended = new Promise<'finished' | 'crashed'>((resolve) => {
    const exit = () => {
      if (ports.get(UIAUTOMATOR2_SERVER_PORT) === listener) ports.delete(UIAUTOMATOR2_SERVER_PORT);
      server.close();
      // The process's sockets go with it: every forwarded connection is closed.
      for (const io of streams) void io.end();
      proc.exit();
      device.log.append('I', 'ActivityManager', finished ? `Force stopping ${target.packageName} appid=${target.uid} user=0: finished inst` : `Process ${target.packageName} (pid ${proc.pid}) has died: fg  TOP`);
      resolve(finished ? 'finished' : 'crashed');
    };
    // A stream already hung up when am started: the process is gone before it served anything.
    if (proc.signal.aborted) exit();
    else proc.signal.addEventListener('abort', exit, { once: true });
  });
  return { testClass: UIAUTOMATOR2_TEST_CLASS, ended };
}

/**
 * One adb stream as the Duplex a server's socket would be: what the host writes is read, what is written goes back
 * through adbd, and the host's CLSE is the end of the input.
 */
function streamSession(io: StreamIo, hand: (stream: Duplex) => void): ServiceSession {
  let resumeReading: (() => void) | undefined;
  const stream = new Duplex({
    read() {
      resumeReading?.();
      resumeReading = undefined;
    },
    write(chunk: Buffer, _encoding, callback) {
      io.write(chunk).then(() => callback(), callback);
    },
    final(callback) {
      io.end().then(() => callback(), callback);
    },
    destroy(error, callback) {
      void io.end();
      callback(error);
    },
  });
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    stream.push(null);
  };
  io.signal.addEventListener('abort', end, { once: true });
  hand(stream);
  return {
    // The host's next packet waits until the server has read this one, as a socket's receive window would.
    onData: (data) => {
      if (ended || stream.push(data)) return;
      return new Promise<void>((resolve) => (resumeReading = resolve));
    },
    onClose: end,
  };
}
