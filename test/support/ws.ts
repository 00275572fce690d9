import { WebSocket } from 'ws';

/** Test helpers for the engine's WebSocket routes (live screen, terminal). */

export interface WsOptions {
  headers?: Record<string, string>;
  protocols?: string[];
}

export interface Refusal {
  status: number;
  body: any;
}

/** A WebSocket, and the HTTP answer if the upgrade is refused, once the server has closed that connection. */
export function connectWs(url: string, options: WsOptions = {}): { ws: WebSocket; refusal: Promise<Refusal> } {
  const ws = new WebSocket(url, options.protocols ?? [], { headers: options.headers });
  const refusal = new Promise<Refusal>((resolve) => {
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      // The server, not the client, must end a refused upgrade: a socket left open would hold its shutdown.
      res.socket.once('close', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
  });
  return { ws, refusal };
}

/** The HTTP answer to an upgrade that must be refused (the shape `errorCode` reads). */
export async function refusedUpgrade(url: string, options: WsOptions = {}): Promise<Refusal & { headers: Headers }> {
  const { ws, refusal } = connectWs(url, options);
  ws.on('error', () => undefined);
  ws.once('open', () => ws.close());
  return { ...(await refusal), headers: new Headers() };
}

/**
 * What an upgrade is answered, whichever way it goes: 101 once the socket opens (then closed), the refusal's status and
 * body, or status 0 with the error when the connection fails with no answer.
 */
export function upgradeAnswer(url: string, options: WsOptions = {}): Promise<Refusal> {
  const { ws, refusal } = connectWs(url, options);
  return new Promise((resolve) => {
    ws.once('open', () => {
      ws.terminate();
      resolve({ status: 101, body: undefined });
    });
    ws.once('error', (error) => resolve({ status: 0, body: error.message }));
    void refusal.then(resolve);
  });
}
