import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildServe, bundle, metafile } from '../../scripts/build-serve.mjs';
import { hasCodeCache } from '../../scripts/code-cache.mjs';
import { startAdbServer, type AdbServer } from '../../src/sim/android/adb-cli.js';
import { newAdbPublicKey } from '../support/adb-keys.js';
import { buildApk, buildIpa, sha256 } from '../support/app-fixtures.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { startScriptedModel, type ScriptedModel } from '../support/scripted-model.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';
import { upgradeAnswer } from '../support/ws.js';

/**
 * What users run is the esbuild bundle `npm run serve` builds (out/serve), not the sources the rest of the suite runs:
 * a package esbuild puts in a chunk of its own can look different there (prom-client's chunk had a default export and
 * no named ones, so /metrics answered 500 on every call of a served lab while every test passed). Here the bundle is
 * built as `npm run serve` builds it (and shared with it while fresh), checked for that interop, and run as a child
 * process that answers every operation of its own OpenAPI document.
 */

const ROOT = join(import.meta.dirname, '../..');
const hasAdb = adbOrSkip();

/** esbuild's metafile: which inputs each input imports, and each input's module format. */
interface Metafile {
  inputs: Record<string, { format?: 'cjs' | 'esm'; imports: Array<{ path: string; kind: string; external?: boolean; original?: string }> }>;
}

/** One dynamic import in the bundled sources, and the names the code takes from what it resolves to. */
interface DynamicImport {
  where: string;
  specifier: string;
  /** null: the namespace is passed on whole (the names are not traced here). */
  names: string[] | null;
}

const bindingNames = (pattern: ts.BindingName): string[] | null =>
  ts.isObjectBindingPattern(pattern) ? pattern.elements.map((e) => (e.propertyName ?? e.name).getText()) : null;

/** Follows the import's value to where its names are taken: `const { a } = await import(x)`, `(await import(x)).a`, `import(x).then(({ a }) => ...)`, `const [{ a }] = await Promise.all([import(x)])`. */
function namesTaken(node: ts.CallExpression): string[] | null {
  const parent = node.parent;
  if (ts.isPropertyAccessExpression(parent) && parent.name.text === 'then' && ts.isCallExpression(parent.parent)) {
    const handler = parent.parent.arguments[0];
    return handler && (ts.isArrowFunction(handler) || ts.isFunctionExpression(handler)) && handler.parameters[0] ? bindingNames(handler.parameters[0].name) : null;
  }
  if (ts.isArrayLiteralExpression(parent)) {
    const all = parent.parent;
    const awaited = all.parent;
    if (ts.isCallExpression(all) && all.expression.getText() === 'Promise.all' && ts.isAwaitExpression(awaited) && ts.isVariableDeclaration(awaited.parent)) {
      const target = awaited.parent.name;
      const element = ts.isArrayBindingPattern(target) ? target.elements[parent.elements.indexOf(node)] : undefined;
      return element && ts.isBindingElement(element) ? bindingNames(element.name) : null;
    }
    return null;
  }
  if (!ts.isAwaitExpression(parent)) return null;
  let outer: ts.Node = parent.parent;
  while (ts.isParenthesizedExpression(outer)) outer = outer.parent;
  if (ts.isVariableDeclaration(outer)) return bindingNames(outer.name);
  if (ts.isPropertyAccessExpression(outer)) return [outer.name.text];
  return null;
}

function dynamicImportsOf(file: string): DynamicImport[] {
  const source = ts.createSourceFile(file, readFileSync(join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
  const found: DynamicImport[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] && ts.isStringLiteral(node.arguments[0])) {
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      found.push({ where: `${file}:${line}`, specifier: node.arguments[0].text, names: namesTaken(node) });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

// ---- Requests built from the OpenAPI document --------------------------------------------------------------------

type Schema = Record<string, any>;

/** A minimal value the schema accepts: required properties only, the first of any choice, the smallest size. */
function sample(schema: Schema | undefined): unknown {
  if (!schema) return {};
  if (schema.const !== undefined) return schema.const;
  if (schema.enum) return schema.enum[0];
  const choice = schema.anyOf ?? schema.oneOf;
  if (choice) return sample(choice.find((s: Schema) => s.type !== 'null') ?? choice[0]);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'object':
      return Object.fromEntries((schema.required ?? []).map((key: string) => [key, sample(schema.properties?.[key])]));
    case 'array':
      return Array.from({ length: schema.minItems ?? 0 }, () => sample(schema.items));
    case 'integer':
    case 'number':
      return schema.minimum ?? 0;
    case 'boolean':
      return false;
    case 'string':
      if (schema.format === 'uuid') return randomUUID();
      if (schema.format === 'email') return `someone-${randomBytes(3).toString('hex')}@lab.test`;
      if (schema.format === 'date-time') return new Date(Date.now() + 3_600_000).toISOString();
      if (schema.pattern === '^[0-9a-fA-F]{64}$') return '0'.repeat(64);
      if (schema.pattern?.startsWith('^https?://')) return 'http://127.0.0.1:9/';
      return 'a'.repeat(Math.max(schema.minLength ?? 1, 1));
    default:
      return {};
  }
}

interface Operation {
  method: string;
  path: string;
  spec: Schema;
  /** The statuses the document declares. */
  declared: string[];
}

/** Operations that end what the others use (a release, a reboot, a delete) run after them, the caller's own account last. */
function rank(op: Operation): number {
  if (op.method === 'delete' && op.path === '/api/v1/me') return 4;
  if (op.method === 'delete') return 3;
  if (/\/(end|release|reboot|cancel|complete)$/.test(op.path)) return 2;
  return 1;
}

const upgradeOf = (op: Operation) => op.declared.includes('101');
const streamsEvents = (op: Operation) =>
  op.method === 'get' && Object.values<Schema>(op.spec.responses ?? {}).some((r) => r.content?.['text/event-stream']);

describe.skipIf(!hasAdb)('the bundle `npm run serve` runs (out/serve)', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'benchtop-bundle-'));
  let adb: AdbServer | undefined;
  let serve: ServeProcess | undefined;
  let model: ScriptedModel | undefined;
  let api = '';
  let token = '';
  const ids: Record<string, string> = {};
  const apk = new Uint8Array(buildApk({ packageName: 'com.benchtop.bundle', label: 'Bundle', versionName: '2.0', versionCode: 20 }));
  const fileBytes = new TextEncoder().encode('bytes the resumable upload sends\n');
  let uploadQuery = new URLSearchParams();

  const owner = (method: string, path: string, options: Parameters<typeof call>[3] = {}) => call(api, method, path, { token, ...options });
  async function created(method: string, path: string, body: unknown): Promise<any> {
    const r = await owner(method, path, { body });
    if (r.status !== 201 && r.status !== 200) throw new Error(`${method} ${path}: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }
  const upload = (path: string, form: FormData) => fetch(api + path, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });

  beforeAll(async () => {
    // The build npm run serve would make (nothing, when the last one is newer than every source): out of the
    // serve process's start timeout.
    await buildServe();
    adb = await startAdbServer();
    model = await startScriptedModel('openai', () => ({ text: ['Done.'] }));
    serve = await startServeProcess({
      ...(adb.env as Record<string, string>),
      BENCHTOP_DATA_DIR: dataDir,
      BENCHTOP_OWNER_EMAIL: 'owner@bundle.test',
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
      BENCHTOP_LAN_PORT: '0',
      BENCHTOP_DEMO_PHONES: '1',
      BENCHTOP_DEMO_IPHONES: '1',
    });
    api = serve.api;
    // The first start prints the owner's password once: signed in with it, as a newcomer does.
    const password = /password, shown only this once: (\S+)/.exec(serve.output())![1];
    token = (await call(api, 'POST', '/auth/login', { body: { email: 'owner@bundle.test', password } })).body.token;
    expect(token).toBeTruthy();

    ids.userId = (await owner('GET', '/me')).body.id;
    ids.organization = (await created('POST', '/organizations', { name: 'Bundle org' })).id;
    ids.invitationId = (await created('POST', `/organizations/${ids.organization}/invitations`, { email: 'guest@bundle.test', role: 'readonly' })).id;
    ids.key = (await created('POST', '/keys', { name: 'bundle' })).id;
    ids.adbKey = (await created('POST', '/adb-keys', { publicKey: newAdbPublicKey() })).id;
    // A reservation needs a phone in the lab that matches it: the demo phone attaches a moment after the start.
    await waitFor('the demo phone', async () => (await owner('GET', '/fleet/devices')).body.data.some((p: { state: string }) => p.state === 'device'), 20_000);
    // The phone a note is written on (PATCH /fleet/devices/{serial}).
    ids.serial = (await owner('GET', '/fleet/devices')).body.data.find((p: { state: string; platform: string }) => p.state === 'device' && p.platform === 'android').serial;
    const hour = 3_600_000;
    ids.reservation = (await created('POST', '/reservations', {
      filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }],
      startsAt: new Date(Date.now() + 24 * hour).toISOString(),
      endsAt: new Date(Date.now() + 25 * hour).toISOString(),
    })).id;
    ids.testResultId = (await created('POST', '/test-results', { name: 'bundle' })).id;
    const asset = new FormData();
    asset.append('name', 'trace.txt');
    asset.append('file', new Blob(['a trace']), 'trace.txt');
    ids.assetId = ((await (await upload(`/test-results/${ids.testResultId}/assets`, asset)).json()) as { id: string }).id;
    // Its content is sent by the operation under test (PUT /files/{fileId}/content), to its signed URL.
    const file = await created('POST', '/files', { filename: 'notes.txt', filesize: fileBytes.length, sha256: sha256(Buffer.from(fileBytes)) });
    ids.fileId = file.id;
    uploadQuery = new URL(file.upload.url).searchParams;

    const session = await created('POST', '/sessions', {});
    ids.sessionId = session.id;
    const allocation = (await created('POST', `/sessions/${ids.sessionId}/devices`, { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] })).id;
    const inUse = await waitFor('the phone in use', async () => {
      const row = (await owner('GET', `/sessions/${ids.sessionId}/devices/${allocation}`)).body;
      return row.status === 'in_use' && row;
    }, 20_000);
    // A phone is driven by its serial (the allocation's info.serial), as the API's own examples do.
    ids.deviceId = inUse.info.serial;
  }, 120_000);

  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await serve?.exited;
    await adb?.stop();
    await model?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('gives every dynamic import in its sources the names the code takes (a CommonJS package gives only what it puts on its exports)', async () => {
    const meta = JSON.parse(readFileSync(metafile, 'utf8')) as Metafile;
    const imports = Object.entries(meta.inputs)
      .filter(([input, { imports }]) => input.startsWith('src/') && imports.some((i) => i.kind === 'dynamic-import'))
      .map(([input]) => input)
      .flatMap((input) => dynamicImportsOf(input).map((found) => ({ ...found, target: meta.inputs[input]!.imports.find((i) => i.kind === 'dynamic-import' && (i.original ?? i.path) === found.specifier) })));
    // In the bundle, import() of a package is esbuild's __toESM(require(...)): its default is module.exports, and its
    // names are module.exports's own properties; an ES module bundled from a package keeps its exports. What each
    // package gives is listed by a Node of its own, from where the bundle is (a package left out of the bundle is
    // Node's to load from there), from the very file esbuild bundled (one it bundled).
    const packageOf = (i: (typeof imports)[number]) => (i.target!.external ? i.specifier : join(ROOT, i.target!.path));
    const formats: Record<string, 'cjs' | 'esm'> = {};
    for (const i of imports) {
      if (i.target && !i.target.path.startsWith('src/')) formats[packageOf(i)] = i.target.external ? 'cjs' : meta.inputs[i.target.path]?.format ?? 'cjs';
    }
    const listed = spawnSync(process.execPath, ['--input-type=module', '-e', `
      import { createRequire } from 'node:module';
      const require = createRequire(${JSON.stringify(join(dirname(bundle), 'here.cjs'))});
      const out = {};
      for (const [name, format] of Object.entries(${JSON.stringify(formats)})) {
        out[name] = format === 'esm' ? Object.keys(await import(name)) : ['default', ...Object.getOwnPropertyNames(require(name))];
      }
      console.log(JSON.stringify(out));`], { cwd: dirname(bundle), encoding: 'utf8' });
    expect(listed.stderr).toBe('');
    const packageExports = JSON.parse(listed.stdout) as Record<string, string[]>;

    const problems: string[] = [];
    let checked = 0;
    for (const i of imports) {
      if (!i.target) {
        problems.push(`${i.where}: import('${i.specifier}') is not in the bundle's metafile`);
        continue;
      }
      // A module of ours is an ES module, which the bundle initializes whole at its import: TypeScript checks its names.
      if (i.target.path.startsWith('src/')) continue;
      if (i.names === null) {
        problems.push(`${i.where}: which names the code takes from import('${i.specifier}') is not traced here`);
        continue;
      }
      checked++;
      const exports = packageExports[packageOf(i)]!;
      const missing = i.names.filter((name) => !exports.includes(name));
      if (missing.length) problems.push(`${i.where}: import('${i.specifier}') in the bundle has no ${missing.join(', ')} (it exports ${exports.join(', ') || 'nothing'})`);
    }
    console.log(`bundle: ${imports.length} dynamic imports in its sources, ${checked} with the names they take checked against the bundle`);
    expect(problems).toEqual([]);
    expect(imports.some((i) => i.specifier === 'prom-client')).toBe(true);
  });

  /** An uploaded file once the engine has read it (the upload answers while it is still processing). */
  const read = (id: string) =>
    waitFor(`file ${id} read`, async () => {
      const file = (await owner('GET', `/files/${id}`)).body;
      return file.status === 'processing' ? undefined : file;
    });

  it('reads an uploaded APK and IPA (yauzl, adbkit-apkreader, bplist-parser, plist), makes LAN sharing\'s certificate (selfsigned) and asks a model (undici)', async () => {
    const apkForm = new FormData();
    apkForm.append('file', new Blob([apk]), 'bundle.apk');
    const apkFile = await read(((await (await upload('/files/upload', apkForm)).json()) as { id: string }).id);
    expect(apkFile).toMatchObject({ status: 'ready', platform: 'android', bundleId: 'com.benchtop.bundle' });
    ids.apkFileId = apkFile.id;
    ids.appId = apkFile.appId;
    const ipaForm = new FormData();
    ipaForm.append('file', new Blob([new Uint8Array(buildIpa({ bundleId: 'com.benchtop.ipa', shortVersion: '1.2', binary: true }))]), 'bundle.ipa');
    const ipaFile = await read(((await (await upload('/files/upload', ipaForm)).json()) as { id: string }).id);
    expect(ipaFile).toMatchObject({ status: 'ready', platform: 'ios', bundleId: 'com.benchtop.ipa' });

    // With a retention of test results' files, whose save sweeps at once, and the disk's free space read (statfs).
    const lan = await owner('PATCH', '/lab/settings', { body: { lanSharing: true, testResultFiles: { keepDays: 30 } } });
    expect(lan.status).toBe(200);
    expect(lan.body.lanSharing).toMatchObject({ enabled: true, certificateSha256: expect.stringMatching(/^[0-9A-F:]+$/) });
    expect(lan.body.testResultFiles).toEqual({ keepDays: 30, storedBytes: expect.any(Number), diskFreeBytes: expect.any(Number) });
    expect(lan.body.testResultFiles.diskFreeBytes).toBeGreaterThan(0);

    expect((await owner('PUT', '/lab/assistant', { body: { provider: 'openai', endpoint: model!.endpoint, model: 'scripted' } })).status).toBe(200);
    ids.chatId = (await created('POST', `/sessions/${ids.sessionId}/chats`, { title: 'bundle' })).id;
    const message = await owner('POST', `/sessions/${ids.sessionId}/chats/${ids.chatId}/messages`, { body: { text: 'hello', mode: 'sync' } });
    expect(message.status).toBe(201);
    expect(model!.requests).toHaveLength(1);
    ids.messageId = message.body.id;
  }, 60_000);

  it('drives a demo iPhone (appium-ios-device required from out/serve, WebDriverAgent through undici\'s Pool) and opens it for remote connect (the pairing chunks)', async () => {
    const session = (await created('POST', '/sessions', {})).id;
    const allocation = (await created('POST', `/sessions/${session}/devices`, { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] })).id;
    const iphone = await waitFor('the iPhone in use', async () => {
      const row = (await owner('GET', `/sessions/${session}/devices/${allocation}`)).body;
      return row.status === 'in_use' && row;
    }, 20_000);
    const device = `/sessions/${session}/devices/${iphone.info.serial}`;
    const screenshot = await fetch(`${api}${device}/screenshot`, { headers: { authorization: `Bearer ${token}` } });
    expect(screenshot.status).toBe(200);
    expect(screenshot.headers.get('content-type')).toBe('image/png');
    expect((await owner('GET', `${device}/elements`)).status).toBe(200);
    expect((await owner('POST', `${device}/actions`, { body: { type: 'tap', x: 10, y: 10 } })).status).toBe(200);
    const remote = await owner('POST', `${device}/remote-connect`, { body: {} });
    expect(remote.status, JSON.stringify(remote.body)).toBeOneOf([200, 201]);
    expect((await owner('DELETE', `${device}/remote-connect`)).status).toBe(204);
    expect((await owner('POST', `/sessions/${session}/end`)).status).toBe(202);
  }, 60_000);

  it('streams a demo Android phone\'s live screen as H.264 from its screenrecord (the h264 feed and its rotation watch, bundled)', async () => {
    // The demo phone the set-up holds.
    const socket = new WebSocket(`${api.replace(/^http/, 'ws')}/sessions/${ids.sessionId}/devices/${encodeURIComponent(ids.deviceId!)}/screen?token=${token}&codecs=h264,jpeg`);
    const seen = await new Promise<{ hello: Record<string, unknown>; first: Buffer }>((resolve, reject) => {
      let hello: Record<string, unknown> | undefined;
      socket.on('message', (data: Buffer, binary) => {
        if (!binary) hello = JSON.parse(data.toString()) as Record<string, unknown>;
        else if (hello) resolve({ hello, first: data });
      });
      socket.once('error', reject);
    });
    socket.close();
    expect(seen.hello).toMatchObject({ type: 'hello', format: 'h264', source: 'screenrecord', codec: expect.stringMatching(/^avc1\./) });
    // The first message is a keyframe (header byte 0, bit 0), its access unit in Annex B after the 5 header bytes.
    expect(seen.first[0]! & 1).toBe(1);
    expect([...seen.first.subarray(5, 9)]).toEqual([0, 0, 0, 1]);
  }, 60_000);

  it('answers every operation of its OpenAPI document, as the lab owner, with a status the document declares and never a 500', async () => {
    const document = (await call(api, 'GET', '/openapi.json')).body;
    const operations: Operation[] = Object.entries<Record<string, Schema>>(document.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, spec]) => ({ method, path, spec, declared: Object.keys(spec.responses ?? {}) })),
    );
    const ordered = operations.map((op, index) => ({ op, index })).sort((a, b) => rank(a.op) - rank(b.op) || a.index - b.index).map(({ op }) => op);

    const origin = new URL(api).origin;
    const idFor = (path: string, name: string): string => {
      if (name === 'id') {
        const collection = /\/api\/v1\/([^/]+)\/\{id\}/.exec(path)?.[1];
        const byCollection: Record<string, string | undefined> = { organizations: ids.organization, keys: ids.key, 'adb-keys': ids.adbKey, reservations: ids.reservation };
        return byCollection[collection ?? ''] ?? randomUUID();
      }
      return ids[name] ?? randomUUID();
    };
    const bodies: Record<string, unknown> = {
      'post /api/v1/auth/login': { email: 'owner@bundle.test', password: 'not-the-password' },
      'patch /api/v1/lab/settings': { lanSharing: true },
      'patch /api/v1/fleet/devices/{serial}': { note: 'shelf B' },
      'put /api/v1/lab/assistant': { provider: 'openai', endpoint: model!.endpoint, model: 'scripted' },
      'patch /api/v1/lab/assistant': { model: 'scripted' },
      'post /api/v1/sessions/{sessionId}/devices/{deviceId}/install': { file: ids.apkFileId },
      'post /api/v1/sessions/{sessionId}/chats/{chatId}/messages': { text: 'again', mode: 'sync' },
      'post /api/v1/sessions/{sessionId}/devices': { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] },
      'post /api/v1/adb-keys': { publicKey: newAdbPublicKey() },
      'post /api/v1/reservations': {
        filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }],
        startsAt: new Date(Date.now() + 48 * 3_600_000).toISOString(),
        endsAt: new Date(Date.now() + 49 * 3_600_000).toISOString(),
      },
      'put /api/v1/billing/plan': { plan: 'pro' },
    };
    // The one required query parameter besides the signed upload URL's: a path on the phone.
    const queries = new URLSearchParams({ ...Object.fromEntries(uploadQuery), path: '/sdcard/Download/bundle.txt' });

    // Values the optional query parameters are read with where the schema's smallest sample would match nothing.
    const optionalQueries: Record<string, string> = { tag: 'build:nightly-1', platform: 'android' };
    let optionsCalled = 0;

    const statuses = new Map<number, number>();
    const wrong: string[] = [];
    let streamed = 0;
    for (const op of ordered) {
      const key = `${op.method} ${op.path}`;
      const path = op.path.replace(/\{(\w+)\}/g, (_, name: string) => idFor(op.path, name));
      const query = new URLSearchParams();
      for (const p of op.spec.parameters ?? []) {
        if (p.in === 'query' && p.required) query.set(p.name, queries.get(p.name) ?? String(sample(p.schema)));
      }
      const url = `${origin}${path}${query.size ? `?${query}` : ''}`;
      let status: number;
      if (upgradeOf(op)) {
        status = (await upgradeAnswer(url.replace(/^http/, 'ws'), { headers: { authorization: `Bearer ${token}` } })).status;
        streamed++;
      } else if (streamsEvents(op)) {
        // An event stream runs until the client goes: its status, then a short abort.
        const abort = new AbortController();
        const res = await fetch(url, { headers: { authorization: `Bearer ${token}`, accept: 'text/event-stream' }, signal: abort.signal });
        status = res.status;
        await new Promise((r) => setTimeout(r, 50));
        abort.abort();
        await res.body?.cancel().catch(() => undefined);
        streamed++;
      } else {
        const content = op.spec.requestBody?.content ?? {};
        const headers: Record<string, string> = { authorization: `Bearer ${token}` };
        let body: BodyInit | undefined;
        if (content['application/json']) {
          headers['content-type'] = 'application/json';
          body = JSON.stringify(key in bodies ? bodies[key] : sample(content['application/json'].schema));
        } else if (content['multipart/form-data']) {
          const form = new FormData();
          const schema = content['multipart/form-data'].schema;
          for (const name of schema.required ?? []) {
            if (schema.properties[name].format === 'binary') form.append(name, new Blob([apk]), 'bundle.apk');
            else form.append(name, 'bundle.apk');
          }
          body = form;
        } else if (content['application/octet-stream']) {
          headers['content-type'] = 'application/octet-stream';
          body = fileBytes;
        }
        const res = await fetch(url, { method: op.method.toUpperCase(), headers, body });
        status = res.status;
        const text = await res.text();
        if (status >= 500) wrong.push(`${key}: ${status} ${text.slice(0, 300)}`);
        // A read once more with each optional query parameter it declares (a filter, a page size, a cursor), one at a
        // time: a filter's query that works from source and fails in the bundle is a broken list all the same.
        if (op.method === 'get') {
          for (const p of op.spec.parameters ?? []) {
            if (p.in !== 'query' || p.required) continue;
            const withOption = new URL(url);
            withOption.searchParams.set(p.name, optionalQueries[p.name] ?? String(sample(p.schema)));
            const more = await fetch(withOption, { headers });
            const answer = await more.text();
            optionsCalled++;
            if (more.status >= 500 || !op.declared.includes(String(more.status))) wrong.push(`${key}?${p.name}= answered ${more.status}, the document declares ${op.declared.join(', ')}: ${answer.slice(0, 300)}`);
          }
        }
      }
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status >= 500 || !op.declared.includes(String(status))) wrong.push(`${key} answered ${status}, the document declares ${op.declared.join(', ')}`);
    }
    const called = [...statuses.values()].reduce((a, b) => a + b, 0);
    console.log(`bundle: called ${called} of the document's ${operations.length} operations (${streamed} streaming, ended after their status): ${[...statuses].sort(([a], [b]) => a - b).map(([s, n]) => `${n}x ${s}`).join(', ')}; ${optionsCalled} reads again with an optional query parameter each`);
    expect(wrong).toEqual([]);
    expect(called).toBe(operations.length);
    expect(optionsCalled).toBeGreaterThan(20);
    // The note the lab owner wrote on the demo phone, as the Fleet lists it.
    expect((await owner('GET', '/fleet/devices')).body.data.find((p: { serial: string }) => p.serial === ids.serial)).toMatchObject({ note: 'shelf B' });
  }, 90_000);

  it('leaves V8\'s code cache for this very bundle once it serves, which the next start reads (scripts/code-cache.mjs)', async () => {
    // This start, or another test's start of the same bundle, wrote it (not an earlier build's, which the next start
    // would not read).
    await waitFor('the bundle\'s code cache', () => hasCodeCache(bundle));
    // The next start: what became of the cache is known once the bundle's first line has run, and that start ends there.
    const next = mkdtempSync(join(tmpdir(), 'benchtop-bundle-cache-'));
    const used = spawnSync(process.execPath, ['--input-type=module', '-e', `
      const { runWithCodeCache } = await import(${JSON.stringify(join(ROOT, 'scripts/code-cache.mjs'))});
      console.log('cache: ' + runWithCodeCache(${JSON.stringify(bundle)}));
      process.kill(process.pid, 'SIGKILL');`], { encoding: 'utf8', env: { ...process.env, BENCHTOP_DATA_DIR: next, BENCHTOP_PORT: '0', BENCHTOP_ADB: 'off' } });
    rmSync(next, { recursive: true, force: true });
    expect(used.stdout).toContain('cache: used');
  });

  it('serves the built GUI at / (out/renderer, found from the bundle\'s own place in out/serve)', async () => {
    const origin = new URL(api).origin;
    const page = await fetch(`${origin}/`);
    expect(page.status).toBe(200);
    // The built page (not the one that says the GUI is not built), and its script from out/renderer/assets.
    const script = /<script type="module" crossorigin src="(\/assets\/index-[\w-]+\.js)">/.exec(await page.text())?.[1];
    expect(script).toBeDefined();
    const code = await fetch(origin + script);
    expect(code.status).toBe(200);
    expect(code.headers.get('content-type')).toMatch(/javascript/);
  });

  it('serves /metrics as Prometheus text (promtool accepts it)', async () => {
    const res = await fetch(`${api}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    const text = await res.text();
    expect(res.status, text).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(text).toMatch(/^# HELP benchtop_phones /m);
    expect(text).toMatch(/^benchtop_phones\{host="local",platform="android",state="device"\} 1$/m);
    const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    if (promtool.error) {
      if (process.env.CI === 'true') throw new Error('promtool is missing: install the Debian package `prometheus` (apt-get install -y prometheus).');
      console.warn('NOT CHECKED with promtool: it is not installed (apt-get install -y prometheus).');
      return;
    }
    expect(promtool.stdout + promtool.stderr).toBe('');
    expect(promtool.status).toBe(0);
  });
});
