import Database from 'better-sqlite3';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, errorCode } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';

const hasAdb = adbOrSkip();
const ANDROID = { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] };

describe.skipIf(!hasAdb)('device control on an in_use phone', () => {
  let lab: TestLab;
  let c: ReturnType<typeof client>;
  let owner: string;
  let session: string;
  let serial: string;
  const act = (body: unknown, token = owner) => c.call('POST', `/sessions/${session}/devices/${serial}/actions`, { token, body });

  beforeAll(async () => {
    lab = await startLab([{ model: 'Pixel 7', osVersion: '14' }, { model: 'Pixel 5', osVersion: '12' }]);
    c = client(lab.engine.api);
    owner = await c.login();
    ({ session, serial } = await allocateInUse(c, owner, 'Pixel 7'));
  }, 60_000);
  afterAll(() => lab?.stop());

  const phone = () => lab.phone(serial).state;
  const png = async () => {
    const r = await fetch(`${lab.engine.api}/sessions/${session}/devices/${serial}/screenshot`, { headers: { authorization: `Bearer ${owner}` } });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('image/png');
    return PNG.sync.read(Buffer.from(await r.arrayBuffer()));
  };

  it('screenshot is a PNG of the phone\'s screen, and it changes when the screen does', async () => {
    const before = await png();
    expect([before.width, before.height]).toEqual([720, 1280]);
    await act({ type: 'tap', x: 360, y: 700 });
    const after = await png();
    expect(Buffer.compare(before.data, after.data)).not.toBe(0);
  });

  it('elements lists the launcher\'s apps with text, class, bounds and clickable, from the UI dump', async () => {
    await act({ type: 'pressButton', button: 'HOME' });
    const r = await c.call('GET', `/sessions/${session}/devices/${serial}/elements`, { token: owner });
    expect(r.status).toBe(200);
    const settings = r.body.data.find((e: { text: string }) => e.text === 'Settings');
    expect(settings).toMatchObject({ clickable: true });
    expect(settings.bounds.width).toBeGreaterThan(0);
    expect(typeof settings.className).toBe('string');
    // tapping the middle of an element's bounds opens it: the list is what is on screen
    const { x, y, width, height } = settings.bounds;
    await act({ type: 'tap', x: x + Math.floor(width / 2), y: y + Math.floor(height / 2) });
    expect(phone().foregroundPackage).toBe('com.android.settings');
    expect(phone().lastTap).toEqual({ x: x + Math.floor(width / 2), y: y + Math.floor(height / 2) });
  });

  it('every action changes the phone as it would a real one', async () => {
    expect((await act({ type: 'pressButton', button: 'BACK' })).status).toBe(200);
    expect(phone().screen).toBe('home');
    await act({ type: 'launchApp', packageName: 'com.example.notes' });
    expect(phone().foregroundPackage).toBe('com.example.notes');
    const elements = (await c.call('GET', `/sessions/${session}/devices/${serial}/elements`, { token: owner })).body.data;
    const field = elements.find((e: { resourceId: string }) => e.resourceId === 'com.example.notes:id/note_text');
    await act({ type: 'tap', x: field.bounds.x + 5, y: field.bounds.y + 5 });
    await act({ type: 'typeText', text: 'hello world' });
    await act({ type: 'typeText', text: ' — héllo 日本' });
    expect(phone().notesText).toBe('hello world — héllo 日本');
    const dumped = (await c.call('GET', `/sessions/${session}/devices/${serial}/elements`, { token: owner })).body.data;
    expect(dumped.some((e: { text: string }) => e.text === 'hello world — héllo 日本')).toBe(true);
    await act({ type: 'pressButton', button: 'ENTER' });
    await act({ type: 'longPress', x: 100, y: 200 });
    expect(phone().lastLongPress).toEqual({ x: 100, y: 200 });
    await act({ type: 'swipe', fromX: 360, fromY: 1000, toX: 360, toY: 300, durationMs: 200 });
    expect(phone().lastSwipe).toEqual({ x1: 360, y1: 1000, x2: 360, y2: 300, durationMs: 200 });
    await act({ type: 'terminateApp', packageName: 'com.example.notes' });
    expect(phone().foregroundPackage).not.toBe('com.example.notes');
    const apps = (await act({ type: 'listApps' })).body.apps;
    expect(apps).toEqual(expect.arrayContaining(['com.android.settings', 'com.example.notes']));
    await act({ type: 'openUrl', url: 'https://example.com/path?q=1&r=2' });
    expect(phone().browserUrl).toBe('https://example.com/path?q=1&r=2');
    const volume = phone().volume;
    await act({ type: 'pressButton', button: 'VOLUME_UP' });
    expect(phone().volume).toBe(volume + 1);
    await act({ type: 'pressButton', button: 'VOLUME_DOWN' });
    expect(phone().volume).toBe(volume);
    await act({ type: 'pressButton', button: 'APP_SWITCH' });
    expect(phone().screen).toBe('recents');
    await act({ type: 'pressButton', button: 'HOME' });
    await act({ type: 'setOrientation', orientation: 'landscape' });
    expect(phone().rotation).toBe(1);
    // like `wm size`, the physical size does not turn with the screen
    expect((await act({ type: 'screenSize' })).body).toMatchObject({ width: 720, height: 1280 });
    expect([phone().width, phone().height]).toEqual([1280, 720]);
    await act({ type: 'setOrientation', orientation: 'portrait' });
    expect(phone().rotation).toBe(0);
    await act({ type: 'pressButton', button: 'POWER' });
    expect(phone().awake).toBe(false);
    await act({ type: 'pressButton', button: 'POWER' });
    expect(phone().awake).toBe(true);
  });

  it('400 for malformed actions; 403 for a readonly member, who may still read the screen', async () => {
    for (const body of [{}, { type: 'fly' }, { type: 'tap', x: -1, y: 0 }, { type: 'tap', x: 'a', y: 0 }, { type: 'launchApp', packageName: 'x; rm -rf /' },
      { type: 'pressButton', button: 'MENU' }, { type: 'typeText', text: '' }, { type: 'openUrl', url: 'has space' }]) {
      const r = await act(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      errorCode(r);
    }
    const shared = await c.createOrganization(owner, 'Control lab');
    const reader = await c.signup('reader@control.test');
    await c.addMember(owner, shared, reader.token, 'reader@control.test', 'readonly');
    const sharedSession = (await c.call('POST', '/sessions', { token: owner, org: shared })).body.id;
    const a = (await c.call('POST', `/sessions/${sharedSession}/devices`, { token: owner, org: shared, body: { filters: [...ANDROID.filters, { attribute: 'name', operator: 'EQUALS', value: 'Pixel 5' }] } })).body;
    const d = await waitFor('in_use', async () => {
      const x = (await c.call('GET', `/sessions/${sharedSession}/devices/${a.id}`, { token: reader.token, org: shared })).body;
      return x.status === 'in_use' ? x : undefined;
    });
    const base = `/sessions/${sharedSession}/devices/${d.info.serial}`;
    const r = await c.call('POST', `${base}/actions`, { token: reader.token, org: shared, body: { type: 'tap', x: 1, y: 1 } });
    expect(r.status).toBe(403);
    expect(errorCode(r)).toBe('insufficient_role');
    expect((await c.call('GET', `${base}/elements`, { token: reader.token, org: shared })).status).toBe(200);
    // and the owner's Personal session is another organization's to them
    expect((await c.call('GET', `/sessions/${session}/devices/${serial}/elements`, { token: reader.token })).status).toBe(404);
    await c.call('POST', `${base}/release`, { token: owner, org: shared });
  });

  it('409 once the device is released; 404 for a serial the session never had', async () => {
    expect((await c.call('GET', `/sessions/${session}/devices/no-such-serial/elements`, { token: owner })).status).toBe(404);
    await c.call('POST', `/sessions/${session}/devices/${serial}/release`, { token: owner });
    const r = await c.call('GET', `/sessions/${session}/devices/${serial}/elements`, { token: owner });
    expect(r.status).toBe(409);
    expect(errorCode(r)).toBe('device_not_in_use');
  });
});

describe.skipIf(!hasAdb)('restart recovery', () => {
  let lab: TestLab;
  afterAll(() => lab?.stop());

  it('reconciles allocations with the phones attached after a restart; nothing stays provisioning', async () => {
    lab = await startLab([{ model: 'Pixel 8' }, { model: 'Pixel 6' }], { deviceGraceSeconds: 2 });
    let c = client(lab.engine.api);
    let owner = await c.login();
    const kept = await allocateInUse(c, owner, 'Pixel 8');
    const lost = await allocateInUse(c, owner, 'Pixel 6');
    const queuedSession = (await c.call('POST', '/sessions', { token: owner })).body.id;
    const queued = (await c.call('POST', `/sessions/${queuedSession}/devices`, { token: owner, body: ANDROID })).body;
    expect(queued.status).toBe('queued');

    // The engine stops; while it is down one phone is pulled and one allocation is caught mid-provisioning.
    await lab.engine.engine.stop();
    await lab.unplug(lost.serial);
    const db = new Database(join(lab.engine.dataDir, 'benchtop.db'));
    db.prepare("UPDATE device_allocations SET status = 'provisioning', packages_before = NULL WHERE id = ?").run(kept.id);
    db.close();

    lab.engine = await lab.engine.restart();
    c = client(lab.engine.api);
    owner = await c.login();
    const statusOf = async (session: string, id: string) =>
      (await c.call('GET', `/sessions/${session}/devices`, { token: owner })).body.data.find((d: { id: string }) => d.id === id);

    await waitFor('the provisioning allocation to be in_use again', async () => (await statusOf(kept.session, kept.id)).status === 'in_use');
    expect((await statusOf(lost.session, lost.id)).status).toBe('offline');
    const gone = await waitFor('the missing phone to be lost', async () => {
      const d = await statusOf(lost.session, lost.id);
      return d.status === 'released' ? d : undefined;
    }, 6000);
    expect(gone.releaseReason).toBe('device_lost');

    // the queued allocation gets the first phone that frees up
    await lab.replug(lost.serial);
    const served = await waitFor('the queued allocation to be served', async () => {
      const d = await statusOf(queuedSession, queued.id);
      return d.status === 'in_use' ? d : undefined;
    });
    expect(served.info.serial).toBe(lost.serial);
  });
});

describe.skipIf(!hasAdb)('the fleet before its first look after a start', () => {
  it('a phone the last run stored as attached is not listed as attached until this run has seen it', async () => {
    const lab = await startLab([{ model: 'Pixel 7', osVersion: '14' }]);
    // An adb server that accepts and never answers: the started engine's first look at the phones never ends.
    const held = new Set<Socket>();
    const silent = createServer((socket) => void held.add(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      let c = client(lab.engine.api);
      let token = await c.login();
      const listed = async () => ((await c.call('GET', '/fleet/devices', { token })).body.data as Array<{ serial: string; state: string }>).find((d) => d.serial === lab.serials[0]);
      await waitFor('the phone attached', async () => (await listed())?.state === 'device');
      // The engine stops with the phone attached, so its stored row says attached, as after a crash.
      lab.engine = await lab.engine.restart({ adb: { host: '127.0.0.1', port: (silent.address() as AddressInfo).port } });
      c = client(lab.engine.api);
      token = await c.login();
      expect(await listed()).toMatchObject({ serial: lab.serials[0], state: 'gone' });
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
      await lab.stop();
    }
  });
});
