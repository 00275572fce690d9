import { connect, createServer, type Server } from 'node:net';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Device, NOTES_PACKAGE, SETTINGS_PACKAGE } from '../../src/sim/android/device.js';
import { Screen } from '../../src/sim/android/screen.js';
import { Uiautomator2Server } from '../../src/sim/android/uiautomator2/server.js';

/*
 * The simulated phone's UiAutomator2 server, driven over real HTTP on a loopback port with the requests Appium's
 * UiAutomator2 driver sends it (strategy/selector finds, {text, replace} send keys, W3C actions). Each connection is
 * handed to the server as the phone's port 6790 hands it an adb forward stream.
 */

const W3C = 'element-6066-11e4-a52e-4f735466cecf';

interface Answer {
  status: number;
  body: { value: any; sessionId: string | null };
}

describe('UiAutomator2 server of the simulated phone', () => {
  let device: Device;
  let screen: Screen;
  let server: Uiautomator2Server;
  let tcp: Server;
  let base: string;
  let session: string;
  let stops = 0;

  const call = async (method: string, path: string, body?: unknown): Promise<Answer> => {
    const res = await fetch(base + path, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    return { status: res.status, body: await res.json() };
  };
  const s = (path: string) => `/session/${session}${path}`;
  const ok = async (method: string, path: string, body?: unknown) => {
    const r = await call(method, s(path), body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.sessionId).toBe(session);
    return r.body.value;
  };
  const find = async (strategy: string, selector: string): Promise<string> => {
    const value = await ok('POST', '/element', { strategy, selector, context: '' });
    expect(value.ELEMENT).toBe(value[W3C]);
    return value[W3C];
  };
  const source = async (): Promise<string> => ok('GET', '/source');

  beforeAll(async () => {
    device = new Device({
      model: 'Pixel 7 Sim',
      manufacturer: 'Benchtop',
      brand: 'benchtop',
      productName: 'benchsim',
      deviceName: 'benchsim',
      osVersion: '13',
      sdk: 33,
      serialNo: 'SIMUIA2',
      battery: 77,
      width: 720,
      height: 1280,
      density: 320,
      installMs: 0,
      abi: 'arm64-v8a',
      refreshRate: 60,
      minicapCapture: true,
    });
    device.wake();
    device.unlock();
    screen = new Screen(device);
    server = new Uiautomator2Server(device, { screen, version: { name: '7.0.0', code: 170 }, onStop: () => stops++ });
    tcp = createServer((socket) => server.handle(socket));
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
    const address = tcp.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  });

  afterAll(async () => {
    server?.close();
    await new Promise((resolve) => tcp?.close(resolve));
  });

  it('reports its status without a session, at the root and under /wd/hub', async () => {
    for (const path of ['/status', '/wd/hub/status']) {
      const r = await call('GET', path);
      expect(r).toEqual({
        status: 200,
        body: { value: { ready: true, message: 'UiAutomator2 Server is ready to accept commands', build: { versionName: '7.0.0', versionCode: 170 } }, sessionId: 'None' },
      });
    }
  });

  it('answers an HTTP/1.0 request whose sender half-closes, then closes the connection', async () => {
    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    socket.end('GET /status HTTP/1.0\r\n\r\n');
    await closed;
    const text = Buffer.concat(chunks).toString('utf8');
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)).value.ready).toBe(true);
  });

  it('answers an unknown route and an unknown session with the W3C errors, never a hang', async () => {
    const unknown = await call('POST', '/wd/hub/session/abc/appium/no_such_thing', {});
    expect(unknown.status).toBe(404);
    expect(unknown.body.sessionId).toBeNull();
    expect(unknown.body.value).toMatchObject({ error: 'unknown command', message: expect.stringContaining('could not be found') });
    expect(unknown.body.value.stacktrace).toContain('UnknownCommandException');
    expect((await call('DELETE', '/status')).body.value.error).toBe('unknown command');

    const noSession = await call('GET', '/session/0b0e-not-a-session/source');
    expect(noSession).toMatchObject({ status: 404, body: { sessionId: '0b0e-not-a-session' } });
    expect(noSession.body.value).toMatchObject({ error: 'invalid session id', message: 'The session identified by 0b0e-not-a-session is not known' });
  });

  it('creates a session from the driver’s capabilities, echoing them', async () => {
    const capabilities = { firstMatch: [{ platformName: 'Android', 'appium:automationName': 'UiAutomator2' }], alwaysMatch: {} };
    const r = await call('POST', '/wd/hub/session', { capabilities });
    expect(r.status).toBe(200);
    session = r.body.sessionId!;
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.body.value).toEqual({ sessionId: session, capabilities });
    expect((await call('POST', '/session', {})).body.value.error).toBe('session not created');
    // The failed attempt left the session in place.
    expect(await ok('GET', '/window/current/size')).toEqual({ width: 720, height: 1280 });
  });

  it('answers the routes the driver calls at session start from the phone', async () => {
    expect(await ok('GET', '/appium/device/pixel_ratio')).toBe(2);
    expect(await ok('GET', '/appium/device/system_bars')).toEqual({ statusBar: 48 });
    expect(await ok('GET', '/appium/device/display_density')).toBe(320);
    expect(await ok('GET', '/appium/device/info')).toMatchObject({
      manufacturer: 'Benchtop',
      model: 'Pixel 7 Sim',
      apiVersion: '33',
      platformVersion: '13',
      realDisplaySize: '720x1280',
      displayDensity: 320,
      androidId: device.settings.secure.get('android_id'),
    });
    expect(await ok('GET', '/window/abc/size')).toEqual({ width: 720, height: 1280 });
    expect(await ok('GET', '/appium/settings')).toMatchObject({ shouldUseCompactResponses: true, disableIdLocatorAutocompletion: false });
    expect(await ok('POST', '/appium/settings', { settings: { ignoreUnimportantViews: true, noSuchSetting: 1 } })).toBeNull();
    const settings = await ok('GET', '/appium/settings');
    expect(settings.ignoreUnimportantViews).toBe(true);
    expect(settings).not.toHaveProperty('noSuchSetting');
  });

  it('writes page source in the server’s XML: a hierarchy root, tags named after the class, the dumper’s attribute order', async () => {
    device.launch(SETTINGS_PACKAGE);
    const xml = await source();
    expect(xml.startsWith("<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<hierarchy index=\"0\" class=\"hierarchy\" rotation=\"0\" width=\"720\" height=\"1280\">\n")).toBe(true);
    expect(xml.endsWith('</hierarchy>')).toBe(true);
    const wifi = /<android\.widget\.TextView ([^>]*text="Wi-Fi"[^>]*?) \/>/.exec(xml);
    expect(wifi).not.toBeNull();
    const names = [...wifi![1]!.matchAll(/([\w-]+)="/g)].map((m) => m[1]);
    expect(names.slice(0, 18)).toEqual([
      'index', 'package', 'class', 'text', 'resource-id', 'checkable', 'checked', 'clickable', 'enabled', 'focusable', 'focused',
      'long-clickable', 'password', 'scrollable', 'selected', 'bounds', 'displayed', 'a11y-important',
    ]);
    expect(wifi![1]).toMatch(/^index="0" package="com.android.settings" class="android.widget.TextView" text="Wi-Fi" resource-id="android:id\/title"/);
    expect(xml).toContain('<androidx.recyclerview.widget.RecyclerView index="1" package="com.android.settings"');
    expect(xml).not.toContain('uiElementIndex');
  });

  it('finds elements by xpath, -android uiautomator, id, accessibility id and class name', async () => {
    const byXpath = await find('xpath', '//android.widget.TextView[@text="Wi-Fi"]');
    // The same view found another way has the same id.
    expect(await find('-android uiautomator', 'new UiSelector().text("Wi-Fi")')).toBe(byXpath);
    expect(await find('-android uiautomator', 'new UiSelector().resourceId("android:id/title").textContains("Blue")')).not.toBe(byXpath);
    expect(await ok('GET', `/element/${await find('-android uiautomator', 'new UiSelector().className("android.widget.TextView").textStartsWith("Blue")')}/text`)).toBe(
      'Bluetooth',
    );
    expect(await ok('GET', `/element/${await find('-android uiautomator', '.description("Pixel").instance(0);new UiSelector().text("Display")')}/text`)).toBe('Display');

    const titles = await ok('POST', '/elements', { strategy: 'id', selector: 'android:id/title' });
    expect(titles.length).toBeGreaterThanOrEqual(7);
    expect(titles[0][W3C]).toBe(byXpath);
    // A bare id is completed with the package in front, as the server does: `title` is android's, so not found.
    await find('id', 'recycler_view');
    const bare = await call('POST', s('/element'), { strategy: 'id', selector: 'title' });
    expect(bare).toMatchObject({ status: 404, body: { sessionId: session, value: { error: 'no such element' } } });
    expect((await ok('POST', '/elements', { strategy: 'id', selector: 'title' })).length).toBe(0);

    const list = await find('class name', 'androidx.recyclerview.widget.RecyclerView');
    expect(await ok('GET', `/element/${list}/attribute/scrollable`)).toBe('true');
    // Searches within an element see only its subtree.
    const row = await ok('POST', '/element', { strategy: 'xpath', selector: '//android.widget.LinearLayout[2]', context: list });
    const rowText = await ok('POST', '/element', { strategy: 'id', selector: 'android:id/title', context: row[W3C] });
    expect(await ok('GET', `/element/${rowText[W3C]}/text`)).toBe('Bluetooth');

    const bad = await call('POST', s('/element'), { strategy: 'xpath', selector: '//*[' });
    expect(bad).toMatchObject({ status: 400, body: { value: { error: 'invalid selector' } } });
    expect((await call('POST', s('/element'), { strategy: '-android uiautomator', selector: 'new UiSelector().bogus(1)' })).body.value.error).toBe('invalid selector');
    expect((await call('POST', s('/element'), { strategy: 'css selector', selector: 'x' })).body.value.error).toBe('invalid selector');
    expect((await call('POST', s('/element'), { strategy: 'xpath' })).body.value.error).toBe('invalid argument');

    device.goHome();
    const icon = await find('accessibility id', 'Notes');
    expect(await ok('GET', `/element/${icon}/attribute/content-desc`)).toBe('Notes');
    device.launch(SETTINGS_PACKAGE);
  });

  it('reads element attributes and rect, and clicks Wi-Fi the way a tap on the screen does', async () => {
    const wifi = await find('xpath', '//*[@text="Wi-Fi"]');
    expect(await ok('GET', `/element/${wifi}/attribute/resource-id`)).toBe('android:id/title');
    expect(await ok('GET', `/element/${wifi}/attribute/displayed`)).toBe('true');
    expect(await ok('GET', `/element/${wifi}/attribute/enabled`)).toBe('true');
    expect(await ok('GET', `/element/${wifi}/attribute/selected`)).toBe('false');
    expect(await ok('GET', `/element/${wifi}/attribute/name`)).toBe('Wi-Fi');
    expect(await ok('GET', `/element/${wifi}/attribute/content-desc`)).toBeNull();
    const unknownAttr = await call('GET', s(`/element/${wifi}/attribute/colour`));
    expect(unknownAttr).toMatchObject({ status: 404, body: { value: { error: 'unknown command' } } });
    const rect = await ok('GET', `/element/${wifi}/rect`);
    const bounds = /text="Wi-Fi"[^>]*bounds="\[(\d+),(\d+)\]\[(\d+),(\d+)\]"/.exec(await source())!.slice(1).map(Number);
    expect(rect).toEqual({ x: bounds[0], y: bounds[1], width: bounds[2]! - bounds[0]!, height: bounds[3]! - bounds[1]! });

    expect(await ok('POST', `/element/${wifi}/click`, { element: wifi })).toBeNull();
    expect(device.settingsPage).toBe('wifi');
    expect(device.lastTap).toEqual({ x: rect.x + Math.floor(rect.width / 2), y: rect.y + Math.floor(rect.height / 2) });
    const xml = await source();
    expect(xml).toContain('text="Use Wi-Fi"');
    expect(xml).not.toContain('text="Bluetooth"');
    // The old element is now another view: a TextView with the same id in the same place, as a recycled row is.
    expect(await ok('GET', `/element/${wifi}/text`)).toBe('Use Wi-Fi');

    const toggle = await find('-android uiautomator', 'new UiSelector().className("android.widget.Switch")');
    expect(await ok('GET', `/element/${toggle}/attribute/checked`)).toBe('true');
    await ok('POST', `/element/${await find('xpath', '//*[@text="Use Wi-Fi"]/..')}/click`, {});
    expect(device.wifi).toBe(false);
    expect(await ok('GET', `/element/${toggle}/attribute/checked`)).toBe('false');

    expect(await ok('POST', '/back', {})).toBeNull();
    expect(device.settingsPage).toBe('main');
    expect(await source()).toContain('text="About phone"');
    // A view that went away is stale.
    expect((await call('GET', s(`/element/${toggle}/text`))).body.value.error).toBe('stale element reference');
    device.setWifi(true);
  });

  it('types into the Notes field, replaces, clears and reads the text back', async () => {
    device.launch(NOTES_PACKAGE);
    const field = await find('id', 'note_text');
    expect(await ok('GET', `/element/${field}/text`)).toBe('Type a note');
    expect(await ok('GET', `/element/${field}/attribute/hint`)).toBe('Type a note');
    await ok('POST', `/element/${field}/value`, { elementId: field, text: 'Hello', replace: false });
    expect(await ok('GET', `/element/${field}/text`)).toBe('Hello');
    await ok('POST', `/element/${field}/value`, { elementId: field, text: ' from Appium', replace: false });
    expect(device.notes.text).toBe('Hello from Appium');
    // The phone's own keyboard input lands in the same field.
    device.typeText('!');
    expect(await ok('GET', `/element/${field}/text`)).toBe('Hello from Appium!');
    await ok('POST', `/element/${field}/value`, { elementId: field, text: 'Replaced', replace: true });
    expect(await ok('GET', `/element/${field}/text`)).toBe('Replaced');
    expect(await source()).toMatch(/<android\.widget\.EditText [^>]*text="Replaced"[^>]*focused="true"/);
    await ok('POST', `/element/${field}/clear`, { elementId: field });
    expect(device.notes.text).toBe('');
    expect(await ok('GET', `/element/${field}/text`)).toBe('Type a note');

    const title = await find('xpath', '//*[@resource-id="com.example.notes:id/toolbar"]/android.widget.TextView');
    const notEditable = await call('POST', s(`/element/${title}/value`), { text: 'x' });
    expect(notEditable).toMatchObject({ status: 400, body: { value: { error: 'invalid element state' } } });
  });

  it('takes a screenshot: the phone’s screen as a base64 PNG, the same picture screencap gives', async () => {
    const value: string = await ok('GET', '/screenshot');
    const png = Buffer.from(value, 'base64');
    const image = PNG.sync.read(png);
    expect([image.width, image.height]).toEqual([720, 1280]);
    expect(png.equals(screen.png())).toBe(true);

    const field = await find('id', 'note_text');
    const rect = await ok('GET', `/element/${field}/rect`);
    const crop = PNG.sync.read(Buffer.from(await ok('GET', `/element/${field}/screenshot`), 'base64'));
    expect([crop.width, crop.height]).toEqual([rect.width, rect.height]);
    const at = (img: PNG, x: number, y: number) => [...img.data.subarray((y * img.width + x) * 4, (y * img.width + x) * 4 + 3)];
    expect(at(crop, 20, rect.height - 20)).toEqual(at(image, rect.x + 20, rect.y + rect.height - 20));
  });

  it('performs W3C actions: a tap opens an app, a swipe scrolls the Settings list, as input tap and swipe do', async () => {
    device.goHome();
    const icon = await ok('GET', `/element/${await find('accessibility id', 'Settings')}/rect`);
    const x = icon.x + icon.width / 2;
    const y = icon.y + icon.height / 2;
    const tap = { type: 'pointer', id: 'finger1', parameters: { pointerType: 'touch' }, actions: [
      { type: 'pointerMove', duration: 0, x, y, origin: 'viewport' },
      { type: 'pointerDown', button: 0 },
      { type: 'pause', duration: 50 },
      { type: 'pointerUp', button: 0 },
    ] };
    expect(await ok('POST', '/actions', { actions: [tap] })).toBeNull();
    expect(device.foreground?.packageName).toBe(SETTINGS_PACKAGE);
    expect(device.lastTap).toEqual({ x: Math.round(x), y: Math.round(y) });

    expect(await source()).toContain('text="Wi-Fi"');
    const started = Date.now();
    const swipe = { type: 'pointer', id: 'finger1', parameters: { pointerType: 'touch' }, actions: [
      { type: 'pointerMove', duration: 0, x: 360, y: 1100, origin: 'viewport' },
      { type: 'pointerDown', button: 0 },
      { type: 'pointerMove', duration: 300, x: 360, y: 300, origin: 'viewport' },
      { type: 'pointerUp', button: 0 },
    ] };
    await ok('POST', '/actions', { actions: [swipe] });
    expect(Date.now() - started).toBeGreaterThanOrEqual(280);
    expect(device.lastSwipe).toMatchObject({ x1: 360, y1: 1100, x2: 360, y2: 300 });
    const scrolled = await source();
    expect(scrolled).not.toContain('text="Wi-Fi"');
    expect(scrolled).toContain('text="System"');

    // Scrolling back by UiScrollable, as `-android uiautomator` finds an element off screen.
    const wifi = await find('-android uiautomator', 'new UiScrollable(new UiSelector().scrollable(true)).scrollIntoView(new UiSelector().text("Wi-Fi"))');
    expect(await ok('GET', `/element/${wifi}/text`)).toBe('Wi-Fi');
    expect(await source()).not.toContain('text="System"');

    // mobile: scrollGesture and clickGesture, as the driver sends them.
    const list = await find('class name', 'androidx.recyclerview.widget.RecyclerView');
    const origin = { [W3C]: list, ELEMENT: list };
    expect(await ok('POST', '/appium/gestures/scroll', { origin, direction: 'down', percent: 0.8 })).toBe(true);
    expect(await source()).toContain('text="System"');
    expect(await ok('POST', '/appium/gestures/scroll', { origin, direction: 'down', percent: 0.8 })).toBe(false);
    expect(await ok('POST', '/appium/gestures/scroll', { origin, direction: 'up', percent: 1 })).toBe(true);
    const about = await ok('GET', `/element/${await find('-android uiautomator', 'new UiSelector().text("About phone")')}/rect`);
    await ok('POST', '/appium/gestures/click', { offset: { x: about.x + 5, y: about.y + 5 } });
    expect(device.settingsPage).toBe('about');
    device.back();

    const bad = await call('POST', s('/actions'), { actions: [{ type: 'pointer', actions: [{ type: 'wiggle' }] }] });
    expect(bad).toMatchObject({ status: 400, body: { value: { error: 'invalid argument' } } });
  });

  it('presses key codes and types through /keys into the focused field', async () => {
    device.launch(NOTES_PACKAGE);
    await ok('POST', '/keys', { text: 'abc', replace: true });
    expect(device.notes.text).toBe('abc');
    await ok('POST', '/appium/device/press_keycode', { keycode: 67 });
    expect(device.notes.text).toBe('ab');
    await ok('POST', '/appium/device/press_keycode', { keycode: 3 });
    expect(device.foreground).toBeUndefined();

    // The clipboard the phone's Paste key reads.
    await ok('POST', '/appium/device/set_clipboard', { content: Buffer.from('copied').toString('base64'), contentType: 'plaintext' });
    expect(device.clipboard).toBe('copied');
    expect(Buffer.from(await ok('POST', '/appium/device/get_clipboard', {}), 'base64').toString()).toBe('copied');
    expect((await call('GET', s('/alert/text'))).body.value.error).toBe('no such alert');

    expect(await ok('POST', '/orientation', { orientation: 'LANDSCAPE' })).toBe('LANDSCAPE');
    expect(await ok('GET', '/window/current/size')).toEqual({ width: 1280, height: 720 });
    expect(await source()).toContain('rotation="1" width="1280" height="720"');
    await ok('POST', '/orientation', { orientation: 'PORTRAIT' });
    expect(await ok('GET', '/orientation')).toBe('PORTRAIT');
  });

  it('deletes the session, then stops itself; close() ends open connections', async () => {
    expect(await ok('DELETE', '', undefined)).toBeNull();
    await new Promise((r) => setTimeout(r, 100));
    expect(stops).toBe(1);
    expect((await call('GET', s('/source'))).body.value.error).toBe('invalid session id');

    const socket = connect(Number(new URL(base).port), '127.0.0.1');
    await new Promise((resolve) => socket.on('connect', resolve));
    const closed = new Promise((resolve) => socket.on('close', resolve));
    await new Promise((r) => setTimeout(r, 50));
    server.close();
    await closed;
    await expect(fetch(`${base}/status`)).rejects.toThrow();
  });
});
