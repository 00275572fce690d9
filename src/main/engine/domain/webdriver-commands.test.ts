import { describe, expect, it } from 'vitest';
import { CommandError, commandLabel, parseCommand, readInspected, readScript, withoutHostDetails } from './webdriver-commands.js';

const error = (work: () => unknown): CommandError => {
  try {
    work();
  } catch (e) {
    if (e instanceof CommandError) return e;
    throw e;
  }
  throw new Error('no error');
};

describe('parseCommand: the path after the session id is a route of that session', () => {
  it('matches the route table by method, with element ids and names as segments', () => {
    expect(parseCommand('GET', '/source')).toEqual({ method: 'GET', segments: ['source'], template: 'source', body: 'stream' });
    expect(parseCommand('POST', '/element/00000000-0000-0011-ffff-ffff00000017/click?x=1')).toMatchObject({ segments: ['element', '00000000-0000-0011-ffff-ffff00000017', 'click'], template: 'element/:id/click' });
    expect(parseCommand('GET', '/element/e1/attribute/content-desc').template).toBe('element/:id/attribute/:name');
    expect(parseCommand('POST', '/execute/sync').body).toBe('inspect');
    expect(parseCommand('POST', '/appium/device/push_file').body).toBe('stream');
    expect(parseCommand('DELETE', '/actions').template).toBe('actions');
    // W3C's Back is a browser's, but on a phone it is the Back button (UiAutomator2, XCUITest's navigation bar).
    expect(parseCommand('POST', '/back').template).toBe('back');
    expect(() => parseCommand('POST', '/forward')).toThrow(/browser/);
  });

  it.each([
    ['GET', '/url/../../../status'],
    ['GET', '/%2E%2E/%2E%2E/status'],
    ['GET', '/%2e./status'],
    ['GET', '/.%2E/status'],
    ['POST', '/../../session'],
    ['GET', '/element/..'],
    ['GET', '/element/.../text'],
    ['GET', '/element/e1%2F..%2F..%2Fstatus/text'],
    ['GET', '/element/a%5C..%5Cstatus/text'],
    ['GET', '/element/a\\..\\status/text'],
    ['GET', '//source'],
    ['GET', '/source/'],
    ['GET', '/./source'],
    ['GET', ''],
    ['GET', 'source'],
    ['POST', '/source'],
    ['GET', '/appium/device/../../../status'],
  ])('%s %s is an unknown command', (method, rest) => {
    expect(error(() => parseCommand(method, rest)).w3c).toBe('unknown command');
  });

  it('says why a route of Appium\'s is refused', () => {
    expect(parseCommand('POST', '/appium/device/install_app')).toMatchObject({ template: 'appium/device/install_app', body: 'inspect' });
    expect(error(() => parseCommand('POST', '/url')).message).toContain('no lab-managed Chrome');
    expect(error(() => parseCommand('POST', '/context')).message).toContain('contexts');
    expect(error(() => parseCommand('POST', '/appium/device/gsm_call')).message).toContain("emulator's console");
    expect(error(() => parseCommand('POST', '/goog/cdp/execute')).message).toContain('browser');
  });
});

describe('readScript and the bodies the lab reads', () => {
  const body = (script: string, ...args: unknown[]) => JSON.stringify({ script, args });

  it('takes the lab\'s status, and rebuilds a mobile: extension on the allowlist', () => {
    expect(readScript(body('benchtop: status', { status: 'failed', reason: 'r' }), 'android')).toEqual({ lab: { status: 'failed', reason: 'r' } });
    expect(readScript(body('mobile:shell', { command: 'echo', args: ['hi'] }), 'android')).toEqual({ forward: { script: 'mobile: shell', args: [{ command: 'echo', args: ['hi'] }] }, name: 'shell' });
    expect(readScript(body('mobile: activateApp', { bundleId: 'com.apple.Preferences' }), 'ios')).toMatchObject({ name: 'activateApp' });
    expect(readScript(body('mobile: stopMediaProjectionRecording'), 'android')).toMatchObject({ name: 'stopMediaProjectionRecording' });
    // An install is the lab's own: the app it names is read (and downloaded) by the lab, never by Appium.
    expect(readScript(body('mobile: installApp', { appPath: 'https://ci.example.com/a.apk' }), 'android')).toEqual({ install: 'https://ci.example.com/a.apk' });
    expect(readInspected('appium/device/install_app', JSON.stringify({ appPath: 'lab://files/x', options: {} }), 'ios')).toEqual({ install: 'lab://files/x' });
  });

  it("takes BrowserStack's and Sauce Labs' status scripts as the lab's own, and BrowserStack's annotate as a note", () => {
    const setStatus = (args: object) => `browserstack_executor: ${JSON.stringify({ action: 'setSessionStatus', arguments: args })}`;
    expect(readScript(body(setStatus({ status: 'failed', reason: 'no Wi-Fi' })), 'android')).toEqual({ lab: { status: 'failed', reason: 'no Wi-Fi' } });
    expect(readScript(body(setStatus({ status: 'passed' })), 'ios')).toEqual({ lab: { status: 'passed' } });
    expect(readScript(body('browserstack_executor: {"action": "annotate", "arguments": {"data": "Step 2", "level": "info"}}'), 'android')).toEqual({ note: 'Step 2' });
    expect(readScript(body('browserstack_executor: {"action": "getSessionDetails"}'), 'ios')).toEqual({ details: true });
    expect(readScript(body('sauce:job-result=failed'), 'android')).toEqual({ lab: { status: 'failed' } });
    expect(readScript(body('sauce:job-result=true'), 'ios')).toEqual({ lab: { status: 'passed' } });
    expect(readScript(body('lambda-status=failed'), 'android')).toEqual({ lab: { status: 'failed' } });
    expect(readScript(body('sauce:context=Logged in as ada'), 'ios')).toEqual({ note: 'Logged in as ada' });
    expect(commandLabel('execute/sync', body('sauce:context=Logged in as ada'))).toBe('sauce:context=Logged in as ada');
    // The run's log names them by what they say, not by their JSON.
    expect(commandLabel('execute/sync', body(setStatus({ status: 'failed', reason: 'r' })))).toBe('browserstack_executor: setSessionStatus failed');
    expect(commandLabel('execute/sync', body('sauce:job-result=passed'))).toBe('sauce:job-result=passed');
  });

  it.each([
    [body('mobile: installApp', { app: '/tmp/a.ipa' }), 'ios', 'appPath'],
    [body('mobile: installApp', { appPath: 'lab://files/x', grantPermissions: true }), 'android', 'no install options'],
    [body('mobile: installMultipleApks', { apks: ['/tmp/a.apk'] }), 'android', 'mobile: installApp'],
    [body('mobile: stopMediaProjectionRecording', { remotePath: 'http://127.0.0.1:9/up' }), 'android', 'remotePath'],
    [body('mobile: startScreenRecording', { videoFilters: 'movie=/etc/passwd' }), 'ios', 'videoFilters'],
    [body('mobile: stopScreenRecording', { remotePath: 'http://127.0.0.1:9/up', user: 'u' }), 'ios', 'remotePath'],
    [body('mobile: startScreenStreaming', { host: '0.0.0.0' }), 'android', 'not an extension'],
    [body('mobile: execEmuConsoleCommand', { command: 'kill' }), 'android', "emulator's console"],
    [body('mobile: simctl', { command: 'spawn' }), 'ios', 'simulator'],
    [body('mobile: shell', { command: 'id' }), 'ios', 'not an extension'],
    [body('mobile: shell', 'id'), 'android', 'one JSON object'],
    [body('return document.title'), 'android', 'webview'],
    [body(' mobile: shell', { command: 'id' }), 'android', 'webview'],
    [body('benchtop: verdict', { status: 'passed' }), 'android', 'benchtop: status'],
    [body('browserstack_executor: {"action": "setSessionStatus", "arguments": {"status": "maybe"}}'), 'android', 'setSessionStatus'],
    [body('browserstack_executor: {"action": "fileExists"}'), 'ios', "BrowserStack's own"],
    [body('browserstack_executor: not json'), 'android', 'setSessionStatus'],
    [body(`browserstack_executor: {"action": "annotate", "arguments": {"data": "${'x'.repeat(70 * 1024)}"}}`), 'android', '64 KiB'],
    [body('sauce:job-result=maybe'), 'android', 'webview'],
    [body('benchtop: status', { status: 'passed', reason: 'x'.repeat(70 * 1024) }), 'android', '64 KiB'],
    ['{"script":', 'android', 'JSON'],
  ])('refuses script #%#', (text, platform, message) => {
    const e = error(() => readScript(text, platform as 'android' | 'ios'));
    expect(e.w3c).toBe('invalid argument');
    expect(e.message).toContain(message);
  });

  it('settings and a recording\'s options through their allowlists', () => {
    expect(readInspected('appium/settings', JSON.stringify({ settings: { waitForIdleTimeout: 10 } }), 'android')).toEqual({ forward: '{"settings":{"waitForIdleTimeout":10}}' });
    expect(error(() => readInspected('appium/settings', JSON.stringify({ settings: { serverPort: 1 } }), 'android')).message).toContain('serverPort');
    expect(error(() => readInspected('appium/settings', JSON.stringify({ settings: { allowInvisibleElements: true } }), 'ios')).w3c).toBe('invalid argument');
    expect(readInspected('appium/start_recording_screen', JSON.stringify({ options: { timeLimit: 30 } }), 'android')).toMatchObject({ forward: expect.any(String) });
    expect(error(() => readInspected('appium/stop_recording_screen', JSON.stringify({ options: { remotePath: 'http://127.0.0.1:9/' } }), 'android')).message).toContain('remotePath');
  });
});

describe('withoutHostDetails: Appium\'s errors without the lab\'s stack or paths', () => {
  it('empties the stack trace and cuts the host\'s directories out of the message; a phone\'s paths stay', () => {
    const appium = {
      value: {
        error: 'unknown error',
        message: "An unknown server-side error occurred: ENOENT: no such file '/home/lab/.benchtop/appium/tmp/x.apk' (from /work/main/node_modules/appium-uiautomator2-driver/build/lib/driver.js:12) /sdcard/Download/a.txt",
        stacktrace: 'Error: at /work/main/node_modules/x.js:1:2',
      },
    };
    const out = JSON.parse(withoutHostDetails(Buffer.from(JSON.stringify(appium)), ['/home/lab', '/home/lab/.benchtop', '/work/main']).toString());
    expect(out.value).toEqual({ error: 'unknown error', message: "An unknown server-side error occurred: ENOENT: no such file '<lab>' (from <lab>) /sdcard/Download/a.txt", stacktrace: '' });
    expect(withoutHostDetails(Buffer.from('{"value":"ok /home/lab"}'), ['/home/lab']).toString()).toBe('{"value":"ok /home/lab"}');
    expect(withoutHostDetails(Buffer.from('not json'), ['/home/lab']).toString()).toBe('not json');
  });
});
