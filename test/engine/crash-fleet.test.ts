import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { buildApk } from '../support/app-fixtures.js';
import { call, client } from '../support/engine.js';
import { adbOrSkip, uploadReadyApp, waitFor } from '../support/lab.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

/**
 * Crashes of a real engine process (SIGKILL) with phones held and queued: what the restarted engine makes of the
 * allocations a crash left half done (issue 22.3 and 22.4).
 */
const hasAdb = adbOrSkip();

const OWNER = { email: 'crash-fleet@lab.test', password: 'password-1' };
const ANDROID = [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }];
let adb: AdbServer;
const running: ServeProcess[] = [];
const dirs: string[] = [];
const phones: SimulatedPhone[] = [];

/** Each scenario has an adb server of its own, so that one's phones are no part of the other's fleet. */
function ownAdbServer(): void {
  beforeAll(async () => {
    adb = await startAdbServer();
  });
  afterAll(async () => {
    for (const p of running.splice(0)) p.child.kill('SIGKILL');
    for (const phone of phones.splice(0)) await phone.stop();
    await adb.stop();
  });
}
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

function engineEnv(dir: string, more: Record<string, string> = {}): Record<string, string> {
  return {
    ...(adb.env as Record<string, string>),
    BENCHTOP_DATA_DIR: dir,
    BENCHTOP_OWNER_EMAIL: OWNER.email,
    BENCHTOP_OWNER_PASSWORD: OWNER.password,
    BENCHTOP_ADB: 'on',
    BENCHTOP_ADB_PORT: String(adb.port),
    ...more,
  };
}

async function serve(env: Record<string, string>): Promise<ServeProcess> {
  const p = await startServeProcess(env);
  running.push(p);
  return p;
}

async function killed(p: ServeProcess): Promise<void> {
  p.child.kill('SIGKILL');
  expect((await p.exited).signal).toBe('SIGKILL');
}

/** Simulated phones plugged into the test's adb server; a restarted lab sees new serials, as after a demo's restart. */
async function plug(count: number, options: { installMs?: number } = {}): Promise<string[]> {
  const serials: string[] = [];
  for (let i = 0; i < count; i++) {
    const phone = new SimulatedPhone({ model: 'Crash Pixel', installMs: options.installMs ?? 0 });
    phones.push(phone);
    serials.push(await connectToAdb(await phone.start(), adb.port));
  }
  return serials;
}

const statusOf = async (api: string, token: string, a: { session: string; id: string }) =>
  (await call(api, 'GET', `/sessions/${a.session}/devices/${a.id}`, { token })).body.status as string;

describe.skipIf(!hasAdb)('the queue after a crash (issue 22.3)', () => {
  ownAdbServer();
  it('serves the allocations a crash interrupted while provisioning before a later one, first-in, first-out', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtop-crash-queue-'));
    dirs.push(dir);
    // Installs take long enough that the four handed-over phones are all still provisioning at the kill.
    const first = await plug(4, { installMs: 20_000 });
    let engine = await serve(engineEnv(dir));
    const c = client(engine.api);
    const a = (await call(engine.api, 'POST', '/auth/login', { body: OWNER })).body.token as string;
    const b = (await c.signup('org-b@lab.test')).token;
    const app = await uploadReadyApp(c, b, buildApk({ packageName: 'com.example.crashqueue', label: 'Crash queue' }), 'crash-queue.apk');

    const allocate = async (token: string, body: Record<string, unknown>) => {
      const session = (await call(engine.api, 'POST', '/sessions', { token })).body.id as string;
      const r = await call(engine.api, 'POST', `/sessions/${session}/devices`, { token, body });
      expect(r.status).toBe(201);
      return { session, id: r.body.id as string, status: r.body.status as string };
    };
    // Org A holds all four phones, once the fleet (read after the API answers) lists them.
    await waitFor('the four phones in the fleet', async () =>
      ((await call(engine.api, 'GET', '/fleet/devices', { token: a })).body.data as Array<{ state: string }>).filter((d) => d.state === 'device').length === 4);
    const held: Array<{ session: string; id: string }> = [];
    for (let i = 0; i < 4; i++) held.push(await allocate(a, { filters: ANDROID }));
    await waitFor('A holds all four', async () => (await Promise.all(held.map((h) => statusOf(engine.api, a, h)))).every((s) => s === 'in_use'));
    // Org B queues b1..b4 (each installs an app), then A queues a5.
    const queuedB: Array<{ session: string; id: string; status: string }> = [];
    for (let i = 0; i < 4; i++) queuedB.push(await allocate(b, { filters: ANDROID, installApps: [`file:${app}`] }));
    const a5 = await allocate(a, { filters: ANDROID });
    expect([...queuedB, a5].map((q) => q.status)).toEqual(['queued', 'queued', 'queued', 'queued', 'queued']);

    // A lets go: b1..b4 get the phones and are provisioning (installing) when the engine is killed.
    await Promise.all(held.map((h) => call(engine.api, 'POST', `/sessions/${h.session}/devices/${h.id}/release`, { token: a })));
    await waitFor('b1..b4 provisioning', async () => (await Promise.all(queuedB.map((q) => statusOf(engine.api, b, q)))).every((s) => s === 'provisioning'));
    await killed(engine);

    // Those phones never come back (a demo's restart makes new ones); four others are there when the lab restarts.
    for (const serial of first) await adb.run(['disconnect', serial]);
    await plug(4);
    engine = await serve(engineEnv(dir));
    const statuses = async () => [...(await Promise.all(queuedB.map((q) => statusOf(engine.api, b, q)))), await statusOf(engine.api, a, a5)];
    const settled = await waitFor('the four phones in use', async () => {
      const now = await statuses();
      return now.filter((s) => s === 'in_use').length === 4 ? now : undefined;
    }, 20_000);
    expect(settled).toEqual(['in_use', 'in_use', 'in_use', 'in_use', 'queued']);
    await killed(engine);
  });
});

describe.skipIf(!hasAdb)('demo phones after a crash (issue 22.4)', () => {
  ownAdbServer();
  it('a demo phone that will never return is not held on later starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtop-crash-demo-'));
    dirs.push(dir);
    const env = engineEnv(dir, { BENCHTOP_DEMO_PHONES: '2', BENCHTOP_DEVICE_GRACE_SECONDS: '1' });
    let engine = await serve(env);
    let token = (await call(engine.api, 'POST', '/auth/login', { body: OWNER })).body.token as string;
    const held: Array<{ session: string; id: string; serial: string }> = [];
    for (let i = 0; i < 2; i++) {
      const session = (await call(engine.api, 'POST', '/sessions', { token })).body.id as string;
      // At once after the start: the fleet is read just after the API answers, and an allocation made before its
      // first look waits for it rather than hearing that nothing in the lab matches.
      const allocated = await call(engine.api, 'POST', `/sessions/${session}/devices`, { token, body: { filters: ANDROID } });
      expect(allocated.status).toBe(201);
      const id = allocated.body.id as string;
      const serial = await waitFor('in_use', async () => {
        const d = (await call(engine.api, 'GET', `/sessions/${session}/devices/${id}`, { token })).body;
        return d.status === 'in_use' ? (d.info.serial as string) : undefined;
      });
      held.push({ session, id, serial });
    }
    await killed(engine);

    // Demo phones keep their identity in the data dir (as real phones keep their serials); without it, the restarted
    // demo has new phones, and the old ones' allocations are lost once the grace period has passed.
    rmSync(join(dir, 'demo-phones.json'));
    engine = await serve(env);
    token = (await call(engine.api, 'POST', '/auth/login', { body: OWNER })).body.token as string;
    for (const h of held) {
      await waitFor(`${h.id} released`, async () => (await statusOf(engine.api, token, h)) === 'released');
    }
    const stale = async (api: string) => {
      const fleet = (await call(api, 'GET', '/fleet/devices', { token })).body.data as Array<{ serial: string; state: string; held: boolean }>;
      return held.map((h) => fleet.find((d) => d.serial === h.serial)).filter((d) => d !== undefined);
    };
    const now = await stale(engine.api);
    // Gone, or offline where adb still lists the transport of a phone that died with the engine.
    expect(now.map((d) => d.state).filter((state) => state === 'device')).toEqual([]);
    expect(now).toHaveLength(2);
    expect(now.map((d) => d.held)).toEqual([false, false]);
    // The new demo phones are free to take.
    const fresh = (await call(engine.api, 'GET', '/fleet/devices', { token })).body.data.filter((d: { state: string }) => d.state === 'device');
    expect(fresh.map((d: { held: boolean }) => d.held)).toEqual([false, false]);

    // And on the start after that.
    engine.child.kill('SIGTERM');
    await engine.exited;
    engine = await serve(env);
    token = (await call(engine.api, 'POST', '/auth/login', { body: OWNER })).body.token as string;
    expect((await stale(engine.api)).map((d) => d.held)).toEqual([false, false]);
    engine.child.kill('SIGTERM');
    await engine.exited;
  });

  it('a held demo phone comes back under its serial after a crash, still held, when the lab is back within the grace period', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtop-crash-demo-'));
    dirs.push(dir);
    const env = engineEnv(dir, { BENCHTOP_DEMO_PHONES: '1', BENCHTOP_DEVICE_GRACE_SECONDS: '60' });
    let engine = await serve(env);
    let token = (await call(engine.api, 'POST', '/auth/login', { body: OWNER })).body.token as string;
    const session = (await call(engine.api, 'POST', '/sessions', { token })).body.id as string;
    const id = (await call(engine.api, 'POST', `/sessions/${session}/devices`, { token, body: { filters: ANDROID } })).body.id as string;
    const serial = await waitFor('in_use', async () => {
      const d = (await call(engine.api, 'GET', `/sessions/${session}/devices/${id}`, { token })).body;
      return d.status === 'in_use' ? (d.info.serial as string) : undefined;
    });
    await killed(engine);

    engine = await serve(env);
    token = (await call(engine.api, 'POST', '/auth/login', { body: OWNER })).body.token as string;
    // adb kept the crashed run's transport, offline: the phone is back as a device at once, not after adb's own retry.
    await waitFor(`${serial} back as a device`, async () => {
      const fleet = (await call(engine.api, 'GET', '/fleet/devices', { token })).body.data as Array<{ serial: string; state: string }>;
      return fleet.some((d) => d.serial === serial && d.state === 'device');
    }, 5_000);
    expect(await statusOf(engine.api, token, { session, id })).toBe('in_use');
    engine.child.kill('SIGTERM');
    await engine.exited;
  });
});
