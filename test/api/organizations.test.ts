import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, type CallOptions, type Reply, useEngine } from '../support/engine.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NOT_A_UUID = 'not-a-uuid';
const OVER_1_MIB = 1024 * 1024 + 16;

let db: Database.Database;
let seq = 0;

const lab = useEngine();

beforeAll(() => {
  db = new Database(join(lab.t.dataDir, 'benchtop.db'));
  db.pragma('busy_timeout = 5000');
});
afterAll(() => {
  db?.close();
});

type Account = Awaited<ReturnType<ReturnType<typeof client>['signup']>>;

const newAccount = (who: string): Promise<Account> => lab.c.signup(`${who}-${++seq}@orgs.test`);
const unique = (name: string) => `${name} ${++seq}`;

function expectError(r: Reply, status: number, code?: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  const got = errorCode(r);
  if (code !== undefined) expect(got).toBe(code);
}

async function orgsOf(token: string): Promise<Array<{ id: string; name: string; personal: boolean; role: string; createdAt: string }>> {
  const r = await lab.c.call('GET', '/organizations', { token });
  expect(r.status).toBe(200);
  return r.body.data;
}

/** An organization with an admin and, optionally, one more member of the given role. */
async function orgWith(memberRole?: 'admin' | 'readwrite' | 'readonly') {
  const admin = await newAccount('admin');
  const orgId = await lab.c.createOrganization(admin.token, unique('Team'));
  if (!memberRole) return { admin, orgId };
  const member = await newAccount(memberRole);
  await lab.c.addMember(admin.token, orgId, member.token, member.user.email, memberRole);
  return { admin, orgId, member };
}

/**
 * Bad bodies every body-taking operation refuses with 400 and the error body: malformed JSON, wrong types,
 * missing and extra fields, a body over 1 MiB, a body that is not JSON at all.
 */
function badBodies(field: string, valid: unknown): Array<[string, CallOptions, string]> {
  return [
    ['malformed JSON', { raw: `{"${field}": ` }, 'invalid_json'],
    ['an empty JSON body', { raw: '' }, 'invalid_request'],
    ['JSON null', { raw: 'null' }, 'invalid_request'],
    ['a JSON array', { body: [valid] }, 'invalid_request'],
    ['a JSON string', { body: String(valid) }, 'invalid_request'],
    [`${field} of the wrong type (number)`, { body: { [field]: 123 } }, 'invalid_request'],
    [`${field} of the wrong type (null)`, { body: { [field]: null } }, 'invalid_request'],
    [`${field} of the wrong type (object)`, { body: { [field]: { value: valid } } }, 'invalid_request'],
    [`missing ${field}`, { body: {} }, 'invalid_request'],
    ['an extra field', { body: { [field]: valid, extra: true } }, 'invalid_request'],
    ['a body over 1 MiB', { raw: JSON.stringify({ [field]: 'x'.repeat(OVER_1_MIB) }) }, 'body_too_large'],
    ['a text/plain body', { raw: `${field}=${String(valid)}`, headers: { 'content-type': 'text/plain' } }, 'invalid_request'],
    ['an application/xml body', { raw: `<${field}>${String(valid)}</${field}>`, headers: { 'content-type': 'application/xml' } }, 'unsupported_media_type'],
  ];
}

describe('GET /organizations', () => {
  it('a joined Personal organization names its owner, so that two "Personal" can be told apart; your own names none', async () => {
    const me = await newAccount('joiner');
    const host = await newAccount('host');
    await lab.c.addMember(host.token, host.personalOrgId, me.token, me.user.email, 'readwrite');
    const data = (await lab.c.call('GET', '/organizations', { token: me.token })).body.data as Array<Record<string, unknown>>;
    expect(data.find((o) => o.id === host.personalOrgId)).toMatchObject({ name: 'Personal', personal: true, personalOf: host.user.email });
    expect(data.find((o) => o.id === me.personalOrgId)).not.toHaveProperty('personalOf');
  });

  it('200 lists the caller\'s organizations, Personal first, with the caller\'s role in each', async () => {
    const me = await newAccount('lister');
    const mineName = unique('Mine');
    const mine = await lab.c.createOrganization(me.token, mineName);
    const other = await orgWith();
    await lab.c.addMember(other.admin.token, other.orgId, me.token, me.user.email, 'readonly');

    const r = await lab.c.call('GET', '/organizations', { token: me.token });
    expect(r.status).toBe(200);
    expect(r.body.object).toBe('list');
    expect(r.body).not.toHaveProperty('nextCursor');
    const data = r.body.data as Array<Record<string, unknown>>;
    expect(data.map((o) => o.id)).toEqual([me.personalOrgId, mine, other.orgId]);
    expect(data[0]).toEqual({ id: me.personalOrgId, name: 'Personal', personal: true, role: 'admin', createdAt: expect.stringMatching(ISO_MS) });
    expect(data[1]).toEqual({ id: mine, name: mineName, personal: false, role: 'admin', createdAt: expect.stringMatching(ISO_MS) });
    expect(data[2]).toMatchObject({ id: other.orgId, personal: false, role: 'readonly' });
    // Someone else's organizations are not listed.
    expect(data.some((o) => o.id === other.admin.personalOrgId)).toBe(false);
  });

  it('200 for an API key lists only the organization it is bound to', async () => {
    const { admin, orgId } = await orgWith();
    const key = await lab.c.createKey(admin.token, orgId);
    const r = await lab.c.call('GET', '/organizations', { token: key });
    expect(r.status).toBe(200);
    expect(r.body.data.map((o: { id: string }) => o.id)).toEqual([orgId]);
    expect(r.body.data[0].role).toBe('admin');
  });

  it('401 without credentials or with an invalid token', async () => {
    expectError(await lab.c.call('GET', '/organizations'), 401);
    expectError(await lab.c.call('GET', '/organizations', { token: 'not-a-real-token' }), 401);
    expectError(await lab.c.call('GET', '/organizations', { token: 'mob_not-a-real-key' }), 401);
  });

  it('403 when an API key names another organization in X-Organization-Id', async () => {
    const { admin, orgId } = await orgWith();
    const key = await lab.c.createKey(admin.token, orgId);
    expectError(await lab.c.call('GET', '/organizations', { token: key, org: admin.personalOrgId }), 403, 'wrong_organization');
  });

  it('403 when the caller names an organization they are not a member of', async () => {
    const me = await newAccount('outsider');
    const { orgId } = await orgWith();
    expectError(await lab.c.call('GET', '/organizations', { token: me.token, org: orgId }), 403, 'not_a_member');
    expectError(await lab.c.call('GET', '/organizations', { token: me.token, org: NOT_A_UUID }), 403, 'not_a_member');
    // Naming one of their own organizations is fine.
    const ok = await lab.c.call('GET', '/organizations', { token: me.token, org: me.personalOrgId });
    expect(ok.status).toBe(200);
  });
});

describe('POST /organizations', () => {
  it('201 creates the organization with the caller as its admin and only member', async () => {
    const me = await newAccount('creator');
    const name = unique('Acme Labs');
    const r = await lab.c.call('POST', '/organizations', { token: me.token, body: { name } });
    expect(r.status).toBe(201);
    expect(r.body).toEqual({ id: expect.stringMatching(UUID_RE), name, personal: false, role: 'admin', createdAt: expect.stringMatching(ISO_MS) });
    expect((await orgsOf(me.token)).find((o) => o.id === r.body.id)).toEqual(r.body);

    const members = await lab.c.call('GET', `/organizations/${r.body.id}/members`, { token: me.token });
    expect(members.status).toBe(200);
    expect(members.body.data).toEqual([
      { userId: me.user.id, email: me.user.email, name: expect.any(String), role: 'admin', joinedAt: expect.stringMatching(ISO_MS) },
    ]);
  });

  it('201 with the same name as an organization of someone else', async () => {
    const a = await newAccount('a');
    const b = await newAccount('b');
    const name = unique('Shared Name');
    const first = await lab.c.call('POST', '/organizations', { token: a.token, body: { name } });
    const second = await lab.c.call('POST', '/organizations', { token: b.token, body: { name } });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.body.name).toBe(name);
    expect(second.body.id).not.toBe(first.body.id);
  });

  it.each(['', '   ', '\t\n'])('400 invalid_name for the blank name %j', async (name) => {
    const me = await newAccount('blank');
    expectError(await lab.c.call('POST', '/organizations', { token: me.token, body: { name } }), 400, 'invalid_name');
    expect(await orgsOf(me.token)).toHaveLength(1);
  });

  it.each(['Personal', 'personal', 'PERSONAL', 'pErSoNaL', '  Personal  '])('400 reserved_name for %j', async (name) => {
    const me = await newAccount('reserved');
    expectError(await lab.c.call('POST', '/organizations', { token: me.token, body: { name } }), 400, 'reserved_name');
    expect(await orgsOf(me.token)).toHaveLength(1);
  });

  it('409 duplicate_name for the name of another organization the caller created', async () => {
    const me = await newAccount('dup');
    const name = unique('Widgets');
    await lab.c.createOrganization(me.token, name);
    expectError(await lab.c.call('POST', '/organizations', { token: me.token, body: { name } }), 409, 'duplicate_name');
    expectError(await lab.c.call('POST', '/organizations', { token: me.token, body: { name: name.toUpperCase() } }), 409, 'duplicate_name');
    expect((await orgsOf(me.token)).filter((o) => o.name.toLowerCase() === name.toLowerCase())).toHaveLength(1);
  });

  it('409 duplicate_name for the name of an organization the caller joined', async () => {
    const { admin, orgId } = await orgWith();
    const joined = (await orgsOf(admin.token)).find((o) => o.id === orgId)!.name;
    const me = await newAccount('joiner');
    await lab.c.addMember(admin.token, orgId, me.token, me.user.email, 'readonly');
    expectError(await lab.c.call('POST', '/organizations', { token: me.token, body: { name: joined } }), 409, 'duplicate_name');
  });

  it('401 without credentials', async () => {
    expectError(await lab.c.call('POST', '/organizations', { body: { name: unique('Nobody') } }), 401);
  });

  it.each(badBodies('name', 'Bad Body'))('400 for %s', async (_label, options, code) => {
    const me = await newAccount('badbody');
    const r = await lab.c.call('POST', '/organizations', { token: me.token, ...options });
    expectError(r, 400, code);
    expect(await orgsOf(me.token)).toHaveLength(1);
  });
});

describe('PATCH /organizations/{id}', () => {
  it('200 renames the organization; every member sees the new name', async () => {
    const { admin, orgId, member } = await orgWith('readonly');
    const name = unique('Renamed');
    const r = await lab.c.call('PATCH', `/organizations/${orgId}`, { token: admin.token, body: { name } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ id: orgId, name, personal: false, role: 'admin', createdAt: expect.stringMatching(ISO_MS) });
    expect((await orgsOf(admin.token)).find((o) => o.id === orgId)?.name).toBe(name);
    expect((await orgsOf(member!.token)).find((o) => o.id === orgId)).toMatchObject({ name, role: 'readonly' });
  });

  it('200 keeping its own name, and with the name of an organization the caller is not in', async () => {
    const { admin, orgId } = await orgWith();
    const own = (await orgsOf(admin.token)).find((o) => o.id === orgId)!.name;
    const same = await lab.c.call('PATCH', `/organizations/${orgId}`, { token: admin.token, body: { name: own } });
    expect(same.status).toBe(200);
    expect(same.body.name).toBe(own);

    const stranger = await newAccount('stranger');
    const theirs = unique('Theirs');
    await lab.c.createOrganization(stranger.token, theirs);
    const r = await lab.c.call('PATCH', `/organizations/${orgId}`, { token: admin.token, body: { name: theirs } });
    expect(r.status).toBe(200);
    expect(r.body.name).toBe(theirs);
  });

  it.each(['', '    '])('400 invalid_name for the blank name %j', async (name) => {
    const { admin, orgId } = await orgWith();
    const before = (await orgsOf(admin.token)).find((o) => o.id === orgId)!.name;
    expectError(await lab.c.call('PATCH', `/organizations/${orgId}`, { token: admin.token, body: { name } }), 400, 'invalid_name');
    expect((await orgsOf(admin.token)).find((o) => o.id === orgId)!.name).toBe(before);
  });

  it.each(['Personal', 'personal', 'PERSONAL', ' Personal '])('400 reserved_name for %j', async (name) => {
    const { admin, orgId } = await orgWith();
    expectError(await lab.c.call('PATCH', `/organizations/${orgId}`, { token: admin.token, body: { name } }), 400, 'reserved_name');
  });

  it('409 duplicate_name for the name of another organization the caller belongs to', async () => {
    const { admin, orgId } = await orgWith();
    const otherName = unique('Other');
    await lab.c.createOrganization(admin.token, otherName);
    expectError(await lab.c.call('PATCH', `/organizations/${orgId}`, { token: admin.token, body: { name: otherName } }), 409, 'duplicate_name');
    expectError(
      await lab.c.call('PATCH', `/organizations/${orgId}`, { token: admin.token, body: { name: otherName.toLowerCase() } }),
      409,
      'duplicate_name',
    );
    expect((await orgsOf(admin.token)).find((o) => o.id === orgId)!.name).not.toBe(otherName);
  });

  it('403 personal_organization for the Personal organization', async () => {
    const me = await newAccount('personal');
    const r = await lab.c.call('PATCH', `/organizations/${me.personalOrgId}`, { token: me.token, body: { name: unique('Not Personal') } });
    expectError(r, 403, 'personal_organization');
    expect((await orgsOf(me.token))[0]).toMatchObject({ id: me.personalOrgId, name: 'Personal', personal: true });
  });

  it.each(['readwrite', 'readonly'] as const)('403 insufficient_role for a %s member', async (role) => {
    const { orgId, member } = await orgWith(role);
    const r = await lab.c.call('PATCH', `/organizations/${orgId}`, { token: member!.token, body: { name: unique('Coup') } });
    expectError(r, 403, 'insufficient_role');
  });

  it('403 interactive_only for an API key, even an admin\'s key bound to the organization', async () => {
    const { admin, orgId } = await orgWith();
    const key = await lab.c.createKey(admin.token, orgId);
    const r = await lab.c.call('PATCH', `/organizations/${orgId}`, { token: key, body: { name: unique('By Key') } });
    expectError(r, 403, 'interactive_only');
  });

  it('403 (the declared status nearest to not found) for an organization the caller is not in, or one that does not exist', async () => {
    const { orgId } = await orgWith();
    const me = await newAccount('outsider');
    expectError(await lab.c.call('PATCH', `/organizations/${orgId}`, { token: me.token, body: { name: unique('Mine Now') } }), 403, 'organization_not_found');
    expectError(await lab.c.call('PATCH', `/organizations/${randomUUID()}`, { token: me.token, body: { name: unique('Ghost') } }), 403, 'organization_not_found');
  });

  it('403 (declared; 404 is not) for a non-UUID id', async () => {
    const me = await newAccount('nonuuid');
    expectError(await lab.c.call('PATCH', `/organizations/${NOT_A_UUID}`, { token: me.token, body: { name: unique('X') } }), 403, 'not_found');
  });

  it('401 without credentials', async () => {
    const { orgId } = await orgWith();
    expectError(await lab.c.call('PATCH', `/organizations/${orgId}`, { body: { name: unique('Nobody') } }), 401);
  });

  it.each(badBodies('name', 'Bad Body'))('400 for %s', async (_label, options, code) => {
    const { admin, orgId } = await orgWith();
    const before = (await orgsOf(admin.token)).find((o) => o.id === orgId)!.name;
    expectError(await lab.c.call('PATCH', `/organizations/${orgId}`, { token: admin.token, ...options }), 400, code);
    expect((await orgsOf(admin.token)).find((o) => o.id === orgId)!.name).toBe(before);
  });
});

describe('DELETE /organizations/{id}', () => {
  async function expectGone(token: string, orgId: string) {
    expect((await orgsOf(token)).some((o) => o.id === orgId)).toBe(false);
    expectError(await lab.c.call('GET', `/organizations/${orgId}/members`, { token }), 404, 'organization_not_found');
  }
  async function expectStillThere(token: string, orgId: string) {
    expect((await orgsOf(token)).some((o) => o.id === orgId)).toBe(true);
  }

  it('204 for the admin who is its sole member; the organization is gone', async () => {
    const { admin, orgId } = await orgWith();
    const r = await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token });
    expect(r.status).toBe(204);
    expect(r.body).toBeUndefined();
    await expectGone(admin.token, orgId);
    // A second delete finds nothing: a declared status, not 404 (undeclared here) and not 204.
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token }), 403, 'organization_not_found');
  });

  it('204 after the deletion frees the name for a new organization', async () => {
    const me = await newAccount('reuse');
    const name = unique('Reusable');
    const first = await lab.c.createOrganization(me.token, name);
    expect((await lab.c.call('DELETE', `/organizations/${first}`, { token: me.token })).status).toBe(204);
    const again = await lab.c.call('POST', '/organizations', { token: me.token, body: { name } });
    expect(again.status).toBe(201);
  });

  it('409 not_sole_member while another member remains', async () => {
    const { admin, orgId } = await orgWith('readonly');
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token }), 409, 'not_sole_member');
    await expectStillThere(admin.token, orgId);
  });

  it('409 not_sole_member also when the other member is an admin too', async () => {
    const { admin, orgId, member } = await orgWith('admin');
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token }), 409, 'not_sole_member');
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: member!.token }), 409, 'not_sole_member');
    await expectStillThere(member!.token, orgId);
  });

  it.each(['pro', 'team'])('409 plan_renews while the %s plan renews; 204 once it is set to cancel at period end', async (plan) => {
    const { admin, orgId } = await orgWith();
    const set = await lab.c.call('PUT', '/billing/plan', { token: admin.token, org: orgId, body: { plan } });
    expect(set.status).toBe(200);
    expect(set.body.subscription).toMatchObject({ cancelAtPeriodEnd: false });

    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token }), 409, 'plan_renews');
    await expectStillThere(admin.token, orgId);

    const cancel = await lab.c.call('PUT', '/billing/plan', { token: admin.token, org: orgId, body: { plan, cancelAtPeriodEnd: true } });
    expect(cancel.status).toBe(200);
    expect(cancel.body.subscription).toMatchObject({ cancelAtPeriodEnd: true });

    expect((await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token })).status).toBe(204);
    await expectGone(admin.token, orgId);
  });

  it('204 after a renewing plan goes back to the free hobby plan', async () => {
    const { admin, orgId } = await orgWith();
    expect((await lab.c.call('PUT', '/billing/plan', { token: admin.token, org: orgId, body: { plan: 'pro' } })).status).toBe(200);
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token }), 409, 'plan_renews');
    expect((await lab.c.call('PUT', '/billing/plan', { token: admin.token, org: orgId, body: { plan: 'hobby' } })).status).toBe(200);
    expect((await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token })).status).toBe(204);
  });

  it('409 device_allocated while a device is allocated; 204 once it is released', async () => {
    const { admin, orgId } = await orgWith();
    const sessionId = randomUUID();
    const allocationId = randomUUID();
    const now = Date.now();
    db.prepare('INSERT INTO sessions (id, organization_id, created_by, created_at) VALUES (?, ?, ?, ?)').run(sessionId, orgId, admin.user.id, now);
    db.prepare(
      `INSERT INTO device_allocations (id, session_id, organization_id, status, platform, type, name, os_version, serial, created_at)
       VALUES (?, ?, ?, 'in_use', 'android', 'real', 'Pixel 8', '14', 'SIM-0001', ?)`,
    ).run(allocationId, sessionId, orgId, now);

    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token }), 409, 'device_allocated');
    await expectStillThere(admin.token, orgId);

    db.prepare("UPDATE device_allocations SET status = 'released', released_at = ? WHERE id = ?").run(Date.now(), allocationId);
    expect((await lab.c.call('DELETE', `/organizations/${orgId}`, { token: admin.token })).status).toBe(204);
    await expectGone(admin.token, orgId);
  });

  it('403 personal_organization for the Personal organization', async () => {
    const me = await newAccount('personal');
    expectError(await lab.c.call('DELETE', `/organizations/${me.personalOrgId}`, { token: me.token }), 403, 'personal_organization');
    await expectStillThere(me.token, me.personalOrgId);
  });

  it.each(['readwrite', 'readonly'] as const)('403 insufficient_role for a %s member', async (role) => {
    const { admin, orgId, member } = await orgWith(role);
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: member!.token }), 403, 'insufficient_role');
    await expectStillThere(admin.token, orgId);
  });

  it('403 interactive_only for an API key, even the sole admin\'s key bound to the organization', async () => {
    const { admin, orgId } = await orgWith();
    const key = await lab.c.createKey(admin.token, orgId);
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: key }), 403, 'interactive_only');
    await expectStillThere(admin.token, orgId);
  });

  it('403 (the declared status nearest to not found) for an organization the caller is not in, or one that does not exist', async () => {
    const { admin, orgId } = await orgWith();
    const me = await newAccount('outsider');
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: me.token }), 403, 'organization_not_found');
    expectError(await lab.c.call('DELETE', `/organizations/${randomUUID()}`, { token: me.token }), 403, 'organization_not_found');
    await expectStillThere(admin.token, orgId);
  });

  it('403 (declared; 404 is not) for a non-UUID id', async () => {
    const me = await newAccount('nonuuid');
    expectError(await lab.c.call('DELETE', `/organizations/${NOT_A_UUID}`, { token: me.token }), 403, 'not_found');
  });

  it('401 without credentials', async () => {
    const { admin, orgId } = await orgWith();
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`), 401);
    expectError(await lab.c.call('DELETE', `/organizations/${orgId}`, { token: 'garbage' }), 401);
    await expectStillThere(admin.token, orgId);
  });
});

describe('GET /organizations/{id}/members', () => {
  it('200 lists the active members with their roles, to every member', async () => {
    const { admin, orgId } = await orgWith();
    const rw = await newAccount('rw');
    const ro = await newAccount('ro');
    await lab.c.addMember(admin.token, orgId, rw.token, rw.user.email, 'readwrite');
    await lab.c.addMember(admin.token, orgId, ro.token, ro.user.email, 'readonly');
    // A pending invitation is not a member.
    const pending = await newAccount('pending');
    const inv = await lab.c.call('POST', `/organizations/${orgId}/invitations`, { token: admin.token, body: { email: pending.user.email, role: 'admin' } });
    expect(inv.status).toBe(201);

    for (const token of [admin.token, rw.token, ro.token]) {
      const r = await lab.c.call('GET', `/organizations/${orgId}/members`, { token });
      expect(r.status).toBe(200);
      expect(r.body.object).toBe('list');
      expect(r.body).not.toHaveProperty('nextCursor');
      const byId = new Map((r.body.data as Array<{ userId: string }>).map((m) => [m.userId, m]));
      expect(byId.size).toBe(3);
      expect(byId.get(admin.user.id)).toEqual({ userId: admin.user.id, email: admin.user.email, name: expect.any(String), role: 'admin', joinedAt: expect.stringMatching(ISO_MS) });
      expect(byId.get(rw.user.id)).toMatchObject({ email: rw.user.email, role: 'readwrite' });
      expect(byId.get(ro.user.id)).toMatchObject({ email: ro.user.email, role: 'readonly' });
      expect(byId.has(pending.user.id)).toBe(false);
    }
  });

  it('200 for an API key bound to the organization', async () => {
    const { orgId, member } = await orgWith('readonly');
    const key = await lab.c.createKey(member!.token, orgId);
    const r = await lab.c.call('GET', `/organizations/${orgId}/members`, { token: key });
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(2);
  });

  it('200 on the Personal organization lists only its owner', async () => {
    const me = await newAccount('solo');
    const r = await lab.c.call('GET', `/organizations/${me.personalOrgId}/members`, { token: me.token });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual([expect.objectContaining({ userId: me.user.id, role: 'admin' })]);
  });

  it('401 without credentials', async () => {
    const { orgId } = await orgWith();
    expectError(await lab.c.call('GET', `/organizations/${orgId}/members`), 401);
  });

  it('403 for an API key bound to another organization of its creator', async () => {
    const { admin, orgId } = await orgWith();
    const personalKey = await lab.c.createKey(admin.token, admin.personalOrgId);
    expectError(await lab.c.call('GET', `/organizations/${orgId}/members`, { token: personalKey }), 403, 'wrong_organization');
  });

  it('404 organization_not_found for an organization the caller is not in, or one that does not exist', async () => {
    const { orgId } = await orgWith();
    const me = await newAccount('outsider');
    expectError(await lab.c.call('GET', `/organizations/${orgId}/members`, { token: me.token }), 404, 'organization_not_found');
    expectError(await lab.c.call('GET', `/organizations/${randomUUID()}/members`, { token: me.token }), 404, 'organization_not_found');
  });

  it('404 for a non-UUID id', async () => {
    const me = await newAccount('nonuuid');
    expectError(await lab.c.call('GET', `/organizations/${NOT_A_UUID}/members`, { token: me.token }), 404, 'not_found');
  });
});

describe('PATCH /organizations/{id}/members/{userId}', () => {
  const rolePath = (orgId: string, userId: string) => `/organizations/${orgId}/members/${userId}`;
  async function roleOf(token: string, orgId: string, userId: string): Promise<string | undefined> {
    const r = await lab.c.call('GET', `/organizations/${orgId}/members`, { token });
    expect(r.status).toBe(200);
    return (r.body.data as Array<{ userId: string; role: string }>).find((m) => m.userId === userId)?.role;
  }

  it.each([
    ['readonly', 'readwrite'],
    ['readwrite', 'admin'],
    ['admin', 'readonly'],
  ] as const)('200 changes a %s member to %s', async (from, to) => {
    const { admin, orgId, member } = await orgWith(from);
    const r = await lab.c.call('PATCH', rolePath(orgId, member!.user.id), { token: admin.token, body: { role: to } });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ userId: member!.user.id, email: member!.user.email, name: expect.any(String), role: to, joinedAt: expect.stringMatching(ISO_MS) });
    expect(await roleOf(admin.token, orgId, member!.user.id)).toBe(to);
    expect((await orgsOf(member!.token)).find((o) => o.id === orgId)?.role).toBe(to);
  });

  it('applies on the member\'s next request, with the same token and with their API key', async () => {
    const { admin, orgId, member } = await orgWith('readonly');
    const key = await lab.c.createKey(member!.token, orgId);
    const invite = (token: string) =>
      lab.c.call('POST', `/organizations/${orgId}/invitations`, { token, body: { email: `next-${++seq}@orgs.test`, role: 'readonly' } });

    expectError(await invite(member!.token), 403, 'insufficient_role');
    expectError(await invite(key), 403, 'insufficient_role');

    expect((await lab.c.call('PATCH', rolePath(orgId, member!.user.id), { token: admin.token, body: { role: 'admin' } })).status).toBe(200);
    expect((await invite(member!.token)).status).toBe(201);
    expect((await invite(key)).status).toBe(201);

    expect((await lab.c.call('PATCH', rolePath(orgId, member!.user.id), { token: admin.token, body: { role: 'readonly' } })).status).toBe(200);
    expectError(await invite(member!.token), 403, 'insufficient_role');
    expectError(await invite(key), 403, 'insufficient_role');
  });

  it('403 own_role: an admin cannot change their own role, so the last admin stays admin', async () => {
    const { admin, orgId } = await orgWith();
    for (const role of ['readonly', 'readwrite', 'admin']) {
      expectError(await lab.c.call('PATCH', rolePath(orgId, admin.user.id), { token: admin.token, body: { role } }), 403, 'own_role');
    }
    expect(await roleOf(admin.token, orgId, admin.user.id)).toBe('admin');
  });

  it('403 once demoted by another admin, the former admin cannot change roles back', async () => {
    const { admin, orgId, member } = await orgWith('admin');
    expect((await lab.c.call('PATCH', rolePath(orgId, admin.user.id), { token: member!.token, body: { role: 'readwrite' } })).status).toBe(200);
    const r = await lab.c.call('PATCH', rolePath(orgId, member!.user.id), { token: admin.token, body: { role: 'readonly' } });
    expectError(r, 403, 'insufficient_role');
    expect(await roleOf(member!.token, orgId, member!.user.id)).toBe('admin');
  });

  it.each(['readwrite', 'readonly'] as const)('403 insufficient_role for a %s caller', async (role) => {
    const { admin, orgId, member } = await orgWith(role);
    const r = await lab.c.call('PATCH', rolePath(orgId, admin.user.id), { token: member!.token, body: { role: 'readonly' } });
    expectError(r, 403, 'insufficient_role');
    expect(await roleOf(admin.token, orgId, admin.user.id)).toBe('admin');
  });

  it('404 member_not_found for a user who is not a member, or does not exist', async () => {
    const { admin, orgId } = await orgWith();
    const stranger = await newAccount('stranger');
    expectError(await lab.c.call('PATCH', rolePath(orgId, stranger.user.id), { token: admin.token, body: { role: 'admin' } }), 404, 'member_not_found');
    expectError(await lab.c.call('PATCH', rolePath(orgId, randomUUID()), { token: admin.token, body: { role: 'admin' } }), 404, 'member_not_found');
    expect((await orgsOf(stranger.token)).some((o) => o.id === orgId)).toBe(false);
  });

  it('404 organization_not_found for an organization the caller is not in, or one that does not exist', async () => {
    const { orgId, member } = await orgWith('readonly');
    const me = await newAccount('outsider');
    expectError(await lab.c.call('PATCH', rolePath(orgId, member!.user.id), { token: me.token, body: { role: 'admin' } }), 404, 'organization_not_found');
    expectError(await lab.c.call('PATCH', rolePath(randomUUID(), member!.user.id), { token: me.token, body: { role: 'admin' } }), 404, 'organization_not_found');
  });

  it('404 for a non-UUID organization id or user id', async () => {
    const { admin, orgId, member } = await orgWith('readonly');
    expectError(await lab.c.call('PATCH', rolePath(NOT_A_UUID, member!.user.id), { token: admin.token, body: { role: 'admin' } }), 404, 'not_found');
    expectError(await lab.c.call('PATCH', rolePath(orgId, NOT_A_UUID), { token: admin.token, body: { role: 'admin' } }), 404, 'not_found');
    expect(await roleOf(admin.token, orgId, member!.user.id)).toBe('readonly');
  });

  it('401 without credentials', async () => {
    const { orgId, member } = await orgWith('readonly');
    expectError(await lab.c.call('PATCH', rolePath(orgId, member!.user.id), { body: { role: 'admin' } }), 401);
  });

  it.each(['owner', 'member', 'Admin', 'READONLY', 'read-only', 'read_write', ''])('400 invalid_request for the role %j', async (role) => {
    const { admin, orgId, member } = await orgWith('readonly');
    expectError(await lab.c.call('PATCH', rolePath(orgId, member!.user.id), { token: admin.token, body: { role } }), 400, 'invalid_request');
    expect(await roleOf(admin.token, orgId, member!.user.id)).toBe('readonly');
  });

  it.each(badBodies('role', 'readwrite'))('400 for %s', async (_label, options, code) => {
    const { admin, orgId, member } = await orgWith('readonly');
    expectError(await lab.c.call('PATCH', rolePath(orgId, member!.user.id), { token: admin.token, ...options }), 400, code);
    expect(await roleOf(admin.token, orgId, member!.user.id)).toBe('readonly');
  });
});

describe('DELETE /organizations/{id}/members/{userId} (extension)', () => {
  const memberPath = (orgId: string, userId: string) => `/organizations/${orgId}/members/${userId}`;
  const remove = (token: string | undefined, orgId: string, userId: string) => lab.c.call('DELETE', memberPath(orgId, userId), { token });

  it('204 removes the member: the organization is gone from their list, and their API key for it stops working', async () => {
    const { admin, orgId, member } = await orgWith('readwrite');
    const key = await lab.c.createKey(member!.token, orgId);
    expect((await remove(admin.token, orgId, member!.user.id)).status).toBe(204);
    expect((await orgsOf(member!.token)).some((o) => o.id === orgId)).toBe(false);
    expectError(await lab.c.call('GET', '/sessions', { token: key }), 401);
    expectError(await remove(admin.token, orgId, member!.user.id), 404, 'member_not_found');
  });

  it('409 last_admin for the only admin; an admin leaves once another admin stays', async () => {
    const { admin, orgId, member } = await orgWith('readonly');
    expectError(await remove(admin.token, orgId, admin.user.id), 409, 'last_admin');
    expect((await lab.c.call('PATCH', memberPath(orgId, member!.user.id), { token: admin.token, body: { role: 'admin' } })).status).toBe(200);
    expect((await remove(admin.token, orgId, admin.user.id)).status).toBe(204);
    expect((await orgsOf(admin.token)).some((o) => o.id === orgId)).toBe(false);
  });

  it('403 for a non-admin, for the owner of a Personal organization; 404 for another organization; 401 without credentials', async () => {
    const { admin, orgId, member } = await orgWith('readwrite');
    expectError(await remove(member!.token, orgId, admin.user.id), 403, 'insufficient_role');
    const personal = (await orgsOf(admin.token)).find((o) => o.personal)!.id;
    expectError(await remove(admin.token, personal, admin.user.id), 403, 'personal_organization');
    const outsider = await newAccount('outsider');
    expectError(await remove(outsider.token, orgId, member!.user.id), 404, 'organization_not_found');
    expectError(await remove(undefined, orgId, member!.user.id), 401);
    expect((await orgsOf(member!.token)).some((o) => o.id === orgId)).toBe(true);
  });
});
