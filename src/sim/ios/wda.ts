import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { sourceXml, type Orientation, type Springboard } from './springboard.js';

export const WDA_PORT = 8100;
export const MJPEG_PORT = 9100;
export const WDA_BUNDLE_ID = 'com.facebook.WebDriverAgentRunner.xctrunner';

class WdaError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

interface PointerAction {
  type: string;
  duration?: number;
  x?: number;
  y?: number;
  origin?: unknown;
  button?: number;
}

/** WDA's settings that shape its MJPEG stream (appium/settings). */
export interface MjpegSettings {
  mjpegServerFramerate: number;
  mjpegServerScreenshotQuality: number;
}

/**
 * WebDriverAgent's HTTP API on port 8100 (the W3C WebDriver subset WDA implements, plus its /wda extensions), and its
 * MJPEG server on 9100. Both are reached only through usbmuxd Connect, as on a real phone where WDA runs as an
 * XCUITest runner: the servers never listen on a host port; usbmuxd hands each tunnel's socket to them.
 */
export class WebDriverAgent {
  readonly http: Server;
  sessionId: string | undefined;
  readonly settings: MjpegSettings = { mjpegServerFramerate: 10, mjpegServerScreenshotQuality: 25 };
  /** Every request served, newest last: what a test inspects to see which commands the engine sent. */
  readonly requests: string[] = [];
  private readonly streams = new Set<Socket>();
  private readonly connections = new Set<Socket>();

  constructor(
    private readonly board: Springboard,
    private readonly device: { udid: string; version: string },
  ) {
    this.http = createServer((req, res) => void this.route(req, res));
    this.http.keepAliveTimeout = 60_000;
  }

  accept(socket: Socket): void {
    // Tracked here: the server never listens, and Node's closeAllConnections knows only a listening server's sockets.
    this.connections.add(socket);
    socket.once('close', () => this.connections.delete(socket));
    this.http.emit('connection', socket);
  }

  acceptMjpeg(socket: Socket): void {
    this.stream(socket);
  }

  stop(): void {
    for (const res of this.streams) res.destroy();
    for (const socket of this.connections) socket.destroy();
  }

  /**
   * WDA's MJPEG server is a plain socket server, not an HTTP framework: it reads the request, answers with HTTP/1.0
   * headers and then writes multipart parts for as long as the client stays, at mjpegServerFramerate.
   */
  private stream(socket: Socket): void {
    const boundary = '--BoundaryString';
    socket.on('error', () => undefined);
    let request = '';
    let timer: NodeJS.Timeout | undefined;
    const send = () => {
      if (socket.destroyed) return;
      const frame = this.board.jpeg(this.settings.mjpegServerScreenshotQuality);
      const ok = socket.write(Buffer.concat([Buffer.from(`${boundary}\r\nContent-type: image/jpeg\r\nContent-Length: ${frame.length}\r\n\r\n`), frame, Buffer.from('\r\n\r\n')]));
      const next = () => (timer = setTimeout(send, 1000 / Math.max(1, this.settings.mjpegServerFramerate)));
      // A slow viewer gets fewer frames, never a backlog: the next frame waits for the socket to drain.
      if (ok) next();
      else socket.once('drain', next);
    };
    const onData = (chunk: Buffer) => {
      request += chunk.toString('latin1');
      if (!request.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      socket.write(
        'HTTP/1.0 200 OK\r\nServer: WDA MJPEG Server\r\nConnection: close\r\nMax-Age: 0\r\nExpires: 0\r\n' +
          `Cache-Control: no-cache, private\r\nPragma: no-cache\r\nContent-Type: multipart/x-mixed-replace; boundary=${boundary}\r\n\r\n`,
      );
      this.streams.add(socket);
      send();
    };
    socket.on('data', onData);
    socket.on('close', () => {
      clearTimeout(timer);
      this.streams.delete(socket);
    });
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? '/', 'http://localhost');
    this.requests.push(`${req.method} ${url.pathname}`);
    let body: Record<string, unknown> = {};
    const reply = (status: number, value: unknown) => {
      const text = JSON.stringify({ value, sessionId: this.sessionId ?? null });
      res.writeHead(status, { 'Content-Type': 'application/json;charset=UTF-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    };
    try {
      if (chunks.length) {
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        } catch {
          throw new WdaError(400, 'invalid argument', 'The request body is not JSON');
        }
      }
      reply(200, await this.handle(req.method ?? 'GET', url.pathname, body));
    } catch (error) {
      if (error instanceof WdaError) return reply(error.status, { error: error.error, message: error.message, traceback: '' });
      reply(500, { error: 'unknown error', message: (error as Error).message, traceback: '' });
    }
  }

  private async handle(method: string, path: string, body: Record<string, unknown>): Promise<unknown> {
    const b = this.board;
    // Session-scoped routes: /session/<id>/<rest>; WDA also serves many of them without the session prefix.
    let rest = path;
    const m = /^\/session\/([^/]+)(\/.*)?$/.exec(path);
    if (m) {
      if (m[1] !== this.sessionId) throw new WdaError(404, 'invalid session id', `Session does not exist: ${m[1]}`);
      rest = m[2] ?? '';
      if (!rest && method === 'DELETE') {
        this.sessionId = undefined;
        return null;
      }
      if (!rest && method === 'GET') return this.capabilities();
    }
    const route = `${method} ${rest}`;
    switch (route) {
      case 'GET /status':
        return {
          ready: true,
          message: 'WebDriverAgent is ready to accept commands',
          state: 'success',
          os: { name: 'iOS', version: this.device.version, sdkVersion: this.device.version, testmanagerdVersion: 28 },
          ios: { ip: '169.254.1.1' },
          device: 'iphone',
          build: { time: 'Jan 1 2025 00:00:00', productBundleIdentifier: 'com.facebook.WebDriverAgentRunner' },
        };
      case 'POST /session': {
        this.sessionId = randomUUID().toUpperCase();
        const caps = ((body.capabilities as { alwaysMatch?: Record<string, unknown> })?.alwaysMatch ?? {}) as Record<string, unknown>;
        if (typeof caps.bundleId === 'string') b.launch(caps.bundleId);
        return { sessionId: this.sessionId, capabilities: this.capabilities() };
      }
      case 'GET /source':
        return sourceXml(b.tree());
      case 'GET /screenshot':
        return b.png().toString('base64');
      case 'GET /window/size':
      case 'GET /window/rect':
        return { x: 0, y: 0, ...b.window() };
      case 'GET /wda/screen':
        return { statusBarSize: { width: b.window().width, height: 20 }, scale: b.scale, screenSize: b.window() };
      case 'GET /orientation':
        return b.orientation;
      case 'POST /orientation': {
        const o = String(body.orientation ?? '').toUpperCase();
        if (o !== 'PORTRAIT' && o !== 'LANDSCAPE') throw new WdaError(400, 'invalid argument', `Unsupported orientation: ${o}`);
        b.setOrientation(o as Orientation);
        return null;
      }
      case 'POST /url': {
        const url = String(body.url ?? '');
        try {
          b.openUrl(url);
        } catch (error) {
          throw new WdaError(400, 'invalid argument', (error as Error).message);
        }
        return null;
      }
      case 'POST /actions':
        this.perform(body.actions);
        return null;
      case 'POST /wda/tap':
        b.tap(Number(body.x), Number(body.y));
        return null;
      case 'POST /wda/touchAndHold':
        b.longPress(Number(body.x), Number(body.y), Number(body.duration ?? 1) * 1000);
        return null;
      case 'POST /wda/dragfromtoforduration':
        b.gesture(Number(body.fromX), Number(body.fromY), Number(body.toX), Number(body.toY), Number(body.duration ?? 0.5) * 1000);
        return null;
      case 'POST /wda/keys': {
        const value = Array.isArray(body.value) ? body.value.map(String).join('') : String(body.value ?? '');
        try {
          b.type(value);
        } catch (error) {
          throw new WdaError(400, 'invalid element state', (error as Error).message);
        }
        return null;
      }
      case 'POST /wda/pressButton':
        try {
          b.pressButton(String(body.name ?? ''));
        } catch (error) {
          throw new WdaError(400, 'invalid argument', (error as Error).message);
        }
        return null;
      case 'POST /wda/homescreen':
        b.home();
        return null;
      case 'POST /wda/lock':
        b.lock();
        return null;
      case 'POST /wda/unlock':
        b.unlock();
        return null;
      case 'GET /wda/locked':
        return b.locked;
      case 'POST /wda/apps/launch':
      case 'POST /wda/apps/activate':
        try {
          b.launch(String(body.bundleId ?? ''));
        } catch (error) {
          throw new WdaError(500, 'unknown error', (error as Error).message);
        }
        return null;
      case 'POST /wda/apps/terminate':
        return b.terminate(String(body.bundleId ?? ''));
      case 'POST /wda/apps/state':
        return b.state(String(body.bundleId ?? ''));
      case 'GET /wda/activeAppInfo': {
        const id = b.foreground ?? 'com.apple.springboard';
        return { bundleId: id, name: b.foreground ? b.apps.get(id)?.name ?? '' : '', pid: 1000, processArguments: {} };
      }
      case 'GET /appium/settings':
        return { ...this.settings };
      case 'POST /appium/settings': {
        const s = (body.settings ?? {}) as Partial<MjpegSettings>;
        if (typeof s.mjpegServerFramerate === 'number') this.settings.mjpegServerFramerate = Math.min(60, Math.max(1, s.mjpegServerFramerate));
        if (typeof s.mjpegServerScreenshotQuality === 'number') this.settings.mjpegServerScreenshotQuality = Math.min(100, Math.max(1, s.mjpegServerScreenshotQuality));
        return { ...this.settings };
      }
    }
    throw new WdaError(404, 'unknown command', `Unhandled endpoint: ${path} -- http://localhost:${WDA_PORT}/ with parameters {\n    wildcards =     (\n        "${path}"\n    );\n}`);
  }

  private capabilities() {
    return { device: 'iphone', browserName: ' ', sdkVersion: this.device.version, CFBundleIdentifier: this.board.foreground ?? 'com.apple.springboard', udid: this.device.udid };
  }

  /** W3C pointer actions: each finger's down–move–pause–up sequence becomes a tap, a long press or a swipe. */
  private perform(actions: unknown): void {
    if (!Array.isArray(actions)) throw new WdaError(400, 'invalid argument', "'actions' must be an array");
    for (const source of actions as Array<{ type?: string; actions?: PointerAction[] }>) {
      if (source.type !== 'pointer') continue;
      let x = 0;
      let y = 0;
      let down: { x: number; y: number; at: number } | undefined;
      let elapsed = 0;
      for (const a of source.actions ?? []) {
        const duration = Number(a.duration ?? 0);
        if (a.type === 'pointerMove') {
          const relative = a.origin === 'pointer';
          x = relative ? x + Number(a.x ?? 0) : Number(a.x ?? 0);
          y = relative ? y + Number(a.y ?? 0) : Number(a.y ?? 0);
          elapsed += duration;
        } else if (a.type === 'pause') {
          elapsed += duration;
        } else if (a.type === 'pointerDown') {
          down = { x, y, at: elapsed };
        } else if (a.type === 'pointerUp') {
          if (!down) throw new WdaError(400, 'invalid argument', 'pointerUp without pointerDown');
          this.board.gesture(down.x, down.y, x, y, elapsed - down.at);
          down = undefined;
        } else {
          throw new WdaError(400, 'invalid argument', `Unknown action type: ${a.type}`);
        }
      }
    }
  }
}
