import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { call, client, errorCode, OWNER_EMAIL, OWNER_PASSWORD, startEngine, type Reply, useEngine } from '../support/engine.js';
import { waitFor } from '../support/lab.js';
import { startServeProcess } from '../support/serve-process.js';

const lab = useEngine();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const RFC3339_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UNKNOWN = '6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000';
const MiB = 1024 * 1024;

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

/** Playwright's report, roughly as its reporter sends it. */
const FULL = {
  name: 'e2e suite',
  userAgent: 'mobilewright-reporter/1.2.0',
  status: 'running',
  git: { commitSha: '0123abcd', commitMessage: 'Fix login\n\nLonger text', authorName: 'Ada', branch: 'main', remoteUrl: 'git@x:y.git' },
  tags: ['nightly', 'android'],
  environment: { ci: true, os: 'linux', matrix: { shard: 2 } },
  stats: { expected: 10, unexpected: 1, flaky: 2, skipped: 0, duration: 1234.5, startTime: '2026-11-20T10:00:00.000Z' },
  startedAt: '2026-11-20T10:00:00Z',
  finishedAt: null,
};

async function create(token: string, body: unknown = { name: 'run' }, org?: string): Promise<any> {
  const r = await lab.c.call('POST', '/test-results', { token, org, body });
  if (r.status !== 201) throw new Error(`create failed: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body;
}

type Part = { field: string; value: string } | { field: string; filename: string; type?: string; data: Buffer };

/** A multipart/form-data body with the parts in the given order; a file part without a type sends no Content-Type. */
function form(parts: Part[], boundary = 'benchtop-test-boundary'): { body: Uint8Array<ArrayBuffer>; contentType: string } {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    if ('value' in part) {
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.field}"\r\n\r\n${part.value}\r\n`));
    } else {
      const type = part.type ? `Content-Type: ${part.type}\r\n` : '';
      chunks.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${part.field}"; filename="${part.filename}"\r\n${type}\r\n`));
      chunks.push(part.data, Buffer.from('\r\n'));
    }
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: new Uint8Array(Buffer.concat(chunks)), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function upload(token: string | undefined, testResultId: string, parts: Part[], options: { org?: string; api?: string } = {}): Promise<Reply> {
  const { body, contentType } = form(parts);
  const headers: Record<string, string> = { 'content-type': contentType };
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.org) headers['x-organization-id'] = options.org;
  const res = await fetch(`${options.api ?? lab.t.api}/test-results/${testResultId}/assets`, { method: 'POST', headers, body });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

const asset = (name: string, data: Buffer, type = 'application/octet-stream'): Part[] => [
  { field: 'name', value: name },
  { field: 'file', filename: name, type, data },
];

async function download(token: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${lab.t.api}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } });
  return { status: res.status, headers: res.headers, bytes: Buffer.from(await res.arrayBuffer()) };
}

/** An organization with a readonly member and that member's API key. */
async function readonlyMember(email: string) {
  const org = await lab.c.createOrganization(lab.owner, `Readers ${email}`);
  const reader = await lab.c.signup(email);
  await lab.c.addMember(lab.owner, org, reader.token, email, 'readonly');
  const key = await lab.c.createKey(reader.token, org);
  return { org, token: reader.token, key };
}

describe('POST /test-results', () => {
  it('201 with only a name: queued, empty tags, nulls, a uuid and RFC 3339 times', async () => {
    const r = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'smoke' } });
    expect(r.status).toBe(201);
    const me = await lab.c.call('GET', '/me', { token: lab.owner });
    const orgs = await lab.c.call('GET', '/organizations', { token: lab.owner });
    expect(r.body).toEqual({
      id: expect.stringMatching(UUID),
      organizationId: orgs.body.data.find((o: { personal: boolean }) => o.personal).id,
      name: 'smoke',
      userAgent: null,
      status: 'queued',
      reason: null,
      git: null,
      tags: [],
      environment: null,
      stats: null,
      sessionId: null,
      createdBy: me.body.id,
      startedAt: null,
      finishedAt: null,
      createdAt: expect.stringMatching(RFC3339_MS),
      updatedAt: r.body.createdAt,
      filesRemovedAt: null,
    });
  });

  it('keeps a reporter\'s reason with its status, in the result and the list; null clears it; over 1000 characters is a 400', async () => {
    const r = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'with a reason', status: 'failed', reason: 'the login screen never came' } });
    expect(r.body.reason).toBe('the login screen never came');
    const listed = (await lab.c.call('GET', '/test-results', { token: lab.owner })).body.data.find((x: { id: string }) => x.id === r.body.id);
    expect(listed.reason).toBe('the login screen never came');
    expect((await lab.c.call('PATCH', `/test-results/${r.body.id}`, { token: lab.owner, body: { reason: null } })).body.reason).toBeNull();
    expect((await lab.c.call('PATCH', `/test-results/${r.body.id}`, { token: lab.owner, body: { reason: 'x'.repeat(1001) } })).status).toBe(400);
  });

  it('201 keeps git, stats and environment exactly as sent, and normalizes times to UTC milliseconds', async () => {
    const session = await lab.c.call('POST', '/sessions', { token: lab.owner });
    const r = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { ...FULL, sessionId: session.body.id, startedAt: '2026-11-20T11:00:00+01:00' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      name: FULL.name,
      userAgent: FULL.userAgent,
      status: 'running',
      git: FULL.git,
      tags: FULL.tags,
      environment: FULL.environment,
      stats: FULL.stats,
      sessionId: session.body.id,
      startedAt: '2026-11-20T10:00:00.000Z',
      finishedAt: null,
    });
    expect((await lab.c.call('GET', `/test-results/${r.body.id}`, { token: lab.owner })).body).toEqual(r.body);
  });

  it('201 for every status', async () => {
    for (const status of ['queued', 'running', 'passed', 'failed', 'skipped', 'interrupted']) {
      expect((await create(lab.owner, { name: status, status })).status).toBe(status);
    }
  });

  it('ignores unknown top-level fields', async () => {
    const r = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'extra', reporterVersion: 3, shards: [1, 2], id: UNKNOWN } });
    expect(r.status).toBe(201);
    expect(r.body.id).not.toBe(UNKNOWN);
    expect(r.body).not.toHaveProperty('reporterVersion');
    expect(r.body).not.toHaveProperty('shards');
  });

  it('400 for a missing or blank name, wrong types, and bad JSON', async () => {
    const bodies: unknown[] = [
      {},
      { name: '' },
      { name: '   ' },
      { name: 5 },
      { name: 'x'.repeat(1025) },
      { name: 'x', status: 'done' },
      { name: 'x', status: null },
      { name: 'x', userAgent: 5 },
      { name: 'x', git: 'abc' },
      { name: 'x', git: { commitSha: 5 } },
      { name: 'x', tags: 'nightly' },
      { name: 'x', tags: [1] },
      // A string is accepted (mobilewright's reporter sends one); a number or a list is not.
      { name: 'x', environment: 3 },
      { name: 'x', environment: ['ci'] },
      { name: 'x', stats: [1, 2] },
      { name: 'x', stats: 'good' },
      { name: 'x', sessionId: 'not-a-uuid' },
      { name: 'x', startedAt: 'yesterday' },
      { name: 'x', finishedAt: 1732000000000 },
      [],
      'name',
    ];
    for (const body of bodies) {
      const r = await lab.c.call('POST', '/test-results', { token: lab.owner, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(errorCode(r), JSON.stringify(body)).toBe('invalid_request');
    }
    for (const raw of ['{', '']) {
      const r = await lab.c.call('POST', '/test-results', { token: lab.owner, raw });
      expect(r.status, raw).toBe(400);
      errorCode(r);
    }
  });

  it('400 session_not_found for an unknown session or another organization\'s session', async () => {
    const stranger = await lab.c.signup('session-owner@results.test');
    const theirs = await lab.c.call('POST', '/sessions', { token: stranger.token });
    for (const sessionId of [UNKNOWN, theirs.body.id]) {
      const r = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'x', sessionId } });
      expect(r.status).toBe(400);
      expect(errorCode(r)).toBe('session_not_found');
    }
  });

  it('401 without credentials or with a deleted key', async () => {
    const r = await lab.c.call('POST', '/test-results', { body: { name: 'x' } });
    expect(r.status).toBe(401);
    expect(errorCode(r)).toBe('unauthorized');
    const created = await lab.c.call('POST', '/keys', { token: lab.owner, body: { name: 'doomed' } });
    await lab.c.call('DELETE', `/keys/${created.body.id}`, { token: lab.owner });
    expect((await lab.c.call('POST', '/test-results', { token: created.body.apiKey, body: { name: 'x' } })).status).toBe(401);
  });

  it('files the result under X-Organization-Id, else the key\'s organization, else Personal', async () => {
    const org = await lab.c.createOrganization(lab.owner, 'Filing lab');
    const key = await lab.c.createKey(lab.owner, org);
    expect((await create(lab.owner, { name: 'header' }, org)).organizationId).toBe(org);
    expect((await create(key, { name: 'key' })).organizationId).toBe(org);
    const personal = await create(lab.owner, { name: 'personal' });
    expect(personal.organizationId).not.toBe(org);
    const inOrg = await lab.c.call('GET', '/test-results', { token: lab.owner, org });
    expect(inOrg.body.data.map((r: { name: string }) => r.name)).toEqual(['key', 'header']);
  });

  it('an organization the caller may not act on is refused with a declared status (no 403 is declared)', async () => {
    const stranger = await lab.c.signup('stranger@results.test');
    const r = await lab.c.call('POST', '/test-results', { token: lab.owner, org: stranger.personalOrgId, body: { name: 'x' } });
    expect(r.status).toBe(401);
    expect(errorCode(r)).toBe('not_a_member');
    const key = await lab.c.createKey(lab.owner);
    const k = await lab.c.call('POST', '/test-results', { token: key, org: stranger.personalOrgId, body: { name: 'x' } });
    expect(k.status).toBe(401);
    expect(errorCode(k)).toBe('wrong_organization');
  });

  it('201 for a readonly member and for a readonly member\'s API key', async () => {
    const reader = await readonlyMember('reader-create@results.test');
    expect((await create(reader.token, { name: 'by reader' }, reader.org)).organizationId).toBe(reader.org);
    expect((await create(reader.key, { name: 'by key' })).organizationId).toBe(reader.org);
  });
});

describe('GET /test-results/{testResultId}', () => {
  it('200 with the record', async () => {
    const created = await create(lab.owner, FULL);
    const r = await lab.c.call('GET', `/test-results/${created.id}`, { token: lab.owner });
    expect(r.status).toBe(200);
    expect(r.body).toEqual(created);
  });

  it('404 for an unknown id, a malformed id, another organization\'s result, and an organization the caller is not in', async () => {
    const unknown = await lab.c.call('GET', `/test-results/${UNKNOWN}`, { token: lab.owner });
    expect(unknown.status).toBe(404);
    expect(errorCode(unknown)).toBe('test_result_not_found');
    expect((await lab.c.call('GET', '/test-results/not-a-uuid', { token: lab.owner })).status).toBe(404);
    const stranger = await lab.c.signup('get-stranger@results.test');
    const theirs = await create(stranger.token);
    const r = await lab.c.call('GET', `/test-results/${theirs.id}`, { token: lab.owner });
    expect(r.status).toBe(404);
    expect(r.body).toEqual(unknown.body);
    const foreign = await lab.c.call('GET', `/test-results/${theirs.id}`, { token: lab.owner, org: stranger.personalOrgId });
    expect(foreign.status).toBe(404);
    expect(errorCode(foreign)).toBe('not_a_member');
  });

  it('401 without credentials', async () => {
    const created = await create(lab.owner);
    expect((await lab.c.call('GET', `/test-results/${created.id}`)).status).toBe(401);
  });
});

describe('PATCH /test-results/{testResultId}', () => {
  it('200 changes only the fields present: a running run finishes', async () => {
    const created = await create(lab.owner, FULL);
    const r = await lab.c.call('PATCH', `/test-results/${created.id}`, {
      token: lab.owner,
      body: { status: 'passed', finishedAt: '2026-11-20T10:05:00.000Z', stats: { expected: 11, unexpected: 0 } },
    });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      ...created,
      status: 'passed',
      finishedAt: '2026-11-20T10:05:00.000Z',
      stats: { expected: 11, unexpected: 0 },
      updatedAt: expect.stringMatching(RFC3339_MS),
    });
    expect(Date.parse(r.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));
    expect((await lab.c.call('GET', `/test-results/${created.id}`, { token: lab.owner })).body).toEqual(r.body);
  });

  it('null clears a nullable field; an empty body changes nothing; sessionId attaches and detaches', async () => {
    const created = await create(lab.owner, FULL);
    const cleared = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: lab.owner, body: { git: null, stats: null, userAgent: null, tags: [] } });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ git: null, stats: null, userAgent: null, tags: [], environment: FULL.environment, name: FULL.name });
    const same = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: lab.owner, body: {} });
    expect({ ...same.body, updatedAt: null }).toEqual({ ...cleared.body, updatedAt: null });
    const session = await lab.c.call('POST', '/sessions', { token: lab.owner });
    const attached = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: lab.owner, body: { sessionId: session.body.id } });
    expect(attached.body.sessionId).toBe(session.body.id);
    const detached = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: lab.owner, body: { sessionId: null } });
    expect(detached.body.sessionId).toBeNull();
  });

  it('ignores unknown fields', async () => {
    const created = await create(lab.owner);
    const r = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: lab.owner, body: { status: 'failed', retries: 2, organizationId: UNKNOWN } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('failed');
    expect(r.body.organizationId).toBe(created.organizationId);
    expect(r.body).not.toHaveProperty('retries');
  });

  it('400 for wrong types, null where a value is needed, a missing body, and another organization\'s session', async () => {
    const created = await create(lab.owner, FULL);
    for (const body of [{ name: null }, { name: '' }, { status: 'done' }, { status: null }, { tags: null }, { stats: 3 }, { git: [] }, { finishedAt: 'soon' }, []]) {
      const r = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: lab.owner, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(errorCode(r)).toBe('invalid_request');
    }
    expect((await lab.c.call('PATCH', `/test-results/${created.id}`, { token: lab.owner })).status).toBe(400);
    const stranger = await lab.c.signup('patch-session@results.test');
    const theirs = await lab.c.call('POST', '/sessions', { token: stranger.token });
    const r = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: lab.owner, body: { status: 'passed', sessionId: theirs.body.id } });
    expect(r.status).toBe(400);
    expect(errorCode(r)).toBe('session_not_found');
    // A refused update changes nothing, not even the fields that were valid.
    expect((await lab.c.call('GET', `/test-results/${created.id}`, { token: lab.owner })).body).toEqual(created);
  });

  it('404 for an unknown id and another organization\'s result; 401 without credentials', async () => {
    const unknown = await lab.c.call('PATCH', `/test-results/${UNKNOWN}`, { token: lab.owner, body: { status: 'passed' } });
    expect(unknown.status).toBe(404);
    expect(errorCode(unknown)).toBe('test_result_not_found');
    const stranger = await lab.c.signup('patch-stranger@results.test');
    const theirs = await create(stranger.token);
    expect((await lab.c.call('PATCH', `/test-results/${theirs.id}`, { token: lab.owner, body: { status: 'passed' } })).status).toBe(404);
    expect((await lab.c.call('GET', `/test-results/${theirs.id}`, { token: stranger.token })).body.status).toBe('queued');
    expect((await lab.c.call('PATCH', `/test-results/${theirs.id}`, { body: { status: 'passed' } })).status).toBe(401);
  });

  it('200 for a readonly member and for a readonly member\'s API key', async () => {
    const reader = await readonlyMember('reader-update@results.test');
    const created = await create(lab.owner, { name: 'to finish', status: 'running' }, reader.org);
    const byMember = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: reader.token, org: reader.org, body: { status: 'failed' } });
    expect(byMember.status).toBe(200);
    const byKey = await lab.c.call('PATCH', `/test-results/${created.id}`, { token: reader.key, body: { status: 'passed' } });
    expect(byKey.status).toBe(200);
    expect(byKey.body.status).toBe('passed');
  });
});

describe('GET /test-results', () => {
  it('200 newest first, with no nextCursor on the last page; other organizations\' results are not listed', async () => {
    const lister = await lab.c.signup('lister@results.test');
    const stranger = await lab.c.signup('lister-stranger@results.test');
    await create(stranger.token, { name: 'theirs' });
    const a = await create(lister.token, { name: 'a' });
    const b = await create(lister.token, { name: 'b' });
    const r = await lab.c.call('GET', '/test-results', { token: lister.token });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ object: 'list', data: [b, a] });
  });

  it('?tag= lists a build\'s runs only (the tag exactly, with status and paging), never another organization\'s of the same build', async () => {
    const ci = await lab.c.signup('builds@results.test');
    const other = await lab.c.signup('builds-other@results.test');
    await create(other.token, { name: 'theirs', tags: ['build:nightly-7'] });
    const one = await create(ci.token, { name: 'login', tags: ['webdriver', 'build:nightly-7'], status: 'passed' });
    await create(ci.token, { name: 'earlier build', tags: ['build:nightly-6'], status: 'failed' });
    await create(ci.token, { name: 'near miss', tags: ['build:nightly-70', 'nightly-7'] });
    const two = await create(ci.token, { name: 'checkout', tags: ['build:nightly-7'], status: 'failed' });
    const names = async (query: string) => {
      const r = await lab.c.call('GET', `/test-results?${query}`, { token: ci.token });
      expect(r.status).toBe(200);
      return (r.body.data as Array<{ id: string }>).map((x) => x.id);
    };
    expect(await names(`tag=${encodeURIComponent('build:nightly-7')}`)).toEqual([two.id, one.id]);
    expect(await names(`tag=${encodeURIComponent('build:nightly-7')}&status=failed`)).toEqual([two.id]);
    const first = await lab.c.call('GET', `/test-results?limit=1&tag=${encodeURIComponent('build:nightly-7')}`, { token: ci.token });
    expect(first.body.data.map((x: { id: string }) => x.id)).toEqual([two.id]);
    expect(await names(`limit=1&tag=${encodeURIComponent('build:nightly-7')}&before=${encodeURIComponent(first.body.nextCursor)}`)).toEqual([one.id]);
    expect(await names('tag=build%3Anone')).toEqual([]);
    // The tag as a value, never as SQL or a pattern.
    expect(await names(`tag=${encodeURIComponent("build:nightly-7' OR '1'='1")}`)).toEqual([]);
    expect(await names('tag=build%3Anightly-%25')).toEqual([]);
    for (const bad of ['tag=', `tag=${'x'.repeat(1025)}`]) {
      const r = await lab.c.call('GET', `/test-results?${bad}`, { token: ci.token });
      expect(r.status, bad).toBe(401);
      expect(r.body.error.code).toBe('invalid_request');
    }
  });

  it('pages newest first over results created in the same millisecond, without skips or repeats', async () => {
    const pager = await lab.c.signup('pager@results.test');
    lab.t.clock.frozenAt = Date.parse('2026-11-20T10:00:00.000Z');
    const total = 600;
    const created = new Set<string>();
    try {
      for (let i = 0; i < total; i += 50) {
        const batch = await Promise.all(Array.from({ length: 50 }, (_, j) => create(pager.token, { name: `run ${i + j}` })));
        for (const r of batch) created.add(r.id);
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
        const r = await lab.c.call('GET', `/test-results?limit=${limit}${cursor ? `&before=${encodeURIComponent(cursor)}` : ''}`, { token: pager.token });
        expect(r.status).toBe(200);
        expect(r.body.data.length).toBeLessThanOrEqual(limit);
        for (const result of r.body.data) {
          const at = Date.parse(result.createdAt);
          expect(at).toBeLessThan(previous);
          previous = at;
          seen.push(result.id);
        }
        cursor = r.body.nextCursor;
        if (cursor) {
          expect(r.body.data.length).toBe(limit);
          expect(cursor).toBe(r.body.data[limit - 1].createdAt);
        } else {
          expect('nextCursor' in r.body).toBe(false);
        }
        pages++;
        if (limit === 1 && pages === 40) break; // a sample of single-item pages is enough for limit=1
      } while (cursor);
      if (limit !== 1) {
        expect(seen.length).toBe(total);
        expect(new Set(seen)).toEqual(created);
      } else {
        expect(new Set(seen).size).toBe(seen.length);
      }
    }

    const first = await lab.c.call('GET', '/test-results', { token: pager.token });
    expect(first.body.data).toHaveLength(100);
  });

  it('filters by status and by session', async () => {
    const filterer = await lab.c.signup('filter@results.test');
    const session = await lab.c.call('POST', '/sessions', { token: filterer.token });
    const passed = await create(filterer.token, { name: 'p', status: 'passed', sessionId: session.body.id });
    await create(filterer.token, { name: 'f', status: 'failed', sessionId: session.body.id });
    const loose = await create(filterer.token, { name: 'loose', status: 'passed' });
    const ids = async (q: string) => (await lab.c.call('GET', `/test-results?${q}`, { token: filterer.token })).body.data.map((r: { id: string }) => r.id);
    expect(await ids('status=passed')).toEqual([loose.id, passed.id]);
    expect(await ids(`sessionId=${session.body.id}&status=passed`)).toEqual([passed.id]);
    expect(await ids(`sessionId=${session.body.id}`)).toHaveLength(2);
    expect(await ids(`sessionId=${UNKNOWN}`)).toEqual([]);
  });

  it('401 without credentials; a malformed query is refused with the one declared error status', async () => {
    expect((await lab.c.call('GET', '/test-results')).status).toBe(401);
    for (const q of ['limit=0', 'limit=501', 'limit=x', 'before=yesterday', 'status=done', 'sessionId=nope']) {
      const r = await lab.c.call('GET', `/test-results?${q}`, { token: lab.owner });
      expect(r.status, q).toBe(401);
      expect(errorCode(r), q).toBe('invalid_request');
    }
  });
});

describe('test result assets', () => {
  it('round trip: upload 201, list 200 in upload order, download 200 with the same bytes and headers', async () => {
    const result = await create(lab.owner);
    const trace = Buffer.from(Array.from({ length: 300_000 }, (_, i) => (i * 7) % 251));
    const up = await upload(lab.owner, result.id, asset('trace.zip', trace));
    expect(up.status).toBe(201);
    expect(up.body).toEqual({
      id: expect.stringMatching(UUID),
      name: 'trace.zip',
      contentType: 'application/zip',
      size: trace.length,
      sha256: sha256(trace),
      createdAt: expect.stringMatching(RFC3339_MS),
    });
    const shot = await upload(lab.owner, result.id, asset('screenshot.png', Buffer.from('png bytes'), 'image/png'));

    const listed = await lab.c.call('GET', `/test-results/${result.id}/assets`, { token: lab.owner });
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({ object: 'list', data: [up.body, shot.body] });

    const got = await download(lab.owner, `/test-results/${result.id}/assets/${up.body.id}`);
    expect(got.status).toBe(200);
    expect(got.bytes.equals(trace)).toBe(true);
    expect(sha256(got.bytes)).toBe(up.body.sha256);
    expect(got.headers.get('content-type')).toBe('application/zip');
    expect(got.headers.get('content-length')).toBe(String(trace.length));
    expect(got.headers.get('content-disposition')).toBe('attachment; filename="trace.zip"; filename*=UTF-8\'\'trace.zip');
    expect(got.headers.get('accept-ranges')).toBe('bytes');
    expect(got.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('stores identical content once, under its SHA-256', async () => {
    const result = await create(lab.owner);
    const data = Buffer.from('the same bytes, twice');
    const first = await upload(lab.owner, result.id, asset('one.txt', data));
    const second = await upload(lab.owner, result.id, asset('two.txt', data));
    expect(first.body.id).not.toBe(second.body.id);
    expect(second.body.sha256).toBe(first.body.sha256);
    const digest = first.body.sha256 as string;
    expect(readdirSync(join(lab.t.dataDir, 'blobs', digest.slice(0, 2)))).toEqual([digest]);
    expect(readFileSync(join(lab.t.dataDir, 'blobs', digest.slice(0, 2), digest)).equals(data)).toBe(true);
    // The second upload's staged copy is removed after the reply, which does not wait for it.
    await waitFor('the duplicate staged copy to be removed', () => readdirSync(join(lab.t.dataDir, 'blobs', 'staging')).length === 0);
  });

  it('takes the declared content type, else guesses from the name; the name may come after the file; an empty file is fine', async () => {
    const result = await create(lab.owner);
    const cases: Array<[Part[], string]> = [
      [asset('video.webm', Buffer.from('v')), 'video/webm'],
      [asset('notes', Buffer.from('n')), 'application/octet-stream'],
      [asset('data.bin', Buffer.from('{}'), 'application/json'), 'application/json'],
      [[{ field: 'file', filename: 'x', data: Buffer.from('late name') }, { field: 'name', value: 'report.html' }], 'text/html'],
      [asset('empty.log', Buffer.alloc(0)), 'text/plain'],
    ];
    for (const [parts, type] of cases) {
      const r = await upload(lab.owner, result.id, parts);
      expect(r.status).toBe(201);
      expect(r.body.contentType).toBe(type);
    }
    const empty = (await lab.c.call('GET', `/test-results/${result.id}/assets`, { token: lab.owner })).body.data.at(-1);
    expect(empty).toMatchObject({ name: 'empty.log', size: 0, sha256: sha256(Buffer.alloc(0)) });
    const got = await download(lab.owner, `/test-results/${result.id}/assets/${empty.id}`, { range: 'bytes=0-' });
    expect(got.status).toBe(200);
    expect(got.bytes.length).toBe(0);
  });

  it('Content-Disposition carries a name that is not plain ASCII', async () => {
    const result = await create(lab.owner);
    const up = await upload(lab.owner, result.id, asset('résumé "final".txt', Buffer.from('x')));
    expect(up.body.name).toBe('résumé "final".txt');
    const got = await download(lab.owner, `/test-results/${result.id}/assets/${up.body.id}`);
    expect(got.headers.get('content-disposition')).toBe(
      'attachment; filename="r_sum_ _final_.txt"; filename*=UTF-8\'\'r%C3%A9sum%C3%A9%20%22final%22.txt',
    );
  });

  it('a single Range is answered 206 with Content-Range; anything else gets the whole content', async () => {
    const result = await create(lab.owner);
    const data = Buffer.from(Array.from({ length: 1000 }, (_, i) => i % 256));
    const up = await upload(lab.owner, result.id, asset('bytes.bin', data));
    const path = `/test-results/${result.id}/assets/${up.body.id}`;
    for (const [range, start, end] of [['bytes=0-99', 0, 99], ['bytes=900-', 900, 999], ['bytes=-10', 990, 999], ['bytes=500-5000', 500, 999]] as const) {
      const got = await download(lab.owner, path, { range });
      expect(got.status, range).toBe(206);
      expect(got.headers.get('content-range')).toBe(`bytes ${start}-${end}/1000`);
      expect(got.headers.get('content-length')).toBe(String(end - start + 1));
      expect(got.bytes.equals(data.subarray(start, end + 1)), range).toBe(true);
    }
    for (const range of ['bytes=1000-', 'bytes=5-1', 'bytes=0-1,5-6', 'lines=1-2']) {
      const got = await download(lab.owner, path, { range });
      expect(got.status, range).toBe(200);
      expect(got.headers.get('content-range')).toBeNull();
      expect(got.bytes.equals(data), range).toBe(true);
    }
    const head = await fetch(`${lab.t.api}${path}`, { method: 'HEAD', headers: { authorization: `Bearer ${lab.owner}` } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe('1000');
  });

  it('a readonly member\'s API key uploads, lists and downloads', async () => {
    const reader = await readonlyMember('reader-assets@results.test');
    const result = await create(reader.key, { name: 'by key' });
    const up = await upload(reader.key, result.id, asset('log.txt', Buffer.from('log')));
    expect(up.status).toBe(201);
    expect((await lab.c.call('GET', `/test-results/${result.id}/assets`, { token: reader.key })).body.data).toHaveLength(1);
    expect((await download(reader.key, `/test-results/${result.id}/assets/${up.body.id}`)).bytes.toString()).toBe('log');
  });

  it('an upload without a file or a name, or not multipart, is refused with a declared status and invalid_upload', async () => {
    const result = await create(lab.owner);
    const refusals: Part[][] = [
      [{ field: 'name', value: 'no-file.txt' }],
      [{ field: 'file', filename: 'no-name.txt', data: Buffer.from('x') }],
      [{ field: 'name', value: '  ' }, { field: 'file', filename: 'x', data: Buffer.from('x') }],
      [{ field: 'name', value: 'x.txt' }, { field: 'file', value: 'text, not a file part' }],
      [{ field: 'name', value: 'x.txt' }, { field: 'attachment', filename: 'x', data: Buffer.from('x') }],
      [{ field: 'name', value: 'x.txt' }, { field: 'file', filename: 'a', data: Buffer.from('a') }, { field: 'file', filename: 'b', data: Buffer.from('b') }],
      [],
    ];
    for (const parts of refusals) {
      const r = await upload(lab.owner, result.id, parts);
      expect(r.status, JSON.stringify(parts)).toBe(404);
      expect(errorCode(r), JSON.stringify(parts)).toBe('invalid_upload');
    }
    const json = await lab.c.call('POST', `/test-results/${result.id}/assets`, { token: lab.owner, body: { name: 'x', file: 'x' } });
    expect(json.status).toBe(404);
    expect(errorCode(json)).toBe('invalid_upload');
    const raw = await lab.c.call('POST', `/test-results/${result.id}/assets`, { token: lab.owner, raw: 'bytes', headers: { 'content-type': 'application/octet-stream' } });
    expect(raw.status).toBe(404);
    expect(errorCode(raw)).toBe('invalid_upload');
    const broken = await fetch(`${lab.t.api}/test-results/${result.id}/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${lab.owner}`, 'content-type': 'multipart/form-data; boundary=abc' },
      body: '--abc\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\nbroken off',
    });
    expect(broken.status).toBe(404);
    expect(errorCode({ status: broken.status, body: await broken.json(), headers: broken.headers })).toBe('invalid_upload');
    expect((await lab.c.call('GET', `/test-results/${result.id}/assets`, { token: lab.owner })).body.data).toEqual([]);
    expect(readdirSync(join(lab.t.dataDir, 'blobs', 'staging'))).toEqual([]);
  });

  it('a form that breaks off inside a large file part stores nothing', async () => {
    const result = await create(lab.owner);
    const { body } = form([{ field: 'name', value: 'cut.bin' }, { field: 'file', filename: 'cut.bin', data: Buffer.alloc(3 * MiB, 7) }]);
    const cut = body.subarray(0, body.length - 100);
    const res = await fetch(`${lab.t.api}/test-results/${result.id}/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${lab.owner}`, 'content-type': 'multipart/form-data; boundary=benchtop-test-boundary' },
      body: cut,
    });
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe('invalid_upload');
    expect((await lab.c.call('GET', `/test-results/${result.id}/assets`, { token: lab.owner })).body.data).toEqual([]);
  });

  it('a client that goes away mid-upload leaves no asset and no staging file', async () => {
    const result = await create(lab.owner);
    const boundary = 'gone-away';
    const req = request(`${lab.t.api}/test-results/${result.id}/assets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${lab.owner}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'content-length': 100 * MiB },
    });
    req.on('error', () => {});
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\ngone.bin\r\n`);
    req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="gone.bin"\r\n\r\n`);
    for (let i = 0; i < 4; i++) req.write(Buffer.alloc(MiB, i));
    const staging = join(lab.t.dataDir, 'blobs', 'staging');
    for (let i = 0; i < 200 && readdirSync(staging).length === 0; i++) await sleep(10);
    expect(readdirSync(staging)).toHaveLength(1);
    req.destroy();
    for (let i = 0; i < 200 && readdirSync(staging).length > 0; i++) await sleep(10);
    expect(readdirSync(staging)).toEqual([]);
    expect((await lab.c.call('GET', `/test-results/${result.id}/assets`, { token: lab.owner })).body.data).toEqual([]);
  });

  it('404 for an unknown or foreign test result, and an unknown asset or one of another result', async () => {
    const stranger = await lab.c.signup('assets-stranger@results.test');
    const theirs = await create(stranger.token);
    const theirAsset = await upload(stranger.token, theirs.id, asset('secret.txt', Buffer.from('secret')));
    const mine = await create(lab.owner);
    const myOther = await create(lab.owner);
    const otherAsset = await upload(lab.owner, myOther.id, asset('other.txt', Buffer.from('other')));

    for (const id of [UNKNOWN, theirs.id]) {
      const up = await upload(lab.owner, id, asset('x.txt', Buffer.from('x')));
      expect(up.status).toBe(404);
      expect(errorCode(up)).toBe('test_result_not_found');
      expect((await lab.c.call('GET', `/test-results/${id}/assets`, { token: lab.owner })).status).toBe(404);
    }
    const dl = (path: string) => lab.c.call('GET', path, { token: lab.owner });
    expect(errorCode(await dl(`/test-results/${theirs.id}/assets/${theirAsset.body.id}`))).toBe('test_result_not_found');
    expect(errorCode(await dl(`/test-results/${mine.id}/assets/${theirAsset.body.id}`))).toBe('asset_not_found');
    expect(errorCode(await dl(`/test-results/${mine.id}/assets/${otherAsset.body.id}`))).toBe('asset_not_found');
    expect(errorCode(await dl(`/test-results/${mine.id}/assets/${UNKNOWN}`))).toBe('asset_not_found');
    expect((await dl(`/test-results/${mine.id}/assets/not-a-uuid`)).status).toBe(404);
    expect((await lab.c.call('GET', `/test-results/${theirs.id}/assets`, { token: stranger.token })).body.data).toHaveLength(1);
  });

  it('401 without credentials for upload, list and download', async () => {
    const result = await create(lab.owner);
    const up = await upload(lab.owner, result.id, asset('x.txt', Buffer.from('x')));
    expect((await upload(undefined, result.id, asset('y.txt', Buffer.from('y')))).status).toBe(401);
    expect((await lab.c.call('GET', `/test-results/${result.id}/assets`)).status).toBe(401);
    expect((await lab.c.call('GET', `/test-results/${result.id}/assets/${up.body.id}`)).status).toBe(401);
    expect((await lab.c.call('GET', `/test-results/${result.id}/assets`, { token: lab.owner })).body.data).toHaveLength(1);
  });

  it('a file over BENCHTOP_MAX_ASSET_BYTES is refused with asset_too_large and leaves nothing behind', async () => {
    const small = await startEngine({ maxAssetBytes: 1000 });
    try {
      const sc = client(small.api);
      const token = await sc.login();
      const result = (await sc.call('POST', '/test-results', { token, body: { name: 'limited' } })).body;
      const exact = await upload(token, result.id, asset('exact.bin', Buffer.alloc(1000, 1)), { api: small.api });
      expect(exact.status).toBe(201);
      const over = await upload(token, result.id, asset('over.bin', Buffer.alloc(1001, 2)), { api: small.api });
      expect(over.status).toBe(404);
      expect(errorCode(over)).toBe('asset_too_large');
      expect((await sc.call('GET', `/test-results/${result.id}/assets`, { token })).body.data).toHaveLength(1);
      expect(readdirSync(join(small.dataDir, 'blobs', 'staging'))).toEqual([]);
    } finally {
      await small.stop();
    }
  });
});

/** A deterministic byte stream: `total` bytes in 1 MiB chunks, each made afresh, hashed as it goes. */
function generated(total: number, hash: ReturnType<typeof createHash>): Readable {
  let sent = 0;
  return new Readable({
    read() {
      if (sent >= total) return void this.push(null);
      const chunk = Buffer.allocUnsafe(Math.min(MiB, total - sent));
      for (let i = 0; i < chunk.length; i += 4) chunk.writeUInt32LE((sent + i) >>> 0, i);
      hash.update(chunk);
      sent += chunk.length;
      this.push(chunk);
    },
  });
}

/** Streams a multipart upload of `size` generated bytes over node:http, with a known Content-Length. */
function streamUpload(url: string, token: string, size: number, hash: ReturnType<typeof createHash>): Promise<{ status: number; body: any }> {
  const boundary = 'benchtop-large-upload';
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\nlarge.bin\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="large.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': `multipart/form-data; boundary=${boundary}`,
        'content-length': head.length + size + tail.length,
      },
    }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    async function* body() {
      yield head;
      yield* generated(size, hash);
      yield tail;
    }
    pipeline(Readable.from(body()), req).catch(reject);
  });
}

const rssKb = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);

describe('a large asset', () => {
  it('streams a 200 MiB upload and download through a serving process whose memory stays flat', { timeout: 120_000 }, async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'benchtop-large-asset-'));
    const serve = await startServeProcess({
      BENCHTOP_DATA_DIR: dataDir,
      BENCHTOP_OWNER_EMAIL: OWNER_EMAIL,
      BENCHTOP_OWNER_PASSWORD: OWNER_PASSWORD,
      BENCHTOP_ADB: 'off',
    });
    try {
      const pid = serve.child.pid!;
      const token = (await call(serve.api, 'POST', '/auth/login', { body: { email: OWNER_EMAIL, password: OWNER_PASSWORD } })).body.token;
      const result = (await call(serve.api, 'POST', '/test-results', { token, body: { name: 'large' } })).body;
      await sleep(500);
      const idle = rssKb(pid);
      let peak = idle;
      const sampler = setInterval(() => (peak = Math.max(peak, rssKb(pid))), 10);
      const size = 200 * MiB;
      const sent = createHash('sha256');
      let up: { status: number; body: any };
      try {
        up = await streamUpload(`${serve.api}/test-results/${result.id}/assets`, token, size, sent);
      } finally {
        clearInterval(sampler);
      }
      expect(up.status).toBe(201);
      expect(up.body).toMatchObject({ name: 'large.bin', size, sha256: sent.digest('hex') });
      const riseMiB = (peak - idle) / 1024;
      expect(riseMiB, `RSS rose ${riseMiB.toFixed(1)} MiB from ${(idle / 1024).toFixed(1)} MiB`).toBeLessThan(100);

      const res = await fetch(`${serve.api}/test-results/${result.id}/assets/${up.body.id}`, { headers: { authorization: `Bearer ${token}` } });
      expect(res.headers.get('content-length')).toBe(String(size));
      const received = createHash('sha256');
      let bytes = 0;
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        received.update(chunk);
        bytes += chunk.length;
      }
      expect(bytes).toBe(size);
      expect(received.digest('hex')).toBe(up.body.sha256);
    } finally {
      serve.child.kill('SIGTERM');
      await serve.exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
