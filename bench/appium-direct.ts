/**
 * Real Appium 3 (its UiAutomator2 and XCUITest drivers, unchanged) driven by WebdriverIO against the simulated phones,
 * with no lab in between: what a user's own Appium costs on a demo phone. Two figures per platform, session start and
 * one find + click round trip, each beside the simulated phone's own share measured in the same run (the same requests
 * sent straight to the phone's UiAutomator2 server or WebDriverAgent, no Appium), so the ratio is what Appium and its
 * driver add. A simulated phone answers in milliseconds where a real one takes seconds; each figure's detail line says
 * what the same Appium overhead comes to on a real phone, from a published figure (see REAL_* below).
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { remote } from 'webdriverio';
import { connectToAdb, SimulatedPhone, startAdbServer } from '../src/sim/android/index.js';
import { startAppium, type AppiumServer } from '../test/support/appium-server.js';
import { forwardPhonePort, startIosBus } from '../test/support/ios-lab.js';
import { onCleanup } from './support/cleanup.js';
import { detail, fmtMs, fmtRatio, median, type Benchmark, type Figure } from './support/report.js';
import { SMOKE, sized } from './support/smoke.js';

const ANDROID_HOME = '/usr/lib/android-sdk';
const SDK_ADB = `${ANDROID_HOME}/platform-tools/adb`;
const INSTRUMENTATION = 'io.appium.uiautomator2.server.test/androidx.test.runner.AndroidJUnitRunner';
const ROUNDS = sized(5, 1);
const IOS_VERSION = '17.5.1';

/**
 * Published: a UiAutomator2 session start of "~20 seconds" on a Samsung S7 with Android 7 (appium/appium#11527, Appium
 * 1.9); 45 s is reported in appium/appium#12167. The session start here installs nothing after the first, as there.
 */
const REAL_UIA2_SESSION_MS = 20_000;
const REAL_UIA2_SESSION_SOURCE = 'appium/appium#11527 (Samsung S7, Android 7: ~20 s)';
/** Published: on a real iPhone "find, tap, click ... all take about 2 seconds" each (appium/appium#7932, iOS 10). */
const REAL_WDA_FIND_CLICK_MS = 2 * 2000;
const REAL_WDA_FIND_CLICK_SOURCE = 'appium/appium#7932 (real iPhone, iOS 10: find and click ~2 s each)';

type Driver = Awaited<ReturnType<typeof remote>>;

function session(port: number, capabilities: Record<string, unknown>): Promise<Driver> {
  return remote({ hostname: '127.0.0.1', port, path: '/', logLevel: 'silent', connectionRetryCount: 0, connectionRetryTimeout: 60_000, capabilities: capabilities as WebdriverIO.Capabilities });
}

async function timed<T>(work: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const result = await work();
  return [result, performance.now() - start];
}

/** A WebDriver call straight to the phone's server; resolves to the envelope's value. */
async function json<T = Record<string, string>>(url: string, method = 'GET', body?: unknown): Promise<T> {
  const res = await fetch(url, { method, headers: { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
  const parsed = (await res.json()) as { value: T };
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${JSON.stringify(parsed)}`);
  return parsed.value;
}

const elementId = (ref: Record<string, string>) => ref['element-6066-11e4-a52e-4f735466cecf']!;

function figure(name: string, value: number, own: number, target = 'reported'): Figure {
  return { benchmark: 'appium-direct', figure: name, value: fmtMs(value), baseline: `${fmtMs(own)} (the phone's own)`, ratio: fmtRatio(value, own), target, met: true };
}

/** `shared`: a smoke run's one Appium for both platforms (each driver reads only its own variable). */
async function android(shared?: AppiumServer): Promise<Figure[]> {
  if (!existsSync(SDK_ADB)) throw new Error(`${SDK_ADB} is missing: install the Debian package adb`);
  const appium = shared ?? await startAppium({ ANDROID_HOME }, ['uiautomator2']);
  if (!shared) onCleanup(() => appium.stop());
  const adb = await startAdbServer({ adbPath: SDK_ADB });
  onCleanup(() => adb.stop());
  const phone = new SimulatedPhone({ width: 1080, height: 2400 });
  onCleanup(() => phone.stop());
  const serial = await connectToAdb(await phone.start(), adb.port);
  const caps = { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'appium:udid': serial, 'appium:adbPort': adb.port, 'appium:newCommandTimeout': 60 };

  // The first session installs the server's APKs: its time is printed, not compared. A smoke run measures nothing, so
  // its one session installs them.
  let firstMs: number | undefined;
  if (!SMOKE) {
    const [first, ms] = await timed(() => session(appium.port, caps));
    await first.deleteSession();
    firstMs = ms;
  }
  const startMs: number[] = [];
  const clickMs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const [driver, ms] = await timed(() => session(appium.port, caps));
    startMs.push(ms);
    await driver.activateApp('com.android.settings');
    clickMs.push((await timed(async () => driver.$('android=new UiSelector().text("Wi-Fi")').click()))[1]);
    await driver.back();
    await driver.deleteSession();
  }

  // The phone's own share: the instrumentation started as the driver starts it, and the same requests straight to the
  // server through an adb forward.
  const ownStartMs: number[] = [];
  const ownClickMs: number[] = [];
  const forwarded = Number((await adb.run(['-s', serial, 'forward', 'tcp:0', 'tcp:6790'])).stdout.toString().trim());
  const server = `http://127.0.0.1:${forwarded}`;
  for (let i = 0; i < ROUNDS; i++) {
    const [, ms] = await timed(async () => {
      const instrument = spawn(SDK_ADB, ['-P', String(adb.port), '-s', serial, 'shell', 'am', 'instrument', '-w', INSTRUMENTATION], { env: adb.env, stdio: 'ignore' });
      onCleanup(() => void instrument.kill());
      for (;;) {
        if (await fetch(`${server}/status`).then((r) => r.ok, () => false)) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      return json(`${server}/session`, 'POST', { capabilities: { firstMatch: [{}], alwaysMatch: {} } });
    });
    ownStartMs.push(ms);
    const sessionId = (await json<Array<{ id: string }>>(`${server}/sessions`))[0]!.id;
    await phone.shell('am start -n com.android.settings/.Settings');
    ownClickMs.push((await timed(async () => {
      const wifi = await json(`${server}/session/${sessionId}/element`, 'POST', { strategy: '-android uiautomator', selector: 'new UiSelector().text("Wi-Fi")', context: '', multiple: false });
      await json(`${server}/session/${sessionId}/element/${elementId(wifi)}/click`, 'POST', {});
    }))[1]);
    await phone.shell('input keyevent KEYCODE_BACK');
    await json(`${server}/session/${sessionId}`, 'DELETE');
    await phone.shell(`am force-stop io.appium.uiautomator2.server`);
  }

  const start = median(startMs);
  const ownStart = median(ownStartMs);
  const click = median(clickMs);
  const ownClick = median(ownClickMs);
  if (firstMs !== undefined) detail(`Android: first session ${fmtMs(firstMs)} (the driver installs both server APKs, 18 MB through adb); later sessions median of ${ROUNDS}`);
  detail(`Android, a real phone: session start about ${fmtMs(start - ownStart + REAL_UIA2_SESSION_MS)} (Appium's ${fmtMs(start - ownStart)} over ${REAL_UIA2_SESSION_SOURCE})`);
  return [
    figure('Android: UiAutomator2 session start (server installed)', start, ownStart),
    figure('Android: find (-android uiautomator) + click', click, ownClick),
  ];
}

type IosBus = Awaited<ReturnType<typeof startIosBus>>;

async function startBus(): Promise<IosBus> {
  const bus = await startIosBus([{ name: 'Bench iPhone', version: IOS_VERSION }]);
  onCleanup(() => bus.stop());
  return bus;
}

async function ios(bus: IosBus, shared?: AppiumServer): Promise<Figure[]> {
  const phone = bus.phones[0]!;
  const wda = await forwardPhonePort(bus, phone.udid, 8100);
  onCleanup(() => void wda.server.close());
  // The first tunnel loads the usbmuxd client; neither side should pay for it.
  await json(`${wda.url}/status`);
  const appium = shared ?? await startAppium({ USBMUXD_SOCKET_ADDRESS: bus.address }, ['xcuitest']);
  if (!shared) onCleanup(() => appium.stop());
  const caps = { platformName: 'iOS', 'appium:automationName': 'XCUITest', 'appium:udid': phone.udid, 'appium:platformVersion': IOS_VERSION, 'appium:webDriverAgentUrl': wda.url, 'appium:newCommandTimeout': 60 };

  const startMs: number[] = [];
  const clickMs: number[] = [];
  // One warm-up session: Appium loads the XCUITest driver's modules on its first. A smoke run warms nothing up.
  if (!SMOKE) await (await session(appium.port, caps)).deleteSession();
  for (let i = 0; i < ROUNDS; i++) {
    const [driver, ms] = await timed(() => session(appium.port, caps));
    startMs.push(ms);
    clickMs.push((await timed(async () => driver.$('~Settings').click()))[1]);
    await driver.execute('mobile: pressButton', { name: 'home' });
    await driver.deleteSession();
  }

  const ownStartMs: number[] = [];
  const ownClickMs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const [created, ms] = await timed(() => json(`${wda.url}/session`, 'POST', { capabilities: { firstMatch: [{}], alwaysMatch: {} } }));
    ownStartMs.push(ms);
    const id = created.sessionId!;
    ownClickMs.push((await timed(async () => {
      const icon = await json(`${wda.url}/session/${id}/element`, 'POST', { using: 'accessibility id', value: 'Settings' });
      await json(`${wda.url}/session/${id}/element/${elementId(icon)}/click`, 'POST', {});
    }))[1]);
    await json(`${wda.url}/wda/homescreen`, 'POST', {});
    await json(`${wda.url}/session/${id}`, 'DELETE');
  }

  const click = median(clickMs);
  const ownClick = median(ownClickMs);
  detail(`iPhone, a real phone: find + click about ${fmtMs(click - ownClick + REAL_WDA_FIND_CLICK_MS)} (Appium's ${fmtMs(click - ownClick)} over ${REAL_WDA_FIND_CLICK_SOURCE})`);
  return [
    figure('iPhone: XCUITest session start (webDriverAgentUrl)', median(startMs), median(ownStartMs)),
    figure('iPhone: find (accessibility id) + click', click, ownClick),
  ];
}

export const appiumDirect: Benchmark = {
  name: 'appium-direct',
  title: "Real Appium + WebdriverIO on the simulated phones, no lab between: session start and find + click, against the phone's own share",
  async run(): Promise<Figure[]> {
    if (!SMOKE) return [...(await android()), ...(await ios(await startBus()))];
    // A smoke run starts one Appium, for both platforms, as a user with phones of both kinds runs it.
    const bus = await startBus();
    const appium = await startAppium({ ANDROID_HOME, USBMUXD_SOCKET_ADDRESS: bus.address });
    onCleanup(() => appium.stop());
    return [...(await android(appium)), ...(await ios(bus, appium))];
  },
};
