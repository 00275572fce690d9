import type { Socket } from 'node:net';
import type { Pool } from 'undici';
import { openUsbmux, type UsbmuxdAddress } from './usbmux.js';

export const WDA_PORT = 8100;
export const WDA_MJPEG_PORT = 9100;

/** A WDA answer that was not a success, with WDA's own error name (W3C's: "invalid session id", ...). */
export class WdaError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * A usbmuxd Connect to a port on the phone, as a plain socket: what iproxy does for each connection, in-process.
 * The Usbmux wrapper leaves the socket paused once it stops reading it; whoever takes the socket reads it from here.
 */
export async function tunnel(address: UsbmuxdAddress, udid: string, port: number): Promise<Socket> {
  const mux = await openUsbmux(address);
  try {
    const device = (await mux.listDevices()).find((d) => d.Properties.SerialNumber === udid);
    if (!device) throw new Error(`The iPhone ${udid} is not attached.`);
    const socket = await mux.connect(device.Properties.DeviceID, port);
    // Until its new owner listens: a phone pulled out between Connect and the first request must not crash the engine.
    socket.on('error', () => undefined);
    return socket;
  } catch (error) {
    mux.close();
    throw error;
  }
}

/**
 * WebDriverAgent's HTTP API on the phone's port 8100, over usbmuxd tunnels kept alive in a small pool (a tunnel
 * costs two round trips to usbmuxd; a kept-alive one costs nothing).
 */
export class WdaClient {
  /** Made on first use: undici is loaded then, not at every start of a lab that may have no iPhone. */
  private pool: Promise<Pool> | undefined;
  private session: string | undefined;

  /**
   * @param onUnreachable called when a new tunnel to port 8100 cannot be opened (usbmuxd refuses the Connect: nothing
   * listens there), which means WDA died; the fleet rechecks the phone then rather than at its next periodic check.
   */
  constructor(
    private readonly address: UsbmuxdAddress,
    private readonly udid: string,
    private readonly onUnreachable?: () => void,
    /** How a connection to the phone's port is made (an iOS 17.4+ phone's go-ios tunnel); usbmuxd's Connect by default. */
    private readonly route: (port: number) => Promise<Socket> = (port) => tunnel(address, udid, port),
  ) {}

  private connections(): Promise<Pool> {
    this.pool ??= import('undici').then(
      ({ Pool }) =>
        new Pool('http://localhost:8100', {
          connections: 4,
          connect: (_options, callback) => {
            this.route(WDA_PORT).then(
              (socket) => callback(null, socket),
              (error: Error) => {
                if (/refused/i.test(error.message)) {
                  this.onUnreachable?.();
                  error = new Error(`WebDriverAgent stopped answering on the iPhone (${error.message}): the phone is wda_unavailable while the lab starts it again, and its row in the fleet says what to do if it cannot.`);
                }
                callback(error, null);
              },
            );
          },
        }),
    );
    return this.pool;
  }

  async close(): Promise<void> {
    await (await this.pool)?.destroy();
  }

  async request<T = unknown>(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    const res = await (await this.connections()).request({
      method,
      path,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
      headersTimeout: 60_000,
    });
    const text = await res.body.text();
    let parsed: { value?: unknown };
    try {
      parsed = JSON.parse(text) as { value?: unknown };
    } catch {
      throw new WdaError(res.statusCode, 'unknown error', `WebDriverAgent answered ${res.statusCode} with no JSON: ${text.slice(0, 200)}`);
    }
    if (res.statusCode >= 400) {
      const v = (parsed.value ?? {}) as { error?: string; message?: string };
      throw new WdaError(res.statusCode, v.error ?? 'unknown error', v.message ?? text.slice(0, 200));
    }
    return parsed.value as T;
  }

  /** A command in WDA's session, made on first use and again when WDA forgot it (it restarted). */
  async command<T = unknown>(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const session = await this.ensureSession();
      try {
        return await this.request<T>(method, `/session/${session}${path}`, body, signal);
      } catch (error) {
        if (attempt === 0 && error instanceof WdaError && error.error === 'invalid session id') {
          this.session = undefined;
          continue;
        }
        throw error;
      }
    }
  }

  private async ensureSession(): Promise<string> {
    if (this.session) return this.session;
    const value = await this.request<{ sessionId: string }>('POST', '/session', { capabilities: { alwaysMatch: {}, firstMatch: [{}] } });
    this.session = value.sessionId;
    return this.session;
  }
}
