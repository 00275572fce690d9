import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../support/app-fixtures.js';
import { client } from '../support/engine.js';
import { adbOrSkip, startLab, uploadReadyApp, waitFor, type TestLab } from '../support/lab.js';
import { netnsOrSkip, startNetnsProvider, type NetnsProvider } from '../support/provider/index.js';

const ready = adbOrSkip() && netnsOrSkip();

/** Pids of adb servers running in this machine's own network namespace (the hub's). */
function hubAdbServers(): number[] {
  const mine = readlinkNs('self');
  return readdirSync('/proc')
    .filter((e) => /^\d+$/.test(e))
    .filter((pid) => {
      try {
        const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
        return /(^|\/)adb$/.test(cmd[0] ?? '') && cmd.some((a) => a === 'fork-server' || a === 'server') && readlinkNs(pid) === mine;
      } catch {
        return false;
      }
    })
    .map(Number);
}

const readlinkNs = (pid: string) => readlinkSync(`/proc/${pid}/ns/net`);

describe.skipIf(!ready)('providers: phones on other boxes, reached over SSH', () => {
  let lab: TestLab;
  let providers: NetnsProvider[] = [];
  let c: ReturnType<typeof client>;
  let owner: string;
  const ids: string[] = [];
  const DUP = 41500;

  const fleet = async () => (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<Record<string, any>>;
  const provider = async (id: string) => (await c.call('GET', `/lab/providers/${id}`, { token: owner })).body;
  const allocate = async (name: string) => {
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id as string;
    const filters = [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: name }];
    const a = (await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters } })).body;
    const d = await waitFor(`${name} in_use`, async () => {
      const x = (await c.call('GET', `/sessions/${session}/devices/${a.id}`, { token: owner })).body;
      return x.status === 'in_use' ? x : undefined;
    });
    return { session, serial: d.info.serial as string, id: a.id as string };
  };
  const status = async (session: string, id: string) => (await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body;

  beforeAll(async () => {
    const started = await Promise.all([
      startNetnsProvider(0, { phones: [{ port: 41001, options: { model: 'Pixel 8' } }, { port: DUP, options: { model: 'Dup A' } }] }),
      startNetnsProvider(1, { phones: [{ port: 42001, options: { model: 'Galaxy S24' } }, { port: DUP, options: { model: 'Dup B' } }] }),
    ].map((p) => p.catch((error: Error) => error)));
    providers = started.filter((p): p is NetnsProvider => !(p instanceof Error));
    const failed = started.find((p) => p instanceof Error);
    if (failed) throw failed;
    lab = await startLab([{ model: 'Local Phone' }], {
      providerCheckMs: 300,
      providerProbeTimeoutMs: 1000,
      providerBackoffMaxMs: 1000,
      deviceGraceSeconds: 5,
    });
    c = client(lab.engine.api);
    owner = await c.login();
  }, 60_000);

  afterAll(async () => {
    await lab?.stop();
    await Promise.all(providers.map((p) => p.stop()));
  });

  it('adds two providers, each checked at once over SSH; secrets are never answered', async () => {
    for (const p of providers) {
      const r = await c.call('POST', '/lab/providers', { token: owner, body: p.body() });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      expect(r.body).toMatchObject({ name: p.body().name, address: p.address, port: 22, username: 'root', health: 'up', adbVersion: 41, paused: false });
      expect(r.body.hostKeySha256).toMatch(/^SHA256:/);
      expect(JSON.stringify(r.body)).not.toContain('PRIVATE KEY');
      ids.push(r.body.id);
    }
    const list = (await c.call('GET', '/lab/providers', { token: owner })).body.data;
    expect(list.map((p: { name: string }) => p.name)).toEqual(['provider-0', 'provider-1']);
    expect(JSON.stringify(list)).not.toContain('PRIVATE KEY');
  });

  it('says what is wrong in words: key refused, host key changed, no adb server answering, sshd unreachable', async () => {
    const [p0, p1] = providers as [NetnsProvider, NetnsProvider];
    const refused = await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'wrong-key', privateKey: p1.privateKey }) });
    expect(refused.status).toBe(201);
    expect(refused.body.health).toBe('down');
    expect(refused.body.healthMessage).toMatch(/refused the login/);
    const changed = await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'wrong-host-key', hostKeySha256: `SHA256:${'A'.repeat(43)}` }) });
    expect(changed.body.healthMessage).toMatch(/host key .* changed/);
    const noAdb = await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'no-adb', adbPort: 5099 }) });
    expect(noAdb.body.healthMessage).toMatch(/no adb server answering on the provider's 127\.0\.0\.1:5099/);
    const unreachable = await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'no-sshd', port: 2299 }) });
    expect(unreachable.body.healthMessage).toMatch(/sshd unreachable: connection refused/);
    for (const r of [refused, changed, noAdb, unreachable]) expect((await c.call('DELETE', `/lab/providers/${r.body.id}`, { token: owner })).status).toBe(204);
    expect((await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'provider-1' }) })).status).toBe(409);
    expect((await c.call('POST', '/lab/providers', { token: owner, body: { ...p0.body({ name: 'x' }), privateKey: undefined } })).status).toBe(400);
  });

  it('puts the providers\' phones and the local ones in one fleet, each with its host', async () => {
    const phones = await waitFor('every phone in the fleet', async () => {
      const all = await fleet();
      return all.filter((p) => p.state === 'device').length >= 4 ? all : undefined;
    });
    const byName = Object.fromEntries(phones.map((p) => [p.name, p]));
    expect(byName['Pixel 8']).toMatchObject({ host: 'provider-0', serial: '127.0.0.1:41001' });
    expect(byName['Galaxy S24']).toMatchObject({ host: 'provider-1', serial: '127.0.0.1:42001' });
    expect(byName['Local Phone']).toMatchObject({ host: null });
  });

  it('keeps a serial that two providers report with the first one, and shows the other as a duplicate', async () => {
    const dup = `127.0.0.1:${DUP}`;
    const phones = await fleet();
    const listed = phones.filter((p) => p.serial === dup);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ host: 'provider-0', name: 'Dup A' });
    expect((await provider(ids[1]!)).duplicateSerials).toEqual([dup]);
    expect((await provider(ids[0]!)).duplicateSerials).toEqual([]);
    expect((await provider(ids[1]!)).phones).toBe(1);
  });

  it('drives a phone on each provider through REST: tap, screenshot, install, logcat', async () => {
    for (const name of ['Pixel 8', 'Galaxy S24']) {
      const { session, serial, id } = await allocate(name);
      const base = `/sessions/${session}/devices/${serial}`;
      const tap = await c.call('POST', `${base}/actions`, { token: owner, body: { type: 'tap', x: 10, y: 20 } });
      expect(tap.status).toBe(200);
      const shot = await fetch(`${lab.engine.api}${base}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
      expect(shot.status).toBe(200);
      expect(Buffer.from(await shot.arrayBuffer()).subarray(1, 4).toString()).toBe('PNG');
      const fileId = await uploadReadyApp(c, owner, buildApk({ packageName: `com.example.${name.replace(/\W/g, '').toLowerCase()}` }), 'app.apk');
      const installed = await c.call('POST', `${base}/install`, { token: owner, body: { file: fileId, launch: true } });
      expect(installed.status, JSON.stringify(installed.body)).toBe(200);
      expect(installed.body).toMatchObject({ status: 'installed', launched: true });
      const logs = await fetch(`${lab.engine.api}${base}/logs?token=${owner}`);
      expect(logs.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const reader = logs.body!.getReader();
      let text = '';
      while (!/x=10 y=20/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
      await reader.cancel();
      expect((await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner })).status).toBe(202);
      void id;
    }
  });

  it('serves Prometheus metrics and takes an online backup a standby can start from', async () => {
    const metrics = await fetch(`${lab.engine.api}/metrics`, { headers: { authorization: `Bearer ${owner}` } });
    expect(metrics.status).toBe(200);
    const text = await metrics.text();
    expect(text).toMatch(/benchtop_phones\{host="provider-0",platform="android",state="device"\} 2/);
    expect(text).toMatch(/benchtop_phones\{host="local",platform="android",state="device"\} 1/);
    expect(text).toMatch(/benchtop_provider_up\{provider="provider-1"\} 1/);
    expect(text).toMatch(/benchtop_provider_round_trip_seconds\{provider="provider-0"\} 0\.\d+/);
    expect(text).toMatch(/benchtop_queue_length 0/);
    expect((await fetch(`${lab.engine.api}/metrics`)).status).toBe(401);

    const backup = await c.call('POST', '/lab/backup', { token: owner });
    expect(backup.status).toBe(201);
    const copy = new Database(backup.body.path, { readonly: true });
    expect(copy.prepare('SELECT name FROM providers ORDER BY name').all()).toEqual([{ name: 'provider-0' }, { name: 'provider-1' }]);
    copy.close();
  });

  it('pauses a provider (no new allocations), and refuses to remove one whose phone is held', async () => {
    const paused = await c.call('PATCH', `/lab/providers/${ids[0]}`, { token: owner, body: { paused: true } });
    expect(paused.body.paused).toBe(true);
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const filters = [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: 'Pixel 8' }];
    const queued = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters } });
    expect(queued.body.status).toBe('queued');
    await c.call('PATCH', `/lab/providers/${ids[0]}`, { token: owner, body: { paused: false } });
    await waitFor('the queued allocation to be served', async () => (await status(session, queued.body.id)).status === 'in_use');
    const refused = await c.call('DELETE', `/lab/providers/${ids[0]}`, { token: owner });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe('provider_in_use');
    await c.call('POST', `/sessions/${session}/devices/127.0.0.1:41001/release`, { token: owner });
  });

  it('link down: detected within 10 s, phone offline and held; link up: in_use again; past the grace period: device_lost', async () => {
    const p1 = providers[1]!;
    const { session, serial, id } = await allocate('Galaxy S24');
    p1.linkDown();
    const downAt = Date.now();
    await waitFor('provider-1 down', async () => (await provider(ids[1]!)).health === 'down', 10_000);
    expect(Date.now() - downAt).toBeLessThan(10_000);
    await waitFor('the phone offline', async () => (await fleet()).find((p) => p.serial === serial)?.state === 'offline');
    expect((await status(session, id)).status).toBe('offline');
    p1.linkUp();
    await waitFor('the allocation in_use again', async () => (await status(session, id)).status === 'in_use', 10_000);
    const shot = await fetch(`${lab.engine.api}/sessions/${session}/devices/${serial}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(shot.status).toBe(200);

    p1.linkDown();
    await waitFor('offline again', async () => (await status(session, id)).status === 'offline', 10_000);
    const lost = await waitFor('device_lost past the grace period', async () => {
      const d = await status(session, id);
      return d.status === 'released' ? d : undefined;
    }, 15_000);
    expect(lost.releaseReason ?? 'device_lost').toBe('device_lost');
    p1.linkUp();
  }, 40_000);

  it('with the provider\'s adb server killed, the hub says so and starts no adb server of its own', async () => {
    const before = hubAdbServers();
    providers[0]!.killAdb();
    const down = await waitFor('provider-0 down', async () => {
      const p = await provider(ids[0]!);
      return p.health === 'down' ? p : undefined;
    }, 10_000);
    expect(down.healthMessage).toMatch(/no adb server answering on the provider's 127\.0\.0\.1:5037/);
    await new Promise((r) => setTimeout(r, 1000));
    expect(hubAdbServers().sort()).toEqual(before.sort());
  });
});
