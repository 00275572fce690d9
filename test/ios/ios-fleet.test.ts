import { setTimeout as sleep } from 'node:timers/promises';
import jpeg from 'jpeg-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { NOTES, SAFARI, SETTINGS } from '../../src/sim/ios/index.js';
import { buildIpa } from '../support/app-fixtures.js';
import { client, startEngine, type TestEngine } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { uploadReadyApp, waitFor } from '../support/lab.js';

describe('iOS fleet through usbmuxd (simulated iPhones, appium-ios-device, a real engine)', () => {
  let bus: IosBus;
  let engine: TestEngine;
  let c: ReturnType<typeof client>;
  let owner: string;

  beforeAll(async () => {
    bus = await startIosBus([
      { name: 'Ana’s iPhone', version: '17.5.1', battery: 77 },
      { name: 'Old iPhone', version: '16.7.8', battery: 30, productType: 'iPhone12,1' },
      { name: 'New iPhone', trusted: false },
    ]);
    engine = await startEngine({ usbmuxd: parseUsbmuxdAddress(bus.address), deviceGraceSeconds: 3, deviceConcurrencyQuota: 3 });
    c = client(engine.api);
    owner = await c.login();
  }, 60_000);
  afterAll(async () => {
    await engine?.stop();
    await bus?.stop();
  });

  const ios = (...more: Array<[string, string, string]>) => ({
    filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'ios' }, ...more.map(([attribute, operator, value]) => ({ attribute, operator, value }))],
  });
  const fleet = async () => (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<Record<string, any>>;
  const newSession = async (token = owner) => (await c.call('POST', '/sessions', { token })).body.id as string;
  const untilInUse = (session: string, id: string, token = owner) =>
    waitFor(`${id} in_use`, async () => {
      const d = (await c.call('GET', `/sessions/${session}/devices`, { token })).body.data.find((x: { id: string }) => x.id === id);
      return d?.status === 'in_use' ? d : undefined;
    }, 15_000);
  const act = (session: string, serial: string, body: unknown) => c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token: owner, body });

  it('lists the iPhones with name, version, UDID, battery; the untrusted one as unauthorized', async () => {
    const phones = await waitFor('three iPhones', async () => ((await fleet()).length === 3 ? fleet() : undefined));
    const [ana, old, untrusted] = bus.phones;
    expect(phones.find((p) => p.serial === ana!.udid)).toMatchObject({ platform: 'ios', name: 'Ana’s iPhone', osVersion: '17.5.1', battery: 77, state: 'device' });
    expect(phones.find((p) => p.serial === old!.udid)).toMatchObject({ osVersion: '16.7.8', battery: 30, state: 'device' });
    expect(phones.find((p) => p.serial === untrusted!.udid)).toMatchObject({ name: 'New iPhone', state: 'unauthorized' });
  });

  it('shows a phone without WebDriverAgent as wda_unavailable, and as device once WDA answers', async () => {
    const phone = await bus.plug({ name: 'No WDA', wda: false });
    await waitFor('wda_unavailable', async () => (await fleet()).find((p) => p.serial === phone.udid && p.state === 'wda_unavailable'));
    const refused = await c.call('POST', `/sessions/${await newSession()}/devices`, { token: owner, body: ios(['name', 'EQUALS', 'No WDA']) });
    expect(refused.status).toBe(201);
    phone.wdaRunning = true;
    await waitFor('device', async () => (await fleet()).find((p) => p.serial === phone.udid && p.state === 'device'), 10_000);
    phone.unplug();
    await waitFor('gone', async () => (await fleet()).find((p) => p.serial === phone.udid && p.state === 'gone'), 3000);
  });

  it('allocates an iPhone by platform and version to in_use, drives it, and every action lands on the phone', async () => {
    const session = await newSession();
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ios(['version', 'GREATER_THAN_OR_EQUALS', '17']) });
    expect(r.status).toBe(201);
    const device = await untilInUse(session, r.body.id);
    const phone = bus.phones[0]!;
    expect(device.info.serial).toBe(phone.udid);
    const serial = phone.udid;
    const board = phone.board;

    const shot = await fetch(`${engine.api}/sessions/${session}/devices/${serial}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(shot.status).toBe(200);
    const png = Buffer.from(await shot.arrayBuffer());
    expect(png.readUInt32BE(16)).toBe(750);
    expect(png.readUInt32BE(20)).toBe(1334);

    const size = await act(session, serial, { type: 'screenSize' });
    expect(size.body).toMatchObject({ width: 750, height: 1334 });
    // The phone page's details: lockdown's model, OS and CPU, WDA's screen in pixels.
    const info = await c.call('GET', `/sessions/${session}/devices/${serial}/info`, { token: owner });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({ serial, platform: 'ios', manufacturer: 'Apple', screen: { width: 750, height: 1334 } });
    expect(info.body.osVersion).not.toBe('');

    const elements = (await c.call('GET', `/sessions/${session}/devices/${serial}/elements`, { token: owner })).body.data ?? (await c.call('GET', `/sessions/${session}/devices/${serial}/elements`, { token: owner })).body;
    const notes = (elements as Array<{ text: string; className: string; bounds: { x: number; y: number; width: number; height: number } }>).find((e) => e.text === 'Notes' && e.className === 'XCUIElementTypeIcon')!;
    expect(notes).toBeDefined();
    // Pixels: twice WDA's points.
    expect(notes.bounds.width).toBe(120);

    expect((await act(session, serial, { type: 'tap', x: notes.bounds.x + 20, y: notes.bounds.y + 20 })).status).toBe(200);
    expect(board.foreground).toBe(NOTES);
    await act(session, serial, { type: 'tap', x: 300, y: 400 });
    expect(board.focused).toBe('note');
    await act(session, serial, { type: 'typeText', text: 'Buy milk' });
    expect(board.notesText).toBe('Buy milk');

    await act(session, serial, { type: 'longPress', x: 100, y: 600, durationMs: 900 });
    expect(board.lastLongPress).toMatchObject({ x: 50, y: 300 });
    expect(board.lastLongPress!.durationMs).toBeGreaterThanOrEqual(900);

    await act(session, serial, { type: 'swipe', fromX: 375, fromY: 1320, toX: 375, toY: 600, durationMs: 200 });
    expect(board.lastSwipe).toEqual({ fromX: 188, fromY: 660, toX: 188, toY: 300 });
    expect(board.foreground).toBeUndefined();

    await act(session, serial, { type: 'launchApp', packageName: SETTINGS });
    expect(board.foreground).toBe(SETTINGS);
    await act(session, serial, { type: 'pressButton', button: 'HOME' });
    expect(board.foreground).toBeUndefined();
    expect(board.running.has(SETTINGS)).toBe(true);
    await act(session, serial, { type: 'terminateApp', packageName: SETTINGS });
    expect(board.running.has(SETTINGS)).toBe(false);

    const volume = board.volume;
    await act(session, serial, { type: 'pressButton', button: 'VOLUME_UP' });
    expect(board.volume).toBe(volume + 1);
    await act(session, serial, { type: 'pressButton', button: 'VOLUME_DOWN' });
    expect(board.volume).toBe(volume);
    await act(session, serial, { type: 'pressButton', button: 'POWER' });
    expect(board.locked).toBe(true);
    await act(session, serial, { type: 'pressButton', button: 'POWER' });
    expect(board.locked).toBe(false);
    const back = await act(session, serial, { type: 'pressButton', button: 'BACK' });
    expect(back.status).toBe(400);
    expect(back.body.error.code).toBe('unsupported_button');

    await act(session, serial, { type: 'openUrl', url: 'https://example.com/page' });
    expect(board.foreground).toBe(SAFARI);
    expect(board.safariUrl).toBe('https://example.com/page');

    await act(session, serial, { type: 'setOrientation', orientation: 'landscape' });
    expect(board.orientation).toBe('LANDSCAPE');

    const apps = await act(session, serial, { type: 'listApps' });
    expect(apps.body.apps).toEqual(expect.arrayContaining([SETTINGS, SAFARI, NOTES]));

    // Release: cleanup terminates apps, goes home, portrait.
    expect((await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner })).status).toBe(202);
    await waitFor('cleaned', async () => (await fleet()).find((p) => p.serial === serial && !p.held));
    expect(board.orientation).toBe('PORTRAIT');
    expect(board.foreground).toBeUndefined();
    // WebDriverAgent's runner, brought forward to clear the pasteboard, runs as long as WDA serves.
    expect([...board.running]).toEqual([phone.wdaBundleId]);
  });

  it("streams the live screen from WDA's MJPEG server as JPEG frames, a still screen once, and each change", async () => {
    const session = await newSession();
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ios(['name', 'EQUALS', 'Ana’s iPhone']) });
    await untilInUse(session, r.body.id);
    const phone = bus.phones[0]!;
    const messages: Array<Buffer | Record<string, unknown>> = [];
    const ws = new WebSocket(`${engine.api.replace(/^http/, 'ws')}/sessions/${session}/devices/${phone.udid}/screen?token=${owner}`);
    ws.on('message', (data: Buffer, binary: boolean) => messages.push(binary ? data : JSON.parse(data.toString())));
    const frames = () => messages.filter((m): m is Buffer => Buffer.isBuffer(m));
    await waitFor('a frame', () => frames().length >= 1, 10_000);
    expect(messages[0]).toMatchObject({ type: 'hello', width: 750, height: 1334, format: 'jpeg', source: 'mjpeg' });
    const home = jpeg.decode(frames().at(-1)!);
    expect([home.width, home.height]).toEqual([750, 1334]);
    // WDA sends the still home screen 10 times a second; the viewer gets it once.
    const wdaFrames = phone.wda.mjpegFramesSent;
    await sleep(1000);
    expect(phone.wda.mjpegFramesSent - wdaFrames).toBeGreaterThanOrEqual(5);
    expect(frames()).toHaveLength(1);
    await act(session, phone.udid, { type: 'launchApp', packageName: SETTINGS });
    await waitFor('a frame of Settings', () => frames().length > 1, 10_000);
    const settings = jpeg.decode(frames().at(-1)!);
    // Settings' grouped grey background replaces the blue wallpaper in the middle of the screen.
    const at = (img: { data: Uint8Array }, x: number, y: number) => [...img.data.subarray((y * 750 + x) * 4, (y * 750 + x) * 4 + 3)];
    expect(at(home, 375, 1200)[2]).toBeGreaterThan(100);
    expect(Math.abs(at(settings, 375, 1200)[0]! - 242)).toBeLessThan(20);
    // The Clock's running stopwatch changes every picture WDA sends: each reaches the viewer.
    await act(session, phone.udid, { type: 'launchApp', packageName: 'com.apple.mobiletimer' });
    await waitFor('a frame of the Clock', () => frames().length > 2, 10_000);
    const [sentBefore, gotBefore] = [phone.wda.mjpegFramesSent, frames().length];
    await sleep(1000);
    const [sent, got] = [phone.wda.mjpegFramesSent - sentBefore, frames().length - gotBefore];
    expect(sent).toBeGreaterThanOrEqual(5);
    expect(got).toBeGreaterThanOrEqual(sent - 2);
    ws.close();
    await c.call('POST', `/sessions/${session}/devices/${phone.udid}/release`, { token: owner });
    await waitFor('cleaned', async () => (await fleet()).find((p) => p.serial === phone.udid && !p.held));
  });

  it('installs an IPA through AFC and installation_proxy, launches it, and uninstalls it at release', async () => {
    const ipa = buildIpa({ bundleId: 'com.example.ioshello', displayName: 'iOS Hello', shortVersion: '1.2', build: '3' });
    const fileId = await uploadReadyApp(c, owner, ipa, 'hello.ipa');

    const session = await newSession();
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ios(['name', 'EQUALS', 'Old iPhone']) });
    await untilInUse(session, r.body.id);
    const phone = bus.phones[1]!;
    const installed = await c.call('POST', `/sessions/${session}/devices/${phone.udid}/install`, { token: owner, body: { file: fileId, launch: true } });
    expect(installed.body).toEqual({ file: fileId, status: 'installed', bundleId: 'com.example.ioshello', launched: true });
    expect(phone.apps.get('com.example.ioshello')).toMatchObject({ version: '1.2', build: '3', type: 'User' });
    expect(phone.board.foreground).toBe('com.example.ioshello');
    // The staged copy is gone from PublicStaging.
    expect([...phone.media.files.keys()].filter((k) => k.startsWith('/PublicStaging/'))).toEqual([]);

    await c.call('POST', `/sessions/${session}/devices/${phone.udid}/release`, { token: owner });
    await waitFor('cleaned', async () => (await fleet()).find((p) => p.serial === phone.udid && !p.held));
    expect(phone.apps.has('com.example.ioshello')).toBe(false);
    // WebDriverAgent's runner, a user app installed before, is kept.
    expect(phone.apps.has('com.facebook.WebDriverAgentRunner.xctrunner')).toBe(true);

    // installApps at allocation: installed before in_use, uninstalled at release.
    const second = await newSession();
    const withApps = await c.call('POST', `/sessions/${second}/devices`, { token: owner, body: { ...ios(['name', 'EQUALS', 'Old iPhone']), installApps: [`file:${fileId}`] } });
    expect(withApps.status).toBe(201);
    await untilInUse(second, withApps.body.id);
    expect(phone.apps.has('com.example.ioshello')).toBe(true);
    await c.call('POST', `/sessions/${second}/devices/${phone.udid}/release`, { token: owner });
    await waitFor('cleaned again', async () => (await fleet()).find((p) => p.serial === phone.udid && !p.held));
    expect(phone.apps.has('com.example.ioshello')).toBe(false);
  });

  it('keeps an allocation across an unplug and replug within grace', async () => {
    const session = await newSession();
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ios(['name', 'EQUALS', 'Old iPhone']) });
    await untilInUse(session, r.body.id);
    const phone = bus.phones[1]!;
    phone.unplug();
    await waitFor('offline', async () => {
      const d = (await c.call('GET', `/sessions/${session}/devices`, { token: owner })).body.data[0];
      return d.status === 'offline' ? d : undefined;
    });
    await phone.plugInto(bus.usbmuxd);
    const back = await untilInUse(session, r.body.id);
    expect(back.info.serial).toBe(phone.udid);
    expect((await act(session, phone.udid, { type: 'pressButton', button: 'HOME' })).status).toBe(200);
    await c.call('POST', `/sessions/${session}/devices/${phone.udid}/release`, { token: owner });
  });

  it('finds an iPhone by its model as a cloud lab names it ("iPhone 11"), plugged in and while it is away', async () => {
    const old = bus.phones[1]!;
    const free = () => waitFor('Old iPhone free', async () => (await fleet()).find((p) => p.serial === old.udid && p.state === 'device' && !p.held), 15_000);
    expect((await free()).model).toBe('iPhone12,1');
    const session = await newSession();
    const byModel = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ios(['deviceName', 'EQUALS', 'Apple iPhone 11']) });
    expect(byModel.status).toBe(201);
    expect((await untilInUse(session, byModel.body.id)).info.serial).toBe(old.udid);
    await c.call('POST', `/sessions/${session}/devices/${old.udid}/release`, { token: owner });
    await free();
    // Away, it is still the lab's iPhone 11: the request waits for it rather than being told no such phone exists.
    old.unplug();
    await waitFor('gone', async () => (await fleet()).find((p) => p.serial === old.udid && p.state === 'gone'), 3000);
    const none = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ios(['deviceName', 'EQUALS', 'iPhone 12']) });
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('no_matching_device');
    const waiting = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ios(['deviceName', 'EQUALS', 'iphone 1.*'], ['version', 'LESS_THAN', '17']) });
    expect(waiting.status).toBe(201);
    expect(waiting.body.status).toBe('queued');
    await old.plugInto(bus.usbmuxd);
    expect((await untilInUse(session, waiting.body.id)).info.serial).toBe(old.udid);
    await c.call('POST', `/sessions/${session}/devices/${old.udid}/release`, { token: owner });
    await free();
  });

  it("hides another organization's iPhone: 404 for its session's device, not 403", async () => {
    const session = await newSession();
    const r = await c.call('POST', `/sessions/${session}/devices`, { token: owner, body: ios(['name', 'EQUALS', 'Ana’s iPhone']) });
    await untilInUse(session, r.body.id);
    const other = await c.signup('ios-other@ios.test');
    const udid = bus.phones[0]!.udid;
    const shot = await c.call('GET', `/sessions/${session}/devices/${udid}/screenshot`, { token: other.token });
    expect(shot.status).toBe(404);
    const tap = await c.call('POST', `/sessions/${session}/devices/${udid}/actions`, { token: other.token, body: { type: 'tap', x: 1, y: 1 } });
    expect(tap.status).toBe(404);
    const theirs = await c.call('POST', '/sessions', { token: other.token });
    expect((await c.call('GET', `/sessions/${theirs.body.id}/devices/${udid}/screenshot`, { token: other.token })).status).toBe(404);
    await c.call('POST', `/sessions/${session}/devices/${udid}/release`, { token: owner });
  });
});
