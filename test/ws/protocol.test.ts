import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { openRpc } from '../support/mobile-next.js';
import { refusedUpgrade } from '../support/ws.js';

/** /ws as a protocol: authentication before the upgrade, JSON-RPC errors on a socket that stays open, isolation. */
const run = adbOrSkip() ? describe : describe.skip;

let lab: TestLab;
let c: ReturnType<typeof client>;
let keyA: string;
let keyB: string;
let wsUrl: string;

beforeAll(async () => {
  lab = await startLab([{ model: 'Pixel 7' }, { model: 'Pixel 6' }, { model: 'Pixel 5' }]);
  c = client(lab.engine.api);
  keyA = await c.createKey(await c.login());
  keyB = await c.createKey((await c.signup('b@lab.test')).token);
  wsUrl = `${lab.engine.api.replace(/^http/, 'ws').replace(/\/api\/v1$/, '')}/ws`;
}, 60_000);
afterAll(() => lab?.stop());

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

run('/ws upgrade', () => {
  it('without credentials is a 401 before the upgrade; with ?token= or Authorization it opens', async () => {
    const refused = await refusedUpgrade(wsUrl);
    expect(refused.status).toBe(401);
    expect(errorCode({ ...refused, headers: new Headers() })).toBe('unauthorized');
    const byQuery = await openRpc(`${wsUrl}?token=${keyA}`);
    expect((await byQuery.call('devices.list')).result).toEqual({ devices: [] });
    await byQuery.close();
  });

  it('any other WebSocket path is a 404 before the upgrade, the GUI\'s pages included', async () => {
    const origin = wsUrl.replace(/\/ws$/, '');
    for (const path of ['/wsx', '/ws/extra', '/api/v1/ws', '/sessions', '/']) {
      const refused = await refusedUpgrade(`${origin}${path}`, { headers: bearer(keyA) });
      expect(refused.status, path).toBe(404);
    }
  });

  it('plain GET /ws says to upgrade', async () => {
    const r = await fetch(wsUrl.replace(/^ws/, 'http'), { headers: bearer(keyA) });
    expect(r.status).toBe(426);
  });
});

run('/ws JSON-RPC errors', () => {
  it('bad JSON, an invalid request, an unknown method and bad params each get their error, and the socket stays open', async () => {
    const rpc = await openRpc(wsUrl, bearer(keyA));
    expect((await rpc.raw('{not json', null)).error.code).toBe(-32700);
    expect((await rpc.raw(JSON.stringify({ id: 7, method: 'devices.list' }), 7)).error.code).toBe(-32600);
    expect((await rpc.raw(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'devices.list', params: 'x' }), 8)).error.code).toBe(-32600);
    expect((await rpc.raw(JSON.stringify([]), null)).error.code).toBe(-32600);
    const unknown = await rpc.call('device.teleport', { deviceId: 'x' });
    expect(unknown.error).toEqual({ code: -32601, message: 'Method not found: device.teleport' });
    const missing = await rpc.call('device.io.tap', { deviceId: 'x', y: 1 });
    expect(missing.error?.code).toBe(-32602);
    expect(missing.error?.message).toMatch(/x/);
    expect((await rpc.call('device.io.tap', { deviceId: 'x', x: 'left', y: 1 })).error?.code).toBe(-32602);
    expect((await rpc.call('fleet.allocate', { filters: 'android' })).error?.code).toBe(-32602);
    // Still open: a good call works.
    expect((await rpc.call('fleet.listDevices')).result.devices.length).toBe(3);
    await rpc.close();
  });

  it('a batch gets one array of replies; a notification gets none', async () => {
    const rpc = await openRpc(wsUrl, bearer(keyA));
    const batch = await rpc.raw(JSON.stringify([
      { jsonrpc: '2.0', id: 'a', method: 'devices.list' },
      { jsonrpc: '2.0', method: 'devices.list' },
      { jsonrpc: '2.0', id: 'b', method: 'nope' },
    ]), 'batch');
    expect(batch).toEqual([
      { jsonrpc: '2.0', id: 'a', result: { devices: [] } },
      { jsonrpc: '2.0', id: 'b', error: { code: -32601, message: 'Method not found: nope' } },
    ]);
    await rpc.close();
  });

  it('fleet.allocate with filters no phone matches is -32022; methods Benchtop cannot do say so', async () => {
    const rpc = await openRpc(wsUrl, bearer(keyA));
    const none = await rpc.call('fleet.allocate', { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] });
    expect(none.error?.code).toBe(-32022);
    const record = await rpc.call('device.screenrecord', { deviceId: lab.serials[0], output: 'x.mp4' });
    expect(record.error).toEqual({ code: -32000, message: 'Screen recording is not supported by Benchtop.' });
    await rpc.close();
  });
});

run('/ws devices', () => {
  it('fleet.allocate makes a session REST sees; many calls in flight on one socket; reboot brings the phone back in_use', async () => {
    const rpc = await openRpc(wsUrl, bearer(keyA));
    const a = await rpc.call('fleet.allocate', { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: 'Pixel 7' }] });
    expect(a.result).toMatchObject({ state: 'allocating', device: { name: 'Pixel 7', state: 'allocating' } });
    const { allocationId, sessionId } = a.result;
    const listed = await waitFor('the phone to be online', async () => {
      const d = (await rpc.call('devices.list')).result.devices.find((x: any) => x.provider.allocationId === allocationId);
      return d?.state === 'online' ? d : undefined;
    });
    const serial = listed.id;
    expect(listed).toEqual({ id: serial, name: 'Pixel 7', platform: 'android', type: 'real', version: '13', state: 'online', model: 'Pixel 7', provider: { type: 'benchtop', allocationId, sessionId } });
    const rest = await c.call('GET', `/sessions/${sessionId}`, { token: keyA });
    expect(rest.body.devices).toEqual([expect.objectContaining({ id: allocationId, status: 'in_use', state: 'online', info: expect.objectContaining({ serial }) })]);

    // Ten calls sent at once, answered by id whatever the order.
    const calls = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => rpc.call('device.io.tap', { deviceId: serial, x: 10 + i, y: 20 })),
      rpc.call('device.info', { deviceId: serial }),
      rpc.call('device.screenshot', { deviceId: serial }),
      rpc.call('device.dump.ui', { deviceId: serial }),
      rpc.call('device.io.orientation.get', { deviceId: serial }),
    ]);
    for (const r of calls) expect(r.error).toBeUndefined();
    expect(calls[6]!.result.device.screenSize).toEqual({ width: 720, height: 1280, scale: 1 });
    expect(calls[7]!.result.data).toMatch(/^data:image\/png;base64,iVBOR/);
    expect(calls[9]!.result).toEqual({ orientation: 'portrait' });

    // Actions through the shared vocabulary: its package-name rule refuses a bad one as a bad param.
    expect((await rpc.call('device.apps.launch', { deviceId: serial, bundleId: 'not a package' })).error?.code).toBe(-32602);
    expect((await rpc.call('device.io.button', { deviceId: serial, button: 'TURBO' })).error?.code).toBe(-32602);
    expect((await rpc.call('device.io.keys', { deviceId: serial, keys: ['ctrl+a'] })).error?.message).toMatch(/not supported/);
    expect((await rpc.call('device.io.gesture', { deviceId: serial, actions: [
      { type: 'pointerMove', x: 100, y: 900 }, { type: 'pointerDown' }, { type: 'pointerMove', x: 100, y: 300, duration: 200 }, { type: 'pointerUp' },
    ] })).result).toEqual({ status: 'ok' });
    expect(lab.phone(serial).state.lastSwipe).toMatchObject({ x1: 100, y1: 900, x2: 100, y2: 300 });
    expect((await rpc.call('device.crashes.list', { deviceId: serial })).result).toEqual([]);

    const reboot = await rpc.call('device.reboot', { deviceId: serial });
    expect(reboot.result).toEqual({ status: 'ok' });
    expect((await c.call('GET', `/sessions/${sessionId}/devices/${serial}`, { token: keyA })).body.status).toBe('in_use');
    expect(lab.phone(serial).state.recentServices).toContain('reboot:');
    expect((await rpc.call('device.io.tap', { deviceId: serial, x: 5, y: 5 })).result).toEqual({ status: 'ok' });

    expect((await rpc.call('fleet.release', { deviceId: serial })).result).toEqual({ status: 'ok' });
    expect((await rpc.call('devices.list')).result.devices).toEqual([]);
    expect((await rpc.call('device.io.tap', { deviceId: serial, x: 5, y: 5 })).error?.code).toBe(-32020);
    await rpc.close();
  }, 60_000);

  it('another organization\'s phone is -32020, like an unknown serial, and is not listed or released', async () => {
    const held = await allocateInUse(c, keyA, 'Pixel 6');
    const rpcB = await openRpc(wsUrl, bearer(keyB));
    const theirs = await rpcB.call('device.io.tap', { deviceId: held.serial, x: 1, y: 1 });
    const unknown = await rpcB.call('device.io.tap', { deviceId: 'no-such-serial', x: 1, y: 1 });
    expect(theirs.error?.code).toBe(-32020);
    expect(unknown.error?.code).toBe(-32020);
    expect(theirs.error?.message.replace(held.serial, 'S')).toBe(unknown.error?.message.replace('no-such-serial', 'S'));
    expect((await rpcB.call('device.screenshot', { deviceId: held.serial })).error?.code).toBe(-32020);
    expect((await rpcB.call('device.reboot', { deviceId: held.serial })).error?.code).toBe(-32020);
    expect((await rpcB.call('devices.list')).result.devices).toEqual([]);
    expect((await rpcB.call('fleet.release', { deviceId: held.serial })).error?.code).toBe(-32020);
    expect((await c.call('GET', `/sessions/${held.session}/devices/${held.serial}`, { token: keyA })).body.status).toBe('in_use');
    expect(lab.phone(held.serial).state.lastTap).toBeUndefined();

    const rpcA = await openRpc(wsUrl, bearer(keyA));
    expect((await rpcA.call('devices.list')).result.devices.map((d: any) => d.id)).toEqual([held.serial]);
    await rpcA.call('fleet.release', { deviceId: held.serial });
    await Promise.all([rpcA.close(), rpcB.close()]);
  });

  it('REST: an allocation answers state allocating until it is in_use, then online', async () => {
    const session = (await c.call('POST', '/sessions', { token: keyA })).body.id;
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: keyA, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ status: expect.stringMatching(/^(queued|provisioning)$/), state: 'allocating' });
    await waitFor('online', async () => (await c.call('GET', `/sessions/${session}/devices/${r.body.id}`, { token: keyA })).body.state === 'online');
  });
});
