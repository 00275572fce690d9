/**
 * Releasing an iPhone gives the next holder a clean phone: the apps the holder started terminated, the pasteboard
 * cleared through WebDriverAgent, what they wrote into an app's shared Documents removed (the lab's file there stays),
 * and a screen recording left running ended at once (its ffmpeg gone).
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { NOTES, SETTINGS } from '../../src/sim/ios/index.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { ffmpegOrSkip } from '../support/ffmpeg.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { allocateInUse, waitFor } from '../support/lab.js';

/** The ffmpeg processes this test process (the engine runs in it) has started. */
function ffmpegChildren(): string[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-x', 'ffmpeg'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

const FIELD_NOTES = 'com.example.fieldnotes';

describe('iPhone release resets what the lab can reach (simulated iPhone)', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;

  beforeAll(async () => {
    // The lab's own app, whose Documents the holder can write through house_arrest.
    bus = await startIosBus([{ name: 'Shared iPhone', userApps: [{ bundleId: FIELD_NOTES, name: 'Field Notes', fileSharing: true, documents: { 'lab-template.txt': 'the lab template' } }] }]);
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address) });
    c = client(engine.api);
    const owner = await c.login();
    await waitFor('the iPhone in the fleet', async () => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ state: string }>).some((p) => p.state === 'device'), 15_000);
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  it('terminates what the holder started, clears the pasteboard, removes their Documents files, and ends a running recording within two seconds', async () => {
    const owner = await c.login();
    const phone = bus.phones[0]!;
    const a = await allocateInUse(c, owner, undefined, { platform: 'ios', timeoutMs: 15_000 });
    const act = (body: unknown) => c.call('POST', `/sessions/${a.session}/devices/${a.serial}/actions`, { token: owner, body });
    for (const packageName of [SETTINGS, NOTES]) expect((await act({ type: 'launchApp', packageName })).status).toBe(200);
    // What the holder copied on the phone.
    phone.board.pasteboard = 'org A password';
    const put = await fetch(`${engine.api}/sessions/${a.session}/devices/${a.serial}/files/content?app=${FIELD_NOTES}&path=/Documents/org-a.txt`, {
      method: 'PUT', headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/octet-stream' }, body: 'org A only',
    });
    expect(put.status).toBe(204);
    const recording = ffmpegOrSkip();
    if (recording) {
      expect((await c.call('POST', `/sessions/${a.session}/devices/${a.serial}/recording`, { token: owner })).status).toBe(201);
      expect(ffmpegChildren()).toHaveLength(1);
    }

    expect((await c.call('POST', `/sessions/${a.session}/devices/${a.serial}/release`, { token: owner })).status).toBe(202);
    if (recording) await waitFor('ffmpeg to end after the release', () => ffmpegChildren().length === 0, 2000);

    const other = await c.signup('next-holder@ios-release.test');
    // Queued until the cleanup has finished: a phone is not free before.
    const b = await allocateInUse(c, other.token, undefined, { platform: 'ios', timeoutMs: 20_000 });
    expect(b.serial).toBe(a.serial);
    expect(phone.board.pasteboard).toBe('');
    const documents = await c.call('GET', `/sessions/${b.session}/devices/${b.serial}/files?app=${FIELD_NOTES}&path=/Documents`, { token: other.token });
    expect(documents.body.data.map((f: { name: string }) => f.name)).toEqual(['lab-template.txt']);
    expect([...phone.board.running]).not.toEqual(expect.arrayContaining([SETTINGS]));
    expect([...phone.board.running]).not.toEqual(expect.arrayContaining([NOTES]));
  }, 60_000);
});
