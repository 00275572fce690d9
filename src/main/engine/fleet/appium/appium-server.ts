import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Agent } from 'undici';
import { withoutHostDetails } from '../../domain/webdriver-commands.js';
import { killGroup, spawnGuarded, stopGuarded } from '../guarded-child.js';

export interface AppiumServerOptions {
  /** The one driver this Appium loads: the lab runs an Appium for each platform, each started by its first session. */
  platform: AppiumPlatform;
  /** Appium's own HOME and TMPDIR: what it and its adb write stays in the lab's data dir. */
  home: string;
  /** Added to Appium's environment: ANDROID_HOME, USBMUXD_SOCKET_ADDRESS. */
  env: Record<string, string>;
  /** How long Appium may take to load its drivers and answer /status. */
  startTimeoutMs: number;
  /** Where Appium's pid file is kept while it runs: a later start of the lab ends an Appium a crash left. */
  pidFile: string;
  /** Where Appium's port comes from (a free one of the OS's): a test takes the one it picks to make the race happen. */
  freePort?: () => Promise<number>;
  /** The node_modules folder holding Appium and its drivers: the lab's own install unless a test moves one. */
  modules?: string;
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

export type AppiumPlatform = 'android' | 'ios';

/**
 * The driver each platform's Appium runs; Appium finds it through the package.json of its APPIUM_HOME, and loads every
 * driver listed there at start. One driver each: loading XCUITest's too cost every Appium start a second of CPU (3.4 s
 * against 2.4 s to ready on this machine) in a lab whose sessions were all on Android, and a driver that takes its
 * Appium down ends only its own platform's sessions.
 */
const DRIVER_OF: Record<AppiumPlatform, string> = { android: 'appium-uiautomator2-driver', ios: 'appium-xcuitest-driver' };

/** The node_modules folder that holds Appium and the drivers this project depends on: the lab's own install. */
let modulesFound: string | undefined;
function installedModules(): string {
  return (modulesFound ??= dirname(dirname(createRequire(import.meta.url).resolve('appium/package.json'))));
}

/**
 * Appium's home, made in the lab's data dir at each start: a package.json that depends on Appium and the platform's
 * driver, and links to them where they are installed now. Appium's extension manifest
 * (node_modules/.cache/appium/extensions.yaml under APPIUM_HOME) records absolute install paths and is rebuilt only
 * when that package.json changes: kept in the install, a copied or moved install (a packaged app, a moved checkout)
 * got an Appium that said it was ready and had no drivers, and a read-only install could not be written at all. Here the links are remade and the manifest is rebuilt
 * from them every start, in a folder the lab writes.
 */
export function prepareAppiumHome(home: string, platform: AppiumPlatform, modules = installedModules()): { main: string; home: string } {
  const appiumHome = join(home, 'appium-home');
  const links = join(appiumHome, 'node_modules');
  rmSync(join(links, '.cache'), { recursive: true, force: true });
  mkdirSync(links, { recursive: true, mode: 0o700 });
  const dependencies: Record<string, string> = {};
  for (const name of ['appium', DRIVER_OF[platform]]) {
    const target = join(modules, name);
    const link = join(links, name);
    rmSync(link, { recursive: true, force: true });
    let version: string;
    try {
      version = (JSON.parse(readFileSync(join(target, 'package.json'), 'utf8')) as { version: string }).version;
    } catch {
      continue;
    }
    // A junction on Windows, which needs no privilege; a plain symlink elsewhere.
    symlinkSync(target, link, 'junction');
    dependencies[name] = version;
  }
  if (!dependencies.appium) throw new Error(`Appium is not installed in ${modules}.`);
  writeFileSync(join(appiumHome, 'package.json'), JSON.stringify({ name: 'benchtop-appium-home', private: true, dependencies }, null, 2));
  return { main: join(modules, 'appium', 'index.js'), home: appiumHome };
}

/** How many ports Appium tries when the one chosen is taken before it binds it. */
const PORT_ATTEMPTS = 3;
/**
 * How long Appium may take to end on a graceful stop before its group is killed. The lab has ended its runs by then
 * (and released their phones, whose cleanup resets them), so nothing Appium would still do matters enough to wait for.
 */
const STOP_GRACE_MS = 500;

class PortTaken extends Error {}

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
  /**
   * Appium keeps connections to it alive; so do we, so that a command does not pay for a TCP handshake. Made on first
   * use: undici is loaded then, not on the way to the engine's first answer in a lab that may never start Appium.
   */
  private agent: Promise<{ agent: Agent; request: typeof import('undici').request }> | undefined;

  constructor(private readonly options: AppiumServerOptions) {
    super();
  }

  private client(): Promise<{ agent: Agent; request: typeof import('undici').request }> {
    return (this.agent ??= import('undici').then(({ Agent, request }) => ({ agent: new Agent({ keepAliveTimeout: 30_000, connections: 64 }), request })));
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
    mkdirSync(this.options.home, { recursive: true, mode: 0o700 });
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.launch(await (this.options.freePort ?? freePort)());
      } catch (error) {
        // A port free when chosen can be taken before Appium binds it: Appium then exits saying so, and another is tried.
        if (!(error instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw error;
        this.options.log(`Appium's port was taken before it could bind it; trying another`);
      }
    }
  }

  private async launch(port: number): Promise<string> {
    const { main, home: appiumHome } = prepareAppiumHome(this.options.home, this.options.platform, this.options.modules);
    // A base path only the engine knows: Appium's port answers nothing else, so a local process that finds it can
    // neither start a session nor reach the lab's. It travels in a file of the lab's (0600), never on a command line
    // every local user can read in /proc.
    const basePath = `/${randomBytes(24).toString('hex')}`;
    const config = join(this.options.home, 'appium-server.json');
    rmSync(config, { force: true });
    writeFileSync(config, JSON.stringify({ server: { 'base-path': basePath } }), { mode: 0o600 });
    // No insecure feature but the one the lab allows per session (Appium 3 enables none by default, session discovery
    // included), and no plugins.
    const args = [main, 'server', '--config', config, '--address', '127.0.0.1', '--port', String(port), '--log-no-colors', '--log-timestamp', '--allow-insecure', 'uiautomator2:adb_shell'];
    const child = spawnGuarded(process.execPath, args, {
      env: { ...process.env, ...this.options.env, APPIUM_HOME: appiumHome, HOME: this.options.home, TMPDIR: this.options.home },
      pidFile: this.options.pidFile,
      output: 'pipe',
    });
    this.child = child;
    let recent: string[] = [];
    const lines = (stream: NodeJS.ReadableStream) => {
      let partial = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk: string) => {
        const parts = (partial + chunk).split('\n');
        partial = parts.pop()!;
        for (const printed of parts) {
          // Appium prints its URL and every request's path: the base path never reaches a log.
          const line = printed.replaceAll(basePath, '');
          recent.push(line);
          if (recent.length > 50) recent = recent.slice(-50);
          this.emit('line', line);
        }
      });
    };
    lines(child.stdout!);
    lines(child.stderr!);
    child.once('exit', (code, signal) => {
      if (this.child !== child) return;
      this.child = undefined;
      this.url = undefined;
      if (this.stopping) return;
      this.options.log(`Appium exited (${signal ?? `code ${code}`}); its sessions have ended. Last lines:\n${recent.slice(-10).join('\n')}`);
      this.emit('died');
    });
    const url = `http://127.0.0.1:${port}${basePath}`;
    const deadline = Date.now() + this.options.startTimeoutMs;
    for (;;) {
      if (this.child !== child) {
        const last = recent.slice(-20).join('\n');
        throw /EADDRINUSE|port may already be in use/.test(last) ? new PortTaken() : new Error(`Appium exited while starting:\n${last}`);
      }
      // Briefly: until Appium binds the port, whatever else holds it may accept and never answer.
      const { agent, request } = await this.client();
      const ready = await request(`${url}/status`, { dispatcher: agent, headersTimeout: 1_000, bodyTimeout: 1_000 }).then(
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
    this.options.log(`Appium is up on port ${port} (pid ${child.pid})`);
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
    const { agent, request } = await this.client();
    const reply = await request(`${url}${path}`, { method: method as 'GET', dispatcher: agent, headers, body, headersTimeout: timeoutMs, bodyTimeout: timeoutMs });
    const answer = Buffer.from(await reply.body.arrayBuffer());
    return {
      status: reply.statusCode,
      contentType: String(reply.headers['content-type'] ?? 'application/json; charset=utf-8'),
      // Appium's errors carry its stack and the host's paths: callers get neither.
      body: reply.statusCode >= 400 ? withoutHostDetails(answer, [dirname(this.options.home), dirname(this.options.modules ?? installedModules()), this.options.env.ANDROID_HOME, homedir(), tmpdir()]) : answer,
    };
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.starting?.catch(() => undefined);
    const child = this.child;
    this.url = undefined;
    if (child) await stopGuarded(child, STOP_GRACE_MS);
    this.child = undefined;
    await (await this.agent)?.agent.close();
  }
}
