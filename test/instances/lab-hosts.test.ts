import { generateKeyPairSync } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, startEngine, type TestEngine } from '../support/engine.js';
import { waitFor } from '../support/lab.js';

/** Lab administration of Mac hosts. The hosts here do not answer (port 1): only the API and its secrets are tested. */
describe('/lab/hosts', () => {
  let t: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs1', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
  const PASSWORD = 'hunter2-correct-horse';
  const VM_PASSWORD = 'vm-battery-staple';
  const secretsIn = (text: string) => [privateKey.slice(40, 100), PASSWORD, VM_PASSWORD].filter((s) => text.includes(s));
  const host = (overrides: Record<string, unknown> = {}) => ({
    name: 'mac-1',
    address: '127.0.0.1',
    port: 1,
    username: 'builder',
    privateKey,
    mode: 'tart',
    baseImage: 'ghcr.io/cirruslabs/macos-sequoia-base:latest',
    ...overrides,
  });

  beforeAll(async () => {
    t = await startEngine({ hostCheckIntervalSeconds: 0.2 });
    c = client(t.api);
    owner = await c.login();
  });
  afterAll(() => t.stop());

  it('adds, lists, changes and removes hosts, and never returns a secret', async () => {
    const created = await c.call('POST', '/lab/hosts', { token: owner, body: host() });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'mac-1', address: '127.0.0.1', port: 1, username: 'builder', auth: 'privateKey', mode: 'tart',
      baseImage: 'ghcr.io/cirruslabs/macos-sequoia-base:latest', maxInstances: 2, cpuCores: 4, memoryMb: 8192, diskMb: 51_200,
      vmUsername: 'admin', vmPort: 22, vmAuth: 'default', workDir: 'benchtop-work', hostKeySha256: null,
    });
    for (const field of ['privateKey', 'passphrase', 'password', 'vmPassword', 'vmPrivateKey']) expect(created.body).not.toHaveProperty(field);
    const id = created.body.id;

    const bare = await c.call('POST', '/lab/hosts', { token: owner, body: host({ name: 'mini', mode: 'bare', baseImage: 'macOS 15 on the mini', privateKey: undefined, password: PASSWORD }) });
    expect(bare.status).toBe(201);
    expect(bare.body).toMatchObject({ auth: 'password', maxInstances: 1 });

    const changed = await c.call('PATCH', `/lab/hosts/${id}`, { token: owner, body: { name: 'mac-studio', password: PASSWORD, vmPassword: VM_PASSWORD, maxInstances: 1, cpuCores: 8 } });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id, name: 'mac-studio', auth: 'password', vmAuth: 'password', maxInstances: 1, cpuCores: 8, address: '127.0.0.1' });

    // The unreachable host is reported down, to the owner and in the fleet view.
    await waitFor('the host to be down', async () => (await c.call('GET', `/lab/hosts/${id}`, { token: owner })).body.health === 'down');
    const one = await c.call('GET', `/lab/hosts/${id}`, { token: owner });
    expect(one.body.healthMessage).toBe('SSH to the host failed: connection refused at 127.0.0.1:1');
    expect(one.body.checkedAt).not.toBeNull();

    const listed = await c.call('GET', '/lab/hosts', { token: owner });
    expect(listed.status).toBe(200);
    expect(listed.body.data.map((h: { name: string }) => h.name)).toEqual(['mac-studio', 'mini']);
    for (const reply of [created, bare, changed, one, listed]) expect(secretsIn(JSON.stringify(reply.body))).toEqual([]);

    // Removed with its credentials.
    expect((await c.call('DELETE', `/lab/hosts/${id}`, { token: owner })).status).toBe(204);
    expect((await c.call('GET', `/lab/hosts/${id}`, { token: owner })).status).toBe(404);
    expect((await c.call('DELETE', `/lab/hosts/${id}`, { token: owner })).status).toBe(404);
    const secrets = readFileSync(join(t.dataDir, 'secrets.json'), 'utf8');
    expect(secrets).not.toContain(VM_PASSWORD);
    expect(secrets).toContain(PASSWORD);
    expect((await c.call('DELETE', `/lab/hosts/${bare.body.id}`, { token: owner })).status).toBe(204);
    expect(JSON.parse(readFileSync(join(t.dataDir, 'secrets.json'), 'utf8'))).toEqual({});
  });

  it('keeps secrets in a 0600 file in the data dir, never in the database', async () => {
    const r = await c.call('POST', '/lab/hosts', { token: owner, body: host({ name: 'vault', privateKey: undefined, password: PASSWORD, vmPassword: VM_PASSWORD }) });
    expect(r.status).toBe(201);
    const file = join(t.dataDir, 'secrets.json');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const stored = JSON.parse(readFileSync(file, 'utf8'));
    expect(stored[`mac-host:${r.body.id}`]).toBe(JSON.stringify({ password: PASSWORD, vmPassword: VM_PASSWORD }));
    // Neither the database nor its write-ahead log holds them.
    for (const name of readdirSync(t.dataDir).filter((f) => f.startsWith('benchtop.db'))) {
      expect(secretsIn(readFileSync(join(t.dataDir, name), 'latin1')), name).toEqual([]);
    }
    await c.call('DELETE', `/lab/hosts/${r.body.id}`, { token: owner });
  });

  it('refuses bad hosts with 400 and duplicate names with 409', async () => {
    const post = (body: unknown) => c.call('POST', '/lab/hosts', { token: owner, body });
    const cases: Array<[Record<string, unknown>, string]> = [
      [host({ privateKey: undefined }), 'credentials_required'],
      [host({ password: PASSWORD }), 'ambiguous_credentials'],
      [host({ privateKey: '-----BEGIN OPENSSH PRIVATE KEY-----\nnot a key\n-----END OPENSSH PRIVATE KEY-----\n' }), 'invalid_private_key'],
      [host({ privateKey: undefined, password: PASSWORD, passphrase: 'x' }), 'passphrase_without_key'],
      [host({ vmPassword: 'a', vmPrivateKey: privateKey }), 'ambiguous_credentials'],
      [host({ mode: 'bare', maxInstances: 2 }), 'bare_host_single'],
      [host({ mode: 'bare', workDir: '/tmp' }), 'invalid_work_dir'],
      [host({ mode: 'bare', workDir: 'a/../..' }), 'invalid_work_dir'],
      [host({ mode: 'bare', workDir: '~/x' }), 'invalid_request'],
      [host({ baseImage: 'two words' }), 'invalid_base_image'],
      [host({ mode: 'vm' }), 'invalid_request'],
      [host({ port: 70_000 }), 'invalid_request'],
      [host({ address: 'mac.local; rm -rf /' }), 'invalid_request'],
      [host({ memoryMb: 512 }), 'invalid_request'],
      [host({ unknown: true }), 'invalid_request'],
      [host({ name: ' ' }), 'invalid_request'],
    ];
    for (const [body, code] of cases) {
      const r = await post(body);
      expect(r.status, JSON.stringify(body).slice(0, 200)).toBe(400);
      expect(errorCode(r)).toBe(code);
      expect(secretsIn(JSON.stringify(r.body))).toEqual([]);
    }
    const first = await post(host({ name: 'Twin' }));
    expect(first.status).toBe(201);
    const twin = await post(host({ name: 'twin' }));
    expect(twin.status).toBe(409);
    expect(errorCode(twin)).toBe('host_name_taken');
    const other = await post(host({ name: 'other' }));
    const rename = await c.call('PATCH', `/lab/hosts/${other.body.id}`, { token: owner, body: { name: 'TWIN' } });
    expect(rename.status).toBe(409);
    const badPatch = await c.call('PATCH', `/lab/hosts/${other.body.id}`, { token: owner, body: { mode: 'bare', maxInstances: 2 } });
    expect(badPatch.status).toBe(400);
    expect(errorCode(badPatch)).toBe('bare_host_single');
    expect((await c.call('PATCH', `/lab/hosts/${other.body.id}`, { token: owner, body: { privatekey: privateKey } })).status).toBe(400);
    expect((await c.call('PATCH', `/lab/hosts/${other.body.id}`, { token: owner, body: { hostKeySha256: 'md5:aa' } })).status).toBe(400);
    // Turned bare, a host takes one instance at a time.
    const turned = await c.call('PATCH', `/lab/hosts/${other.body.id}`, { token: owner, body: { mode: 'bare' } });
    expect(turned.body).toMatchObject({ mode: 'bare', maxInstances: 1 });
    expect((await c.call('PATCH', '/lab/hosts/6f1c1a52-52a8-4a8e-9a55-1b5f3c9f0000', { token: owner, body: { cpuCores: 2 } })).status).toBe(404);
    for (const id of [first.body.id, other.body.id]) await c.call('DELETE', `/lab/hosts/${id}`, { token: owner });
  });

  it('is for the lab owner with an interactive token: 401 without one, 403 for others and for API keys', async () => {
    const member = await c.signup('member@lab.test');
    const key = await c.createKey(owner);
    const created = await c.call('POST', '/lab/hosts', { token: owner, body: host({ name: 'owned' }) });
    const id = created.body.id;
    const calls: Array<[string, string, unknown?]> = [
      ['GET', '/lab/hosts'],
      ['POST', '/lab/hosts', host({ name: 'sneaky' })],
      ['GET', `/lab/hosts/${id}`],
      ['PATCH', `/lab/hosts/${id}`, { cpuCores: 1 }],
      ['DELETE', `/lab/hosts/${id}`],
    ];
    for (const [method, path, body] of calls) {
      expect((await c.call(method, path, { body })).status, `${method} ${path}`).toBe(401);
      const asMember = await c.call(method, path, { token: member.token, body });
      expect(asMember.status, `${method} ${path}`).toBe(403);
      expect(errorCode(asMember)).toBe('not_lab_owner');
      const asKey = await c.call(method, path, { token: key, body });
      expect(asKey.status, `${method} ${path}`).toBe(403);
      expect(errorCode(asKey)).toBe('interactive_only');
    }

    // Every signed-in caller sees the hosts' health and room, but not how to reach them.
    const fleet = await c.call('GET', '/fleet/hosts', { token: member.token });
    expect(fleet.status).toBe(200);
    expect(fleet.body.data).toEqual([
      expect.objectContaining({ id, name: 'owned', mode: 'tart', image: 'ghcr.io/cirruslabs/macos-sequoia-base:latest', machine: { arch: 'arm64', cpuCores: 4, memoryMb: 8192, diskMb: 51_200 }, maxInstances: 2, instances: [] }),
    ]);
    for (const field of ['address', 'port', 'username', 'auth', 'hostKeySha256']) expect(fleet.body.data[0]).not.toHaveProperty(field);
    expect(secretsIn(JSON.stringify(fleet.body))).toEqual([]);
    expect((await c.call('GET', '/fleet/hosts', { token: key })).status).toBe(200);
    expect((await c.call('GET', '/fleet/hosts')).status).toBe(401);

    // With no host able to take one, an instance is a 409 no_capacity.
    await waitFor('the host to be down', async () => (await c.call('GET', '/fleet/hosts', { token: owner })).body.data[0].health === 'down');
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const full = await c.call('POST', `/sessions/${session}/instances`, { token: owner, body: { os: 'macos' } });
    expect(full.status).toBe(409);
    expect(errorCode(full)).toBe('no_capacity');
    expect(full.body.error.message).toMatch(/down/);
    await c.call('DELETE', `/lab/hosts/${id}`, { token: owner });
    const none = await c.call('POST', `/sessions/${session}/instances`, { token: owner, body: { os: 'macos' } });
    expect(errorCode(none)).toBe('no_capacity');
    expect(none.body.error.message).toMatch(/no Mac host/);
  });
});
