import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, type CallOptions, type Reply, useEngine } from '../support/engine.js';

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const NOT_A_UUID = 'not-a-uuid';
const OVER_1_MIB = 1024 * 1024 + 16;
const DAY_MS = 24 * 3600 * 1000;
const PASSWORD = 'password-123';

type Client = ReturnType<typeof client>;
type Account = Awaited<ReturnType<Client['signup']>>;
interface InvitationBody {
  id: string;
  organizationId: string;
  organizationName: string;
  email: string;
  role: string;
  status: string;
  invitedBy: string | null;
  createdAt: string;
  expiresAt: string;
  link?: string;
}

let seq = 0;
const address = (who: string) => `${who}-${++seq}@invites.test`;

function expectError(r: Reply, status: number, code?: string): void {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  const got = errorCode(r);
  if (code !== undefined) expect(got).toBe(code);
}

/** Shortcuts over one engine for the invitation flows. */
function helpers(c: Client) {
  const h = {
    newAccount: (who: string): Promise<Account> => c.signup(address(who)),
    /** An organization with a fresh admin; its name is unique in this file. */
    async newOrg() {
      const admin = await h.newAccount('admin');
      const name = `Org ${++seq}`;
      const orgId = await c.createOrganization(admin.token, name);
      return { admin, orgId, name };
    },
    invite: (token: string, orgId: string, email: string, role = 'readwrite') =>
      c.call('POST', `/organizations/${orgId}/invitations`, { token, body: { email, role } }),
    async invited(token: string, orgId: string, email: string, role = 'readwrite'): Promise<InvitationBody> {
      const r = await h.invite(token, orgId, email, role);
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body;
    },
    async mine(token: string): Promise<InvitationBody[]> {
      const r = await c.call('GET', '/invitations', { token });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data;
    },
    async ofOrg(token: string, orgId: string): Promise<InvitationBody[]> {
      const r = await c.call('GET', `/organizations/${orgId}/invitations`, { token });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data;
    },
    accept: (token: string, id: string) => c.call('POST', `/invitations/${id}/accept`, { token }),
    reject: (token: string, id: string) => c.call('POST', `/invitations/${id}/reject`, { token }),
    revoke: (token: string, orgId: string, id: string) => c.call('DELETE', `/organizations/${orgId}/invitations/${id}`, { token }),
    async roleIn(token: string, orgId: string): Promise<string | undefined> {
      const r = await c.call('GET', '/organizations', { token });
      expect(r.status).toBe(200);
      return (r.body.data as Array<{ id: string; role: string }>).find((o) => o.id === orgId)?.role;
    },
    async memberIds(token: string, orgId: string): Promise<string[]> {
      const r = await c.call('GET', `/organizations/${orgId}/members`, { token });
      expect(r.status).toBe(200);
      return (r.body.data as Array<{ userId: string }>).map((m) => m.userId);
    },
  };
  return h;
}

describe('invitations', () => {
  let h: ReturnType<typeof helpers>;

  const lab = useEngine();
  beforeAll(() => {
    h = helpers(lab.c);
  });

  describe('POST /organizations/{id}/invitations', () => {
    it('201 returns the pending invitation, valid for 7 days', async () => {
      const { admin, orgId, name } = await h.newOrg();
      const email = address('invitee');
      const r = await h.invite(admin.token, orgId, email, 'readonly');
      expect(r.status).toBe(201);
      expect(r.body).toEqual({
        id: expect.stringMatching(UUID_RE),
        organizationId: orgId,
        organizationName: name,
        email,
        role: 'readonly',
        status: 'pending',
        invitedBy: admin.user.id,
        invitedByEmail: admin.user.email,
        createdAt: expect.stringMatching(ISO_MS),
        expiresAt: expect.stringMatching(ISO_MS),
        link: expect.stringMatching(new RegExp(`^${lab.c.api.replace(/\/api\/v1$/, '')}/join/[A-Za-z0-9_-]{43}$`)),
      });
      expect(Date.parse(r.body.expiresAt) - Date.parse(r.body.createdAt)).toBe(7 * DAY_MS);
      expect(await h.ofOrg(admin.token, orgId)).toEqual([r.body]);
    });

    it.each(['admin', 'readwrite', 'readonly'])('201 with the role %s', async (role) => {
      const { admin, orgId } = await h.newOrg();
      const inv = await h.invited(admin.token, orgId, address('role'), role);
      expect(inv.role).toBe(role);
    });

    it('201 for an email with no account yet; the account signed up later sees and accepts it', async () => {
      const { admin, orgId } = await h.newOrg();
      const email = address('later');
      const inv = await h.invited(admin.token, orgId, email, 'readonly');
      const later = await lab.c.signup(email);
      expect((await h.mine(later.token)).map((i) => i.id)).toEqual([inv.id]);
      expect((await h.accept(later.token, inv.id)).status).toBe(204);
      expect(await h.roleIn(later.token, orgId)).toBe('readonly');
    });

    it('201 from an admin who joined by invitation', async () => {
      const { admin, orgId } = await h.newOrg();
      const second = await h.newAccount('second-admin');
      await lab.c.addMember(admin.token, orgId, second.token, second.user.email, 'admin');
      const inv = await h.invited(second.token, orgId, address('by-second'));
      expect(inv.invitedBy).toBe(second.user.id);
    });

    it('409 already_invited for a second invitation to the same email, in any case', async () => {
      const { admin, orgId } = await h.newOrg();
      const email = address('twice');
      const first = await h.invited(admin.token, orgId, email);
      expectError(await h.invite(admin.token, orgId, email, 'admin'), 409, 'already_invited');
      expectError(await h.invite(admin.token, orgId, email.toUpperCase()), 409, 'already_invited');
      expect(await h.ofOrg(admin.token, orgId)).toEqual([first]);
    });

    it('201 for the same email in another organization', async () => {
      const a = await h.newOrg();
      const b = await h.newOrg();
      const email = address('both');
      await h.invited(a.admin.token, a.orgId, email);
      await h.invited(b.admin.token, b.orgId, email);
    });

    it('409 already_member for the email of an existing member, including the admin\'s own', async () => {
      const { admin, orgId } = await h.newOrg();
      const member = await h.newAccount('member');
      await lab.c.addMember(admin.token, orgId, member.token, member.user.email, 'readonly');
      expectError(await h.invite(admin.token, orgId, member.user.email), 409, 'already_member');
      expectError(await h.invite(admin.token, orgId, member.user.email.toUpperCase(), 'admin'), 409, 'already_member');
      expectError(await h.invite(admin.token, orgId, admin.user.email), 409, 'already_member');
      expect(await h.ofOrg(admin.token, orgId)).toEqual([]);
    });

    it('201 again once the previous invitation was rejected, or revoked', async () => {
      const { admin, orgId } = await h.newOrg();
      const invitee = await h.newAccount('again');
      const first = await h.invited(admin.token, orgId, invitee.user.email);
      expect((await h.reject(invitee.token, first.id)).status).toBe(204);
      const second = await h.invited(admin.token, orgId, invitee.user.email, 'admin');
      expect(second.id).not.toBe(first.id);
      expect((await h.revoke(admin.token, orgId, second.id)).status).toBe(204);
      const third = await h.invited(admin.token, orgId, invitee.user.email, 'readonly');
      expect((await h.mine(invitee.token)).map((i) => [i.id, i.role])).toEqual([[third.id, 'readonly']]);
    });

    it.each(['readwrite', 'readonly'])('403 insufficient_role for a %s member', async (role) => {
      const { admin, orgId } = await h.newOrg();
      const member = await h.newAccount(role);
      await lab.c.addMember(admin.token, orgId, member.token, member.user.email, role);
      expectError(await h.invite(member.token, orgId, address('nope')), 403, 'insufficient_role');
      expect(await h.ofOrg(admin.token, orgId)).toEqual([]);
    });

    it('403 wrong_organization for an API key bound to another organization of its creator', async () => {
      const { admin, orgId } = await h.newOrg();
      const personalKey = await lab.c.createKey(admin.token, admin.personalOrgId);
      expectError(await h.invite(personalKey, orgId, address('by-key')), 403, 'wrong_organization');
    });

    it('201 for an admin\'s API key bound to the organization', async () => {
      const { admin, orgId } = await h.newOrg();
      const key = await lab.c.createKey(admin.token, orgId);
      const inv = await h.invited(key, orgId, address('by-key'));
      expect(inv.invitedBy).toBe(admin.user.id);
    });

    it('404 organization_not_found for an organization the caller is not in, or one that does not exist', async () => {
      const { admin, orgId } = await h.newOrg();
      const outsider = await h.newAccount('outsider');
      expectError(await h.invite(outsider.token, orgId, outsider.user.email), 404, 'organization_not_found');
      expectError(await h.invite(outsider.token, randomUUID(), address('ghost')), 404, 'organization_not_found');
      expect(await h.ofOrg(admin.token, orgId)).toEqual([]);
    });

    it('404 for a non-UUID organization id', async () => {
      const { admin } = await h.newOrg();
      expectError(await h.invite(admin.token, NOT_A_UUID, address('x')), 404, 'not_found');
    });

    it('401 without credentials', async () => {
      const { admin, orgId } = await h.newOrg();
      expectError(await h.invite('', orgId, address('anon')), 401);
      expectError(await h.invite('garbage', orgId, address('anon')), 401);
      expect(await h.ofOrg(admin.token, orgId)).toEqual([]);
    });

    const badBodies: Array<[string, CallOptions, string]> = [
      ['malformed JSON', { raw: '{"email": "a@b.test", "role": ' }, 'invalid_json'],
      ['an empty body', { raw: '' }, 'invalid_request'],
      ['JSON null', { raw: 'null' }, 'invalid_request'],
      ['a JSON array', { body: [{ email: 'a@b.test', role: 'admin' }] }, 'invalid_request'],
      ['a missing email', { body: { role: 'admin' } }, 'invalid_request'],
      ['a missing role', { body: { email: 'a@b.test' } }, 'invalid_request'],
      ['an empty object', { body: {} }, 'invalid_request'],
      ['an email of the wrong type', { body: { email: 42, role: 'admin' } }, 'invalid_request'],
      ['a role of the wrong type', { body: { email: 'a@b.test', role: 1 } }, 'invalid_request'],
      ['a null role', { body: { email: 'a@b.test', role: null } }, 'invalid_request'],
      ['an email that is not an email', { body: { email: 'not-an-email', role: 'admin' } }, 'invalid_request'],
      ['an empty email', { body: { email: '', role: 'admin' } }, 'invalid_request'],
      ['an unknown role', { body: { email: 'a@b.test', role: 'owner' } }, 'invalid_request'],
      ['a role in the wrong case', { body: { email: 'a@b.test', role: 'Admin' } }, 'invalid_request'],
      ['an extra field', { body: { email: 'a@b.test', role: 'admin', message: 'hi' } }, 'invalid_request'],
      ['a body over 1 MiB', { raw: JSON.stringify({ email: 'a@b.test', role: 'admin', pad: 'x'.repeat(OVER_1_MIB) }) }, 'body_too_large'],
      ['a text/plain body', { raw: 'email=a@b.test&role=admin', headers: { 'content-type': 'text/plain' } }, 'invalid_request'],
      ['an application/xml body', { raw: '<email>a@b.test</email>', headers: { 'content-type': 'application/xml' } }, 'unsupported_media_type'],
    ];
    it.each(badBodies)('400 for %s', async (_label, options, code) => {
      const { admin, orgId } = await h.newOrg();
      expectError(await lab.c.call('POST', `/organizations/${orgId}/invitations`, { token: admin.token, ...options }), 400, code);
      expect(await h.ofOrg(admin.token, orgId)).toEqual([]);
    });
  });

  describe('GET /organizations/{id}/invitations', () => {
    it('200 lists only the pending invitations of that organization', async () => {
      const { admin, orgId } = await h.newOrg();
      const other = await h.newOrg();
      const [acc, rej, rev] = [await h.newAccount('acc'), await h.newAccount('rej'), await h.newAccount('rev')];
      const toAccept = await h.invited(admin.token, orgId, acc.user.email);
      const toReject = await h.invited(admin.token, orgId, rej.user.email);
      const toRevoke = await h.invited(admin.token, orgId, rev.user.email);
      const stays = await h.invited(admin.token, orgId, address('stays'), 'admin');
      await h.invited(other.admin.token, other.orgId, address('elsewhere'));

      expect((await h.ofOrg(admin.token, orgId)).map((i) => i.id)).toEqual([toAccept.id, toReject.id, toRevoke.id, stays.id]);
      expect((await h.accept(acc.token, toAccept.id)).status).toBe(204);
      expect((await h.reject(rej.token, toReject.id)).status).toBe(204);
      expect((await h.revoke(admin.token, orgId, toRevoke.id)).status).toBe(204);

      const r = await lab.c.call('GET', `/organizations/${orgId}/invitations`, { token: admin.token });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ object: 'list', data: [stays] });
    });

    it('200 with an empty list for an organization without invitations', async () => {
      const { admin, orgId } = await h.newOrg();
      const r = await lab.c.call('GET', `/organizations/${orgId}/invitations`, { token: admin.token });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ object: 'list', data: [] });
    });

    it.each(['readwrite', 'readonly'])('403 insufficient_role for a %s member', async (role) => {
      const { admin, orgId } = await h.newOrg();
      const member = await h.newAccount(role);
      await lab.c.addMember(admin.token, orgId, member.token, member.user.email, role);
      await h.invited(admin.token, orgId, address('secret'));
      expectError(await lab.c.call('GET', `/organizations/${orgId}/invitations`, { token: member.token }), 403, 'insufficient_role');
    });

    it('404 organization_not_found for an organization the caller is not in, or one that does not exist', async () => {
      const { orgId } = await h.newOrg();
      const outsider = await h.newAccount('outsider');
      expectError(await lab.c.call('GET', `/organizations/${orgId}/invitations`, { token: outsider.token }), 404, 'organization_not_found');
      expectError(await lab.c.call('GET', `/organizations/${randomUUID()}/invitations`, { token: outsider.token }), 404, 'organization_not_found');
    });

    it('404 for a non-UUID organization id', async () => {
      const { admin } = await h.newOrg();
      expectError(await lab.c.call('GET', `/organizations/${NOT_A_UUID}/invitations`, { token: admin.token }), 404, 'not_found');
    });

    it('401 without credentials', async () => {
      const { orgId } = await h.newOrg();
      expectError(await lab.c.call('GET', `/organizations/${orgId}/invitations`), 401);
    });
  });

  describe('GET /invitations', () => {
    it('200 lists the pending invitations addressed to the caller across organizations, and only those', async () => {
      const a = await h.newOrg();
      const b = await h.newOrg();
      const me = await h.newAccount('me');
      const someoneElse = await h.newAccount('else');
      const fromA = await h.invited(a.admin.token, a.orgId, me.user.email, 'readonly');
      const fromB = await h.invited(b.admin.token, b.orgId, me.user.email.toUpperCase(), 'admin');
      const notMine = await h.invited(a.admin.token, a.orgId, someoneElse.user.email);

      const r = await lab.c.call('GET', '/invitations', { token: me.token });
      expect(r.status).toBe(200);
      expect(r.body.object).toBe('list');
      expect(r.body).not.toHaveProperty('nextCursor');
      // The invitee's own list carries no link: they hold it already, and it is the admin's to hand out.
      expect(r.body.data).toEqual([fromA, fromB].map(({ link: _link, ...rest }) => rest));
      expect(r.body.data[0]).toMatchObject({ organizationId: a.orgId, organizationName: a.name, role: 'readonly', status: 'pending' });
      expect(r.body.data[1]).toMatchObject({ organizationId: b.orgId, organizationName: b.name, role: 'admin', status: 'pending' });
      expect((await h.mine(someoneElse.token)).map((i) => i.id)).toEqual([notMine.id]);
    });

    it('200 drops accepted, rejected and revoked invitations', async () => {
      const me = await h.newAccount('settled');
      const [a, b, d, e] = [await h.newOrg(), await h.newOrg(), await h.newOrg(), await h.newOrg()];
      const ia = await h.invited(a.admin.token, a.orgId, me.user.email);
      const ib = await h.invited(b.admin.token, b.orgId, me.user.email);
      const id = await h.invited(d.admin.token, d.orgId, me.user.email);
      const ie = await h.invited(e.admin.token, e.orgId, me.user.email);
      expect((await h.mine(me.token)).map((i) => i.id)).toEqual([ia.id, ib.id, id.id, ie.id]);
      expect((await h.accept(me.token, ia.id)).status).toBe(204);
      expect((await h.reject(me.token, ib.id)).status).toBe(204);
      expect((await h.revoke(d.admin.token, d.orgId, id.id)).status).toBe(204);
      expect((await h.mine(me.token)).map((i) => i.id)).toEqual([ie.id]);
    });

    it('200 with an empty list when nothing is addressed to the caller', async () => {
      const me = await h.newAccount('nobody-invites-me');
      const r = await lab.c.call('GET', '/invitations', { token: me.token });
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ object: 'list', data: [] });
    });

    it('403 interactive_only for an API key', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('keyholder');
      await h.invited(admin.token, orgId, me.user.email);
      const key = await lab.c.createKey(me.token);
      expectError(await lab.c.call('GET', '/invitations', { token: key }), 403, 'interactive_only');
    });

    it('401 without credentials', async () => {
      expectError(await lab.c.call('GET', '/invitations'), 401);
      expectError(await lab.c.call('GET', '/invitations', { token: 'garbage' }), 401);
    });
  });

  describe('POST /invitations/{invitationId}/accept', () => {
    it.each(['admin', 'readwrite', 'readonly'])('204 makes the caller a member with the invited role %s', async (role) => {
      const { admin, orgId, name } = await h.newOrg();
      const me = await h.newAccount('joiner');
      const inv = await h.invited(admin.token, orgId, me.user.email, role);
      const r = await h.accept(me.token, inv.id);
      expect(r.status).toBe(204);
      expect(r.body).toBeUndefined();

      const orgs = await lab.c.call('GET', '/organizations', { token: me.token });
      expect(orgs.body.data).toContainEqual({ id: orgId, name, personal: false, role, createdAt: expect.stringMatching(ISO_MS) });
      const members = await lab.c.call('GET', `/organizations/${orgId}/members`, { token: admin.token });
      expect(members.body.data).toContainEqual({ userId: me.user.id, email: me.user.email, name: expect.any(String), role, joinedAt: expect.stringMatching(ISO_MS) });
      expect(await h.mine(me.token)).toEqual([]);
      expect(await h.ofOrg(admin.token, orgId)).toEqual([]);
      // The role is effective: only an admin may list the organization's invitations.
      const listing = await lab.c.call('GET', `/organizations/${orgId}/invitations`, { token: me.token });
      expect(listing.status).toBe(role === 'admin' ? 200 : 403);
    });

    it('204 for an invitation addressed to the caller\'s email in another case', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('cased');
      const inv = await h.invited(admin.token, orgId, me.user.email.toUpperCase(), 'readonly');
      expect((await h.accept(me.token, inv.id)).status).toBe(204);
      expect(await h.roleIn(me.token, orgId)).toBe('readonly');
    });

    it('404 invitation_not_found for an invitation addressed to someone else; it stays pending for them', async () => {
      const { admin, orgId } = await h.newOrg();
      const addressee = await h.newAccount('addressee');
      const intruder = await h.newAccount('intruder');
      const inv = await h.invited(admin.token, orgId, addressee.user.email, 'admin');
      expectError(await h.accept(intruder.token, inv.id), 404, 'invitation_not_found');
      // Not even the admin who sent it can accept it.
      expectError(await h.accept(admin.token, inv.id), 404, 'invitation_not_found');
      expect(await h.roleIn(intruder.token, orgId)).toBeUndefined();
      expect((await h.mine(addressee.token)).map((i) => i.id)).toEqual([inv.id]);
      expect((await h.accept(addressee.token, inv.id)).status).toBe(204);
    });

    it('404 invitation_not_found once accepted, rejected or revoked', async () => {
      const { admin, orgId } = await h.newOrg();
      const a = await h.newAccount('a');
      const accepted = await h.invited(admin.token, orgId, a.user.email, 'readonly');
      expect((await h.accept(a.token, accepted.id)).status).toBe(204);
      expectError(await h.accept(a.token, accepted.id), 404, 'invitation_not_found');
      expect(await h.roleIn(a.token, orgId)).toBe('readonly');

      const b = await h.newAccount('b');
      const rejected = await h.invited(admin.token, orgId, b.user.email);
      expect((await h.reject(b.token, rejected.id)).status).toBe(204);
      expectError(await h.accept(b.token, rejected.id), 404, 'invitation_not_found');
      expect(await h.roleIn(b.token, orgId)).toBeUndefined();

      const d = await h.newAccount('d');
      const revoked = await h.invited(admin.token, orgId, d.user.email, 'admin');
      expect((await h.revoke(admin.token, orgId, revoked.id)).status).toBe(204);
      expectError(await h.accept(d.token, revoked.id), 404, 'invitation_not_found');
      expect(await h.roleIn(d.token, orgId)).toBeUndefined();
    });

    it('404 for an id that does not exist, and for a non-UUID id', async () => {
      const me = await h.newAccount('ghost');
      expectError(await h.accept(me.token, randomUUID()), 404, 'invitation_not_found');
      expectError(await h.accept(me.token, NOT_A_UUID), 404, 'not_found');
    });

    it('403 interactive_only for an API key of the invitee', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('keyed');
      const inv = await h.invited(admin.token, orgId, me.user.email);
      const key = await lab.c.createKey(me.token);
      expectError(await h.accept(key, inv.id), 403, 'interactive_only');
      expect(await h.roleIn(me.token, orgId)).toBeUndefined();
      expect((await h.mine(me.token)).map((i) => i.id)).toEqual([inv.id]);
    });

    it('401 without credentials', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('anon');
      const inv = await h.invited(admin.token, orgId, me.user.email);
      expectError(await lab.c.call('POST', `/invitations/${inv.id}/accept`), 401);
      expect((await h.mine(me.token)).map((i) => i.id)).toEqual([inv.id]);
    });

    it('ignores a body it does not take', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('bodied');
      const inv = await h.invited(admin.token, orgId, me.user.email, 'readonly');
      const r = await lab.c.call('POST', `/invitations/${inv.id}/accept`, { token: me.token, raw: '{"not": json' });
      expect(r.status).toBe(204);
      expect(await h.roleIn(me.token, orgId)).toBe('readonly');
    });
  });

  describe('POST /invitations/{invitationId}/reject', () => {
    it('204 settles the invitation without making the caller a member', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('rejecter');
      const inv = await h.invited(admin.token, orgId, me.user.email, 'admin');
      const r = await h.reject(me.token, inv.id);
      expect(r.status).toBe(204);
      expect(r.body).toBeUndefined();
      expect(await h.roleIn(me.token, orgId)).toBeUndefined();
      expect(await h.memberIds(admin.token, orgId)).toEqual([admin.user.id]);
      expect(await h.mine(me.token)).toEqual([]);
      expect(await h.ofOrg(admin.token, orgId)).toEqual([]);
    });

    it('404 invitation_not_found for an invitation addressed to someone else; it stays pending for them', async () => {
      const { admin, orgId } = await h.newOrg();
      const addressee = await h.newAccount('addressee');
      const intruder = await h.newAccount('intruder');
      const inv = await h.invited(admin.token, orgId, addressee.user.email);
      expectError(await h.reject(intruder.token, inv.id), 404, 'invitation_not_found');
      expectError(await h.reject(admin.token, inv.id), 404, 'invitation_not_found');
      expect((await h.mine(addressee.token)).map((i) => i.id)).toEqual([inv.id]);
      expect((await h.ofOrg(admin.token, orgId)).map((i) => i.id)).toEqual([inv.id]);
    });

    it('404 invitation_not_found once rejected, accepted or revoked', async () => {
      const { admin, orgId } = await h.newOrg();
      const a = await h.newAccount('a');
      const rejected = await h.invited(admin.token, orgId, a.user.email);
      expect((await h.reject(a.token, rejected.id)).status).toBe(204);
      expectError(await h.reject(a.token, rejected.id), 404, 'invitation_not_found');

      const b = await h.newAccount('b');
      const accepted = await h.invited(admin.token, orgId, b.user.email, 'readonly');
      expect((await h.accept(b.token, accepted.id)).status).toBe(204);
      expectError(await h.reject(b.token, accepted.id), 404, 'invitation_not_found');
      expect(await h.roleIn(b.token, orgId)).toBe('readonly');

      const d = await h.newAccount('d');
      const revoked = await h.invited(admin.token, orgId, d.user.email);
      expect((await h.revoke(admin.token, orgId, revoked.id)).status).toBe(204);
      expectError(await h.reject(d.token, revoked.id), 404, 'invitation_not_found');
    });

    it('404 for an id that does not exist, and for a non-UUID id', async () => {
      const me = await h.newAccount('ghost');
      expectError(await h.reject(me.token, randomUUID()), 404, 'invitation_not_found');
      expectError(await h.reject(me.token, NOT_A_UUID), 404, 'not_found');
    });

    it('403 interactive_only for an API key of the invitee', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('keyed');
      const inv = await h.invited(admin.token, orgId, me.user.email);
      const key = await lab.c.createKey(me.token);
      expectError(await h.reject(key, inv.id), 403, 'interactive_only');
      expect((await h.mine(me.token)).map((i) => i.id)).toEqual([inv.id]);
    });

    it('401 without credentials', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('anon');
      const inv = await h.invited(admin.token, orgId, me.user.email);
      expectError(await lab.c.call('POST', `/invitations/${inv.id}/reject`), 401);
      expect((await h.mine(me.token)).map((i) => i.id)).toEqual([inv.id]);
    });
  });

  describe('DELETE /organizations/{id}/invitations/{invitationId}', () => {
    it('204 revokes: the invitee no longer sees it and cannot accept it', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('revoked');
      const inv = await h.invited(admin.token, orgId, me.user.email);
      const r = await h.revoke(admin.token, orgId, inv.id);
      expect(r.status).toBe(204);
      expect(r.body).toBeUndefined();
      expect(await h.mine(me.token)).toEqual([]);
      expect(await h.ofOrg(admin.token, orgId)).toEqual([]);
      expectError(await h.accept(me.token, inv.id), 404, 'invitation_not_found');
      expect(await h.roleIn(me.token, orgId)).toBeUndefined();
    });

    it('204 for an invitation to an email with no account', async () => {
      const { admin, orgId } = await h.newOrg();
      const inv = await h.invited(admin.token, orgId, address('no-account'));
      expect((await h.revoke(admin.token, orgId, inv.id)).status).toBe(204);
    });

    it('404 invitation_not_found once revoked, accepted or rejected', async () => {
      const { admin, orgId } = await h.newOrg();
      const revoked = await h.invited(admin.token, orgId, address('gone'));
      expect((await h.revoke(admin.token, orgId, revoked.id)).status).toBe(204);
      expectError(await h.revoke(admin.token, orgId, revoked.id), 404, 'invitation_not_found');

      const a = await h.newAccount('a');
      const accepted = await h.invited(admin.token, orgId, a.user.email, 'readonly');
      expect((await h.accept(a.token, accepted.id)).status).toBe(204);
      expectError(await h.revoke(admin.token, orgId, accepted.id), 404, 'invitation_not_found');
      expect(await h.roleIn(a.token, orgId)).toBe('readonly');

      const b = await h.newAccount('b');
      const rejected = await h.invited(admin.token, orgId, b.user.email);
      expect((await h.reject(b.token, rejected.id)).status).toBe(204);
      expectError(await h.revoke(admin.token, orgId, rejected.id), 404, 'invitation_not_found');
    });

    it('404 invitation_not_found for another organization\'s invitation, even to an admin of both', async () => {
      const { admin, orgId } = await h.newOrg();
      const otherOrg = await lab.c.createOrganization(admin.token, `Other ${++seq}`);
      const inv = await h.invited(admin.token, otherOrg, address('other'));
      expectError(await h.revoke(admin.token, orgId, inv.id), 404, 'invitation_not_found');
      expect((await h.ofOrg(admin.token, otherOrg)).map((i) => i.id)).toEqual([inv.id]);
    });

    it('404 for an invitation id that does not exist, and for non-UUID ids', async () => {
      const { admin, orgId } = await h.newOrg();
      const inv = await h.invited(admin.token, orgId, address('kept'));
      expectError(await h.revoke(admin.token, orgId, randomUUID()), 404, 'invitation_not_found');
      expectError(await h.revoke(admin.token, orgId, NOT_A_UUID), 404, 'not_found');
      expectError(await h.revoke(admin.token, NOT_A_UUID, inv.id), 404, 'not_found');
      expect((await h.ofOrg(admin.token, orgId)).map((i) => i.id)).toEqual([inv.id]);
    });

    it('404 organization_not_found for an organization the caller is not in', async () => {
      const { admin, orgId } = await h.newOrg();
      const inv = await h.invited(admin.token, orgId, address('target'));
      const outsider = await h.newAccount('outsider');
      expectError(await h.revoke(outsider.token, orgId, inv.id), 404, 'organization_not_found');
      expect((await h.ofOrg(admin.token, orgId)).map((i) => i.id)).toEqual([inv.id]);
    });

    it.each(['readwrite', 'readonly'])('403 insufficient_role for a %s member', async (role) => {
      const { admin, orgId } = await h.newOrg();
      const member = await h.newAccount(role);
      await lab.c.addMember(admin.token, orgId, member.token, member.user.email, role);
      const inv = await h.invited(admin.token, orgId, address('target'));
      expectError(await h.revoke(member.token, orgId, inv.id), 403, 'insufficient_role');
      expect((await h.ofOrg(admin.token, orgId)).map((i) => i.id)).toEqual([inv.id]);
    });

    it('404 organization_not_found for the invitee, who may reject but not revoke', async () => {
      const { admin, orgId } = await h.newOrg();
      const me = await h.newAccount('invitee');
      const inv = await h.invited(admin.token, orgId, me.user.email);
      expectError(await h.revoke(me.token, orgId, inv.id), 404, 'organization_not_found');
      expect((await h.mine(me.token)).map((i) => i.id)).toEqual([inv.id]);
    });

    it('401 without credentials', async () => {
      const { admin, orgId } = await h.newOrg();
      const inv = await h.invited(admin.token, orgId, address('target'));
      expectError(await lab.c.call('DELETE', `/organizations/${orgId}/invitations/${inv.id}`), 401);
      expect((await h.ofOrg(admin.token, orgId)).map((i) => i.id)).toEqual([inv.id]);
    });
  });

  describe('the link: sign up with its secret', () => {
    const secretOf = (inv: InvitationBody) => inv.link!.split('/').at(-1)!;
    const signup = (email: string, invitation: string) => lab.c.call('POST', '/auth/signup', { body: { email, password: PASSWORD, invitation } });
    const read = (secret: string) => lab.c.call('GET', `/auth/invitations/${secret}`);
    const setSignupOpen = async (signupOpen: boolean) =>
      expect((await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { signupOpen } })).status).toBe(200);

    it('with sign-up invitation-only, the invited email signs up through the secret and is a member at once; the secret is then used up', async () => {
      const { admin, orgId, name } = await h.newOrg();
      const email = address('newcomer');
      const inv = await h.invited(admin.token, orgId, email, 'readonly');
      await setSignupOpen(false);
      try {
        // The link's page reads who invited whom, where, with which role, before anyone signs in.
        const shown = await read(secretOf(inv));
        expect(shown.status).toBe(200);
        expect(shown.body).toMatchObject({ id: inv.id, organizationName: name, email, role: 'readonly', invitedByEmail: admin.user.email });
        expect(shown.body).not.toHaveProperty('link');

        expectError(await lab.c.call('POST', '/auth/signup', { body: { email: address('walk-in'), password: PASSWORD } }), 403, 'signup_closed');
        expectError(await signup(address('stranger'), secretOf(inv)), 403, 'invitation_email_mismatch');
        expectError(await lab.c.call('POST', '/auth/login', { body: { email: address('stranger'), password: PASSWORD } }), 401);

        const r = await signup(email.toUpperCase(), secretOf(inv));
        expect(r.status, JSON.stringify(r.body)).toBe(201);
        expect(await h.roleIn(r.body.token, orgId)).toBe('readonly');
        expect(await h.memberIds(admin.token, orgId)).toContain(r.body.user.id);
        expect(await h.ofOrg(admin.token, orgId)).toEqual([]);

        expectError(await read(secretOf(inv)), 404, 'invitation_used');
        expectError(await signup(address('late'), secretOf(inv)), 404, 'invitation_used');
      } finally {
        await setSignupOpen(true);
      }
    });

    it('a link that never was, was revoked, or is malformed is refused with a code that says so', async () => {
      const { admin, orgId } = await h.newOrg();
      const email = address('revoked');
      const inv = await h.invited(admin.token, orgId, email);
      // The admin's list shows the same link again (the secret is derived, not stored).
      expect((await h.ofOrg(admin.token, orgId)).map((i) => i.link)).toEqual([inv.link]);
      expect((await h.revoke(admin.token, orgId, inv.id)).status).toBe(204);
      expectError(await read(secretOf(inv)), 404, 'invitation_revoked');
      expectError(await signup(email, secretOf(inv)), 404, 'invitation_revoked');
      expectError(await read('A'.repeat(43)), 404, 'invitation_not_found');
      expectError(await signup(email, 'A'.repeat(43)), 404, 'invitation_not_found');
      expectError(await read('too-short'), 404);
    });
  });
});

describe('invitation expiry', () => {
  let h: ReturnType<typeof helpers>;

  const lab = useEngine();
  beforeAll(() => {
    h = helpers(lab.c);
  });

  it('an invitation is pending for 7 days; then it is unlisted, unanswerable, and the email can be invited again', async () => {
    const { admin, orgId } = await h.newOrg();
    const invitee = await h.newAccount('slow');
    const other = await h.newAccount('slower');
    const inv = await h.invited(admin.token, orgId, invitee.user.email, 'readonly');
    const inv2 = await h.invited(admin.token, orgId, other.user.email, 'readonly');
    const relogin = () => Promise.all([lab.c.login(admin.user.email, PASSWORD), lab.c.login(invitee.user.email, PASSWORD), lab.c.login(other.user.email, PASSWORD)]);

    // A minute before expiry it is still pending everywhere, and still blocks a second invitation.
    lab.t.clock.offsetMs = 7 * DAY_MS - 60_000;
    const [adminBefore, inviteeBefore, otherBefore] = await relogin();
    expect((await h.mine(inviteeBefore)).map((i) => i.id)).toEqual([inv.id]);
    expect((await h.mine(otherBefore)).map((i) => i.id)).toEqual([inv2.id]);
    expect((await h.ofOrg(adminBefore, orgId)).map((i) => i.id)).toEqual([inv.id, inv2.id]);
    expectError(await h.invite(adminBefore, orgId, invitee.user.email), 409, 'already_invited');

    lab.t.clock.offsetMs = 7 * DAY_MS + 1;
    const [adminToken, inviteeToken, otherToken] = await relogin();
    expect(await h.mine(inviteeToken)).toEqual([]);
    expect(await h.mine(otherToken)).toEqual([]);
    expect(await h.ofOrg(adminToken, orgId)).toEqual([]);
    expectError(await h.accept(inviteeToken, inv.id), 404, 'invitation_not_found');
    expectError(await lab.c.call('GET', `/auth/invitations/${inv.link!.split('/').at(-1)}`), 404, 'invitation_expired');
    expectError(await h.reject(otherToken, inv2.id), 404, 'invitation_not_found');
    expectError(await h.revoke(adminToken, orgId, inv.id), 404, 'invitation_not_found');
    expect(await h.roleIn(inviteeToken, orgId)).toBeUndefined();

    const again = await h.invite(adminToken, orgId, invitee.user.email, 'admin');
    expect(again.status).toBe(201);
    expect(again.body.id).not.toBe(inv.id);
    expect(Date.parse(again.body.createdAt)).toBeGreaterThanOrEqual(Date.parse(inv.expiresAt));
    expect((await h.mine(inviteeToken)).map((i) => [i.id, i.role])).toEqual([[again.body.id, 'admin']]);
    expect((await h.accept(inviteeToken, again.body.id)).status).toBe(204);
    expect(await h.roleIn(inviteeToken, orgId)).toBe('admin');
  });
});
