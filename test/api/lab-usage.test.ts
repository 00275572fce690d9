import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, OWNER_EMAIL } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

/** GET /lab/usage: every organization's device time on each phone, for the lab owner alone. */
describe.skipIf(!hasAdb)('lab-wide usage', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 8' }]);
    c = client(lab.engine.api);
    owner = await c.login();
  }, 60_000);
  afterAll(async () => lab?.stop());

  it('sums each organization\'s time on each phone to the millisecond, and is refused to anyone but the lab owner', async () => {
    const other = await c.signup('other@usage.test');
    const serial = (await waitFor('the phone', async () => (await c.call('GET', '/fleet/devices', { token: owner })).body.data[0])).serial as string;
    const clock = lab.engine.clock;
    const t0 = Date.now();
    let now = t0;
    clock.frozenAt = now;
    try {
      // The owner's Personal organization holds the phone 60 s, then the other account's 30.5 s.
      for (const [token, ms] of [[owner, 60_000], [other.token, 30_500]] as const) {
        const session = (await c.call('POST', '/sessions', { token })).body.id;
        const a = (await c.call('POST', `/sessions/${session}/devices`, { token, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] } })).body;
        now += ms;
        clock.frozenAt = now;
        expect((await c.call('POST', `/sessions/${session}/devices/${a.id}/release`, { token })).status).toBe(202);
        await waitFor('the phone free', async () => !(await c.call('GET', '/fleet/devices', { token })).body.data[0].held);
        now += 1000;
        clock.frozenAt = now;
      }
      const from = new Date(t0 - 1000).toISOString();
      const r = await c.call('GET', `/lab/usage?from=${from}`, { token: owner });
      expect(r.status).toBe(200);
      expect(r.body.from).toBe(from);
      expect(r.body.data.map((row: Record<string, unknown>) => [row.organization, row.serial, row.name, row.seconds, row.allocations]).sort()).toEqual([
        ['Personal (other@usage.test)', serial, 'Pixel 8', 30.5, 1],
        [`Personal (${OWNER_EMAIL})`, serial, 'Pixel 8', 60, 1],
      ]);
      expect(new Set(r.body.data.map((row: { organizationId: string }) => row.organizationId)).size).toBe(2);
    } finally {
      clock.frozenAt = undefined;
    }
    const refused = await c.call('GET', '/lab/usage', { token: other.token });
    expect([refused.status, errorCode(refused)]).toEqual([403, 'not_lab_owner']);
    expect((await c.call('GET', '/lab/usage')).status).toBe(401);
    const bad = await c.call('GET', '/lab/usage?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z', { token: owner });
    expect([bad.status, errorCode(bad)]).toEqual([400, 'window_inverted']);
  });
});
