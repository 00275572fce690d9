import { X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { errorCode, useEngine } from '../support/engine.js';

/** GET /lab/certificate.pem: what a teammate's client needs to trust the LAN port, with no credentials. */
describe('the LAN certificate', () => {
  const lab = useEngine({ lanPort: 0 });
  it('is 404 with the error body while LAN sharing never made one', async () => {
    const r = await lab.c.call('GET', '/lab/certificate.pem');
    expect(r.status).toBe(404);
    expect(errorCode(r)).toBe('certificate_not_found');
    expect(r.body.error.message).toMatch(/LAN sharing/);
  });

  it('is served without credentials once LAN sharing is on, as PEM, and its SHA-256 is the fingerprint in the lab settings', async () => {
    const on = await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { lanSharing: true } });
    expect(on.status).toBe(200);
    const r = await fetch(`${lab.t.api}/lab/certificate.pem`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/x-pem-file/);
    expect(r.headers.get('content-disposition')).toBe('attachment; filename="benchtop-lan-certificate.pem"');
    const pem = await r.text();
    expect(pem).toMatch(/^-----BEGIN CERTIFICATE-----/);
    expect(new X509Certificate(pem).fingerprint256).toBe(on.body.lanSharing.certificateSha256);
    // Switched off again, the certificate stays the lab's: the next time it is on, teammates trust the same one.
    await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { lanSharing: false } });
    expect((await lab.c.call('GET', '/lab/certificate.pem')).status).toBe(200);
  });

  it('is in the OpenAPI document, tagged Extensions, public', async () => {
    const doc = (await lab.c.call('GET', '/openapi.json')).body;
    const op = doc.paths['/api/v1/lab/certificate.pem'].get;
    expect(op.tags).toEqual(['Extensions']);
    expect(op.security ?? []).toEqual([]);
    expect(Object.keys(op.responses).sort()).toEqual(['200', '404']);
    expect(Object.keys(op.responses['200'].content)).toEqual(['application/x-pem-file']);
  });
});
