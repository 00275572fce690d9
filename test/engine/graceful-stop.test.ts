import { mkdtempSync, rmSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { call } from '../support/engine.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const dirs: string[] = [];
const running: ServeProcess[] = [];
const sockets: Socket[] = [];
afterEach(() => {
  for (const s of sockets.splice(0)) s.destroy();
  for (const p of running.splice(0)) p.child.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function serve(env: Record<string, string> = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-stop-'));
  dirs.push(dir);
  const p = await startServeProcess({ BENCHTOP_DATA_DIR: dir, BENCHTOP_OWNER_EMAIL: 'o@lab.test', BENCHTOP_OWNER_PASSWORD: 'password-1', ...env });
  running.push(p);
  return p;
}

/** A raw connection to the engine that has written `text` and then goes quiet. */
async function rawSocket(api: string, text: string): Promise<Socket> {
  const { hostname, port } = new URL(api);
  const socket = connect(Number(port), hostname);
  sockets.push(socket);
  socket.on('error', () => undefined);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  socket.write(text);
  // Let the engine read what was sent before the signal arrives.
  await new Promise((r) => setTimeout(r, 200));
  return socket;
}

/** SIGTERM, then how long the process took to exit (or Infinity after `limitMs`). */
async function stopTime(p: ServeProcess, limitMs = 15_000): Promise<{ ms: number; code: number | null }> {
  const started = Date.now();
  p.child.kill('SIGTERM');
  const result = await Promise.race([p.exited, new Promise<null>((r) => setTimeout(() => r(null), limitMs))]);
  return { ms: result ? Date.now() - started : Infinity, code: result ? result.code : null };
}

describe('a graceful stop (SIGTERM) ends within seconds whatever clients do', () => {
  it('with a client holding a half-sent request', async () => {
    const p = await serve();
    await rawSocket(p.api, 'GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    const { ms, code } = await stopTime(p);
    expect(ms).toBeLessThan(8000);
    expect(code).toBe(0);
  });

  it('with a client that stalls in the middle of an asset upload', async () => {
    const p = await serve();
    const token = (await call(p.api, 'POST', '/auth/login', { body: { email: 'o@lab.test', password: 'password-1' } })).body.token;
    const result = (await call(p.api, 'POST', '/test-results', { token, body: { name: 'slow' } })).body.id;
    const boundary = 'benchtop-slow';
    const head = `--${boundary}\r\nContent-Disposition: form-data; name="name"\r\n\r\ntrace.zip\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="trace.zip"\r\nContent-Type: application/zip\r\n\r\n`;
    await rawSocket(p.api,
      `POST /api/v1/test-results/${result}/assets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nContent-Length: 10000000\r\n\r\n${head}${'x'.repeat(64 * 1024)}`);
    const { ms, code } = await stopTime(p);
    expect(ms).toBeLessThan(8000);
    expect(code).toBe(0);
  });

  it('still lets a request in flight finish within the grace', async () => {
    const p = await serve();
    const socket = await rawSocket(p.api, 'GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    let answer = '';
    socket.on('data', (d) => (answer += d));
    const { code } = await stopTime(p);
    expect(code).toBe(0);
    expect(answer).toMatch(/^HTTP\/1.1 200/);
  });
});
