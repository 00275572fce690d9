import { request as httpsRequest } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startEngine, type TestEngine } from '../support/engine.js';

let t: TestEngine;
let c: ReturnType<typeof client>;
let owner: string;
let lanUrls: string[];

beforeAll(async () => {
  t = await startEngine({ lanPort: 0 });
  c = client(t.api);
  owner = await c.login();
  const r = await c.call('PATCH', '/lab/settings', { token: owner, body: { lanSharing: true, signupOpen: false } });
  expect(r.status).toBe(200);
  lanUrls = r.body.lanSharing.urls;
});
afterAll(() => t?.stop());

/**
 * A request to the LAN port as a teammate's browser makes it: to the LAN origin `origin` (sent as Host), over TLS on
 * loopback, since the test cannot rely on reaching this machine's LAN address from itself.
 */
function overLan(origin: string, method: string, path: string, options: { token?: string; body?: unknown } = {}): Promise<{ status: number; body: any; type: string }> {
  const url = new URL(origin);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: url.port,
        method,
        path,
        rejectUnauthorized: false,
        agent: false,
        headers: {
          host: url.host,
          ...(options.token ? { authorization: `Bearer ${options.token}` } : {}),
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => {
          const type = String(res.headers['content-type'] ?? '');
          resolve({ status: res.statusCode!, body: type.includes('json') ? JSON.parse(text) : text, type });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('an invitation link with LAN sharing on', () => {
  it('carries the LAN HTTPS origin for an admin on loopback, and the origin an admin came by over the LAN', async () => {
    expect(lanUrls.length).toBeGreaterThan(0);
    const orgId = await c.createOrganization(owner, 'Mobile team');
    const r = await c.call('POST', `/organizations/${orgId}/invitations`, { token: owner, body: { email: 'dana@lab.test', role: 'readwrite' } });
    expect(r.status).toBe(201);
    expect(r.body.link).toMatch(new RegExp(`^${lanUrls[0]}/join/[A-Za-z0-9_-]{43}$`));

    // An admin reading the list over the LAN by the machine's name gets links at that name.
    const byName = lanUrls.at(-1)!;
    const listed = await overLan(byName, 'GET', `/api/v1/organizations/${orgId}/invitations`, { token: owner });
    expect(listed.status).toBe(200);
    expect(listed.body.data[0].link).toBe(`${byName}${new URL(r.body.link).pathname}`);
  });

  it('opens for the invitee over the LAN: the page, who invited them, and a sign-up while sign-up is invitation-only', async () => {
    const orgId = await c.createOrganization(owner, 'QA team');
    const link: string = (await c.call('POST', `/organizations/${orgId}/invitations`, { token: owner, body: { email: 'eli@lab.test', role: 'readonly' } })).body.link;
    const { origin, pathname } = new URL(link);
    const secret = pathname.split('/').at(-1)!;

    const page = await overLan(origin, 'GET', pathname);
    expect(page.status).toBe(200);
    expect(page.type).toContain('text/html');
    const shown = await overLan(origin, 'GET', `/api/v1/auth/invitations/${secret}`);
    expect(shown.body).toMatchObject({ organizationName: 'QA team', email: 'eli@lab.test', role: 'readonly', invitedByEmail: 'owner@lab.test' });

    const signup = await overLan(origin, 'POST', '/api/v1/auth/signup', { body: { email: 'eli@lab.test', password: 'password-123', invitation: secret } });
    expect(signup.status, JSON.stringify(signup.body)).toBe(201);
    const orgs = await overLan(origin, 'GET', '/api/v1/organizations', { token: signup.body.token });
    expect(orgs.body.data.map((o: { id: string; role: string }) => [o.id, o.role])).toContainEqual([orgId, 'readonly']);
  });
});
