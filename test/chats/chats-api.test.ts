import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, useEngine } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { readEvents, startScriptedModel, type ClientEvent, type Script, type ScriptedModel } from '../support/scripted-model.js';

let model: ScriptedModel;
let anthropic: ScriptedModel;
/** What the scripted OpenAI-compatible model answers; each test sets its own. */
let script: Script = () => ({ text: ['Hello'] });
let anthropicScript: Script = () => ({ text: ['Hi'] });
let session: string;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const lab = useEngine();

beforeAll(async () => {
  model = await startScriptedModel('openai', (body, i) => script(body, i));
  anthropic = await startScriptedModel('anthropic', (body, i) => anthropicScript(body, i));
  session = (await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id;
  await useOpenAi();
});
afterAll(async () => {
  await model.stop();
  await anthropic.stop();
});

async function useOpenAi() {
  const r = await lab.c.call('PUT', '/lab/assistant', { token: lab.owner, body: { provider: 'openai', endpoint: model.endpoint, model: 'scripted-1', apiKey: 'sk-test-secret' } });
  expect(r.status).toBe(200);
}

async function newChat(token = lab.owner, s = session) {
  const r = await lab.c.call('POST', `/sessions/${s}/chats`, { token, body: { title: 'test' } });
  expect(r.status).toBe(201);
  return r.body.id as string;
}

const chatPath = (chat: string, s = session) => `/sessions/${s}/chats/${chat}`;

/** Opens an event stream with the bearer, as a client would. */
const openStream = (path: string, token = lab.owner, init: RequestInit = {}) =>
  fetch(lab.t.api + path, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string>) } });

const kinds = (events: ClientEvent[]) => events.map((e) => e.event);

describe('assistant provider configuration (/lab/assistant)', () => {
  it('GET shows the provider without the key; PUT and PATCH set it; the key goes to the secret store only', async () => {
    const r = await lab.c.call('GET', '/lab/assistant', { token: lab.owner });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ provider: 'openai', endpoint: model.endpoint, model: 'scripted-1', hasApiKey: true });
    expect(JSON.stringify(r.body)).not.toContain('sk-test-secret');
    expect(readFileSync(join(lab.t.dataDir, 'secrets.json'), 'utf8')).toContain('sk-test-secret');
    const db = new Database(join(lab.t.dataDir, 'benchtop.db'), { readonly: true, fileMustExist: false });
    try {
      const settings = db.prepare('SELECT value FROM settings').all() as { value: string }[];
      expect(settings.some((s) => s.value.includes('sk-test-secret'))).toBe(false);
    } finally {
      db.close();
    }
    const p = await lab.c.call('PATCH', '/lab/assistant', { token: lab.owner, body: { model: 'scripted-2' } });
    expect(p.body).toEqual({ provider: 'openai', endpoint: model.endpoint, model: 'scripted-2', hasApiKey: true });
    const cleared = await lab.c.call('PATCH', '/lab/assistant', { token: lab.owner, body: { apiKey: null } });
    expect(cleared.body.hasApiKey).toBe(false);
    await useOpenAi();
  });

  it('400 for a bad provider, endpoint, or a model provider without a model; 403 for others and for API keys; 401 without credentials', async () => {
    expect(errorCode(await lab.c.call('PUT', '/lab/assistant', { token: lab.owner, body: { provider: 'gpt' } }))).toBe('invalid_request');
    expect((await lab.c.call('PATCH', '/lab/assistant', { token: lab.owner, body: { endpoint: 'ftp://x' } })).status).toBe(400);
    expect(errorCode(await lab.c.call('PUT', '/lab/assistant', { token: lab.owner, body: { provider: 'anthropic' } }))).toBe('model_required');
    expect((await lab.c.call('PUT', '/lab/assistant', { token: lab.owner, raw: '{' })).status).toBe(400);
    const other = await lab.c.signup('not-owner@chats.test');
    expect((await lab.c.call('GET', '/lab/assistant', { token: other.token })).status).toBe(403);
    expect((await lab.c.call('PATCH', '/lab/assistant', { token: other.token, body: { provider: 'offline' } })).status).toBe(403);
    const key = await lab.c.createKey(lab.owner);
    expect(errorCode(await lab.c.call('GET', '/lab/assistant', { token: key }))).toBe('interactive_only');
    expect((await lab.c.call('GET', '/lab/assistant')).status).toBe(401);
    expect((await lab.c.call('GET', '/lab/assistant', { token: lab.owner })).body.model).toBe('scripted-1');
  });
});

describe('chats', () => {
  it('create, get and list (oldest first); metadata is kept', async () => {
    const s = (await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id;
    const a = await lab.c.call('POST', `/sessions/${s}/chats`, { token: lab.owner });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ sessionId: s, metadata: {} });
    expect(a.body.id).toMatch(UUID);
    const b = await lab.c.call('POST', `/sessions/${s}/chats`, { token: lab.owner, body: { title: 'second', metadata: {} } });
    expect(b.body.title).toBe('second');
    const list = await lab.c.call('GET', `/sessions/${s}/chats`, { token: lab.owner });
    expect(list.status).toBe(200);
    expect(list.body.object).toBe('list');
    expect(list.body.data.map((x: { id: string }) => x.id)).toEqual([a.body.id, b.body.id]);
    expect((await lab.c.call('GET', `/sessions/${s}/chats/${b.body.id}`, { token: lab.owner })).body).toEqual(b.body);
  });

  it('400 for a bad body; 404 for a device that is not the session\'s, an unknown session, or another organization\'s', async () => {
    expect(errorCode(await lab.c.call('POST', `/sessions/${session}/chats`, { token: lab.owner, body: { title: 5 } }))).toBe('invalid_request');
    expect((await lab.c.call('POST', `/sessions/${session}/chats`, { token: lab.owner, body: { metadata: { deviceId: 7 } } })).status).toBe(400);
    expect((await lab.c.call('POST', `/sessions/${session}/chats`, { token: lab.owner, raw: '[' })).status).toBe(400);
    expect(errorCode(await lab.c.call('POST', `/sessions/${session}/chats`, { token: lab.owner, body: { metadata: { deviceId: 'emulator-5554' } } }))).toBe('device_not_found');
    expect((await lab.c.call('POST', '/sessions/00000000-0000-4000-8000-000000000000/chats', { token: lab.owner })).status).toBe(404);
    expect((await lab.c.call('GET', '/sessions/not-a-uuid/chats', { token: lab.owner })).status).toBe(404);
    const stranger = await lab.c.signup('stranger@chats.test');
    expect((await lab.c.call('GET', `/sessions/${session}/chats`, { token: stranger.token })).status).toBe(404);
    expect((await lab.c.call('POST', `/sessions/${session}/chats`, { token: stranger.token })).status).toBe(404);
    expect((await lab.c.call('GET', `/sessions/${session}/chats`)).status).toBe(401);
  });

  it('a chat id from another session is 404 on every chat operation, even within the organization', async () => {
    script = () => ({ text: ['ok'] });
    const chat = await newChat();
    const sent = await lab.c.call('POST', `${chatPath(chat)}/messages?mode=sync`, { token: lab.owner, body: { text: 'hi' } });
    expect(sent.status).toBe(201);
    const other = (await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id;
    const wrong = chatPath(chat, other);
    const m = sent.body.id;
    for (const [method, path] of [
      ['GET', wrong],
      ['GET', `${wrong}/messages`],
      ['POST', `${wrong}/messages`],
      ['GET', `${wrong}/messages/${m}`],
      ['GET', `${wrong}/messages/${m}/events`],
      ['GET', `${wrong}/messages/${m}/tool-calls`],
      ['POST', `${wrong}/messages/${m}/cancel`],
    ] as const) {
      const r = await lab.c.call(method, path, { token: lab.owner, body: method === 'POST' && path.endsWith('messages') ? { text: 'x' } : undefined });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(errorCode(r)).toBe('chat_not_found');
    }
    expect(errorCode(await lab.c.call('GET', `${chatPath(chat)}/messages/00000000-0000-4000-8000-000000000000`, { token: lab.owner }))).toBe('message_not_found');
  });

  it('401 on every chat operation without credentials; 403 for an organization the caller is not in, where declared', async () => {
    script = () => ({ text: ['ok'] });
    const chat = await newChat();
    const m = (await lab.c.call('POST', `${chatPath(chat)}/messages?mode=sync`, { token: lab.owner, body: { text: 'x' } })).body.id;
    const operations = [
      ['GET', `/sessions/${session}/chats`, 403],
      ['POST', `/sessions/${session}/chats`, 403],
      ['GET', chatPath(chat), 404],
      ['GET', `${chatPath(chat)}/messages`, 404],
      ['POST', `${chatPath(chat)}/messages`, 403],
      ['GET', `${chatPath(chat)}/messages/${m}`, 404],
      ['GET', `${chatPath(chat)}/messages/${m}/events`, 404],
      ['GET', `${chatPath(chat)}/messages/${m}/tool-calls`, 404],
      ['POST', `${chatPath(chat)}/messages/${m}/cancel`, 403],
    ] as const;
    const outsider = await lab.c.signup('outsider@chats.test');
    const ownerPersonal = (await lab.c.call('GET', '/organizations', { token: lab.owner })).body.data[0].id;
    for (const [method, path, status] of operations) {
      const body = path.endsWith('/messages') && method === 'POST' ? { text: 'x' } : undefined;
      const anonymous = await lab.c.call(method, path, { body });
      expect(anonymous.status, `${method} ${path}`).toBe(401);
      errorCode(anonymous);
      // Naming an organization one is not a member of: 403 where the spec declares it, else the nearest, 404.
      const foreign = await lab.c.call(method, path, { token: outsider.token, org: ownerPersonal, body });
      expect(foreign.status, `${method} ${path}`).toBe(status);
      expect(errorCode(foreign)).toBe('not_a_member');
    }
  });

  it('a readonly member reads chats but gets 403 on create, post and cancel', async () => {
    const org = await lab.c.createOrganization(lab.owner, 'Chat readers');
    const reader = await lab.c.signup('reader@chats.test');
    await lab.c.addMember(lab.owner, org, reader.token, 'reader@chats.test', 'readonly');
    const s = (await lab.c.call('POST', '/sessions', { token: lab.owner, org })).body.id;
    const chat = (await lab.c.call('POST', `/sessions/${s}/chats`, { token: lab.owner, org })).body.id;
    script = () => ({ text: ['slow'], stallMs: 2000 });
    const running = await lab.c.call('POST', `/sessions/${s}/chats/${chat}/messages`, { token: lab.owner, org, body: { text: 'go' } });
    expect(running.status).toBe(202);
    expect((await lab.c.call('GET', `/sessions/${s}/chats/${chat}`, { token: reader.token, org })).status).toBe(200);
    expect((await lab.c.call('GET', `/sessions/${s}/chats/${chat}/messages`, { token: reader.token, org })).status).toBe(200);
    expect(errorCode(await lab.c.call('POST', `/sessions/${s}/chats`, { token: reader.token, org }))).toBe('insufficient_role');
    expect((await lab.c.call('POST', `/sessions/${s}/chats/${chat}/messages`, { token: reader.token, org, body: { text: 'x' } })).status).toBe(403);
    expect((await lab.c.call('POST', `/sessions/${s}/chats/${chat}/messages?execute=false`, { token: reader.token, org, body: { text: 'x' } })).status).toBe(403);
    const cancel = await lab.c.call('POST', `/sessions/${s}/chats/${chat}/messages/${running.body.id}/cancel`, { token: reader.token, org });
    expect(cancel.status).toBe(403);
    expect((await lab.c.call('GET', `/sessions/${s}/chats/${chat}/messages/${running.body.id}`, { token: lab.owner, org })).body.status).toBe('running');
    expect((await lab.c.call('POST', `/sessions/${s}/chats/${chat}/messages/${running.body.id}/cancel`, { token: lab.owner, org })).body.status).toBe('cancelled');
  });
});

describe('posting a message: the four modes', () => {
  it('default (async): 202 with the running assistant message and its eventsUrl; the events then tell the rest', async () => {
    script = () => ({ text: ['Hel', 'lo ', 'there'], chunkDelayMs: 20 });
    const chat = await newChat();
    const r = await lab.c.call('POST', `${chatPath(chat)}/messages`, { token: lab.owner, body: { text: 'say hello' } });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ chatId: chat, role: 'assistant', status: 'running', toolCalls: [], completedAt: null });
    expect(r.body.execution).toEqual({ id: expect.stringMatching(UUID), status: 'running', eventsUrl: `/api/v1${chatPath(chat)}/messages/${r.body.id}/events` });
    const res = await openStream(r.body.execution.eventsUrl.replace('/api/v1', ''));
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const { events } = await readEvents(res);
    expect(kinds(events)).toEqual([
      'execution.started', 'assistant.message.started',
      'assistant.message.delta', 'assistant.message.delta', 'assistant.message.delta',
      'assistant.message.completed', 'execution.completed',
    ]);
    expect(events.map((e) => e.id)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(events[0]!.data).toEqual({ executionId: r.body.execution.id, messageId: r.body.id });
    expect(events.slice(2, 5).map((e) => e.data.text).join('')).toBe('Hello there');
    expect(events[5]!.data.message).toMatchObject({ id: r.body.id, status: 'completed', text: 'Hello there' });
    expect(events[6]!.data).toEqual({ executionId: r.body.execution.id, status: 'completed' });
    // The user message came first; the model got it, with the system prompt and the key.
    const list = (await lab.c.call('GET', `${chatPath(chat)}/messages`, { token: lab.owner })).body.data;
    expect(list.map((m: { role: string; text: string }) => [m.role, m.text])).toEqual([['user', 'say hello'], ['assistant', 'Hello there']]);
    expect(list[0].execution).toBeNull();
    const sent = model.requests.at(-1)!;
    expect(sent.headers.authorization).toBe('Bearer sk-test-secret');
    expect(sent.body.model).toBe('scripted-1');
    expect(sent.body.stream).toBe(true);
    expect(sent.body.messages[0].role).toBe('system');
    expect(sent.body.messages.at(-1)).toEqual({ role: 'user', content: 'say hello' });
    // A chat bound to no device offers the model no tools.
    expect(sent.body.tools).toBeUndefined();
  });

  it('mode=sync: 201 with the completed message; the options may come in the body or the query', async () => {
    script = () => ({ text: ['Done.'] });
    const chat = await newChat();
    const a = await lab.c.call('POST', `${chatPath(chat)}/messages`, { token: lab.owner, body: { text: 'x', mode: 'sync' } });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ role: 'assistant', status: 'completed', text: 'Done.', toolCalls: [] });
    expect(a.body.execution.status).toBe('completed');
    expect(a.body.completedAt).not.toBeNull();
    // An API key acts like its member: CI can chat too.
    const key = await lab.c.createKey(lab.owner);
    const b = await lab.c.call('POST', `${chatPath(chat)}/messages?mode=sync`, { token: key, body: { text: 'y' } });
    expect(b.status).toBe(201);
    expect(b.body.status).toBe('completed');
    // The second request carried the first exchange as history.
    expect(model.requests.at(-1)!.body.messages.slice(1).map((m: { role: string; content: string }) => [m.role, m.content])).toEqual([
      ['user', 'x'], ['assistant', 'Done.'], ['user', 'y'],
    ]);
  });

  it('stream=true: 200 text/event-stream in the response to the post', async () => {
    script = () => ({ text: ['a', 'b'] });
    const chat = await newChat();
    for (const how of ['body', 'query'] as const) {
      const res = await openStream(`${chatPath(chat)}/messages${how === 'query' ? '?stream=true' : ''}`, lab.owner, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(how === 'body' ? { text: 'stream it', stream: true } : { text: 'stream it' }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const { events } = await readEvents(res);
      expect(kinds(events)).toEqual(['execution.started', 'assistant.message.started', 'assistant.message.delta', 'assistant.message.delta', 'assistant.message.completed', 'execution.completed']);
      expect(events[4]!.data.message.text).toBe('ab');
    }
  });

  it('execute=false: 201 with the stored user message; the model is not called', async () => {
    const chat = await newChat();
    const before = model.requests.length;
    for (const options of [{ body: { text: 'note', execute: false } }, { query: '?execute=false', body: { text: 'note 2' } }]) {
      const r = await lab.c.call('POST', `${chatPath(chat)}/messages${'query' in options ? options.query : ''}`, { token: lab.owner, body: options.body });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ role: 'user', status: 'completed', toolCalls: [], execution: null });
    }
    expect(model.requests.length).toBe(before);
    const list = (await lab.c.call('GET', `${chatPath(chat)}/messages`, { token: lab.owner })).body.data;
    expect(list.map((m: { text: string }) => m.text)).toEqual(['note', 'note 2']);
    // A user message has no execution to follow.
    expect(errorCode(await lab.c.call('GET', `${chatPath(chat)}/messages/${list[0].id}/events`, { token: lab.owner }))).toBe('execution_not_found');
  });

  it('400 for bad bodies and options; 401 without credentials', async () => {
    const chat = await newChat();
    const path = `${chatPath(chat)}/messages`;
    for (const body of [{}, { text: '' }, { text: 5 }, { text: 'x', mode: 'later' }, { text: 'x', stream: 'yes' }, { text: 'x', extra: 1 }]) {
      expect((await lab.c.call('POST', path, { token: lab.owner, body })).status, JSON.stringify(body)).toBe(400);
    }
    expect((await lab.c.call('POST', `${path}?mode=never`, { token: lab.owner, body: { text: 'x' } })).status).toBe(400);
    expect(errorCode(await lab.c.call('POST', path, { token: lab.owner, body: { text: 'x', mode: 'sync', stream: true } }))).toBe('conflicting_options');
    expect((await lab.c.call('POST', path, { token: lab.owner, raw: 'nope' })).status).toBe(400);
    expect((await lab.c.call('POST', path, { body: { text: 'x' } })).status).toBe(401);
  });

  it('a second message while the first still runs is refused (400 execution_running)', async () => {
    script = () => ({ text: ['slow'], stallMs: 1500 });
    const chat = await newChat();
    const first = await lab.c.call('POST', `${chatPath(chat)}/messages`, { token: lab.owner, body: { text: 'one' } });
    const second = await lab.c.call('POST', `${chatPath(chat)}/messages`, { token: lab.owner, body: { text: 'two' } });
    expect(second.status).toBe(400);
    expect(errorCode(second)).toBe('execution_running');
    await lab.c.call('POST', `${chatPath(chat)}/messages/${first.body.id}/cancel`, { token: lab.owner });
  });
});

describe('messages list', () => {
  it('the most recent page, oldest first, with a strict before cursor; limit 1 to 500', async () => {
    const chat = await newChat();
    lab.t.clock.frozenAt = Date.now();
    try {
      for (let i = 0; i < 5; i++) await lab.c.call('POST', `${chatPath(chat)}/messages`, { token: lab.owner, body: { text: `m${i}`, execute: false } });
    } finally {
      lab.t.clock.frozenAt = undefined;
    }
    const page1 = (await lab.c.call('GET', `${chatPath(chat)}/messages?limit=2`, { token: lab.owner })).body;
    expect(page1.data.map((m: { text: string }) => m.text)).toEqual(['m3', 'm4']);
    expect(page1.nextCursor).toBe(page1.data[0].createdAt);
    const page2 = (await lab.c.call('GET', `${chatPath(chat)}/messages?limit=2&before=${page1.nextCursor}`, { token: lab.owner })).body;
    expect(page2.data.map((m: { text: string }) => m.text)).toEqual(['m1', 'm2']);
    const page3 = (await lab.c.call('GET', `${chatPath(chat)}/messages?limit=2&before=${page2.nextCursor}`, { token: lab.owner })).body;
    expect(page3.data.map((m: { text: string }) => m.text)).toEqual(['m0']);
    expect(page3.nextCursor).toBeUndefined();
    for (const q of ['limit=0', 'limit=501', 'limit=x', 'before=yesterday']) {
      const r = await lab.c.call('GET', `${chatPath(chat)}/messages?${q}`, { token: lab.owner });
      expect(r.status, q).toBe(400);
      errorCode(r);
    }
  });
});

describe('events', () => {
  it('exact order with tool calls: created and completed pairs between the deltas', async () => {
    script = (_body, i) => (i === firstRequest ? { text: ['Let me tap.'], toolCalls: [{ name: 'tap', arguments: { x: 1, y: 2 } }] } : { text: ['I could not: no device.'] });
    const firstRequest = model.requests.length;
    const chat = await newChat();
    const r = await lab.c.call('POST', `${chatPath(chat)}/messages?mode=sync`, { token: lab.owner, body: { text: 'tap' } });
    expect(r.body.status).toBe('completed');
    expect(r.body.toolCalls).toHaveLength(1);
    expect(r.body.toolCalls[0]).toMatchObject({ name: 'tap', arguments: { x: 1, y: 2 }, status: 'failed', error: { code: 'no_device' } });
    // The model heard about the failure in the tool result.
    const second = model.requests.at(-1)!.body.messages;
    expect(second.at(-2).tool_calls[0].function).toEqual({ name: 'tap', arguments: '{"x":1,"y":2}' });
    expect(second.at(-1)).toMatchObject({ role: 'tool', tool_call_id: 'call_0_tap', content: expect.stringContaining('not bound to a device') });
    // Reattaching after the end replays the final state only.
    const { events } = await readEvents(await openStream(`${chatPath(chat)}/messages/${r.body.id}/events`));
    expect(kinds(events)).toEqual(['execution.started', 'assistant.message.started', 'assistant.message.delta', 'assistant.message.completed', 'execution.completed']);
    expect(events[2]!.data).toEqual({ messageId: r.body.id, text: 'Let me tap.I could not: no device.' });
    // The tool calls endpoint lists them.
    const calls = await lab.c.call('GET', `${chatPath(chat)}/messages/${r.body.id}/tool-calls`, { token: lab.owner });
    expect(calls.body.data.map((x: { id: string }) => x.id)).toEqual([r.body.toolCalls[0].id]);
  });

  it('exact order while live, as the stream sent it: deltas, then a tool_call pair, then more deltas', async () => {
    script = (_body, i) => (i === start ? { text: ['One'], toolCalls: [{ name: 'list_elements', arguments: {} }] } : { text: ['Two'] });
    const start = model.requests.length;
    const chat = await newChat();
    const res = await openStream(`${chatPath(chat)}/messages`, lab.owner, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'go', stream: true }) });
    const { events } = await readEvents(res);
    expect(kinds(events)).toEqual([
      'execution.started', 'assistant.message.started', 'assistant.message.delta',
      'tool_call.created', 'tool_call.completed', 'assistant.message.delta',
      'assistant.message.completed', 'execution.completed',
    ]);
    expect(events[3]!.data.toolCall).toMatchObject({ name: 'list_elements', status: 'running', completedAt: null });
    expect(events[4]!.data.toolCall).toMatchObject({ id: events[3]!.data.toolCall.id, status: 'failed' });
  });

  it('reattaching to a running execution replays from the start and continues live; many subscribers get the same events', async () => {
    script = () => ({ text: ['a', 'b', 'c', 'd', 'e', 'f'], chunkDelayMs: 150 });
    const chat = await newChat();
    const r = await lab.c.call('POST', `${chatPath(chat)}/messages`, { token: lab.owner, body: { text: 'slowly' } });
    const path = `${chatPath(chat)}/messages/${r.body.id}/events`;
    const early = readEvents(await openStream(path));
    // A client that saw a few events and dropped off...
    const dropped = await readEvents(await openStream(path), (e) => e.event === 'assistant.message.delta' && e.data.text === 'b');
    expect(dropped.events.at(-1)!.data.text).toBe('b');
    // ...reattaches mid-run: everything from the start, then the rest live.
    const subscribers = await Promise.all(Array.from({ length: 20 }, () => openStream(path)));
    const all = await Promise.all([early, ...subscribers.map((s) => readEvents(s))]);
    const reference = all[0]!.events;
    expect(kinds(reference)).toEqual(['execution.started', 'assistant.message.started', ...Array(6).fill('assistant.message.delta'), 'assistant.message.completed', 'execution.completed']);
    for (const { events } of all) expect(events).toEqual(reference);
    // With Last-Event-ID (what EventSource sends on reconnect) a running execution resumes after it.
    script = () => ({ text: ['x', 'y', 'z'], chunkDelayMs: 200 });
    const again = await lab.c.call('POST', `${chatPath(chat)}/messages`, { token: lab.owner, body: { text: 'more' } });
    const resumed = await readEvents(await openStream(`${chatPath(chat)}/messages/${again.body.id}/events`, lab.owner, { headers: { 'last-event-id': '2' } }));
    expect(resumed.events[0]!.id).toBe(3);
    expect(resumed.events.map((e) => e.id)).toEqual([3, 4, 5, 6, 7]);
  });

  it('reattaching after the end replays the stored final state: the text as one delta, no tool_call events', async () => {
    script = () => ({ text: ['Fin', 'ished'] });
    const chat = await newChat();
    const r = await lab.c.call('POST', `${chatPath(chat)}/messages?mode=sync`, { token: lab.owner, body: { text: 'x' } });
    const { events } = await readEvents(await openStream(`${chatPath(chat)}/messages/${r.body.id}/events`));
    expect(kinds(events)).toEqual(['execution.started', 'assistant.message.started', 'assistant.message.delta', 'assistant.message.completed', 'execution.completed']);
    expect(events[2]!.data.text).toBe('Finished');
    expect(events[3]!.data.message).toEqual(r.body);
    // A browser's EventSource cannot send Authorization: the bearer may come as ?token=.
    const browser = await fetch(`${lab.t.api}${chatPath(chat)}/messages/${r.body.id}/events?token=${lab.owner}`);
    expect(browser.status).toBe(200);
    expect((await readEvents(browser)).events).toEqual(events);
    expect((await fetch(`${lab.t.api}${chatPath(chat)}/messages/${r.body.id}/events?token=forged`)).status).toBe(401);
  });
});

describe('offline (no model)', () => {
  it('answers at once, streamed in full even when it ends before the response attaches; without a device it says so', async () => {
    expect((await lab.c.call('PUT', '/lab/assistant', { token: lab.owner, body: { provider: 'offline' } })).body).toEqual({ provider: 'offline', endpoint: null, model: null, hasApiKey: true });
    try {
      const before = model.requests.length;
      const chat = await newChat();
      for (const [text, answer] of [
        ['help', /^Without a model I understand direct commands/],
        ['tap 10 20', /^This chat is not bound to a device/],
      ] as const) {
        const res = await openStream(`${chatPath(chat)}/messages?stream=true`, lab.owner, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text }) });
        const { events } = await readEvents(res);
        expect(kinds(events)).toEqual(['execution.started', 'assistant.message.started', 'assistant.message.delta', 'assistant.message.completed', 'execution.completed']);
        expect(events[2]!.data.text).toMatch(answer);
        expect(events[3]!.data.message.toolCalls).toEqual([]);
      }
      expect(model.requests.length).toBe(before);
    } finally {
      await useOpenAi();
    }
  });
});

describe('failures and limits', () => {
  it('a model endpoint error fails the message with its status and text', async () => {
    script = () => ({ status: 503 });
    const chat = await newChat();
    const res = await openStream(`${chatPath(chat)}/messages?stream=true`, lab.owner, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'x' }) });
    const { events } = await readEvents(res);
    expect(kinds(events)).toEqual(['execution.started', 'assistant.message.started', 'assistant.message.completed', 'execution.failed']);
    expect(events[3]!.data.error.code).toBe('model_error');
    expect(events[3]!.data.error.message).toContain('503');
    expect(events[2]!.data.message).toMatchObject({ status: 'failed', error: { code: 'model_error' } });
  });

  it('an unreachable endpoint fails clearly', async () => {
    await lab.c.call('PATCH', '/lab/assistant', { token: lab.owner, body: { endpoint: 'http://127.0.0.1:9/v1' } });
    try {
      const chat = await newChat();
      const r = await lab.c.call('POST', `${chatPath(chat)}/messages?mode=sync`, { token: lab.owner, body: { text: 'x' } });
      expect(r.body).toMatchObject({ status: 'failed', error: { code: 'model_unreachable' } });
    } finally {
      await useOpenAi();
    }
  });

  it('25 steps at most: a model that never stops calling tools fails with a clear text', async () => {
    script = () => ({ toolCalls: [{ name: 'screen_size', arguments: {} }] });
    const start = model.requests.length;
    const chat = await newChat();
    const r = await lab.c.call('POST', `${chatPath(chat)}/messages?mode=sync`, { token: lab.owner, body: { text: 'loop' } });
    expect(r.body.status).toBe('failed');
    expect(r.body.error.code).toBe('step_limit');
    expect(r.body.error.message).toMatch(/25 steps/);
    expect(r.body.toolCalls).toHaveLength(25);
    expect(model.requests.length - start).toBe(25);
  });

  it('cancel during a slow model stream stops within 1 s, aborting the HTTP request; the message ends cancelled', async () => {
    script = () => ({ text: ['never'], stallMs: 20_000 });
    const chat = await newChat();
    const res = await openStream(`${chatPath(chat)}/messages?stream=true`, lab.owner, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'x' }) });
    const reading = readEvents(res);
    const request = await waitFor('the model request', () => model.requests.find((q) => q.body.messages.at(-1).content === 'x' && !q.aborted && q === model.requests.at(-1)));
    const message = (await lab.c.call('GET', `${chatPath(chat)}/messages?limit=1`, { token: lab.owner })).body.data[0];
    const started = performance.now();
    const r = await lab.c.call('POST', `${chatPath(chat)}/messages/${message.id}/cancel`, { token: lab.owner });
    const took = performance.now() - started;
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('cancelled');
    expect(r.body.execution.status).toBe('cancelled');
    expect(took).toBeLessThan(1000);
    await waitFor('the model to see the abort', () => request.aborted, 1000);
    const { events } = await reading;
    expect(kinds(events).slice(-2)).toEqual(['assistant.message.completed', 'execution.completed']);
    expect(events.at(-1)!.data.status).toBe('cancelled');
    // Cancelling a finished message changes nothing.
    expect((await lab.c.call('POST', `${chatPath(chat)}/messages/${message.id}/cancel`, { token: lab.owner })).body.status).toBe('cancelled');
  });
});

describe('the Anthropic Messages API', () => {
  it('streams text and tool calls, sends tool results back as tool_result blocks, with the key and version headers', async () => {
    const start = anthropic.requests.length;
    anthropicScript = (_body, i) =>
      i === start ? { text: ['Checking'], toolCalls: [{ name: 'screen_size', arguments: {} }] } : { text: [' done', '.'] };
    const r1 = await lab.c.call('PUT', '/lab/assistant', { token: lab.owner, body: { provider: 'anthropic', endpoint: anthropic.endpoint.replace(/\/v1$/, ''), model: 'claude-scripted', apiKey: 'sk-ant-test' } });
    expect(r1.status).toBe(200);
    try {
      const chat = await newChat();
      const res = await openStream(`${chatPath(chat)}/messages?stream=true`, lab.owner, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ text: 'how big?' }) });
      const { events } = await readEvents(res);
      expect(kinds(events)).toEqual([
        'execution.started', 'assistant.message.started', 'assistant.message.delta',
        'tool_call.created', 'tool_call.completed', 'assistant.message.delta', 'assistant.message.delta',
        'assistant.message.completed', 'execution.completed',
      ]);
      expect(events.at(-2)!.data.message.text).toBe('Checking done.');
      const [first, second] = anthropic.requests.slice(start);
      expect(first!.url).toBe('/v1/messages');
      expect(first!.headers['x-api-key']).toBe('sk-ant-test');
      expect(first!.headers['anthropic-version']).toBe('2023-06-01');
      expect(first!.body).toMatchObject({ model: 'claude-scripted', stream: true, messages: [{ role: 'user', content: [{ type: 'text', text: 'how big?' }] }] });
      expect(typeof first!.body.system).toBe('string');
      expect(second!.body.messages.slice(1)).toEqual([
        { role: 'assistant', content: [{ type: 'text', text: 'Checking' }, { type: 'tool_use', id: 'toolu_1', name: 'screen_size', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [{ type: 'text', text: expect.stringContaining('not bound to a device') }] }] },
      ]);
    } finally {
      await useOpenAi();
    }
  });
});

describe('restart', () => {
  it('an engine stopped during an execution leaves no message running: it ends failed with a clear error', async () => {
    script = () => ({ text: ['long'], stallMs: 20_000 });
    const chat = await newChat();
    const r = await lab.c.call('POST', `${chatPath(chat)}/messages`, { token: lab.owner, body: { text: 'x' } });
    await waitFor('the model request', () => model.requests.at(-1)?.body.messages.at(-1).content === 'x');
    // A client following the execution does not hold the shutdown open: its stream ends with the failure.
    const following = readEvents(await openStream(`${chatPath(chat)}/messages/${r.body.id}/events`));
    const stopping = performance.now();
    lab.t = await lab.t.restart();
    expect(performance.now() - stopping).toBeLessThan(5000);
    const live = (await following).events;
    expect(kinds(live).slice(-2)).toEqual(['assistant.message.completed', 'execution.failed']);
    expect(live.at(-1)!.data.error.code).toBe('engine_stopped');
    lab.c = client(lab.t.api);
    lab.owner = await lab.c.login();
    const m = await lab.c.call('GET', `${chatPath(chat)}/messages/${r.body.id}`, { token: lab.owner });
    expect(m.body.status).toBe('failed');
    expect(m.body.error.code).toBe('engine_stopped');
    expect(m.body.error.message).toMatch(/Send it again/);
    const { events } = await readEvents(await openStream(`${chatPath(chat)}/messages/${r.body.id}/events`));
    expect(kinds(events).at(-1)).toBe('execution.failed');
    expect(events.at(-1)!.data.error.code).toBe('engine_stopped');
  });
});
