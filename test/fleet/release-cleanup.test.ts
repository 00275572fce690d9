import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../support/app-fixtures.js';
import { client } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();

/** A third-party app the lab installed before anyone held the phone: it stays, but what a holder starts of it stops. */
const LAB_APP = 'com.example.labapp';
const APPIUM_KEPT = ['io.appium.settings', 'io.appium.uiautomator2.server', 'io.appium.uiautomator2.server.test'];

describe.skipIf(!hasAdb)('release gives the next holder a clean phone (real adb, simulated phone)', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let scratch: string;
  let serial: string;

  /** `adb -s SERIAL shell ...` through the lab's adb server, as a holder's remote-connected adb runs it. */
  const shell = async (command: string) => (await lab.adb.run(['-s', serial, 'shell', command])).stdout.toString();
  const install = async (packageName: string) => {
    const apk = join(scratch, `${packageName}.apk`);
    await writeFile(apk, buildApk({ packageName }));
    expect((await lab.adb.run(['-s', serial, 'install', apk])).stdout.toString()).toMatch(/Success/);
  };
  const running = async () => (await shell('ps -A -o NAME')).split('\n').map((l) => l.trim());

  beforeAll(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'benchtop-release-cleanup-'));
    // A phone whose adbd does not hang up what a shell started, as a holder's `nohup` gets on any phone.
    lab = await startLab([{ model: 'Pixel 8', osVersion: '14', sdk: 34, keepsProcessesOnHangup: true }]);
    serial = lab.serials[0]!;
    // The lab's own files and app, there before any holder.
    const ringtone = join(scratch, 'lab-tone.ogg');
    await writeFile(ringtone, 'the lab ringtone');
    await lab.adb.run(['-s', serial, 'push', ringtone, '/sdcard/Music/lab-tone.ogg']);
    await lab.adb.run(['-s', serial, 'push', ringtone, '/data/local/tmp/lab-tool']);
    await install(LAB_APP);
    c = client(lab.engine.api);
  }, 60_000);
  afterAll(async () => {
    await lab?.stop();
    await rm(scratch, { recursive: true, force: true });
  });

  it("removes org A's files, stops the apps and shell processes A started, clears the clipboard; the lab's files and Appium's packages stay", async () => {
    const owner = await c.login();
    const a = await allocateInUse(c, owner, 'Pixel 8');
    expect(a.serial).toBe(serial);
    const base = `/sessions/${a.session}/devices/${serial}`;

    // Through the API's file push, and through adb as a remote-connected holder.
    const put = await fetch(`${lab.engine.api}${base}/files/content?path=/sdcard/Download/org-a-report.pdf`, {
      method: 'PUT', headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/octet-stream' }, body: 'org A only',
    });
    expect(put.status).toBe(204);
    await shell('mkdir -p /sdcard/Documents/org-a/deep && echo secret > /sdcard/Documents/org-a/deep/notes.txt && echo x > /data/local/tmp/org-a-tool');
    for (const packageName of ['com.android.settings', LAB_APP]) {
      expect((await c.call('POST', `${base}/actions`, { token: owner, body: { type: 'launchApp', packageName } })).status).toBe(200);
    }
    await shell("cmd clipboard set text 'org A password'");
    // A recording of the next holder's screen, left running after its adb shell closed.
    await lab.adb.run(['-s', serial, 'shell', 'screenrecord --time-limit 180 /sdcard/Movies/org-a.mp4'], { timeoutMs: 1000 }).catch(() => undefined);
    expect(await shell('pidof screenrecord')).toMatch(/^\d+\n$/);
    // A WebDriver run installs Appium's packages: the lab keeps them for the next run.
    for (const packageName of APPIUM_KEPT) await install(packageName);
    expect(await running()).toEqual(expect.arrayContaining(['com.android.settings', LAB_APP]));
    expect(await shell('cmd clipboard get text')).toBe('org A password\n');

    expect((await c.call('POST', `${base}/release`, { token: owner })).status).toBe(202);

    const other = await c.signup('next-holder@release-cleanup.test');
    // Queued until the cleanup has finished: a phone is not free before.
    const b = await allocateInUse(c, other.token, 'Pixel 8', { timeoutMs: 20_000 });
    expect(b.serial).toBe(serial);

    const listing = await c.call('GET', `/sessions/${b.session}/devices/${serial}/files?path=/sdcard/Download`, { token: other.token });
    expect(listing.status).toBe(200);
    expect(listing.body.data).toEqual([]);
    expect(await shell('ls /sdcard/Documents /data/local/tmp')).not.toMatch(/org-a/);
    const stillRunning = await running();
    expect(stillRunning).not.toContain('com.android.settings');
    expect(stillRunning).not.toContain(LAB_APP);
    expect(await shell('cmd clipboard get text')).toBe('\n');
    expect(await shell('pidof screenrecord')).toBe('');
    expect(await shell('ls /sdcard/Movies')).toBe('');

    expect(await shell('cat /sdcard/Music/lab-tone.ogg')).toBe('the lab ringtone');
    expect(await shell('cat /data/local/tmp/lab-tool')).toBe('the lab ringtone');
    const packages = await shell('pm list packages');
    for (const kept of [LAB_APP, ...APPIUM_KEPT]) expect(packages).toContain(`package:${kept}\n`);
  }, 60_000);
});
