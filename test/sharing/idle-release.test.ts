import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { buildApk } from '../../src/sim/android/index.js';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { openRpc } from '../support/mobile-next.js';
import { connectWs } from '../support/ws.js';

const hasAdb = adbOrSkip();

/**
 * Idle release through the API: an allocation nobody uses is released as idle_timeout, with cleanup, after a
 * warning; REST, /ws, MCP and a connected live-screen viewer each keep theirs. The lab's minimum is lowered in the
 * engine config (never through the API) so that "idle" is 2 s here, not minutes.
 */
describe.skipIf(!hasAdb)('idle release', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let key: string;
  const IDLE_S = 2;

  beforeAll(async () => {
    lab = await startLab(
      ['Pixel 9', 'Pixel 8', 'Pixel 7', 'Pixel 6', 'Pixel 5'].map((model) => ({ model, osVersion: '14' })),
      { deviceIdleMinSeconds: 1, idleWarningSeconds: 1, sharingCheckSeconds: 0.1, activityFlushSeconds: 0.3, deviceConcurrencyQuota: 6, screenMaxFps: 5 },
    );
    c = client(lab.engine.api);
    owner = await c.login();
    key = await c.createKey(owner);
  }, 60_000);
  afterAll(() => lab?.stop());

  const device = async (session: string, id: string) => (await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body;

  it('deviceIdleSeconds is a lab setting: default 900, 0 or at least the minimum, persisted', async () => {
    const settings = await c.call('GET', '/lab/settings', { token: owner });
    expect(settings.body).toMatchObject({ deviceIdleSeconds: 900, reservationMaxHours: 8 });
    for (const bad of [-1, 0.5, 'x']) {
      const r = await c.call('PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: bad } });
      expect([r.status, errorCode(r)]).toEqual([400, 'invalid_request']);
    }
    const patched = await c.call('PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: IDLE_S } });
    expect(patched.status).toBe(200);
    expect(patched.body.deviceIdleSeconds).toBe(IDLE_S);
    expect((await c.call('GET', '/lab/settings', { token: owner })).body.deviceIdleSeconds).toBe(IDLE_S);
  });

  it('an idle allocation is warned, then released as idle_timeout with cleanup; reading lists is not activity', async () => {
    // Longer than IDLE_S here: the adb install below must not outlast the warning, which stands for its last second.
    expect((await c.call('PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: 2 * IDLE_S } })).status).toBe(200);
    // Put back however this test ends: the tests after it count on IDLE_S.
    onTestFinished(async () => {
      expect((await c.call('PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: IDLE_S } })).status).toBe(200);
    });
    const { session, serial, id } = await allocateInUse(c, owner, 'Pixel 5');
    // The deadline is set by the first check after the phone went in_use.
    const held = await waitFor('the idle deadline', async () => {
      const d = await device(session, id);
      return d.idleReleaseAt ? d : undefined;
    });
    expect(Date.parse(held.idleReleaseAt)).toBeGreaterThan(Date.now());
    const fleetRow = (await c.call('GET', '/fleet/devices', { token: owner })).body.data.find((p: { serial: string }) => p.serial === serial);
    expect(fleetRow.heldBy.idleReleaseAt).toBe(held.idleReleaseAt);
    // An app added during the allocation (by adb, beside the lab): cleanup must remove it.
    const apk = join(mkdtempSync(join(tmpdir(), 'benchtop-idle-')), 'app.apk');
    writeFileSync(apk, buildApk({ packageName: 'com.example.forgotten', label: 'Forgotten' }));
    await lab.adb.run(['-s', serial, 'install', apk], { timeoutMs: 30_000 });
    expect(lab.phone(serial).state.packages).toContain('com.example.forgotten');

    const warned = await waitFor('the idle warning', async () => {
      await c.call('GET', '/fleet/devices', { token: owner });
      const d = await device(session, id);
      return d.releaseWarning ? d : undefined;
    });
    expect(warned.status).toBe('in_use');
    expect(warned.releaseWarning.reason).toBe('idle_timeout');
    const released = await waitFor('the idle release', async () => {
      await c.call('GET', `/sessions/${session}/devices`, { token: owner });
      const d = await device(session, id);
      return d.status === 'released' ? d : undefined;
    });
    expect(released.releaseReason).toBe('idle_timeout');
    expect(released.releaseWarning).toBeUndefined();
    await waitFor('cleanup', () => !lab.phone(serial).state.packages.includes('com.example.forgotten'));
    expect(lab.phone(serial).state).toMatchObject({ screen: 'home' });
  });

  it('activity over REST, /ws, MCP and a connected viewer each keeps its phone past deviceIdleSeconds', async () => {
    const [rest, ws, mcp, viewer, idle] = await Promise.all(
      ['Pixel 9', 'Pixel 8', 'Pixel 7', 'Pixel 6', 'Pixel 5'].map((name) => allocateInUse(c, owner, name)),
    );
    const rpc = await openRpc(`${lab.engine.api.replace(/^http/, 'ws').replace(/\/api\/v1$/, '')}/ws`, { authorization: `Bearer ${key}` });
    const transport = new StreamableHTTPClientTransport(new URL(lab.engine.api.replace(/\/api\/v1$/, '/mcp')), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
    const agent = new Client({ name: 'idle-test', version: '1.0.0' });
    await agent.connect(transport);
    const screen = connectWs(`${lab.engine.api.replace(/^http/, 'ws')}/sessions/${viewer!.session}/devices/${viewer!.serial}/screen?token=${owner}`).ws;
    await new Promise((resolve, reject) => screen.once('open', resolve).once('error', reject));
    screen.on('message', () => undefined);

    const started = Date.now();
    // Each door used every 400 ms for 2.5 times deviceIdleSeconds; the fifth phone is left alone.
    while (Date.now() - started < IDLE_S * 2500) {
      const tap = await c.call('POST', `/sessions/${rest!.session}/devices/${rest!.serial}/actions`, { token: owner, body: { type: 'tap', x: 10, y: 10 } });
      expect(tap.status).toBe(200);
      expect((await rpc.call('device.screenshot', { deviceId: ws!.serial })).error).toBeUndefined();
      const shot = (await agent.callTool({ name: 'mobile_take_screenshot', arguments: { device: mcp!.serial } })) as { isError?: boolean };
      expect(shot.isError, JSON.stringify(shot)).toBeFalsy();
      await new Promise((r) => setTimeout(r, 400));
    }
    const idleOne = await device(idle!.session, idle!.id);
    expect([idleOne.status, idleOne.releaseReason]).toEqual(['released', 'idle_timeout']);
    for (const kept of [rest, ws, mcp, viewer]) expect((await device(kept!.session, kept!.id)).status).toBe('in_use');

    // Once each door stops (the viewer disconnects), its phone is released too.
    screen.close();
    await rpc.close();
    await agent.close();
    for (const kept of [rest, ws, mcp, viewer]) {
      const d = await waitFor(`${kept!.serial} released`, async () => {
        const x = await device(kept!.session, kept!.id);
        return x.status === 'released' ? x : undefined;
      });
      expect(d.releaseReason).toBe('idle_timeout');
    }
  }, 60_000);

  it('"keep" answers the warning: the deadline starts over; 0 switches idle release off', async () => {
    const { session, serial, id } = await allocateInUse(c, owner, 'Pixel 9');
    await waitFor('the warning', async () => (await device(session, id)).releaseWarning);
    const kept = await c.call('POST', `/sessions/${session}/devices/${serial}/keep`, { token: owner });
    expect(kept.status).toBe(200);
    expect(kept.body.releaseWarning).toBeUndefined();
    expect(Date.parse(kept.body.idleReleaseAt)).toBeGreaterThan(Date.now() + 1000);
    expect((await c.call('POST', `/sessions/${session}/devices/nope/keep`, { token: owner })).status).toBe(404);

    expect((await c.call('PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: 0 } })).status).toBe(200);
    await waitFor('no deadline', async () => (await device(session, id)).idleReleaseAt === null);
    await new Promise((r) => setTimeout(r, IDLE_S * 1500));
    const d = await device(session, id);
    expect(d.status).toBe('in_use');
    expect(d.releaseWarning).toBeUndefined();
    await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner });
  });
});
