import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './appium-server.js';

const run = promisify(execFile);

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

/**
 * An adb server that only Appium uses, apart from the lab's: Appium reaches each phone it drives through that phone's
 * remote-connect bridge (`adb connect`), signing in with this server's own key, so that it sees the phones the lab
 * gave its sessions and nothing else, and a provider's phone is reached exactly as a local one.
 */
export class PrivateAdbServer {
  private port: number | undefined;
  private starting: Promise<number> | undefined;

  constructor(
    private readonly adbPath: string,
    /** Its HOME: where adb keeps its key (.android/adbkey), the key the bridges let in. */
    private readonly home: string,
  ) {}

  private adb(args: string[], timeoutMs = 20_000) {
    return run(this.adbPath, ['-P', String(this.port), ...args], { env: { ...process.env, HOME: this.home }, timeout: timeoutMs });
  }

  /** The server's port, starting it first (which makes its key on the first start). */
  ensure(): Promise<number> {
    if (this.port !== undefined) return Promise.resolve(this.port);
    this.starting ??= (async () => {
      mkdirSync(this.home, { recursive: true, mode: 0o700 });
      this.port = await freePort();
      try {
        await this.adb(['start-server']);
      } catch (error) {
        this.port = undefined;
        throw error;
      }
      return this.port;
    })().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Its public key, as ~/.android/adbkey.pub holds it: what a bridge is told to let in. */
  publicKey(): string {
    return readFileSync(join(this.home, '.android', 'adbkey.pub'), 'utf8');
  }

  /** Connects to a bridge and waits until the phone behind it is a device (signed in) for this server. */
  async connect(address: string, timeoutMs = 20_000): Promise<void> {
    await this.ensure();
    const { stdout } = await this.adb(['connect', address], timeoutMs);
    if (/cannot|failed|unable/i.test(stdout)) throw new Error(`adb connect ${address}: ${stdout.trim()}`);
    await this.adb(['-s', address, 'wait-for-device'], timeoutMs);
  }

  async disconnect(address: string): Promise<void> {
    if (this.port === undefined) return;
    await this.adb(['disconnect', address], 5_000).catch(() => undefined);
  }

  async stop(): Promise<void> {
    if (this.port === undefined) return;
    await this.adb(['kill-server'], 5_000).catch(() => undefined);
    this.port = undefined;
  }
}
