import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './remote.js';

/** The project's root: Appium finds the drivers listed in the package.json of the project that depends on it. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const APPIUM = createRequire(import.meta.url).resolve('appium/index.js');

export interface AppiumServer {
  url: string;
  port: number;
  /** Everything Appium printed so far, without colours: what a failing test shows. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * Real Appium, unchanged, as its users run it: `appium server` in a process of its own, with the drivers this project
 * depends on, or only `drivers` (`--use-drivers`, as a user with one platform's phones runs it: loading both cost a
 * second more CPU at each start). `env` adds to its environment (ANDROID_HOME, USBMUXD_SOCKET_ADDRESS); HOME and TMPDIR
 * are its own, so that nothing it or its adb writes reaches the machine's.
 */
export async function startAppium(env: Record<string, string> = {}, drivers?: Array<'uiautomator2' | 'xcuitest'>): Promise<AppiumServer> {
  const port = await freePort();
  const home = mkdtempSync(join(tmpdir(), 'benchtop-appium-'));
  let output = '';
  const args = [APPIUM, 'server', '--address', '127.0.0.1', '--port', String(port), '--log-no-colors', '--log-timestamp', ...(drivers ? ['--use-drivers', drivers.join(',')] : [])];
  const child = spawn(process.execPath, args, {
    env: { ...process.env, APPIUM_HOME: ROOT, HOME: home, TMPDIR: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Appium exited before it answered /status:\n${output}`);
    const ready = await fetch(`${url}/status`).then((r) => r.ok, () => false);
    if (ready) break;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`Appium did not answer /status in 30 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  return {
    url,
    port,
    log: () => output,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        const killed = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(killed);
      }
      rmSync(home, { recursive: true, force: true });
    },
  };
}
