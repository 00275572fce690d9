import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer, type Server } from 'node:net';
import { X509Certificate } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LAN_CERTIFICATE_FILE, LAN_KEY_FILE } from '../../src/main/engine/api/lan-server.js';
import { client, errorCode, startEngine, type TestEngine } from '../support/engine.js';

let t: TestEngine;
let c: ReturnType<typeof client>;
let owner: string;

beforeAll(async () => {
  t = await startEngine({ lanPort: 0 });
  c = client(t.api);
  owner = await c.login();
});
afterAll(async () => {
  await t.stop();
});

interface TlsReply {
  status: number;
  body: string;
  fingerprint256: string;
}

/** A GET over TLS to the LAN port on loopback, trusting any certificate, reporting the one the server presented. */
function httpsGet(port: number, path: string, token?: string): Promise<TlsReply> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: '127.0.0.1', port, path, rejectUnauthorized: false, agent: false, headers: token ? { authorization: `Bearer ${token}` } : {} },
      (res) => {
        const fingerprint256 = (res.socket as import('node:tls').TLSSocket).getPeerCertificate().fingerprint256;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode!, body, fingerprint256 }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** A plain HTTP GET: resolves with a status if anything answered in HTTP, or with the connection's error. */
function plainGet(port: number, path: string): Promise<{ status?: number; error?: string }> {
  return new Promise((resolve) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, agent: false, timeout: 5000 }, (res) => {
      res.resume();
      resolve({ status: res.statusCode });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? error.message }));
    req.end();
  });
}

const settings = async () => (await c.call('GET', '/lab/settings', { token: owner })).body;

describe('LAN sharing', () => {
  let port = 0;
  let fingerprint = '';

  it('enabled: the same API over HTTPS on the LAN port, with the certificate whose fingerprint is reported', async () => {
    const r = await c.call('PATCH', '/lab/settings', { token: owner, body: { lanSharing: true } });
    expect(r.status).toBe(200);
    const lan = r.body.lanSharing;
    expect(lan.enabled).toBe(true);
    expect(lan.port).toBeGreaterThan(0);
    expect(lan.certificateSha256).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
    expect(lan.urls.length).toBeGreaterThan(0);
    for (const url of lan.urls) expect(url).toMatch(new RegExp(`^https://[^/]+:${lan.port}$`));
    expect(lan.urls.at(-1)).toBe(`https://${hostname()}:${lan.port}`);
    port = lan.port;
    fingerprint = lan.certificateSha256;

    const health = await httpsGet(port, '/api/v1/health');
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body)).toMatchObject({ status: 'ok' });
    expect(health.fingerprint256).toBe(fingerprint);
    // The whole API, with its authentication, not only a health page.
    const me = await httpsGet(port, '/api/v1/me', owner);
    expect(JSON.parse(me.body)).toMatchObject({ labOwner: true });
    expect((await httpsGet(port, '/api/v1/me')).status).toBe(401);
    // Localhost stays plain HTTP on its own port.
    expect((await c.call('GET', '/health')).status).toBe(200);
  });

  it('never serves plain HTTP on the LAN port', async () => {
    const plain = await plainGet(port, '/api/v1/health');
    expect(plain.status).toBeUndefined();
    expect(plain.error).toBeDefined();
  });

  it('keeps its key 0600 in the data dir, and its certificate names this machine', () => {
    expect(statSync(join(t.dataDir, LAN_KEY_FILE)).mode & 0o777).toBe(0o600);
    const certificate = new X509Certificate(readFileSync(join(t.dataDir, LAN_CERTIFICATE_FILE)));
    expect(certificate.fingerprint256).toBe(fingerprint);
    expect(certificate.checkHost(hostname())).toBe(hostname());
    expect(certificate.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(Date.parse(certificate.validTo)).toBeGreaterThan(Date.now() + 365 * 86_400_000);
  });

  it('a restart re-enables it, with the same certificate', async () => {
    t = await t.restart();
    c = client(t.api);
    owner = await c.login();
    const lan = (await settings()).lanSharing;
    expect(lan.enabled).toBe(true);
    expect(lan.certificateSha256).toBe(fingerprint);
    port = lan.port;
    expect((await httpsGet(port, '/api/v1/health')).fingerprint256).toBe(fingerprint);
  });

  it('disabled: the port refuses connections, and the certificate is kept for next time', async () => {
    const r = await c.call('PATCH', '/lab/settings', { token: owner, body: { lanSharing: false } });
    expect(r.status).toBe(200);
    expect(r.body.lanSharing).toMatchObject({ enabled: false, urls: [], certificateSha256: fingerprint });
    await expect(httpsGet(port, '/api/v1/health')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect((await plainGet(port, '/api/v1/health')).error).toBe('ECONNREFUSED');
    // Disabling twice is no error.
    expect((await c.call('PATCH', '/lab/settings', { token: owner, body: { lanSharing: false } })).status).toBe(200);
  });

  it('only the lab owner may switch it (403), and a member cannot even read it', async () => {
    const user = await c.signup('teammate@lab.test');
    const r = await c.call('PATCH', '/lab/settings', { token: user.token, body: { lanSharing: true } });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('not_lab_owner');
    expect((await settings()).lanSharing.enabled).toBe(false);
  });

  it('a LAN port already taken: the lab still starts, and turning it on is a 4xx that says so', async () => {
    expect((await c.call('PATCH', '/lab/settings', { token: owner, body: { lanSharing: true } })).body.lanSharing.enabled).toBe(true);
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '0.0.0.0', resolve));
    const taken = (blocker.address() as import('node:net').AddressInfo).port;
    const other = await t.restart({ lanPort: taken });
    try {
      const oc = client(other.api);
      const token = await oc.login();
      expect((await oc.call('GET', '/lab/settings', { token })).body.lanSharing.enabled).toBe(false);
      const r = await oc.call('PATCH', '/lab/settings', { token, body: { lanSharing: true } });
      expect(r.status).toBe(409);
      expect(errorCode(r)).toBe('lan_port_unavailable');
      expect((await oc.call('GET', '/lab/settings', { token })).body.lanSharing.enabled).toBe(false);
    } finally {
      t = other;
      c = client(t.api);
      owner = await c.login();
      await new Promise((resolve) => blocker.close(resolve));
    }
  });
});
