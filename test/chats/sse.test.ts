import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { frame, HEARTBEAT_MS, openSse } from '../../src/main/engine/events/sse.js';
import { readEvents } from '../support/scripted-model.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A real HTTP server whose one response is an event stream driven by `drive`. */
async function serveStream(drive: (stream: ReturnType<typeof openSse>) => void, heartbeatMs: number): Promise<string> {
  server = createServer((_req, res) => drive(openSse(res, 200, heartbeatMs)));
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

describe('SSE framing', () => {
  it('frames are id, event and one data line of JSON, even when the data holds newlines', () => {
    expect(frame({ seq: 7, kind: 'assistant.message.delta', data: JSON.stringify({ text: 'a\nb' }) })).toBe(
      'id: 7\nevent: assistant.message.delta\ndata: {"text":"a\\nb"}\n\n',
    );
    expect(HEARTBEAT_MS).toBe(15_000);
  });

  it('a quiet stream gets comment heartbeats; events and the end go through', async () => {
    const url = await serveStream((sse) => {
      setTimeout(() => sse.event({ seq: 1, kind: 'execution.started', data: '{"executionId":"e"}' }), 130);
      setTimeout(() => sse.end(), 260);
    }, 40);
    const res = await fetch(url);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache, no-transform');
    const { events, comments } = await readEvents(res);
    expect(events).toEqual([{ id: 1, event: 'execution.started', data: { executionId: 'e' } }]);
    expect(comments.length).toBeGreaterThanOrEqual(3);
    expect(new Set(comments)).toEqual(new Set(['heartbeat']));
  });
});
