import Database from 'better-sqlite3';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/lab.js';
import { sshdOrSkip, startMacLab, type MacLab } from '../support/mac-lab.js';

const hasSshd = sshdOrSkip();

describe.skipIf(!hasSshd)('restart reconciliation with tart list', () => {
  let lab: MacLab;

  beforeAll(async () => {
    lab = await startMacLab([{ name: 'mac-pro' }]);
  });
  afterAll(() => lab?.stop());

  it('resumes provisioning cut short, keeps running VMs, fails stopped ones and finishes teardown', async () => {
    const mac = lab.macs[0]!;
    const session = await lab.newSession();
    const kept = await lab.create(session);
    await lab.untilStatus(session, kept.id, 'ready');

    // The engine stops while the second instance waits for its VM's address.
    mac.holdIp(true);
    const cut = await lab.create(session);
    await waitFor('provisioning to reach tart ip', () => mac.calls().includes(`ip --wait 60 benchtop-${cut.id}`));
    await lab.restart();
    expect((await lab.c.call('GET', `/sessions/${session}/instances/${cut.id}`, { token: lab.owner })).body.status).toBe('provisioning');
    mac.holdIp(false);
    // tart list shows its VM running, so provisioning picks up at tart ip: no second clone.
    const resumed = await lab.untilStatus(session, cut.id, 'ready');
    expect(resumed.readyAt).not.toBeNull();
    expect(mac.calls().filter((line) => line.startsWith('clone ') && line.endsWith(cut.id))).toHaveLength(1);
    expect((await lab.c.call('GET', `/sessions/${session}/instances/${kept.id}`, { token: lab.owner })).body.status).toBe('ready');

    // While the engine is down, one VM stops on the Mac, and the other's release was recorded just before the
    // stop, with its teardown still to do.
    await lab.engine.engine.stop();
    mac.tart('stop', `benchtop-${kept.id}`);
    const db = new Database(join(lab.engine.dataDir, 'benchtop.db'));
    const releasedAt = Date.now();
    db.prepare("UPDATE instances SET status = 'released', released_at = ? WHERE id = ?").run(releasedAt, cut.id);
    db.prepare('UPDATE usage_ledger SET ended_at = ? WHERE subject_id = ?').run(releasedAt, cut.id);
    db.close();
    expect(mac.vms().find((vm) => vm.name === `benchtop-${cut.id}`)?.running).toBe(true);

    const before = mac.calls().length;
    await lab.restart();
    const lost = await lab.untilStatus(session, kept.id, 'failed');
    expect(lost.statusMessage).toBe(`Its VM benchtop-${kept.id} was not running on mac-pro when Benchtop started again.`);
    await waitFor('both VMs to be deleted', () => mac.vms().length === 0);
    // What the engine ran on the Mac since it started again (its `tart list` polls go on between them).
    expect(mac.calls().slice(before)).toEqual(expect.arrayContaining([`stop benchtop-${cut.id}`, `delete benchtop-${cut.id}`, `delete benchtop-${kept.id}`]));
    await waitFor('the host to be free', async () => (await lab.c.call('GET', '/fleet/hosts', { token: lab.owner })).body.data[0].freeSlots === 2);
    const released = (await lab.c.call('GET', `/sessions/${session}/instances/${cut.id}`, { token: lab.owner })).body;
    expect(released).toMatchObject({ status: 'released', releasedAt: new Date(releasedAt).toISOString() });
  });

  it('keeps the host\'s credentials and pinned host key across restarts', async () => {
    const hosts = await lab.c.call('GET', '/lab/hosts', { token: lab.owner });
    expect(hosts.body.data[0]).toMatchObject({ name: 'mac-pro', health: 'up', auth: 'privateKey', vmAuth: 'privateKey' });
    expect(hosts.body.data[0].hostKeySha256).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
    const session = await lab.newSession();
    const instance = await lab.create(session);
    await lab.untilStatus(session, instance.id, 'ready');
    await lab.c.call('POST', `/sessions/${session}/instances/${instance.id}/release`, { token: lab.owner });
  });
});
