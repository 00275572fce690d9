import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { loadConfig, type EngineConfig } from '../../src/main/engine/config.js';
import { createEngine, type Engine } from '../../src/main/engine/engine.js';
// The engine loads its fleets' code when the fleet starts (after it listens), which takes the bundle a few ms but a
// test run seconds of transforming: loaded here, with the test file, a test's phones are known as soon as in a lab.
import '../../src/main/engine/fleet/android/android-fleet.js';
import '../../src/main/engine/fleet/ios/ios-fleet.js';

export const OWNER_EMAIL = 'owner@lab.test';
export const OWNER_PASSWORD = 'owner-password';

export interface TestEngine {
  engine: Engine;
  /** http://127.0.0.1:<port>/api/v1 */
  api: string;
  dataDir: string;
  /** Moves the engine's clock (expiry, metering), or freezes it at one millisecond (cursor ties). */
  clock: { offsetMs: number; frozenAt?: number };
  stop(): Promise<void>;
  /** Stops the engine (keeping its data dir) and starts a new one on the same data dir. */
  restart(overrides?: Partial<EngineConfig>): Promise<TestEngine>;
}

/** A real engine on an ephemeral loopback port with its own SQLite file in a temp dir. */
export async function startEngine(overrides: Partial<EngineConfig> = {}): Promise<TestEngine> {
  const dataDir = overrides.dataDir ?? mkdtempSync(join(tmpdir(), 'benchtop-test-'));
  const config: EngineConfig = {
    ...loadConfig({}),
    host: '127.0.0.1',
    port: 0,
    dataDir,
    ownerEmail: OWNER_EMAIL,
    ownerPassword: OWNER_PASSWORD,
    logLevel: 'silent',
    // No adb unless a fleet test asks for one: the control-plane tests have no phones.
    adb: null,
    usbmuxd: null,
    ...overrides,
  };
  const clock: TestEngine['clock'] = { offsetMs: 0 };
  const engine = createEngine(config, { now: () => clock.frozenAt ?? Date.now() + clock.offsetMs });
  const { url } = await engine.start();
  return {
    engine,
    api: `${url}/api/v1`,
    dataDir,
    clock,
    async stop() {
      await engine.stop();
      rmSync(dataDir, { recursive: true, force: true });
    },
    async restart(more = {}) {
      await engine.stop();
      return startEngine({ ...overrides, ...more, dataDir });
    },
  };
}

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

export interface CallOptions {
  token?: string;
  org?: string;
  body?: unknown;
  /** A raw body sent as-is (malformed JSON, oversized payloads). */
  raw?: string;
  headers?: Record<string, string>;
}

/** One HTTP call against the engine; the body is parsed as JSON when there is one. */
export async function call(api: string, method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (options.org) headers['x-organization-id'] = options.org;
  let body: string | undefined;
  if (options.raw !== undefined) body = options.raw;
  else if (options.body !== undefined) body = JSON.stringify(options.body);
  if (body !== undefined) headers['content-type'] ??= 'application/json';
  const res = await fetch(api + path, { method, headers, body });
  return { status: res.status, body: parsedBody(await res.text()), headers: res.headers };
}

/** A reply's body: its JSON, or its text when it is not JSON, or undefined when empty. */
export function parsedBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return text;
  }
}

/** A client bound to one engine, with shortcuts for the accounts every test needs. */
export function client(api: string) {
  const c = {
    api,
    call: (method: string, path: string, options?: CallOptions) => call(api, method, path, options),
    async login(email = OWNER_EMAIL, password = OWNER_PASSWORD): Promise<string> {
      const r = await call(api, 'POST', '/auth/login', { body: { email, password } });
      if (r.status !== 200) throw new Error(`login ${email} failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.token;
    },
    /** Signs up a new account and returns its token, user and Personal organization id. */
    async signup(email: string, password = 'password-123') {
      const r = await call(api, 'POST', '/auth/signup', { body: { email, password } });
      if (r.status !== 201) throw new Error(`signup ${email} failed: ${r.status} ${JSON.stringify(r.body)}`);
      const token: string = r.body.token;
      const orgs = await call(api, 'GET', '/organizations', { token });
      return { token, user: r.body.user as { id: string; email: string }, personalOrgId: orgs.body.data[0].id as string };
    },
    async createOrganization(token: string, name: string): Promise<string> {
      const r = await call(api, 'POST', '/organizations', { token, body: { name } });
      if (r.status !== 201) throw new Error(`create organization failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.id;
    },
    async createKey(token: string, org?: string, name = 'key'): Promise<string> {
      const r = await call(api, 'POST', '/keys', { token, org, body: { name } });
      if (r.status !== 201) throw new Error(`create key failed: ${r.status} ${JSON.stringify(r.body)}`);
      return r.body.apiKey;
    },
    /** Invites the email into the organization with the role, and accepts as that user. */
    async addMember(adminToken: string, org: string, memberToken: string, email: string, role: string) {
      const inv = await call(api, 'POST', `/organizations/${org}/invitations`, { token: adminToken, body: { email, role } });
      if (inv.status !== 201) throw new Error(`invite failed: ${inv.status} ${JSON.stringify(inv.body)}`);
      const acc = await call(api, 'POST', `/invitations/${inv.body.id}/accept`, { token: memberToken });
      if (acc.status !== 204) throw new Error(`accept failed: ${acc.status} ${JSON.stringify(acc.body)}`);
    },
  };
  return c;
}

export type Client = ReturnType<typeof client>;

/** What useEngine hands a test file: filled in by its beforeAll, so read the fields inside hooks and tests. */
export interface EngineUnderTest {
  /** The engine; a test that restarts it assigns the new one here (`lab.t = await lab.t.restart()`). */
  t: TestEngine;
  /** A client bound to the engine as it was started. */
  c: Client;
  /** The lab owner's interactive token. */
  owner: string;
}

/**
 * One real engine for the enclosing file or describe block: started, with the lab owner logged in, before its tests,
 * and stopped after them. Hooks registered after this call run after the engine has started (and before it stops).
 */
export function useEngine(overrides: Partial<EngineConfig> = {}): EngineUnderTest {
  const lab = {} as EngineUnderTest;
  beforeAll(async () => {
    lab.t = await startEngine(overrides);
    lab.c = client(lab.t.api);
    lab.owner = await lab.c.login();
  });
  afterAll(() => lab.t?.stop());
  return lab;
}

/**
 * The lab settings without the disk's free space: that is the machine's, and moves with whatever else writes to the
 * disk, so a check that nothing changed compares the rest.
 */
export function settledLabSettings<T extends { testResultFiles: Record<string, unknown> }>(settings: T): T {
  return { ...settings, testResultFiles: { ...settings.testResultFiles, diskFreeBytes: 'the machine\'s' } };
}

/** Asserts the DESIGN.md error body and returns its code. */
export function errorCode(reply: Reply): string {
  const e = reply.body?.error;
  if (!e || typeof e.code !== 'string' || typeof e.message !== 'string' || !/^[a-z0-9_]+$/.test(e.code)) {
    throw new Error(`not the error body: ${reply.status} ${JSON.stringify(reply.body)}`);
  }
  return e.code;
}
