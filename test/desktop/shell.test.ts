import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { contentSecurityPolicy } from '../../src/main/desktop/csp.js';
import { IPC_CHANNELS } from '../../src/shared/ipc-channels.js';
import { openDb, schemaVersion } from '../../src/main/engine/store/db.js';
import { MIGRATIONS } from '../../src/main/engine/store/migrations.js';

const require = createRequire(import.meta.url);
const root = join(import.meta.dirname, '..', '..');
const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-shell-test-'));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe('better-sqlite3 through an explicit nativeBinding', () => {
  const nodeBuild = join(dirname(require.resolve('better-sqlite3/package.json')), 'build', 'Release', 'better_sqlite3.node');

  it('opens and migrates the database with the addon at the given path', () => {
    const db = openDb(tempDir(), { nativeBinding: nodeBuild });
    try {
      expect(schemaVersion(db)).toBe(MIGRATIONS.length);
      expect(db.prepare('SELECT 1 + 1 AS two').get()).toEqual({ two: 2 });
    } finally {
      db.close();
    }
  });

  it('loads that path and no other: a missing addon is an error, not a silent fallback to node_modules', () => {
    expect(() => openDb(tempDir(), { nativeBinding: join(tempDir(), 'better_sqlite3.node') })).toThrow();
  });
});

describe('npm start without the Electron binary', () => {
  it('installs Electron into desktop/ alone, then says in one line that the binary is missing and points to npm run serve', () => {
    // Electron's own lookup honours this variable: an empty dist dir is a machine where the binary is missing.
    const r = spawnSync(process.execPath, [join(root, 'scripts', 'start.mjs')], {
      encoding: 'utf8',
      env: { ...process.env, ELECTRON_OVERRIDE_DIST_PATH: tempDir() },
      timeout: 120_000,
    });
    expect(r.status).toBe(1);
    // The Electron package is desktop/'s alone: the engine's node_modules, which npm run serve and npm test use, has none.
    expect(existsSync(join(root, 'desktop', 'node_modules', 'electron', 'package.json'))).toBe(true);
    expect(existsSync(join(root, 'node_modules', 'electron'))).toBe(false);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toContain('Electron binary is not installed');
    expect(lines.at(-1)).toContain('npm run serve');
  });
});

describe('the window\'s Content-Security-Policy', () => {
  const directives = (policy: string) =>
    new Map(policy.split('; ').map((d) => [d.split(' ')[0]!, d.split(' ').slice(1)] as const));

  it('runs only the engine\'s own scripts and connects only to the engine, sockets included', () => {
    const csp = directives(contentSecurityPolicy('http://127.0.0.1:7676'));
    expect(csp.get('default-src')).toEqual(["'self'"]);
    expect(csp.get('script-src')).toEqual(["'self'"]);
    expect(csp.get('connect-src')).toEqual(["'self'", 'ws://127.0.0.1:7676']);
    expect(csp.get('object-src')).toEqual(["'none'"]);
    expect(csp.get('frame-ancestors')).toEqual(["'none'"]);
    expect(csp.get('base-uri')).toEqual(["'none'"]);
    for (const sources of csp.values()) expect(sources.join(' ')).not.toMatch(/unsafe-eval|\*|https?:(?!\/\/)/);
  });

  it('runs an inline script only by the hash of the page\'s own', () => {
    const hash = "'sha256-qXbJ3u7kJuRtX7u9vZcaUzUcGtx8GvX+drU/C8KdPm0='";
    expect(directives(contentSecurityPolicy('http://127.0.0.1:7676', [hash])).get('script-src')).toEqual(["'self'", hash]);
  });

  it('over HTTPS, secure sockets only', () => {
    expect(directives(contentSecurityPolicy('https://lab.local:7677')).get('connect-src')).toEqual(["'self'", 'wss://lab.local:7677']);
  });
});

describe('the preload bridge', () => {
  it('has one distinct channel per call, keychain get and set among them', () => {
    const channels = Object.values(IPC_CHANNELS);
    expect(new Set(channels).size).toBe(channels.length);
    expect(Object.keys(IPC_CHANNELS).sort()).toEqual(['getApiOrigin', 'getOwnerToken', 'keychainGet', 'keychainSet', 'openExternal']);
  });
});
