import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { inflateSync } from 'node:zlib';
import { remote } from 'webdriverio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { startAppium, type AppiumServer } from '../support/appium-server.js';

/**
 * Real Appium 3 with its UiAutomator2 driver, unchanged, against a simulated phone on a private adb server, driven by
 * WebdriverIO as a user's suite would drive it: the driver installs its server APKs over adb, starts the server with
 * `am instrument -w` and reaches it through `adb forward tcp:N tcp:6790`.
 */

const ANDROID_HOME = '/usr/lib/android-sdk';
const SDK_ADB = `${ANDROID_HOME}/platform-tools/adb`;
const SERVER_PACKAGE = 'io.appium.uiautomator2.server';
const INSTRUMENTATION = `${SERVER_PACKAGE}.test/androidx.test.runner.AndroidJUnitRunner`;

function sdkAdbOrSkip(): boolean {
  if (existsSync(SDK_ADB)) return true;
  // The driver runs the adb under ANDROID_HOME only, with no PATH fallback: Debian's `adb` package puts it there.
  if (process.env.CI === 'true') throw new Error(`${SDK_ADB} is missing: install the Debian package \`adb\` (apt-get install -y adb).`);
  console.warn(`SKIPPING Appium tests: ${SDK_ADB} is missing (apt-get install -y adb).`);
  return false;
}

/** Width and height from a PNG's IHDR, after checking the signature and that the image data inflates. */
function pngSize(png: Buffer): { width: number; height: number } {
  expect(png.subarray(0, 8).toString('hex')).toBe('89504e470d0a1a0a');
  expect(png.subarray(12, 16).toString('latin1')).toBe('IHDR');
  const chunks: Buffer[] = [];
  for (let p = 8; p < png.length; ) {
    const length = png.readUInt32BE(p);
    if (png.subarray(p + 4, p + 8).toString('latin1') === 'IDAT') chunks.push(png.subarray(p + 8, p + 8 + length));
    p += 12 + length;
  }
  expect(inflateSync(Buffer.concat(chunks)).length).toBeGreaterThan(0);
  return { width: png.readUInt32BE(16), height: png.readUInt32BE(20) };
}

describe.runIf(sdkAdbOrSkip())('Appium UiAutomator2 driver against a simulated phone', () => {
  let adb: AdbServer;
  let phone: SimulatedPhone;
  let serial: string;
  let appium: AppiumServer;

  beforeAll(async () => {
    // Appium takes seconds to load its drivers: the adb server and the phone come up meanwhile.
    const starting = startAppium({ ANDROID_HOME }, ['uiautomator2']);
    adb = await startAdbServer({ adbPath: SDK_ADB });
    phone = new SimulatedPhone({ width: 720, height: 1280 });
    serial = await connectToAdb(await phone.start(), adb.port);
    appium = await starting;
  });

  afterAll(async () => {
    await appium?.stop();
    await phone?.stop();
    await adb?.stop();
  });

  const session = () =>
    remote({
      hostname: '127.0.0.1',
      port: appium.port,
      path: '/',
      logLevel: 'silent',
      connectionRetryCount: 0,
      connectionRetryTimeout: 60_000,
      capabilities: {
        platformName: 'Android',
        'appium:automationName': 'UiAutomator2',
        'appium:udid': serial,
        'appium:adbPort': adb.port,
        'appium:uiautomator2ServerLaunchTimeout': 20_000,
        'appium:newCommandTimeout': 60,
      },
    });

  const installs = async () => (await phone.shell('logcat -d -s PackageManager')).output.toString('utf8').split('\n').filter((l) => l.includes(`Package ${SERVER_PACKAGE}`));
  const serverRunning = async () => (await phone.shell('ps -A')).output.toString('utf8').split('\n').some((l) => l.trim().endsWith(` ${SERVER_PACKAGE}`));
  const dump = async () => (await phone.shell('uiautomator dump /dev/tty')).output.toString('utf8');

  it('has no UiAutomator2 server before the driver installs one: no instrumentation, and port 6790 refuses', async () => {
    expect((await phone.shell('pm list instrumentation')).output.toString()).toBe('');
    const instrument = await adb.run(['-s', serial, 'shell', 'am', 'instrument', '-w', INSTRUMENTATION], { timeoutMs: 10_000 });
    expect(instrument.stdout.toString()).toContain(`INSTRUMENTATION_STATUS: Error=Unable to find instrumentation info for: ComponentInfo{${INSTRUMENTATION}}`);
    expect(instrument.code).not.toBe(0);
    // adb accepts on the host side, then hangs up as soon as the phone refuses the stream.
    const forwarded = Number((await adb.run(['-s', serial, 'forward', 'tcp:0', 'tcp:6790'])).stdout.toString().trim());
    const got = await new Promise<string>((resolve, reject) => {
      const socket = connect(forwarded, '127.0.0.1', () => socket.write('GET /status HTTP/1.1\r\nHost: x\r\n\r\n'));
      let text = '';
      socket.on('data', (b: Buffer) => (text += b.toString()));
      socket.on('close', () => resolve(text));
      socket.on('error', reject);
    });
    expect(got).toBe('');
    await adb.run(['-s', serial, 'forward', '--remove', `tcp:${forwarded}`]);
  });

  it('installs its server, drives Settings and Notes, and ends the instrumentation with the session', async () => {
    expect(phone.state.packages).not.toContain(SERVER_PACKAGE);
    let started = performance.now();
    const driver = await session();
    const firstStart = performance.now() - started;
    // The driver installed both APKs, and the phone read their names and versions from the manifests.
    expect(phone.state.thirdPartyPackages).toEqual(expect.arrayContaining([SERVER_PACKAGE, `${SERVER_PACKAGE}.test`]));
    expect((await phone.shell(`dumpsys package ${SERVER_PACKAGE}`)).output.toString()).toMatch(/versionCode=\d+ .*\n\s+versionName=\d+\.\d+\.\d+/);
    expect(await installs()).toHaveLength(2);
    expect((await phone.shell('pm list instrumentation')).output.toString()).toBe(`instrumentation:${INSTRUMENTATION} (target=${SERVER_PACKAGE})\n`);
    expect(await serverRunning()).toBe(true);

    await driver.activateApp('com.android.settings');
    expect(phone.state.foregroundPackage).toBe('com.android.settings');
    const byXpath = await driver.$('//android.widget.TextView[@text="Wi-Fi"]');
    expect(await byXpath.getText()).toBe('Wi-Fi');
    started = performance.now();
    const wifi = await driver.$('android=new UiSelector().text("Wi-Fi")');
    await wifi.click();
    const findAndClick = performance.now() - started;
    expect(phone.state.settingsPage).toBe('wifi');
    const wifiPage = await driver.getPageSource();
    expect(wifiPage).toMatch(/^<\?xml[^>]*>\s*<hierarchy /);
    expect(wifiPage).toContain('text="Use Wi-Fi"');
    await driver.back();
    expect(phone.state.settingsPage).toBe('main');
    expect(await driver.getPageSource()).toContain('text="Bluetooth"');

    // A W3C swipe up the Settings list scrolls it: rows below the fold come into the tree.
    const { width, height } = await driver.getWindowSize();
    expect(await dump()).not.toContain('text="System"');
    const swipe = (fromY: number, toY: number) => ({
      type: 'pointer',
      id: 'finger1',
      parameters: { pointerType: 'touch' },
      actions: [
        { type: 'pointerMove', duration: 0, x: Math.round(width / 2), y: Math.round(fromY) },
        { type: 'pointerDown', button: 0 },
        { type: 'pointerMove', duration: 300, x: Math.round(width / 2), y: Math.round(toY) },
        { type: 'pointerUp', button: 0 },
      ],
    });
    await driver.performActions([swipe(height * 0.8, height * 0.25)]);
    expect(await driver.getPageSource()).toContain('text="System"');
    await driver.performActions([swipe(height * 0.25, height * 0.8)]);
    expect(await driver.getPageSource()).toContain('text="Wi-Fi"');

    await driver.activateApp('com.example.notes');
    const note = await driver.$('id=com.example.notes:id/note_text');
    await note.setValue('hello from appium');
    expect(await note.getText()).toBe('hello from appium');
    expect(phone.state.notesText).toBe('hello from appium');
    // Copied on the phone, read back through the Appium Settings app's clipboard receiver (in its IME's context).
    await phone.shell('input keycombination KEYCODE_CTRL_LEFT KEYCODE_A && input keycombination KEYCODE_CTRL_LEFT KEYCODE_C');
    expect(Buffer.from(await driver.getClipboard(), 'base64').toString('utf8')).toBe('hello from appium');

    const png = Buffer.from(await driver.takeScreenshot(), 'base64');
    expect(pngSize(png)).toEqual({ width: 720, height: 1280 });

    await driver.back();
    expect(phone.state.foregroundPackage).not.toBe('com.example.notes');

    await driver.deleteSession();
    expect(await serverRunning()).toBe(false);
    // The server finished its one test after DELETE /session, and `am instrument -w` exited with it.
    expect(appium.log()).toContain('[Instrumentation] OK (1 test)');
    expect(appium.log()).toMatch(/\[Instrumentation\] The process has exited with code 0/);
    console.log(`Appium UiAutomator2 on the simulated phone: first session start ${firstStart.toFixed(0)} ms (server APKs installed), find + click ${findAndClick.toFixed(0)} ms`);
  }, 60_000);

  it('starts a second session on the server APKs already installed', async () => {
    const before = await installs();
    const logFrom = appium.log().length;
    const started = performance.now();
    const driver = await session();
    const secondStart = performance.now() - started;
    expect(await installs()).toEqual(before);
    expect(appium.log().slice(logFrom)).toContain('Server packages are not going to be (re)installed');
    expect(await serverRunning()).toBe(true);
    await driver.activateApp('com.android.settings');
    const started2 = performance.now();
    await driver.$('//*[@text="Bluetooth"]').click();
    const findAndClick = performance.now() - started2;
    expect(phone.state.settingsPage).toBe('bluetooth');
    await driver.deleteSession();
    expect(await serverRunning()).toBe(false);
    console.log(`Appium UiAutomator2 on the simulated phone: second session start ${secondStart.toFixed(0)} ms, find + click ${findAndClick.toFixed(0)} ms`);
  }, 60_000);
});
