import { randomBytes } from 'node:crypto';
import { readdirSync, statSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { useEngine } from '../support/engine.js';
import { waitFor } from '../support/lab.js';

// A small idle limit, so that a stall is seen in about a second; two uploads in flight per caller.
// Two seconds: with one, a loaded machine could clean the staged part up before the test had looked at it.
const IDLE_SECONDS = 2;
const lab = useEngine({ uploadIdleSeconds: IDLE_SECONDS, uploadsPerCaller: 2 });

const GIB = 1024 ** 3;
const CHUNK = randomBytes(1024 * 1024);
const staging = () => join(lab.t.dataDir, 'blobs', 'staging');
/** Bytes held in the blob store's staging area: what stalled uploads pin on disk. */
const stagedBytes = () => readdirSync(staging()).reduce((sum, name) => sum + statSync(join(staging(), name)).size, 0);

/** An upload over a raw socket that sends its head and `mib` MiB of its body, then nothing: what a stalled client does. */
interface Stalled {
  socket: Socket;
  /** When the last byte was sent. */
  sentAt: number;
  /** The whole answer, once the engine has closed the connection. */
  closed: Promise<{ status: number; body: any; at: number }>;
}

async function stall(method: 'POST' | 'PUT', path: string, headers: Record<string, string | number>, head: Buffer, mib: number): Promise<Stalled> {
  const { hostname, port } = new URL(lab.t.api);
  const socket = connect(Number(port), hostname);
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  const chunks: Buffer[] = [];
  socket.on('data', (d: Buffer) => chunks.push(d));
  socket.on('error', () => undefined);
  const closed = new Promise<{ status: number; body: any; at: number }>((resolve) => {
    socket.once('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [top = '', ...rest] = text.split('\r\n\r\n');
      let body: unknown = rest.join('\r\n\r\n');
      try {
        body = JSON.parse(body as string);
      } catch {
        /* not JSON: the assertions say so */
      }
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(top)?.[1] ?? 0), body, at: Date.now() });
    });
  });
  const lines = [`${method} ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  socket.write(`${lines.join('\r\n')}\r\n\r\n`);
  socket.write(head);
  for (let i = 0; i < mib; i++) {
    if (!socket.write(CHUNK)) await new Promise((resolve) => socket.once('drain', resolve));
  }
  return { socket, sentAt: Date.now(), closed };
}

const BOUNDARY = 'benchtopstall';
/** The start of a form whose file part then breaks off: the name field, and the file part's head. */
const formHead = Buffer.from(
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="name"\r\n\r\ntrace.zip\r\n` +
    `--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="trace.zip"\r\nContent-Type: application/zip\r\n\r\n`,
);

async function stalledAsset(token: string, testResultId: string, mib = 8): Promise<Stalled> {
  return stall('POST', `/api/v1/test-results/${testResultId}/assets`, {
    authorization: `Bearer ${token}`,
    'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
    'content-length': GIB,
  }, formHead, mib);
}

const expectStalledAnswer = async (upload: Stalled, status: number) => {
  const answer = await upload.closed;
  expect(answer.status).toBe(status);
  expect(answer.body.error.code).toBe('upload_stalled');
  expect(typeof answer.body.error.message).toBe('string');
  // Ended within the idle limit plus a margin for a busy machine.
  expect(answer.at - upload.sentAt).toBeLessThan(IDLE_SECONDS * 1000 + 3000);
};

describe('a stalled upload (issue 22.2)', () => {
  it('of a test-result asset is ended, its staging file removed, and answered with the error body', async () => {
    const result = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'stalled run' } });
    const upload = await stalledAsset(lab.owner, result.body.id);
    // The bytes that arrived are on disk while the client is silent...
    await waitFor('the staged part', () => stagedBytes() >= 8 * 1024 * 1024);
    // ...and gone once it has been silent for the idle limit; the operation declares no 400, so its nearest: 404.
    await expectStalledAnswer(upload, 404);
    expect(stagedBytes()).toBe(0);
    // Nothing was stored.
    const assets = await lab.c.call('GET', `/test-results/${result.body.id}/assets`, { token: lab.owner });
    expect(assets.body.data).toEqual([]);
  });

  it('to a signed URL is ended the same way, with 400 upload_stalled', async () => {
    const created = await lab.c.call('POST', '/files', { token: lab.owner, body: { filename: 'big.apk', filesize: GIB, sha256: 'c'.repeat(64) } });
    expect(created.status).toBe(201);
    const url = new URL(created.body.upload.url);
    const upload = await stall('PUT', `${url.pathname}${url.search}`, { 'content-type': 'application/octet-stream', 'content-length': GIB }, Buffer.alloc(0), 8);
    await waitFor('the staged part', () => stagedBytes() >= 8 * 1024 * 1024);
    await expectStalledAnswer(upload, 400);
    expect(stagedBytes()).toBe(0);
  });

  it('is not ended while bytes keep arriving, however slowly', async () => {
    const result = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'slow run' } });
    const content = Buffer.from('slow but steady');
    const { hostname, port } = new URL(lab.t.api);
    const body = Buffer.concat([formHead, content, Buffer.from(`\r\n--${BOUNDARY}--\r\n`)]);
    const socket = connect(Number(port), hostname);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    let answer = '';
    socket.on('data', (d) => (answer += d));
    socket.write(`POST /api/v1/test-results/${result.body.id}/assets HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAuthorization: Bearer ${lab.owner}\r\n` +
      `Content-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`);
    // A piece every half of the idle limit: 2.5 idle limits in all.
    const pieces = 5;
    const size = Math.ceil(body.length / pieces);
    for (let i = 0; i < pieces; i++) {
      socket.write(body.subarray(i * size, (i + 1) * size));
      await new Promise((resolve) => setTimeout(resolve, (IDLE_SECONDS * 1000) / 2));
    }
    await waitFor('the answer', () => /\r\n\r\n/.test(answer));
    socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 201/);
  });

  it('counts against its caller: a third upload in flight is refused at once, and the first two do not hold it after their end', async () => {
    const key = await lab.c.createKey(lab.owner);
    const result = await lab.c.call('POST', '/test-results', { token: key, body: { name: 'bounded run' } });
    const first = await stalledAsset(key, result.body.id, 1);
    const second = await stalledAsset(key, result.body.id, 1);
    const refused = await stalledAsset(key, result.body.id, 0);
    const answer = await refused.closed;
    expect(answer.body.error.code).toBe('too_many_uploads');
    // The operation declares neither 429, 403 nor 400: its nearest declared status.
    expect(answer.status).toBe(404);
    expect(answer.at - refused.sentAt).toBeLessThan(IDLE_SECONDS * 1000);
    // Another caller is not held by this one's uploads.
    const other = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'other run' } });
    const form = new FormData();
    form.append('name', 'a.txt');
    form.append('file', new Blob(['hello']), 'a.txt');
    const ok = await fetch(`${lab.t.api}/test-results/${other.body.id}/assets`, { method: 'POST', headers: { authorization: `Bearer ${lab.owner}` }, body: form });
    expect(ok.status).toBe(201);
    await expectStalledAnswer(first, 404);
    await expectStalledAnswer(second, 404);
    const again = new FormData();
    again.append('name', 'b.txt');
    again.append('file', new Blob(['again']), 'b.txt');
    const after = await fetch(`${lab.t.api}/test-results/${result.body.id}/assets`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: again });
    expect(after.status).toBe(201);
  });
});
