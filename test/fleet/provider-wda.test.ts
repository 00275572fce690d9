import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { netnsOrSkip, startNetnsProvider, type NetnsProvider } from '../support/provider/index.js';

const ready = adbOrSkip() && netnsOrSkip();
const WDA = 'com.facebook.WebDriverAgentRunner.xctrunner';

/**
 * WDA on a provider's iOS 17+ iPhones: a Mac provider (its SSH account's PATH has xcrun, here the scripted one that
 * reaches the namespace's own simulated CoreDevice) gets WDA started by the hub running `xcrun devicectl` there, over
 * SSH; a Linux provider (no xcrun) leaves the phone wda_unavailable with the manual steps. The hub has no xcrun.
 */
describe.skipIf(!ready)('WebDriverAgent on a provider\'s iOS 17 iPhone', () => {
  let engine: TestEngine;
  let mac: NetnsProvider;
  let linux: NetnsProvider;
  let c: ReturnType<typeof client>;
  let owner: string;
  const started: Array<Promise<NetnsProvider>> = [];

  const fleet = async () => (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<Record<string, any>>;
  const phone = async (udid: string) => (await fleet()).find((p) => p.serial === udid);

  beforeAll(async () => {
    const macStarting = startNetnsProvider(0, { phones: [], iphones: [
      { name: 'Mac-side iPhone', version: '17.5', wda: false },
      { name: 'Bare Mac-side iPhone', version: '17.5', wda: false, wdaInstalled: false },
    ], mac: true });
    const linuxStarting = startNetnsProvider(1, { phones: [], iphones: [{ name: 'Linux-side iPhone', version: '17.5', wda: false }] });
    started.push(macStarting, linuxStarting);
    [mac, linux] = await Promise.all([macStarting, linuxStarting]);
    engine = await startEngine({ xcrun: null, providerCheckMs: 300, providerProbeTimeoutMs: 1000, providerBackoffMaxMs: 1000 });
    c = client(engine.api);
    owner = await c.login();
  }, 60_000);

  afterAll(async () => {
    await engine?.stop();
    await Promise.all(started.map((p) => p.then((x) => x.stop(), () => undefined)));
  });

  it('the health check tells a Mac with devicectl from a Linux box, and the answer says so', async () => {
    const m = await c.call('POST', '/lab/providers', { token: owner, body: mac.body({ name: 'mac-provider' }) });
    expect(m.status, JSON.stringify(m.body)).toBe(201);
    expect(m.body).toMatchObject({ health: 'up', os: 'Linux', devicectl: '/Applications/Xcode.app/Contents/Developer/usr/bin/devicectl' });
    const l = await c.call('POST', '/lab/providers', { token: owner, body: linux.body({ name: 'linux-provider' }) });
    expect(l.status, JSON.stringify(l.body)).toBe(201);
    expect(l.body).toMatchObject({ health: 'up', os: 'Linux', devicectl: null });
    // Detecting ran xcrun --find only: nothing was launched yet by the check itself.
    expect(mac.xcrunRuns()).toContain('--find devicectl');
  });

  it('a Mac provider: the hub runs xcrun devicectl on it over SSH, and WDA answers through the hub once allocated', async () => {
    const udid = mac.udids[0]!;
    await waitFor('the Mac-side iPhone is device', async () => (await phone(udid))?.state === 'device' || undefined, 20_000);
    const launches = mac.xcrunRuns().filter((r) => r.startsWith(`devicectl device process launch --device ${udid} `));
    expect(launches).toHaveLength(1);
    expect(launches[0]).toMatch(new RegExp(`^devicectl device process launch --device ${udid} --terminate-existing --json-output /\\S+/launch\\.json ${WDA.replace(/\./g, '\\.')}$`));

    const session = (await c.call('POST', '/sessions', { token: owner })).body.id as string;
    const filters = [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }, { attribute: 'name', operator: 'EQUALS', value: 'Mac-side iPhone' }];
    const a = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters } });
    expect(a.status, JSON.stringify(a.body)).toBe(201);
    await waitFor('in_use', async () => (await c.call('GET', `/sessions/${session}/devices/${a.body.id}`, { token: owner })).body.status === 'in_use' || undefined);
    // Through WDA, which the devicectl launch started: a screenshot (WDA's /screenshot) and a tap.
    const shot = await fetch(`${engine.api}/sessions/${session}/devices/${udid}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(shot.status).toBe(200);
    expect(Buffer.from(await shot.arrayBuffer()).subarray(1, 4).toString()).toBe('PNG');
    const tap = await c.call('POST', `/sessions/${session}/devices/${udid}/actions`, { token: owner, body: { type: 'tap', x: 10, y: 10 } });
    expect(tap.status, JSON.stringify(tap.body)).toBe(200);
    await c.call('POST', `/sessions/${session}/devices/${udid}/release`, { token: owner });
  });

  it('a Mac provider whose iPhone lacks the runner: devicectl\'s failure on the Mac, in its words, is the phone\'s steps', async () => {
    const udid = mac.udids[1]!;
    const listed = await waitFor('the bare iPhone\'s steps', async () => {
      const p = await phone(udid);
      return p?.steps?.includes('could not launch') ? p : undefined;
    }, 15_000);
    expect(listed.state).toBe('wda_unavailable');
    expect(listed.steps).toContain(`xcrun devicectl could not launch ${WDA}`);
    expect(listed.steps).toContain('is not installed');
  });

  it('a Linux provider: the iPhone stays wda_unavailable with the manual steps', async () => {
    const udid = linux.udids[0]!;
    const listed = await waitFor('the Linux-side iPhone\'s steps', async () => {
      const p = await phone(udid);
      return p?.steps?.includes('xcrun devicectl device process launch') ? p : undefined;
    }, 15_000);
    expect(listed).toMatchObject({ state: 'wda_unavailable', host: 'linux-provider' });
    expect(listed.steps).toContain('iOS 17.5');
    expect(listed.steps).toContain(`--device ${udid} ${WDA}`);
    expect(listed.steps).toContain('RemoteXPC');
  });
});
