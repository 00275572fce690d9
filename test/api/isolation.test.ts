import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { errorCode, type Reply, useEngine } from '../support/engine.js';

/**
 * Cross-organization isolation. Organization A ("Alpha": alice admin, amy readonly) owns a session, a key, a pending
 * invitation, members, a name and a paid plan. Organization B ("Bravo": bob admin) must neither see nor change any
 * of them, with tokens or keys. "bridge" belongs to both and acts in B: acting in B must not reach A either.
 * Every refusal is compared, body for body, with the same call on an id that exists nowhere.
 */

/** Callers of organization B. Tokens send X-Organization-Id: B; keys are bound to B and send no header. */
const B_CALLERS = ['B admin token', 'B admin key', 'A+B member token in B', 'A+B member key of B'] as const;
type Who = (typeof B_CALLERS)[number];
/** The callers of B who are not in A at all: for them, A's id in a path names nothing. */
const OUTSIDERS = ['B admin token', 'B admin key'] as const satisfies readonly Who[];

interface Caller {
  bearer: string;
  kind: 'token' | 'key';
  /** X-Organization-Id that puts the caller in B (tokens only; keys are bound to B). */
  org?: string;
}

let orgA: string;
let orgB: string;
let alice: { token: string; id: string };
let amy: { token: string; id: string; email: string };
let aliceKey: string;
let aKeyId: string;
let bridgeKeyOfA: string;
let aSession: string;
let bSession: string;
let aInvitation: string;
const who = {} as Record<Who, Caller>;

const send = (c: Caller, method: string, path: string, options: { org?: string; body?: unknown } = {}) =>
  lab.c.call(method, path, { token: c.bearer, org: options.org, body: options.body });
/** In B: the caller's own scope (tokens name B, keys need nothing). */
const inB = (c: Caller, method: string, path: string, body?: unknown) => send(c, method, path, { org: c.org, body });
const asAlice = (method: string, path: string, body?: unknown) => lab.c.call(method, path, { token: alice.token, org: orgA, body });

/**
 * The refusal for org A's resource, and the same call on one that exists nowhere: the same status and code,
 * and bodies identical to the byte, so the answer does not tell whether A's resource exists.
 */
async function refusedAlike(expected: readonly [number, string], elsewhere: () => Promise<Reply>, nowhere: () => Promise<Reply>) {
  const a = await elsewhere();
  const b = await nowhere();
  expect([a.status, errorCode(a)]).toEqual(expected);
  expect(b.status).toBe(a.status);
  expect(b.body).toEqual(a.body);
}

const interactiveOnly = (c: Caller, other: readonly [number, string]) =>
  c.kind === 'key' ? ([403, 'interactive_only'] as const) : other;

const lab = useEngine();

beforeAll(async () => {
  const a = await lab.c.signup('alice@alpha.test');
  alice = { token: a.token, id: a.user.id };
  const m = await lab.c.signup('amy@alpha.test');
  amy = { token: m.token, id: m.user.id, email: 'amy@alpha.test' };
  const bob = await lab.c.signup('bob@bravo.test');
  const bridge = await lab.c.signup('bridge@both.test');

  // Both organizations share a name on purpose: names are per caller, and ids are what isolate.
  orgA = await lab.c.createOrganization(alice.token, 'Alpha');
  orgB = await lab.c.createOrganization(bob.token, 'Bravo');
  await lab.c.addMember(alice.token, orgA, amy.token, amy.email, 'readonly');
  await lab.c.addMember(alice.token, orgA, bridge.token, 'bridge@both.test', 'readwrite');
  await lab.c.addMember(bob.token, orgB, bridge.token, 'bridge@both.test', 'readwrite');

  const key = await lab.c.call('POST', '/keys', { token: alice.token, org: orgA, body: { name: 'alpha key' } });
  expect(key.status).toBe(201);
  aliceKey = key.body.apiKey;
  aKeyId = key.body.id;
  bridgeKeyOfA = await lab.c.createKey(bridge.token, orgA, 'bridge A key');

  who['B admin token'] = { bearer: bob.token, kind: 'token', org: orgB };
  who['B admin key'] = { bearer: await lab.c.createKey(bob.token, orgB, 'bravo key'), kind: 'key' };
  who['A+B member token in B'] = { bearer: bridge.token, kind: 'token', org: orgB };
  who['A+B member key of B'] = { bearer: await lab.c.createKey(bridge.token, orgB, 'bridge B key'), kind: 'key' };

  const s = await asAlice('POST', '/sessions');
  expect(s.status).toBe(201);
  aSession = s.body.id;
  const sb = await lab.c.call('POST', '/sessions', { token: bob.token, org: orgB });
  expect(sb.status).toBe(201);
  bSession = sb.body.id;

  const inv = await lab.c.call('POST', `/organizations/${orgA}/invitations`, {
    token: alice.token,
    body: { email: 'guest@elsewhere.test', role: 'readwrite' },
  });
  expect(inv.status).toBe(201);
  aInvitation = inv.body.id;

  expect((await asAlice('PUT', '/billing/plan', { plan: 'team', cancelAtPeriodEnd: true })).status).toBe(200);
});

describe('sessions', () => {
  for (const w of B_CALLERS) {
    it(`org A's session is not found from B (${w}): 404 session_not_found, like a session that does not exist`, async () => {
      const c = who[w];
      expect((await inB(c, 'GET', `/sessions/${bSession}`)).status).toBe(200);
      await refusedAlike(
        [404, 'session_not_found'],
        () => inB(c, 'GET', `/sessions/${aSession}`),
        () => inB(c, 'GET', `/sessions/${randomUUID()}`),
      );
    });

    it(`org B's session list never contains org A's sessions (${w})`, async () => {
      const r = await inB(who[w], 'GET', '/sessions?limit=500');
      expect(r.status).toBe(200);
      const ids = r.body.data.map((s: { id: string }) => s.id);
      expect(ids).toContain(bSession);
      expect(ids).not.toContain(aSession);
      for (const s of r.body.data) expect(s.organizationId).toBe(orgB);
      const days = await inB(who[w], 'GET', '/sessions?days=1&limit=1');
      expect(days.body.data.map((s: { id: string }) => s.id)).toEqual([bSession]);
    });
  }

  it("org A's session list never contains org B's sessions", async () => {
    const r = await asAlice('GET', '/sessions?limit=500');
    expect(r.body.data.map((s: { id: string }) => s.id)).toEqual([aSession]);
  });

  it('naming org A in X-Organization-Id is refused to B, exactly as naming an organization that does not exist', async () => {
    const bob = who['B admin token'];
    const ghost = randomUUID();
    for (const [method, path] of [['GET', '/sessions'], ['POST', '/sessions'], ['GET', `/sessions/${aSession}`]] as const) {
      await refusedAlike([403, 'not_a_member'], () => send(bob, method, path, { org: orgA }), () => send(bob, method, path, { org: ghost }));
      for (const k of [who['B admin key'], who['A+B member key of B']]) {
        await refusedAlike([403, 'wrong_organization'], () => send(k, method, path, { org: orgA }), () => send(k, method, path, { org: ghost }));
      }
    }
    const r = await asAlice('GET', '/sessions?limit=500');
    expect(r.body.data.map((s: { id: string }) => s.id)).toEqual([aSession]);
  });
});

describe('API keys', () => {
  for (const w of B_CALLERS) {
    it(`org A's key cannot be deleted from B (${w}), and the answer is the same as for a key that does not exist`, async () => {
      const c = who[w];
      const expected = interactiveOnly(c, [404, 'api_key_not_found']);
      await refusedAlike(expected, () => inB(c, 'DELETE', `/keys/${aKeyId}`), () => inB(c, 'DELETE', `/keys/${randomUUID()}`));
      const keys = await asAlice('GET', '/keys');
      expect(keys.body.data.map((k: { id: string }) => k.id)).toContain(aKeyId);
      expect((await lab.c.call('GET', `/sessions/${aSession}`, { token: aliceKey })).status).toBe(200);
    });
  }

  for (const w of ['B admin token', 'A+B member token in B'] as const) {
    it(`org B's key list never shows org A's keys (${w})`, async () => {
      const r = await inB(who[w], 'GET', '/keys');
      expect(r.status).toBe(200);
      const ids = r.body.data.map((k: { id: string }) => k.id);
      const suffixes = r.body.data.map((k: { apiKeySuffix: string }) => k.apiKeySuffix);
      expect(ids).not.toContain(aKeyId);
      expect(suffixes).not.toContain(aliceKey.slice(-6));
      expect(suffixes).not.toContain(bridgeKeyOfA.slice(-6));
      expect(suffixes).toContain(who['B admin key'].bearer.slice(-6));
    });
  }

  it("B cannot list, create or delete org A's keys by naming org A, as for an organization that does not exist", async () => {
    const bob = who['B admin token'];
    const ghost = randomUUID();
    const attempts = [
      ['GET', '/keys', undefined],
      ['POST', '/keys', { name: 'planted' }],
      ['DELETE', `/keys/${aKeyId}`, undefined],
    ] as const;
    for (const [method, path, body] of attempts) {
      await refusedAlike(
        [403, 'not_a_member'],
        () => send(bob, method, path, { org: orgA, body }),
        () => send(bob, method, path, { org: ghost, body }),
      );
    }
    const keys = await asAlice('GET', '/keys');
    expect(keys.body.data.map((k: { name: string }) => k.name)).not.toContain('planted');
    expect(keys.body.data.map((k: { id: string }) => k.id)).toContain(aKeyId);
  });

  it('a key of org A with X-Organization-Id of org B is refused (403 wrong_organization), even when its creator is in B', async () => {
    const ghost = randomUUID();
    for (const key of [aliceKey, bridgeKeyOfA]) {
      for (const [method, path] of [
        ['GET', '/sessions'],
        ['POST', '/sessions'],
        ['GET', `/sessions/${bSession}`],
        ['GET', '/billing/balance'],
      ] as const) {
        await refusedAlike(
          [403, 'wrong_organization'],
          () => lab.c.call(method, path, { token: key, org: orgB }),
          () => lab.c.call(method, path, { token: key, org: ghost }),
        );
      }
      // The same key in its own organization works.
      expect((await lab.c.call('GET', `/sessions/${aSession}`, { token: key, org: orgA })).status).toBe(200);
    }
    const r = await lab.c.call('GET', '/sessions?limit=500', { token: who['B admin token'].bearer, org: orgB });
    expect(r.body.data.map((s: { id: string }) => s.id)).toEqual([bSession]);
  });
});

describe('invitations', () => {
  const pendingOfA = async () => (await asAlice('GET', `/organizations/${orgA}/invitations`)).body.data as { id: string; email: string }[];

  for (const w of OUTSIDERS) {
    it(`org A's invitations are invisible and cannot be revoked or added to from B (${w}): 404, as for no organization`, async () => {
      const c = who[w];
      const ghost = randomUUID();
      await refusedAlike(
        [404, 'organization_not_found'],
        () => send(c, 'GET', `/organizations/${orgA}/invitations`),
        () => send(c, 'GET', `/organizations/${ghost}/invitations`),
      );
      await refusedAlike(
        [404, 'organization_not_found'],
        () => send(c, 'DELETE', `/organizations/${orgA}/invitations/${aInvitation}`),
        () => send(c, 'DELETE', `/organizations/${ghost}/invitations/${randomUUID()}`),
      );
      // amy is already a member of A: a 409 here would tell B that she is.
      for (const email of [amy.email, 'newcomer@elsewhere.test']) {
        await refusedAlike(
          [404, 'organization_not_found'],
          () => send(c, 'POST', `/organizations/${orgA}/invitations`, { body: { email, role: 'admin' } }),
          () => send(c, 'POST', `/organizations/${ghost}/invitations`, { body: { email, role: 'admin' } }),
        );
      }
      const pending = await pendingOfA();
      expect(pending.map((i) => i.id)).toEqual([aInvitation]);
    });
  }

  it("B's admin cannot revoke org A's invitation through org B: 404 invitation_not_found, as for one that does not exist", async () => {
    const bob = who['B admin token'];
    await refusedAlike(
      [404, 'invitation_not_found'],
      () => send(bob, 'DELETE', `/organizations/${orgB}/invitations/${aInvitation}`),
      () => send(bob, 'DELETE', `/organizations/${orgB}/invitations/${randomUUID()}`),
    );
    const bInvitations = await send(bob, 'GET', `/organizations/${orgB}/invitations`);
    expect(bInvitations.status).toBe(200);
    expect(bInvitations.body.data.map((i: { id: string }) => i.id)).not.toContain(aInvitation);
    expect((await pendingOfA()).map((i) => i.id)).toEqual([aInvitation]);
  });

  for (const w of B_CALLERS) {
    it(`org A's invitation to someone else cannot be accepted or rejected from B (${w})`, async () => {
      const c = who[w];
      for (const action of ['accept', 'reject']) {
        await refusedAlike(
          interactiveOnly(c, [404, 'invitation_not_found']),
          () => inB(c, 'POST', `/invitations/${aInvitation}/${action}`),
          () => inB(c, 'POST', `/invitations/${randomUUID()}/${action}`),
        );
      }
      expect((await pendingOfA()).map((i) => i.id)).toEqual([aInvitation]);
      if (c.kind === 'token') {
        const mine = await inB(c, 'GET', '/invitations');
        expect(mine.status).toBe(200);
        expect(mine.body.data.map((i: { id: string }) => i.id)).not.toContain(aInvitation);
      }
    });
  }
});

describe('members', () => {
  const rolesOfA = async () => {
    const r = await asAlice('GET', `/organizations/${orgA}/members`);
    return Object.fromEntries(r.body.data.map((m: { userId: string; role: string }) => [m.userId, m.role]));
  };

  for (const w of OUTSIDERS) {
    it(`org A's members are invisible and their roles unchangeable from B (${w}): 404, as for no organization`, async () => {
      const c = who[w];
      const ghost = randomUUID();
      await refusedAlike(
        [404, 'organization_not_found'],
        () => send(c, 'GET', `/organizations/${orgA}/members`),
        () => send(c, 'GET', `/organizations/${ghost}/members`),
      );
      await refusedAlike(
        [404, 'organization_not_found'],
        () => send(c, 'PATCH', `/organizations/${orgA}/members/${amy.id}`, { body: { role: 'admin' } }),
        () => send(c, 'PATCH', `/organizations/${ghost}/members/${randomUUID()}`, { body: { role: 'admin' } }),
      );
      expect(await rolesOfA()).toMatchObject({ [alice.id]: 'admin', [amy.id]: 'readonly' });
    });
  }

  it("B's admin cannot change the role of a member of A through org B: 404 member_not_found, as for no such user", async () => {
    const bob = who['B admin token'];
    await refusedAlike(
      [404, 'member_not_found'],
      () => send(bob, 'PATCH', `/organizations/${orgB}/members/${amy.id}`, { body: { role: 'admin' } }),
      () => send(bob, 'PATCH', `/organizations/${orgB}/members/${randomUUID()}`, { body: { role: 'admin' } }),
    );
    expect(await rolesOfA()).toMatchObject({ [amy.id]: 'readonly' });
    const bMembers = await send(bob, 'GET', `/organizations/${orgB}/members`);
    const ids = bMembers.body.data.map((m: { userId: string }) => m.userId);
    expect(ids).not.toContain(amy.id);
    expect(ids).not.toContain(alice.id);
  });
});

describe('organization settings', () => {
  const nameOfA = async () =>
    (await lab.c.call('GET', '/organizations', { token: alice.token })).body.data.find((o: { id: string }) => o.id === orgA)?.name;

  for (const w of OUTSIDERS) {
    it(`org A cannot be renamed or deleted from B (${w}): 403 (no 404 is declared), as for no organization`, async () => {
      const c = who[w];
      const ghost = randomUUID();
      const expected = interactiveOnly(c, [403, 'organization_not_found']);
      await refusedAlike(
        expected,
        () => send(c, 'PATCH', `/organizations/${orgA}`, { body: { name: 'Taken over' } }),
        () => send(c, 'PATCH', `/organizations/${ghost}`, { body: { name: 'Taken over' } }),
      );
      await refusedAlike(expected, () => send(c, 'DELETE', `/organizations/${orgA}`), () => send(c, 'DELETE', `/organizations/${ghost}`));
      expect(await nameOfA()).toBe('Alpha');
    });
  }

  for (const w of B_CALLERS) {
    it(`org B's organization list does not show org A, or shows it only to A's own member (${w})`, async () => {
      const c = who[w];
      const r = await inB(c, 'GET', '/organizations');
      expect(r.status).toBe(200);
      const ids = r.body.data.map((o: { id: string }) => o.id);
      expect(ids).toContain(orgB);
      // The A+B member is in A too; their token may list it, but nothing acting for B alone may.
      if (w !== 'A+B member token in B') expect(ids).not.toContain(orgA);
    });
  }

  it('listing organizations while naming org A is refused to B, exactly as naming one that does not exist', async () => {
    const ghost = randomUUID();
    await refusedAlike(
      [403, 'not_a_member'],
      () => send(who['B admin token'], 'GET', '/organizations', { org: orgA }),
      () => send(who['B admin token'], 'GET', '/organizations', { org: ghost }),
    );
    for (const k of [who['B admin key'], who['A+B member key of B']]) {
      await refusedAlike(
        [403, 'wrong_organization'],
        () => send(k, 'GET', '/organizations', { org: orgA }),
        () => send(k, 'GET', '/organizations', { org: ghost }),
      );
    }
  });
});

describe('a key of B whose creator is also a member of A', () => {
  it('cannot address org A by path either: 403 wrong_organization (interactive_only where keys are refused anyway)', async () => {
    const k = who['A+B member key of B'];
    // The same member's key of A reads A's members: only the key's binding refuses it.
    expect((await lab.c.call('GET', `/organizations/${orgA}/members`, { token: bridgeKeyOfA })).status).toBe(200);
    const attempts = [
      ['GET', `/organizations/${orgA}/members`, undefined, 'wrong_organization'],
      ['PATCH', `/organizations/${orgA}/members/${amy.id}`, { role: 'admin' }, 'wrong_organization'],
      ['GET', `/organizations/${orgA}/invitations`, undefined, 'wrong_organization'],
      ['POST', `/organizations/${orgA}/invitations`, { email: 'planted@elsewhere.test', role: 'admin' }, 'wrong_organization'],
      ['DELETE', `/organizations/${orgA}/invitations/${aInvitation}`, undefined, 'wrong_organization'],
      ['PATCH', `/organizations/${orgA}`, { name: 'Taken over' }, 'interactive_only'],
      ['DELETE', `/organizations/${orgA}`, undefined, 'interactive_only'],
    ] as const;
    for (const [method, path, body, code] of attempts) {
      const r = await send(k, method, path, { body });
      expect([method, path, r.status, errorCode(r)]).toEqual([method, path, 403, code]);
    }
    const members = await asAlice('GET', `/organizations/${orgA}/members`);
    expect(members.body.data).toContainEqual(expect.objectContaining({ userId: amy.id, role: 'readonly' }));
    const pending = await asAlice('GET', `/organizations/${orgA}/invitations`);
    expect(pending.body.data.map((i: { id: string }) => i.id)).toEqual([aInvitation]);
    const orgs = await lab.c.call('GET', '/organizations', { token: alice.token });
    expect(orgs.body.data).toContainEqual(expect.objectContaining({ id: orgA, name: 'Alpha' }));
  });
});

describe('billing', () => {
  const planOfA = async () => (await asAlice('GET', '/billing/balance')).body;

  it("org A's balance cannot be read from B, exactly as an organization that does not exist", async () => {
    const ghost = randomUUID();
    const bob = who['B admin token'];
    await refusedAlike(
      [403, 'not_a_member'],
      () => send(bob, 'GET', '/billing/balance', { org: orgA }),
      () => send(bob, 'GET', '/billing/balance', { org: ghost }),
    );
    for (const k of [who['B admin key'], who['A+B member key of B']]) {
      await refusedAlike(
        [403, 'wrong_organization'],
        () => send(k, 'GET', '/billing/balance', { org: orgA }),
        () => send(k, 'GET', '/billing/balance', { org: ghost }),
      );
    }
  });

  it("org A's plan cannot be changed from B (B's admin, token or key), and is unchanged afterwards", async () => {
    const ghost = randomUUID();
    const body = { plan: 'hobby' };
    const bob = who['B admin token'];
    await refusedAlike(
      [403, 'not_a_member'],
      () => send(bob, 'PUT', '/billing/plan', { org: orgA, body }),
      () => send(bob, 'PUT', '/billing/plan', { org: ghost, body }),
    );
    await refusedAlike(
      [403, 'wrong_organization'],
      () => send(who['B admin key'], 'PUT', '/billing/plan', { org: orgA, body }),
      () => send(who['B admin key'], 'PUT', '/billing/plan', { org: ghost, body }),
    );
    expect(await planOfA()).toMatchObject({ plan: 'team', subscription: { cancelAtPeriodEnd: true } });
  });

  it("each organization's balance is its own: B changing its plan leaves A's alone", async () => {
    for (const w of B_CALLERS) {
      const r = await inB(who[w], 'GET', '/billing/balance');
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ plan: 'hobby', subscription: null });
    }
    const set = await inB(who['B admin key'], 'PUT', '/billing/plan', { plan: 'pro', cancelAtPeriodEnd: true });
    expect(set.status).toBe(200);
    expect(set.body.plan).toBe('pro');
    expect((await planOfA()).plan).toBe('team');
    expect((await inB(who['B admin token'], 'GET', '/billing/balance')).body.plan).toBe('pro');
  });
});
