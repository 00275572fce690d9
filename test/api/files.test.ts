import { existsSync, readdirSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildApk, buildIpa, sha256 } from '../support/app-fixtures.js';
import { client, errorCode, startEngine, type Reply, useEngine } from '../support/engine.js';
import { waitFor } from '../support/lab.js';

const lab = useEngine({ maxAssetBytes: 1024 * 1024 });

const UNKNOWN = '6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000';
const DAY = 24 * 3600 * 1000;
const blobPath = (sha: string) => join(lab.t.dataDir, 'blobs', sha.slice(0, 2), sha);

let serial = 0;
/** An APK no other test uses, so that dedup never joins two tests' files. */
const uniqueApk = (extra: Partial<Parameters<typeof buildApk>[0]> = {}) =>
  buildApk({ packageName: `com.example.files${++serial}`, label: `Files ${serial}`, versionCode: serial, versionName: `1.${serial}`, ...extra });

const declare = (bytes: Buffer, token = lab.owner, filename = 'app.apk', org?: string) =>
  lab.c.call('POST', '/files', { token, org, body: { filename, filesize: bytes.length, sha256: sha256(bytes) } });

async function put(url: string, bytes: Buffer, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream', ...headers }, body: new Uint8Array(bytes) });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

/** A multipart/form-data upload with one file part. */
async function uploadForm(token: string | undefined, bytes: Buffer, filename = 'app.apk', options: { field?: string; org?: string } = {}): Promise<Reply> {
  const form = new FormData();
  form.append(options.field ?? 'file', new Blob([new Uint8Array(bytes)]), filename);
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (options.org) headers['x-organization-id'] = options.org;
  const res = await fetch(`${lab.t.api}/files/upload`, { method: 'POST', headers, body: form });
  return { status: res.status, body: await res.json(), headers: res.headers };
}

const settled = (id: string, token = lab.owner) =>
  waitFor(`file ${id} to settle`, async () => {
    const r = await lab.c.call('GET', `/files/${id}`, { token });
    return r.body.status === 'ready' || r.body.status === 'failed' ? r.body : undefined;
  });

/** Declares, PUTs and completes a file; resolves to the settled file. */
async function store(bytes: Buffer, token = lab.owner, filename = 'app.apk') {
  const created = await declare(bytes, token, filename);
  expect(created.status).toBe(201);
  expect((await put(created.body.upload.url, bytes, created.body.upload.headers)).status).toBe(200);
  expect((await lab.c.call('POST', `/files/${created.body.id}/complete`, { token })).status).toBe(200);
  return settled(created.body.id, token);
}

async function readonlyMember(email: string) {
  const org = await lab.c.createOrganization(lab.owner, `Readers ${email}`);
  const reader = await lab.c.signup(email);
  await lab.c.addMember(lab.owner, org, reader.token, email, 'readonly');
  return { org, token: reader.token };
}

describe('the signed upload flow', () => {
  it('declare (201 pendingUpload with a PUT URL on the engine), PUT, complete: processing, then ready with the APK\'s metadata and its app', async () => {
    const apk = buildApk({ packageName: 'com.example.flow', label: 'Flow', versionCode: 42, versionName: '4.2.0' });
    const created = await declare(apk, lab.owner, 'flow.apk');
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ filename: 'flow.apk', size: apk.length, sha256: sha256(apk), status: 'pendingUpload' });
    expect(created.body.upload).toMatchObject({ method: 'PUT', headers: { 'content-type': 'application/octet-stream' } });
    expect(created.body.upload.url.startsWith(`${lab.t.api}/files/${created.body.id}/content?`)).toBe(true);
    expect(Date.parse(created.body.expiresAt) - Date.parse(created.body.createdAt)).toBe(30 * DAY);

    const early = await lab.c.call('POST', `/files/${created.body.id}/complete`, { token: lab.owner });
    expect(early.status).toBe(409);
    expect(errorCode(early)).toBe('file_not_uploaded');

    const putReply = await put(created.body.upload.url, apk);
    expect(putReply.status).toBe(200);
    expect(putReply.body.status).toBe('pendingUpload');
    expect(existsSync(blobPath(sha256(apk)))).toBe(true);

    const completed = await lab.c.call('POST', `/files/${created.body.id}/complete`, { token: lab.owner });
    expect(completed.status).toBe(200);
    expect(completed.body.status).toBe('processing');

    const file = await settled(created.body.id);
    expect(file).toMatchObject({
      status: 'ready',
      platform: 'android',
      bundleId: 'com.example.flow',
      metadata: { package: 'com.example.flow', versionName: '4.2.0', versionCode: 42, label: 'Flow', minSdk: 21 },
    });
    expect(file.failureReason).toBeUndefined();

    const app = await lab.c.call('GET', `/apps/${file.appId}`, { token: lab.owner });
    expect(app.status).toBe(200);
    expect(app.body).toMatchObject({ id: file.appId, platform: 'android', bundleId: 'com.example.flow', name: 'Flow', latestVersion: '4.2.0' });
    expect(app.body.files).toEqual([{ id: file.id, version: '4.2.0', build: '42', createdAt: file.createdAt }]);

    // Complete again: idempotent.
    const again = await lab.c.call('POST', `/files/${created.body.id}/complete`, { token: lab.owner });
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('ready');
  });

  it('a SHA-256 that does not match the bytes fails the file with a reason', async () => {
    const apk = uniqueApk();
    const other = uniqueApk();
    const created = await lab.c.call('POST', '/files', { token: lab.owner, body: { filename: 'x.apk', filesize: apk.length, sha256: sha256(other) } });
    expect(created.status).toBe(201);
    expect((await put(created.body.upload.url, apk)).status).toBe(200);
    const completed = await lab.c.call('POST', `/files/${created.body.id}/complete`, { token: lab.owner });
    expect(completed.body.status).toBe('failed');
    expect(completed.body.failureReason).toMatch(new RegExp(`^sha256_mismatch: .*${sha256(apk)}`));
    expect(completed.body.appId).toBeUndefined();
  });

  it('a size that does not match fails the file with a reason', async () => {
    const apk = uniqueApk();
    const created = await lab.c.call('POST', '/files', { token: lab.owner, body: { filename: 'x.apk', filesize: apk.length + 10, sha256: sha256(apk) } });
    expect((await put(created.body.upload.url, apk)).status).toBe(200);
    const completed = await lab.c.call('POST', `/files/${created.body.id}/complete`, { token: lab.owner });
    expect(completed.body).toMatchObject({ status: 'failed' });
    expect(completed.body.failureReason).toMatch(/^size_mismatch: /);
  });

  it('a failed file can be declared again: the same id, a fresh URL, and this time ready', async () => {
    const apk = uniqueApk();
    const wrong = await lab.c.call('POST', '/files', { token: lab.owner, body: { filename: 'x.apk', filesize: apk.length, sha256: sha256(apk) } });
    expect((await put(wrong.body.upload.url, Buffer.concat([apk.subarray(0, -1), Buffer.from([apk.at(-1)! ^ 1])]))).status).toBe(200);
    expect((await lab.c.call('POST', `/files/${wrong.body.id}/complete`, { token: lab.owner })).body.status).toBe('failed');
    const retry = await declare(apk);
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject({ id: wrong.body.id, status: 'pendingUpload' });
    expect(retry.body.failureReason).toBeUndefined();
    expect((await put(retry.body.upload.url, apk)).status).toBe(200);
    await lab.c.call('POST', `/files/${retry.body.id}/complete`, { token: lab.owner });
    expect((await settled(retry.body.id)).status).toBe('ready');
  });

  it('an IPA with an XML Info.plist, and one with a binary Info.plist, are read', async () => {
    const xml = await store(buildIpa({ bundleId: 'com.example.ios', shortVersion: '3.1', build: '310', displayName: 'iOS App' }), lab.owner, 'app.ipa');
    expect(xml).toMatchObject({
      status: 'ready',
      platform: 'ios',
      bundleId: 'com.example.ios',
      metadata: { bundleIdentifier: 'com.example.ios', shortVersion: '3.1', bundleVersion: '310', displayName: 'iOS App' },
    });
    const binaryIpa = buildIpa({ bundleId: 'com.example.ios', shortVersion: '3.2', build: '320', name: 'iOS Named', binary: true });
    const binary = await store(binaryIpa, lab.owner, 'app2.ipa');
    expect(binary).toMatchObject({ status: 'ready', platform: 'ios', metadata: { bundleVersion: '320', shortVersion: '3.2', displayName: 'iOS Named' } });

    // Both files are one app; the newest names it.
    expect(binary.appId).toBe(xml.appId);
    const app = (await lab.c.call('GET', `/apps/${xml.appId}`, { token: lab.owner })).body;
    expect(app).toMatchObject({ platform: 'ios', bundleId: 'com.example.ios', name: 'iOS Named', latestVersion: '3.2' });
    expect(app.files.map((f: { id: string }) => f.id)).toEqual([binary.id, xml.id]);
    expect(Date.parse(app.updatedAt)).toBeGreaterThanOrEqual(Date.parse(app.createdAt));
  });

  it('a file that is not an app fails with a reason: not a zip, a zip without a manifest, a broken plist, no bundle id', async () => {
    const { writeZip } = await import('../../src/sim/android/apk.js');
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.from('definitely not a zip archive'), /^not_an_app: Not an app: the file is not a zip archive/],
      [writeZip([{ name: 'README.txt', data: Buffer.from('hello') }]), /neither AndroidManifest\.xml .* nor Payload\/\*\.app\/Info\.plist/],
      [writeZip([{ name: 'Payload/A.app/Info.plist', data: Buffer.from('<plist><dict><key>x</key>') }]), /^not_an_app: The IPA's Info.plist cannot be read/],
      [buildIpa({ bundleId: '' }), /no CFBundleIdentifier/],
      [writeZip([{ name: 'AndroidManifest.xml', data: Buffer.from('not binary xml') }]), /^not_an_app: The APK's AndroidManifest.xml cannot be read/],
    ];
    for (const [bytes, reason] of cases) {
      const file = await store(bytes, lab.owner, 'thing.bin');
      expect(file.status, file.failureReason).toBe('failed');
      expect(file.failureReason).toMatch(reason);
      expect(file.platform).toBeUndefined();
    }
  });
});

describe('the signed URL', () => {
  it('is single-use: a second PUT is 403 upload_url_used', async () => {
    const apk = uniqueApk();
    const created = await declare(apk);
    expect((await put(created.body.upload.url, apk)).status).toBe(200);
    const reused = await put(created.body.upload.url, apk);
    expect(reused.status).toBe(403);
    expect(errorCode(reused)).toBe('upload_url_used');
  });

  it('refuses any altered part with 403 upload_url_invalid, without needing a bearer', async () => {
    const apk = uniqueApk();
    const created = await declare(apk);
    const url = new URL(created.body.upload.url);
    const altered = (name: string, value: string) => {
      const u = new URL(url);
      u.searchParams.set(name, value);
      return u.toString();
    };
    const sig = url.searchParams.get('signature')!;
    for (const bad of [
      altered('signature', (sig[0] === 'A' ? 'B' : 'A') + sig.slice(1)),
      altered('nonce', 'another-nonce'),
      altered('expires', String(Number(url.searchParams.get('expires')) + 3600_000)),
      url.toString().replace(created.body.id, UNKNOWN),
    ]) {
      const r = await put(bad, apk);
      expect(r.status, bad).toBe(403);
      expect(errorCode(r)).toBe('upload_url_invalid');
    }
    // Still unused: the genuine URL works.
    expect((await put(url.toString(), apk)).status).toBe(200);
  });

  it('expires: 403 upload_url_expired after an hour, and a new declaration gives a fresh URL', async () => {
    const apk = uniqueApk();
    const created = await declare(apk);
    lab.t.clock.offsetMs = 3600_000 + 1;
    try {
      const r = await put(created.body.upload.url, apk);
      expect(r.status).toBe(403);
      expect(errorCode(r)).toBe('upload_url_expired');
      const fresh = await declare(apk);
      expect(fresh.status).toBe(200);
      expect(fresh.body.id).toBe(created.body.id);
      expect((await put(fresh.body.upload.url, apk)).status).toBe(200);
    } finally {
      lab.t.clock.offsetMs = 0;
    }
  });

  it('400 when the query is missing its parts; 400 file_too_large past the declared size; 404 for a deleted file', async () => {
    const apk = uniqueApk();
    const created = await declare(apk);
    const bare = await put(created.body.upload.url.split('?')[0]!, apk);
    expect(bare.status).toBe(400);
    errorCode(bare);

    const big = await put(created.body.upload.url, Buffer.concat([apk, Buffer.alloc(200_000)]));
    expect(big.status).toBe(400);
    expect(errorCode(big)).toBe('file_too_large');
    expect((await lab.c.call('GET', `/files/${created.body.id}`, { token: lab.owner })).body.status).toBe('pendingUpload');

    const again = await declare(apk);
    expect((await lab.c.call('DELETE', `/files/${again.body.id}`, { token: lab.owner })).status).toBe(204);
    const gone = await put(again.body.upload.url, apk);
    expect(gone.status).toBe(404);
    expect(errorCode(gone)).toBe('file_not_found');
  });

  it('a PUT that breaks off leaves the file waiting for its bytes, and the engine serving', async () => {
    const apk = uniqueApk();
    const created = await declare(apk);
    const url = new URL(created.body.upload.url);
    await new Promise<void>((resolve) => {
      const req = request(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream', 'content-length': apk.length * 10 } });
      req.on('error', () => resolve());
      req.write(apk, () => setTimeout(() => req.destroy(), 50));
    });
    await waitFor('the partial upload to be dropped from staging', () => readdirSync(join(lab.t.dataDir, 'blobs', 'staging')).length === 0);
    const complete = await lab.c.call('POST', `/files/${created.body.id}/complete`, { token: lab.owner });
    expect(complete.status).toBe(409);
    expect(errorCode(complete)).toBe('file_not_uploaded');
    // A fresh URL finishes the job.
    const fresh = await declare(apk);
    expect((await put(fresh.body.upload.url, apk)).status).toBe(200);
  });

  it('streams a body sent with any content type, JSON included, without parsing it', async () => {
    const apk = uniqueApk();
    const created = await declare(apk);
    expect((await put(created.body.upload.url, apk, { 'content-type': 'application/json' })).status).toBe(200);
    await lab.c.call('POST', `/files/${created.body.id}/complete`, { token: lab.owner });
    expect((await settled(created.body.id)).status).toBe('ready');
  });
});

describe('dedup and the direct upload', () => {
  it('the same bytes are the same file: declaring a ready file answers it (200, no upload), and so does uploading it', async () => {
    const apk = uniqueApk();
    const file = await store(apk);
    const declared = await declare(apk, lab.owner, 'renamed.apk');
    expect(declared.status).toBe(200);
    expect(declared.body).toMatchObject({ id: file.id, status: 'ready', filename: file.filename });
    expect(declared.body.upload).toBeUndefined();
    const uploaded = await uploadForm(lab.owner, apk, 'again.apk');
    expect(uploaded.status).toBe(200);
    expect(uploaded.body.id).toBe(file.id);
    const all = (await lab.c.call('GET', '/files?limit=500', { token: lab.owner })).body.data;
    expect(all.filter((f: { sha256: string }) => f.sha256 === sha256(apk))).toHaveLength(1);
  });

  it('uploads of the same bytes at the same time make one file', async () => {
    const apk = uniqueApk();
    const replies = await Promise.all([1, 2, 3, 4].map(() => uploadForm(lab.owner, apk)));
    expect(new Set(replies.map((r) => r.body.id)).size).toBe(1);
    expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 200, 201]);
  });

  it('per organization: another organization storing the same bytes gets its own file', async () => {
    const apk = uniqueApk();
    const mine = await store(apk);
    const other = await lab.c.signup('dedup-other@files.test');
    const theirs = await uploadForm(other.token, apk);
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.id);
  });

  it('a direct upload is 201 processing, then ready; the part\'s filename names the file', async () => {
    const apk = uniqueApk({ packageName: 'com.example.direct' });
    const r = await uploadForm(lab.owner, apk, 'direct.apk');
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ filename: 'direct.apk', size: apk.length, sha256: sha256(apk), status: 'processing' });
    expect(await settled(r.body.id)).toMatchObject({ status: 'ready', bundleId: 'com.example.direct' });
  });

  it('a bad form is 400 invalid_upload; past the lab\'s limit is 400 file_too_large; readonly is 403; no bearer is 401', async () => {
    const apk = uniqueApk();
    const wrongField = await uploadForm(lab.owner, apk, 'x.apk', { field: 'app' });
    expect(wrongField.status).toBe(400);
    expect(errorCode(wrongField)).toBe('invalid_upload');
    const json = await lab.c.call('POST', '/files/upload', { token: lab.owner, body: { file: 'x' } });
    expect(json.status).toBe(400);
    expect(errorCode(json)).toBe('invalid_upload');
    const noFile = await fetch(`${lab.t.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${lab.owner}` }, body: new FormData() });
    expect(noFile.status).toBe(400);
    const big = await uploadForm(lab.owner, Buffer.alloc(1024 * 1024 + 1));
    expect(big.status).toBe(400);
    expect(errorCode(big)).toBe('file_too_large');
    const reader = await readonlyMember('reader-upload@files.test');
    const refused = await uploadForm(reader.token, apk, 'x.apk', { org: reader.org });
    expect(refused.status).toBe(403);
    expect(errorCode(refused)).toBe('insufficient_role');
    expect((await uploadForm(undefined, apk)).status).toBe(401);
  });
});

describe('declared statuses', () => {
  it('POST /files: 400 for a bad body or a size past the limit, 401 without a bearer, 403 for readonly or a foreign organization', async () => {
    for (const body of [{}, { filename: 'a.apk', filesize: 10 }, { filename: 'a.apk', filesize: 0, sha256: 'a'.repeat(64) },
      { filename: 'a.apk', filesize: 10, sha256: 'xyz' }, { filename: ' ', filesize: 10, sha256: 'a'.repeat(64) },
      { filename: 'a.apk', filesize: 10, sha256: 'a'.repeat(64), extra: 1 }]) {
      const r = await lab.c.call('POST', '/files', { token: lab.owner, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(errorCode(r)).toBe('invalid_request');
    }
    const tooBig = await lab.c.call('POST', '/files', { token: lab.owner, body: { filename: 'a.apk', filesize: 1024 * 1024 + 1, sha256: 'a'.repeat(64) } });
    expect(tooBig.status).toBe(400);
    expect(errorCode(tooBig)).toBe('file_too_large');
    expect((await lab.c.call('POST', '/files', { raw: '{"filename":', token: lab.owner })).status).toBe(400);
    expect((await lab.c.call('POST', '/files', { body: { filename: 'a.apk', filesize: 1, sha256: 'a'.repeat(64) } })).status).toBe(401);
    const reader = await readonlyMember('reader-declare@files.test');
    const r = await lab.c.call('POST', '/files', { token: reader.token, org: reader.org, body: { filename: 'a.apk', filesize: 1, sha256: 'a'.repeat(64) } });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('insufficient_role');
    const stranger = await lab.c.signup('stranger-declare@files.test');
    expect((await lab.c.call('POST', '/files', { token: lab.owner, org: stranger.personalOrgId, body: { filename: 'a.apk', filesize: 1, sha256: 'a'.repeat(64) } })).status).toBe(403);
  });

  it('GET /files: 200 paged newest first, 400 for a bad query, 401, 403 for a foreign organization', async () => {
    const org = await lab.c.createOrganization(lab.owner, 'Paging files');
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await lab.c.call('POST', '/files', { token: lab.owner, org, body: { filename: `${i}.apk`, filesize: 1, sha256: sha256(Buffer.from(`p${i}`)) } })).body.id);
    const first = await lab.c.call('GET', '/files?limit=2', { token: lab.owner, org });
    expect(first.status).toBe(200);
    expect(first.body.object).toBe('list');
    expect(first.body.data.map((f: { id: string }) => f.id)).toEqual([ids[2], ids[1]]);
    const second = await lab.c.call('GET', `/files?limit=2&before=${encodeURIComponent(first.body.nextCursor)}`, { token: lab.owner, org });
    expect(second.body.data.map((f: { id: string }) => f.id)).toEqual([ids[0]]);
    expect(second.body.nextCursor).toBeUndefined();
    expect(second.body.data[0].upload).toBeUndefined();
    for (const q of ['limit=0', 'limit=501', 'before=yesterday']) expect((await lab.c.call('GET', `/files?${q}`, { token: lab.owner })).status).toBe(400);
    expect((await lab.c.call('GET', '/files')).status).toBe(401);
    const stranger = await lab.c.signup('stranger-list@files.test');
    expect((await lab.c.call('GET', '/files', { token: lab.owner, org: stranger.personalOrgId })).status).toBe(403);
  });

  it('GET, DELETE and complete: 401, 403 (readonly changes, foreign organization), 404 (unknown, malformed, another organization\'s)', async () => {
    const file = (await declare(uniqueApk())).body;
    const other = await lab.c.signup('other-org@files.test');
    for (const [method, path] of [['GET', `/files/${file.id}`], ['DELETE', `/files/${file.id}`], ['POST', `/files/${file.id}/complete`]] as const) {
      expect((await lab.c.call(method, path)).status).toBe(401);
      const foreign = await lab.c.call(method, path, { token: other.token });
      expect(foreign.status, `${method} ${path}`).toBe(404);
      expect(errorCode(foreign)).toBe('file_not_found');
      expect((await lab.c.call(method, path.replace(file.id, UNKNOWN), { token: lab.owner })).status).toBe(404);
      expect((await lab.c.call(method, path.replace(file.id, 'not-a-uuid'), { token: lab.owner })).status).toBe(404);
      expect((await lab.c.call(method, path, { token: lab.owner, org: other.personalOrgId })).status).toBe(403);
    }
    const reader = await readonlyMember('reader-delete@files.test');
    const theirs = (await lab.c.call('POST', '/files', { token: lab.owner, org: reader.org, body: { filename: 'r.apk', filesize: 1, sha256: 'b'.repeat(64) } })).body;
    expect((await lab.c.call('GET', `/files/${theirs.id}`, { token: reader.token, org: reader.org })).status).toBe(200);
    for (const [method, path] of [['DELETE', `/files/${theirs.id}`], ['POST', `/files/${theirs.id}/complete`]] as const) {
      const r = await lab.c.call(method, path, { token: reader.token, org: reader.org });
      expect(r.status).toBe(403);
      expect(errorCode(r)).toBe('insufficient_role');
    }
    expect((await lab.c.call('DELETE', `/files/${file.id}`, { token: lab.owner })).status).toBe(204);
    expect((await lab.c.call('GET', `/files/${file.id}`, { token: lab.owner })).status).toBe(404);
  });

  it('GET /apps and /apps/{id}: 200, 400, 401, 403 for a foreign organization, 404 for another organization\'s app', async () => {
    const ios = await store(buildIpa({ bundleId: 'com.example.listed', shortVersion: '1.0', build: '1' }), lab.owner, 'l.ipa');
    const all = await lab.c.call('GET', '/apps?platform=ios', { token: lab.owner });
    expect(all.status).toBe(200);
    expect(all.body.data.every((a: { platform: string }) => a.platform === 'ios')).toBe(true);
    expect(all.body.data.map((a: { id: string }) => a.id)).toContain(ios.appId);
    const paged = await lab.c.call('GET', '/apps?limit=1', { token: lab.owner });
    expect(paged.body.data).toHaveLength(1);
    const next = await lab.c.call('GET', `/apps?limit=1&before=${encodeURIComponent(paged.body.nextCursor)}`, { token: lab.owner });
    expect(next.body.data[0].id).not.toBe(paged.body.data[0].id);
    for (const q of ['limit=0', 'platform=windows', 'before=x']) expect((await lab.c.call('GET', `/apps?${q}`, { token: lab.owner })).status).toBe(400);
    expect((await lab.c.call('GET', '/apps')).status).toBe(401);
    expect((await lab.c.call('GET', `/apps/${ios.appId}`)).status).toBe(401);
    const other = await lab.c.signup('other-apps@files.test');
    expect((await lab.c.call('GET', '/apps', { token: lab.owner, org: other.personalOrgId })).status).toBe(403);
    expect((await lab.c.call('GET', `/apps/${ios.appId}`, { token: lab.owner, org: other.personalOrgId })).status).toBe(403);
    const foreign = await lab.c.call('GET', `/apps/${ios.appId}`, { token: other.token });
    expect(foreign.status).toBe(404);
    expect(errorCode(foreign)).toBe('app_not_found');
    expect((await lab.c.call('GET', '/apps', { token: other.token })).body.data).toEqual([]);
    expect((await lab.c.call('GET', `/apps/${UNKNOWN}`, { token: lab.owner })).status).toBe(404);
    // Read-only: no way to change an app. The path exists for GET alone, so another method is 405 with Allow.
    const deleted = await lab.c.call('DELETE', `/apps/${ios.appId}`, { token: lab.owner });
    expect([deleted.status, errorCode(deleted), deleted.headers.get('allow')]).toEqual([405, 'method_not_allowed', 'GET, HEAD']);
  });

  it('deleting an app\'s last file removes the app', async () => {
    const file = await store(buildApk({ packageName: 'com.example.lonely', versionCode: 1 }));
    expect((await lab.c.call('DELETE', `/files/${file.id}`, { token: lab.owner })).status).toBe(204);
    expect((await lab.c.call('GET', `/apps/${file.appId}`, { token: lab.owner })).status).toBe(404);
  });
});

describe('expiry and the sweeper', () => {
  it('an expired file is gone at once; the sweep deletes its row and its blob, but never a blob a test-result asset uses', async () => {
    const engine = await startEngine({ fileExpiryDays: 2 });
    const e = client(engine.api);
    let token = await e.login();
    try {
      const shared = uniqueApk();
      const lonely = uniqueApk();
      const keep = uniqueApk();
      const upload = async (bytes: Buffer) => {
        const form = new FormData();
        form.append('file', new Blob([new Uint8Array(bytes)]), 'x.apk');
        const res = await fetch(`${engine.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
        return (await res.json()) as { id: string; expiresAt: string; createdAt: string };
      };
      const a = await upload(shared);
      const b = await upload(lonely);
      expect(Date.parse(a.expiresAt) - Date.parse(a.createdAt)).toBe(2 * DAY);
      // The same bytes as a test-result asset.
      const result = (await e.call('POST', '/test-results', { token, body: { name: 'run' } })).body;
      const form = new FormData();
      form.append('name', 'shared.apk');
      form.append('file', new Blob([new Uint8Array(shared)]), 'shared.apk');
      const asset = await (await fetch(`${engine.api}/test-results/${result.id}/assets`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form })).json();
      const appIds: string[] = [];
      for (const id of [a.id, b.id]) {
        appIds.push(await waitFor('ready', async () => (await e.call('GET', `/files/${id}`, { token })).body.appId));
      }
      const blob = (bytes: Buffer) => join(engine.dataDir, 'blobs', sha256(bytes).slice(0, 2), sha256(bytes));

      engine.clock.offsetMs = 2 * DAY + 1000;
      // Interactive tokens last 12 hours: a new one after the jump.
      token = await e.login();
      // A file uploaded after the jump is fresh.
      const c2 = await upload(keep);
      expect((await e.call('GET', `/files/${a.id}`, { token })).status).toBe(404);
      expect((await e.call('GET', '/files', { token })).body.data.map((f: { id: string }) => f.id)).toEqual([c2.id]);
      const apps = (await e.call('GET', '/apps', { token })).body.data.map((x: { id: string }) => x.id);
      for (const id of appIds) {
        expect(apps).not.toContain(id);
        expect((await e.call('GET', `/apps/${id}`, { token })).status).toBe(404);
      }

      const swept = await engine.engine.services.files.sweep();
      expect(swept.files).toBe(2);
      expect(swept.blobs).toBe(1);
      expect(existsSync(blob(lonely))).toBe(false);
      expect(existsSync(blob(shared))).toBe(true);
      expect(existsSync(blob(keep))).toBe(true);
      const download = await fetch(`${engine.api}/test-results/${result.id}/assets/${asset.id}`, { headers: { authorization: `Bearer ${token}` } });
      expect(Buffer.from(await download.arrayBuffer()).equals(shared)).toBe(true);
      // The same bytes again are a new file.
      const again = await upload(lonely);
      expect(again.id).not.toBe(b.id);
      await waitFor('ready again', async () => (await e.call('GET', `/files/${again.id}`, { token })).body.status === 'ready');
      expect(existsSync(blob(lonely))).toBe(true);
    } finally {
      await engine.stop();
    }
  });

  it('a deleted file\'s blob goes with a sweep once it is past the grace period', async () => {
    const apk = uniqueApk();
    const file = await store(apk);
    expect((await lab.c.call('DELETE', `/files/${file.id}`, { token: lab.owner })).status).toBe(204);
    expect((await lab.t.engine.services.files.sweep()).blobs).toBe(0);
    expect(existsSync(blobPath(sha256(apk)))).toBe(true);
    lab.t.clock.offsetMs = 2 * 3600_000;
    try {
      await lab.t.engine.services.files.sweep();
      expect(existsSync(blobPath(sha256(apk)))).toBe(false);
    } finally {
      lab.t.clock.offsetMs = 0;
    }
  });

  it('a file left processing by a stop is read when the engine starts again', async () => {
    const engine = await startEngine();
    try {
      const e = client(engine.api);
      const token = await e.login();
      const apk = uniqueApk({ packageName: 'com.example.restart' });
      const created = (await e.call('POST', '/files', { token, body: { filename: 'r.apk', filesize: apk.length, sha256: sha256(apk) } })).body;
      await put(created.upload.url, apk);
      // Marked processing directly, as a stop between complete and the read would leave it.
      const row = engine.engine.stores.files.find(created.id)!;
      engine.engine.stores.files.update({ ...row, status: 'processing' });
      const again = await engine.restart();
      const file = await waitFor('ready after the restart', async () => {
        const r = await client(again.api).call('GET', `/files/${created.id}`, { token: await client(again.api).login() });
        return r.body.status === 'ready' ? r.body : undefined;
      });
      expect(file.bundleId).toBe('com.example.restart');
      await again.stop();
    } finally {
      await engine.stop();
    }
  });
});
