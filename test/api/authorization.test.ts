import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, startEngine, type CallOptions, type Reply, type TestEngine } from '../support/engine.js';

/**
 * The authorization matrix: every operation of the control plane, called by an interactive user and by an API
 * key of each role in the organization "Matrix", and by an account that is not a member of it. Every cell states
 * its outcome; allowed cells also check what the call did, refused cells check that nothing changed.
 */

const OPS = [
  'GET /me',
  'GET /keys',
  'POST /keys',
  'DELETE /keys/{id}',
  'GET /invitations',
  'GET /organizations/{id}/invitations',
  'POST /organizations/{id}/invitations',
  'DELETE /organizations/{id}/invitations/{invId}',
  'GET /organizations',
  'PATCH /organizations/{id}',
  'DELETE /organizations/{id}',
  'GET /organizations/{id}/members',
  'PATCH /organizations/{id}/members/{userId}',
  'GET /billing/balance',
  'PUT /billing/plan',
  'GET /sessions',
  'POST /sessions',
  'GET /sessions/{id}',
] as const;
type Op = (typeof OPS)[number];

const KINDS = ['interactive', 'API key'] as const;
type Kind = (typeof KINDS)[number];
const ROLES = ['admin', 'readwrite', 'readonly', 'non-member'] as const;
type Role = (typeof ROLES)[number];

/** A success status, or the refusal as [status, error code]. */
type Expect = 200 | 201 | 204 | readonly [403 | 404 | 409, string];
interface Row {
  op: Op;
  caller: Kind;
  role: Role;
  expect: Expect;
}

const I = 'interactive';
const K = 'API key';
const NOT_MEMBER: Expect = [403, 'not_a_member'];
const WRONG_ORG: Expect = [403, 'wrong_organization'];
const INTERACTIVE_ONLY: Expect = [403, 'interactive_only'];
const ROLE_TOO_LOW: Expect = [403, 'insufficient_role'];
const ORG_NOT_FOUND: Expect = [404, 'organization_not_found'];
/** PATCH and DELETE /organizations/{id} declare no 404: an organization the caller is not in is a 403. */
const ORG_NOT_FOUND_AS_403: Expect = [403, 'organization_not_found'];

const MATRIX: Row[] = [
  { op: 'GET /me', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /me', caller: I, role: 'readwrite', expect: 200 },
  { op: 'GET /me', caller: I, role: 'readonly', expect: 200 },
  { op: 'GET /me', caller: I, role: 'non-member', expect: 200 },
  { op: 'GET /me', caller: K, role: 'admin', expect: 200 },
  { op: 'GET /me', caller: K, role: 'readwrite', expect: 200 },
  { op: 'GET /me', caller: K, role: 'readonly', expect: 200 },
  { op: 'GET /me', caller: K, role: 'non-member', expect: 200 },

  { op: 'GET /keys', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /keys', caller: I, role: 'readwrite', expect: 200 },
  { op: 'GET /keys', caller: I, role: 'readonly', expect: 200 },
  { op: 'GET /keys', caller: I, role: 'non-member', expect: NOT_MEMBER },
  { op: 'GET /keys', caller: K, role: 'admin', expect: INTERACTIVE_ONLY },
  { op: 'GET /keys', caller: K, role: 'readwrite', expect: INTERACTIVE_ONLY },
  { op: 'GET /keys', caller: K, role: 'readonly', expect: INTERACTIVE_ONLY },
  { op: 'GET /keys', caller: K, role: 'non-member', expect: WRONG_ORG },

  { op: 'POST /keys', caller: I, role: 'admin', expect: 201 },
  { op: 'POST /keys', caller: I, role: 'readwrite', expect: 201 },
  { op: 'POST /keys', caller: I, role: 'readonly', expect: 201 },
  { op: 'POST /keys', caller: I, role: 'non-member', expect: NOT_MEMBER },
  { op: 'POST /keys', caller: K, role: 'admin', expect: INTERACTIVE_ONLY },
  { op: 'POST /keys', caller: K, role: 'readwrite', expect: INTERACTIVE_ONLY },
  { op: 'POST /keys', caller: K, role: 'readonly', expect: INTERACTIVE_ONLY },
  { op: 'POST /keys', caller: K, role: 'non-member', expect: WRONG_ORG },

  { op: 'DELETE /keys/{id}', caller: I, role: 'admin', expect: 204 },
  { op: 'DELETE /keys/{id}', caller: I, role: 'readwrite', expect: 204 },
  { op: 'DELETE /keys/{id}', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'DELETE /keys/{id}', caller: I, role: 'non-member', expect: NOT_MEMBER },
  { op: 'DELETE /keys/{id}', caller: K, role: 'admin', expect: INTERACTIVE_ONLY },
  { op: 'DELETE /keys/{id}', caller: K, role: 'readwrite', expect: INTERACTIVE_ONLY },
  { op: 'DELETE /keys/{id}', caller: K, role: 'readonly', expect: INTERACTIVE_ONLY },
  { op: 'DELETE /keys/{id}', caller: K, role: 'non-member', expect: WRONG_ORG },

  { op: 'GET /invitations', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /invitations', caller: I, role: 'readwrite', expect: 200 },
  { op: 'GET /invitations', caller: I, role: 'readonly', expect: 200 },
  { op: 'GET /invitations', caller: I, role: 'non-member', expect: 200 },
  { op: 'GET /invitations', caller: K, role: 'admin', expect: INTERACTIVE_ONLY },
  { op: 'GET /invitations', caller: K, role: 'readwrite', expect: INTERACTIVE_ONLY },
  { op: 'GET /invitations', caller: K, role: 'readonly', expect: INTERACTIVE_ONLY },
  { op: 'GET /invitations', caller: K, role: 'non-member', expect: INTERACTIVE_ONLY },

  { op: 'GET /organizations/{id}/invitations', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /organizations/{id}/invitations', caller: I, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'GET /organizations/{id}/invitations', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'GET /organizations/{id}/invitations', caller: I, role: 'non-member', expect: ORG_NOT_FOUND },
  { op: 'GET /organizations/{id}/invitations', caller: K, role: 'admin', expect: 200 },
  { op: 'GET /organizations/{id}/invitations', caller: K, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'GET /organizations/{id}/invitations', caller: K, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'GET /organizations/{id}/invitations', caller: K, role: 'non-member', expect: ORG_NOT_FOUND },

  { op: 'POST /organizations/{id}/invitations', caller: I, role: 'admin', expect: 201 },
  { op: 'POST /organizations/{id}/invitations', caller: I, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'POST /organizations/{id}/invitations', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'POST /organizations/{id}/invitations', caller: I, role: 'non-member', expect: ORG_NOT_FOUND },
  { op: 'POST /organizations/{id}/invitations', caller: K, role: 'admin', expect: 201 },
  { op: 'POST /organizations/{id}/invitations', caller: K, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'POST /organizations/{id}/invitations', caller: K, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'POST /organizations/{id}/invitations', caller: K, role: 'non-member', expect: ORG_NOT_FOUND },

  { op: 'DELETE /organizations/{id}/invitations/{invId}', caller: I, role: 'admin', expect: 204 },
  { op: 'DELETE /organizations/{id}/invitations/{invId}', caller: I, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'DELETE /organizations/{id}/invitations/{invId}', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'DELETE /organizations/{id}/invitations/{invId}', caller: I, role: 'non-member', expect: ORG_NOT_FOUND },
  { op: 'DELETE /organizations/{id}/invitations/{invId}', caller: K, role: 'admin', expect: 204 },
  { op: 'DELETE /organizations/{id}/invitations/{invId}', caller: K, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'DELETE /organizations/{id}/invitations/{invId}', caller: K, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'DELETE /organizations/{id}/invitations/{invId}', caller: K, role: 'non-member', expect: ORG_NOT_FOUND },

  { op: 'GET /organizations', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /organizations', caller: I, role: 'readwrite', expect: 200 },
  { op: 'GET /organizations', caller: I, role: 'readonly', expect: 200 },
  { op: 'GET /organizations', caller: I, role: 'non-member', expect: 200 },
  { op: 'GET /organizations', caller: K, role: 'admin', expect: 200 },
  { op: 'GET /organizations', caller: K, role: 'readwrite', expect: 200 },
  { op: 'GET /organizations', caller: K, role: 'readonly', expect: 200 },
  { op: 'GET /organizations', caller: K, role: 'non-member', expect: 200 },

  { op: 'PATCH /organizations/{id}', caller: I, role: 'admin', expect: 200 },
  { op: 'PATCH /organizations/{id}', caller: I, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'PATCH /organizations/{id}', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'PATCH /organizations/{id}', caller: I, role: 'non-member', expect: ORG_NOT_FOUND_AS_403 },
  { op: 'PATCH /organizations/{id}', caller: K, role: 'admin', expect: INTERACTIVE_ONLY },
  { op: 'PATCH /organizations/{id}', caller: K, role: 'readwrite', expect: INTERACTIVE_ONLY },
  { op: 'PATCH /organizations/{id}', caller: K, role: 'readonly', expect: INTERACTIVE_ONLY },
  { op: 'PATCH /organizations/{id}', caller: K, role: 'non-member', expect: INTERACTIVE_ONLY },

  // Matrix has other members, so even its admin meets the sole-member rule (the 204 is a test of its own below).
  { op: 'DELETE /organizations/{id}', caller: I, role: 'admin', expect: [409, 'not_sole_member'] },
  { op: 'DELETE /organizations/{id}', caller: I, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'DELETE /organizations/{id}', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'DELETE /organizations/{id}', caller: I, role: 'non-member', expect: ORG_NOT_FOUND_AS_403 },
  { op: 'DELETE /organizations/{id}', caller: K, role: 'admin', expect: INTERACTIVE_ONLY },
  { op: 'DELETE /organizations/{id}', caller: K, role: 'readwrite', expect: INTERACTIVE_ONLY },
  { op: 'DELETE /organizations/{id}', caller: K, role: 'readonly', expect: INTERACTIVE_ONLY },
  { op: 'DELETE /organizations/{id}', caller: K, role: 'non-member', expect: INTERACTIVE_ONLY },

  { op: 'GET /organizations/{id}/members', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /organizations/{id}/members', caller: I, role: 'readwrite', expect: 200 },
  { op: 'GET /organizations/{id}/members', caller: I, role: 'readonly', expect: 200 },
  { op: 'GET /organizations/{id}/members', caller: I, role: 'non-member', expect: ORG_NOT_FOUND },
  { op: 'GET /organizations/{id}/members', caller: K, role: 'admin', expect: 200 },
  { op: 'GET /organizations/{id}/members', caller: K, role: 'readwrite', expect: 200 },
  { op: 'GET /organizations/{id}/members', caller: K, role: 'readonly', expect: 200 },
  { op: 'GET /organizations/{id}/members', caller: K, role: 'non-member', expect: ORG_NOT_FOUND },

  { op: 'PATCH /organizations/{id}/members/{userId}', caller: I, role: 'admin', expect: 200 },
  { op: 'PATCH /organizations/{id}/members/{userId}', caller: I, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'PATCH /organizations/{id}/members/{userId}', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'PATCH /organizations/{id}/members/{userId}', caller: I, role: 'non-member', expect: ORG_NOT_FOUND },
  { op: 'PATCH /organizations/{id}/members/{userId}', caller: K, role: 'admin', expect: 200 },
  { op: 'PATCH /organizations/{id}/members/{userId}', caller: K, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'PATCH /organizations/{id}/members/{userId}', caller: K, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'PATCH /organizations/{id}/members/{userId}', caller: K, role: 'non-member', expect: ORG_NOT_FOUND },

  { op: 'GET /billing/balance', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /billing/balance', caller: I, role: 'readwrite', expect: 200 },
  { op: 'GET /billing/balance', caller: I, role: 'readonly', expect: 200 },
  { op: 'GET /billing/balance', caller: I, role: 'non-member', expect: NOT_MEMBER },
  { op: 'GET /billing/balance', caller: K, role: 'admin', expect: 200 },
  { op: 'GET /billing/balance', caller: K, role: 'readwrite', expect: 200 },
  { op: 'GET /billing/balance', caller: K, role: 'readonly', expect: 200 },
  { op: 'GET /billing/balance', caller: K, role: 'non-member', expect: WRONG_ORG },

  { op: 'PUT /billing/plan', caller: I, role: 'admin', expect: 200 },
  { op: 'PUT /billing/plan', caller: I, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'PUT /billing/plan', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'PUT /billing/plan', caller: I, role: 'non-member', expect: NOT_MEMBER },
  { op: 'PUT /billing/plan', caller: K, role: 'admin', expect: 200 },
  { op: 'PUT /billing/plan', caller: K, role: 'readwrite', expect: ROLE_TOO_LOW },
  { op: 'PUT /billing/plan', caller: K, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'PUT /billing/plan', caller: K, role: 'non-member', expect: WRONG_ORG },

  { op: 'GET /sessions', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /sessions', caller: I, role: 'readwrite', expect: 200 },
  { op: 'GET /sessions', caller: I, role: 'readonly', expect: 200 },
  { op: 'GET /sessions', caller: I, role: 'non-member', expect: NOT_MEMBER },
  { op: 'GET /sessions', caller: K, role: 'admin', expect: 200 },
  { op: 'GET /sessions', caller: K, role: 'readwrite', expect: 200 },
  { op: 'GET /sessions', caller: K, role: 'readonly', expect: 200 },
  { op: 'GET /sessions', caller: K, role: 'non-member', expect: WRONG_ORG },

  { op: 'POST /sessions', caller: I, role: 'admin', expect: 201 },
  { op: 'POST /sessions', caller: I, role: 'readwrite', expect: 201 },
  { op: 'POST /sessions', caller: I, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'POST /sessions', caller: I, role: 'non-member', expect: NOT_MEMBER },
  { op: 'POST /sessions', caller: K, role: 'admin', expect: 201 },
  { op: 'POST /sessions', caller: K, role: 'readwrite', expect: 201 },
  { op: 'POST /sessions', caller: K, role: 'readonly', expect: ROLE_TOO_LOW },
  { op: 'POST /sessions', caller: K, role: 'non-member', expect: WRONG_ORG },

  { op: 'GET /sessions/{id}', caller: I, role: 'admin', expect: 200 },
  { op: 'GET /sessions/{id}', caller: I, role: 'readwrite', expect: 200 },
  { op: 'GET /sessions/{id}', caller: I, role: 'readonly', expect: 200 },
  { op: 'GET /sessions/{id}', caller: I, role: 'non-member', expect: NOT_MEMBER },
  { op: 'GET /sessions/{id}', caller: K, role: 'admin', expect: 200 },
  { op: 'GET /sessions/{id}', caller: K, role: 'readwrite', expect: 200 },
  { op: 'GET /sessions/{id}', caller: K, role: 'readonly', expect: 200 },
  { op: 'GET /sessions/{id}', caller: K, role: 'non-member', expect: WRONG_ORG },
];

interface Caller {
  kind: Kind;
  role: Role;
  bearer: string;
  userId: string;
  email: string;
  /**
   * X-Organization-Id sent on header-scoped operations: interactive users and the non-member's key name Matrix;
   * a member's key sends none, so its own organization (Matrix) is selected.
   */
  org?: string;
}

/** One attempt at an operation: the reply, and what must hold afterwards if it was allowed or refused. */
interface Attempt {
  reply: Reply;
  ifAllowed?: () => Promise<void>;
  ifRefused?: () => Promise<void>;
}

let t: TestEngine;
let api: ReturnType<typeof client>;
let ownerToken: string;
let matrix: string;
/** A session of Matrix, created by the owner. */
let matrixSession: string;
/** A pending invitation of Matrix to an email that has no account. */
let matrixInvitation: string;
/** The member whose role the role-change cells change (readonly at rest). */
let target: { token: string; user: { id: string; email: string } };
const MATRIX_PLAN = 'team';
const callers = {} as Record<Kind, Record<Role, Caller>>;
let seq = 0;

const owner = (method: string, path: string, options: CallOptions = {}) =>
  api.call(method, path, { token: ownerToken, ...options });
const as = (c: Caller, method: string, path: string, options: { body?: unknown; scoped?: boolean } = {}) =>
  api.call(method, path, { token: c.bearer, org: options.scoped ? c.org : undefined, body: options.body });

async function ownerKeyIds(): Promise<string[]> {
  const r = await owner('GET', '/keys', { org: matrix });
  expect(r.status).toBe(200);
  return r.body.data.map((k: { id: string }) => k.id);
}
async function ownerInvitations(): Promise<{ id: string; email: string }[]> {
  const r = await owner('GET', `/organizations/${matrix}/invitations`);
  expect(r.status).toBe(200);
  return r.body.data;
}
async function ownerSessionIds(): Promise<string[]> {
  const r = await owner('GET', '/sessions?limit=500', { org: matrix });
  expect(r.status).toBe(200);
  return r.body.data.map((s: { id: string }) => s.id);
}
async function matrixName(): Promise<string> {
  const r = await owner('GET', '/organizations');
  expect(r.status).toBe(200);
  return r.body.data.find((o: { id: string }) => o.id === matrix).name;
}
async function roleOfTarget(): Promise<string> {
  const r = await owner('GET', `/organizations/${matrix}/members`);
  expect(r.status).toBe(200);
  return r.body.data.find((m: { userId: string }) => m.userId === target.user.id).role;
}
async function matrixPlan(): Promise<string> {
  const r = await owner('GET', '/billing/balance', { org: matrix });
  expect(r.status).toBe(200);
  return r.body.plan;
}

const OPERATIONS: Record<Op, (c: Caller) => Promise<Attempt>> = {
  // An API key acts for the member who created it.
  'GET /me': async (c) => {
    const reply = await as(c, 'GET', '/me');
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ id: c.userId, email: c.email });
      },
    };
  },

  'GET /keys': async (c) => {
    const reply = await as(c, 'GET', '/keys', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        const suffixes = reply.body.data.map((k: { apiKeySuffix: string }) => k.apiKeySuffix);
        for (const role of ['admin', 'readwrite', 'readonly'] as const) {
          expect(suffixes).toContain(callers[K][role].bearer.slice(-6));
        }
        expect(suffixes).not.toContain(callers[K]['non-member'].bearer.slice(-6));
        for (const k of reply.body.data) expect(k).not.toHaveProperty('apiKey');
      },
    };
  },

  'POST /keys': async (c) => {
    const name = `cell key ${++seq}`;
    const reply = await as(c, 'POST', '/keys', { scoped: true, body: { name } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.name).toBe(name);
        expect(reply.body.apiKey).toMatch(/^mob_/);
        expect(await ownerKeyIds()).toContain(reply.body.id);
        // The new key is bound to Matrix: without a header it acts there.
        const used = await api.call('GET', `/sessions/${matrixSession}`, { token: reply.body.apiKey });
        expect(used.status).toBe(200);
      },
      ifRefused: async () => {
        const r = await owner('GET', '/keys', { org: matrix });
        expect(r.body.data.map((k: { name: string }) => k.name)).not.toContain(name);
      },
    };
  },

  'DELETE /keys/{id}': async (c) => {
    const victim = await owner('POST', '/keys', { org: matrix, body: { name: `victim ${++seq}` } });
    expect(victim.status).toBe(201);
    const reply = await as(c, 'DELETE', `/keys/${victim.body.id}`, { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(await ownerKeyIds()).not.toContain(victim.body.id);
        const used = await api.call('GET', '/me', { token: victim.body.apiKey });
        expect(used.status).toBe(401);
        expect(errorCode(used)).toBe('unauthorized');
      },
      ifRefused: async () => {
        expect(await ownerKeyIds()).toContain(victim.body.id);
        expect((await api.call('GET', '/me', { token: victim.body.apiKey })).status).toBe(200);
      },
    };
  },

  'GET /invitations': async (c) => {
    const reply = await as(c, 'GET', '/invitations');
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.object).toBe('list');
        for (const inv of reply.body.data) expect(inv.email).toBe(c.email);
        expect(reply.body.data.map((i: { id: string }) => i.id)).not.toContain(matrixInvitation);
      },
    };
  },

  'GET /organizations/{id}/invitations': async (c) => {
    const reply = await as(c, 'GET', `/organizations/${matrix}/invitations`);
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.data.map((i: { id: string }) => i.id)).toContain(matrixInvitation);
        for (const inv of reply.body.data) expect(inv.organizationId).toBe(matrix);
      },
    };
  },

  'POST /organizations/{id}/invitations': async (c) => {
    const email = `invitee-${++seq}@lab.test`;
    const reply = await as(c, 'POST', `/organizations/${matrix}/invitations`, { body: { email, role: 'readonly' } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ email, role: 'readonly', status: 'pending', organizationId: matrix, invitedBy: c.userId });
        expect((await ownerInvitations()).map((i) => i.id)).toContain(reply.body.id);
      },
      ifRefused: async () => {
        expect((await ownerInvitations()).map((i) => i.email)).not.toContain(email);
      },
    };
  },

  'DELETE /organizations/{id}/invitations/{invId}': async (c) => {
    const inv = await owner('POST', `/organizations/${matrix}/invitations`, {
      body: { email: `revokable-${++seq}@lab.test`, role: 'readwrite' },
    });
    expect(inv.status).toBe(201);
    const reply = await as(c, 'DELETE', `/organizations/${matrix}/invitations/${inv.body.id}`);
    return {
      reply,
      ifAllowed: async () => {
        expect((await ownerInvitations()).map((i) => i.id)).not.toContain(inv.body.id);
      },
      ifRefused: async () => {
        expect((await ownerInvitations()).map((i) => i.id)).toContain(inv.body.id);
      },
    };
  },

  'GET /organizations': async (c) => {
    const reply = await as(c, 'GET', '/organizations');
    return {
      reply,
      ifAllowed: async () => {
        const mine = reply.body.data.find((o: { id: string }) => o.id === matrix);
        if (c.role === 'non-member') expect(mine).toBeUndefined();
        else expect(mine).toMatchObject({ id: matrix, role: c.role, personal: false });
      },
    };
  },

  'PATCH /organizations/{id}': async (c) => {
    const name = `Matrix renamed ${++seq}`;
    const reply = await as(c, 'PATCH', `/organizations/${matrix}`, { body: { name } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ id: matrix, name });
        expect(await matrixName()).toBe(name);
        expect((await owner('PATCH', `/organizations/${matrix}`, { body: { name: 'Matrix' } })).status).toBe(200);
      },
      ifRefused: async () => {
        expect(await matrixName()).toBe('Matrix');
      },
    };
  },

  'DELETE /organizations/{id}': async (c) => ({
    reply: await as(c, 'DELETE', `/organizations/${matrix}`),
    ifRefused: async () => {
      expect(await matrixName()).toBe('Matrix');
      expect((await owner('GET', `/organizations/${matrix}/members`)).status).toBe(200);
    },
  }),

  'GET /organizations/{id}/members': async (c) => {
    const reply = await as(c, 'GET', `/organizations/${matrix}/members`);
    return {
      reply,
      ifAllowed: async () => {
        const members = reply.body.data as { userId: string; role: string }[];
        expect(members).toContainEqual(expect.objectContaining({ userId: c.userId, role: c.role }));
        expect(members).toContainEqual(expect.objectContaining({ userId: target.user.id, role: 'readonly' }));
        expect(members.map((m) => m.userId)).not.toContain(callers[I]['non-member'].userId);
      },
    };
  },

  'PATCH /organizations/{id}/members/{userId}': async (c) => {
    const reply = await as(c, 'PATCH', `/organizations/${matrix}/members/${target.user.id}`, { body: { role: 'readwrite' } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ userId: target.user.id, role: 'readwrite' });
        expect(await roleOfTarget()).toBe('readwrite');
        const reset = await owner('PATCH', `/organizations/${matrix}/members/${target.user.id}`, { body: { role: 'readonly' } });
        expect(reset.status).toBe(200);
      },
      ifRefused: async () => {
        expect(await roleOfTarget()).toBe('readonly');
      },
    };
  },

  'GET /billing/balance': async (c) => {
    const reply = await as(c, 'GET', '/billing/balance', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        // Matrix is on a paid plan and every Personal organization on hobby: this is Matrix's balance.
        expect(reply.body.plan).toBe(MATRIX_PLAN);
        expect(reply.body.subscription).toMatchObject({ status: 'active', cancelAtPeriodEnd: true });
        expect(typeof reply.body.secondsRemaining.devices).toBe('number');
        expect(typeof reply.body.secondsRemaining.instances).toBe('number');
      },
    };
  },

  'PUT /billing/plan': async (c) => {
    const reply = await as(c, 'PUT', '/billing/plan', { scoped: true, body: { plan: 'pro', cancelAtPeriodEnd: true } });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.plan).toBe('pro');
        expect(await matrixPlan()).toBe('pro');
        const reset = await owner('PUT', '/billing/plan', { org: matrix, body: { plan: MATRIX_PLAN, cancelAtPeriodEnd: true } });
        expect(reset.status).toBe(200);
      },
      ifRefused: async () => {
        expect(await matrixPlan()).toBe(MATRIX_PLAN);
      },
    };
  },

  'GET /sessions': async (c) => {
    const reply = await as(c, 'GET', '/sessions?limit=500', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body.data.map((s: { id: string }) => s.id)).toContain(matrixSession);
        for (const s of reply.body.data) expect(s.organizationId).toBe(matrix);
      },
    };
  },

  'POST /sessions': async (c) => {
    const before = await ownerSessionIds();
    const reply = await as(c, 'POST', '/sessions', { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ organizationId: matrix, createdBy: c.userId, devices: [], instances: [] });
        expect(await ownerSessionIds()).toContain(reply.body.id);
      },
      ifRefused: async () => {
        expect(await ownerSessionIds()).toEqual(before);
      },
    };
  },

  'GET /sessions/{id}': async (c) => {
    const reply = await as(c, 'GET', `/sessions/${matrixSession}`, { scoped: true });
    return {
      reply,
      ifAllowed: async () => {
        expect(reply.body).toMatchObject({ id: matrixSession, organizationId: matrix });
      },
    };
  },
};

const show = (e: Expect) => (typeof e === 'number' ? String(e) : `${e[0]} ${e[1]}`);

beforeAll(async () => {
  t = await startEngine();
  api = client(t.api);
  ownerToken = await api.login();
  matrix = await api.createOrganization(ownerToken, 'Matrix');
  for (const role of ROLES) {
    const email = `${role}@lab.test`;
    const account = await api.signup(email);
    if (role !== 'non-member') await api.addMember(ownerToken, matrix, account.token, email, role);
    // A member's key is bound to Matrix; the non-member's to their own Personal organization.
    const key = await api.createKey(account.token, role === 'non-member' ? undefined : matrix, `${role} key`);
    callers[I] ??= {} as Record<Role, Caller>;
    callers[K] ??= {} as Record<Role, Caller>;
    callers[I][role] = { kind: I, role, bearer: account.token, userId: account.user.id, email, org: matrix };
    callers[K][role] = {
      kind: K,
      role,
      bearer: key,
      userId: account.user.id,
      email,
      org: role === 'non-member' ? matrix : undefined,
    };
  }
  target = await api.signup('target@lab.test');
  await api.addMember(ownerToken, matrix, target.token, 'target@lab.test', 'readonly');

  const session = await owner('POST', '/sessions', { org: matrix });
  expect(session.status).toBe(201);
  matrixSession = session.body.id;
  const inv = await owner('POST', `/organizations/${matrix}/invitations`, { body: { email: 'pending@lab.test', role: 'readonly' } });
  expect(inv.status).toBe(201);
  matrixInvitation = inv.body.id;
  const plan = await owner('PUT', '/billing/plan', { org: matrix, body: { plan: MATRIX_PLAN, cancelAtPeriodEnd: true } });
  expect(plan.status).toBe(200);
});
afterAll(() => t?.stop());

describe('authorization matrix', () => {
  it('has exactly one cell for every operation, caller kind and role', () => {
    const cells = MATRIX.map((r) => `${r.op} | ${r.caller} | ${r.role}`);
    expect(new Set(cells).size).toBe(cells.length);
    expect(cells.length).toBe(OPS.length * KINDS.length * ROLES.length);
  });

  for (const row of MATRIX) {
    it(`${row.op} · ${row.caller} ${row.role} → ${show(row.expect)}`, async () => {
      const attempt = await OPERATIONS[row.op](callers[row.caller][row.role]);
      const { reply } = attempt;
      if (typeof row.expect === 'number') {
        expect(reply.status, JSON.stringify(reply.body)).toBe(row.expect);
        await attempt.ifAllowed?.();
      } else {
        expect([reply.status, errorCode(reply)]).toEqual(row.expect);
        await attempt.ifRefused?.();
      }
    });
  }
});

describe('role changes', () => {
  it('a sole admin deletes their own fresh organization (204), which then is gone', async () => {
    const admin = callers[I].admin;
    const fresh = await api.createOrganization(admin.bearer, `Fresh ${++seq}`);
    const r = await as(admin, 'DELETE', `/organizations/${fresh}`);
    expect(r.status, JSON.stringify(r.body)).toBe(204);
    const after = await as(admin, 'GET', `/organizations/${fresh}/members`);
    expect([after.status, errorCode(after)]).toEqual([404, 'organization_not_found']);
  });

  it('nobody can change their own role, with a token or a key (403 own_role)', async () => {
    for (const c of [callers[I].admin, callers[K].admin]) {
      const r = await as(c, 'PATCH', `/organizations/${matrix}/members/${c.userId}`, { body: { role: 'readonly' } });
      expect([r.status, errorCode(r)]).toEqual([403, 'own_role']);
    }
    const me = (await owner('GET', '/me')).body.id as string;
    const r = await owner('PATCH', `/organizations/${matrix}/members/${me}`, { body: { role: 'readwrite' } });
    expect([r.status, errorCode(r)]).toEqual([403, 'own_role']);
    const members = await owner('GET', `/organizations/${matrix}/members`);
    expect(members.body.data).toContainEqual(expect.objectContaining({ userId: me, role: 'admin' }));
    expect(members.body.data).toContainEqual(expect.objectContaining({ userId: callers[I].admin.userId, role: 'admin' }));
  });

  it('a demotion from admin to readonly applies on the very next request, by token and by key', async () => {
    const email = `demoted-${++seq}@lab.test`;
    const account = await api.signup(email);
    await api.addMember(ownerToken, matrix, account.token, email, 'admin');
    const key = await api.createKey(account.token, matrix, 'demoted key');
    const token: Caller = { kind: I, role: 'admin', bearer: account.token, userId: account.user.id, email, org: matrix };
    const apiKey: Caller = { ...token, kind: K, bearer: key, org: undefined };

    for (const c of [token, apiKey]) {
      expect((await as(c, 'GET', `/organizations/${matrix}/invitations`)).status).toBe(200);
      expect((await as(c, 'POST', '/sessions', { scoped: true })).status).toBe(201);
    }

    const demote = await owner('PATCH', `/organizations/${matrix}/members/${account.user.id}`, { body: { role: 'readonly' } });
    expect(demote.status).toBe(200);
    expect(demote.body).toMatchObject({ userId: account.user.id, role: 'readonly' });

    for (const c of [token, apiKey]) {
      const admin = await as(c, 'GET', `/organizations/${matrix}/invitations`);
      expect([admin.status, errorCode(admin)]).toEqual([403, 'insufficient_role']);
      const write = await as(c, 'POST', '/sessions', { scoped: true });
      expect([write.status, errorCode(write)]).toEqual([403, 'insufficient_role']);
      // Still a member: reading goes on.
      expect((await as(c, 'GET', '/sessions', { scoped: true })).status).toBe(200);
    }
    const orgs = await as(token, 'GET', '/organizations');
    expect(orgs.body.data).toContainEqual(expect.objectContaining({ id: matrix, role: 'readonly' }));
  });

  it('a promotion from readonly to readwrite applies on the very next request, by token and by key', async () => {
    const email = `promoted-${++seq}@lab.test`;
    const account = await api.signup(email);
    await api.addMember(ownerToken, matrix, account.token, email, 'readonly');
    const key = await api.createKey(account.token, matrix, 'promoted key');
    const token: Caller = { kind: I, role: 'readonly', bearer: account.token, userId: account.user.id, email, org: matrix };
    const apiKey: Caller = { ...token, kind: K, bearer: key, org: undefined };

    for (const c of [token, apiKey]) {
      const r = await as(c, 'POST', '/sessions', { scoped: true });
      expect([r.status, errorCode(r)]).toEqual([403, 'insufficient_role']);
    }
    const promote = await owner('PATCH', `/organizations/${matrix}/members/${account.user.id}`, { body: { role: 'readwrite' } });
    expect(promote.status).toBe(200);
    for (const c of [token, apiKey]) {
      const r = await as(c, 'POST', '/sessions', { scoped: true });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.body).toMatchObject({ organizationId: matrix, createdBy: account.user.id });
    }
  });
});
