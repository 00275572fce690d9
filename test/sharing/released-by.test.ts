import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

/**
 * Who released a phone is recorded and shown as `releasedBy`: the member who did it (by REST with their token or an
 * API key, by ending the session), null when the lab did (a member removed, idle release, a lost device), and absent
 * while the phone is held. A teammate's release names the teammate, not the holder.
 */

const hasAdb = adbOrSkip();
const PHONES = ['Pixel 8', 'Pixel 7', 'Pixel 6'];

describe.skipIf(!hasAdb)('releasedBy: the member who released a phone, or null for the lab', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let ownerId: string;
  let team: string;
  let member: { token: string; id: string; key: string };

  beforeAll(async () => {
    lab = await startLab(PHONES.map((model) => ({ model, osVersion: '14' })), { deviceConcurrencyQuota: 6 });
    c = client(lab.engine.api);
    owner = await c.login();
    ownerId = (await c.call('GET', '/me', { token: owner })).body.id;
    team = await c.createOrganization(owner, 'Mobile team');
    const signedUp = await c.signup('teammate@lab.test');
    await c.addMember(owner, team, signedUp.token, 'teammate@lab.test', 'readwrite');
    member = { token: signedUp.token, id: signedUp.user.id, key: await c.createKey(signedUp.token, team) };
    await waitFor('every phone in the fleet', async () => {
      const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ name: string; state: string }>;
      return PHONES.every((name) => fleet.some((d) => d.name === name && d.state === 'device'));
    }, 30_000);
  }, 60_000);
  afterAll(() => lab?.stop());

  const device = async (token: string, session: string, id: string, org?: string) =>
    (await c.call('GET', `/sessions/${session}/devices/${id}`, { token, org })).body;

  it('names the member who released it, by token, by API key or by ending the session; absent while held', async () => {
    const held = await allocateInUse(c, owner, 'Pixel 8');
    expect(await device(owner, held.session, held.id)).not.toHaveProperty('releasedBy');
    const released = await c.call('POST', `/sessions/${held.session}/devices/${held.serial}/release`, { token: owner });
    expect(released.status).toBe(202);
    expect(released.body).toMatchObject({ status: 'released', releasedBy: ownerId });
    expect(released.body).not.toHaveProperty('releaseReason');
    // Releasing again changes nothing, and the session's list says the same.
    expect((await c.call('POST', `/sessions/${held.session}/devices/${held.serial}/release`, { token: owner })).body.releasedBy).toBe(ownerId);
    const listed = (await c.call('GET', `/sessions/${held.session}`, { token: owner })).body.devices[0];
    expect(listed.releasedBy).toBe(ownerId);

    // The owner's phone in the team, given back by the teammate with their API key: the teammate released it.
    const teamHeld = await allocateInUse({ ...c, call: (m, p, o) => c.call(m, p, { ...o, org: team }) }, owner, 'Pixel 7');
    const byKey = await c.call('POST', `/sessions/${teamHeld.session}/devices/${teamHeld.serial}/release`, { token: member.key });
    expect(byKey.status).toBe(202);
    expect(byKey.body.releasedBy).toBe(member.id);

    // Ending a session releases what it holds, in the name of whoever ended it.
    const ended = await allocateInUse({ ...c, call: (m, p, o) => c.call(m, p, { ...o, org: team }) }, member.token, 'Pixel 6');
    const end = await c.call('POST', `/sessions/${ended.session}/end`, { token: owner, org: team });
    expect(end.status).toBe(202);
    const after = await waitFor('the session\'s phone released', async () => {
      const d = await device(owner, ended.session, ended.id, team);
      return d.status === 'released' ? d : undefined;
    });
    expect(after.releasedBy).toBe(ownerId);
  }, 60_000);

  it('is null when the lab released it: a member removed from the organization', async () => {
    const held = await allocateInUse({ ...c, call: (m, p, o) => c.call(m, p, { ...o, org: team }) }, member.token, 'Pixel 8');
    expect((await c.call('DELETE', `/organizations/${team}/members/${member.id}`, { token: owner })).status).toBe(204);
    const released = await waitFor('the removed member\'s phone released', async () => {
      const d = await device(owner, held.session, held.id, team);
      return d.status === 'released' ? d : undefined;
    });
    expect(released.releaseReason).toBe('member_removed');
    expect(released).toHaveProperty('releasedBy', null);
  }, 30_000);

  it('the OpenAPI document describes releasedBy on a session\'s device', async () => {
    const doc = (await c.call('GET', '/openapi.json')).body;
    const json = JSON.stringify(doc);
    expect(json).toContain('"releasedBy"');
    expect(json).toMatch(/"releasedBy":\{[^}]*"format":"uuid"/);
  });
});
