import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../support/app-fixtures.js';
import { newAdbPublicKey } from '../support/adb-keys.js';
import { client, parsedBody, type Reply } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { operationsOf, sample, seeded, type Operation } from '../support/openapi-cases.js';
import { upgradeAnswer } from '../support/ws.js';

/*
 * The isolation matrix over every operation of the OpenAPI document, so that a route added in any round is in it the day
 * it is added. Organization A holds one of everything (a session with a phone in use and open for remote connect, a test
 * result with an asset, a stored file and app, a chat with a message, a reservation, a key, an invitation). For each
 * operation with a path, B's callers (a token naming B, a key of B, and the same for a member of both) send it with A's ids, and again with ids that exist
 * nowhere: the two answers must be the same status and the same body, and a refusal. Every list B reads must not carry any
 * of A's ids. Afterwards A's things are all still there, unchanged.
 */

const hasAdb = adbOrSkip();

/** Operations that are the lab owner's alone (B's admin is no lab owner): refused to B whatever the id, checked alike. */
const LAB_OWNER_PATH = /^\/api\/v1\/lab\//;

describe.skipIf(!hasAdb)('isolation matrix: every operation of the document, with org A\'s ids, from org B', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  const a: Record<string, string> = {};
  const b: Record<string, string> = {};
  const callers: Record<string, { bearer: string; org?: string }> = {};
  let aliceToken = '';
  let aSerial = '';

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 8', osVersion: '14' }, { model: 'Pixel 7', osVersion: '13' }], { remotePortRestSeconds: 1 });
    c = client(lab.engine.api);
    const alice = await c.signup('alice@alpha.test');
    const bob = await c.signup('bob@bravo.test');
    aliceToken = alice.token;
    a.userId = alice.user.id;
    a.organization = await c.createOrganization(alice.token, 'Alpha');
    b.organization = await c.createOrganization(bob.token, 'Bravo');
    callers['B token'] = { bearer: bob.token, org: b.organization };
    callers['B key'] = { bearer: await c.createKey(bob.token, b.organization, 'bravo') };
    // A member of both, acting in B: being in A too must not let B's scope reach A's things.
    const dave = await c.signup('dave@both.test');
    await c.addMember(alice.token, a.organization, dave.token, 'dave@both.test', 'readwrite');
    await c.addMember(bob.token, b.organization, dave.token, 'dave@both.test', 'readwrite');
    callers['A+B member token in B'] = { bearer: dave.token, org: b.organization };
    callers['A+B member key of B'] = { bearer: await c.createKey(dave.token, b.organization, 'dave in bravo') };
    const asA = async (method: string, path: string, body?: unknown): Promise<any> => {
      const r = await c.call(method, path, { token: alice.token, org: a.organization, body });
      if (r.status >= 300) throw new Error(`A ${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body;
    };
    a.key = (await asA('POST', '/keys', { name: 'alpha' })).id;
    a.adbKey = (await asA('POST', '/adb-keys', { publicKey: newAdbPublicKey() })).id;
    a.invitationId = (await asA('POST', `/organizations/${a.organization}/invitations`, { email: 'carol@alpha.test', role: 'readonly' })).id;
    const hour = 3_600_000;
    a.reservation = (await asA('POST', '/reservations', {
      filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }],
      startsAt: new Date(Date.now() + 24 * hour).toISOString(),
      endsAt: new Date(Date.now() + 25 * hour).toISOString(),
    })).id;
    a.testResultId = (await asA('POST', '/test-results', { name: 'alpha run' })).id;
    const form = new FormData();
    form.append('name', 'trace.txt');
    form.append('file', new Blob(['a trace of A']), 'trace.txt');
    const asset = await fetch(`${lab.engine.api}/test-results/${a.testResultId}/assets`, { method: 'POST', headers: { authorization: `Bearer ${alice.token}`, 'x-organization-id': a.organization }, body: form });
    a.assetId = ((await asset.json()) as { id: string }).id;
    // A stored APK is both a file and an app of A's.
    const apk = buildApk({ packageName: 'com.alpha.secret', label: 'Alpha', versionName: '1.0', versionCode: 1 });
    const upload = new FormData();
    upload.append('file', new Blob([new Uint8Array(apk)]), 'alpha.apk');
    const up = await fetch(`${lab.engine.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${alice.token}`, 'x-organization-id': a.organization }, body: upload });
    a.fileId = ((await up.json()) as { id: string }).id;
    await waitFor('A\'s app stored', async () => (await asA('GET', `/files/${a.fileId}`)).status === 'ready');
    a.appId = (await asA('GET', '/apps')).data[0]?.id ?? randomUUID();
    a.sessionId = (await asA('POST', '/sessions', {})).id;
    await waitFor('both phones in the fleet', async () => (await asA('GET', '/fleet/devices')).data.filter((p: { state: string }) => p.state === 'device').length === 2, 30_000);
    const allocation = (await asA('POST', `/sessions/${a.sessionId}/devices`, { filters: [{ attribute: 'name', operator: 'EQUALS', value: 'Pixel 8' }, { attribute: 'platform', operator: 'EQUALS', value: 'android' }] })).id;
    aSerial = await waitFor('A\'s phone in use', async () => {
      const row = await asA('GET', `/sessions/${a.sessionId}/devices/${allocation}`);
      return row.status === 'in_use' && (row.info.serial as string);
    }, 30_000);
    a.deviceId = aSerial;
    a.allocation = allocation;
    await asA('POST', `/sessions/${a.sessionId}/devices/${aSerial}/remote-connect`, { publicKey: newAdbPublicKey() });
    a.chatId = (await asA('POST', `/sessions/${a.sessionId}/chats`, {})).id;
    const message = await asA('POST', `/sessions/${a.sessionId}/chats/${a.chatId}/messages`, { text: 'screenshot', mode: 'sync' });
    a.messageId = message.id;
    a.toolCallId = message.toolCalls?.[0]?.id ?? randomUUID();
  }, 120_000);

  afterAll(async () => {
    await lab?.stop();
  });

  /** The path with A's id for each parameter, or with ids that exist nowhere. */
  function pathFor(op: Operation, whose: 'A' | 'nowhere'): string {
    return op.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      if (whose === 'nowhere') return name === 'deviceId' ? `nowhere-${randomBytes(4).toString('hex')}` : randomUUID();
      if (name === 'id') {
        const collection = /\/api\/v1\/([^/]+)\/\{id\}/.exec(op.path)![1]!;
        return ({ organizations: a.organization, keys: a.key, 'adb-keys': a.adbKey, reservations: a.reservation } as Record<string, string>)[collection] ?? randomUUID();
      }
      return a[name] ?? randomUUID();
    });
  }

  async function send(op: Operation, path: string, caller: { bearer: string; org?: string }, body: unknown): Promise<Reply> {
    const url = `${new URL(lab.engine.api).origin}${path}`;
    const headers: Record<string, string> = { authorization: `Bearer ${caller.bearer}`, ...(caller.org ? { 'x-organization-id': caller.org } : {}) };
    if (op.declared.includes(101)) return { ...(await upgradeAnswer(url.replace(/^http/, 'ws'), { headers })), headers: new Headers() };
    const abort = new AbortController();
    let payload: BodyInit | undefined;
    const content = op.spec.requestBody?.content ?? {};
    if (content['application/json']) {
      headers['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    } else if (content['application/octet-stream']) {
      headers['content-type'] = 'application/octet-stream';
      payload = 'bytes from B';
    } else if (content['multipart/form-data']) {
      const form = new FormData();
      form.append('name', 'b.txt');
      form.append('file', new Blob(['from B']), 'b.txt');
      payload = form;
    }
    const query = op.path.endsWith('/files') || op.path.endsWith('/files/content') ? '?path=/sdcard/Download/a.txt' : '';
    const res = await fetch(url + query, { method: op.method.toUpperCase(), headers, body: payload, signal: abort.signal });
    if ((res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      abort.abort();
      return { status: res.status, body: 'an event stream', headers: res.headers };
    }
    return { status: res.status, body: parsedBody(await res.text()), headers: res.headers };
  }

  it('answers B, for every operation with a path, the same refusal for A\'s ids as for ids that exist nowhere; B\'s lists carry none of A\'s ids; A\'s things are untouched', async () => {
    const document = (await c.call('GET', '/openapi.json')).body;
    const operations = operationsOf(document);
    const rng = seeded(41);
    const leaks: string[] = [];
    const aIds = [...['sessionId', 'allocation', 'testResultId', 'assetId', 'fileId', 'appId', 'chatId', 'messageId', 'reservation', 'key', 'adbKey', 'invitationId', 'organization', 'userId'].map((name) => a[name]!), 'alice@alpha.test', 'carol@alpha.test', 'com.alpha.secret'];
    let compared = 0;
    for (const op of operations) {
      const withPath = op.path.includes('{');
      for (const [who, caller] of Object.entries(callers)) {
        // A member of both who names A in the path (or lists their organizations) acts in A, as they may: that is
        // test/api/isolation.test.ts's "a key of B whose creator is also a member of A".
        if (who.startsWith('A+B') && op.path.startsWith('/api/v1/organizations')) continue;
        const body = sample(op.spec.requestBody?.content?.['application/json']?.schema, rng);
        if (!withPath) {
          if (op.method !== 'get' || op.declared.includes(101)) continue;
          const list = await send(op, op.path, caller, undefined);
          const text = JSON.stringify(list.body);
          for (const id of aIds) if (text.includes(id)) leaks.push(`${op.key} (${who}) shows A's ${id}`);
          continue;
        }
        if (op.path.includes('{secret}')) continue; // named by a secret, not an id: covered where the secret is made
        const theirs = await send(op, pathFor(op, 'A'), caller, body);
        const nowhere = await send(op, pathFor(op, 'nowhere'), caller, body);
        compared++;
        if (theirs.status < 400 && !LAB_OWNER_PATH.test(op.path)) leaks.push(`${op.key} (${who}): ${theirs.status} with A's ids ${JSON.stringify(theirs.body).slice(0, 200)}`);
        if (theirs.status !== nowhere.status || JSON.stringify(theirs.body) !== JSON.stringify(nowhere.body)) {
          leaks.push(`${op.key} (${who}): A's ids answer ${theirs.status} ${JSON.stringify(theirs.body).slice(0, 160)}, ids of nothing ${nowhere.status} ${JSON.stringify(nowhere.body).slice(0, 160)}`);
        }
      }
    }
    console.log(`isolation matrix: ${compared} operations x callers compared, over ${operations.length} operations`);
    expect(leaks).toEqual([]);
    expect(compared).toBeGreaterThan(100);

    // A's things are all still there, unchanged, and A's phone is still A's.
    const asA = (path: string) => c.call('GET', path, { token: aliceToken, org: a.organization });
    expect((await asA(`/sessions/${a.sessionId}/devices/${a.allocation}`)).body).toMatchObject({ status: 'in_use', info: { serial: aSerial } });
    expect((await asA(`/sessions/${a.sessionId}/devices/${aSerial}/remote-connect`)).status).toBe(200);
    expect((await asA(`/test-results/${a.testResultId}`)).body).toMatchObject({ name: 'alpha run' });
    expect((await asA(`/test-results/${a.testResultId}/assets`)).body.data).toHaveLength(1);
    expect((await asA(`/files/${a.fileId}`)).status).toBe(200);
    expect((await asA('/keys')).body.data.map((k: { id: string }) => k.id)).toContain(a.key);
    expect((await asA('/adb-keys')).body.data.map((k: { id: string }) => k.id)).toContain(a.adbKey);
    expect((await asA(`/organizations/${a.organization}/invitations`)).body.data.map((i: { id: string }) => i.id)).toContain(a.invitationId);
    expect((await asA('/reservations')).body.data.map((r: { id: string }) => r.id)).toContain(a.reservation);
    expect((await asA(`/sessions/${a.sessionId}/chats/${a.chatId}/messages`)).body.data.length).toBeGreaterThan(0);
    expect((await asA('/organizations')).body.data.find((o: { id: string }) => o.id === a.organization)).toMatchObject({ name: 'Alpha' });
  }, 180_000);
});
