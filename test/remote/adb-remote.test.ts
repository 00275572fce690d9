import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { client, errorCode } from '../support/engine.js';
import { adbWorksAsOnThePhone, refused, remotePorts, sha256 } from '../support/remote.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();
const PORTS = remotePorts(5);
const FIRST_PORT = PORTS.first;

const md5Fingerprint = (pub: string) =>
  createHash('md5').update(Buffer.from(pub.split(' ')[0]!, 'base64')).digest('hex').toUpperCase().match(/../g)!.join(':');

describe.skipIf(!hasAdb)('remote connect: Debian adb, as the user, on a held Android phone through the bridge', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  /** The user's own adb server, with its own HOME and key; and a stranger's. */
  let mine: AdbServer;
  let stranger: AdbServer;
  let myKey: string;
  let held: { session: string; serial: string };
  let address: string;

  const sh = (args: string[], server = mine) => server.run(['-s', address, ...args], { timeoutMs: 30_000 });
  const remotePath = () => `/sessions/${held.session}/devices/${held.serial}/remote-connect`;

  beforeAll(async () => {
    [lab, mine, stranger] = await Promise.all([
      startLab([{ model: 'Pixel 8', osVersion: '14' }], {
        remotePorts: PORTS,
        // Long enough that a port released in one step is still resting at the next open, however loaded the machine.
        remotePortRestSeconds: 5,
        remoteAuthTimeoutSeconds: 2,
        deviceGraceSeconds: 0.5,
      }),
      startAdbServer(),
      startAdbServer(),
    ]);
    c = client(lab.engine.api);
    owner = await c.login();
    myKey = readFileSync(join(mine.env.HOME!, '.android', 'adbkey.pub'), 'utf8');
  }, 60_000);
  afterAll(async () => {
    await Promise.all([mine?.stop(), stranger?.stop()]);
    await lab?.stop();
  });

  it('keeps adb keys per user: 400 for what is not one, 201 with adb\'s fingerprint, 409 key_in_use for another user', async () => {
    const bad = await c.call('POST', '/adb-keys', { token: owner, body: { publicKey: 'ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ user@host' } });
    expect([bad.status, errorCode(bad)]).toEqual([400, 'invalid_public_key']);
    const added = await c.call('POST', '/adb-keys', { token: owner, body: { publicKey: myKey, title: 'laptop' } });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    expect(added.body).toMatchObject({ title: 'laptop', fingerprint: md5Fingerprint(myKey) });
    expect(Object.keys(added.body).sort()).toEqual(['createdAt', 'fingerprint', 'id', 'title']);

    const other = await c.signup('other-user@lab.test');
    const taken = await c.call('POST', '/adb-keys', { token: other.token, body: { publicKey: myKey } });
    expect([taken.status, errorCode(taken)]).toEqual([409, 'key_in_use']);
    expect((await c.call('GET', '/adb-keys', { token: other.token })).body.data).toEqual([]);
    expect((await c.call('GET', '/adb-keys', { token: owner })).body.data.map((k: { id: string }) => k.id)).toEqual([added.body.id]);
    // Another user cannot delete it.
    expect((await c.call('DELETE', `/adb-keys/${added.body.id}`, { token: other.token })).status).toBe(404);
  });

  it('opens the phone to `adb connect`: 201, then 200 while open; 409 for a phone not held in_use; 404 for another organization', async () => {
    held = await allocateInUse(c, owner, 'Pixel 8');
    const opened = await c.call('POST', remotePath(), { token: owner });
    expect(opened.status, JSON.stringify(opened.body)).toBe(201);
    address = opened.body.address;
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(Number(address.split(':')[1]) - FIRST_PORT).toBeLessThan(5);
    expect(opened.body).toEqual({ platform: 'android', address, command: `adb connect ${address}` });
    const badKey = await c.call('POST', remotePath(), { token: owner, body: { publicKey: 'not a key' } });
    expect([badKey.status, errorCode(badKey)]).toEqual([400, 'invalid_public_key']);
    const again = await c.call('POST', remotePath(), { token: owner, body: {} });
    expect([again.status, again.body.address]).toEqual([200, address]);

    const other = await c.signup('outsider@lab.test');
    const foreign = await c.call('POST', remotePath(), { token: other.token });
    expect(foreign.status).toBe(404);
    expect((await c.call('GET', remotePath(), { token: other.token })).status).toBe(404);
  });

  it('Debian adb connects with the registered key and works as on the phone itself', async () => {
    const connected = await mine.run(['connect', address]);
    expect(connected.stdout.toString()).toContain(`connected to ${address}`);
    await waitFor('the bridge to be a device', async () => (await mine.run(['devices'])).stdout.toString().includes(`${address}\tdevice`));

    expect((await sh(['shell', 'getprop', 'ro.product.model'])).stdout.toString().trim()).toBe('Pixel 8');
    // shell_v2, install's path, sync and forward pass through.
    const { pushed, forwardPort: port } = await adbWorksAsOnThePhone(sh, mine.env.TMPDIR!, 'com.example.remote', '/sdcard/big.bin');
    expect(sha256(lab.phone(held.serial).readFile('/sdcard/big.bin')!)).toBe(pushed);
    await new Promise<void>((resolve) => {
      const socket = connect({ host: '127.0.0.1', port }, () => setTimeout(() => (socket.destroy(), resolve()), 200));
      socket.on('error', () => resolve());
    });
    await waitFor('the forward to reach the phone', () => lab.phone(held.serial).state.recentServices.includes('localabstract:remote-probe'));

    const shown = await c.call('GET', remotePath(), { token: owner });
    expect(shown.status).toBe(200);
    expect(shown.body.connections).toEqual([expect.objectContaining({ peer: expect.stringMatching(/^127\.0\.0\.1:\d+$/), fingerprint: md5Fingerprint(myKey) })]);
  }, 60_000);

  it('refuses reverse, tcpip and root, which reach beyond the phone or outlive the checkout', async () => {
    const before = lab.phone(held.serial).state.recentServices.length;
    // adbd closes a service it will not open; adb says `closed`.
    const reverse = await sh(['reverse', 'tcp:7000', 'tcp:7000']);
    expect([reverse.code, reverse.stderr]).toEqual([1, 'adb: error: closed\n']);
    const tcpip = await sh(['tcpip', '5555']);
    expect([tcpip.stdout.toString(), tcpip.stderr]).toEqual(['', 'error: closed\n']);
    const root = await sh(['root']);
    expect([root.stdout.toString(), root.stderr]).toEqual(['', 'adb: unable to connect for root: closed\n']);
    const reached = lab.phone(held.serial).state.recentServices.slice(before);
    expect(reached.filter((s) => /^(reverse|tcpip|root)/.test(s))).toEqual([]);
    // The connection is still good.
    expect((await sh(['shell', 'echo', 'still'])).stdout.toString().trim()).toBe('still');
  }, 30_000);

  it('never lets a key it does not know reach a shell', async () => {
    const tried = await stranger.run(['connect', address], { timeoutMs: 30_000 });
    expect(tried.stdout.toString()).toContain(`failed to authenticate to ${address}`);
    const shell = await stranger.run(['-s', address, 'shell', 'echo', 'in'], { timeoutMs: 30_000 });
    expect(shell.code).not.toBe(0);
    expect(shell.stdout.toString()).not.toContain('in');
    // The user's own connection is untouched, and the engine still answers.
    expect((await sh(['shell', 'echo', 'ok'])).stdout.toString().trim()).toBe('ok');
    const shown = await c.call('GET', remotePath(), { token: owner });
    expect(shown.body.connections.map((x: { fingerprint: string }) => x.fingerprint)).toEqual([md5Fingerprint(myKey)]);
  }, 30_000);

  it('a stranger redialling, or sending garbage, is dropped without a shell, a crash or a flood of log lines', async () => {
    const lines: string[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void lines.push(args.join(' '));
    try {
      const port = Number(address.split(':')[1]);
      await Promise.all(Array.from({ length: 40 }, (_, i) => new Promise<void>((resolve) => {
        const socket = connect({ host: '127.0.0.1', port }, () => socket.write(i % 2 ? randomBytes(64) : Buffer.from('CNXN\0\0\0\x01')));
        socket.on('error', () => resolve());
        socket.on('close', () => resolve());
        setTimeout(() => socket.destroy(), 300);
      })));
      for (let i = 0; i < 3; i++) {
        await stranger.run(['disconnect', address]);
        const tried = await stranger.run(['connect', address], { timeoutMs: 30_000 });
        expect(tried.stdout.toString()).toContain('failed to authenticate');
      }
    } finally {
      console.warn = warn;
    }
    expect(lines.filter((l) => l.includes('refused an unknown adb key')).length).toBeLessThanOrEqual(1);
    expect((await sh(['shell', 'echo', 'alive'])).stdout.toString().trim()).toBe('alive');
    expect((await c.call('GET', '/health')).status).toBe(200);
  }, 60_000);

  it('tells of traffic on the bridge (for idle release), at most once a second', async () => {
    const seen: string[] = [];
    const listener = (id: string) => seen.push(id);
    lab.engine.engine.services.remote.on('activity', listener);
    try {
      // Traffic within a second of the last report is not reported again.
      await new Promise((r) => setTimeout(r, 1100));
      await sh(['shell', 'echo', 'busy']);
      await waitFor('an activity event', () => seen.length > 0);
      const started = performance.now();
      for (let i = 0; i < 5; i++) await sh(['shell', 'true']);
      // At most one more report for each second the five commands took (more than one on a loaded machine).
      expect(seen.length).toBeLessThanOrEqual(2 + Math.floor((performance.now() - started) / 1000));
      expect(new Set(seen).size).toBe(1);
    } finally {
      lab.engine.engine.services.remote.off('activity', listener);
    }
  });

  it('a key given with the checkout lets that key in; the lab\'s own adb server never lists the bridge as a phone', async () => {
    // The lab box's own adb server (as a user on the lab box would use it) connects with a checkout key.
    const labKey = readFileSync(join(lab.adb.env.HOME!, '.android', 'adbkey.pub'), 'utf8');
    const again = await c.call('POST', remotePath(), { token: owner, body: { publicKey: labKey } });
    expect(again.status).toBe(200);
    expect((await lab.adb.run(['connect', address])).stdout.toString()).toContain(`connected to ${address}`);
    await waitFor('the lab server to see the bridge', async () => (await lab.adb.run(['devices'])).stdout.toString().includes(`${address}\tdevice`));
    const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data.map((p: { serial: string }) => p.serial);
    expect(fleet).toContain(held.serial);
    expect(fleet).not.toContain(address);
    await lab.adb.run(['disconnect', address]);
  }, 30_000);

  it('at release the user\'s adb shows offline at once and the port refuses; the port rests before reuse', async () => {
    const port = Number(address.split(':')[1]);
    const released = await c.call('POST', `/sessions/${held.session}/devices/${held.serial}/release`, { token: owner });
    expect(released.status).toBe(202);
    await waitFor('adb to show the phone offline', async () => (await mine.run(['devices'])).stdout.toString().includes(`${address}\toffline`), 3000);
    expect(await refused(port)).toBe(true);
    const after = await c.call('GET', remotePath(), { token: owner });
    expect([after.status, errorCode(after)]).toEqual([409, 'device_not_in_use']);
    await mine.run(['disconnect', address]);

    // The next checkout gets another port while this one rests.
    const next = await allocateInUse(c, owner, 'Pixel 8');
    const opened = await c.call('POST', `/sessions/${next.session}/devices/${next.serial}/remote-connect`, { token: owner });
    expect(opened.status).toBe(201);
    expect(opened.body.address).not.toBe(address);
    // No key at all: a member without one is told to add one.
    const org = (await c.call('GET', '/organizations', { token: owner })).body.data[0].id;
    const keyless = await c.signup('keyless@lab.test');
    await c.addMember(owner, org, keyless.token, 'keyless@lab.test', 'readwrite');
    await c.call('DELETE', `/sessions/${next.session}/devices/${next.serial}/remote-connect`, { token: owner });
    const none = await c.call('POST', `/sessions/${next.session}/devices/${next.serial}/remote-connect`, { token: keyless.token, org });
    expect([none.status, errorCode(none)]).toEqual([409, 'no_adb_key']);

    // Ending the session closes it too, before the phone's cleanup.
    const reopened = await c.call('POST', `/sessions/${next.session}/devices/${next.serial}/remote-connect`, { token: owner });
    expect(reopened.status).toBe(201);
    const reopenedPort = Number(reopened.body.address.split(':')[1]);
    expect(await refused(reopenedPort)).toBe(false);
    expect((await c.call('POST', `/sessions/${next.session}/end`, { token: owner })).status).toBe(202);
    expect(await refused(reopenedPort)).toBe(true);
  }, 30_000);

  it('a phone lost for good (device_lost) closes its bridge too: the user\'s adb shows offline and the port refuses', async () => {
    const next = await allocateInUse(c, owner, 'Pixel 8');
    const opened = await c.call('POST', `/sessions/${next.session}/devices/${next.serial}/remote-connect`, { token: owner });
    expect(opened.status).toBe(201);
    const lost = opened.body.address as string;
    expect((await mine.run(['connect', lost])).stdout.toString()).toContain(`connected to ${lost}`);
    await lab.unplug(next.serial);
    await waitFor('device_lost', async () => (await c.call('GET', `/sessions/${next.session}/devices/${next.serial}`, { token: owner })).body.releasedAt !== null, 10_000);
    await waitFor('adb to show it offline', async () => (await mine.run(['devices'])).stdout.toString().includes(`${lost}\toffline`), 3000);
    expect(await refused(Number(lost.split(':')[1]))).toBe(true);
  }, 30_000);
});
