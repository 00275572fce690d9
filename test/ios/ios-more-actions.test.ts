/**
 * The iPhone actions the phone page and the assistant's tools can send beyond the basic ones: doubleTap,
 * foregroundApp, uninstallApp and getOrientation, each checked against the simulated iPhone's state (before these
 * were implemented the iOS driver answered {ok: true} without doing anything).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { SETTINGS } from '../../src/sim/ios/index.js';
import { buildIpa } from '../support/app-fixtures.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { allocateInUse, uploadReadyApp, waitFor } from '../support/lab.js';
import { ffmpegOrSkip, ffprobe } from '../support/ffmpeg.js';
import { mp4Boxes } from '../support/mp4-boxes.js';

describe('iOS: doubleTap, foregroundApp, uninstallApp, getOrientation on a simulated iPhone', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;
  let session: string;
  let udid: string;
  const act = (body: unknown) => c.call('POST', `/sessions/${session}/devices/${udid}/actions`, { token: owner, body });

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Actions iPhone' }]);
    udid = bus.phones[0]!.udid;
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address) });
    c = client(engine.api);
    owner = await c.login();
    // An allocation that matches nothing is refused at once: the fleet must have read the phone first.
    await waitFor('the iPhone in the fleet', async () => ((await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ state: string }>).some((p) => p.state === 'device'), 15_000);
    ({ session } = await allocateInUse(c, owner, undefined, { platform: 'ios', timeoutMs: 15_000 }));
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  it('foregroundApp names the app in front, and nothing on the home screen', async () => {
    expect((await act({ type: 'foregroundApp' })).body).toEqual({ ok: true, packageName: '' });
    await act({ type: 'launchApp', packageName: SETTINGS });
    expect((await act({ type: 'foregroundApp' })).body).toEqual({ ok: true, packageName: SETTINGS });
    await act({ type: 'pressButton', button: 'HOME' });
  });

  it('doubleTap touches twice at the point: an app\'s "Tap me" counts two', async () => {
    const ipa = buildIpa({ bundleId: 'com.example.twice', displayName: 'Twice', shortVersion: '1.0', build: '1' });
    const fileId = await uploadReadyApp(c, owner, ipa, 'twice.ipa');
    expect((await c.call('POST', `/sessions/${session}/devices/${udid}/install`, { token: owner, body: { file: fileId, launch: true } })).status).toBe(200);
    const elements = (await c.call('GET', `/sessions/${session}/devices/${udid}/elements`, { token: owner })).body.data as Array<{ text: string; bounds: { x: number; y: number; width: number; height: number } }>;
    const button = elements.find((e) => e.text === 'Tap me')!;
    const r = await act({ type: 'doubleTap', x: button.bounds.x + button.bounds.width / 2, y: button.bounds.y + button.bounds.height / 2 });
    expect(r.status).toBe(200);
    expect(bus.phones[0]!.board.taps.get('com.example.twice')).toBe(2);
  });

  it('uninstallApp removes an installed app, and refuses one that is not installed', async () => {
    expect(bus.phones[0]!.apps.has('com.example.twice')).toBe(true);
    expect((await act({ type: 'uninstallApp', packageName: 'com.example.twice' })).status).toBe(200);
    expect(bus.phones[0]!.apps.has('com.example.twice')).toBe(false);
    const again = await act({ type: 'uninstallApp', packageName: 'com.example.twice' });
    // As on Android: the phone could not do it, a 409 device_error in the API's error body.
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('device_error');
    expect(again.body.error.message).toMatch(/com\.example\.twice is not installed/);
  });

  it('getOrientation reads what setOrientation set', async () => {
    expect((await act({ type: 'getOrientation' })).body).toEqual({ ok: true, orientation: 'portrait' });
    await act({ type: 'setOrientation', orientation: 'landscape' });
    expect(bus.phones[0]!.board.orientation).toBe('LANDSCAPE');
    expect((await act({ type: 'getOrientation' })).body).toEqual({ ok: true, orientation: 'landscape' });
    await act({ type: 'setOrientation', orientation: 'portrait' });
  });

  it('records the screen from WebDriverAgent\'s MJPEG feed into an H.264 MP4, its index first', async () => {
    const started = await c.call('POST', `/sessions/${session}/devices/${udid}/recording`, { token: owner });
    expect([started.status, started.body.timeLimitSeconds]).toEqual([201, 180]);
    await act({ type: 'pressButton', button: 'HOME' });
    await new Promise((r) => setTimeout(r, 300));
    const stopped = await fetch(`${engine.api}/sessions/${session}/devices/${udid}/recording/stop`, { method: 'POST', headers: { authorization: `Bearer ${owner}` } });
    expect([stopped.status, stopped.headers.get('content-type')]).toEqual([200, 'video/mp4']);
    const mp4 = Buffer.from(await stopped.arrayBuffer());
    const boxes = mp4Boxes(mp4);
    expect(boxes.types.slice(0, 2)).toEqual(['ftyp', 'moov']);
    expect(boxes.sampleEntry).toBe('avc1');
    expect(boxes.samples).toBeGreaterThanOrEqual(2);
    expect(boxes.firstSampleNalTypes).toContain(5);
    // WDA's frames: the simulated iPhone's 375x667 points at scale 2.
    if (ffmpegOrSkip()) expect(ffprobe({ bytes: mp4 }).streams[0]).toMatchObject({ codec_name: 'h264', width: 750, height: 1334 });
  });

  it('without ffmpeg on the lab\'s machine, a recording is refused with 409 naming the package, and the lab goes on', async () => {
    const path = process.env.PATH;
    process.env.PATH = '/nonexistent';
    let refused;
    try {
      refused = await c.call('POST', `/sessions/${session}/devices/${udid}/recording`, { token: owner });
    } finally {
      process.env.PATH = path;
    }
    expect([refused.status, refused.body.error.code]).toEqual([409, 'recording_unsupported']);
    expect(refused.body.error.message).toContain('Debian package `ffmpeg`');
    expect((await c.call('POST', `/sessions/${session}/devices/${udid}/recording/stop`, { token: owner })).body.error.code).toBe('not_recording');
    expect((await act({ type: 'getOrientation' })).status).toBe(200);
  });

  it('has no shell and says why; its files are an app\'s Documents, so a path alone is refused', async () => {
    const shell = await c.call('GET', `/sessions/${session}/devices/${udid}/shell`, { token: owner });
    expect([shell.status, shell.body.error.code]).toEqual([409, 'shell_unsupported']);
    expect(shell.body.error.message).toMatch(/iOS runs no shell/);
    const files = await c.call('GET', `/sessions/${session}/devices/${udid}/files?path=/sdcard`, { token: owner });
    expect([files.status, files.body.error.code]).toEqual([400, 'app_required']);
  });
});
