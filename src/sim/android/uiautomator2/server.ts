import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Device } from '../device.js';
import { Screen } from '../screen.js';
import { defaultSettings, ROUTES, ServerError, unknownCommand, type Route, type ServerHost, type Session } from './routes.js';

/**
 * The UiAutomator2 server as it runs on a phone (appium-uiautomator2-server, started by `am instrument`): Appium's
 * driver reaches it through `adb forward tcp:N tcp:6790`, so each connection arrives as an adb stream, and it answers
 * HTTP with the server's envelope, `{"value": ..., "sessionId": ...}`, errors included.
 */

export interface Uiautomator2ServerOptions {
  /** The phone's display; by default one of the server's own over the same Device. */
  screen?: Screen;
  /** BuildConfig's VERSION_NAME and VERSION_CODE, which /status reports: by default the installed server APK's. */
  version?: { name: string; code: number };
  /** The server stops itself after DELETE /session, and its instrumentation (so `am instrument -w`) ends. */
  onStop?: () => void;
}

/** Where ServerHandler strips its legacy prefix. */
const LEGACY_URI_PREFIX = '/wd/hub';
const SERVER_PACKAGE = 'io.appium.uiautomator2.server';
/** Netty's HttpObjectAggregator limit in ServerInitializer: a bigger request body is refused. */
const MAX_BODY = 50 * 1024 * 1024;

function matchRoute(method: string, path: string): { route: Route; params: Record<string, string> } | undefined {
  const parts = path.split('/').filter(Boolean);
  for (const route of ROUTES) {
    if (route.method !== method) continue;
    const pattern = route.path.split('/').filter(Boolean);
    if (pattern.length !== parts.length) continue;
    const params: Record<string, string> = {};
    if (pattern.every((p, i) => (p.startsWith(':') ? ((params[p.slice(1)] = decodeURIComponent(parts[i]!)), true) : p === parts[i]))) {
      return { route, params };
    }
  }
  return undefined;
}

export class Uiautomator2Server {
  private readonly http: Server;
  private readonly streams = new Set<Duplex>();
  private readonly host: ServerHost;
  private closed = false;

  constructor(device: Device, options: Uiautomator2ServerOptions = {}) {
    const installed = device.apps.get(SERVER_PACKAGE);
    this.host = {
      device,
      screen: options.screen ?? new Screen(device),
      settings: defaultSettings(),
      version: options.version ?? { name: installed?.versionName ?? '0', code: installed?.versionCode ?? 0 },
      session: undefined,
      stop: () => options.onStop?.(),
    };
    this.http = createServer((req, res) => void this.serve(req, res));
    // A request may take as long as its actions do; Netty has no request timeout either.
    this.http.requestTimeout = 0;
    // Netty closes no idle connection either: Appium's client keeps one open between commands.
    this.http.keepAliveTimeout = 0;
  }

  /** The active session's id, if a client has one. */
  get sessionId(): string | undefined {
    return this.host.session?.id;
  }

  /** Serves one connection that reached the phone's port 6790 (an adb forward stream: a Duplex, not a net.Socket). */
  handle(stream: Duplex): void {
    if (this.closed) {
      stream.destroy();
      return;
    }
    this.streams.add(stream);
    stream.once('close', () => this.streams.delete(stream));
    this.http.emit('connection', stream);
  }

  /** The instrumentation ended: drop the session(s), close connections. */
  close(): void {
    this.closed = true;
    this.host.session = undefined;
    for (const stream of this.streams) stream.destroy();
    this.streams.clear();
  }

  private async serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let sessionId: string | null = null;
    let status = 200;
    let value: unknown;
    try {
      let path = (req.url ?? '/').split('?')[0]!;
      if (path.startsWith(LEGACY_URI_PREFIX)) path = path.slice(LEGACY_URI_PREFIX.length);
      const body = await readBody(req);
      const found = matchRoute(req.method ?? 'GET', path);
      if (!found) throw unknownCommand();
      const { route, params } = found;
      sessionId = params.sessionId ?? null;
      const session = this.host.session;
      if (!route.noSession && (!session || session.id !== sessionId)) {
        throw new ServerError(
          'invalid session id',
          404,
          `The session identified by ${sessionId} is not known`,
          'io.appium.uiautomator2.common.exceptions.NoSuchDriverException',
        );
      }
      let json: unknown = undefined;
      if (body.length > 0) {
        try {
          json = JSON.parse(body.toString('utf8'));
        } catch {
          throw new ServerError('invalid argument', 400, 'The request body is not valid JSON', 'com.google.gson.JsonSyntaxException');
        }
      }
      value = await route.handle(this.host, { params, body: json, session: session as Session });
      if (route.path === '/status') sessionId = 'None';
      if (route.path === '/session') sessionId = this.host.session?.id ?? null;
    } catch (err) {
      const e = err instanceof ServerError ? err : new ServerError('unknown error', 500, (err as Error).message ?? String(err));
      status = e.status;
      value = { error: e.error, message: e.message, stacktrace: `${e.javaClass}: ${e.message}\n\tat io.appium.uiautomator2.handler.request.SafeRequestHandler.handle(SafeRequestHandler.java:59)` };
    }
    const payload = Buffer.from(JSON.stringify({ value, sessionId }), 'utf8');
    if (res.destroyed) return;
    res.writeHead(status, {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': payload.length,
      Pragma: 'no-cache',
      'Cache-Control': 'no-store',
    });
    res.end(payload);
  }
}

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY) {
        reject(new ServerError('invalid argument', 413, 'The request body is too large'));
        req.destroy();
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}
