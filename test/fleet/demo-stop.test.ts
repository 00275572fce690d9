import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { call, client } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor } from '../support/lab.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('demo mode: a graceful stop with a message running (issue 13.6)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-demo-stop-'));
  let adb: AdbServer | undefined;
  let serve: ServeProcess | undefined;
  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await adb?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('ends the message failed, as docs/api.md promises: the chats stop before the demo phones detach', async () => {
    adb = await startAdbServer();
    const owner = { email: 'demo@lab.test', password: 'password-1' };
    const env = {
      ...(adb.env as Record<string, string>),
      BENCHTOP_DATA_DIR: dir,
      BENCHTOP_OWNER_EMAIL: owner.email,
      BENCHTOP_OWNER_PASSWORD: owner.password,
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
    };
    serve = await startServeProcess({ ...env, BENCHTOP_DEMO_PHONES: '1' });
    const api = serve.api;
    const token = (await call(api, 'POST', '/auth/login', { body: owner })).body.token;

    const session = (await call(api, 'POST', '/sessions', { token })).body.id;
    const device = await call(api, 'POST', `/sessions/${session}/devices`, { token, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] } });
    expect(device.status).toBe(201);
    const serial = await waitFor('in_use', async () => {
      const d = (await call(api, 'GET', `/sessions/${session}/devices/${device.body.id}`, { token })).body;
      return d.status === 'in_use' ? (d.info.serial as string) : undefined;
    });
    const chat = (await call(api, 'POST', `/sessions/${session}/chats`, { token, body: { title: 'stop', metadata: { deviceId: serial } } })).body.id;
    // The demo's assistant (no model: the command interpreter) on a request of many steps: once the phone is gone, each
    // fails at once, and the interpreter would end the message completed if it were not stopped first.
    const text = Array.from({ length: 300 }, () => 'tap 10 10').join(' then ');
    const posted = await call(api, 'POST', `/sessions/${session}/chats/${chat}/messages`, { token, body: { text } });
    expect(posted.status).toBe(202);
    const message = posted.body.id;
    await waitFor('the taps under way', async () =>
      (await call(api, 'GET', `/sessions/${session}/chats/${chat}/messages/${message}/tool-calls`, { token })).body.data?.length > 2);

    serve.child.kill('SIGTERM');
    expect((await serve.exited).code).toBe(0);

    serve = await startServeProcess({ BENCHTOP_DATA_DIR: dir, BENCHTOP_OWNER_EMAIL: owner.email, BENCHTOP_OWNER_PASSWORD: owner.password });
    const again = (await call(serve.api, 'POST', '/auth/login', { body: owner })).body.token;
    const stored = await call(serve.api, 'GET', `/sessions/${session}/chats/${chat}/messages/${message}`, { token: again });
    expect(stored.status).toBe(200);
    expect(stored.body.status).toBe('failed');
    expect(stored.body.error?.code).toBe('engine_stopped');
    serve.child.kill('SIGTERM');
    await serve.exited;
  });
});

describe.skipIf(!hasAdb)('engine.stop({ beforeFleetStops })', () => {
  it('runs the hook (where demo phones detach) only after every running message has ended failed', async () => {
    const lab = await startLab([{}]);
    try {
      const c = client(lab.engine.api);
      const token = await c.login();
      const session = (await c.call('POST', '/sessions', { token })).body.id;
      const device = await c.call('POST', `/sessions/${session}/devices`, { token, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] } });
      await waitFor('in_use', async () => (await c.call('GET', `/sessions/${session}/devices/${device.body.id}`, { token })).body.status === 'in_use');
      const chat = (await c.call('POST', `/sessions/${session}/chats`, { token, body: { metadata: { deviceId: lab.serials[0] } } })).body.id;
      const text = Array.from({ length: 300 }, () => 'tap 10 10').join(' then ');
      const message = (await c.call('POST', `/sessions/${session}/chats/${chat}/messages`, { token, body: { text } })).body.id;
      const path = `/sessions/${session}/chats/${chat}/messages/${message}`;
      await waitFor('a tap under way', async () => (await c.call('GET', `${path}/tool-calls`, { token })).body.data?.length > 0);

      let atDetach: string | undefined;
      await lab.engine.engine.stop({
        beforeFleetStops: async () => {
          // The API still answers here: only the chats have stopped.
          atDetach = (await c.call('GET', path, { token })).body.status;
          await lab.unplug(lab.serials[0]!);
        },
      });
      expect(atDetach).toBe('failed');
    } finally {
      await lab.stop();
    }
  });
});
