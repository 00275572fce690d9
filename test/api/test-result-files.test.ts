import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { waitFor } from '../support/lab.js';

const DAY_MS = 24 * 3600 * 1000;

/**
 * How long the lab keeps test results' files (lab settings, testResultFiles.keepDays): a lab on a desk that keeps every
 * run's video fills its disk. Kept unless the lab owner chooses; once chosen, files older than that go (with their bytes
 * on disk, unless something else still refers to them), lab-wide, and their results stay, saying when.
 */
describe("test results' files past the lab's retention", () => {
  let t: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    t = await startEngine();
    c = client(t.api);
    owner = await c.login();
  });
  afterAll(() => t?.stop());

  const settings = async () => (await c.call('GET', '/lab/settings', { token: owner })).body.testResultFiles;
  const result = async (token: string, name: string, files: Record<string, Buffer>, org?: string) => {
    const created = await c.call('POST', '/test-results', { token, org, body: { name, status: 'passed' } });
    expect(created.status).toBe(201);
    for (const [file, data] of Object.entries(files)) {
      const body = new FormData();
      body.set('name', file);
      body.set('file', new Blob([new Uint8Array(data)]), file);
      const headers: Record<string, string> = { authorization: `Bearer ${token}`, ...(org ? { 'x-organization-id': org } : {}) };
      const r = await fetch(`${t.api}/test-results/${created.body.id}/assets`, { method: 'POST', headers, body });
      expect(r.status).toBe(201);
    }
    return created.body.id as string;
  };
  const assetsOf = async (token: string, id: string, org?: string) =>
    ((await c.call('GET', `/test-results/${id}/assets`, { token, org })).body.data as Array<{ name: string; sha256: string }>);
  const blobPath = (sha256: string) => join(t.dataDir, 'blobs', sha256.slice(0, 2), sha256);

  it('keeps every file until the lab owner chooses a period; then older files go, lab-wide, their bytes with them, and each result says when', async () => {
    const video = randomBytes(300_000);
    const log = Buffer.from('POST /element (xpath //x)\n');
    const mine = await result(owner, 'nightly on the Pixel 8', { 'video.mp4': video, 'commands.log': log });
    // Another organization's run, of another member: the lab's retention is the lab's, for every organization.
    const teammate = await c.signup('teammate@lab.test');
    const team = await c.createOrganization(teammate.token, 'Team');
    const theirs = await result(teammate.token, 'their run', { 'trace.zip': randomBytes(10_000) }, team);

    const before = await settings();
    expect(before).toMatchObject({ keepDays: 0, storedBytes: video.length + log.length + 10_000 });
    expect(before.diskFreeBytes).toBeGreaterThan(0);
    const [videoAsset] = await assetsOf(owner, mine);
    expect(existsSync(blobPath(videoAsset!.sha256))).toBe(true);

    // Kept: a sweep a year on removes nothing while keepDays is 0.
    expect((await t.engine.services.files.sweep(Date.now() + 365 * DAY_MS)).testResults).toBe(0);
    expect(await assetsOf(owner, mine)).toHaveLength(2);

    // 30 days: the files are a day old, so they stay now...
    const patched = await c.call('PATCH', '/lab/settings', { token: owner, body: { testResultFiles: { keepDays: 30 } } });
    expect(patched.status).toBe(200);
    expect(patched.body.testResultFiles.keepDays).toBe(30);
    expect((await t.engine.services.files.sweep(Date.now() + 29 * DAY_MS)).testResults).toBe(0);
    expect(await assetsOf(owner, mine)).toHaveLength(2);

    // ...and go once older than that: the rows at once, the bytes with the blobs nothing else refers to.
    const swept = await t.engine.services.files.sweep(Date.now() + 31 * DAY_MS);
    expect(swept).toMatchObject({ testResults: 2, blobs: 3 });
    expect(await assetsOf(owner, mine)).toEqual([]);
    expect(await assetsOf(teammate.token, theirs, team)).toEqual([]);
    expect(existsSync(blobPath(videoAsset!.sha256))).toBe(false);
    const kept = (await c.call('GET', `/test-results/${mine}`, { token: owner })).body;
    expect(kept).toMatchObject({ name: 'nightly on the Pixel 8', status: 'passed', filesRemovedAt: expect.stringMatching(/Z$/) });
    // In the list too, where a client sees it first.
    const listed = (await c.call('GET', '/test-results', { token: teammate.token, org: team })).body.data;
    expect(listed.find((r: { id: string }) => r.id === theirs).filesRemovedAt).toEqual(expect.any(String));
    expect((await settings()).storedBytes).toBe(0);
  });

  it('a shorter period applies when it is saved, not at the next hourly sweep; a file stored since is kept', async () => {
    await c.call('PATCH', '/lab/settings', { token: owner, body: { testResultFiles: { keepDays: 0 } } });
    const old = await result(owner, 'last month', { 'appium.log': Buffer.from('old') });
    // The lab's clock moves on 10 days (as if the files were stored then); a new run's file is stored now.
    t.clock.offsetMs = 10 * DAY_MS;
    try {
      // Signed in again: the token of ten days ago has expired on the moved clock.
      const later = await c.login();
      const fresh = await result(later, 'today', { 'appium.log': Buffer.from('new') });
      expect((await c.call('PATCH', '/lab/settings', { token: later, body: { testResultFiles: { keepDays: 7 } } })).status).toBe(200);
      await waitFor('the old files removed by the save', async () => (await assetsOf(later, old)).length === 0 || undefined, 5_000);
      expect((await c.call('GET', `/test-results/${old}`, { token: later })).body.filesRemovedAt).toEqual(expect.any(String));
      expect(await assetsOf(later, fresh)).toHaveLength(1);
      expect((await c.call('GET', `/test-results/${fresh}`, { token: later })).body.filesRemovedAt).toBeNull();
    } finally {
      t.clock.offsetMs = 0;
    }
  });

  it('only the lab owner sees or sets it', async () => {
    const member = await c.signup('member@lab.test');
    const r = await c.call('PATCH', '/lab/settings', { token: member.token, body: { testResultFiles: { keepDays: 1 } } });
    expect(r.status).toBe(403);
    expect((await settings()).keepDays).toBe(7);
  });
});
