import { beforeAll, describe, expect, it } from 'vitest';
import { useEngine } from '../support/engine.js';

let doc: any;

const lab = useEngine();

beforeAll(async () => {
  doc = (await lab.c.call('GET', '/openapi.json')).body;
});

const MESSAGE = '/api/v1/sessions/{sessionId}/chats/{chatId}/messages/{messageId}';
const contentTypes = (op: any, status: number) => Object.keys(op.responses[status]?.content ?? {});

describe('the OpenAPI document declares the content types that are served (issue 13.8)', () => {
  it('the two event streams are text/event-stream', () => {
    expect(contentTypes(doc.paths[`${MESSAGE}/events`].get, 200)).toEqual(['text/event-stream']);
    const post = doc.paths['/api/v1/sessions/{sessionId}/chats/{chatId}/messages'].post;
    expect(contentTypes(post, 200)).toEqual(['text/event-stream']);
    expect(contentTypes(post, 201)).toEqual(['application/json']);
    expect(contentTypes(post, 202)).toEqual(['application/json']);
  });

  it('the tool call image is image/png', () => {
    const op = doc.paths[`${MESSAGE}/tool-calls/{toolCallId}/image`].get;
    expect(contentTypes(op, 200)).toEqual(['image/png']);
    expect(op.responses[200].content['image/png'].schema).toMatchObject({ type: 'string', format: 'binary' });
  });

  it('the asset download declares the 206 it answers to a Range request', () => {
    const op = doc.paths['/api/v1/test-results/{testResultId}/assets/{assetId}'].get;
    expect(contentTypes(op, 206)).toEqual(contentTypes(op, 200));
  });
});

/** Whether a served Content-Type falls under one of the media types (or ranges: image/*, * / *) an operation declares. */
function declares(declared: string[], served: string | null): boolean {
  const [type, subtype] = (served ?? '').split(';')[0]!.trim().toLowerCase().split('/');
  return declared.some((range) => {
    const [t, s] = range.toLowerCase().split('/');
    return (t === '*' || t === type) && (s === '*' || s === subtype);
  });
}

/** The frames of an event stream, as the SSE parsing rules read them (comments skipped). */
function sseEvents(text: string): Array<Record<string, string>> {
  return text.split('\n\n').filter((block) => block.trim() !== '').map((block) => {
    const event: Record<string, string> = {};
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const at = line.indexOf(':');
      event[line.slice(0, at)] = line.slice(at + 1).replace(/^ /, '');
    }
    return event;
  }).filter((e) => Object.keys(e).length > 0);
}

describe('what is served matches what is declared (issue 22.5)', () => {
  it('an asset is served with its upload\'s content type, which its download declares', async () => {
    const result = (await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'content types' } })).body.id;
    const op = doc.paths['/api/v1/test-results/{testResultId}/assets/{assetId}'].get;
    for (const [name, type] of [['trace.zip', 'application/zip'], ['shot.png', 'image/png'], ['log.txt', 'text/plain']] as const) {
      const form = new FormData();
      form.append('name', name);
      form.append('file', new Blob(['content'], { type }), name);
      const asset = await (await fetch(`${lab.t.api}/test-results/${result}/assets`, { method: 'POST', headers: { authorization: `Bearer ${lab.owner}` }, body: form })).json();
      const whole = await fetch(`${lab.t.api}/test-results/${result}/assets/${asset.id}`, { headers: { authorization: `Bearer ${lab.owner}` } });
      const part = await fetch(`${lab.t.api}/test-results/${result}/assets/${asset.id}`, { headers: { authorization: `Bearer ${lab.owner}`, range: 'bytes=0-1' } });
      expect(whole.headers.get('content-type')).toContain(type);
      expect(part.status).toBe(206);
      expect(declares(contentTypes(op, 200), whole.headers.get('content-type')), `200 ${type}`).toBe(true);
      expect(declares(contentTypes(op, 206), part.headers.get('content-type')), `206 ${type}`).toBe(true);
    }
  });

  it('the event streams are described event by event: each served frame is one of the declared events', async () => {
    const session = (await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id;
    const chat = (await lab.c.call('POST', `/sessions/${session}/chats`, { token: lab.owner, body: {} })).body.id;
    const posted = await fetch(`${lab.t.api}/sessions/${session}/chats/${chat}/messages?stream=true`, {
      method: 'POST',
      headers: { authorization: `Bearer ${lab.owner}`, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'hello' }),
    });
    expect(posted.status).toBe(200);
    const postOp = doc.paths['/api/v1/sessions/{sessionId}/chats/{chatId}/messages'].post;
    expect(declares(contentTypes(postOp, 200), posted.headers.get('content-type'))).toBe(true);
    const frames = sseEvents(await posted.text());
    expect(frames.length).toBeGreaterThan(2);

    for (const op of [postOp, doc.paths[`${MESSAGE}/events`].get]) {
      const schema = op.responses[200].content['text/event-stream'].schema;
      // Not a plain string: the sequence of events, each an object of id, event and data.
      expect(schema.type).toBe('array');
      const events = schema.items.oneOf as Array<{ required: string[]; properties: { event: { enum: string[] }; data: { contentMediaType: string; contentSchema: { required?: string[] } } } }>;
      for (const frame of frames) {
        const declared = events.find((e) => e.properties.event.enum.includes(frame.event!));
        expect(declared, `event ${frame.event}`).toBeDefined();
        for (const field of declared!.required) expect(frame[field], `${frame.event}.${field}`).toBeDefined();
        expect(frame.id).toMatch(/^[0-9]+$/);
        expect(declared!.properties.data.contentMediaType).toBe('application/json');
        const data = JSON.parse(frame.data!);
        for (const key of declared!.properties.data.contentSchema.required ?? []) expect(data, `${frame.event} data`).toHaveProperty(key);
      }
    }
  });
});
