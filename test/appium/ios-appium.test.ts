import type { Server } from 'node:net';
import { PNG } from 'pngjs';
import { remote } from 'webdriverio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NOTES, SETTINGS } from '../../src/sim/ios/springboard.js';
import type { SimulatedIPhone } from '../../src/sim/ios/index.js';
import { startAppium, type AppiumServer } from '../support/appium-server.js';
import { forwardPhonePort, startIosBus, type IosBus } from '../support/ios-lab.js';

/**
 * Real Appium 3 with its XCUITest driver, unchanged, against a simulated iPhone's WebDriverAgent, driven by
 * WebdriverIO as a user's suite would drive it. On Linux the driver needs no Xcode when given `appium:webDriverAgentUrl`
 * (with an explicit udid and platformVersion): it builds, installs and launches nothing, and proxies to that URL. The
 * URL is a loopback port forwarded through the simulated usbmuxd to the phone's port 8100, as `iproxy` forwards it.
 */

const W3C_ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';
const VERSION = '17.5.1';

describe('Appium XCUITest driver against a simulated iPhone through appium:webDriverAgentUrl', () => {
  let bus: IosBus;
  let phone: SimulatedIPhone;
  let wda: { url: string; server: Server };
  let appium: AppiumServer;

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Appium iPhone', version: VERSION }]);
    phone = bus.phones[0]!;
    wda = await forwardPhonePort(bus, phone.udid, 8100);
    // The first tunnel pays for loading the usbmuxd client; the session start measured below should not.
    expect((await fetch(`${wda.url}/status`)).status).toBe(200);
    // USBMUXD_SOCKET_ADDRESS: the driver looks for usbmuxd at start (and warns without one).
    appium = await startAppium({ USBMUXD_SOCKET_ADDRESS: bus.address }, ['xcuitest']);
  }, 60_000);

  afterAll(async () => {
    await appium?.stop();
    wda?.server.close();
    await bus?.stop();
  });

  const session = (more: Record<string, unknown> = {}) =>
    remote({
      hostname: '127.0.0.1',
      port: appium.port,
      path: '/',
      logLevel: 'silent',
      connectionRetryCount: 0,
      connectionRetryTimeout: 60_000,
      capabilities: {
        platformName: 'iOS',
        'appium:automationName': 'XCUITest',
        'appium:udid': phone.udid,
        'appium:platformVersion': VERSION,
        'appium:webDriverAgentUrl': wda.url,
        'appium:newCommandTimeout': 60,
        ...more,
      } as WebdriverIO.Capabilities,
    });

  it('finds and clicks by accessibility id, types into Notes, reads the page source and a screenshot, and deletes the session', async () => {
    let started = performance.now();
    const driver = await session();
    const sessionStart = performance.now() - started;
    expect(phone.wda.sessionId).toBeDefined();

    try {
      // SpringBoard: a click on the Settings icon is a tap at its centre, which opens Settings on the phone itself.
      expect(phone.board.foreground).toBeUndefined();
      started = performance.now();
      await (await driver.$('~Settings')).click();
      const findAndClick = performance.now() - started;
      expect(phone.board.foreground).toBe(SETTINGS);
      const icon = phone.board.lastTap!;
      expect(icon).toEqual({ x: expect.closeTo(30 + 17, 0), y: expect.closeTo(20 + 24 + 39, 0) });

      const source = await driver.getPageSource();
      expect(source).toMatch(/^<\?xml version="1\.0" encoding="UTF-8"\?>\n<AppiumAUT>\n {2}<XCUIElementTypeApplication type="XCUIElementTypeApplication" name="Settings" label="Settings" enabled="true" visible="true" accessible="false" x="0" y="0" width="375" height="667" index="0" traits="" processId="\d+" bundleId="com\.apple\.Preferences">\n/);
      expect(source).toMatch(/<XCUIElementTypeCell type="XCUIElementTypeCell" value="On" name="Wi-Fi" label="Wi-Fi" enabled="true" visible="true" accessible="true" x="0" y="\d+" width="375" height="44" index="0" traits="Button">/);

      // Notes: its text view takes the keys (the driver's setValue clears, then types), and the phone holds the text.
      await driver.execute('mobile: activateApp', { bundleId: NOTES });
      expect(phone.board.foreground).toBe(NOTES);
      const note = await driver.$('-ios class chain:**/XCUIElementTypeTextView[`name == "note"`]');
      await note.setValue('Hello from Appium');
      expect(phone.board.notesText).toBe('Hello from Appium');
      expect(await note.getText()).toBe('Hello from Appium');
      expect(await note.getAttribute('value')).toBe('Hello from Appium');
      expect(await note.isDisplayed()).toBe(true);
      expect(await note.getTagName()).toBe('XCUIElementTypeTextView');
      expect(await driver.getPageSource()).toContain('<XCUIElementTypeTextView type="XCUIElementTypeTextView" value="Hello from Appium" name="note" label="Note"');
      await note.clearValue();
      expect(phone.board.notesText).toBe('');

      const png = Buffer.from(await driver.takeScreenshot(), 'base64');
      const image = PNG.sync.read(png);
      expect([image.width, image.height]).toEqual([phone.board.size.width * phone.board.scale, phone.board.size.height * phone.board.scale]);

      console.log(
        `Appium XCUITest on the simulated iPhone: session start ${sessionStart.toFixed(0)} ms, find by accessibility id + click ${findAndClick.toFixed(0)} ms`,
      );
    } finally {
      await driver.deleteSession();
    }
    expect(phone.wda.sessionId).toBeUndefined();
  }, 90_000);

  it('a session with appium:bundleId launches the app, and deleting it terminates the app', async () => {
    const driver = await session({ 'appium:bundleId': SETTINGS });
    try {
      expect(phone.board.foreground).toBe(SETTINGS);
      expect(await driver.getWindowSize()).toEqual(phone.board.size);
      await (await driver.$('-ios predicate string:type == "XCUIElementTypeCell" AND label == "General"')).click();
      expect(phone.board.settingsPage).toBe('general');
      expect(await driver.execute('mobile: queryAppState', { bundleId: SETTINGS })).toBe(4);
    } finally {
      await driver.deleteSession();
    }
    expect(phone.board.state(SETTINGS)).toBe(1);
  }, 60_000);
});

describe("the simulated WDA's locators, over its own HTTP API", () => {
  let bus: IosBus;
  let phone: SimulatedIPhone;
  let wda: { url: string; server: Server };
  let sessionId: string;

  beforeAll(async () => {
    bus = await startIosBus([{ name: 'Locators', version: VERSION }]);
    phone = bus.phones[0]!;
    wda = await forwardPhonePort(bus, phone.udid, 8100);
  }, 30_000);

  afterAll(async () => {
    wda?.server.close();
    await bus?.stop();
  });

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${wda.url}${path}`, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json()) as { value: any; sessionId: string | null };
    return { status: res.status, value: json.value, sessionId: json.sessionId };
  };
  const s = (path: string) => `/session/${sessionId}${path}`;
  const find = async (using: string, value: string, from = '') => {
    const r = await call('POST', s(`${from}/elements`), { using, value });
    expect(r.status).toBe(200);
    return r.value as Array<Record<string, string>>;
  };
  const names = async (using: string, value: string, from = '') =>
    Promise.all((await find(using, value, from)).map(async (e) => (await call('GET', s(`/element/${e.ELEMENT}/attribute/name`))).value as string | null));

  it('creates a session with the capabilities the XCUITest driver sends, and serves its settings', async () => {
    const created = await call('POST', '/session', { capabilities: { firstMatch: [{ bundleId: undefined, shouldTerminateApp: true, maxTypingFrequency: 30 }], alwaysMatch: {} } });
    expect(created.status).toBe(200);
    sessionId = created.value.sessionId;
    expect(created.value.capabilities).toEqual({ device: 'iphone', sdkVersion: VERSION });
    expect(created.sessionId).toBe(sessionId);
    const settings = await call('GET', s('/appium/settings'));
    expect(settings.value).toMatchObject({ shouldUseCompactResponses: true, elementResponseAttributes: 'type,label', maxTypingFrequency: 30, limitXPathContextScope: true });
    const changed = await call('POST', s('/appium/settings'), { settings: { shouldUseCompactResponses: false, noSuchSetting: 1 } });
    expect(changed.value.shouldUseCompactResponses).toBe(false);
    expect(changed.value).not.toHaveProperty('noSuchSetting');
    // Not compact: the reference carries elementResponseAttributes too.
    const [icon] = await find('accessibility id', 'Safari');
    expect(icon).toEqual({ ELEMENT: icon!.ELEMENT, [W3C_ELEMENT]: icon!.ELEMENT, type: 'XCUIElementTypeIcon', label: 'Safari' });
    await call('POST', s('/appium/settings'), { settings: { shouldUseCompactResponses: true } });
    expect((await call('POST', s('/appium/settings'), { settings: 'no' })).status).toBe(400);
  });

  it('finds by accessibility id, name, class name and predicate string, with one reference per element', async () => {
    const [byId] = await find('accessibility id', 'Notes');
    const [byName] = await find('name', 'Notes');
    expect(byId).toEqual({ ELEMENT: byId!.ELEMENT, [W3C_ELEMENT]: byId!.ELEMENT });
    expect(byName).toEqual(byId);
    expect(await names('class name', 'XCUIElementTypeIcon')).toEqual(['Settings', 'Safari', 'Notes', 'Clock', 'WebDriverAgentRunner-Runner']);
    expect((await call('POST', s('/elements'), { using: 'class name', value: 'Icon' })).value.error).toBe('invalid argument');

    expect(await names('predicate string', "name == 'Settings'")).toEqual(['Settings']);
    expect(await names('predicate string', 'label == "Notes"')).toEqual(['Notes']);
    expect(await names('predicate string', "type == 'XCUIElementTypeIcon' AND name BEGINSWITH 'S'")).toEqual(['Settings', 'Safari']);
    expect(await names('predicate string', "type == 'XCUIElementTypeIcon' AND NOT (name CONTAINS[c] 'SAFARI' OR name LIKE 'Web*')")).toEqual(['Settings', 'Notes', 'Clock']);
    expect(await names('predicate string', "name MATCHES '^N.*s$' && visible == 1")).toEqual(['Notes']);
    expect(await names('predicate string', "type IN {'XCUIElementTypeIcon'} AND rect.x > 150 AND enabled == YES")).toEqual(['Notes', 'Clock']);
    const broken = await call('POST', s('/elements'), { using: 'predicate string', value: "name == 'x' AND" });
    expect(broken.status).toBe(500);
    expect(broken.value.message).toBe('Unable to parse the format string "name == \'x\' AND"');
  });

  it('finds by class chain', async () => {
    expect(await names('class chain', '**/XCUIElementTypeIcon[`name == "Notes"`]')).toEqual(['Notes']);
    expect(await names('class chain', 'XCUIElementTypeWindow/XCUIElementTypeOther/XCUIElementTypeIcon[2]')).toEqual(['Safari']);
    expect(await names('class chain', '**/XCUIElementTypeIcon[-1]')).toEqual(['WebDriverAgentRunner-Runner']);
    expect(await names('class chain', '**/XCUIElementTypeOther[$name == "Safari"$]/XCUIElementTypeIcon[1]')).toEqual(['Settings']);
    expect(await names('class chain', 'XCUIElementTypeIcon')).toEqual([]);
    const bad = await call('POST', s('/elements'), { using: 'class chain', value: '**/Icon' });
    expect(bad.status).toBe(400);
    expect(bad.value).toMatchObject({ error: 'invalid selector', message: "Cannot parse class chain query '**/Icon'. 'Icon' class name is unknown to WDA" });
  });

  it('finds by xpath over the page source, from the session and from an element', async () => {
    expect(await names('xpath', '//XCUIElementTypeIcon[@name="Safari"]')).toEqual(['Safari']);
    expect(await names('xpath', '(//XCUIElementTypeIcon)[3]')).toEqual(['Notes']);
    expect(await names('xpath', "//*[starts-with(@label, 'S') and @traits='Button']")).toEqual(['Settings', 'Safari']);
    // Relative to the application element, as WDA evaluates it.
    expect(await names('xpath', 'XCUIElementTypeWindow/XCUIElementTypeOther/XCUIElementTypeAny[last()]')).toEqual(['WebDriverAgentRunner-Runner']);
    expect(await find('xpath', 'count(//*)')).toEqual([]);
    const [container] = await find('accessibility id', 'Home screen icons');
    expect(await names('xpath', '//XCUIElementTypeIcon[position() <= 2]', `/element/${container!.ELEMENT}`)).toEqual(['Settings', 'Safari']);
    expect(await names('class name', 'XCUIElementTypeIcon', `/element/${container!.ELEMENT}`)).toHaveLength(5);
    const bad = await call('POST', s('/elements'), { using: 'xpath', value: '//[' });
    expect(bad.status).toBe(400);
    expect(bad.value.error).toBe('invalid selector');
  });

  it('answers no such element, stale references, unknown commands and unknown sessions with W3C errors', async () => {
    const missing = await call('POST', s('/element'), { using: 'accessibility id', value: 'Nope' });
    expect(missing.status).toBe(404);
    expect(missing.value).toMatchObject({ error: 'no such element', message: "unable to find an element using 'accessibility id', value 'Nope'" });
    expect(missing.sessionId).toBe(sessionId);

    // An element the screen no longer has is stale: tapping the Settings icon opens Settings, the icon is gone.
    const settings = (await call('POST', s('/element'), { using: 'accessibility id', value: 'Settings' })).value.ELEMENT;
    const rect = (await call('GET', s(`/element/${settings}/rect`))).value;
    expect(rect).toEqual({ x: expect.any(Number), y: expect.any(Number), width: 60, height: 78 });
    phone.board.tap(rect.x + 30, rect.y + 30);
    expect(phone.board.foreground).toBe(SETTINGS);
    const stale = await call('POST', s(`/element/${settings}/click`));
    expect(stale.status).toBe(404);
    expect(stale.value.error).toBe('stale element reference');

    const unknown = await call('POST', s('/wda/nothingHere'));
    expect(unknown.status).toBe(404);
    expect(unknown.value.error).toBe('unknown command');
    expect((await call('POST', '/session/NOT-A-SESSION/element', { using: 'accessibility id', value: 'x' })).value.error).toBe('invalid session id');
  });

  it('clicks, types, clears and reads elements of the one screen a live tap also changes', async () => {
    // Settings is open: an Appium click on Wi-Fi opens its page, where the switch reads as on.
    const [wifi] = await find('predicate string', "type == 'XCUIElementTypeCell' AND name == 'Wi-Fi'");
    expect((await call('GET', s(`/element/${wifi!.ELEMENT}/text`))).value).toBe('On');
    await call('POST', s(`/element/${wifi!.ELEMENT}/click`));
    expect(phone.board.settingsPage).toBe('wifi');
    const [toggle] = await find('class name', 'XCUIElementTypeSwitch');
    expect((await call('GET', s(`/element/${toggle!.ELEMENT}/attribute/value`))).value).toBe('1');
    await call('POST', s(`/element/${toggle!.ELEMENT}/click`));
    expect(phone.board.wifi).toBe(false);
    expect((await call('GET', s(`/element/${toggle!.ELEMENT}/attribute/value`))).value).toBe('0');
    expect((await call('GET', s(`/element/${toggle!.ELEMENT}/enabled`))).value).toBe(true);
    expect((await call('GET', s(`/element/${toggle!.ELEMENT}/selected`))).value).toBe(false);

    // Notes through /wda/apps: its text view gets the keys of a value command, typed as WDA types them.
    await call('POST', s('/wda/apps/launch'), { bundleId: NOTES });
    expect((await call('POST', s('/wda/apps/state'), { bundleId: NOTES })).value).toBe(4);
    expect((await call('GET', s('/wda/apps/list'))).value).toEqual([{ pid: expect.any(Number), bundleId: NOTES }]);
    const [note] = await find('xpath', '//XCUIElementTypeTextView');
    await call('POST', s(`/element/${note!.ELEMENT}/value`), { value: [...'Dear diary'] });
    await call('POST', s(`/element/${note!.ELEMENT}/value`), { text: ', today' });
    expect(phone.board.notesText).toBe('Dear diary, today');
    expect((await call('GET', s(`/element/${note!.ELEMENT}/attribute/focused`))).value).toBe(true);
    expect((await call('GET', s('/element/active'))).value.ELEMENT).toBe(note!.ELEMENT);
    await call('POST', s(`/element/${note!.ELEMENT}/clear`));
    expect(phone.board.notesText).toBe('');
    expect((await call('GET', s(`/element/${note!.ELEMENT}/attribute/value`))).value).toBeNull();
    expect((await call('POST', s(`/element/${note!.ELEMENT}/value`), {})).status).toBe(400);

    // A button takes no keys: typing into it is an invalid element state.
    expect((await call('POST', s('/wda/apps/terminate'), { bundleId: NOTES })).value).toBe(true);
    const [safariIcon] = await find('accessibility id', 'Safari');
    const typed = await call('POST', s(`/element/${safariIcon!.ELEMENT}/value`), { value: ['x'] });
    expect(phone.board.foreground).toBe('com.apple.mobilesafari');
    expect(typed.status).toBe(400);
    expect(typed.value.error).toBe('invalid element state');

    // W3C actions from an element's centre: a touch there is a tap on it.
    await call('POST', s('/wda/homescreen'));
    const [notesIcon] = await find('accessibility id', 'Notes');
    const origin = { [W3C_ELEMENT]: notesIcon!.ELEMENT };
    const pointer = [{ type: 'pointerMove', duration: 0, x: 0, y: 0, origin }, { type: 'pointerDown', button: 0 }, { type: 'pause', duration: 50 }, { type: 'pointerUp', button: 0 }];
    expect((await call('POST', s('/actions'), { actions: [{ type: 'pointer', id: 'finger1', parameters: { pointerType: 'touch' }, actions: pointer }] })).status).toBe(200);
    expect(phone.board.foreground).toBe(NOTES);

    expect((await call('DELETE', s(''))).status).toBe(200);
    expect((await call('GET', '/status')).sessionId).toBeNull();
  });
});
