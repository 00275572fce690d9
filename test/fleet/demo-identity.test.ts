import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const hasAdb = adbOrSkip();

interface FleetPhone { serial: string; name: string; platform: string; state: string }

/**
 * `npm run demo` twice on one data dir: the simulated phones are the same phones (serials, UDIDs), as real ones are
 * after a restart of the lab, so what was held before is still held after.
 */
describe.skipIf(!hasAdb)('demo phones keep their identity across restarts of the same data dir', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-demo-identity-'));
  let adb: AdbServer | undefined;
  let serve: ServeProcess | undefined;
  let squatter: Server | undefined;
  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    squatter?.close();
    await adb?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const start = async (env: Record<string, string>) => {
    serve = await startServeProcess(env);
    const token = (await call(serve.api, 'POST', '/auth/login', { body: { email: 'demo@lab.test', password: 'password-1' } })).body.token as string;
    const phones = await waitFor('two demo phones and one demo iPhone attached', async () => {
      const attached = ((await call(serve!.api, 'GET', '/fleet/devices', { token })).body.data as FleetPhone[]).filter((p) => p.state === 'device');
      return attached.length === 3 ? attached : undefined;
    }, 20_000);
    return { token, phones: phones.map((p) => `${p.name} ${p.serial}`).sort() };
  };
  const stop = async () => {
    serve!.child.kill('SIGTERM');
    expect((await serve!.exited).code).toBe(0);
  };

  it('the same serials and UDIDs after a restart; a phone in use before is in use after; a port taken meanwhile is said and replaced', async () => {
    adb = await startAdbServer();
    const env = {
      ...(adb.env as Record<string, string>),
      BENCHTOP_DATA_DIR: dir,
      BENCHTOP_OWNER_EMAIL: 'demo@lab.test',
      BENCHTOP_OWNER_PASSWORD: 'password-1',
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
      BENCHTOP_DEMO_PHONES: '2',
      BENCHTOP_DEMO_IPHONES: '1',
    };
    const first = await start(env);
    expect(first.phones).toHaveLength(3);
    const session = (await call(serve!.api, 'POST', '/sessions', { token: first.token })).body.id;
    const held = await call(serve!.api, 'POST', `/sessions/${session}/devices`, {
      token: first.token,
      body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: 'Pixel 8' }] },
    });
    expect(held.status).toBe(201);
    const device = () => call(serve!.api, 'GET', `/sessions/${session}/devices/${held.body.id}`, { token: first.token });
    await waitFor('Pixel 8 in use', async () => (await device()).body.status === 'in_use');
    // A booking of the Galaxy tomorrow: after the restart it still names its phone.
    const tomorrow = Date.now() + 24 * 3600_000;
    const booked = await call(serve!.api, 'POST', '/reservations', {
      token: first.token,
      body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: 'Galaxy S23' }], startsAt: new Date(tomorrow).toISOString(), endsAt: new Date(tomorrow + 3600_000).toISOString() },
    });
    expect(booked.status).toBe(201);
    await stop();

    const second = await start(env);
    expect(second.phones).toEqual(first.phones);
    const after = await waitFor('Pixel 8 in use again', async () => {
      const d = (await call(serve!.api, 'GET', `/sessions/${session}/devices/${held.body.id}`, { token: second.token })).body;
      return d.status === 'in_use' ? d : undefined;
    });
    expect(after.releaseReason).toBeUndefined();
    expect(`Pixel 8 ${after.info.serial}`).toBe(first.phones.find((p) => p.startsWith('Pixel 8 ')));
    const booking = (await call(serve!.api, 'GET', '/reservations', { token: second.token })).body.data.find((r: { id: string }) => r.id === booked.body.id);
    expect(`${booking.name} ${booking.serial}`).toBe(first.phones.find((p) => p.startsWith('Galaxy S23 ')));
    await stop();

    // Another program took the Galaxy's port while the lab was stopped: the demo says so and takes another.
    const galaxy = first.phones.find((p) => p.startsWith('Galaxy S23 '))!;
    const port = Number(galaxy.split(':').pop());
    squatter = createServer();
    await new Promise<void>((resolve) => squatter!.listen(port, '127.0.0.1', resolve));
    const third = await start(env);
    expect(serve!.output()).toMatch(new RegExp(`Galaxy S23 could not listen on its port ${port} again`));
    const others = (phones: string[]) => phones.filter((p) => !p.startsWith('Galaxy S23 '));
    expect(others(third.phones)).toEqual(others(first.phones));
    expect(third.phones.find((p) => p.startsWith('Galaxy S23 '))).not.toBe(galaxy);
    await stop();
  }, 120_000);
});
