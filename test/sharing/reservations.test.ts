import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

/**
 * Reservations and usage through the API, with two organizations sharing two phones that both match "android":
 * A books one; B is refused it during the window but gets the other; B's earlier allocation of it ends at the
 * window's start as `reserved` after a warning; B sees only busy slots. Then who used what, to the millisecond.
 */
describe.skipIf(!hasAdb)('reservations and usage', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  /** Org A: the owner (admin, Personal) and a readwrite member. */
  let a: string;
  let orgA: string;
  let aMember: string;
  /** Org B: another account's Personal organization. */
  let b: string;
  /** The phone A reserves (the one that sorts last, so that A's preference for it shows) and the other. */
  let reserved: { serial: string; name: string };
  let other: { serial: string; name: string };

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 8', osVersion: '14' }, { model: 'Pixel 7', osVersion: '14' }], {
      reservationWarningSeconds: 1,
      sharingCheckSeconds: 0.1,
    });
    c = client(lab.engine.api);
    a = await c.login();
    orgA = (await c.call('GET', '/organizations', { token: a })).body.data[0].id;
    const member = await c.signup('member@a.test');
    await c.addMember(a, orgA, member.token, 'member@a.test', 'readwrite');
    aMember = member.token;
    b = (await c.signup('b@b.test')).token;
    const fleet = await waitFor('both phones', async () => {
      const r = (await c.call('GET', '/fleet/devices', { token: a })).body.data;
      return r.length === 2 ? r : undefined;
    });
    const sorted = [...fleet].sort((x: { serial: string }, y: { serial: string }) => x.serial.localeCompare(y.serial));
    other = { serial: sorted[0].serial, name: sorted[0].name };
    reserved = { serial: sorted[1].serial, name: sorted[1].name };
  }, 60_000);
  afterAll(() => lab?.stop());

  const android = (name?: string) => [
    { attribute: 'platform', operator: 'EQUALS', value: 'android' },
    ...(name ? [{ attribute: 'name', operator: 'EQUALS', value: name }] : []),
  ];
  const at = (ms: number) => new Date(ms).toISOString();
  const session = async (token: string) => (await c.call('POST', '/sessions', { token })).body.id as string;
  const allocate = async (token: string, s: string, name?: string) => {
    const r = await c.call('POST', `/sessions/${s}/devices`, { token, body: { filters: android(name) } });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { id: string; status: string };
  };
  const device = async (token: string, s: string, id: string) => (await c.call('GET', `/sessions/${s}/devices/${id}`, { token })).body;
  const until = (token: string, s: string, id: string, check: (d: any) => boolean, what: string) =>
    waitFor(what, async () => {
      const d = await device(token, s, id);
      return check(d) ? d : undefined;
    });
  const inUse = (token: string, s: string, id: string) => until(token, s, id, (d) => d.status === 'in_use', `${id} in_use`);

  let reservation: string;
  let windowStart: number;
  let bSession: string;
  let bEarlier: string;

  it('refuses bad windows (400), phones that do not match or are booked (409), and readonly callers', async () => {
    const now = Date.now();
    const post = (body: unknown, token = a) => c.call('POST', '/reservations', { token, body });
    const cases: Array<[unknown, number, string]> = [
      [{ filters: android(), startsAt: at(now - 3 * 3600_000), endsAt: at(now - 3600_000) }, 400, 'window_in_past'],
      [{ filters: android(), startsAt: at(now + 3600_000), endsAt: at(now + 1800_000) }, 400, 'window_inverted'],
      [{ filters: android(), startsAt: at(now + 3600_000), endsAt: at(now + 3600_000) }, 400, 'window_inverted'],
      [{ filters: android(), startsAt: at(now + 3600_000), endsAt: at(now + 10 * 3600_000) }, 400, 'window_too_long'],
      [{ filters: android(), startsAt: 'tomorrow', endsAt: at(now + 7200_000) }, 400, 'invalid_request'],
      [{ filters: [], startsAt: at(now + 3600_000), endsAt: at(now + 7200_000) }, 400, 'invalid_filter'],
      [{ filters: android('iPhone 15'), startsAt: at(now + 3600_000), endsAt: at(now + 7200_000) }, 409, 'no_free_slot'],
    ];
    for (const [body, status, code] of cases) {
      const r = await post(body);
      expect([r.status, errorCode(r)], JSON.stringify(body)).toEqual([status, code]);
    }
    // The lab's limit is a setting.
    expect((await c.call('PATCH', '/lab/settings', { token: a, body: { reservationMaxHours: 10 } })).status).toBe(200);
    const long = await post({ filters: android(), startsAt: at(now + 3600_000), endsAt: at(now + 10 * 3600_000) });
    expect(long.status).toBe(201);
    expect((await c.call('DELETE', `/reservations/${long.body.id}`, { token: a })).status).toBe(204);
    await c.call('PATCH', '/lab/settings', { token: a, body: { reservationMaxHours: 8 } });

    // Two windows on the named phone overlap: the second is refused; one that starts as the first ends is not.
    const first = await post({ filters: android(reserved.name), startsAt: at(now + 5 * 3600_000), endsAt: at(now + 6 * 3600_000), title: 'first' });
    expect(first.status).toBe(201);
    const overlapping = await post({ filters: android(reserved.name), startsAt: at(now + 5.5 * 3600_000), endsAt: at(now + 7 * 3600_000) }, b);
    expect([overlapping.status, errorCode(overlapping)]).toEqual([409, 'no_free_slot']);
    // Without the name, the other phone is free for that window.
    const elsewhere = await post({ filters: android(), startsAt: at(now + 5.5 * 3600_000), endsAt: at(now + 7 * 3600_000) }, b);
    expect(elsewhere.body.serial).toBe(other.serial);
    const adjacent = await post({ filters: android(reserved.name), startsAt: at(now + 6 * 3600_000), endsAt: at(now + 7 * 3600_000) }, b);
    expect(adjacent.status).toBe(201);
    for (const [id, token] of [[first.body.id, a], [elsewhere.body.id, b], [adjacent.body.id, b]] as const) {
      expect((await c.call('DELETE', `/reservations/${id}`, { token })).status).toBe(204);
    }
  });

  it("A's reservation warns B's holder, then ends B's allocation at the window's start with `reserved`", async () => {
    bSession = await session(b);
    bEarlier = (await allocate(b, bSession, reserved.name)).id;
    await inUse(b, bSession, bEarlier);

    windowStart = Date.now() + 2500;
    const r = await c.call('POST', '/reservations', { token: a, body: { filters: android(reserved.name), startsAt: at(windowStart), endsAt: at(windowStart + 3600_000), title: 'Release candidate run' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ serial: reserved.serial, name: reserved.name, startsAt: at(windowStart), title: 'Release candidate run' });
    expect(r.body.createdBy).toBeTruthy();
    reservation = r.body.id;

    const warned = await until(b, bSession, bEarlier, (d) => d.releaseWarning !== undefined, 'the warning');
    expect(warned.status).toBe('in_use');
    expect(warned.releaseWarning).toEqual({ reason: 'reserved', releaseAt: at(windowStart) });
    const ended = await until(b, bSession, bEarlier, (d) => d.status === 'released', "the window's start");
    expect(ended.releaseReason).toBe('reserved');
    expect(Date.parse(ended.releasedAt)).toBeGreaterThanOrEqual(windowStart);
  });

  it('during the window A gets the reserved phone first; B gets the other match at once, and only queues for the reserved one', async () => {
    await waitFor('the reserved phone cleaned', async () => {
      const p = (await c.call('GET', '/fleet/devices', { token: a })).body.data.find((x: { serial: string }) => x.serial === reserved.serial);
      return !p.held;
    });
    const aSession = await session(a);
    const mine = await inUse(a, aSession, (await allocate(a, aSession)).id);
    expect(mine.info.serial).toBe(reserved.serial);

    const any = await allocate(b, bSession);
    const got = await inUse(b, bSession, any.id);
    expect(got.info.serial).toBe(other.serial);
    const named = await allocate(b, bSession, reserved.name);
    expect(named.status).toBe('queued');

    // A frees the reserved phone during its window: B still waits for it.
    await c.call('POST', `/sessions/${aSession}/devices/${reserved.serial}/release`, { token: a });
    await new Promise((r) => setTimeout(r, 600));
    expect((await device(b, bSession, named.id)).status).toBe('queued');

    // Cancelling the window frees it for everyone: B's queued allocation gets it.
    await c.call('DELETE', `/reservations/${reservation}`, { token: a });
    const served = await inUse(b, bSession, named.id);
    expect(served.info.serial).toBe(reserved.serial);
    for (const id of [any.id, named.id]) await c.call('POST', `/sessions/${bSession}/devices/${id}/release`, { token: b });
  });

  it('B sees only busy slots of A: no id, title or creator; only the creator or an admin may cancel', async () => {
    const start = Date.now() + 3600_000;
    const mine = await c.call('POST', '/reservations', { token: a, body: { filters: android(), startsAt: at(start), endsAt: at(start + 3600_000), title: 'Secret launch' } });
    expect(mine.status).toBe(201);
    const range = `?from=${encodeURIComponent(at(start - 60_000))}&to=${encodeURIComponent(at(start + 7200_000))}`;
    const seenByA = (await c.call('GET', `/reservations${range}`, { token: a })).body.data;
    expect(seenByA).toEqual([{ serial: mine.body.serial, name: mine.body.name, startsAt: at(start), endsAt: at(start + 3600_000), own: true, id: mine.body.id, title: 'Secret launch', createdBy: mine.body.createdBy }]);
    const seenByB = await c.call('GET', `/reservations${range}`, { token: b });
    expect(seenByB.body.data).toEqual([{ serial: mine.body.serial, name: mine.body.name, startsAt: at(start), endsAt: at(start + 3600_000), own: false }]);
    expect(JSON.stringify(seenByB.body)).not.toMatch(/Secret|createdBy|"id"/);
    const bad = await c.call('GET', `/reservations?from=${encodeURIComponent(at(start))}&to=${encodeURIComponent(at(start - 1))}`, { token: a });
    expect([bad.status, errorCode(bad)]).toEqual([400, 'window_inverted']);

    const byB = await c.call('DELETE', `/reservations/${mine.body.id}`, { token: b });
    expect([byB.status, errorCode(byB)]).toEqual([404, 'reservation_not_found']);
    const byMember = await c.call('DELETE', `/reservations/${mine.body.id}`, { token: aMember, org: orgA });
    expect([byMember.status, errorCode(byMember)]).toEqual([403, 'not_reservation_owner']);
    // The member's own booking: the admin may cancel it.
    const theirs = await c.call('POST', '/reservations', { token: aMember, org: orgA, body: { filters: android(), startsAt: at(start), endsAt: at(start + 600_000) } });
    expect(theirs.status).toBe(201);
    expect((await c.call('DELETE', `/reservations/${theirs.body.id}`, { token: a })).status).toBe(204);
    expect((await c.call('DELETE', `/reservations/${mine.body.id}`, { token: a })).status).toBe(204);
    expect((await c.call('DELETE', `/reservations/${mine.body.id}`, { token: a })).status).toBe(404);
  });

  it('a phone another organization reserved from within the warning time is handed out last; booking prefers a phone nobody holds', async () => {
    await waitFor('both phones free', async () => (await c.call('GET', '/fleet/devices', { token: a })).body.data.every((p: { held: boolean }) => !p.held));
    // The phone that sorts first, reserved by A from in a moment (the warning time is 1 s here).
    const soon = await c.call('POST', '/reservations', { token: a, body: { filters: android(other.name), startsAt: at(Date.now() + 900), endsAt: at(Date.now() + 600_000) } });
    expect(soon.body.serial).toBe(other.serial);
    const s = await session(b);
    const got = await allocate(b, s);
    expect((await inUse(b, s, got.id)).info.serial).toBe(reserved.serial);
    await c.call('DELETE', `/reservations/${soon.body.id}`, { token: a });
    await c.call('POST', `/sessions/${s}/devices/${got.id}/release`, { token: b });

    // Booking picks a phone nobody else holds over one another organization holds (it would be taken from them).
    const held = await allocate(b, s, other.name);
    await inUse(b, s, held.id);
    const booked = await c.call('POST', '/reservations', { token: a, body: { filters: android(), startsAt: at(Date.now() + 3600_000), endsAt: at(Date.now() + 7200_000) } });
    expect(booked.body.serial).toBe(reserved.serial);
    await c.call('DELETE', `/reservations/${booked.body.id}`, { token: a });
    await c.call('POST', `/sessions/${s}/devices/${held.id}/release`, { token: b });
  });

  it('bad input of every kind is a 4xx with the error body, never a 500', async () => {
    const now = Date.now();
    const window = { startsAt: at(now + 3600_000), endsAt: at(now + 7200_000) };
    const posts: unknown[] = [
      {}, [], 'text', { ...window }, { filters: 'android', ...window }, { filters: android(), startsAt: window.startsAt },
      { filters: android(), ...window, title: 'x'.repeat(201) }, { filters: android(), ...window, extra: 1 },
      { filters: [{ attribute: 'platform', operator: 'EQUALS', value: '' }], ...window },
      { filters: android(), startsAt: 12, endsAt: 13 }, { filters: android(), startsAt: '2026-13-45T99:00:00Z', endsAt: window.endsAt },
    ];
    for (const body of posts) {
      const r = await c.call('POST', '/reservations', { token: a, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      errorCode(r);
    }
    const raw = await c.call('POST', '/reservations', { token: a, raw: '{"filters":' });
    expect(raw.status).toBe(400);
    for (const path of ['/reservations?from=yesterday', '/reservations?to=1', '/usage?from=x', '/usage?groupBy=', '/usage?to=2026-02-30T00:00:00Z&from=x']) {
      const r = await c.call('GET', path, { token: a });
      expect(r.status, path).toBe(400);
      errorCode(r);
    }
    for (const [method, path] of [['DELETE', '/reservations/not-a-uuid'], ['POST', `/sessions/not-a-uuid/devices/x/keep`]] as const) {
      // An id that cannot exist is not found, as everywhere in the API.
      const r = await c.call(method, path, { token: a });
      expect(r.status, path).toBe(404);
      errorCode(r);
    }
    const missing = await c.call('DELETE', '/reservations/6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000', { token: a });
    expect([missing.status, errorCode(missing)]).toEqual([404, 'reservation_not_found']);
    const readonly = await c.signup('ro@a.test');
    await c.addMember(a, orgA, readonly.token, 'ro@a.test', 'readonly');
    const refused = await c.call('POST', '/reservations', { token: readonly.token, org: orgA, body: { filters: android(), ...window } });
    expect([refused.status, errorCode(refused)]).toEqual([403, 'insufficient_role']);
    expect((await c.call('GET', '/reservations')).status).toBe(401);
  });

  it('usage sums each allocation from assignment to release, per member and per phone, as JSON and CSV', async () => {
    // A new organization of two members, on a frozen clock so that every time is exact.
    const admin = await c.signup('admin@usage.test');
    const org = await c.createOrganization(admin.token, 'Usage');
    const second = await c.signup('second@usage.test');
    await c.addMember(admin.token, org, second.token, 'second@usage.test', 'readwrite');
    const clock = lab.engine.clock;
    const t0 = Date.now();
    clock.frozenAt = t0;
    try {
      const s = (await c.call('POST', '/sessions', { token: admin.token, org })).body.id;
      const post = (token: string, name: string) => c.call('POST', `/sessions/${s}/devices`, { token, org, body: { filters: android(name) } });
      const release = (token: string, id: string) => c.call('POST', `/sessions/${s}/devices/${id}/release`, { token, org });
      const first = (await post(admin.token, reserved.name)).body;
      // A second apart: allocations of one organization in one millisecond get distinct createdAt (the cursor's rule).
      clock.frozenAt = t0 + 1000;
      const second1 = (await post(second.token, other.name)).body;
      clock.frozenAt = t0 + 90_000;
      const r1 = (await release(admin.token, first.id)).body;
      clock.frozenAt = t0 + 120_500;
      const r2 = (await release(second.token, second1.id)).body;
      await waitFor('phones cleaned', async () => (await c.call('GET', '/fleet/devices', { token: a })).body.data.every((p: { held: boolean }) => !p.held));
      clock.frozenAt = t0 + 200_000;
      const third = (await post(second.token, reserved.name)).body;
      clock.frozenAt = t0 + 210_250;
      // Still held: counted up to now.
      const lifetime = (d: { createdAt: string; releasedAt: string }) => (Date.parse(d.releasedAt) - Date.parse(d.createdAt)) / 1000;
      expect([lifetime(r1), lifetime(r2)]).toEqual([90, 119.5]);

      const window = `from=${encodeURIComponent(at(t0 - 1000))}&to=${encodeURIComponent(at(t0 + 300_000))}`;
      const byMember = await c.call('GET', `/usage?${window}&groupBy=member`, { token: second.token, org });
      expect(byMember.status).toBe(200);
      expect(byMember.body.data).toEqual([
        { key: second.user.id, label: 'second@usage.test', seconds: 119.5 + 10.25, allocations: 2 },
        { key: admin.user.id, label: 'admin@usage.test', seconds: 90, allocations: 1 },
      ]);
      const byDevice = await c.call('GET', `/usage?${window}&groupBy=device`, { token: admin.token, org });
      expect(byDevice.body.data).toEqual([
        { key: other.serial, label: other.name, seconds: 119.5, allocations: 1 },
        { key: reserved.serial, label: reserved.name, seconds: 90 + 10.25, allocations: 2 },
      ]);
      // A window cuts intervals at its edges.
      const clipped = await c.call('GET', `/usage?from=${encodeURIComponent(at(t0 + 60_000))}&to=${encodeURIComponent(at(t0 + 100_000))}&groupBy=device`, { token: admin.token, org });
      expect(clipped.body.data.map((r: { key: string; seconds: number }) => [r.key, r.seconds])).toEqual([[other.serial, 40], [reserved.serial, 30]]);

      const csv = await fetch(`${lab.engine.api}/usage?${window}&groupBy=member`, { headers: { authorization: `Bearer ${admin.token}`, 'x-organization-id': org, accept: 'text/csv' } });
      expect(csv.status).toBe(200);
      expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
      expect(csv.headers.get('content-disposition')).toContain('benchtop-usage-by-member.csv');
      expect(await csv.text()).toBe(`userId,email,seconds,allocations\r\n${second.user.id},second@usage.test,129.75,2\r\n${admin.user.id},admin@usage.test,90,1\r\n`);
      const csvDevices = await fetch(`${lab.engine.api}/usage?${window}&groupBy=device`, { headers: { authorization: `Bearer ${admin.token}`, 'x-organization-id': org, accept: 'text/csv' } });
      expect((await csvDevices.text()).split('\r\n')[0]).toBe('serial,name,seconds,allocations');

      // Another organization's usage is its own: A's report has none of these.
      const ofA = await c.call('GET', `/usage?${window}&groupBy=member`, { token: a });
      expect(ofA.body.data.map((r: { key: string }) => r.key)).not.toContain(second.user.id);
      const bad = await c.call('GET', `/usage?groupBy=team`, { token: a });
      expect(bad.status).toBe(400);
      const inverted = await c.call('GET', `/usage?from=${encodeURIComponent(at(t0))}&to=${encodeURIComponent(at(t0 - 1))}`, { token: a });
      expect([inverted.status, errorCode(inverted)]).toEqual([400, 'window_inverted']);
      await release(second.token, third.id);
    } finally {
      delete clock.frozenAt;
    }
  });
});
