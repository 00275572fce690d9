import type { ServerResponse } from 'node:http';
import type { ExecutionEvent, Subscriber } from './event-log.js';

/** A comment line this often keeps proxies and idle timers from closing a quiet stream. */
export const HEARTBEAT_MS = 15_000;

/** DESIGN.md framing: the data is one line of JSON, since JSON.stringify escapes every newline. */
export const frame = (event: ExecutionEvent): string => `id: ${event.seq}\nevent: ${event.kind}\ndata: ${event.data}\n\n`;

export interface SseStream extends Subscriber {
  /** Resolves when the stream has ended, by us or by the client going away. */
  readonly closed: Promise<void>;
}

/** Turns a raw response into an event stream: headers now, one frame per event, a heartbeat, end on end(). */
export function openSse(res: ServerResponse, status: number, heartbeatMs = HEARTBEAT_MS): SseStream {
  res.writeHead(status, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // nginx and similar proxies would otherwise buffer the stream.
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  const heartbeat = setInterval(() => res.write(': heartbeat\n\n'), heartbeatMs);
  heartbeat.unref();
  const closed = new Promise<void>((resolve) => res.once('close', resolve));
  void closed.then(() => clearInterval(heartbeat));
  return {
    closed,
    event(event) {
      if (!res.writableEnded) res.write(frame(event));
    },
    end() {
      clearInterval(heartbeat);
      if (!res.writableEnded) res.end();
    },
  };
}
