import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { KEYCHAIN_SERVICE, openSecretStore } from '../../src/main/desktop/keychain.js';
import { pageSecrets } from '../../src/main/desktop/page-secrets.js';
import { loadConfig } from '../../src/main/engine/config.js';
import { createEngine, type Engine } from '../../src/main/engine/engine.js';
import { FileSecretStore, SECRETS_FILE, type SecretStore } from '../../src/main/engine/secrets.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { secretServiceOrSkip, secretToolLookup, startSecretService, type SecretService } from '../support/secret-service.js';

const hasSecretService = secretServiceOrSkip();
const originalBus = process.env.DBUS_SESSION_BUS_ADDRESS;
const dirs: string[] = [];

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-keychain-test-'));
  dirs.push(dir);
  return dir;
}

function useBus(address: string | undefined): void {
  if (address === undefined) delete process.env.DBUS_SESSION_BUS_ADDRESS;
  else process.env.DBUS_SESSION_BUS_ADDRESS = address;
}

/** A real engine on an ephemeral port whose secrets go to the given store, as in the desktop app. */
async function startWith(secrets: SecretStore, dataDir: string): Promise<{ engine: Engine; api: string }> {
  const config = {
    ...loadConfig({}),
    port: 0,
    dataDir,
    ownerEmail: OWNER_EMAIL,
    ownerPassword: OWNER_PASSWORD,
    logLevel: 'silent' as const,
    adb: null,
  };
  const engine = createEngine(config, { secrets });
  const { url } = await engine.start();
  return { engine, api: `${url}/api/v1` };
}

const PASSWORD = 'correct horse battery staple';
const hostBody = {
  name: 'mini',
  address: '127.0.0.1',
  port: 1,
  username: 'builder',
  password: PASSWORD,
  mode: 'bare',
  baseImage: 'macOS 15 on the mini',
};

afterAll(() => {
  useBus(originalBus);
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!hasSecretService)('the OS keychain (GNOME Keyring over a private D-Bus session)', () => {
  let service: SecretService;

  beforeAll(async () => {
    service = await startSecretService();
  });
  afterAll(() => service?.stop());
  afterEach(() => useBus(originalBus));

  it('is found by the probe, and keeps secrets under the Benchtop service, outside the data dir', async () => {
    useBus(service.address);
    const dataDir = tempDir();
    const store = await openSecretStore(dataDir);
    expect(store.kind).toBe('keychain');
    expect(await store.get('mac-host:one')).toBeUndefined();
    await store.set('mac-host:one', 'first');
    await store.set('mac-host:one', 'second');
    expect(await store.get('mac-host:one')).toBe('second');
    expect(secretToolLookup(service.address, { service: KEYCHAIN_SERVICE, username: 'mac-host:one' })).toBe('second');
    await store.delete('mac-host:one');
    expect(await store.get('mac-host:one')).toBeUndefined();
    expect(secretToolLookup(service.address, { service: KEYCHAIN_SERVICE, username: 'mac-host:one' })).toBeUndefined();
    // Deleting what is not there is no error.
    await store.delete('mac-host:one');
    expect(existsSync(join(dataDir, SECRETS_FILE))).toBe(false);
  });

  it('an engine given the keychain reports it, and a Mac host\'s password goes there, not to a file', async () => {
    useBus(service.address);
    const dataDir = tempDir();
    const store = await openSecretStore(dataDir);
    const { engine, api } = await startWith(store, dataDir);
    try {
      const c = client(api);
      const owner = await c.login();
      expect((await c.call('GET', '/lab/settings', { token: owner })).body.secretStore).toBe('keychain');
      const created = await c.call('POST', '/lab/hosts', { token: owner, body: hostBody });
      expect(created.status).toBe(201);
      expect(JSON.stringify(created.body)).not.toContain(PASSWORD);
      const inKeychain = secretToolLookup(service.address, { service: KEYCHAIN_SERVICE, username: `mac-host:${created.body.id}` });
      expect(JSON.parse(inKeychain!)).toEqual({ password: PASSWORD });
      expect(existsSync(join(dataDir, SECRETS_FILE))).toBe(false);
    } finally {
      await engine.stop();
    }
  });

  it('moves what a headless run left in the 0600 file into the keychain, and removes the file', async () => {
    const dataDir = tempDir();
    // What `npm run serve` uses on the same data dir.
    await new FileSecretStore(join(dataDir, SECRETS_FILE)).set('mac-host:moved', 'from the file');

    useBus(service.address);
    const said: string[] = [];
    const store = await openSecretStore(dataDir, (m) => said.push(m));
    expect(store.kind).toBe('keychain');
    expect(await store.get('mac-host:moved')).toBe('from the file');
    expect(secretToolLookup(service.address, { service: KEYCHAIN_SERVICE, username: 'mac-host:moved' })).toBe('from the file');
    expect(existsSync(join(dataDir, SECRETS_FILE))).toBe(false);
    expect(said.join('\n')).toContain('Moved 1 credentials');
  });

  it('the bridge\'s keychain calls reach only the page\'s own entries, and check what the page sends', async () => {
    useBus(service.address);
    const store = await openSecretStore(tempDir());
    await store.set('mac-host:two', 'engine secret');
    const page = pageSecrets(store);
    expect(await page.get('api-token')).toBeNull();
    await page.set('api-token', 'page secret');
    expect(await page.get('api-token')).toBe('page secret');
    expect(secretToolLookup(service.address, { service: KEYCHAIN_SERVICE, username: 'page.api-token' })).toBe('page secret');
    // The engine's credentials are not the page's: neither readable nor writable through the bridge.
    await expect(page.get('mac-host:two')).rejects.toThrow(TypeError);
    await expect(page.set('mac-host:two', 'x')).rejects.toThrow(TypeError);
    expect(await store.get('mac-host:two')).toBe('engine secret');
    for (const bad of [undefined, 42, '', 'a'.repeat(101), '../x', 'with space', { account: 'x' }]) {
      await expect(page.get(bad)).rejects.toThrow(TypeError);
    }
    await expect(page.set('ok', 42)).rejects.toThrow(TypeError);
    await expect(page.set('ok', 'x'.repeat(64 * 1024 + 1))).rejects.toThrow(TypeError);
  });
});

describe('without a Secret Service: the 0600 file, reported as such', () => {
  afterEach(() => useBus(originalBus));

  it('no D-Bus session: the probe falls back to the file in the data dir, and says why', async () => {
    useBus(undefined);
    const dataDir = tempDir();
    const said: string[] = [];
    const store = await openSecretStore(dataDir, (m) => said.push(m));
    expect(store.kind).toBe('file');
    expect(said.join('\n')).toContain('0600 file');
    await store.set('mac-host:three', 'kept');
    const file = join(dataDir, SECRETS_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ 'mac-host:three': 'kept' });
  });

  it.skipIf(!hasSecretService)('a D-Bus session with no Secret Service on it, or a bus gone away: the file too', async () => {
    const bus = await startSecretService({ keyring: false });
    try {
      useBus(bus.address);
      expect((await openSecretStore(tempDir())).kind).toBe('file');
    } finally {
      bus.stop();
    }
    expect((await openSecretStore(tempDir())).kind).toBe('file');
  });

  it('an engine on the fallback reports secretStore "file", for Settings to warn', async () => {
    useBus(undefined);
    const dataDir = tempDir();
    const { engine, api } = await startWith(await openSecretStore(dataDir), dataDir);
    try {
      const c = client(api);
      const owner = await c.login();
      expect((await c.call('GET', '/lab/settings', { token: owner })).body.secretStore).toBe('file');
      const created = await c.call('POST', '/lab/hosts', { token: owner, body: hostBody });
      expect(created.status).toBe(201);
      expect(JSON.parse(readFileSync(join(dataDir, SECRETS_FILE), 'utf8'))[`mac-host:${created.body.id}`]).toBe(
        JSON.stringify({ password: PASSWORD }),
      );
    } finally {
      await engine.stop();
    }
  });
});
