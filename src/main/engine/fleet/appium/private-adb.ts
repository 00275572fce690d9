import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { hostQuery, waitForDevice } from '../../../../protocols/adb/host.js';
import { spawnGuarded, stopGuarded } from '../guarded-child.js';
import { freePort } from './appium-server.js';

/**
 * The Android SDK folder Appium's UiAutomator2 driver needs: it runs `platform-tools/adb` under ANDROID_HOME and
 * nothing from PATH. The lab's own adb otherwise (Debian's adb package puts it at /usr/lib/android-sdk), linked into a
 * folder of that shape when it lives elsewhere. Undefined when this machine has no adb at all.
 */
export function androidHomeFor(home: string, env: NodeJS.ProcessEnv = process.env): string | undefined {
  for (const sdk of [env.ANDROID_HOME, env.ANDROID_SDK_ROOT, '/usr/lib/android-sdk']) {
    if (sdk && existsSync(join(sdk, 'platform-tools', 'adb'))) return sdk;
  }
  const onPath = (env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'adb')).find((path) => existsSync(path));
  if (!onPath) return undefined;
  const sdk = join(home, 'android-sdk');
  const linked = join(sdk, 'platform-tools', 'adb');
  if (!existsSync(linked)) {
    mkdirSync(dirname(linked), { recursive: true });
    symlinkSync(realpathSync(onPath), linked);
  }
  return sdk;
}

/** How many ports the server tries when the one chosen is taken before it binds it. */
const PORT_ATTEMPTS = 3;
const START_TIMEOUT_MS = 10_000;

/**
 * Whether an adb server answers on the port (`host:version`): whatever else took the port (the race a free port is open
 * to) does not answer so.
 */
function answersAsAdb(port: number): Promise<boolean> {
  return hostQuery({ host: '127.0.0.1', port }, 'host:version', 500).then(
    () => true,
    () => false,
  );
}

/**
 * An adb server that only Appium uses, apart from the lab's: Appium reaches each phone it drives through that phone's
 * remote-connect bridge (`adb connect`), signing in with this server's own key, so that it sees the phones the lab
 * gave its sessions and nothing else, and a provider's phone is reached exactly as a local one. It runs in the
 * foreground (`nodaemon`) behind a guard, so that it never outlives the engine; the lab's own adb server, which the
 * user's tools share, is never this one.
 */
export class PrivateAdbServer {
  private server: ChildProcess | undefined;
  private port: number | undefined;
  private starting: Promise<number> | undefined;

  constructor(
    private readonly adbPath: string,
    /** Its HOME: where adb keeps its key (.android/adbkey), the key the bridges let in. */
    private readonly home: string,
    private readonly options: {
      /** Where its pid file is kept while it runs: a later start of the lab ends a server a crash left. */
      pidFile: string;
      /** Where its port comes from (a free one of the OS's): a test takes the one it picks to make the race happen. */
      freePort?: () => Promise<number>;
    },
  ) {}

  /** The server's port, starting it first (which makes its key on the first start). */
  ensure(): Promise<number> {
    if (this.port !== undefined) return Promise.resolve(this.port);
    this.starting ??= (async () => {
      mkdirSync(this.home, { recursive: true, mode: 0o700 });
      for (let attempt = 1; ; attempt++) {
        const port = await (this.options.freePort ?? freePort)();
        const started = await this.launch(port);
        if (started) return started;
        // A port free when chosen can be taken before adb binds it: adb then exits, and another is tried.
        if (attempt === PORT_ATTEMPTS) throw new Error(`The private adb server could not bind a port (${PORT_ATTEMPTS} tried).`);
      }
    })().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Undefined when adb could not bind the port. */
  private async launch(port: number): Promise<number | undefined> {
    const server = spawnGuarded(this.adbPath, ['-P', String(port), 'nodaemon', 'server'], {
      env: { ...process.env, HOME: this.home, TMPDIR: this.home },
      pidFile: this.options.pidFile,
      output: 'pipe',
    });
    let output = '';
    for (const stream of [server.stdout!, server.stderr!]) stream.on('data', (chunk: Buffer) => (output = (output + chunk.toString('utf8')).slice(-2000)));
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await answersAsAdb(port))) {
      if (server.exitCode !== null || server.signalCode !== null) {
        if (/Address already in use/.test(output)) return undefined;
        throw new Error(`The private adb server exited while starting:\n${output}`);
      }
      if (Date.now() > deadline) {
        await stopGuarded(server, 0);
        throw new Error(`The private adb server did not answer within ${START_TIMEOUT_MS / 1000} s:\n${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    this.server = server;
    this.port = port;
    server.once('exit', () => {
      if (this.server !== server) return;
      this.server = undefined;
      this.port = undefined;
    });
    return port;
  }

  /** Its public key, as ~/.android/adbkey.pub holds it: what a bridge is told to let in. */
  publicKey(): string {
    return readFileSync(join(this.home, '.android', 'adbkey.pub'), 'utf8');
  }

  /**
   * Connects to a bridge and waits until the phone behind it is a device (signed in) for this server: `adb connect`
   * and `adb wait-for-device` asked of the server directly (host:connect), not through adb client processes, whose
   * spawn from the engine cost its event loop about 60 ms a session.
   */
  async connect(address: string, timeoutMs = 20_000): Promise<void> {
    const server = { host: '127.0.0.1', port: await this.ensure() };
    const answer = await hostQuery(server, `host:connect:${address}`, timeoutMs);
    if (/cannot|failed|unable/i.test(answer)) throw new Error(`adb connect ${address}: ${answer.trim()}`);
    await waitForDevice(server, address, timeoutMs);
  }

  async disconnect(address: string): Promise<void> {
    if (this.port === undefined) return;
    await hostQuery({ host: '127.0.0.1', port: this.port }, `host:disconnect:${address}`, 5_000).catch(() => undefined);
  }

  /** Ends the server (a SIGTERM ends adb at once): the sessions it served have ended. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    this.port = undefined;
    if (server) await stopGuarded(server, 1_000);
  }
}
