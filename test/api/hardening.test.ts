import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, startEngine, type TestEngine } from '../support/engine.js';

let t: TestEngine;
let c: ReturnType<typeof client>;
let owner: string;

beforeAll(async () => {
  t = await startEngine();
  c = client(t.api);
  owner = await c.login();
});
afterAll(() => t.stop());

/** `{"a": [[[...]]]}` with `levels` arrays: about 10 KB at 5000 levels, under any body limit. */
const nestedText = (levels: number) => `{"a":${'['.repeat(levels)}${']'.repeat(levels)}}`;
const nested = (levels: number): unknown => JSON.parse(nestedText(levels));

describe('deeply nested JSON (issue 13.4)', () => {
  it('in a test result\'s stats is a declared 400 json_too_deep, not a 500', async () => {
    const r = await c.call('POST', '/test-results', { token: owner, raw: `{"name":"deep","stats":${nestedText(5000)}}` });
    expect(r.status).toBe(400);
    expect(errorCode(r)).toBe('json_too_deep');
  });

  it('in a test result\'s git on update is a 400 too', async () => {
    const created = await c.call('POST', '/test-results', { token: owner, body: { name: 'run' } });
    const r = await c.call('PATCH', `/test-results/${created.body.id}`, { token: owner, raw: `{"git":${nestedText(5000)}}` });
    expect(r.status).toBe(400);
    expect(errorCode(r)).toBe('json_too_deep');
  });

  it('in a chat\'s metadata is a 400', async () => {
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const r = await c.call('POST', `/sessions/${session}/chats`, { token: owner, raw: `{"title":"x","metadata":${nestedText(5000)}}` });
    expect(r.status).toBe(400);
    expect(errorCode(r)).toBe('json_too_deep');
  });

  it('inside a string counts for nothing, and ordinary nesting is taken as sent', async () => {
    const stats = { text: '['.repeat(5000), deep: nested(40) };
    const r = await c.call('POST', '/test-results', { token: owner, body: { name: 'fine', stats } });
    expect(r.status).toBe(201);
    expect(r.body.stats).toEqual(stats);
  });
});
