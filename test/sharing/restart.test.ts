import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const hasAdb = adbOrSkip();

/**
 * Nothing of sharing is lost to a SIGKILL: an idle deadline keeps its time (it does not start over at the restart),
 * a warning that was due is still shown, a reservation is still in the calendar and still ends another
 * organization's allocation at its start.
 */
describe.skipIf(!hasAdb)('sharing across SIGKILL and restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-sharing-kill-'));
  const running: ServeProcess[] = [];
  const phones: SimulatedPhone[] = [];
  let adb: AdbServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    adb = await startAdbServer();
    for (const model of ['Pixel 8', 'Pixel 7']) {
      const phone = new SimulatedPhone({ model, osVersion: '14' });
      phones.push(phone);
      await connectToAdb(await phone.start(), adb.port);
    }
    env = {
      BENCHTOP_DATA_DIR: dir,
      BENCHTOP_OWNER_EMAIL: 'kill@lab.test',
      BENCHTOP_OWNER_PASSWORD: 'password-1',
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
      BENCHTOP_DEVICE_IDLE_MIN_SECONDS: '1',
      BENCHTOP_IDLE_WARNING_SECONDS: '6',
      BENCHTOP_RESERVATION_WARNING_SECONDS: '6',
      BENCHTOP_ACTIVITY_FLUSH_SECONDS: '1',
      BENCHTOP_SHARING_CHECK_SECONDS: '1',
    };
  }, 60_000);
  afterAll(async () => {
    for (const p of running) p.child.kill('SIGKILL');
    for (const p of phones) await p.stop();
    await adb?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = async () => {
    const p = await startServeProcess(env);
    running.push(p);
    return p;
  };
  const android = (name: string) => [
    { attribute: 'platform', operator: 'EQUALS', value: 'android' },
    { attribute: 'name', operator: 'EQUALS', value: name },
  ];

  it('idle deadlines, due warnings and reservations survive SIGKILL', async () => {
    const first = await serve();
    const api = first.api;
    const owner = (await call(api, 'POST', '/auth/login', { body: { email: 'kill@lab.test', password: 'password-1' } })).body.token as string;
    const b = (await call(api, 'POST', '/auth/signup', { body: { email: 'b@kill.test', password: 'password-123' } })).body.token as string;
    expect((await call(api, 'PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: 14 } })).status).toBe(200);

    const held = async (token: string, name: string) => {
      const s = (await call(api, 'POST', '/sessions', { token })).body.id as string;
      const d = (await call(api, 'POST', `/sessions/${s}/devices`, { token, body: { filters: android(name) } })).body;
      await waitFor(`${name} in_use`, async () => (await call(api, 'GET', `/sessions/${s}/devices/${d.id}`, { token })).body.status === 'in_use');
      return { s, id: d.id as string };
    };
    const mine = await held(owner, 'Pixel 8');
    const theirs = await held(b, 'Pixel 7');
    // Timeline from the booking, both phones held just before it (idle 14 s, both warnings 6 s ahead):
    //   +5 s  B's reservation warning (its window starts at +11 s, before B's own idle deadline at about +14 s)
    //   +8 s  the owner's idle warning (its deadline at about +14 s); the engine is killed right after it
    //  +11 s  B's window starts, after the restart, which then releases B for the reservation
    // Each warning is awaited while it stands: B's lasts until its window starts (so it is awaited first), the owner's
    // until its deadline. A busy machine only moves the kill later; the checks after it hold either way.
    const windowStart = Date.now() + 11_000;
    const booked = await call(api, 'POST', '/reservations', {
      token: owner,
      body: { filters: android('Pixel 7'), startsAt: new Date(windowStart).toISOString(), endsAt: new Date(windowStart + 3600_000).toISOString(), title: 'nightly' },
    });
    expect(booked.status).toBe(201);

    // B's warning comes from the release check's own tick (once a second).
    const bWarned = await waitFor("B's reservation warning", async () => {
      const d = (await call(api, 'GET', `/sessions/${theirs.s}/devices/${theirs.id}`, { token: b })).body;
      return d.releaseWarning ? d : undefined;
    });
    expect(bWarned.releaseWarning).toEqual({ reason: 'reserved', releaseAt: new Date(windowStart).toISOString() });

    // The owner's phone is warned of its idle release; the warning and the deadline are written at once.
    const warned = await waitFor('the idle warning', async () => {
      const d = (await call(api, 'GET', `/sessions/${mine.s}/devices/${mine.id}`, { token: owner })).body;
      return d.releaseWarning ? d : undefined;
    });
    expect(warned.releaseWarning.reason).toBe('idle_timeout');
    const deadline = Date.parse(warned.idleReleaseAt);
    expect(warned.releaseWarning.releaseAt).toBe(warned.idleReleaseAt);

    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const second = await serve();
    const restartedAt = Date.now();
    const api2 = second.api;
    const owner2 = (await call(api2, 'POST', '/auth/login', { body: { email: 'kill@lab.test', password: 'password-1' } })).body.token as string;
    const b2 = (await call(api2, 'POST', '/auth/login', { body: { email: 'b@kill.test', password: 'password-123' } })).body.token as string;

    // The warning due before the kill is there at once, with the same deadline: idle time did not start over.
    // (A loaded machine can take longer to restart than the warning's 6 s: the phone is then already released, at its
    // deadline as checked below, which is what surviving the kill means too.)
    const after = (await call(api2, 'GET', `/sessions/${mine.s}/devices/${mine.id}`, { token: owner2 })).body;
    if (after.status === 'released') expect(restartedAt).toBeGreaterThan(deadline);
    else {
      expect(after.status).toBe('in_use');
      expect(after.releaseWarning).toEqual(warned.releaseWarning);
      expect(Date.parse(after.idleReleaseAt)).toBe(deadline);
    }
    const calendar = (await call(api2, 'GET', '/reservations', { token: owner2 })).body.data;
    expect(calendar).toEqual([expect.objectContaining({ id: booked.body.id, title: 'nightly', own: true })]);

    const idled = await waitFor('the idle release', async () => {
      const d = (await call(api2, 'GET', `/sessions/${mine.s}/devices/${mine.id}`, { token: owner2 })).body;
      return d.status === 'released' ? d : undefined;
    }, 15_000);
    expect(idled.releaseReason).toBe('idle_timeout');
    // Released at its deadline as it was before the kill (within the 1 s check interval and the restart's read of the
    // fleet), or as soon as the engine was back when the deadline fell while it was down.
    expect(Date.parse(idled.releasedAt) - deadline).toBeGreaterThanOrEqual(0);
    expect(Date.parse(idled.releasedAt) - Math.max(deadline, restartedAt)).toBeLessThan(3000);

    const ended = await waitFor("the window's start", async () => {
      const d = (await call(api2, 'GET', `/sessions/${theirs.s}/devices/${theirs.id}`, { token: b2 })).body;
      return d.status === 'released' ? d : undefined;
    }, 15_000);
    expect(ended.releaseReason).toBe('reserved');
  }, 90_000);
});
