import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startEngine, type TestEngine } from '../support/engine.js';

let t: TestEngine;
let doc: any;

beforeAll(async () => {
  t = await startEngine();
  doc = (await client(t.api).call('GET', '/openapi.json')).body;
});
afterAll(() => t.stop());

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
    expect(contentTypes(op, 200)).toEqual(['application/octet-stream']);
    expect(contentTypes(op, 206)).toEqual(['application/octet-stream']);
  });
});
