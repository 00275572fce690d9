import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import type WebSocket from 'ws';
import { mobilecli, MOBILECLI } from '../support/mobile-next.js';
import { connectWs } from '../support/ws.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk, buildIpa } from '../support/app-fixtures.js';
import { client } from '../support/engine.js';
import { adbOrSkip, startLab, uploadReadyApp, waitFor, type TestLab } from '../support/lab.js';
import { netnsOrSkip, startNetnsProvider, type NetnsProvider } from '../support/provider/index.js';

const ready = adbOrSkip() && netnsOrSkip();

/** adb processes this test process started, directly or not: adbkit would start a server as its child. */
function adbDescendants(): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      /* ended meanwhile */
    }
  }
  const isOurs = (pid: number): boolean => {
    for (let p = parentOf.get(pid); p !== undefined && p > 1; p = parentOf.get(p)) if (p === process.pid) return true;
    return false;
  };
  return [...parentOf.keys()].filter((pid) => {
    try {
      return /(^|\/)adb$/.test(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')[0]!) && isOurs(pid);
    } catch {
      return false;
    }
  });
}

/** Whether anything in the hub's own network namespace listens on adb's default port. */
const hubListensOn5037 = () => /127\.0\.0\.1:5037\b/.test(execFileSync('ss', ['-ltn'], { encoding: 'utf8' }));

describe.skipIf(!ready)('providers: phones on other boxes, reached over SSH', () => {
  let lab: TestLab;
  let providers: NetnsProvider[] = [];
  let c: ReturnType<typeof client>;
  let owner: string;
  const ids: string[] = [];
  const DUP = 21500;

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
  /** A live screen through the hub's WebSocket: the hello, then binary frames. */
  const watchScreen = (session: string, serial: string) =>
    new Promise<{ ws: WebSocket; hello: Record<string, unknown> | undefined; frames: Buffer[] }>((resolve, reject) => {
      const { ws } = connectWs(`${lab.engine.api.replace(/^http/, 'ws')}/sessions/${session}/devices/${serial}/screen?token=${owner}`);
      const w = { ws, hello: undefined as Record<string, unknown> | undefined, frames: [] as Buffer[] };
      ws.on('message', (data: Buffer, binary: boolean) => {
        if (binary) w.frames.push(data);
        else w.hello ??= JSON.parse(data.toString());
      });
      ws.once('open', () => resolve(w));
      ws.once('error', reject);
    });
  const status = async (session: string, id: string) => (await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body;

  beforeAll(async () => {
    const started = await Promise.all([
      startNetnsProvider(0, { phones: [{ port: 21001, options: { model: 'Pixel 8' } }, { port: DUP, options: { model: 'Dup A' } }] }),
      startNetnsProvider(1, { phones: [{ port: 22001, options: { model: 'Galaxy S24', keepsProcessesOnHangup: true } }, { port: DUP, options: { model: 'Dup B' } }], iphones: [{ name: 'Remote iPhone', version: '17.5' }] }),
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
      expect(r.body).toMatchObject({ name: p.body().name, address: p.address, port: 22, username: 'root', health: 'up', adbVersion: 41, os: 'Linux', devicectl: null, paused: false });
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
    // A box whose host key is not the one confirmed, or that no sshd answers for, is refused and nothing is stored.
    const changed = await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'wrong-host-key', hostKeySha256: `SHA256:${'A'.repeat(43)}` }) });
    expect(changed.status).toBe(409);
    expect(changed.body.error.code).toBe('host_key_mismatch');
    const noAdb = await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'no-adb', adbPort: 5099 }) });
    expect(noAdb.body.healthMessage).toMatch(/no adb server answering on the provider's 127\.0\.0\.1:5099/);
    const unreachable = await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'no-sshd', port: 2299 }) });
    expect(unreachable.status).toBe(400);
    expect(unreachable.body.error).toMatchObject({ code: 'provider_unreachable', message: expect.stringMatching(/connection refused/) });
    expect((await c.call('GET', '/lab/providers', { token: owner })).body.data.map((p: { name: string }) => p.name).sort()).toEqual(['no-adb', 'provider-0', 'provider-1', 'wrong-key']);
    for (const r of [refused, noAdb]) expect((await c.call('DELETE', `/lab/providers/${r.body.id}`, { token: owner })).status).toBe(204);
    expect((await c.call('POST', '/lab/providers', { token: owner, body: p0.body({ name: 'provider-1' }) })).status).toBe(409);
    expect((await c.call('POST', '/lab/providers', { token: owner, body: { ...p0.body({ name: 'x' }), privateKey: undefined } })).status).toBe(400);
  });

  it('puts the providers\' phones and the local ones in one fleet, each with its host', async () => {
    const phones = await waitFor('every phone in the fleet', async () => {
      const all = await fleet();
      return all.filter((p) => p.state === 'device').length >= 4 ? all : undefined;
    });
    const byName = Object.fromEntries(phones.map((p) => [p.name, p]));
    expect(byName['Pixel 8']).toMatchObject({ host: 'provider-0', serial: '127.0.0.1:21001' });
    expect(byName['Galaxy S24']).toMatchObject({ host: 'provider-1', serial: '127.0.0.1:22001' });
    expect(byName['Local Phone']).toMatchObject({ host: null });
    // Every member sees each provider's health on the fleet, and nothing about how to reach it.
    const member = await c.signup('member@lab.test');
    const seen = (await c.call('GET', '/fleet/providers', { token: member.token })).body.data;
    expect(seen.map((p: { name: string; health: string }) => [p.name, p.health])).toEqual([['provider-0', 'up'], ['provider-1', 'up']]);
    expect(JSON.stringify(seen)).not.toContain(providers[0]!.address);
  });

  it('keeps a serial that two providers report with the first one, and shows the other as a duplicate', async () => {
    const dup = `127.0.0.1:${DUP}`;
    const phones = await fleet();
    const listed = phones.filter((p) => p.serial === dup);
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({ host: 'provider-0', name: 'Dup A' });
    expect((await provider(ids[1]!)).duplicateSerials).toEqual([dup]);
    expect((await provider(ids[0]!)).duplicateSerials).toEqual([]);
    // Its count is of its phones in the fleet: the duplicate is not one of them.
    expect((await provider(ids[1]!)).phones).toBe((await fleet()).filter((p) => p.host === 'provider-1').length);
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

  it('drives a provider\'s iPhone through its usbmuxd over SSH: install an IPA, read its syslog', async () => {
    const udid = providers[1]!.udids[0]!;
    await waitFor('the iPhone in the fleet', async () => (await fleet()).find((p) => p.serial === udid && p.state === 'device'), 15_000);
    expect((await fleet()).find((p) => p.serial === udid)).toMatchObject({ host: 'provider-1', platform: 'ios', name: 'Remote iPhone' });
    const session = (await c.call('POST', '/sessions', { token: owner })).body.id as string;
    const a = (await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }] } })).body;
    await waitFor('the iPhone in_use', async () => (await status(session, a.id)).status === 'in_use', 15_000);
    const base = `/sessions/${session}/devices/${udid}`;
    const logs = await fetch(`${lab.engine.api}${base}/logs?token=${owner}`);
    expect(logs.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const fileId = await uploadReadyApp(c, owner, buildIpa({ bundleId: 'com.example.remoteios', displayName: 'Remote Hello' }), 'hello.ipa');
    const installed = await c.call('POST', `${base}/install`, { token: owner, body: { file: fileId, launch: true } });
    expect(installed.body).toEqual({ file: fileId, status: 'installed', bundleId: 'com.example.remoteios', launched: true });
    const reader = logs.body!.getReader();
    let text = '';
    while (!/event: log/.test(text)) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect((await c.call('POST', `${base}/release`, { token: owner })).status).toBe(202);
  }, 40_000);

  it('drives a provider\'s phone through /ws with mobilecli unchanged', async () => {
    const key = await c.createKey(owner);
    const origin = lab.engine.api.replace(/\/api\/v1$/, '');
    const m = mobilecli(MOBILECLI, { MOBILECLI_FLEET_URL: `${origin.replace(/^http/, 'ws')}/ws`, MOBILECLI_TOKEN: key, MOBILECLI_REMOTE_ONLY: '1' });
    try {
      const allocated = await m.run(['remote', 'allocate', '--platform', 'android', '--name', 'Pixel 8', '--wait', '--timeout', '30']);
      expect(allocated.code, allocated.stdout + allocated.stderr).toBe(0);
      const serial = allocated.json.data.device.id;
      expect(serial).toBe('127.0.0.1:21001');
      expect((await m.run(['io', 'tap', '--device', serial, '123,456'])).code).toBe(0);
      const file = join(m.home, 'screen.png');
      const shot = await m.run(['screenshot', '--device', serial, '--output', file]);
      expect(shot.code, shot.stdout + shot.stderr).toBe(0);
      expect(readFileSync(file).subarray(1, 4).toString()).toBe('PNG');
      expect((await m.run(['remote', 'release', '--device', serial])).code).toBe(0);
    } finally {
      m.close();
    }
  }, 60_000);

  it('drives a provider\'s phone through MCP', async () => {
    const key = await c.createKey(owner);
    const origin = lab.engine.api.replace(/\/api\/v1$/, '');
    const transport = new StreamableHTTPClientTransport(new URL(`${origin}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } });
    const mcp = new McpClient({ name: 'benchtop-test', version: '1.0.0' });
    await mcp.connect(transport);
    try {
      const call = async (name: string, args: Record<string, unknown>) => (await mcp.callTool({ name, arguments: args })) as { content: Array<{ type: string; text?: string }>; isError?: boolean };
      const allocated = JSON.parse((await call('mobile_allocate_remote_device', { platform: 'android', name: 'Galaxy*' })).content[0]!.text!);
      expect(allocated).toMatchObject({ status: 'in_use', name: 'Galaxy S24', device: '127.0.0.1:22001' });
      expect((await call('mobile_click_on_screen_at_coordinates', { device: allocated.device, x: 5, y: 6 })).isError).toBeFalsy();
      const shot = await call('mobile_take_screenshot', { device: allocated.device });
      expect(shot.content[0]!.type).toBe('image');
      expect((await call('mobile_release_remote_device', { device: allocated.device })).isError).toBeFalsy();
    } finally {
      await mcp.close();
    }
  }, 30_000);

  it('shows a provider\'s phone\'s minicap live screen through the hub', async () => {
    const { session, serial } = await allocate('Pixel 8');
    const w = await watchScreen(session, serial);
    await waitFor('the first minicap frame', () => w.frames.length >= 1);
    expect(w.hello).toMatchObject({ format: 'jpeg', source: 'minicap' });
    expect(w.frames[0]!.subarray(0, 2)).toEqual(Buffer.from([0xff, 0xd8]));
    // minicap sends a frame when the screen changes: opening the app drawer changes it.
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'swipe', fromX: 360, fromY: 1100, toX: 360, toY: 300, durationMs: 100 } });
    await waitFor('a frame of the changed screen', () => w.frames.length >= 2);
    w.ws.close();
    await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner });
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

  it('when the first phone under a duplicate serial leaves, the other joins, and what was held on the first is device_lost', async () => {
    const dup = `127.0.0.1:${DUP}`;
    const held = await allocate('Dup A');
    expect(held.serial).toBe(dup);
    providers[0]!.adb('disconnect', dup);
    const lost = await waitFor('device_lost', async () => {
      const d = await status(held.session, held.id);
      return d.status === 'released' ? d : undefined;
    });
    expect(lost.releaseReason).toBe('device_lost');
    const now = await waitFor('the other phone under the serial', async () => (await fleet()).find((p) => p.serial === dup && p.host === 'provider-1'));
    expect(now).toMatchObject({ name: 'Dup B', state: 'device' });
    expect((await provider(ids[1]!)).duplicateSerials).toEqual([]);
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
    await c.call('POST', `/sessions/${session}/devices/127.0.0.1:21001/release`, { token: owner });
  });

  it('link down: detected within 10 s, phone offline and held; link up: in_use again; past the grace period: device_lost', async () => {
    const p1 = providers[1]!;
    const { session, serial, id } = await allocate('Galaxy S24');
    // A live screen open when the link goes: its frames stop, and it says so (closed as device offline), not frozen.
    const watching = await watchScreen(session, serial);
    await waitFor('a first frame', () => watching.frames.length >= 1);
    const closed = new Promise<number>((resolve) => watching.ws.on('close', (code: number) => resolve(code)));
    p1.linkDown();
    const downAt = Date.now();
    await waitFor('provider-1 down', async () => (await provider(ids[1]!)).health === 'down', 10_000);
    expect(Date.now() - downAt).toBeLessThan(10_000);
    await waitFor('the phone offline', async () => (await fleet()).find((p) => p.serial === serial)?.state === 'offline');
    expect((await status(session, id)).status).toBe('offline');
    expect(await closed).toBe(4002);
    expect(Date.now() - downAt).toBeLessThan(10_000);
    p1.linkUp();
    // The next check over SSH after the link is back, on a loaded machine.
    await waitFor('the allocation in_use again', async () => (await status(session, id)).status === 'in_use', 20_000);
    const w = await watchScreen(session, serial);
    await waitFor('a frame again', () => w.frames.length >= 1, 10_000);
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'pressButton', button: 'HOME' } });
    await c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body: { type: 'swipe', fromX: 360, fromY: 1100, toX: 360, toY: 300, durationMs: 100 } });
    await waitFor('frames flowing again', () => w.frames.length >= 2, 10_000);
    // The minicap started before the drop kept running on the phone (only the link broke): the new stream ended it
    // before starting its own. The phone's process list, as the adb CLI on the provider reads it, shows one.
    const minicaps = p1.adb('-s', serial, 'shell', 'ps').split('\n').filter((line) => /\s(minicap|app_process)$/.test(line.trim()));
    expect(minicaps).toHaveLength(1);
    w.ws.close();

    p1.linkDown();
    await waitFor('offline again', async () => (await status(session, id)).status === 'offline', 10_000);
    const lost = await waitFor('device_lost past the grace period', async () => {
      const d = await status(session, id);
      return d.status === 'released' ? d : undefined;
    }, 15_000);
    expect(lost.releaseReason).toBe('device_lost');
    p1.linkUp();
  }, 40_000);

  it('a hub restart keeps a held provider phone: its allocation waits for the provider, then is in_use again', async () => {
    const { session, serial, id } = await waitFor('the Galaxy back', () => allocate('Galaxy S24').catch(() => undefined), 20_000);
    lab.engine = await lab.engine.restart();
    c = client(lab.engine.api);
    owner = await c.login();
    expect(['offline', 'in_use']).toContain((await status(session, id)).status);
    // The new hub reconnects from what it stored: the provider's row and its credentials in the secret store.
    await waitFor('provider-1 up again', async () => (await provider(ids[1]!)).health === 'up', 15_000);
    await waitFor('in_use after the restart', async () => (await status(session, id)).status === 'in_use', 15_000);
    const shot = await fetch(`${lab.engine.api}/sessions/${session}/devices/${serial}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(shot.status).toBe(200);
    await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner });
  }, 40_000);

  it('with the provider\'s adb server killed, the hub says so and starts no adb server of its own', async () => {
    const listening = hubListensOn5037();
    const ours = adbDescendants();
    providers[0]!.killAdb();
    const down = await waitFor('provider-0 down', async () => {
      const p = await provider(ids[0]!);
      return p.health === 'down' ? p : undefined;
    }, 10_000);
    expect(down.healthMessage).toMatch(/no adb server answering on the provider's 127\.0\.0\.1:5037/);
    await new Promise((r) => setTimeout(r, 1000));
    expect(adbDescendants().filter((pid) => !ours.includes(pid))).toEqual([]);
    expect(hubListensOn5037()).toBe(listening);
  });
});
