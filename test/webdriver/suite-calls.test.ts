import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import type { SimulatedPhone } from '../../src/sim/android/simulated-phone.js';
import { APP_STATE, SAFARI, SETTINGS } from '../../src/sim/ios/springboard.js';
import { client } from '../support/engine.js';
import { ffmpegOrSkip, ffprobe } from '../support/ffmpeg.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { remotePorts } from '../support/remote.js';
import { labSession } from '../support/webdriver.js';

/**
 * What typical suites call besides find and click (issue 43.7), through the lab's /wd/hub with WebdriverIO and real
 * Appium, each checked against the phone's own state: its shell (dumpsys, settings, logcat, uiautomator) on Android,
 * SpringBoard's screen and pasteboard on the iPhone. One engine, one session per platform, each with a cloud's own
 * capabilities and status script, as a suite moving from Sauce Labs or BrowserStack has them.
 */
const hasAdb = adbOrSkip();
const hasFfmpeg = ffmpegOrSkip();

describe.skipIf(!hasAdb || !hasFfmpeg)('Suite calls on the simulated phones through /wd/hub', () => {
  let lab: TestLab;
  let bus: IosBus;
  let key: string;
  let owner: string;
  /** The run's test result, by the name its client gave, once it has ended. */
  const result = (name: string) =>
    waitFor(`the test result ${name}`, async () => {
      const list = (await client(lab.engine.api).call('GET', '/test-results', { token: owner })).body.data as Array<{ id: string; name: string; status: string; reason: string | null; tags: string[]; stats: Record<string, unknown> }>;
      const r = list.find((x) => x.name === name);
      return r && r.status !== 'running' ? r : undefined;
    }, 30_000);
  const commandsLog = async (id: string) => {
    const c = client(lab.engine.api);
    const assets = (await c.call('GET', `/test-results/${id}/assets`, { token: owner })).body.data as Array<{ id: string; name: string }>;
    const log = assets.find((a) => a.name === 'commands.log')!;
    return (await fetch(`${lab.engine.api}/test-results/${id}/assets/${log.id}`, { headers: { authorization: `Bearer ${owner}` } })).text();
  };

  beforeAll(async () => {
    // iOS 16: WebDriverAgent is up as a lockdown-era phone's is, without a tunnel.
    // An iPhone 15 (its ProductType) that its owner named: a suite from a cloud names it by the model.
    bus = await startIosBus([{ name: 'Suite iPhone', version: '16.7.2', battery: 64, productType: 'iPhone15,4' }]);
    lab = await startLab([{ model: 'Pixel 8', osVersion: '14', uiautomator2ServerInstalled: true }], { usbmuxd: parseUsbmuxdAddress(bus.address), remotePorts: remotePorts(8), remotePortRestSeconds: 1 });
    const c = client(lab.engine.api);
    owner = await c.login();
    key = await c.createKey(owner);
    await waitFor('both phones in the fleet', async () => {
      const fleet = (await c.call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ state: string }>;
      return fleet.filter((d) => d.state === 'device').length === 2;
    }, 30_000);
  }, 90_000);

  afterAll(async () => {
    await lab?.stop();
    await bus?.stop();
  });

  it('Android: hideKeyboard, openNotifications, getContexts, screen recording and Wi-Fi off act on the phone', async () => {
    const phone: SimulatedPhone = lab.phones[0]!;
    const sh = async (command: string) => (await phone.shell(command)).output.toString();
    // A suite moving from Sauce Labs keeps its capabilities: its name and build are the run's, its tunnel means nothing
    // here, and its dynamic allocation's device name ("Google Pixel.*") finds the lab's Pixel.
    const d = await labSession(lab.engine.api, key, { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'appium:deviceName': 'Google Pixel.*', 'sauce:options': { name: 'suite calls (Sauce)', build: 'ci-41', tunnelName: 'sauce-tunnel' } });
    const { height } = phone.state;
    const bottomPixel = () => {
      const png = PNG.sync.read(phone.screenshot());
      const i = ((height - 8) * png.width + 8) * 4;
      return [...png.data.subarray(i, i + 3)];
    };

    await d.activateApp('com.example.notes');
    const appBottom = bottomPixel();
    // A tap into the field brings the keyboard up (ADB Keyboard, the phone's input method, shows its bar).
    await (await d.$('id=com.example.notes:id/note_text')).click();
    expect(await d.isKeyboardShown()).toBe(true);
    expect(await sh('dumpsys input_method')).toContain('mInputShown=true');
    expect(bottomPixel()).not.toEqual(appBottom);
    expect(await d.hideKeyboard()).toBe(true);
    expect(await sh('dumpsys input_method')).toContain('mInputShown=false');
    expect(bottomPixel()).toEqual(appBottom);
    // The key that hid it was the keyboard's: Notes is still in front, its field still focused.
    expect(phone.state.foregroundPackage).toBe('com.example.notes');
    // With no keyboard up, appium-adb has nothing to close and says so.
    expect(await d.hideKeyboard()).toBe(false);

    expect(await d.getContexts()).toEqual(['NATIVE_APP']);

    await d.openNotifications();
    expect(await sh('dumpsys window windows')).toMatch(/mCurrentFocus=Window\{\w+ u0 NotificationShade\}/);
    const internet = await d.$('//android.widget.Switch[@content-desc="Internet"]');
    expect(await internet.getAttribute('checked')).toBe('true');
    expect(await d.getPageSource()).toContain('text="No notifications"');

    await d.execute('mobile: setConnectivity', { wifi: false });
    expect(await d.execute('mobile: getConnectivity', { services: ['wifi'] })).toEqual({ wifi: false });
    expect(await sh('settings get global wifi_on')).toBe('0\n');
    expect(await sh('dumpsys wifi')).toContain('Wi-Fi is disabled');
    expect(await sh('cmd wifi status')).toContain('Wifi is disabled');
    expect(await sh('logcat -d -s WifiService')).toContain('setWifiEnabled package=com.android.shell uid=2000 enable=false');
    // The shade on the screen shows it too.
    expect(await internet.getAttribute('checked')).toBe('false');
    expect(await sh('uiautomator dump /dev/tty')).toContain('text="Wi-Fi off"');
    await d.back();
    expect(await sh('dumpsys window windows')).not.toContain('NotificationShade');

    await d.startRecordingScreen();
    // Something to see: Settings, whose Wi-Fi row now reads Off.
    await d.activateApp('com.android.settings');
    await d.$('//android.widget.TextView[@text="Off"]').waitForExist({ timeout: 5000 });
    const video = Buffer.from(await d.stopRecordingScreen(), 'base64');
    const probe = ffprobe({ bytes: video });
    expect(probe.streams[0]).toMatchObject({ codec_type: 'video', codec_name: 'h264', width: phone.state.width, height });
    expect(Number(probe.streams[0]!.nb_read_packets)).toBeGreaterThanOrEqual(2);

    await d.execute('mobile: setConnectivity', { wifi: true });
    expect(phone.state.wifi).toBe(true);
    // ...and its way of noting a step and saying how the run went.
    expect(await d.execute('sauce:context=Wi-Fi back on')).toBeNull();
    expect(await d.execute('sauce:job-result=failed')).toBeNull();
    await d.deleteSession();
    const kept = await result('suite calls (Sauce)');
    expect(kept).toMatchObject({ status: 'failed', tags: expect.arrayContaining(['build:ci-41']) });
    const log = await commandsLog(kept.id);
    expect(log).toMatch(/POST \/execute\/sync \(sauce:context=Wi-Fi back on\) 200/);
    expect(log).toMatch(/POST \/execute\/sync \(sauce:job-result=failed\) 200/);
  }, 180_000);

  it('iPhone: element screenshot, scroll and swipe, hideKeyboard, background_app, clipboard, battery and device info, contexts', async () => {
    const phone = bus.phones[0]!;
    const board = phone.board;
    // A native suite's setting for getContexts' wait on the Web Inspector (5 s by default), forwarded by the lab.
    // A suite moving from BrowserStack keeps its capabilities (its local testing means nothing here): its catalog's
    // device name finds the lab's iPhone 15 by its model, whatever its owner named it; one the lab has not is refused,
    // naming the phones it has.
    const refused = await fetch(`${new URL(lab.engine.api).origin}/wd/hub/session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ capabilities: { alwaysMatch: { platformName: 'iOS', 'bstack:options': { deviceName: 'iPhone 16 Pro', osVersion: '16' } } } }),
    });
    expect(refused.status).toBe(500);
    expect((await refused.json()).value).toMatchObject({
      error: 'session not created',
      message: 'No phone in this lab matches bstack:options.deviceName iPhone 16 Pro among those matching the capabilities before it (phones here: Suite iPhone (iPhone 15)).',
    });
    const d = await labSession(lab.engine.api, key, { platformName: 'iOS', 'appium:webviewConnectTimeout': 300, 'bstack:options': { sessionName: 'suite calls (BrowserStack)', buildName: 'ci-42', deviceName: 'iPhone 15', osVersion: '16', local: 'true' } });

    // WebDriverAgent's element screenshot: the screen's pixels under the element's frame.
    const icon = await d.$('~Settings').getElement();
    const rect = await d.getElementRect(icon.elementId);
    const shot = PNG.sync.read(Buffer.from(await d.takeElementScreenshot(icon.elementId), 'base64'));
    expect({ width: shot.width, height: shot.height }).toEqual({ width: rect.width * board.scale, height: rect.height * board.scale });
    const screen = PNG.sync.read(board.png());
    const row = (png: PNG, x: number, y: number, n: number) => png.data.subarray((y * png.width + x) * 4, (y * png.width + x + n) * 4);
    expect(row(shot, 0, shot.height / 2, shot.width).equals(row(screen, rect.x * board.scale, rect.y * board.scale + shot.height / 2, shot.width))).toBe(true);

    await d.activateApp(SETTINGS);
    expect(await d.$$('~Passwords')).toHaveLength(0);
    await d.execute('mobile: scroll', { direction: 'down' });
    expect(board.settingsScroll).toBeGreaterThan(0);
    expect(await d.$('~Passwords').isExisting()).toBe(true);
    expect(await d.$('~General').isExisting()).toBe(false);
    await d.execute('mobile: swipe', { direction: 'down' });
    await d.execute('mobile: swipe', { direction: 'down' });
    expect(board.settingsScroll).toBe(0);
    await d.execute('mobile: scroll', { name: 'App Store' });
    expect(await d.$('~App Store').isDisplayed()).toBe(true);

    // Safari's address bar: its keyboard's return key is Go, which the default ("done") does not find.
    await d.activateApp(SAFARI);
    await d.$('~URL').click();
    expect(await d.isKeyboardShown()).toBe(true);
    await expect(d.hideKeyboard()).rejects.toThrow(/Did not know how to dismiss the keyboard/);
    expect(board.focused).toBe('url');
    await d.hideKeyboard('pressKey', 'Go');
    expect(await d.isKeyboardShown()).toBe(false);
    expect(board.focused).toBeUndefined();
    // Nothing to dismiss: WebDriverAgent has nothing to do.
    await d.hideKeyboard();

    // Backgrounded for a second (WebDriverAgent stays away at least three), then in front again.
    const away = d.background(1);
    await waitFor('Safari in the background', () => board.foreground === undefined && board.state(SAFARI) === APP_STATE.RUNNING_BACKGROUND, 3000);
    await away;
    expect(board.state(SAFARI)).toBe(APP_STATE.RUNNING_FOREGROUND);

    await d.setClipboard(Buffer.from('from the suite', 'utf8').toString('base64'), 'plaintext');
    expect(board.pasteboard).toBe('from the suite');
    board.pasteboard = 'from the phone';
    expect(Buffer.from(await d.getClipboard('plaintext'), 'base64').toString('utf8')).toBe('from the phone');

    expect(await d.execute('mobile: batteryInfo')).toMatchObject({ level: 0.64, state: 2 });
    const info = (await d.execute('mobile: deviceInfo')) as Record<string, unknown>;
    expect(info).toMatchObject({ name: 'Suite iPhone', model: 'iPhone', isSimulator: false, lockdownInfo: { ProductType: phone.productType, UniqueDeviceID: phone.udid } });

    const asked = performance.now();
    expect(await d.getContexts()).toEqual(['NATIVE_APP']);
    // The driver's own 5 s wait when the capability does not reach it.
    expect(performance.now() - asked).toBeLessThan(4000);
    // ...and its executor's note, its session's details (the link a CI log prints), and its status.
    await d.execute('browserstack_executor: {"action": "annotate", "arguments": {"data": "contexts checked", "level": "info"}}');
    const details = JSON.parse((await d.execute('browserstack_executor: {"action": "getSessionDetails"}')) as string) as Record<string, unknown>;
    const resultId = (d.capabilities as Record<string, unknown>)['benchtop:testResult'];
    expect(details).toMatchObject({ name: 'suite calls (BrowserStack)', status: 'running', build_name: 'ci-42', device: 'Suite iPhone', os: 'ios', os_version: '16.7.2', hashed_id: resultId });
    expect(details.public_url).toBe(`${new URL(lab.engine.api).origin}/test-results/${resultId}`);
    await d.execute('browserstack_executor: {"action": "setSessionStatus", "arguments": {"status": "passed", "reason": "every call answered"}}');
    await d.deleteSession();
    const kept = await result('suite calls (BrowserStack)');
    expect(kept).toMatchObject({ status: 'passed', reason: 'every call answered', tags: expect.arrayContaining(['build:ci-42']) });
    const log = await commandsLog(kept.id);
    expect(log).toMatch(/\(browserstack_executor: annotate contexts checked\) 200/);
    expect(log).toMatch(/\(browserstack_executor: setSessionStatus passed\) 200/);
    expect(log).toMatch(/\(browserstack_executor: getSessionDetails\) 200/);
  }, 180_000);
});
