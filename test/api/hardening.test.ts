import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect } from 'node:net';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode, startEngine, type Reply, type TestEngine, useEngine } from '../support/engine.js';

const lab = useEngine();

/** `{"a": [[[...]]]}` with `levels` arrays: about 10 KB at 5000 levels, under any body limit. */
const nestedText = (levels: number) => `{"a":${'['.repeat(levels)}${']'.repeat(levels)}}`;
const nested = (levels: number): unknown => JSON.parse(nestedText(levels));

describe('deeply nested JSON (issue 13.4)', () => {
  it('in a test result\'s stats is a declared 400 json_too_deep, not a 500', async () => {
    const r = await lab.c.call('POST', '/test-results', { token: lab.owner, raw: `{"name":"deep","stats":${nestedText(5000)}}` });
    expect(r.status).toBe(400);
    expect(errorCode(r)).toBe('json_too_deep');
  });

  it('in a test result\'s git on update is a 400 too', async () => {
    const created = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'run' } });
    const r = await lab.c.call('PATCH', `/test-results/${created.body.id}`, { token: lab.owner, raw: `{"git":${nestedText(5000)}}` });
    expect(r.status).toBe(400);
    expect(errorCode(r)).toBe('json_too_deep');
  });

  it('in a chat\'s metadata is a 400', async () => {
    const session = (await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id;
    const r = await lab.c.call('POST', `/sessions/${session}/chats`, { token: lab.owner, raw: `{"title":"x","metadata":${nestedText(5000)}}` });
    expect(r.status).toBe(400);
    expect(errorCode(r)).toBe('json_too_deep');
  });

  it('inside a string counts for nothing, and ordinary nesting is taken as sent', async () => {
    const stats = { text: '['.repeat(5000), deep: nested(40) };
    const r = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'fine', stats } });
    expect(r.status).toBe(201);
    expect(r.body.stats).toEqual(stats);
  });
});

/** One request with a chosen Host header, which fetch() does not let a caller set. */
function withHost(url: string, method: string, host: string | undefined, options: { token?: string; body?: unknown; from?: string } = {}): Promise<Reply> {
  const target = new URL(url);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  const headers: Record<string, string> = host ? { host } : {};
  if (options.token) headers.authorization = `Bearer ${options.token}`;
  if (body) headers['content-type'] = 'application/json';
  const request = target.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      { host: target.hostname, port: target.port, path: target.pathname + target.search, method, headers, agent: false, rejectUnauthorized: false, localAddress: options.from },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => {
          let parsed: unknown = text;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode!, body: parsed, headers: new Headers(res.headers as Record<string, string>) });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe('the Host header, against DNS rebinding (issue 13.3)', () => {
  const port = () => new URL(lab.t.api).port;

  it('refuses a name the lab is not reached by: no account made, no fleet read', async () => {
    const signup = await withHost(`${lab.t.api}/auth/signup`, 'POST', `attacker.example:${port()}`, { body: { email: 'victim@x.test', password: 'password-123' } });
    expect(signup.status).toBe(403);
    expect(errorCode(signup)).toBe('host_not_allowed');
    expect((await lab.c.call('POST', '/auth/login', { body: { email: 'victim@x.test', password: 'password-123' } })).status).toBe(401);

    const fleet = await withHost(`${lab.t.api}/fleet/devices`, 'GET', `attacker.example:${port()}`, { token: lab.owner });
    expect(fleet.status).toBeGreaterThanOrEqual(400);
    expect(fleet.status).toBeLessThan(500);
    expect(errorCode(fleet)).toBe('host_not_allowed');
    // An operation that declares neither 403 nor 404 gets the nearest status it declares.
    const me = await withHost(`${lab.t.api}/me`, 'GET', 'attacker.example', { token: lab.owner });
    expect(me.status).toBe(401);
    expect(errorCode(me)).toBe('host_not_allowed');
    // The GUI and unknown paths too: a rebinding page reads nothing.
    const gui = await withHost(lab.t.api.replace('/api/v1', '/'), 'GET', 'attacker.example');
    expect(gui.status).toBe(403);
    expect(errorCode(gui)).toBe('host_not_allowed');
  });

  it('refuses a look-alike of a loopback name', async () => {
    for (const host of ['localhost.attacker.example', '127.0.0.1.nip.io', 'evil-localhost', 'localhost:7676@attacker.example']) {
      const r = await withHost(`${lab.t.api}/health`, 'GET', host);
      expect(r.status, host).toBe(403);
    }
  });

  it('accepts the loopback names and addresses, any IP address, and this machine\'s host name', async () => {
    for (const host of [`127.0.0.1:${port()}`, `localhost:${port()}`, 'LOCALHOST', `[::1]:${port()}`, 'app.localhost', '10.1.2.3:7677', '[fe80::1]', hostname(), `${hostname()}:7677`]) {
      const r = await withHost(`${lab.t.api}/me`, 'GET', host, { token: lab.owner });
      expect(r.status, host).toBe(200);
    }
  });

  it('accepts the names the lab owner adds in BENCHTOP_ALLOWED_HOSTS', async () => {
    const other = await startEngine({ allowedHosts: ['lab.example.com', '.devices.example.org'] });
    try {
      for (const host of ['lab.example.com', 'LAB.example.com:7676', 'phones.devices.example.org', 'devices.example.org']) {
        expect((await withHost(`${other.api}/health`, 'GET', host)).status, host).toBe(200);
      }
      expect((await withHost(`${other.api}/health`, 'GET', 'example.com')).status).toBe(403);
      expect((await withHost(`${other.api}/health`, 'GET', 'notlab.example.com')).status).toBe(403);
    } finally {
      await other.stop();
    }
  });

  it('applies on the LAN port as on loopback: its advertised names pass, others are refused', async () => {
    const lanEngine = await startEngine({ lanPort: 0 });
    try {
      const lc = client(lanEngine.api);
      const token = await lc.login();
      const lan = (await lc.call('PATCH', '/lab/settings', { token, body: { lanSharing: true } })).body.lanSharing;
      expect(lan.enabled).toBe(true);
      const base = `https://127.0.0.1:${lan.port}/api/v1`;
      for (const url of lan.urls as string[]) {
        const host = new URL(url).host;
        expect((await withHost(`${base}/health`, 'GET', host)).status, host).toBe(200);
      }
      const refused = await withHost(`${base}/auth/signup`, 'POST', 'attacker.example', { body: { email: 'v2@x.test', password: 'password-123' } });
      expect(refused.status).toBe(403);
      expect(errorCode(refused)).toBe('host_not_allowed');
    } finally {
      await lanEngine.stop();
    }
  });
});

/** A request from another loopback address (the whole of 127/8 is this machine): another client, as the engine sees it. */
const from = (address: string, method: string, path: string, options: { token?: string; body?: unknown } = {}) =>
  withHost(`${tt.api}${path}`, method, undefined, { ...options, from: address });
let tt: TestEngine;

describe('throttling of failed logins, sign-ups and invitation acceptances (issue 13.2)', () => {
  beforeAll(async () => {
    tt = await startEngine();
  });
  afterAll(() => tt.stop());
  const login = (address: string, email: string, password: string) => from(address, 'POST', '/auth/login', { body: { email, password } });

  it('holds an account to 10 quick failures, then answers 429 with Retry-After, and lets it in once that has passed', async () => {
    const lc = client(tt.api);
    await lc.signup('target@lab.test', 'right-password');
    for (let i = 0; i < 10; i++) expect((await login('127.0.0.2', 'target@lab.test', `guess-${i}`)).status).toBe(401);
    const held = await login('127.0.0.2', 'target@lab.test', 'guess-10');
    expect(held.status).toBe(429);
    expect(errorCode(held)).toBe('too_many_attempts');
    const retryAfter = Number(held.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Held means not checked: the right password from a new address does not get in (nor learn it was right).
    expect((await login('127.0.0.3', 'TARGET@lab.test', 'right-password')).status).toBe(429);
    tt.clock.offsetMs += retryAfter * 1000;
    expect((await login('127.0.0.3', 'target@lab.test', 'right-password')).status).toBe(200);
  });

  it('does not lock the owner out: an address that logged in before stays in while others guess', async () => {
    const lc = client(tt.api);
    await lc.signup('owner2@lab.test', 'owner-password');
    expect((await login('127.0.0.4', 'owner2@lab.test', 'owner-password')).status).toBe(200);
    for (let i = 0; i < 12; i++) await login('127.0.0.5', 'owner2@lab.test', `guess-${i}`);
    expect((await login('127.0.0.5', 'owner2@lab.test', 'guess')).status).toBe(429);
    expect((await login('127.0.0.4', 'owner2@lab.test', 'owner-password')).status).toBe(200);
  });

  it('holds one address to 30 quick failures across every account it tries', async () => {
    // Each failed login costs a password hash: the clock stands still, so that no attempt refills meanwhile.
    tt.clock.frozenAt = Date.now();
    for (let i = 0; i < 30; i++) expect((await login('127.0.0.6', `nobody-${i}@lab.test`, 'x-password')).status).toBe(401);
    const held = await login('127.0.0.6', 'nobody-31@lab.test', 'x-password');
    expect(held.status).toBe(429);
    expect(held.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await login('127.0.0.7', 'nobody-31@lab.test', 'x-password')).status).toBe(401);
    tt.clock.frozenAt = undefined;
  });

  it('holds sign-ups that fail (an email already taken) the same way', async () => {
    tt.clock.frozenAt = Date.now();
    for (let i = 0; i < 30; i++) expect((await from('127.0.0.8', 'POST', '/auth/signup', { body: { email: 'target@lab.test', password: 'password-123' } })).status).toBe(409);
    const held = await from('127.0.0.8', 'POST', '/auth/signup', { body: { email: 'fresh@lab.test', password: 'password-123' } });
    expect(held.status).toBe(429);
    expect(errorCode(held)).toBe('too_many_attempts');
    expect(held.headers.get('retry-after')).toMatch(/^\d+$/);
    tt.clock.frozenAt = undefined;
  });

  it('checks a burst of 200 wrong passwords sent at once no more often than the policy allows (issue 22.1)', async () => {
    const lc = client(tt.api);
    await lc.signup('burst@lab.test', 'right-password');
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => login('127.0.0.20', 'burst@lab.test', `guess-${i}`)));
    const statuses = answers.map((r) => r.status);
    // A 401 is an attempt whose password was checked against the hash; a 429 was refused before it.
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(10);
    expect(statuses.filter((s) => s !== 401 && s !== 429)).toEqual([]);
    // The burst leaves no lockout behind: the right password from another address waits seconds, not minutes.
    const held = await login('127.0.0.21', 'burst@lab.test', 'right-password');
    const retryAfter = held.status === 429 ? Number(held.headers.get('retry-after')) : 0;
    expect(retryAfter).toBeLessThanOrEqual(10);
    tt.clock.offsetMs += retryAfter * 1000;
    expect((await login('127.0.0.21', 'burst@lab.test', 'right-password')).status).toBe(200);
  });

  it('holds failed invitation acceptances, with the nearest status the operation declares (403)', async () => {
    const lc = client(tt.api);
    const user = await lc.signup('joiner@lab.test');
    for (let i = 0; i < 10; i++) {
      const r = await from('127.0.0.9', 'POST', `/invitations/${randomUUID()}/accept`, { token: user.token });
      expect(r.status).toBe(404);
    }
    const held = await from('127.0.0.9', 'POST', `/invitations/${randomUUID()}/accept`, { token: user.token });
    expect(held.status).toBe(403);
    expect(errorCode(held)).toBe('too_many_attempts');
    expect(held.headers.get('retry-after')).toMatch(/^\d+$/);
  });
});

/** Raw bytes to the engine, and the raw answer up to the end of the connection or 3 s. */
async function rawExchange(api: string, text: string): Promise<{ status: number; headers: string; body: any }> {
  const { hostname: host, port } = new URL(api);
  const socket = connect(Number(port), host);
  let answer = '';
  socket.setEncoding('utf8');
  socket.on('data', (d) => (answer += d));
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write(text);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 3000);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    // One complete answer is enough: the rest of the connection does not matter.
    socket.on('data', () => {
      const [head, body] = answer.split('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(head ?? '');
      if (length && body !== undefined && Buffer.byteLength(body) >= Number(length[1])) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  socket.destroy();
  const [head = '', ...rest] = answer.split('\r\n\r\n');
  const bodyText = rest.join('\r\n\r\n');
  let body: unknown = bodyText;
  try {
    body = JSON.parse(bodyText);
  } catch {
    /* not JSON */
  }
  return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head, body };
}

const errorBody = (body: any) => {
  expect(Object.keys(body ?? {})).toEqual(['error']);
  expect(body.error.code).toMatch(/^[a-z0-9_]+$/);
  expect(typeof body.error.message).toBe('string');
  return body.error.code as string;
};

describe('router and parser errors keep the error contract (issue 13.5)', () => {
  let session: string;
  beforeAll(async () => {
    session = (await lab.c.call('POST', '/sessions', { token: lab.owner })).body.id;
  });

  it('a path parameter over 100 characters (a too-long serial) is simply not found', async () => {
    const serial = 'x'.repeat(150);
    for (const path of [`/sessions/${session}/devices/${serial}`, `/sessions/${session}/devices/${serial}/screenshot`, `/sessions/${'a'.repeat(500)}`]) {
      const r = await lab.c.call('GET', path, { token: lab.owner });
      expect(r.status, path).toBe(404);
      // The operation answers, not the router: the route is there, the resource is not.
      expect(errorBody(r.body), path).not.toBe('route_not_found');
    }
    // DELETE /organizations/{id} declares no 404: a too-long id gets a status it declares.
    const r = await lab.c.call('DELETE', `/organizations/${'a'.repeat(150)}`, { token: lab.owner });
    expect([401, 403, 409]).toContain(r.status);
    errorBody(r.body);
  });

  it('an undecodable percent-escape in the path is the nearest declared status, with the error body', async () => {
    const get = await rawExchange(lab.t.api, `GET /api/v1/sessions/%ff%fe HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${lab.owner}\r\nConnection: close\r\n\r\n`);
    expect(get.status).toBe(404);
    errorBody(get.body);
    // PATCH /organizations/{id} declares no 404 (nor 400 for this): the nearest it declares.
    const patch = await rawExchange(lab.t.api, `PATCH /api/v1/organizations/%ff HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${lab.owner}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`);
    expect([400, 401, 403, 409]).toContain(patch.status);
    errorBody(patch.body);
    const nowhere = await rawExchange(lab.t.api, 'GET /api/v1/%zz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(nowhere.status).toBe(404);
    errorBody(nowhere.body);
  });

  it('a 100 KB URL gets the error body and a status its operation declares', async () => {
    const r = await rawExchange(lab.t.api, `GET /api/v1/sessions/${'a'.repeat(100 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    expect([400, 401, 403, 404]).toContain(r.status);
    errorBody(r.body);
    const list = await rawExchange(lab.t.api, `GET /api/v1/test-results?x=${'a'.repeat(100 * 1024)} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`);
    // GET /test-results declares only 200 and 401.
    expect(list.status).toBe(401);
    errorBody(list.body);
  });

  it('a garbage request line gets a 400 with the error body', async () => {
    for (const line of ['GARBAGE\r\n\r\n', 'GET\r\n\r\n', '\x00\x01\x02 / HTTP/1.1\r\n\r\n', 'GET / HTTP/9.9\r\nHost: x\r\n\r\n']) {
      const r = await rawExchange(lab.t.api, line);
      expect(r.status, JSON.stringify(line)).toBe(400);
      errorBody(r.body);
    }
  });
});
