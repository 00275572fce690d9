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
  // secret-tool reads the keyring independently of the library under test.
  { binary: 'secret-tool', pkg: 'libsecret-tools' },
];

/**
 * Keychain tests need a Secret Service: under CI a missing package is a failure naming it, elsewhere the suite is
 * skipped loudly.
 */
export function secretServiceOrSkip(): boolean {
  const missing = TOOLS.filter((t) => spawnSync('sh', ['-c', `command -v ${t.binary}`]).status !== 0).map((t) => t.pkg);
  if (missing.length === 0) return true;
  const install = `apt-get install -y ${missing.join(' ')}`;
  if (process.env.CI === 'true') throw new Error(`The keychain tests need ${missing.join(', ')}: install the Debian packages (${install}).`);
  console.warn(`SKIPPING keychain tests: ${missing.join(', ')} not installed (${install}).`);
  return false;
}

/** What the keyring holds for an attribute set, read with secret-tool (libsecret) rather than @napi-rs/keyring. */
export function secretToolLookup(address: string, attributes: Record<string, string>): string | undefined {
  const r = spawnSync('secret-tool', ['lookup', ...Object.entries(attributes).flat()], {
    encoding: 'utf8',
    env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: address },
  });
  return r.status === 0 ? r.stdout : undefined;
}

/**
 * The bus has no service directories, so nothing is auto-started on it: the one Secret Service is the keyring this
 * starts, with its HOME and data in a temp dir, never the user's own. `keyring: false` gives the bus alone.
 */
export async function startSecretService(options: { keyring?: boolean } = {}): Promise<SecretService> {
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
    const bus = spawn('dbus-daemon', [`--config-file=${config}`, '--nofork', '--print-address=1'], { stdio: ['ignore', 'pipe', 'ignore'] });
    children.push(bus);
    const address = await firstLine(bus);
    if (options.keyring === false) return { address, stop };
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
        if (Date.now() > deadline) throw new Error(`GNOME Keyring did not answer on ${address}: ${(error as Error).message}`, { cause: error });
        await new Promise((r) => setTimeout(r, 50));
      }
    }
  } finally {
    if (previous === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
    else process.env.DBUS_SESSION_BUS_ADDRESS = previous;
  }
}
