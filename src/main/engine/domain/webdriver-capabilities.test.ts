import { describe, expect, it } from 'vitest';
import { capabilitySets, CapabilityError, readCapabilities, versionRange, whyNothingMatches } from './webdriver-capabilities.js';

const phones = [
  { platform: 'android', type: 'real', name: 'Pixel 8', osVersion: '14', serial: 'A1' },
  { platform: 'android', type: 'real', name: 'Pixel 7', osVersion: '13.0.1', serial: 'A2' },
  { platform: 'ios', type: 'real', name: 'iPhone 15', osVersion: '17.5.1', serial: '0000-IOS' },
];

const error = (work: () => unknown): CapabilityError => {
  try {
    work();
  } catch (e) {
    if (e instanceof CapabilityError) return e;
    throw e;
  }
  throw new Error('no error');
};

describe('capabilitySets: W3C capability processing', () => {
  it('merges alwaysMatch with each firstMatch, in order, and reads unprefixed names as Appium does', () => {
    expect(capabilitySets({ capabilities: { alwaysMatch: { platformName: 'Android', deviceName: 'x' }, firstMatch: [{ 'appium:udid': 'A1' }, {}] } })).toEqual([
      { platformName: 'Android', 'appium:deviceName': 'x', 'appium:udid': 'A1' },
      { platformName: 'Android', 'appium:deviceName': 'x' },
    ]);
    expect(capabilitySets({ capabilities: {} })).toEqual([{}]);
  });

  it.each([
    [null],
    [{}],
    [{ desiredCapabilities: { platformName: 'Android' } }],
    [{ capabilities: [] }],
    [{ capabilities: { alwaysMatch: [] } }],
    [{ capabilities: { firstMatch: [] } }],
    [{ capabilities: { firstMatch: [1] } }],
    [{ capabilities: { alwaysMatch: { platformName: 'Android' }, firstMatch: [{ platformName: 'iOS' }] } }],
  ])('refuses %j as an invalid argument', (body) => {
    expect(error(() => capabilitySets(body)).w3c).toBe('invalid argument');
  });
});

describe('readCapabilities: which phone, and what goes on to Appium', () => {
  it('turns the phone-choosing capabilities into the allocation filter language', () => {
    const request = readCapabilities({
      platformName: 'Android',
      'appium:platformVersion': '14',
      'appium:deviceName': 'Pixel 8',
      'appium:udid': 'A1',
      'appium:noReset': true,
      'benchtop:options': { filters: [{ attribute: 'name', operator: 'STARTS_WITH', value: 'Pix' }], queueTimeout: 30, name: 'run', build: '7' },
    });
    expect(request.platform).toBe('android');
    expect(request.filters).toEqual([
      { attribute: 'platform', operator: 'EQUALS', value: 'android' },
      { attribute: 'version', operator: 'GREATER_THAN_OR_EQUALS', value: '14' },
      { attribute: 'version', operator: 'LESS_THAN', value: '15' },
      { attribute: 'deviceName', operator: 'EQUALS', value: 'Pixel 8' },
      { attribute: 'serial', operator: 'EQUALS', value: 'A1' },
      { attribute: 'name', operator: 'STARTS_WITH', value: 'Pix' },
    ]);
    // No word on the video: the lab's settings choose.
    expect(request.options).toEqual({ queueTimeoutMs: 30_000, name: 'run', build: '7' });
    expect(request.newCommandTimeoutMs).toBe(60_000);
    // A suite moving from a cloud keeps its own options: the run's name, build and video are read from them (the lab's
    // own win); the rest is the cloud's, and nothing of them reaches Appium.
    const sauce = readCapabilities({ platformName: 'Android', 'sauce:options': { name: 'login', build: 42, videoUploadOnPass: false, tunnelName: 't' } });
    expect(sauce.options).toMatchObject({ name: 'login', build: '42', video: 'retain-on-failure' });
    expect(sauce.appium['sauce:options']).toBeUndefined();
    expect(readCapabilities({ platformName: 'Android', 'sauce:options': { recordVideo: false, videoUploadOnPass: false } }).options.video).toBe(false);
    const bstack = readCapabilities({ platformName: 'iOS', 'bstack:options': { sessionName: 'checkout', buildName: 'b7', video: false, deviceName: 'iPhone 15', osVersion: '17', local: true }, 'benchtop:options': { name: 'ours' } });
    expect(bstack.options).toMatchObject({ name: 'ours', build: 'b7', video: false });
    expect(bstack.appium['bstack:options']).toBeUndefined();
    // The phone a cloud's suite names in the cloud's own object chooses here as appium:* would (appium:* wins).
    expect(bstack.filters).toEqual([
      { attribute: 'platform', operator: 'EQUALS', value: 'ios' },
      { attribute: 'version', operator: 'GREATER_THAN_OR_EQUALS', value: '17' },
      { attribute: 'version', operator: 'LESS_THAN', value: '18' },
      { attribute: 'deviceName', operator: 'EQUALS', value: 'iPhone 15' },
    ]);
    expect(readCapabilities({ platformName: 'iOS', 'appium:deviceName': 'iPhone 14', 'bstack:options': { deviceName: 'iPhone 15' } }).filters[1]).toEqual({ attribute: 'deviceName', operator: 'EQUALS', value: 'iPhone 14' });
    const lambda = readCapabilities({ 'lt:options': { platformName: 'android', deviceName: 'Galaxy S.*', platformVersion: '14', isRealMobile: true } });
    expect(lambda.platform).toBe('android');
    expect(lambda.asked.map((a) => `${a.capability}=${a.value}`)).toEqual(['platformName=android', 'lt:options.platformVersion=14', 'lt:options.deviceName=Galaxy S.*']);
    expect(lambda.appium['lt:options']).toBeUndefined();
    expect(readCapabilities({ platformName: 'Android', 'lt:options': { name: 'lt run', build: 'b', video: false, network: true } }).options).toMatchObject({ name: 'lt run', build: 'b', video: false });
    // A video kept only if the run does not pass, as Playwright's option says it.
    const onFailure = readCapabilities({ platformName: 'Android', 'benchtop:options': { video: 'retain-on-failure' } });
    expect(onFailure.options.video).toBe('retain-on-failure');
    // The lab's own options stay with the lab; udid is the lab's to give (the address Appium reaches the phone by).
    expect(request.appium).toEqual({ platformName: 'Android', 'appium:platformVersion': '14', 'appium:deviceName': 'Pixel 8', 'appium:noReset': true, 'appium:automationName': 'UiAutomator2' });
  });

  it('a version is a prefix by its dotted parts', () => {
    expect(versionRange('14')).toEqual([
      { attribute: 'version', operator: 'GREATER_THAN_OR_EQUALS', value: '14' },
      { attribute: 'version', operator: 'LESS_THAN', value: '15' },
    ]);
    expect(versionRange('17.4')[1]!.value).toBe('17.5');
    const matching = (version: string) => phones.filter((p) => !whyNothingMatches([p], readCapabilities({ platformName: p.platform, 'appium:platformVersion': version }))).map((p) => p.serial);
    expect(matching('13')).toEqual(['A2']);
    expect(matching('13.0')).toEqual(['A2']);
    expect(matching('1')).toEqual([]);
    expect(matching('17.5')).toEqual(['0000-IOS']);
  });

  it.each([
    [{}, 'invalid argument', 'platformName is required'],
    [{ platformName: 'Windows' }, 'session not created', 'Android and iOS'],
    [{ platformName: 'iOS', 'appium:automationName': 'Espresso' }, 'session not created', 'XCUITest'],
    [{ platformName: 'Android', 'appium:systemPort': 8201 }, 'invalid argument', 'appium:systemPort'],
    [{ platformName: 'iOS', 'appium:webDriverAgentUrl': 'http://10.0.0.9:8100' }, 'invalid argument', 'appium:webDriverAgentUrl'],
    [{ platformName: 'Android', 'appium:platformVersion': 'fourteen' }, 'invalid argument', 'numbers separated by dots'],
    [{ platformName: 'Android', 'appium:newCommandTimeout': -1 }, 'invalid argument', 'newCommandTimeout'],
    [{ platformName: 'Android', 'benchtop:options': { queueTimeout: 99_999 } }, 'invalid argument', 'queueTimeout'],
    [{ platformName: 'Android', 'benchtop:options': { filters: [{ attribute: 'colour', operator: 'EQUALS', value: 'red' }] } }, 'invalid argument', 'colour'],
    [{ platformName: 'Android', 'benchtop:options': { sessionId: 'not-a-session' } }, 'invalid argument', 'sessionId'],
    [{ platformName: 'Android', 'benchtop:options': { video: 'no' } }, 'invalid argument', 'benchtop:options.video'],
    [{ platformName: 'Android', 'benchtop:options': { video: 'on-failure' } }, 'invalid argument', 'retain-on-failure'],
    [{ platformName: 'Android', 'sauce:options': 'fast' }, 'invalid argument', 'sauce:options must be a JSON object'],
    [{ platformName: 'Android', 'sauce:options': { recordVideo: 'no' } }, 'invalid argument', 'sauce:options.recordVideo'],
    [{ platformName: 'Android', 'bstack:options': { sessionName: { a: 1 } } }, 'invalid argument', 'bstack:options.sessionName'],
    [{ platformName: 'Android', 'bstack:options': { osVersion: 'latest' } }, 'invalid argument', 'bstack:options.osVersion must be numbers'],
    [{ platformName: 'Android', 'lt:options': { deviceName: ['Pixel 8'] } }, 'invalid argument', 'lt:options.deviceName must be a non-empty string'],
    [{ platformName: 'Android', constructor: 'x' }, 'invalid argument', 'constructor'],
  ])('%j is %s', (caps, w3c, message) => {
    const e = error(() => readCapabilities(caps));
    expect(e.w3c).toBe(w3c);
    expect(e.message).toContain(message);
  });
});

describe('whyNothingMatches', () => {
  it('names the first capability that leaves no phone, and what the lab has instead', () => {
    const why = (caps: Record<string, unknown>) => whyNothingMatches(phones, readCapabilities(caps));
    expect(why({ platformName: 'Android', 'appium:platformVersion': '14' })).toBeUndefined();
    expect(why({ platformName: 'Android', 'appium:platformVersion': '99' })).toBe('No phone in this lab matches appium:platformVersion 99 among those matching the capabilities before it (versions here: 13.0.1, 14).');
    expect(why({ platformName: 'Android', 'appium:deviceName': 'Galaxy' })).toContain('(phones here: Pixel 7, Pixel 8)');
    // A cloud's name for a model finds the phone of that model whatever its name in the Fleet; one that finds none
    // says what models the lab has.
    const alices = { platform: 'ios', type: 'real', name: "Alice's iPhone", osVersion: '17.5', serial: '0001-IOS', model: 'iPhone15,4' };
    expect(whyNothingMatches([...phones, alices], readCapabilities({ platformName: 'iOS', 'bstack:options': { deviceName: 'iPhone 15' } }))).toBeUndefined();
    expect(whyNothingMatches([alices], readCapabilities({ platformName: 'iOS', 'bstack:options': { deviceName: 'iPhone 16' } })))
      .toBe("No phone in this lab matches bstack:options.deviceName iPhone 16 among those matching the capabilities before it (phones here: Alice's iPhone (iPhone 15)).");
    expect(why({ platformName: 'Android', 'appium:udid': '0000-IOS' })).toContain('appium:udid 0000-IOS');
    expect(whyNothingMatches([], readCapabilities({ platformName: 'iOS' }))).toBe('No phone in this lab matches platformName iOS.');
  });
});

describe('appium:options and the allowlist: what reaches Appium', () => {
  const sets = (alwaysMatch: Record<string, unknown>, firstMatch?: Array<Record<string, unknown>>) => capabilitySets({ capabilities: { alwaysMatch, ...(firstMatch ? { firstMatch } : {}) } });

  it('promotes appium:options over the top level, prefixed or not, as Appium does, in alwaysMatch and each firstMatch', () => {
    expect(sets({ platformName: 'Android', 'appium:noReset': false, 'appium:options': { noReset: true, 'appium:deviceName': 'Pixel 8' } })).toEqual([
      { platformName: 'Android', 'appium:noReset': true, 'appium:deviceName': 'Pixel 8' },
    ]);
    expect(sets({ platformName: 'Android' }, [{ 'appium:options': { platformVersion: '14' } }])).toEqual([{ platformName: 'Android', 'appium:platformVersion': '14' }]);
    // Merged after flattening, as Appium merges: a name in alwaysMatch's options and in a firstMatch is in both.
    expect(error(() => sets({ 'appium:options': { deviceName: 'a' } }, [{ 'appium:deviceName': 'b' }])).message).toContain('appium:deviceName');
  });

  it.each([
    [{ 'appium:options': { adbPort: 5037 } }, 'The lab sets appium:adbPort'],
    [{ 'appium:options': { 'appium:systemPort': 8200 } }, 'The lab sets appium:systemPort'],
    [{ 'appium:options': { udid: 'A2', adbPort: 5037 } }, 'appium:options.udid'],
    [{ 'appium:options': { webDriverAgentUrl: 'http://127.0.0.1:8100' } }, 'appium:webDriverAgentUrl'],
    [{ 'appium:options': { platformName: 'iOS' } }, 'a W3C capability'],
    [{ 'appium:options': 'udid=A2' }, 'appium:options must be a JSON object'],
    [{ browserName: 'chrome', 'appium:chromedriverExecutable': '/tmp/x' }, 'no lab-managed Chrome'],
    [{ 'appium:chromedriverExecutable': '/tmp/marker' }, 'appium:chromedriverExecutable'],
    [{ 'appium:options': { chromedriverExecutableDir: '/tmp' } }, 'appium:chromedriverExecutableDir'],
    [{ 'appium:chromedriverArgs': ['--x'] }, 'appium:chromedriverArgs'],
    [{ 'appium:chromedriverChromeMappingFile': '/tmp/map.json' }, 'appium:chromedriverChromeMappingFile'],
    [{ 'appium:keystorePath': '/home/lab/.android/debug.keystore' }, 'appium:keystorePath'],
    [{ 'appium:app': 'file:///tmp/app.apk' }, 'names a path'],
    [{ app: '/home/lab/app.apk' }, 'names a path'],
    [{ 'appium:otherApps': ['/tmp/a.apk'] }, 'appium:otherApps[0] names a path'],
    [{ 'appium:app': `UEsDBBQ${'A'.repeat(400)}` }, 'takes no app as base64'],
    [{ 'appium:app': 'lab://files/not-an-id' }, 'lab://files/<id>'],
    // A cloud's app store, as a suite moving here names its app: said so, with what to do instead.
    [{ 'appium:app': 'bs://c700ce60cf13ae8ed97705a55b8e022f13c5827c' }, 'an app in the app storage of BrowserStack'],
    [{ 'appium:app': 'storage:filename=app.apk' }, 'an app in the app storage of Sauce Labs'],
    [{ 'appium:otherApps': ['lt://APP10160341071729861544399'] }, 'an app in the app storage of LambdaTest'],
    [{ 'appium:avd': 'Pixel', 'appium:avdArgs': '-x' }, 'appium:avd'],
    [{ 'appium:mjpegScreenshotUrl': 'http://127.0.0.1:9100' }, 'appium:mjpegScreenshotUrl'],
    [{ proxy: { proxyType: 'manual', httpProxy: '127.0.0.1:3128' } }, 'proxy'],
    [{ webSocketUrl: true }, 'webSocketUrl'],
    [{ 'appium:bundleId': 'com.apple.Preferences' }, 'appium:bundleId'],
    [{ 'appium:settings': { serverPort: 1 } }, 'serverPort'],
    [{ 'appium:settings[mjpegServerPort]': 1 }, 'mjpegServerPort'],
    [{ 'appium:ADBPORT': 5037 }, 'appium:ADBPORT'],
    [{ 'perfecto:options': {} }, 'perfecto:options'],
  ])('refuses %j on Android naming it', (caps, message) => {
    const e = error(() => sets({ platformName: 'Android', ...caps }).map(readCapabilities));
    expect(e.w3c).toBe('invalid argument');
    expect(e.message).toContain(message);
  });

  it('reads apps by reference for the lab to install, and sends Appium none of them', () => {
    const id = '0b7e8c1a-2f4d-4c6e-9a1b-3d5f7e9a1b2c';
    const request = readCapabilities({ platformName: 'Android', 'appium:app': `lab://files/${id.toUpperCase()}`, 'appium:otherApps': '["https://ci.example.com/b.apk"]' });
    expect(request.apps).toEqual({ app: { file: id }, otherApps: [{ url: 'https://ci.example.com/b.apk' }] });
    expect(request.appium).not.toHaveProperty('appium:app');
    expect(request.appium).not.toHaveProperty('appium:otherApps');
  });

  it('forwards what acts only on the held phone, with the lab\'s own left for the lab', () => {
    const [caps] = sets({ platformName: 'Android', browserName: '', pageLoadStrategy: 'normal', 'appium:options': { appPackage: 'com.android.settings', noReset: true }, 'appium:settings': { waitForIdleTimeout: 0 }, 'appium:settings[allowInvisibleElements]': true });
    expect(readCapabilities(caps!).appium).toEqual({
      platformName: 'Android',
      pageLoadStrategy: 'normal',
      'appium:appPackage': 'com.android.settings',
      'appium:noReset': true,
      'appium:settings': { waitForIdleTimeout: 0 },
      'appium:settings[allowInvisibleElements]': true,
      'appium:automationName': 'UiAutomator2',
    });
    expect(readCapabilities({ platformName: 'iOS', 'appium:bundleId': 'com.apple.Preferences', 'appium:processArguments': { args: ['-x'] } }).appium).toMatchObject({ 'appium:bundleId': 'com.apple.Preferences' });
  });
});
