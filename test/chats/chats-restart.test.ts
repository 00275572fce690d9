import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { call } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { readEvents, startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const dir = mkdtempSync(join(tmpdir(), 'benchtop-chat-crash-'));
const running: ServeProcess[] = [];
let model: ScriptedModel | undefined;
afterAll(async () => {
  for (const p of running) p.child.kill('SIGKILL');
  await model?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const ENV = { BENCHTOP_DATA_DIR: dir, BENCHTOP_OWNER_EMAIL: 'crash@chats.test', BENCHTOP_OWNER_PASSWORD: 'password-1' };

async function serve() {
  const p = await startServeProcess(ENV);
  running.push(p);
  const login = await call(p.api, 'POST', '/auth/login', { body: { email: 'crash@chats.test', password: 'password-1' } });
  return { ...p, token: login.body.token as string };
}

describe('an engine killed during an execution', () => {
  it('marks the message failed at the next start, with a clear error, and replays that final state', async () => {
    model = await startScriptedModel('openai', () => ({ text: ['half an answer'], stallMs: 60_000 }));
    const first = await serve();
    const token = first.token;
    expect((await call(first.api, 'PUT', '/lab/assistant', { token, body: { provider: 'openai', endpoint: model.endpoint, model: 'm' } })).status).toBe(200);
    const session = (await call(first.api, 'POST', '/sessions', { token })).body.id;
    const chat = (await call(first.api, 'POST', `/sessions/${session}/chats`, { token })).body.id;
    const posted = await call(first.api, 'POST', `/sessions/${session}/chats/${chat}/messages`, { token, body: { text: 'think hard' } });
    expect(posted.status).toBe(202);
    await waitFor('the model request', () => model!.requests.length === 1);
    first.child.kill('SIGKILL');
    await first.exited;

    const second = await serve();
    const path = `/sessions/${session}/chats/${chat}/messages/${posted.body.id}`;
    const m = await call(second.api, 'GET', path, { token: second.token });
    expect(m.status).toBe(200);
    expect(m.body.status).toBe('failed');
    expect(m.body.execution.status).toBe('failed');
    expect(m.body.completedAt).not.toBeNull();
    expect(m.body.error).toEqual({ code: 'engine_restarted', message: expect.stringMatching(/restarted while this message was executing/) });
    const res = await fetch(`${second.api}${path}/events`, { headers: { authorization: `Bearer ${second.token}` } });
    const { events } = await readEvents(res);
    expect(events.map((e) => e.event)).toEqual(['execution.started', 'assistant.message.started', 'assistant.message.delta', 'assistant.message.completed', 'execution.failed']);
    expect(events.at(-1)!.data).toEqual({ executionId: posted.body.execution.id, error: m.body.error });
    // The chat takes a new message: nothing is left running.
    const again = await call(second.api, 'POST', `/sessions/${session}/chats/${chat}/messages`, { token: second.token, body: { text: 'again', execute: false } });
    expect(again.status).toBe(201);
  }, 60_000);
});
