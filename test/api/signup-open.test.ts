import { describe, expect, it } from 'vitest';
import { client, errorCode, useEngine } from '../support/engine.js';

/**
 * The sign-in page asks, before anyone signs in, whether it may offer sign-up: GET /health says `signupOpen`, public
 * as /health is, and follows the lab owner's setting at once. It says what POST /auth/signup will do.
 */
const lab = useEngine();

describe('GET /health says whether sign-up is open', () => {
  it('follows the lab setting, without credentials, and agrees with what sign-up answers', async () => {
    const anyone = client(lab.t.api);
    const open = await anyone.call('GET', '/health');
    expect(open.status).toBe(200);
    expect(open.body).toMatchObject({ status: 'ok', signupOpen: true });

    expect((await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { signupOpen: false } })).status).toBe(200);
    expect((await anyone.call('GET', '/health')).body.signupOpen).toBe(false);
    const refused = await anyone.call('POST', '/auth/signup', { body: { email: 'walk-in@lab.test', password: 'password-123' } });
    expect(refused.status).toBe(403);
    errorCode(refused);

    expect((await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { signupOpen: true } })).status).toBe(200);
    expect((await anyone.call('GET', '/health')).body.signupOpen).toBe(true);
  });

  it('is in the OpenAPI document', async () => {
    const doc = (await lab.c.call('GET', '/openapi.json')).body;
    const health = doc.paths['/api/v1/health'].get.responses['200'].content['application/json'].schema;
    expect(JSON.stringify(health)).toContain('"signupOpen"');
    expect(health.required ?? []).toContain('signupOpen');
  });
});
