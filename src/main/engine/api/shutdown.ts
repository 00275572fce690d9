import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';
import type { App } from './http.js';

/** How long requests in flight at a stop may take to finish before their connections are ended. */
export const REQUEST_GRACE_MS = 3000;

/**
 * Makes closing the server bounded, whatever clients do. Node's server.close() waits for every connection, and
 * Fastify's forceCloseConnections: 'idle' ends only the idle ones: a client that sent half a request (or stalls in
 * the middle of an upload) held a stop open for as long as it liked. At close, connections with no request being
 * answered (idle, or with a request still arriving) end at once; those answering one get `graceMs`, then end too.
 * Upgraded sockets (WebSockets) are left to the websocket plugin, which closes them with 1001 itself.
 */
export function boundedClose(app: App, graceMs = REQUEST_GRACE_MS): void {
  const server = app.server as Server;
  // Every TCP connection, and, on TLS, the connections HTTP sees: requests report the TLS socket, not the TCP one.
  const tcp = new Set<Socket>();
  const http = new Set<Socket>();
  const answering = new Map<Socket, number>();
  const upgraded = new WeakSet<Socket>();
  const track = (set: Set<Socket>) => (socket: Socket) => {
    set.add(socket);
    socket.once('close', () => set.delete(socket));
  };
  server.on('connection', track(tcp));
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', track(http));
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    answering.set(socket, (answering.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (answering.get(socket) ?? 1) - 1;
      if (left > 0) answering.set(socket, left);
      else answering.delete(socket);
    });
  });
  server.on('upgrade', (req: IncomingMessage) => upgraded.add(req.socket));

  let timer: NodeJS.Timeout | undefined;
  app.addHook('preClose', (done) => {
    for (const socket of http) if (!answering.has(socket) && !upgraded.has(socket)) socket.destroy();
    timer = setTimeout(() => {
      for (const socket of [...http, ...tcp]) if (!upgraded.has(socket)) socket.destroy();
    }, graceMs);
    // The timer must not keep a process alive that has nothing else left to do.
    timer.unref();
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    clearTimeout(timer);
    done();
  });
}
