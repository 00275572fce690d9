import { PNG } from 'pngjs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type WebSocket from 'ws';
import { connectWs, refusedUpgrade, type WsOptions } from '../support/ws.js';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

interface Watcher {
  ws: WebSocket;
  /** Every message in order: text parsed as JSON, binary as a Buffer. */
  messages: unknown[];
  frames: Buffer[];
  /** Bytes of all frames so far. */
  bytes: number;
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens a live screen; rejects with the HTTP status if the upgrade is refused. */
function watch(url: string, options: WsOptions = {}): Promise<Watcher> {
  const { ws, refusal } = connectWs(url, options);
  const watcher: Watcher = {
    ws,
    messages: [],
    frames: [],
    bytes: 0,
    closed: new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() }))),
  };
  ws.on('message', (data: Buffer, isBinary) => {
    watcher.messages.push(isBinary ? data : JSON.parse(data.toString()));
    if (isBinary) {
      watcher.frames.push(data);
      watcher.bytes += data.length;
    }
  });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(watcher));
    ws.on('error', reject);
    void refusal.then((r) => reject(new Error(`refused: ${r.status} ${JSON.stringify(r.body)}`)));
  });
}

async function stop(watcher: Watcher): Promise<void> {
  watcher.ws.close();
  await watcher.closed;
}

const framesFor = (w: Watcher, n = 1) => waitFor(`${n} frames`, () => w.frames.length >= n);

const screenUrl = (lab: TestLab, session: string, serial: string, query: string) =>
  `${lab.engine.api.replace(/^http/, 'ws')}/sessions/${session}/devices/${serial}/screen${query}`;

describe.skipIf(!hasAdb)('live screen over a WebSocket', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let session: string;
  let serial: string;
  /** screencap services opened on the Pixel 7, from its transport log. */
  let screencaps = 0;

  const screen = (query: string, s = session, d = serial) => screenUrl(lab, s, d, query);

  beforeAll(async () => {
    // Uncapped, so that the backpressure test can push megabytes quickly; the cap has its own test below.
    lab = await startLab(
      // A phone minicap cannot capture: these tests cover the screencap fallback; test/fleet/minicap.test.ts covers minicap.
      [{ model: 'Pixel 7', minicap: false, log: (line) => void (line.includes('screencap') && screencaps++) }, { model: 'Pixel 5' }],
      { screenMaxFps: 0 },
    );
    c = client(lab.engine.api);
    owner = await c.login();
    ({ session, serial } = await allocateInUse(c, owner, 'Pixel 7'));
  }, 60_000);
  afterAll(() => lab?.stop());

  it('sends a hello, then binary frames that decode as PNGs of the phone\'s screen (token in the query)', async () => {
    const w = await watch(screen(`?token=${owner}`));
    await framesFor(w, 2);
    expect(w.messages[0]).toEqual({ type: 'hello', width: 720, height: 1280, frameWidth: 720, frameHeight: 1280, format: 'png', source: 'screencap' });
    expect(w.messages.slice(1).every((m) => Buffer.isBuffer(m))).toBe(true);
    const png = PNG.sync.read(w.frames.at(-1)!);
    expect([png.width, png.height]).toEqual([720, 1280]);
    await stop(w);
  });

  it('shows a tap made through the actions API in a later frame', async () => {
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'pressButton', button: 'HOME' } });
    const w = await watch(screen(`?token=${owner}`));
    await framesFor(w);
    const before = PNG.sync.read(w.frames.at(-1)!).data;
    const seen = w.frames.length;
    const r = await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'tap', x: 360, y: 700 } });
    expect(r.status).toBe(200);
    expect(lab.phone(serial).state.lastTap).toEqual({ x: 360, y: 700 });
    await waitFor('a frame that differs', () => w.frames.slice(seen).some((f) => !PNG.sync.read(f).data.equals(before)));
    await stop(w);
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'pressButton', button: 'HOME' } });
  });

  it('fans one capture loop out to two viewers, and stops capturing when the last one leaves', async () => {
    const a = await watch(screen(`?token=${owner}`));
    const b = await watch(screen(`?token=${owner}`));
    await framesFor(a);
    await framesFor(b);
    const [a0, b0, s0] = [a.frames.length, b.frames.length, screencaps];
    await sleep(1500);
    const [toA, toB, captured] = [a.frames.length - a0, b.frames.length - b0, screencaps - s0];
    expect(toA).toBeGreaterThan(5);
    expect(toB).toBeGreaterThan(5);
    // One loop sends each capture to both viewers; a loop per viewer would capture about toA + toB times.
    // (The slack is for a capture in flight at either end of the window.)
    expect(captured).toBeLessThanOrEqual(Math.max(toA, toB) + 2);
    await stop(a);
    await sleep(300);
    expect(b.frames.length).toBeGreaterThan(b0 + toB);
    await stop(b);
    await sleep(300);
    const idle = screencaps;
    await sleep(700);
    expect(screencaps).toBe(idle);
  });

  it('skips frames for a viewer that does not keep up instead of queueing them, and the others do not wait for it', async () => {
    const fast = await watch(screen(`?token=${owner}`));
    const slow = await watch(screen(`?token=${owner}`));
    await framesFor(fast);
    await framesFor(slow);
    slow.ws.pause();
    const [fast0, slow0, bytes0] = [fast.frames.length, slow.frames.length, fast.bytes];
    // More than the socket buffers between server and client hold (about 4 MB on Linux loopback), so that frames
    // queued for the slow viewer would show in its count.
    // A simulated phone encodes its frames on the same cores as everything else: a loaded machine takes longer.
    await waitFor('16 MB of frames to the fast viewer', () => fast.bytes - bytes0 > 16 * 2 ** 20, 60_000);
    slow.ws.resume();
    await sleep(200);
    const [toFast, toSlow] = [fast.frames.length - fast0, slow.frames.length - slow0];
    expect(toSlow).toBeGreaterThan(0);
    expect(toSlow).toBeLessThan(toFast * 0.75);
    await stop(fast);
    await stop(slow);
  }, 90_000);

  it('takes the bearer from the Authorization header or a bearer.<token> subprotocol too, and API keys as well as tokens', async () => {
    const key = await c.createKey(owner);
    const ways: Array<[string, WsOptions]> = [
      ['', { headers: { authorization: `Bearer ${owner}` } }],
      ['', { protocols: [`bearer.${owner}`] }],
      [`?token=${key}`, {}],
    ];
    for (const [query, options] of ways) {
      const w = await watch(screen(query), options);
      await framesFor(w);
      await stop(w);
    }
    // When the client offers another protocol beside its bearer, that one is chosen, not the token echoed back.
    const w = await watch(screen(''), { protocols: ['benchtop.screen', `bearer.${owner}`] });
    expect(w.ws.protocol).toBe('benchtop.screen');
    await stop(w);
  });

  it('401 before the upgrade without a valid bearer; no other route takes a token from the query', async () => {
    for (const query of ['', '?token=', '?token=mob_forged', `?token=${owner.slice(0, -6)}AAAAAA`]) {
      const r = await refusedUpgrade(screen(query));
      expect(r.status, query).toBe(401);
      expect(errorCode(r)).toBe('unauthorized');
    }
    expect((await refusedUpgrade(screen(''), { protocols: ['bearer.forged'] })).status).toBe(401);
    const r = await c.call('GET', `/sessions/${session}/devices/${serial}/screenshot?token=${owner}`);
    expect(r.status).toBe(401);
  });

  it('404 for another organization\'s session or an unknown serial; 403 for an organization the caller is not in', async () => {
    const other = await c.signup('other@live.test');
    const foreign = await refusedUpgrade(screen(`?token=${other.token}`));
    expect(foreign.status).toBe(404);
    expect(errorCode(foreign)).toBe('session_not_found');
    expect((await refusedUpgrade(screen(`?token=${owner}`, session, 'no-such-serial'))).status).toBe(404);
    const outsider = await refusedUpgrade(screen(`?token=${owner}&org=${other.personalOrgId}`));
    expect(outsider.status).toBe(403);
    expect(errorCode(outsider)).toBe('not_a_member');
    // X-Organization-Id, when a client can send it, wins over ?org=
    const personal = (await c.call('GET', '/organizations', { token: owner })).body.data[0].id;
    const w = await watch(screen(`?token=${owner}&org=${other.personalOrgId}`), { headers: { 'x-organization-id': personal } });
    await framesFor(w);
    await stop(w);
  });

  it('426 for a plain GET, which is no WebSocket', async () => {
    const r = await c.call('GET', `/sessions/${session}/devices/${serial}/screen`, { token: owner });
    expect(r.status).toBe(426);
    expect(errorCode(r)).toBe('websocket_required');
  });

  it('closes with 4002 when the phone goes offline', async () => {
    const other = await allocateInUse(c, owner, 'Pixel 5');
    const w = await watch(screen(`?token=${owner}`, other.session, other.serial));
    await framesFor(w);
    await lab.unplug(other.serial);
    expect(await w.closed).toEqual({ code: 4002, reason: 'device offline' });
  });

  it('closes with 4001 when the device is released, after which the upgrade is refused with 409', async () => {
    const w = await watch(screen(`?token=${owner}`));
    await framesFor(w);
    await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner });
    expect(await w.closed).toEqual({ code: 4001, reason: 'device released' });
    const r = await refusedUpgrade(screen(`?token=${owner}`));
    expect(r.status).toBe(409);
    expect(errorCode(r)).toBe('device_not_in_use');
  });
});

describe.skipIf(!hasAdb)('live screen frame cap', () => {
  it('sends at most BENCHTOP_SCREEN_MAX_FPS frames per second, even from a phone that answers faster', async () => {
    const lab = await startLab([{ model: 'Pixel 7', minicap: false }], { screenMaxFps: 10 });
    try {
      const c = client(lab.engine.api);
      const owner = await c.login();
      const { session, serial } = await allocateInUse(c, owner, 'Pixel 7');
      const viewer = await watch(screenUrl(lab, session, serial, `?token=${owner}`));
      await framesFor(viewer);
      const before = viewer.frames.length;
      await sleep(1500);
      const perSecond = (viewer.frames.length - before) / 1.5;
      expect(perSecond).toBeGreaterThan(3);
      expect(perSecond).toBeLessThanOrEqual(11);
      await stop(viewer);
    } finally {
      await lab.stop();
    }
  }, 30_000);
});

describe.skipIf(!hasAdb)('live screen at shutdown', () => {
  it('closes viewers with 1001, and one that stops answering does not hold the engine\'s stop', async () => {
    const lab = await startLab([{ model: 'Pixel 7' }]);
    try {
      const c = client(lab.engine.api);
      const owner = await c.login();
      const { session, serial } = await allocateInUse(c, owner, 'Pixel 7');
      const answering = await watch(screenUrl(lab, session, serial, `?token=${owner}`));
      const asleep = await watch(screenUrl(lab, session, serial, `?token=${owner}`));
      await framesFor(answering);
      // A peer that reads nothing more never answers the close frame, like a laptop asleep on the LAN.
      asleep.ws.pause();
      const start = performance.now();
      await lab.engine.engine.stop();
      expect(performance.now() - start).toBeLessThan(5000);
      expect(await answering.closed).toEqual({ code: 1001, reason: 'Benchtop is shutting down' });
      asleep.ws.terminate();
    } finally {
      await lab.stop();
    }
  }, 30_000);
});
