import { request } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorCode, useEngine } from '../support/engine.js';

/** The fuzzer's findings about what the OpenAPI document says and what the API answers (issue 33.5). */
const lab = useEngine();
let doc: any;

beforeAll(async () => {
  doc = (await lab.c.call('GET', '/openapi.json')).body;
});

const DEVICE = '/api/v1/sessions/{sessionId}/devices/{deviceId}';
const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
    Object.entries(ops).filter(([method]) => method !== 'parameters').map(([method, op]) => ({ path, method, op })),
  );
const contentTypes = (op: any, status: number) => Object.keys(op.responses[status]?.content ?? {});

/** A request with any method, TRACE included (fetch refuses to send it). */
function raw(method: string, path: string): Promise<{ status: number; headers: Record<string, unknown>; body: any }> {
  const url = new URL(lab.t.api.replace(/\/api\/v1$/, '') + path);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method, headers: { authorization: `Bearer ${lab.owner}` } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text ? JSON.parse(text) : undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('the OpenAPI document declares what is served', () => {
  it('no operation declares bytes or text it serves as something else as application/json', () => {
    const mislabelled = operations().flatMap(({ path, method, op }) =>
      Object.entries(op.responses ?? {}).filter(([, r]: [string, any]) => {
        const schema = r.content?.['application/json']?.schema;
        return schema?.type === 'string';
      }).map(([status]) => `${method.toUpperCase()} ${path} ${status}`),
    );
    expect(mislabelled).toEqual([]);
  });

  it('names the media types of the tunnel client, the recording, the screenshots and the metrics', async () => {
    expect(contentTypes(doc.paths['/api/v1/remote-connect/client.cjs'].get, 200)).toEqual(['application/javascript']);
    expect(contentTypes(doc.paths[`${DEVICE}/recording/stop`].post, 200)).toEqual(['video/mp4']);
    expect(contentTypes(doc.paths[`${DEVICE}/screenshot`].get, 200)).toEqual(['image/png', 'image/jpeg']);
    expect(contentTypes(doc.paths[`${DEVICE}/screenshot.png`].get, 200)).toEqual(['image/png']);
    expect(contentTypes(doc.paths['/api/v1/metrics'].get, 200)).toEqual(['text/plain']);
    // What is served matches.
    const client = await fetch(`${lab.t.api}/remote-connect/client.cjs`);
    expect(client.headers.get('content-type')).toMatch(/^application\/javascript/);
  });

  it('documents every event stream as its events, each with its kind and its data', () => {
    const streams = operations().flatMap(({ path, method, op }) =>
      Object.values(op.responses ?? {}).flatMap((r: any) => (r.content?.['text/event-stream'] ? [{ name: `${method} ${path}`, schema: r.content['text/event-stream'].schema }] : [])),
    );
    expect(streams.map((s) => s.name).sort()).toEqual([
      'get /api/v1/sessions/{sessionId}/chats/{chatId}/messages/{messageId}/events',
      'get /api/v1/sessions/{sessionId}/devices/{deviceId}/logs',
      'post /api/v1/sessions/{sessionId}/chats/{chatId}/messages',
    ]);
    for (const { name, schema } of streams) {
      expect(schema.type, name).toBe('array');
      for (const event of schema.items.oneOf) {
        expect(event.required, name).toEqual(expect.arrayContaining(['event', 'data']));
        expect(event.properties.event.enum, name).toHaveLength(1);
        expect(event.properties.data.contentMediaType, name).toBe('application/json');
      }
    }
    const logs = doc.paths[`${DEVICE}/logs`].get.responses[200].content['text/event-stream'].schema.items.oneOf;
    expect(logs.map((e: any) => e.properties.event.enum[0])).toEqual(['log', 'end']);
  });
});

describe('the API answers what the document says', () => {
  it('a JSON null is not the optional body of POST .../chats: 400 with the error body; no body still creates one', async () => {
    const session = (await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id;
    const nulled = await lab.c.call('POST', `/sessions/${session}/chats`, { token: lab.owner, raw: 'null' });
    expect(nulled.status).toBe(400);
    expect(errorCode(nulled)).toBe('invalid_request');
    expect((await lab.c.call('POST', `/sessions/${session}/chats`, { token: lab.owner })).status).toBe(201);
    const remote = await lab.c.call('POST', `/sessions/${session}/devices/emulator-5554/remote-connect`, { token: lab.owner, raw: 'null' });
    expect(remote.status).toBe(400);
    expect(errorCode(remote)).toBe('invalid_request');
  });

  it('unknown query parameters are ignored (docs/api.md), named ones validated', async () => {
    expect((await lab.c.call('GET', '/sessions?_=1700000000000&unknown=x', { token: lab.owner })).status).toBe(200);
    const bad = await lab.c.call('GET', '/sessions?limit=nope', { token: lab.owner });
    expect(bad.status).toBe(400);
    expect(errorCode(bad)).toBe('invalid_request');
  });

  it('TRACE (or any method a path does not answer) is 405 with Allow and the error body; an unknown path is 404', async () => {
    const trace = await raw('TRACE', '/api/v1/health');
    expect(trace.status).toBe(405);
    expect(trace.headers.allow).toBe('GET, HEAD');
    expect(trace.body.error).toMatchObject({ code: 'method_not_allowed', message: expect.any(String) });
    const session = (await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id;
    const put = await raw('PUT', `/api/v1/sessions/${session}`);
    expect(put.status).toBe(405);
    expect(String(put.headers.allow).split(', ')).toEqual(expect.arrayContaining(['GET', 'PATCH']));
    const nowhere = await raw('TRACE', '/api/v1/no-such-thing');
    expect(nowhere.status).toBe(404);
    expect(nowhere.body.error.code).toBe('route_not_found');
  });
});
