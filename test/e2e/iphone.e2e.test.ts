/**
 * iPhones in Chromium, against a real engine with simulated iPhones on a simulated usbmuxd and an Android phone on a
 * real adb server beside them: the fleet lists each iPhone with its model, iOS version and state, and an untrusted one
 * and one without WebDriverAgent with the engine's steps and no way to take them; the phone page shows the live
 * screen from WDA's MJPEG server, and its clicks, keys, buttons, syslog pane and .ipa drop act on the simulated
 * iPhone; the assistant drives it (the offline interpreter and a scripted model, which is told it drives an iPhone).
 * Every step is checked against the simulated phone's own state. Screenshots go to test-artifacts/e2e/iphone/.
 */
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApk } from '../../src/sim/android/apk.js';
import { NOTES, SETTINGS, type SimulatedIPhone } from '../../src/sim/ios/index.js';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { buildIpa } from '../support/app-fixtures.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { adbOrSkip, startLab, uploadReadyApp, waitFor, type TestLab } from '../support/lab.js';
import { startScriptedModel, type Script, type ScriptedModel } from '../support/scripted-model.js';
import { axeViolations, chromiumOrSkip, sharedChromium, logIn, originOf, snap, watchConsole } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'iphone';
const ANA = 'Ana’s iPhone';
const IPA_BUNDLE = 'com.example.dropped';
/** An app that shares its Documents (UIFileSharingEnabled), which the Files tab opens through house_arrest. */
const SHARING_BUNDLE = 'com.example.fieldnotes';

describe.runIf(ready)('GUI: iPhones in the fleet, on the phone page and in the chat', () => {
  let bus: IosBus;
  let lab: TestLab;
  let browser: Browser;
  let model: ScriptedModel;
  let script: Script = () => ({ text: ['?'] });
  let page: Page;
  let errors: string[];
  let token: string;
  let sessionId: string;
  let ana: SimulatedIPhone;
  const c = () => client(lab.engine.api);
  const board = () => ana.board;
  const image = () => page.getByRole('img', { name: `Screen of ${ANA}` });
  const framesShown = () => image().getAttribute('data-frames').then(Number);
  const fleet = async () => (await c().call('GET', '/fleet/devices', { token })).body.data as Array<Record<string, any>>;

  /** The colour of one pixel of the frame the page shows, in the phone's pixels. While the next frame's blob loads
   * into the img, Chromium may answer 0x0 (and a 0x0 canvas reads black): wait for a decoded frame first. */
  const pixel = (x: number, y: number) =>
    image().evaluate(async (img: HTMLImageElement, [px, py]) => {
      for (let waited = 0; !(img.complete && img.naturalWidth > 0); waited += 20) {
        if (waited > 5000) throw new Error('no decoded frame in the screen image for 5 s');
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const canvas = document.createElement('canvas');
      canvas.width = img.naturalWidth;
      canvas.height = img.naturalHeight;
      const g = canvas.getContext('2d')!;
      g.drawImage(img, 0, 0);
      return [...g.getImageData(px!, py!, 1, 1).data.slice(0, 3)];
    }, [x, y]);

  /** Clicks the screen image where the phone's pixel (x, y) shows. */
  const clickPhone = async (x: number, y: number) => {
    const box = (await image().boundingBox())!;
    await page.mouse.click(box.x + (x / 750) * box.width, box.y + (y / 1334) * box.height);
  };

  /** The centre of an element on the phone now, in the phone's pixels, from the engine's element list. */
  const centreOf = async (text: string, className?: string) => {
    const elements = (await c().call('GET', `/sessions/${sessionId}/devices/${ana.udid}/elements`, { token })).body.data as Array<{ text: string; contentDescription: string; className: string; bounds: { x: number; y: number; width: number; height: number } }>;
    const e = elements.find((el) => (el.text === text || el.contentDescription === text) && (!className || el.className === className));
    if (!e) throw new Error(`no element "${text}" among ${elements.map((el) => el.text || el.contentDescription).join(', ')}`);
    return { x: e.bounds.x + Math.round(e.bounds.width / 2), y: e.bounds.y + Math.round(e.bounds.height / 2) };
  };

  beforeAll(async () => {
    bus = await startIosBus([
      { name: ANA, version: '17.5.1', battery: 77 },
      { name: 'New iPhone', version: '17.4', trusted: false },
      { name: 'Lab iPhone', version: '16.7.8', wda: false, wdaInstalled: false },
    ]);
    ana = bus.phones[0]!;
    [lab, browser, model] = await Promise.all([
      startLab([{ model: 'Pixel 7', osVersion: '14' }], { usbmuxd: parseUsbmuxdAddress(bus.address) }),
      sharedChromium(),
      startScriptedModel('openai', (body, i) => script(body, i)),
    ]);
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, acceptDownloads: true });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    token = await c().login();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
    await bus?.stop();
    await model?.stop();
  });

  it('Fleet: an iPhone shows its platform, model, iOS version and state; untrusted and WDA-less ones their steps and no "Use"; the iOS filter narrows', async () => {
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, '/fleet');
    const phones = page.getByRole('table', { name: 'Phones' });
    const row = (name: string) => phones.getByRole('row', { name: new RegExp(name) });
    const cells = (name: string) => row(name).getByRole('cell').allInnerTexts();
    // The WDA-less phone is read last (its WDA check waits to time out): wait for its state, not for the row.
    await row('Lab iPhone').getByText('wda unavailable').waitFor({ timeout: 20_000 });
    await row('New iPhone').getByText('unauthorized').waitFor();
    await row(ANA).getByRole('button', { name: `Use this phone: ${ANA} (${ana.udid})` }).waitFor();
    await row('Pixel 7').getByRole('button', { name: /^Use this phone/ }).waitFor();

    const [name, platform, modelName, version, serial, state, battery] = await cells(ANA);
    expect([name, platform, modelName, version, serial, state, battery]).toEqual([ANA, 'iOS', 'iPhone SE (3rd generation)', '17.5.1', ana.udid, 'free', '77%']);
    expect((await cells('Pixel 7')).slice(1, 4)).toEqual(['Android', 'Pixel 7', '14']);

    // The steps are the engine's, word for word, and say what to do. The WDA-less phone's change once the engine's
    // attempt to start its runner has failed (it is not installed): wait for those.
    let api = await fleet();
    await expect.poll(async () => (api = await fleet()).find((p) => p.name === 'Lab iPhone')?.steps, { timeout: 15_000 }).toContain('xcodebuild');
    const untrusted = api.find((p) => p.name === 'New iPhone')!;
    const noWda = api.find((p) => p.name === 'Lab iPhone')!;
    expect(untrusted).toMatchObject({ state: 'unauthorized', platform: 'ios', model: 'iPhone14,6' });
    expect(untrusted.steps).toMatch(/Trust/);
    expect(noWda).toMatchObject({ state: 'wda_unavailable', osVersion: '16.7.8' });
    expect(noWda.steps).toContain(`xcodebuild -project WebDriverAgent.xcodeproj -scheme WebDriverAgentRunner -destination id=${noWda.serial} test`);
    expect(await row('New iPhone').getByLabel('What New iPhone needs').innerText()).toBe(untrusted.steps);
    await expect.poll(() => row('Lab iPhone').getByLabel('What Lab iPhone needs').innerText(), { timeout: 10_000 }).toBe(noWda.steps);
    expect(await row(ANA).getByLabel(`What ${ANA} needs`).count()).toBe(0);
    // Neither can be taken from the page.
    expect(await row('New iPhone').getByRole('button', { name: /^Use this phone/ }).count()).toBe(0);
    expect(await row('Lab iPhone').getByRole('button', { name: /^Use this phone/ }).count()).toBe(0);
    await snap(page, SUITE, '01-fleet');
    // The long steps wrap in their column: at 800 px the page still does not scroll sideways.
    await page.setViewportSize({ width: 800, height: 900 });
    await expect.poll(() => page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(800);
    await page.setViewportSize({ width: 1440, height: 900 });

    await page.getByLabel('Platform').selectOption('ios');
    await page.getByRole('search', { name: 'Find phones' }).getByText('3 of 4 phones match · 1 free').waitFor();
    expect(await row('Pixel 7').count()).toBe(0);
    expect(await phones.getByRole('row').count()).toBe(4);
    await page.getByLabel('Platform').selectOption('android');
    await page.getByRole('search', { name: 'Find phones' }).getByText('1 of 4 phones match · 1 free').waitFor();
    expect(await row(ANA).count()).toBe(0);
    await page.getByLabel('Platform').selectOption('ios');
    await snap(page, SUITE, '02-fleet-ios-only');
  });

  it('"Use this phone" opens a session on the iPhone: WDA\'s MJPEG frames arrive at the sim\'s 750x1334, a still screen once, with the iPhone\'s buttons only', async () => {
    await page.getByRole('button', { name: `Use this phone: ${ANA} (${ana.udid})` }).click();
    await page.waitForURL(/\/sessions\/[0-9a-f-]{36}$/);
    sessionId = page.url().split('/').pop()!;
    await image().waitFor({ timeout: 30_000 });
    await expect.poll(framesShown, { timeout: 20_000 }).toBeGreaterThan(0);
    // Polled: while the next frame's blob loads into the img, Chromium may answer 0x0 for a moment.
    await expect.poll(() => image().evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight])).toEqual([750, 1334]);
    await page.getByText(/^mjpeg · JPEG · [\d.]+ fps$/).waitFor();
    // The simulated WDA repeats the still home screen at its mjpegServerFramerate; the page is sent it once.
    const seen = await framesShown();
    const sent = ana.wda.mjpegFramesSent;
    await page.waitForTimeout(1500);
    expect(ana.wda.mjpegFramesSent - sent).toBeGreaterThanOrEqual(5);
    expect(await framesShown()).toBe(seen);
    // The home screen's blue wallpaper near the bottom.
    expect((await pixel(375, 1200))[2]).toBeGreaterThan(100);

    const toolbar = page.getByRole('toolbar', { name: `Controls of ${ANA}` });
    expect(await toolbar.getByRole('button', { name: 'Back', exact: true }).count()).toBe(0);
    expect(await toolbar.getByRole('button', { name: 'Recent apps' }).count()).toBe(0);
    for (const name of ['Home', 'Volume down', 'Volume up', 'Side button', 'Rotate']) await toolbar.getByRole('button', { name, exact: true }).waitFor();

    const details = page.getByRole('definition');
    await details.filter({ hasText: 'Apple iPhone SE (3rd generation) (iPhone14,6)' }).waitFor();
    await details.filter({ hasText: 'iOS 17.5.1' }).waitFor();
    await details.filter({ hasText: '750 × 1334' }).waitFor();
    await page.getByRole('tab', { name: 'Syslog' }).waitFor();
    expect(await page.getByRole('tab', { name: 'Logcat' }).count()).toBe(0);
    await snap(page, SUITE, '03-iphone-session');
  });

  it('a click on the screen taps the iPhone: Settings opens and the next frames show it; Home goes back', async () => {
    const settings = await centreOf('Settings', 'XCUIElementTypeIcon');
    await clickPhone(settings.x, settings.y);
    // Should the click go astray, what reached the phone says where (it failed once in a full run, and never alone).
    await waitFor('Settings in front on the iPhone', () => board().foreground === SETTINGS).catch((error: Error) => {
      const { lastTap, lastLongPress, lastSwipe } = board();
      throw new Error(`${error.message}; clicked at ${JSON.stringify(settings)}, the phone's last tap ${JSON.stringify(lastTap)}, long press ${JSON.stringify(lastLongPress)}, swipe ${JSON.stringify(lastSwipe)}`);
    });
    // Settings' grouped grey replaces the wallpaper in the frames the page shows.
    await expect.poll(async () => Math.abs((await pixel(375, 1200))[0]! - 242), { timeout: 10_000 }).toBeLessThan(20);
    // A tap on a row inside Settings lands where it was clicked.
    const general = await centreOf('General', 'XCUIElementTypeCell');
    await clickPhone(general.x, general.y);
    await waitFor('Settings > General', () => board().settingsPage === 'general');
    await snap(page, SUITE, '04-settings-general');

    await page.getByRole('button', { name: 'Home', exact: true }).click();
    await waitFor('the home screen', () => board().foreground === undefined);
    await expect.poll(async () => (await pixel(375, 1200))[2]!, { timeout: 10_000 }).toBeGreaterThan(100);
  });

  it('typing goes to the focused field, Backspace and Enter included; the volume and side buttons act on the iPhone', async () => {
    const notes = await centreOf('Notes', 'XCUIElementTypeIcon');
    await clickPhone(notes.x, notes.y);
    await waitFor('Notes in front', () => board().foreground === NOTES);
    const body = await centreOf('Note', 'XCUIElementTypeTextView');
    await clickPhone(body.x, body.y);
    await waitFor('the note focused', () => board().focused === 'note');
    await page.keyboard.type('hellp');
    await page.keyboard.press('Backspace');
    await page.keyboard.type('o');
    await page.keyboard.press('Enter');
    await page.keyboard.type('world');
    await waitFor('"hello\\nworld" in the note', () => board().notesText === 'hello\nworld');
    // A paste types this computer's clipboard.
    await page.getByRole('textbox', { name: `Live screen of ${ANA}` }).evaluate((el) => {
      const data = new DataTransfer();
      data.setData('text/plain', '!');
      el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
    });
    await waitFor('the pasted text', () => board().notesText === 'hello\nworld!');
    // The engine reads the note's text back from WDA's source as it is on the phone, the newline included.
    const field = (await c().call('GET', `/sessions/${sessionId}/devices/${ana.udid}/elements`, { token })).body.data.find((e: { className: string }) => e.className === 'XCUIElementTypeTextView');
    expect(field.text).toBe('hello\nworld!');

    const volume = board().volume;
    await page.getByRole('button', { name: 'Volume up' }).click();
    await waitFor('the volume one step up', () => board().volume === volume + 1);
    await page.getByRole('button', { name: 'Volume down' }).click();
    await waitFor('the volume back', () => board().volume === volume);
    await page.getByRole('button', { name: 'Side button' }).click();
    await waitFor('the iPhone locked', () => board().locked);
    await page.getByRole('button', { name: 'Side button' }).click();
    await waitFor('the iPhone awake', () => !board().locked);

    await page.getByRole('button', { name: 'Rotate' }).click();
    await waitFor('landscape', () => board().orientation === 'LANDSCAPE');
    await expect.poll(async () => { const b = (await image().boundingBox())!; return b.width > b.height; }, { timeout: 10_000 }).toBe(true);
    await snap(page, SUITE, '05-rotated');
    await page.getByRole('button', { name: 'Rotate' }).click();
    await waitFor('portrait again', () => board().orientation === 'PORTRAIT');
    // No action the page sent was refused (an Android-only button would have shown the API's error).
    expect(await page.getByRole('alert').count()).toBe(0);
  });

  it('the Syslog tab shows the iPhone\'s syslog live', async () => {
    await page.getByRole('tab', { name: 'Syslog' }).click();
    const log = page.getByRole('list', { name: `Log of ${ANA}` });
    await page.getByRole('button', { name: 'Home', exact: true }).click();
    await waitFor('the home screen', () => board().foreground === undefined);
    const icon = await centreOf('Settings', 'XCUIElementTypeIcon');
    await clickPhone(icon.x, icon.y);
    const line = log.getByRole('listitem').filter({ hasText: `Launching application ${SETTINGS}` });
    await line.first().waitFor({ timeout: 20_000 });
    expect(await line.first().locator('.tag').innerText()).toBe('SpringBoard');
    // The same line is in the simulated phone's own syslog.
    expect(ana.syslog.some((l) => l.includes(`Launching application ${SETTINGS}`))).toBe(true);
    await snap(page, SUITE, '06-syslog');
  });

  it('an .ipa dropped on the screen is uploaded, installed on the iPhone and opened; an .apk is refused', async () => {
    const screen = page.getByRole('textbox', { name: `Live screen of ${ANA}` });
    const drop = (name: string, bytes: Buffer, type: string) => screen.evaluate((el, file) => {
      const data = new DataTransfer();
      data.items.add(new File([Uint8Array.from(atob(file.base64), (ch) => ch.charCodeAt(0))], file.name, { type: file.type }));
      for (const kind of ['dragenter', 'dragover', 'drop']) el.dispatchEvent(new DragEvent(kind, { dataTransfer: data, bubbles: true, cancelable: true }));
    }, { name, base64: bytes.toString('base64'), type });

    await drop('android.apk', buildApk({ packageName: 'com.example.android', label: 'Android', versionName: '1.0' }), 'application/vnd.android.package-archive');
    await page.getByRole('listitem', { name: 'Install of android.apk' }).getByText(`android.apk is an app for the other platform: ${ANA} runs iOS.`).waitFor();

    await drop('dropped.ipa', buildIpa({ bundleId: IPA_BUNDLE, displayName: 'Dropped', shortVersion: '2.0', build: '7' }), 'application/octet-stream');
    await page.getByRole('listitem', { name: 'Install of dropped.ipa' }).getByText(`Installed ${IPA_BUNDLE} on ${ANA} and opened it.`).waitFor({ timeout: 30_000 });
    expect(ana.apps.get(IPA_BUNDLE)).toMatchObject({ version: '2.0', build: '7', type: 'User' });
    expect(board().foreground).toBe(IPA_BUNDLE);
    // Its "Tap me" button, clicked on the page, counts on the phone.
    const tapMe = await centreOf('Tap me');
    await clickPhone(tapMe.x, tapMe.y);
    await waitFor('the app counted the tap', () => board().taps.get(IPA_BUNDLE) === 1);
    await snap(page, SUITE, '07-ipa-installed');
  });

  it('the assistant drives the iPhone: "tap Notes and tap Note and type …" lands in the note, with its tool calls and screenshot in the chat', async () => {
    await page.getByRole('button', { name: 'Home', exact: true }).click();
    await waitFor('the home screen', () => board().foreground === undefined);
    await page.getByRole('tab', { name: 'Assistant' }).click();
    await page.getByRole('button', { name: `Start a chat about ${ANA}` }).click();
    const input = page.getByLabel(`Ask the assistant to do something on ${ANA}`);
    await input.fill('tap Notes and tap Note and type from the assistant');
    await page.getByRole('button', { name: 'Send' }).click();

    const assistant = page.getByRole('listitem', { name: 'assistant message' }).last();
    const calls = assistant.getByRole('list', { name: 'Tool calls' });
    await calls.getByRole('img', { name: 'Screenshot from screenshot' }).waitFor({ timeout: 30_000 });
    await expect.poll(() => assistant.getByText('running').count(), { timeout: 30_000 }).toBe(0);
    await waitFor('the assistant\'s text in the note', () => board().notesText.endsWith('from the assistant'));
    expect(board().foreground).toBe(NOTES);
    const names = (await calls.getByRole('listitem').evaluateAll((items) => items.map((i) => i.getAttribute('aria-label'))));
    expect(names).toEqual([
      'Tool call list_elements completed', 'Tool call tap completed',
      'Tool call list_elements completed', 'Tool call tap completed',
      'Tool call type_text completed', 'Tool call screenshot completed',
    ]);
    // The tool call's image is the iPhone's screen: a 750x1334 picture, loaded by the page.
    const shot = calls.getByRole('img', { name: 'Screenshot from screenshot' });
    await expect.poll(() => shot.evaluate((img: HTMLImageElement) => [img.naturalWidth, img.naturalHeight]), { timeout: 10_000 }).toEqual([750, 1334]);
    await snap(page, SUITE, '08-assistant-offline');
  });

  it('a configured model is told it drives an iPhone, and its tool calls act on it', async () => {
    expect((await c().call('PUT', '/lab/assistant', { token, body: { provider: 'openai', endpoint: model.endpoint, model: 'scripted' } })).status).toBe(200);
    try {
      const start = model.requests.length;
      script = (_body, i) => {
        if (i === start) return { text: ['Opening Settings.'], toolCalls: [{ name: 'launch_app', arguments: { packageName: SETTINGS } }] };
        if (i === start + 1) return { toolCalls: [{ name: 'press_button', arguments: { button: 'VOLUME_UP' } }] };
        return { text: [' Done.'] };
      };
      const volume = board().volume;
      const input = page.getByLabel(`Ask the assistant to do something on ${ANA}`);
      await input.fill('open Settings and turn the volume up');
      await page.getByRole('button', { name: 'Send' }).click();
      const assistant = page.getByRole('listitem', { name: 'assistant message' }).last();
      await assistant.getByRole('listitem', { name: 'Tool call press_button completed' }).waitFor({ timeout: 30_000 });
      await assistant.getByText(/Opening Settings\.\s*Done\./).waitFor();
      await waitFor('Settings in front', () => board().foreground === SETTINGS);
      expect(board().volume).toBe(volume + 1);
      const system = model.requests[start]!.body.messages[0];
      expect(system.role).toBe('system');
      expect(system.content).toContain(`one iPhone (${ANA}, iOS 17.5.1)`);
      expect(system.content).toContain('com.apple.Preferences');
      expect(system.content).not.toContain('Android phone');
      await snap(page, SUITE, '09-assistant-model');
    } finally {
      await c().call('PUT', '/lab/assistant', { token, body: { provider: 'offline' } });
    }
    expect(errors).toEqual([]);
  });

  it('Files: an app that shares its Documents takes an upload, lists it, downloads the same bytes and deletes it; an app that does not says so', async () => {
    const ipa = buildIpa({ bundleId: SHARING_BUNDLE, displayName: 'Field Notes', fileSharing: true });
    const fileId = await uploadReadyApp(c(), token, ipa, 'fieldnotes.ipa');
    expect((await c().call('POST', `/sessions/${sessionId}/devices/${ana.udid}/install`, { token, body: { file: fileId } })).status).toBe(200);

    await page.getByRole('tab', { name: 'Files' }).click();
    // The apps that share their Documents come first, and the first is open.
    const picker = page.getByLabel(`App whose Documents to open on ${ANA}`);
    await expect.poll(() => picker.inputValue()).toBe(SHARING_BUNDLE);
    expect(await picker.locator('option:checked').innerText()).toBe(`Field Notes (${SHARING_BUNDLE})`);
    const table = page.getByRole('table', { name: 'Files in /Documents' });
    await table.getByText('This folder is empty.').waitFor();

    const content = Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 13) % 256));
    await page.getByLabel('Files to upload to /Documents').setInputFiles({ name: 'field-notes.bin', mimeType: 'application/octet-stream', buffer: content });
    await table.getByRole('row', { name: /field-notes\.bin/ }).waitFor();
    // On the phone, in that app's container.
    expect(ana.containers.get(SHARING_BUNDLE)!.fs.read('/Documents/field-notes.bin')?.equals(content)).toBe(true);
    const [file] = await Promise.all([page.waitForEvent('download'), table.getByRole('button', { name: 'Download field-notes.bin' }).click()]);
    expect(file.suggestedFilename()).toBe('field-notes.bin');
    expect(readFileSync((await file.path())!).equals(content)).toBe(true);
    expect(await axeViolations(page)).toEqual([]);
    await snap(page, SUITE, '10-files-documents');

    // Delete asks first (a second click), then the file is gone from the list and from the app's container.
    await table.getByRole('button', { name: 'Delete field-notes.bin…' }).click();
    await table.getByRole('button', { name: 'Delete field-notes.bin', exact: true }).click();
    await page.getByRole('status').getByText('Deleted field-notes.bin.').waitFor();
    await table.getByText('This folder is empty.').waitFor();
    expect(ana.containers.get(SHARING_BUNDLE)!.fs.read('/Documents/field-notes.bin')).toBeUndefined();

    // The app dropped earlier does not share its Documents: the phone refuses, and the page says so in words.
    await picker.selectOption(IPA_BUNDLE);
    await page.getByRole('alert').getByText(`${IPA_BUNDLE} does not share its Documents: iOS opens them only for apps whose Info.plist sets UIFileSharingEnabled.`).waitFor();
    expect(await page.getByRole('table', { name: 'Files in /Documents' }).count()).toBe(0);
    expect(await page.getByRole('button', { name: 'Upload files…' }).isDisabled()).toBe(true);
    await snap(page, SUITE, '11-files-not-shared');
    // The one console error is the browser's note of that 409.
    expect(errors).toEqual([expect.stringMatching(/status of 409/)]);
  }, 60_000);
});
