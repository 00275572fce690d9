import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get as httpsGet } from 'node:https';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { client, errorCode } from '../support/engine.js';
import { adbWorksAsOnThePhone, freePort, remotePorts } from '../support/remote.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)('remote connect over LAN sharing: Debian adb through the tunnel inside the HTTPS port', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let mine: AdbServer;
  let tunnel: ChildProcess | undefined;
  let tunnelLog = '';
  let held: { session: string; serial: string };
  let address: string;
  let lanCommand: string;
  let lanPort: number;
  const sh = (args: string[]) => mine.run(['-s', address, ...args], { timeoutMs: 30_000 });

  beforeAll(async () => {
    [lab, mine] = await Promise.all([
      startLab([{ model: 'Pixel LAN', osVersion: '14' }], { lanPort: 0, remotePorts: remotePorts(3), remotePortRestSeconds: 1 }),
      startAdbServer(),
    ]);
    c = client(lab.engine.api);
    owner = await c.login();
    const lan = await c.call('PATCH', '/lab/settings', { token: owner, body: { lanSharing: true } });
    expect(lan.body.lanSharing.enabled).toBe(true);
    lanPort = lan.body.lanSharing.port;
    const key = readFileSync(join(mine.env.HOME!, '.android', 'adbkey.pub'), 'utf8');
    expect((await c.call('POST', '/adb-keys', { token: owner, body: { publicKey: key } })).status).toBe(201);
    held = await allocateInUse(c, owner, 'Pixel LAN');
  }, 60_000);
  afterAll(async () => {
    // It may have ended already (the test failed early, or it exited with its connection).
    if (tunnel?.exitCode === null && tunnel.signalCode === null) tunnel.kill();
    await mine?.stop();
    await lab?.stop();
  });

  it('the API shows one command for teammates: Node alone, the lab\'s certificate pinned, the same port on their loopback', async () => {
    const r = await c.call('POST', `/sessions/${held.session}/devices/${held.serial}/remote-connect`, { token: owner });
    expect(r.status).toBe(201);
    lanCommand = r.body.lanCommand;
    const fingerprint = (await c.call('GET', '/lab/settings', { token: owner })).body.lanSharing.certificateSha256;
    const port = r.body.address.split(':')[1];
    expect(lanCommand).toMatch(new RegExp(`^node -e ".*" https://\\S+:${lanPort} [A-Za-z0-9_-]{32} ${fingerprint} ${port}$`));
  });

  it('a teammate who reached the lab by another of its LAN origins is shown that origin in lanCommand', async () => {
    const byName: string = (await c.call('GET', '/lab/settings', { token: owner })).body.lanSharing.urls.at(-1);
    const path = `/api/v1/sessions/${held.session}/devices/${held.serial}/remote-connect`;
    const body = await new Promise<string>((resolve, reject) => {
      const headers = { host: new URL(byName).host, authorization: `Bearer ${owner}` };
      httpsGet({ host: '127.0.0.1', port: lanPort, path, headers, rejectUnauthorized: false, agent: false }, (res) => {
        let text = '';
        res.on('data', (d: Buffer) => (text += d.toString())).on('end', () => resolve(text));
      }).on('error', reject);
    });
    const shownOnLoopback = lanCommand.split(' ').at(-4)!;
    expect(JSON.parse(body).lanCommand).toBe(lanCommand.replaceAll(shownOnLoopback, byName));
  });

  it('a teammate\'s adb connects through the tunnel and works as on the phone', async () => {
    // This test's teammate is on the lab box itself: the LAN address is loopback, and the bridge's own port is taken.
    const local = await freePort();
    const command = lanCommand.replace(/https:\/\/\S+?:(\d+) /, 'https://127.0.0.1:$1 ').replace(/ \d+$/, ` ${local}`);
    tunnel = spawn('sh', ['-c', `exec ${command}`], { stdio: ['ignore', 'pipe', 'pipe'] });
    tunnel.stderr!.on('data', (d: Buffer) => (tunnelLog += d.toString()));
    await waitFor('the tunnel to listen', () => tunnelLog.includes('now reaches the phone'), 10_000);
    address = `127.0.0.1:${local}`;

    expect((await mine.run(['connect', address])).stdout.toString()).toContain(`connected to ${address}`);
    await waitFor('a device', async () => (await mine.run(['devices'])).stdout.toString().includes(`${address}\tdevice`));
    expect((await sh(['shell', 'getprop', 'ro.product.model'])).stdout.toString().trim()).toBe('Pixel LAN');
    await adbWorksAsOnThePhone(sh, mine.env.TMPDIR!, 'com.example.lan', '/sdcard/lan.bin');

    const reverse = await sh(['reverse', 'tcp:7000', 'tcp:7000']);
    expect([reverse.code, reverse.stderr]).toEqual([1, 'adb: error: closed\n']);
  }, 60_000);

  it('at release the teammate\'s adb shows offline at once, and the tunnel\'s secret is refused', async () => {
    expect((await c.call('POST', `/sessions/${held.session}/devices/${held.serial}/release`, { token: owner })).status).toBe(202);
    await waitFor('adb to show offline', async () => (await mine.run(['devices'])).stdout.toString().includes(`${address}\toffline`), 3000);
    const secret = lanCommand.split(' ').at(-3)!;
    const r = await fetch(`${lab.engine.api}/remote-connect/tunnel/${secret}`);
    expect([r.status, errorCode({ status: r.status, body: await r.json(), headers: r.headers })]).toEqual([404, 'remote_connection_not_found']);
  });
});
