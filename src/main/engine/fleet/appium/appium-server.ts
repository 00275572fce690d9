import { spawn, type ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { mkdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname } from 'node:path';
import type { Readable } from 'node:stream';
import { Agent, request } from 'undici';
import { withoutHostDetails } from '../../domain/webdriver-commands.js';

export interface AppiumServerOptions {
  /** Appium's own HOME and TMPDIR: what it and its adb write stays in the lab's data dir. */
  home: string;
  /** Added to Appium's environment: ANDROID_HOME, USBMUXD_SOCKET_ADDRESS. */
  env: Record<string, string>;
  /** How long Appium may take to load its drivers and answer /status. */
  startTimeoutMs: number;
  log: (message: string) => void;
}

export interface AppiumReply {
  status: number;
  contentType: string;
  body: Buffer;
}

interface AppiumServerEvents {
  /** One line Appium printed (its log), without the line break. */
  line: [line: string];
  /** Appium exited without being asked to: its sessions are gone. */
  died: [];
}

/**
 * Appium's entry, and the folder whose package.json lists its drivers (APPIUM_HOME): the lab's own install, so that
 * Appium finds the UiAutomator2 and XCUITest drivers this project depends on and installs nothing.
 */
function appiumPaths(): { main: string; home: string } {
  const require = createRequire(import.meta.url);
  const main = require.resolve('appium/index.js');
  return { main, home: dirname(dirname(dirname(require.resolve('appium/package.json')))) };
}

/**
 * A parent that dies (a crash, a SIGKILL) cannot stop its children: this guard, between the engine and Appium, ends
 * Appium when the engine's end of its stdin pipe closes, so that no Appium outlives the lab holding ports and adb.
 */
const GUARD = [
  "const { spawn } = require('node:child_process');",
  "const child = spawn(process.execPath, process.argv.slice(1), { stdio: ['ignore', 'inherit', 'inherit'] });",
  "const stop = () => child.kill('SIGTERM');",
  "process.stdin.on('end', stop).on('error', stop).resume();",
  "process.on('SIGTERM', stop);",
  "child.on('exit', (code) => process.exit(code ?? 1));",
].join('\n');

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // Gone already.
  }
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Real Appium in a process of its own: started when the first WebDriver session needs it, stopped with the engine,
 * and started again after it dies (the lab's sessions on it end; the lab itself goes on). It runs on the Node that
 * runs the engine: in the desktop app that is Electron's, as Node (ELECTRON_RUN_AS_NODE).
 */
export class AppiumServer extends EventEmitter<AppiumServerEvents> {
  private child: ChildProcess | undefined;
  private starting: Promise<string> | undefined;
  private url: string | undefined;
  private stopping = false;
  /** Appium keeps connections to it alive; so do we, so that a command does not pay for a TCP handshake. */
  private readonly agent = new Agent({ keepAliveTimeout: 30_000, connections: 64 });

  constructor(private readonly options: AppiumServerOptions) {
    super();
  }

  /** Appium's URL, starting it first if it is not running. */
  ensure(): Promise<string> {
    if (this.url) return Promise.resolve(this.url);
    this.starting ??= this.start().finally(() => (this.starting = undefined));
    return this.starting;
  }

  /** Whether Appium is up now (a started process that answered /status). */
  running(): boolean {
    return this.url !== undefined;
  }

  /** The process Appium runs in (its guard's: a kill of its group reaches both), while it runs. */
  pid(): number | undefined {
    return this.url ? this.child?.pid : undefined;
  }

  private async start(): Promise<string> {
    if (this.stopping) throw new Error('The lab is stopping.');
    const { main, home: appiumHome } = appiumPaths();
    mkdirSync(this.options.home, { recursive: true, mode: 0o700 });
    const port = await freePort();
    const args = [main, 'server', '--address', '127.0.0.1', '--port', String(port), '--log-no-colors', '--log-timestamp', '--allow-insecure', '*:adb_shell'];
    const child = spawn(process.execPath, ['-e', GUARD, ...args], {
      env: {
        ...process.env,
        ...this.options.env,
        APPIUM_HOME: appiumHome,
        HOME: this.options.home,
        TMPDIR: this.options.home,
        ELECTRON_RUN_AS_NODE: '1',
      },
      stdio: ['pipe', 'pipe', 'pipe'],
      // A group of its own: a kill reaches Appium and its guard together, and a Ctrl+C meant for the engine does not.
      detached: true,
    });
    this.child = child;
    let recent: string[] = [];
    const lines = (stream: NodeJS.ReadableStream) => {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop()!;
        for (const line of parts) {
          recent.push(line);
          if (recent.length > 50) recent = recent.slice(-50);
          this.emit('line', line);
        }
      });
    };
    lines(child.stdout!);
    lines(child.stderr!);
    child.stdin!.on('error', () => undefined);
    child.once('exit', (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      this.url = undefined;
      if (this.stopping) return;
      this.options.log(`Appium exited (${signal ?? `code ${code}`}); its sessions have ended. Last lines:\n${recent.slice(-10).join('\n')}`);
      this.emit('died');
    });
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + this.options.startTimeoutMs;
    for (;;) {
      if (this.child !== child) throw new Error(`Appium exited while starting:\n${recent.slice(-20).join('\n')}`);
      const ready = await request(`${url}/status`, { dispatcher: this.agent }).then(
        async (r) => (await r.body.dump(), r.statusCode === 200),
        () => false,
      );
      if (ready) break;
      if (Date.now() > deadline) {
        killGroup(child, 'SIGKILL');
        throw new Error(`Appium did not answer within ${this.options.startTimeoutMs / 1000} s:\n${recent.slice(-20).join('\n')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    this.url = url;
    this.options.log(`Appium is up at ${url} (pid ${child.pid})`);
    return url;
  }

  /** One request to Appium, its answer read whole (a page source or a screenshot is a few MB at most). */
  async call(method: string, path: string, body?: Buffer | object, timeoutMs = 600_000): Promise<AppiumReply> {
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    return this.send(method, path, payload, payload ? { 'content-type': 'application/json; charset=utf-8' } : {}, timeoutMs);
  }

  /**
   * One request whose body goes on to Appium as it arrives (a pushed file, a long value): the engine holds no more of
   * it than the stream's buffers. `length` is the caller's Content-Length, when it sent one.
   */
  async stream(method: string, path: string, body: Readable, length: number | undefined, timeoutMs = 600_000): Promise<AppiumReply> {
    const headers = { 'content-type': 'application/json; charset=utf-8', ...(length === undefined ? {} : { 'content-length': String(length) }) };
    return this.send(method, path, body, headers, timeoutMs);
  }

  private async send(method: string, path: string, body: Buffer | Readable | undefined, headers: Record<string, string>, timeoutMs: number): Promise<AppiumReply> {
    const url = await this.ensure();
    const reply = await request(`${url}${path}`, { method: method as 'GET', dispatcher: this.agent, headers, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const answer = Buffer.from(await reply.body.arrayBuffer());
    return {
      status: reply.statusCode,
      contentType: String(reply.headers['content-type'] ?? 'application/json; charset=utf-8'),
      // Appium's errors carry its stack and the host's paths: callers get neither.
      body: reply.statusCode >= 400 ? withoutHostDetails(answer, [dirname(this.options.home), appiumPaths().home, homedir(), tmpdir()]) : answer,
    };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.starting?.catch(() => undefined);
    const child = this.child;
    this.url = undefined;
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const killed = setTimeout(() => killGroup(child, 'SIGKILL'), 5_000);
      await exited;
      clearTimeout(killed);
    }
    this.child = undefined;
    await this.agent.close();
  }
}
