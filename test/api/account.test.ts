import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { OWNER_EMAIL, errorCode, useEngine } from '../support/engine.js';

const lab = useEngine();

describe('POST /auth/login', () => {
  it('200 with {token, expiresAt, user} for the lab owner created on first start', async () => {
    const r = await lab.c.call('POST', '/auth/login', { body: { email: OWNER_EMAIL, password: 'owner-password' } });
    expect(r.status).toBe(200);
    expect(typeof r.body.token).toBe('string');
    expect(Date.parse(r.body.expiresAt)).toBeGreaterThan(Date.now());
    expect(r.body.user).toMatchObject({ email: OWNER_EMAIL, labOwner: true });
    expect(r.body.user.passwordHash).toBeUndefined();
  });

  it('401 for a wrong password and for an unknown email, with the same body', async () => {
    const wrong = await lab.c.call('POST', '/auth/login', { body: { email: OWNER_EMAIL, password: 'nope-nope' } });
    const unknown = await lab.c.call('POST', '/auth/login', { body: { email: 'ghost@lab.test', password: 'nope-nope' } });
    expect(wrong.status).toBe(401);
    expect(unknown.status).toBe(401);
    expect(wrong.body).toEqual(unknown.body);
    expect(errorCode(wrong)).toBe('unauthorized');
  });

  it('400 for malformed JSON, wrong types, missing and extra fields', async () => {
    for (const raw of ['{', '[]', '"x"', '{"email":1,"password":"x"}', '{"email":"a@b.c"}', '{"email":"a@b.c","password":"x","admin":true}']) {
      const r = await lab.c.call('POST', '/auth/login', { raw });
      expect(r.status, raw).toBe(400);
      errorCode(r);
    }
  });
});

describe('POST /auth/signup', () => {
  it('201 creates an account with its Personal organization, where it is admin', async () => {
    const r = await lab.c.call('POST', '/auth/signup', { body: { email: 'new@lab.test', password: 'password-1', name: 'New' } });
    expect(r.status).toBe(201);
    expect(r.body.user).toMatchObject({ email: 'new@lab.test', name: 'New', labOwner: false });
    const orgs = await lab.c.call('GET', '/organizations', { token: r.body.token });
    expect(orgs.body.data).toEqual([expect.objectContaining({ name: 'Personal', personal: true, role: 'admin' })]);
  });

  it('409 for an email that already has an account, in any case', async () => {
    const r = await lab.c.call('POST', '/auth/signup', { body: { email: 'NEW@lab.test', password: 'password-1' } });
    expect(r.status).toBe(409);
    expect(errorCode(r)).toBe('email_taken');
  });

  it('400 for a short password and a malformed email', async () => {
    expect((await lab.c.call('POST', '/auth/signup', { body: { email: 'short@lab.test', password: 'x' } })).status).toBe(400);
    expect((await lab.c.call('POST', '/auth/signup', { body: { email: 'not-an-email', password: 'password-1' } })).status).toBe(400);
  });

  it('403 once the lab owner closes sign-up, and open again when reopened', async () => {
    const closed = await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { signupOpen: false } });
    expect(closed.body).toMatchObject({ signupOpen: false });
    const r = await lab.c.call('POST', '/auth/signup', { body: { email: 'late@lab.test', password: 'password-1' } });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('signup_closed');
    await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { signupOpen: true } });
    expect((await lab.c.call('POST', '/auth/signup', { body: { email: 'late@lab.test', password: 'password-1' } })).status).toBe(201);
  });

  it('only the lab owner, interactively, may change lab settings', async () => {
    const user = await lab.c.signup('notowner@lab.test');
    const r = await lab.c.call('PATCH', '/lab/settings', { token: user.token, body: { signupOpen: false } });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('not_lab_owner');
    const key = await lab.c.createKey(lab.owner);
    expect((await lab.c.call('GET', '/lab/settings', { token: key })).status).toBe(403);
    expect((await lab.c.call('GET', '/lab/settings', { token: lab.owner })).body).toMatchObject({ signupOpen: true });
  });
});

describe('GET /me', () => {
  it('200 with the user, for a token and for an API key (its creator)', async () => {
    const me = await lab.c.call('GET', '/me', { token: lab.owner });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ email: OWNER_EMAIL, labOwner: true });
    const key = await lab.c.createKey(lab.owner);
    expect((await lab.c.call('GET', '/me', { token: key })).body).toEqual(me.body);
  });

  it('401 without a token, with a forged, an expired, or a wrongly signed token', async () => {
    expect((await lab.c.call('GET', '/me')).status).toBe(401);
    expect((await lab.c.call('GET', '/me', { headers: { authorization: 'Basic abc' } })).status).toBe(401);
    expect((await lab.c.call('GET', '/me', { token: 'mob_unknownkey' })).status).toBe(401);
    const [header, payload, signature] = lab.owner.split('.');
    const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
    const tampered = Buffer.from(JSON.stringify({ ...claims, sub: '00000000-0000-4000-8000-000000000000' })).toString('base64url');
    expect((await lab.c.call('GET', '/me', { token: `${header}.${tampered}.${signature}` })).status).toBe(401);
    const foreign = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(claims.sub).setIssuer('benchtop')
      .setExpirationTime('1h').sign(new TextEncoder().encode('not-the-lab-secret-not-the-lab-secret'));
    expect((await lab.c.call('GET', '/me', { token: foreign })).status).toBe(401);
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${payload}.`;
    expect((await lab.c.call('GET', '/me', { token: none })).status).toBe(401);

    lab.t.clock.offsetMs = 13 * 3600 * 1000; // past the 12 h token lifetime
    try {
      const expired = await lab.c.call('GET', '/me', { token: lab.owner });
      expect(expired.status).toBe(401);
      expect(errorCode(expired)).toBe('unauthorized');
    } finally {
      lab.t.clock.offsetMs = 0;
    }
  });
});

describe('DELETE /me', () => {
  it('204 deletes the account and its Personal organization; its tokens and keys stop working; the email may sign up again', async () => {
    const u = await lab.c.signup('leaver@lab.test');
    const key = await lab.c.createKey(u.token);
    const session = await lab.c.call('POST', '/sessions', { token: key });
    expect(session.status).toBe(201);
    const r = await lab.c.call('DELETE', '/me', { token: u.token });
    expect(r.status).toBe(204);
    expect((await lab.c.call('GET', '/me', { token: u.token })).status).toBe(401);
    expect((await lab.c.call('GET', '/sessions', { token: key })).status).toBe(401);
    const again = await lab.c.signup('leaver@lab.test');
    expect(again.user.id).not.toBe(u.user.id);
    expect((await lab.c.call('GET', '/sessions', { token: again.token })).body.data).toEqual([]);
  });

  it('409 while the caller belongs to another organization, 204 once they no longer do', async () => {
    const u = await lab.c.signup('member@lab.test');
    const org = await lab.c.createOrganization(lab.owner, 'Shared lab');
    await lab.c.addMember(lab.owner, org, u.token, 'member@lab.test', 'readwrite');
    const r = await lab.c.call('DELETE', '/me', { token: u.token });
    expect(r.status).toBe(409);
    expect(errorCode(r)).toBe('member_of_other_organizations');
    const mine = await lab.c.signup('solo@lab.test');
    const own = await lab.c.createOrganization(mine.token, 'Mine');
    expect((await lab.c.call('DELETE', '/me', { token: mine.token })).status).toBe(409);
    expect((await lab.c.call('DELETE', `/organizations/${own}`, { token: mine.token })).status).toBe(204);
    expect((await lab.c.call('DELETE', '/me', { token: mine.token })).status).toBe(204);
  });

  it('409 for the lab owner, 403 for an API key, 401 without credentials', async () => {
    const r = await lab.c.call('DELETE', '/me', { token: lab.owner });
    expect(r.status).toBe(409);
    expect(errorCode(r)).toBe('lab_owner');
    const u = await lab.c.signup('keyholder@lab.test');
    const key = await lab.c.createKey(u.token);
    const byKey = await lab.c.call('DELETE', '/me', { token: key });
    expect(byKey.status).toBe(403);
    expect(errorCode(byKey)).toBe('interactive_only');
    expect((await lab.c.call('DELETE', '/me')).status).toBe(401);
  });
});
