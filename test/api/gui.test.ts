/** The engine serves the built renderer at /: the page with a strict CSP, hashed assets, and the SPA fallback. */
import Fastify from 'fastify';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { builtPageScriptHashes, contentSecurityPolicy, inlineScriptHashes, registerGui, rendererDir } from '../../src/main/engine/api/gui.js';
import type { App } from '../../src/main/engine/api/http.js';
import { errorCode, useEngine } from '../support/engine.js';

describe('the GUI at /', () => {
  let origin: string;

  const lab = useEngine();
  beforeAll(() => {
    origin = lab.t.api.replace(/\/api\/v1$/, '');
  });

  it('serves index.html with a CSP that allows only its own origin, its sockets, and blob:/data: images', async () => {
    const r = await fetch(`${origin}/`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/html/);
    const html = await r.text();
    expect(html).toContain('<div id="root">');
    const csp = r.headers.get('content-security-policy')!;
    const host = new URL(origin).host;
    expect(csp).toContain("default-src 'self'");
    // Scripts: its own files, and the one inline script the build put in the page (the Fleet screen's early
    // requests), by the hash of exactly that code.
    const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(([, code]) => code!);
    expect(inline).toHaveLength(1);
    expect(inline[0]).toContain('/api/v1/fleet/devices');
    const sha = createHash('sha256').update(inline[0]!).digest('base64');
    expect(csp).toContain(`script-src 'self' 'sha256-${sha}';`);
    expect(csp).toContain(`connect-src 'self' ws://${host} wss://${host}`);
    expect(csp).toContain("img-src 'self' blob: data:");
    expect(csp).toContain("object-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toMatch(/unsafe-eval|https?:\/\/|\*/);
    // Every script and style the page loads is its own; the icon is the empty data: URL, so none is fetched.
    for (const [, src] of html.matchAll(/(?:src|href)="([^"]+)"/g)) expect(src).toMatch(/^(\/assets\/|\.\/assets\/|\/$|data:,$)/);
  });

  it('answers a deep link with the app, and keeps unknown API paths JSON 404s', async () => {
    const deep = await fetch(`${origin}/sessions/0b9f3c2e-1111-4c4c-9999-123456789abc`);
    expect(deep.status).toBe(200);
    expect(deep.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await deep.text()).toContain('<div id="root">');

    for (const path of ['/api/v1/no-such-thing', '/api/other', '/api']) {
      const r = await fetch(origin + path);
      expect(r.status, path).toBe(404);
      expect(errorCode({ status: r.status, body: await r.json(), headers: r.headers })).toBe('route_not_found');
    }
    const post = await fetch(`${origin}/`, { method: 'POST' });
    expect(post.status).toBe(404);
  });

  it('serves hashed assets with a long cache, and nothing outside the build', async () => {
    const script = readdirSync(join(rendererDir(), 'assets')).find((f) => f.endsWith('.js'))!;
    const r = await fetch(`${origin}/assets/${script}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/javascript/);
    expect(r.headers.get('cache-control')).toContain('immutable');

    const missing = await fetch(`${origin}/assets/no-such-file.js`);
    expect(missing.status).toBe(404);
    // Encoded traversal stays inside the build: refused, or (once a client normalizes %2e%2e) the app's page.
    for (const path of ['/assets/..%2f..%2fpackage.json', '/assets/%2e%2e/%2e%2e/package.json', '/assets/..%5c..%5cpackage.json']) {
      const r2 = await fetch(origin + path);
      expect(r2.status, path).toBeLessThan(500);
      expect(await r2.text(), path).not.toContain('"name": "benchtop"');
    }
    const refused = await fetch(`${origin}/assets/..%2f..%2fpackage.json`);
    expect([400, 404]).toContain(refused.status);
    errorCode({ status: refused.status, body: await refused.json(), headers: refused.headers });
  });

  it('leaves the GUI out of the OpenAPI document', async () => {
    const doc = await (await fetch(`${lab.t.api}/openapi.json`)).json();
    // /ws, the fleet's JSON-RPC, is the one API path outside /api/v1 (where the Mobile Next clients look for it).
    expect(Object.keys(doc.paths).filter((p) => !p.startsWith('/api/v1/'))).toEqual(['/ws']);
  });

  it('says how to build the GUI when it is not built, instead of failing', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'benchtop-no-gui-'));
    const app = Fastify() as unknown as App;
    await registerGui(app, empty);
    const r = await app.inject({ method: 'GET', url: '/fleet' });
    expect(r.statusCode).toBe(200);
    expect(r.body).toContain('npm run build:renderer');
    expect(r.headers['content-security-policy']).toContain("default-src 'self'");
    expect(builtPageScriptHashes(empty)).toEqual([]);
    await app.close();
    rmSync(empty, { recursive: true, force: true });
  });

  it('names the inline scripts of the page it serves now: a rebuilt page gets its new hash, not the old one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'benchtop-gui-'));
    const app = Fastify() as unknown as App;
    await registerGui(app, dir);
    const scriptSrc = async () => (await app.inject({ method: 'GET', url: '/fleet' })).headers['content-security-policy']!.toString().split('; ').find((d) => d.startsWith('script-src'));
    writeFileSync(join(dir, 'index.html'), '<!doctype html><script>one()</script><div id="root"></div>');
    expect(await scriptSrc()).toBe(`script-src 'self' ${inlineScriptHashes('<script>one()</script>')[0]}`);
    writeFileSync(join(dir, 'index.html'), '<!doctype html><script>two()</script><script src="/assets/a.js"></script>');
    utimesSync(join(dir, 'index.html'), new Date(), new Date(Date.now() + 5000));
    expect(await scriptSrc()).toBe(`script-src 'self' 'sha256-${createHash('sha256').update('two()').digest('base64')}'`);
    // The desktop window's own CSP names the same hashes (desktop/window.ts).
    expect(builtPageScriptHashes(dir)).toEqual([`'sha256-${createHash('sha256').update('two()').digest('base64')}'`]);
    await app.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('never echoes a malformed Host header into the policy', () => {
    expect(contentSecurityPolicy('127.0.0.1:7676')).toContain('ws://127.0.0.1:7676 wss://127.0.0.1:7676');
    expect(contentSecurityPolicy('[::1]:7676')).toContain('wss://[::1]:7676');
    for (const host of ['evil.test; script-src *', 'a b', undefined, "x' 'unsafe-inline"]) {
      expect(contentSecurityPolicy(host)).toContain("connect-src 'self';");
    }
  });
});
