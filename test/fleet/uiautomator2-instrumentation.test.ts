import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToAdb, findAdb, readApkInfo, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { adbOrSkip } from '../support/lab.js';

/*
 * The adb side of Appium's UiAutomator2 driver, with the real adb and the server APKs from the npm package: install,
 * `pm list instrumentation`, `am instrument -w` holding the server for as long as it runs, the server on port 6790
 * through `adb forward`, and the instrumentation's end by force-stop or uninstall. The Appium Settings app's service.
 */

const SERVER_PACKAGE = 'io.appium.uiautomator2.server';
const RUNNER = `${SERVER_PACKAGE}.test/androidx.test.runner.AndroidJUnitRunner`;
const require = createRequire(import.meta.url);
const APKS = join(dirname(require.resolve('appium-uiautomator2-server/package.json')), 'apks');
const SERVER_APK = join(APKS, `appium-uiautomator2-server-v${(require('appium-uiautomator2-server/package.json') as { version: string }).version}.apk`);
const TEST_APK = join(APKS, 'appium-uiautomator2-server-debug-androidTest.apk');
const SETTINGS_APK = join(dirname(require.resolve('appium-uiautomator2-driver/package.json')), 'node_modules/io.appium.settings/apks/settings_apk-debug.apk');

describe.runIf(adbOrSkip())('UiAutomator2 instrumentation on the simulated phone', () => {
  let adb: AdbServer;
  let phone: SimulatedPhone;
  let serial: string;
  const sh = async (command: string) => (await phone.shell(command)).output.toString('utf8');
  const serverPid = async () => /^\S+\s+(\d+)\s.*\sio\.appium\.uiautomator2\.server$/m.exec(await sh('ps -A'))?.[1];
  /** `am instrument -w` through adb, as the driver runs it: resolves with what it printed once the stream closes. */
  const instrument = () => adb.run(['-s', serial, 'shell', 'am', 'instrument', '-w', '-e', 'disableAnalytics', 'true', RUNNER], { timeoutMs: 20_000 });
  const status = async (port: number) => {
    const res = await fetch(`http://127.0.0.1:${port}/wd/hub/status`);
    return (await res.json()) as { value: { ready: boolean } };
  };
  const until = async (check: () => Promise<boolean>) => {
    for (let i = 0; i < 100 && !(await check()); i++) await new Promise((r) => setTimeout(r, 50));
  };

  beforeAll(async () => {
    adb = await startAdbServer();
    phone = new SimulatedPhone();
    serial = await connectToAdb(await phone.start(), adb.port);
  });

  afterAll(async () => {
    await phone?.stop();
    await adb?.stop();
  });

  it('installs the server APKs with the names and versions of their manifests, and lists the instrumentation', async () => {
    for (const apk of [TEST_APK, SERVER_APK]) {
      const installed = await adb.run(['-s', serial, 'install', '-r', apk], { timeoutMs: 30_000 });
      expect(installed.stdout.toString()).toContain('Success');
    }
    const manifest = readApkInfo(readFileSync(SERVER_APK));
    expect(manifest.packageName).toBe(SERVER_PACKAGE);
    const dump = await sh(`dumpsys package ${SERVER_PACKAGE}`);
    expect(dump).toContain(`versionCode=${manifest.versionCode} `);
    expect(dump).toContain(`versionName=${manifest.versionName}\n`);
    expect(await sh('cmd package list packages --show-versioncode io.appium')).toContain(`package:${SERVER_PACKAGE} versionCode:${manifest.versionCode}\n`);
    expect(await sh('pm list instrumentation')).toBe(`instrumentation:${RUNNER} (target=${SERVER_PACKAGE})\n`);
  });

  it('runs the server while am instrument -w stays open; a force-stop crashes it and closes the stream', async () => {
    const run = instrument();
    await until(async () => (await serverPid()) !== undefined);
    expect(await serverPid()).toMatch(/^\d+$/);
    const port = Number((await adb.run(['-s', serial, 'forward', 'tcp:0', 'tcp:6790'])).stdout.toString().trim());
    expect((await status(port)).value.ready).toBe(true);

    await sh(`am force-stop ${SERVER_PACKAGE}.test`);
    const ended = await run;
    expect(ended.stdout.toString()).toBe(
      '\nio.appium.uiautomator2.server.test.AppiumUiAutomator2Server:\nINSTRUMENTATION_RESULT: shortMsg=Process crashed.\nINSTRUMENTATION_CODE: 0\n',
    );
    expect(await serverPid()).toBeUndefined();
    // Nothing listens on 6790 now: the forward's connection is hung up without an answer.
    await expect(fetch(`http://127.0.0.1:${port}/status`)).rejects.toThrow();
    await adb.run(['-s', serial, 'forward', '--remove', `tcp:${port}`]);
  });

  it('ends the server when the am instrument -w stream hangs up (the driver kills its adb shell)', async () => {
    const client = spawn(findAdb()!, ['-P', String(adb.port), '-s', serial, 'shell', 'am', 'instrument', '-w', RUNNER], { env: adb.env, stdio: 'ignore' });
    await until(async () => (await serverPid()) !== undefined);
    expect(await serverPid()).toMatch(/^\d+$/);
    client.kill('SIGTERM');
    await until(async () => (await serverPid()) === undefined);
    expect(await serverPid()).toBeUndefined();
  });

  it('finishes the instrumentation when the server deletes its session, and refuses it once the target is gone', async () => {
    const run = instrument();
    await until(async () => (await serverPid()) !== undefined);
    const port = Number((await adb.run(['-s', serial, 'forward', 'tcp:0', 'tcp:6790'])).stdout.toString().trim());
    const created = (await (await fetch(`http://127.0.0.1:${port}/session`, { method: 'POST', body: JSON.stringify({ capabilities: {} }) })).json()) as { sessionId: string };
    await fetch(`http://127.0.0.1:${port}/session/${created.sessionId}`, { method: 'DELETE' });
    const ended = (await run).stdout.toString();
    expect(ended).toMatch(/\.\nTime: \d+\.\d{3}\n\nOK \(1 test\)\n\n\nINSTRUMENTATION_CODE: -1\n$/);
    expect(await serverPid()).toBeUndefined();
    await adb.run(['-s', serial, 'forward', '--remove', `tcp:${port}`]);

    expect((await adb.run(['-s', serial, 'uninstall', SERVER_PACKAGE])).stdout.toString()).toContain('Success');
    const refused = await instrument();
    expect(refused.stdout.toString()).toContain(`INSTRUMENTATION_STATUS: Error=Unable to find instrumentation target package: ${SERVER_PACKAGE}\n`);
    expect(refused.stderr).toContain(`INSTRUMENTATION_FAILED: ${RUNNER}`);
    expect(refused.code).toBe(1);
  });

  it("starts the Appium Settings app's foreground service from its activity, and a force-stop ends it", async () => {
    expect((await adb.run(['-s', serial, 'install', '-g', SETTINGS_APK], { timeoutMs: 30_000 })).stdout.toString()).toContain('Success');
    expect(await sh('dumpsys activity services io.appium.settings')).toBe('ACTIVITY MANAGER SERVICES (dumpsys activity services)\n  (nothing)\n');
    await sh('am start-activity -n io.appium.settings/.Settings -a android.intent.action.MAIN -c android.intent.category.LAUNCHER');
    const services = await sh('dumpsys activity services io.appium.settings');
    expect(services).toContain('ServiceRecord{');
    expect(services).toContain(' u0 io.appium.settings/.ForegroundService}');
    expect(services).toContain('isForeground=true');
    // Its activity finishes at once: what was in front stays there.
    expect(phone.state.foregroundPackage).toBeUndefined();
    expect(await sh('ps -A')).toMatch(/^u0_a\d+ +\d+ .* io\.appium\.settings$/m);
    await sh('am force-stop io.appium.settings');
    expect(await sh('dumpsys activity services io.appium.settings')).toContain('(nothing)');
  });

  it("offers the Appium Settings app's input methods, and its clipboard receiver answers with the clipboard", async () => {
    expect(await sh('ime list -a -s')).toContain('io.appium.settings/.AppiumIME\n');
    expect(await sh('ime list -s')).not.toContain('io.appium.settings/.AppiumIME');
    expect(await sh('ime enable io.appium.settings/.AppiumIME')).toBe('Input method io.appium.settings/.AppiumIME: now enabled for user #0\n');
    expect(await sh('ime set io.appium.settings/.AppiumIME')).toBe('Input method io.appium.settings/.AppiumIME selected for user #0\n');
    expect(await sh('settings get secure default_input_method')).toBe('io.appium.settings/.AppiumIME\n');
    await sh('monkey -p com.example.notes 1');
    await sh('input keyevent WAKEUP && wm dismiss-keyguard && input text copied && input keycombination KEYCODE_CTRL_LEFT KEYCODE_A && input keycombination KEYCODE_CTRL_LEFT KEYCODE_C');
    expect(phone.state.clipboard).toBe('copied');
    const answer = await sh('am broadcast -n io.appium.settings/.receivers.ClipboardReceiver -a io.appium.settings.clipboard.get');
    expect(answer).toContain(`Broadcast completed: result=-1, data="${Buffer.from('copied').toString('base64')}"\n`);
  });
});
