import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_PLANS } from '../../src/main/engine/config.js';
import { errorCode, useEngine } from '../support/engine.js';

const lab = useEngine();

/** Writes ledger rows the way the device and instance services do, through a second connection to the same file. */
function ledger(org: string, rows: Array<{ resource: 'devices' | 'instances'; startedAt: number; endedAt: number | null }>) {
  const db = new Database(join(lab.t.dataDir, 'benchtop.db'));
  try {
    const insert = db.prepare('INSERT INTO usage_ledger (organization_id, resource, subject_id, started_at, ended_at) VALUES (?, ?, ?, ?, ?)');
    for (const r of rows) insert.run(org, r.resource, crypto.randomUUID(), r.startedAt, r.endedAt);
  } finally {
    db.close();
  }
}

describe('GET /billing/balance', () => {
  it('200 on hobby: no subscription, the full allowance, the current calendar month', async () => {
    const u = await lab.c.signup('hobby@billing.test');
    const r = await lab.c.call('GET', '/billing/balance', { token: u.token });
    expect(r.status).toBe(200);
    const now = new Date();
    expect(r.body).toEqual({
      plan: 'hobby',
      period: {
        start: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
        end: new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
      },
      overageCapUsd: DEFAULT_PLANS.hobby!.overageCapUsd,
      subscription: null,
      secondsRemaining: { devices: DEFAULT_PLANS.hobby!.devices, instances: DEFAULT_PLANS.hobby!.instances },
    });
  });

  it('reflects the usage ledger live, counting running usage up to now and only this period', async () => {
    const u = await lab.c.signup('metered@billing.test');
    const now = Date.now();
    const periodStart = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), 1);
    ledger(u.personalOrgId, [
      { resource: 'devices', startedAt: now - 600_000, endedAt: now - 300_000 }, // 300 s
      { resource: 'devices', startedAt: periodStart - 1_000_000, endedAt: periodStart + 100_000 }, // 100 s in this period
      { resource: 'instances', startedAt: now - 60_000, endedAt: null }, // running: about 60 s so far
    ]);
    const first = await lab.c.call('GET', '/billing/balance', { token: u.token });
    expect(first.body.secondsRemaining.devices).toBe(DEFAULT_PLANS.hobby!.devices - 400);
    const usedInstances = DEFAULT_PLANS.hobby!.instances - first.body.secondsRemaining.instances;
    expect(usedInstances).toBeGreaterThanOrEqual(60);
    expect(usedInstances).toBeLessThan(65);
    lab.t.clock.offsetMs = 30_000;
    try {
      const later = await lab.c.call('GET', '/billing/balance', { token: u.token });
      expect(first.body.secondsRemaining.instances - later.body.secondsRemaining.instances).toBeGreaterThanOrEqual(29);
      expect(later.body.secondsRemaining.devices).toBe(first.body.secondsRemaining.devices);
    } finally {
      lab.t.clock.offsetMs = 0;
    }
  });

  it('on a paid plan shows the subscription, and secondsRemaining may go negative (overage)', async () => {
    const u = await lab.c.signup('paid@billing.test');
    const set = await lab.c.call('PUT', '/billing/plan', { token: u.token, body: { plan: 'pro' } });
    expect(set.status).toBe(200);
    expect(set.body.subscription).toMatchObject({ status: 'active', cancelAtPeriodEnd: false });
    expect(set.body.overageCapUsd).toBe(DEFAULT_PLANS.pro!.overageCapUsd);
    const now = Date.now();
    ledger(u.personalOrgId, [{ resource: 'devices', startedAt: now - (DEFAULT_PLANS.pro!.devices + 50) * 1000, endedAt: now }]);
    const r = await lab.c.call('GET', '/billing/balance', { token: u.token });
    // the interval may begin before this period; whatever falls in it counts
    const start = Date.parse(r.body.period.start);
    const expected = DEFAULT_PLANS.pro!.devices - Math.floor((now - Math.max(start, now - (DEFAULT_PLANS.pro!.devices + 50) * 1000)) / 1000);
    expect(r.body.secondsRemaining.devices).toBe(expected);
    const cancel = await lab.c.call('PUT', '/billing/plan', { token: u.token, body: { plan: 'pro', cancelAtPeriodEnd: true } });
    expect(cancel.body.subscription.cancelAtPeriodEnd).toBe(true);
  });

  it('is visible to every member; 401 without credentials; 403 for a non-member organization', async () => {
    const org = await lab.c.createOrganization(lab.owner, 'Billing lab');
    const reader = await lab.c.signup('reader@billing.test');
    await lab.c.addMember(lab.owner, org, reader.token, 'reader@billing.test', 'readonly');
    expect((await lab.c.call('GET', '/billing/balance', { token: reader.token, org })).status).toBe(200);
    expect((await lab.c.call('GET', '/billing/balance')).status).toBe(401);
    const stranger = await lab.c.signup('stranger@billing.test');
    const r = await lab.c.call('GET', '/billing/balance', { token: stranger.token, org });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('not_a_member');
  });
});

describe('PUT /billing/plan (extension)', () => {
  it('400 for an unknown plan or a bad body; 403 for a non-admin', async () => {
    const u = await lab.c.signup('planner@billing.test');
    const unknown = await lab.c.call('PUT', '/billing/plan', { token: u.token, body: { plan: 'platinum' } });
    expect(unknown.status).toBe(400);
    expect(errorCode(unknown)).toBe('unknown_plan');
    expect((await lab.c.call('PUT', '/billing/plan', { token: u.token, body: { plan: 1 } })).status).toBe(400);
    const org = await lab.c.createOrganization(lab.owner, 'Plan lab');
    const writer = await lab.c.signup('writer@billing.test');
    await lab.c.addMember(lab.owner, org, writer.token, 'writer@billing.test', 'readwrite');
    const r = await lab.c.call('PUT', '/billing/plan', { token: writer.token, org, body: { plan: 'pro' } });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('insufficient_role');
  });
});
