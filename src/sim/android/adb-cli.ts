import { spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { hostQuery } from '../../protocols/adb/host.js';

/**
 * Driving a real adb server: starting a private one with the `adb` command line, connecting and disconnecting phones
 * and stopping it with the host requests that command line sends, and plain command runs.
 */

/** A host request to the adb server on this machine's `port`, as the `adb` command line sends it. */
const askServer = (port: number, request: string, timeoutMs: number) => hostQuery({ host: '127.0.0.1', port }, request, timeoutMs);

export interface AdbResult {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

/** `$ADB` if set, else the first `adb` on PATH; undefined when there is none. */
export function findAdb(): string | undefined {
  const candidates = process.env.ADB ? [process.env.ADB] : (process.env.PATH ?? '').split(delimiter).filter(Boolean).map((dir) => join(dir, 'adb'));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // keep looking
    }
  }
  return undefined;
}

export interface AdbRunOptions {
  /** The adb server's port (`-P`); 5037 when omitted, like adb itself. */
  serverPort?: number;
  /** The environment for adb; HOME and TMPDIR decide where it keeps adbkey and its log. */
  env?: NodeJS.ProcessEnv;
  adbPath?: string;
  timeoutMs?: number;
}

export function runAdb(args: string[], options: AdbRunOptions = {}): Promise<AdbResult> {
  const adb = options.adbPath ?? findAdb();
  if (!adb) return Promise.reject(new Error('adb not found: install the Debian package `adb` or set $ADB'));
  const port = options.serverPort ?? 5037;
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env), ANDROID_ADB_SERVER_PORT: String(port) };
  // A socket spec in the environment would override -P.
  delete env.ADB_SERVER_SOCKET;
  return new Promise((resolve, reject) => {
    const child = spawn(adb, ['-P', String(port), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (b: Buffer) => out.push(b));
    child.stderr.on('data', (b: Buffer) => err.push(b));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`adb ${args.join(' ')} timed out after ${options.timeoutMs} ms`));
    }, options.timeoutMs ?? 60_000);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/**
 * `adb connect 127.0.0.1:<port>` against the server on `adbServerPort`, resolving to the device's serial. The request
 * is the one the command line sends its server (host:connect), asked directly: the server does the connecting either
 * way, and each client process spawned from a test worker blocked its event loop (about 300 of them a run). Where no
 * server runs yet, the command line itself is run, which starts one (as demo mode relies on).
 */
export async function connectToAdb(port: number, adbServerPort = 5037, options: { timeoutMs?: number } = {}): Promise<string> {
  const serial = `127.0.0.1:${port}`;
  const timeoutMs = options.timeoutMs ?? 30_000;
  let text: string;
  try {
    text = await askServer(adbServerPort, `host:connect:${serial}`, timeoutMs);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ECONNREFUSED') throw error;
    const result = await runAdb(['connect', serial], { serverPort: adbServerPort, timeoutMs });
    text = result.stdout.toString('utf8') + result.stderr;
  }
  // The server answers OKAY whether or not it got through (adb 1.0.41 exits 0 even when it gives up), so the words
  // are the only verdict.
  if (!/(^|\n)(already )?connected to /.test(text)) throw new Error(`adb connect ${serial} failed: ${text.trim()}`);
  return serial;
}

/** `adb disconnect <serial>`, asked of the server directly (host:disconnect), as connectToAdb asks. */
export async function disconnectFromAdb(serial: string, adbServerPort = 5037): Promise<void> {
  await askServer(adbServerPort, `host:disconnect:${serial}`, 10_000);
}

export interface AdbServer {
  port: number;
  /** HOME and TMPDIR point into a private temp dir; reuse this env for every adb call. */
  env: NodeJS.ProcessEnv;
  run(args: string[], options?: { timeoutMs?: number }): Promise<AdbResult>;
  /** `adb kill-server`, then removes the temp dir. */
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Starts a private adb server on a free port with its own HOME and TMPDIR, as tests and demo mode need. */
export async function startAdbServer(options: { port?: number; adbPath?: string } = {}): Promise<AdbServer> {
  const root = mkdtempSync(join(tmpdir(), 'benchtop-adb-'));
  const home = join(root, 'home');
  const tmp = join(root, 'tmp');
  mkdirSync(home);
  mkdirSync(tmp);
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: home, TMPDIR: tmp };
  delete env.ANDROID_SDK_HOME;
  delete env.ANDROID_USER_HOME;
  delete env.ADB_VENDOR_KEYS;
  let port = options.port ?? (await freePort());
  const run = (args: string[], opts: { timeoutMs?: number } = {}) =>
    runAdb(args, { serverPort: port, env, adbPath: options.adbPath, timeoutMs: opts.timeoutMs });
  let started = await run(['start-server'], { timeoutMs: 30_000 });
  // A free port is free only until adb binds it: another listener (a second adb server started at the same moment,
  // a simulated phone) can take it in between, and adb then talks to that and fails with a protocol fault. A port
  // that was not asked for is chosen again.
  for (let retry = 0; started.code !== 0 && options.port === undefined && retry < 3; retry++) {
    port = await freePort();
    started = await run(['start-server'], { timeoutMs: 30_000 });
  }
  if (started.code !== 0) {
    rmSync(root, { recursive: true, force: true });
    throw new Error(`adb start-server failed: ${started.stderr.trim()}`);
  }
  return {
    port,
    env,
    run,
    async stop() {
      // What `adb kill-server` sends: the server answers OKAY and exits, and the socket's end after it says it has gone.
      await askServer(port, 'host:kill', 15_000).catch(() => undefined);
      rmSync(root, { recursive: true, force: true });
    },
  };
}
