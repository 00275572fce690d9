import { AsyncEntry } from '@napi-rs/keyring';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

/** A private D-Bus session bus with an unlocked GNOME Keyring on it: a real Secret Service, gone at stop(). */
export interface SecretService {
  /** The DBUS_SESSION_BUS_ADDRESS to put in the environment of whatever should see the keyring. */
  address: string;
  stop(): void;
}

const TOOLS = [
  { binary: 'dbus-daemon', pkg: 'dbus-daemon' },
  { binary: 'gnome-keyring-daemon', pkg: 'gnome-keyring' },
];

/** The Debian packages missing for a Secret Service, if any. */
export function missingSecretServicePackages(): string[] {
  return TOOLS.filter((t) => spawnSync('sh', ['-c', `command -v ${t.binary}`]).status !== 0).map((t) => t.pkg);
}

/**
 * The bus has no service directories, so nothing is auto-started on it: the one Secret Service is the keyring this
 * starts, with its HOME and data in a temp dir, never the user's own.
 */
export async function startSecretService(): Promise<SecretService> {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-keyring-'));
  mkdirSync(join(dir, 'data'));
  const config = join(dir, 'bus.conf');
  writeFileSync(
    config,
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir=${dir}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
`,
  );
  const children: ChildProcess[] = [];
  const stop = () => {
    for (const child of children.reverse()) if (child.exitCode === null) child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const bus = spawn('dbus-daemon', [`--config-file=${config}`, '--nofork', '--print-address=1'], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(bus);
    const address = await firstLine(bus);
    const keyring = spawn('gnome-keyring-daemon', ['--foreground', '--unlock', '--components=secrets'], {
      env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: address, HOME: dir, XDG_DATA_HOME: join(dir, 'data'), XDG_RUNTIME_DIR: dir },
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    children.push(keyring);
    // The login keyring is created, and unlocked, with the password read from stdin.
    keyring.stdin!.end('test-keyring-password');
    await untilAnswering(address);
    return { address, stop };
  } catch (error) {
    stop();
    throw error;
  }
}

function firstLine(child: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    lines.once('line', (line) => resolve(line.trim()));
    child.once('exit', (code) => reject(new Error(`dbus-daemon exited with ${code} before printing its address`)));
  });
}

/** The keyring claims its bus name a moment after it starts; until then a read fails with ServiceUnknown. */
async function untilAnswering(address: string): Promise<void> {
  const previous = process.env.DBUS_SESSION_BUS_ADDRESS;
  process.env.DBUS_SESSION_BUS_ADDRESS = address;
  try {
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await new AsyncEntry('benchtop-test', 'ready', { linux: { store: 'secret-service' } }).getPassword();
        return;
      } catch (error) {
        if (Date.now() > deadline) throw new Error(`GNOME Keyring did not answer on ${address}: ${(error as Error).message}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } finally {
    if (previous === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
    else process.env.DBUS_SESSION_BUS_ADDRESS = previous;
  }
}
