import { describe, expect, it } from 'vitest';
import { errorCode, useEngine } from '../support/engine.js';

const lab = useEngine();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe('POST /sessions', () => {
  it('201: an empty session with a uuid and an RFC 3339 createdAt', async () => {
    const r = await lab.c.call('POST', '/sessions', { token: lab.owner });
    expect(r.status).toBe(201);
    expect(r.body.id).toMatch(UUID);
    expect(r.body.createdAt).toMatch(RFC3339_MS);
    expect(r.body.devices).toEqual([]);
    expect(r.body.instances).toEqual([]);
    const me = await lab.c.call('GET', '/me', { token: lab.owner });
    expect(r.body.createdBy).toBe(me.body.id);
  });

  it('201 with an API key; the body, if any, is ignored', async () => {
    const key = await lab.c.createKey(lab.owner);
    const r = await lab.c.call('POST', '/sessions', { token: key, raw: '{not json' });
    expect(r.status).toBe(201);
  });

  it('401 without credentials, with a forged token, and with a deleted key', async () => {
    expect(errorCode(await lab.c.call('POST', '/sessions'))).toBe('unauthorized');
    const forged = lab.owner.slice(0, -4) + (lab.owner.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const f = await lab.c.call('POST', '/sessions', { token: forged });
    expect(f.status).toBe(401);
    const created = await lab.c.call('POST', '/keys', { token: lab.owner, body: { name: 'doomed' } });
    expect((await lab.c.call('DELETE', `/keys/${created.body.id}`, { token: lab.owner })).status).toBe(204);
    const revoked = await lab.c.call('POST', '/sessions', { token: created.body.apiKey });
    expect(revoked.status).toBe(401);
    expect(errorCode(revoked)).toBe('unauthorized');
  });

  it('403 for a readonly member', async () => {
    const org = await lab.c.createOrganization(lab.owner, 'Readers');
    const reader = await lab.c.signup('reader@sessions.test');
    await lab.c.addMember(lab.owner, org, reader.token, 'reader@sessions.test', 'readonly');
    const r = await lab.c.call('POST', '/sessions', { token: reader.token, org });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('insufficient_role');
  });

  it('403 for an organization the caller does not belong to', async () => {
    const other = await lab.c.signup('other@sessions.test');
    const r = await lab.c.call('POST', '/sessions', { token: lab.owner, org: other.personalOrgId });
    expect(r.status).toBe(403);
  });
});

describe('GET /sessions/{sessionId}', () => {
  it('200 with the session', async () => {
    const created = await lab.c.call('POST', '/sessions', { token: lab.owner });
    const r = await lab.c.call('GET', `/sessions/${created.body.id}`, { token: lab.owner });
    expect(r.status).toBe(200);
    expect(r.body).toEqual(created.body);
  });

  it('404 for an unknown id, a malformed id, and another organization\'s session', async () => {
    const unknown = await lab.c.call('GET', '/sessions/6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000', { token: lab.owner });
    expect(unknown.status).toBe(404);
    expect(errorCode(unknown)).toBe('session_not_found');
    expect((await lab.c.call('GET', '/sessions/not-a-uuid', { token: lab.owner })).status).toBe(404);
    const other = await lab.c.signup('stranger@sessions.test');
    const theirs = await lab.c.call('POST', '/sessions', { token: other.token });
    const r = await lab.c.call('GET', `/sessions/${theirs.body.id}`, { token: lab.owner });
    expect(r.status).toBe(404);
    expect(r.body).toEqual(unknown.body);
  });

  it('401 without credentials, 403 with a foreign X-Organization-Id', async () => {
    const created = await lab.c.call('POST', '/sessions', { token: lab.owner });
    expect((await lab.c.call('GET', `/sessions/${created.body.id}`)).status).toBe(401);
    const other = await lab.c.signup('foreign@sessions.test');
    expect((await lab.c.call('GET', `/sessions/${created.body.id}`, { token: lab.owner, org: other.personalOrgId })).status).toBe(403);
  });
});

describe('GET /sessions', () => {
  it('400 for every out-of-range or malformed query parameter', async () => {
    for (const q of ['limit=0', 'limit=501', 'limit=abc', 'limit=1.5', 'days=0', 'days=91', 'days=x', 'before=yesterday', 'before=2026-13-01T00:00:00Z']) {
      const r = await lab.c.call('GET', `/sessions?${q}`, { token: lab.owner });
      expect(r.status, q).toBe(400);
      expect(errorCode(r), q).toBe('invalid_request');
    }
  });

  it('401 and 403', async () => {
    expect((await lab.c.call('GET', '/sessions')).status).toBe(401);
    const other = await lab.c.signup('lister@sessions.test');
    expect((await lab.c.call('GET', '/sessions', { token: lab.owner, org: other.personalOrgId })).status).toBe(403);
  });

  it('pages newest first over thousands of sessions created in the same millisecond, without skips or repeats', async () => {
    const owner = await lab.c.signup('pager@sessions.test');
    lab.t.clock.frozenAt = Date.parse('2026-11-20T10:00:00.000Z');
    const total = 2500;
    const created = new Set<string>();
    try {
      for (let i = 0; i < total; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: Math.min(50, total - i) }, () => lab.c.call('POST', '/sessions', { token: owner.token })),
        );
        for (const r of batch) {
          expect(r.status).toBe(201);
          created.add(r.body.id);
        }
      }
    } finally {
      delete lab.t.clock.frozenAt;
    }
    expect(created.size).toBe(total);

    for (const limit of [1, 7, 100, 500]) {
      const seen: string[] = [];
      let previous = Infinity;
      let cursor: string | undefined;
      let pages = 0;
      do {
        const r = await lab.c.call('GET', `/sessions?limit=${limit}${cursor ? `&before=${encodeURIComponent(cursor)}` : ''}`, { token: owner.token });
        expect(r.status).toBe(200);
        expect(r.body.object).toBe('list');
        expect(r.body.data.length).toBeLessThanOrEqual(limit);
        for (const s of r.body.data) {
          const at = Date.parse(s.createdAt);
          expect(at).toBeLessThan(previous);
          previous = at;
          seen.push(s.id);
        }
        cursor = r.body.nextCursor;
        if (cursor) expect(r.body.data.length).toBe(limit);
        else expect('nextCursor' in r.body).toBe(false);
        pages++;
        if (limit === 1 && pages === 60) break; // a sample of single-item pages is enough for limit=1
      } while (cursor);
      if (limit !== 1) {
        expect(seen.length).toBe(total);
        expect(new Set(seen)).toEqual(created);
      } else {
        expect(new Set(seen).size).toBe(seen.length);
      }
    }
  });

  it('defaults to 100, and before is strict', async () => {
    const owner = await lab.c.signup('default@sessions.test');
    for (let i = 0; i < 105; i++) await lab.c.call('POST', '/sessions', { token: owner.token });
    const first = await lab.c.call('GET', '/sessions', { token: owner.token });
    expect(first.body.data).toHaveLength(100);
    expect(first.body.nextCursor).toBe(first.body.data[99].createdAt);
    const rest = await lab.c.call('GET', `/sessions?before=${encodeURIComponent(first.body.nextCursor)}`, { token: owner.token });
    expect(rest.body.data).toHaveLength(5);
    expect(rest.body.data.map((s: { id: string }) => s.id)).not.toContain(first.body.data[99].id);
  });

  it('days keeps only recent sessions, and combines with before', async () => {
    const owner = await lab.c.signup('days@sessions.test');
    lab.t.clock.offsetMs = -10 * 24 * 3600 * 1000;
    const old = await lab.c.call('POST', '/sessions', { token: owner.token });
    lab.t.clock.offsetMs = -2 * 24 * 3600 * 1000;
    const twoDaysAgo = await lab.c.call('POST', '/sessions', { token: owner.token });
    lab.t.clock.offsetMs = 0;
    const recent = await lab.c.call('POST', '/sessions', { token: owner.token });
    const ids = async (q: string) =>
      (await lab.c.call('GET', `/sessions?${q}`, { token: owner.token })).body.data.map((s: { id: string }) => s.id);
    expect(await ids('days=1')).toEqual([recent.body.id]);
    expect(await ids('days=3')).toEqual([recent.body.id, twoDaysAgo.body.id]);
    expect(await ids('days=90')).toEqual([recent.body.id, twoDaysAgo.body.id, old.body.id]);
    expect(await ids(`days=3&before=${encodeURIComponent(recent.body.createdAt)}`)).toEqual([twoDaysAgo.body.id]);
  });
});
