import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();
const MINUTE = 60_000;

/**
 * The fleet inventory's `booking`: a phone's reservation that runs now or starts within the hour, which the Fleet
 * screen shows before anyone takes the phone. Its own organization sees it as its own; another sees only that the
 * phone is booked and when, never by whom or what for.
 */
describe.skipIf(!hasAdb)('fleet inventory: bookings', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let a: string;
  let b: string;
  const android = (name: string) => [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: name }];
  const phone = async (token: string, name: string) => (await c.call('GET', '/fleet/devices', { token })).body.data.find((d: { name: string }) => d.name === name);

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 7' }, { model: 'Pixel 8' }]);
    c = client(lab.engine.api);
    a = await c.login();
    b = (await c.signup('b@b.test')).token;
    await waitFor('both phones', async () => (await c.call('GET', '/fleet/devices', { token: a })).body.data.length === 2);
  });
  afterAll(async () => {
    await lab?.stop();
  });

  it('shows a booking starting within the hour to both organizations, as its own only to the booker, and nothing of who or why to the other', async () => {
    const startsAt = new Date(Date.now() + 6 * MINUTE).toISOString();
    const endsAt = new Date(Date.now() + 66 * MINUTE).toISOString();
    const r = await c.call('POST', '/reservations', { token: a, body: { filters: android('Pixel 7'), startsAt, endsAt, title: 'release candidate' } });
    expect(r.status).toBe(201);

    expect((await phone(a, 'Pixel 7')).booking).toEqual({ startsAt, endsAt, own: true });
    const seenByB = await phone(b, 'Pixel 7');
    expect(seenByB.booking).toEqual({ startsAt, endsAt, own: false });
    expect(JSON.stringify(seenByB)).not.toMatch(/release candidate|owner@lab\.test/);
    expect(JSON.stringify(seenByB)).not.toContain(r.body.id);
    expect((await phone(b, 'Pixel 8')).booking).toBeUndefined();
  });

  it('shows a booking that runs now, and none that starts more than an hour ahead', async () => {
    const now = Date.now();
    const running = await c.call('POST', '/reservations', { token: b, body: { filters: android('Pixel 8'), startsAt: new Date(now).toISOString(), endsAt: new Date(now + 30 * MINUTE).toISOString() } });
    expect(running.status).toBe(201);
    expect((await phone(b, 'Pixel 8')).booking).toMatchObject({ own: true, endsAt: new Date(now + 30 * MINUTE).toISOString() });
    expect((await phone(a, 'Pixel 8')).booking).toMatchObject({ own: false });

    const later = await c.call('POST', '/reservations', { token: b, body: { filters: android('Pixel 8'), startsAt: new Date(now + 90 * MINUTE).toISOString(), endsAt: new Date(now + 120 * MINUTE).toISOString() } });
    expect(later.status).toBe(201);
    await c.call('DELETE', `/reservations/${running.body.id}`, { token: b });
    expect((await phone(b, 'Pixel 8')).booking).toBeUndefined();
  });
});
