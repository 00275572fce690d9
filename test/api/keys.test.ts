import Database from 'better-sqlite3';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { errorCode, useEngine } from '../support/engine.js';

const lab = useEngine();

describe('POST /keys', () => {
  it('201 shows the secret once, in apiKey, as mob_<secret>', async () => {
    const r = await lab.c.call('POST', '/keys', { token: lab.owner, body: { name: 'ci' } });
    expect(r.status).toBe(201);
    expect(r.body.apiKey).toMatch(/^mob_[A-Za-z0-9_-]{40,}$/);
    expect(r.body).toMatchObject({ name: 'ci', lastUsedAt: null, apiKeySuffix: r.body.apiKey.slice(-6) });
    const list = await lab.c.call('GET', '/keys', { token: lab.owner });
    const item = list.body.data.find((k: { id: string }) => k.id === r.body.id);
    expect(Object.keys(item).sort()).toEqual(['apiKeySuffix', 'createdAt', 'id', 'lastUsedAt', 'name']);
    expect(JSON.stringify(list.body)).not.toContain(r.body.apiKey.slice(4, 20));
  });

  it('stores only a hash of the secret', async () => {
    const r = await lab.c.call('POST', '/keys', { token: lab.owner, body: { name: 'hashed' } });
    const db = new Database(join(lab.t.dataDir, 'benchtop.db'), { readonly: true });
    try {
      const row = db.prepare('SELECT * FROM api_keys WHERE id = ?').get(r.body.id) as Record<string, unknown>;
      const dump = JSON.stringify(row);
      expect(dump).not.toContain(r.body.apiKey);
      expect(dump).not.toContain(r.body.apiKey.slice(4, 30));
      expect(row.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    } finally {
      db.close();
    }
  });

  it('400 for bad bodies, 401 without credentials, 403 for an API key', async () => {
    for (const raw of ['{', '{}', '{"name":""}', '{"name":5}', '{"name":"x","role":"admin"}', `{"name":"${'x'.repeat(2 * 1024 * 1024)}"}`]) {
      const r = await lab.c.call('POST', '/keys', { token: lab.owner, raw });
      expect(r.status, raw.slice(0, 30)).toBe(400);
      errorCode(r);
    }
    expect((await lab.c.call('POST', '/keys', { body: { name: 'x' } })).status).toBe(401);
    const key = await lab.c.createKey(lab.owner);
    const r = await lab.c.call('POST', '/keys', { token: key, body: { name: 'x' } });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('interactive_only');
  });
});

describe('GET /keys', () => {
  it('200 lists the organization\'s keys, newest first, with lastUsedAt kept', async () => {
    const org = await lab.c.createOrganization(lab.owner, 'Key lab');
    const a = await lab.c.call('POST', '/keys', { token: lab.owner, org, body: { name: 'a' } });
    const b = await lab.c.call('POST', '/keys', { token: lab.owner, org, body: { name: 'b' } });
    const before = await lab.c.call('GET', '/keys', { token: lab.owner, org });
    expect(before.body.data.map((k: { name: string }) => k.name)).toEqual(['b', 'a']);
    expect(before.body.data[1].lastUsedAt).toBeNull();
    await lab.c.call('GET', '/sessions', { token: a.body.apiKey });
    const after = await lab.c.call('GET', '/keys', { token: lab.owner, org });
    const used = after.body.data.find((k: { id: string }) => k.id === a.body.id);
    expect(Date.now() - Date.parse(used.lastUsedAt)).toBeLessThan(5000);
    expect(after.body.data.find((k: { id: string }) => k.id === b.body.id).lastUsedAt).toBeNull();
    expect('nextCursor' in after.body).toBe(false);
  });

  it('401 without credentials, 403 for an API key and for a non-member organization', async () => {
    expect((await lab.c.call('GET', '/keys')).status).toBe(401);
    expect((await lab.c.call('GET', '/keys', { token: await lab.c.createKey(lab.owner) })).status).toBe(403);
    const other = await lab.c.signup('keys-other@lab.test');
    expect((await lab.c.call('GET', '/keys', { token: lab.owner, org: other.personalOrgId })).status).toBe(403);
  });
});

describe('DELETE /keys/{id}', () => {
  it('204 for any key of the organization, not only the caller\'s own; the key stops working', async () => {
    const org = await lab.c.createOrganization(lab.owner, 'Delete lab');
    const writer = await lab.c.signup('writer@keys.test');
    await lab.c.addMember(lab.owner, org, writer.token, 'writer@keys.test', 'readwrite');
    const ownersKey = await lab.c.call('POST', '/keys', { token: lab.owner, org, body: { name: 'owner key' } });
    const r = await lab.c.call('DELETE', `/keys/${ownersKey.body.id}`, { token: writer.token, org });
    expect(r.status).toBe(204);
    expect((await lab.c.call('GET', '/sessions', { token: ownersKey.body.apiKey })).status).toBe(401);
  });

  it('403 for a readonly member (who may still create keys) and for an API key', async () => {
    const org = await lab.c.createOrganization(lab.owner, 'Readonly lab');
    const reader = await lab.c.signup('reader@keys.test');
    await lab.c.addMember(lab.owner, org, reader.token, 'reader@keys.test', 'readonly');
    const own = await lab.c.call('POST', '/keys', { token: reader.token, org, body: { name: 'mine' } });
    expect(own.status).toBe(201);
    const r = await lab.c.call('DELETE', `/keys/${own.body.id}`, { token: reader.token, org });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('insufficient_role');
    const byKey = await lab.c.call('DELETE', `/keys/${own.body.id}`, { token: await lab.c.createKey(lab.owner, org) });
    expect(byKey.status).toBe(403);
  });

  it('404 for an unknown id, a malformed id, or another organization\'s key; 401 without credentials', async () => {
    const unknown = await lab.c.call('DELETE', '/keys/0b8e4c1e-8a53-4f1a-9d7e-000000000000', { token: lab.owner });
    expect(unknown.status).toBe(404);
    expect(errorCode(unknown)).toBe('api_key_not_found');
    expect((await lab.c.call('DELETE', '/keys/12', { token: lab.owner })).status).toBe(404);
    const other = await lab.c.signup('keys-victim@lab.test');
    const theirs = await lab.c.call('POST', '/keys', { token: other.token, body: { name: 'theirs' } });
    const r = await lab.c.call('DELETE', `/keys/${theirs.body.id}`, { token: lab.owner });
    expect(r.status).toBe(404);
    expect(r.body).toEqual(unknown.body);
    expect((await lab.c.call('GET', '/sessions', { token: theirs.body.apiKey })).status).toBe(200);
    expect((await lab.c.call('DELETE', `/keys/${theirs.body.id}`)).status).toBe(401);
  });
});
