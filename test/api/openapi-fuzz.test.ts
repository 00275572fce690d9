import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServe } from '../../scripts/build-serve.mjs';
import { startAdbServer, type AdbServer } from '../../src/sim/android/adb-cli.js';
import { newAdbPublicKey } from '../support/adb-keys.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { broken, brokenParameter, operationsOf, sample, seeded, type Broken, type Operation, type Rng } from '../support/openapi-cases.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

/*
 * Schemathesis's checks over the whole OpenAPI document, against the bundle `npm run serve` runs: for every operation,
 * requests whose every part satisfies the document and requests broken in exactly one place, and for each answer
 * - no 5xx (not_a_server_error);
 * - a status the operation declares (status_code_conformance);
 * - a 4xx with DESIGN.md's error body;
 * - a 2xx JSON body that validates against the declared response (response_schema_conformance);
 * - a broken request refused with a 4xx, never taken (negative_data_rejection);
 * - no credentials: 401 wherever the operation needs them (ignored_auth).
 * Schemathesis itself is on PyPI, which this machine cannot reach; these are its checks, over TypeBox's schemas.
 */

const hasAdb = adbOrSkip();
const SEED = Number(process.env.BENCHTOP_FUZZ_SEED) || 20261129;
/** Requests that satisfy the document, per operation; broken ones, at most, per operation. */
const VALID_PER_OPERATION = 6;
const BROKEN_PER_OPERATION = 14;

/**
 * Operations whose valid requests would act outside this test: a Mac host or provider is an SSH connection to the host
 * it names (never a generated one), LAN sharing binds a port other tests use, and the caller's own account ends the run.
 * Their broken requests still run: they are refused before anything connects.
 */
const NO_VALID = new Set([
  'post /api/v1/lab/hosts', 'patch /api/v1/lab/hosts/{hostId}', 'post /api/v1/lab/providers', 'patch /api/v1/lab/providers/{providerId}',
  'post /api/v1/lab/providers/host-key', 'patch /api/v1/lab/settings', 'delete /api/v1/me',
]);

const needsCredentials = (op: Operation) => Array.isArray(op.spec.security) && op.spec.security.length > 0;

describe.skipIf(!hasAdb)('the OpenAPI document, fuzzed as Schemathesis does (against the bundle)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'benchtop-fuzz-'));
  let adb: AdbServer | undefined;
  let serve: ServeProcess | undefined;
  let api = '';
  let token = '';
  const ids: Record<string, string> = {};
  const ajv = new Ajv({ strict: false, allErrors: false });
  addFormats(ajv);
  ajv.addFormat('binary', true);

  const owner = (method: string, path: string, body?: unknown) => call(api, method, path, { token, body });
  async function created(method: string, path: string, body: unknown): Promise<any> {
    const r = await owner(method, path, body);
    if (r.status !== 201 && r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  beforeAll(async () => {
    await buildServe();
    adb = await startAdbServer();
    serve = await startServeProcess({
      ...(adb.env as Record<string, string>),
      BENCHTOP_DATA_DIR: dataDir,
      BENCHTOP_OWNER_EMAIL: 'owner@fuzz.test',
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
      BENCHTOP_DEMO_PHONES: '1',
    });
    api = serve.api;
    const password = /password, shown only this once: (\S+)/.exec(serve.output())![1];
    token = (await call(api, 'POST', '/auth/login', { body: { email: 'owner@fuzz.test', password } })).body.token;
    ids.userId = (await owner('GET', '/me')).body.id;
    ids.organization = (await created('POST', '/organizations', { name: 'Fuzzed org' })).id;
    ids.invitationId = (await created('POST', `/organizations/${ids.organization}/invitations`, { email: 'guest@fuzz.test', role: 'readonly' })).id;
    ids.key = (await created('POST', '/keys', { name: 'fuzz' })).id;
    ids.adbKey = (await created('POST', '/adb-keys', { publicKey: newAdbPublicKey() })).id;
    ids.testResultId = (await created('POST', '/test-results', { name: 'fuzz' })).id;
    ids.sessionId = (await created('POST', '/sessions', {})).id;
    ids.chatId = (await created('POST', `/sessions/${ids.sessionId}/chats`, {})).id;
    await waitFor('the demo phone', async () => (await owner('GET', '/fleet/devices')).body.data.some((p: { state: string }) => p.state === 'device'), 20_000);
    const allocation = (await created('POST', `/sessions/${ids.sessionId}/devices`, { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] })).id;
    ids.deviceId = await waitFor('the phone in use', async () => {
      const row = (await owner('GET', `/sessions/${ids.sessionId}/devices/${allocation}`)).body;
      return row.status === 'in_use' && (row.info.serial as string);
    }, 20_000);
  }, 120_000);

  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await serve?.exited;
    await adb?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** A path parameter: an id that exists (except for a delete, which would take it from the other operations) or one that does not. */
  function pathValue(op: Operation, name: string, rng: Rng): string {
    if (op.method !== 'delete' && rng.chance(0.6)) {
      if (name === 'id') {
        const collection = /\/api\/v1\/([^/]+)\/\{id\}/.exec(op.path)?.[1];
        const byCollection: Record<string, string | undefined> = { organizations: ids.organization, keys: ids.key, 'adb-keys': ids.adbKey };
        if (byCollection[collection ?? '']) return byCollection[collection ?? '']!;
      } else if (ids[name]) {
        return ids[name]!;
      }
    }
    return randomUUID();
  }

  interface Request {
    what: string;
    path: string;
    query: URLSearchParams;
    body?: unknown;
    credentials: boolean;
    broken: boolean;
  }

  function validRequest(op: Operation, rng: Rng, what = 'valid'): Request {
    const query = new URLSearchParams();
    let path = op.path;
    for (const p of op.spec.parameters ?? []) {
      if (p.in === 'path') path = path.replace(`{${p.name}}`, encodeURIComponent(pathValue(op, p.name, rng)));
      // The credentials travel in the header: a generated token= or org= would only name someone else.
      else if (p.in === 'query' && !['token', 'org', 'signature', 'nonce', 'expires'].includes(p.name) && (p.required || rng.chance(0.5))) {
        query.set(p.name, String(sample(p.schema, rng)));
      }
    }
    const json = op.spec.requestBody?.content?.['application/json'];
    return { what, path, query, ...(json ? { body: sample(json.schema, rng) } : {}), credentials: true, broken: false };
  }

  function brokenRequests(op: Operation, rng: Rng): Request[] {
    const out: Request[] = [];
    const json = op.spec.requestBody?.content?.['application/json'];
    if (json) {
      for (const b of broken(json.schema, rng)) out.push({ ...validRequest(op, rng), what: b.what, body: b.value, broken: true });
      if (op.spec.requestBody.required) out.push({ ...validRequest(op, rng), what: 'body: not JSON', body: '{"unclosed', broken: true });
    }
    for (const p of op.spec.parameters ?? []) {
      if (p.in !== 'query' && p.in !== 'path') continue;
      for (const b of brokenParameter(p.schema) as Broken[]) {
        const request = validRequest(op, rng, `${p.in} ${p.name}: ${b.what}`);
        if (p.in === 'query') request.query.set(p.name, String(b.value));
        else request.path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => (name === p.name ? encodeURIComponent(String(b.value)) : pathValue(op, name, rng)));
        out.push({ ...request, broken: true });
      }
    }
    // As many as the budget allows, chosen by the seed, so that every kind gets its turn across seeds.
    while (out.length > BROKEN_PER_OPERATION) out.splice(rng.int(0, out.length - 1), 1);
    return out;
  }

  async function send(op: Operation, request: Request): Promise<{ status: number; type: string; text: string }> {
    const url = `${new URL(api).origin}${request.path}${request.query.size ? `?${request.query}` : ''}`;
    const headers: Record<string, string> = request.credentials ? { authorization: `Bearer ${token}` } : {};
    let body: string | undefined;
    if (request.body !== undefined) {
      headers['content-type'] = 'application/json';
      body = typeof request.body === 'string' && request.broken && request.what === 'body: not JSON' ? request.body : JSON.stringify(request.body);
    }
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 15_000);
    try {
      const res = await fetch(url, { method: op.method.toUpperCase(), headers, body, signal: abort.signal });
      const type = res.headers.get('content-type') ?? '';
      // An event stream runs until the client goes: its status and type are the answer.
      if (type.startsWith('text/event-stream')) {
        abort.abort();
        await res.body?.cancel().catch(() => undefined);
        return { status: res.status, type, text: '' };
      }
      return { status: res.status, type, text: await res.text() };
    } finally {
      clearTimeout(timer);
    }
  }

  /** What is wrong with one answer, or undefined. */
  function judge(op: Operation, request: Request, answer: { status: number; type: string; text: string }): string | undefined {
    const where = `${op.key} [${request.what}]`;
    if (answer.status >= 500) return `${where}: a server error ${answer.status} ${answer.text.slice(0, 300)}`;
    if (!op.declared.includes(answer.status)) return `${where}: ${answer.status}, the document declares ${op.declared.join(', ')} (${answer.text.slice(0, 200)})`;
    if (request.broken && answer.status < 400) return `${where}: a broken request was taken (${answer.status})`;
    if (!request.credentials && needsCredentials(op) && answer.status !== 401) return `${where}: ${answer.status} without credentials, not 401`;
    if (answer.status >= 400) {
      let error: { code?: unknown; message?: unknown } | undefined;
      try {
        error = JSON.parse(answer.text).error;
      } catch {
        error = undefined;
      }
      if (typeof error?.code !== 'string' || !/^[a-z0-9_]+$/.test(error.code) || typeof error.message !== 'string') {
        return `${where}: ${answer.status} without the error body: ${answer.text.slice(0, 200)}`;
      }
      return undefined;
    }
    const schema = op.spec.responses?.[answer.status]?.content?.['application/json']?.schema;
    if (schema && answer.type.startsWith('application/json')) {
      const validate = ajv.compile(schema);
      if (!validate(JSON.parse(answer.text))) return `${where}: the ${answer.status} body breaks its schema: ${ajv.errorsText(validate.errors)}`;
    }
    return undefined;
  }

  it('answers every generated request to every operation as the document says, and refuses every broken one with a 4xx', async () => {
    const document = (await call(api, 'GET', '/openapi.json')).body;
    const operations = operationsOf(document);
    // Deletes and ends last, as a run of Schemathesis's stateful phase would leave them, so the others keep their ids.
    const rank = (op: Operation) => (op.method === 'delete' ? 2 : /\/(end|release|reboot)$/.test(op.path) ? 1 : 0);
    operations.sort((a, b) => rank(a) - rank(b));
    const rng = seeded(SEED);
    const wrong: string[] = [];
    let sent = 0;
    const statuses = new Map<number, number>();
    for (const op of operations) {
      const requests: Request[] = [
        ...(NO_VALID.has(op.key) ? [] : Array.from({ length: VALID_PER_OPERATION }, () => validRequest(op, rng))),
        ...brokenRequests(op, rng),
        { ...validRequest(op, rng, 'no credentials'), credentials: false },
      ];
      for (const request of requests) {
        if (NO_VALID.has(op.key) && !request.broken && request.credentials) continue;
        sent++;
        const answer = await send(op, request);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        const problem = judge(op, request, answer);
        if (problem) wrong.push(problem);
      }
    }
    const histogram = [...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${n}x ${s}`).join(', ');
    console.log(`fuzz (seed ${SEED}): ${sent} requests over ${operations.length} operations (${histogram}), ${wrong.length} wrong`);
    expect(wrong).toEqual([]);
    expect(sent).toBeGreaterThan(operations.length * 5);
    // The valid requests reached the handlers: most operations answered a success at least once.
    expect([...statuses].filter(([s]) => s < 300).reduce((n, [, c]) => n + c, 0)).toBeGreaterThan(operations.length);
  }, 240_000);
});
