/**
 * A WebDriver run watched and watched back in Debian's Chromium (issue 43.5, 43.6), driven by WebdriverIO, unchanged,
 * through /wd/hub on a simulated Android phone. While it runs, the session page shows the live screen and the command
 * table together at 1280x800 and 1440x900, every control that acts on the phone is off, and taking the phone over
 * (a confirm) ends the run as interrupted. Its result's page then plays the video, lists the commands beside it (a
 * click seeks the video), marks the failed one, shows each log inline, names the phone, and passes axe.
 * Screenshots go to test-artifacts/e2e/webdriver-run/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { labSession } from '../support/webdriver.js';
import { axeViolations, chromiumOrSkip, logIn, originOf, sharedChromium, snap, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'webdriver-run';

describe.runIf(ready)('GUI: a WebDriver run watched live, taken over, and played back', () => {
  let lab: TestLab;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let token: string;
  let key: string;
  let driver: WebdriverIO.Browser;
  let labSessionId: string;
  let resultId: string;
  const c = () => client(lab.engine.api);

  beforeAll(async () => {
    [lab, browser] = await Promise.all([startLab([{ model: 'Pixel 8', osVersion: '14', uiautomator2ServerInstalled: true }]), sharedChromium()]);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    token = await c().login();
    key = await c().createKey(token);
    await waitFor('the phone in the fleet', async () => ((await c().call('GET', '/fleet/devices', { token })).body.data as Array<{ state: string }>).some((d) => d.state === 'device'), 30_000);
  }, 60_000);
  afterAll(async () => {
    await driver?.deleteSession().catch(() => undefined);
    await browser?.close();
    await lab?.stop();
  });

  /** Whether the element is wholly inside the window (`rows`: at least this much of its top, for a list that scrolls). */
  async function inView(selector: ReturnType<Page['locator']>, rows?: number): Promise<boolean> {
    const box = await selector.boundingBox();
    const size = page.viewportSize()!;
    if (!box) return false;
    const bottom = rows === undefined ? box.y + box.height : box.y + Math.min(box.height, rows);
    return box.y >= 0 && box.x >= 0 && bottom <= size.height && box.x + box.width <= size.width;
  }

  it('the session page: screen and commands in view at 1280x800 and 1440x900, controls off, and a take-over ends the run as interrupted', async () => {
    driver = await labSession(lab.engine.api, key, { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'benchtop:options': { name: 'watched run', build: 'ci-77' } });
    labSessionId = (driver.capabilities as Record<string, unknown>)['benchtop:session'] as string;
    await driver.activateApp('com.android.settings');
    await (await driver.$('//android.widget.TextView[@text="Wi-Fi"]')).click();
    // A find that fails: the result's page marks it.
    await driver.findElement('xpath', '//android.widget.Button[@text="No such button"]').catch(() => undefined);

    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${labSessionId}`);
    const screen = page.getByRole('img', { name: 'Screen of Pixel 8' });
    const commands = page.getByRole('log', { name: 'Commands on Pixel 8' });
    await commands.getByText('POST /element (xpath //android.widget.TextView[@text="Wi-Fi"])').waitFor();
    // The click names its element by the locator that found it, and Appium's id for it cut short (whole in its title).
    const click = commands.getByText(/^POST \/element\/[^/]{8}…\/click \(xpath \/\/android\.widget\.TextView\[@text="Wi-Fi"\]\)$/);
    expect(await click.getAttribute('title')).toMatch(/^POST \/element\/[^/…]{13,}\/click \(xpath /);
    // Each command's time is its time of day (the instant in its datetime), not a date that took a line of every row.
    const time = commands.locator('tbody tr').first().locator('time');
    await expect(time.textContent()).resolves.toMatch(/^\d{1,2}:\d{2}:\d{2}( [AP]M)?$/);
    expect(Number.isNaN(Date.parse((await time.getAttribute('datetime'))!))).toBe(false);
    await waitFor('the live screen', async () => Number(await screen.getAttribute('data-frames')) > 0, 15_000);
    for (const [width, height] of [[1280, 800], [1440, 900]] as const) {
      await page.setViewportSize({ width, height });
      await page.evaluate(() => window.scrollTo(0, 0));
      // Both at once, with no scrolling: the whole screen, and the command table's heading row and first commands.
      await waitFor(`the screen and the commands in view at ${width}x${height}`, async () => (await inView(screen)) && (await inView(commands, 120)), 5000);
      await snap(page, SUITE, `session-${width}x${height}`);
    }

    // Watch-only: the buttons that act on the phone are off, the screen takes no input; what only reads stays on.
    const controls = page.getByRole('toolbar', { name: 'Controls of Pixel 8' });
    for (const name of ['Home', 'Back', 'Rotate', 'Restart…', 'Release Pixel 8…']) await expect(controls.getByRole('button', { name, exact: true }).isDisabled()).resolves.toBe(true);
    await expect(controls.getByRole('button', { name: 'Screenshot' }).isDisabled()).resolves.toBe(false);
    expect(await page.locator('.screen').evaluate((el) => (el as HTMLElement).inert)).toBe(true);
    // A command the run sends now shows in the table as it comes.
    await driver.execute('mobile: pressKey', { keycode: 4 });
    await commands.getByText('POST /execute/sync (mobile: pressKey)').waitFor();

    // The deliberate step: a confirm, then the run ends as interrupted and the phone is the person's.
    await page.getByRole('button', { name: 'Take over Pixel 8…' }).click();
    await page.getByRole('button', { name: 'Take over now' }).click();
    await commands.waitFor({ state: 'detached' });
    await waitFor('Home to be on', async () => !(await controls.getByRole('button', { name: 'Home', exact: true }).isDisabled()), 10_000);
    const result = await waitFor('the run\'s test result', async () => {
      const list = (await c().call('GET', '/test-results', { token })).body.data as Array<{ id: string; name: string; status: string; reason: string | null }>;
      return list.find((r) => r.name === 'watched run' && r.status !== 'running');
    }, 20_000);
    expect(result).toMatchObject({ status: 'interrupted', reason: `taken over by ${OWNER_EMAIL}` });
    resultId = result.id;
    await expect(driver.getPageSource()).rejects.toThrow(/invalid session id|No running session/);
    expect(errors).toEqual([]);
  }, 120_000);

  it('the result\'s page: the video plays, a command seeks it, the failed one is marked, logs inline, the phone named, axe finds nothing', async () => {
    expect(resultId).toBeDefined();
    await page.setViewportSize({ width: 1280, height: 800 });
    await open(page, `${originOf(lab.engine.api)}/test-results/${resultId}`);
    await page.getByRole('heading', { name: 'watched run' }).waitFor();
    const run = page.getByRole('definition').filter({ hasText: 'Pixel 8' }).first();
    await run.waitFor();
    await page.getByText(`taken over by ${OWNER_EMAIL}`, { exact: true }).waitFor();
    await expect(page.getByRole('link', { name: '← All test results' }).count()).resolves.toBe(1);
    // The CI build it ran in, a link to that build's runs.
    expect(await page.getByRole('link', { name: 'ci-77' }).getAttribute('href')).toBe('/test-results?tag=build%3Aci-77');
    // No Playwright figures for a WebDriver run.
    await expect(page.getByText('expected', { exact: true }).count()).resolves.toBe(0);
    await expect(page.getByText('unexpected', { exact: true }).count()).resolves.toBe(0);

    const video = page.locator('video');
    await video.waitFor();
    const duration = await waitFor('the video\'s metadata', async () => {
      const d = await video.evaluate((v: HTMLVideoElement) => v.duration);
      return Number.isFinite(d) && d > 0 ? d : undefined;
    }, 15_000);
    expect(duration).toBeGreaterThan(1);
    // It plays: its clock runs.
    await video.evaluate((v: HTMLVideoElement) => { v.muted = true; return v.play(); });
    await waitFor('the video to play', async () => (await video.evaluate((v: HTMLVideoElement) => v.currentTime)) > 0.2, 10_000);
    await video.evaluate((v: HTMLVideoElement) => v.pause());

    const list = page.getByRole('list', { name: 'Commands' });
    const find = list.getByRole('button', { name: /POST \/element \(xpath \/\/android\.widget\.TextView\[@text="Wi-Fi"\]\)/ });
    const offsetText = (await find.locator('.run-command-time').textContent())!;
    const [m, s] = offsetText.split(':').map(Number) as [number, number];
    await find.click();
    const at = await video.evaluate((v: HTMLVideoElement) => v.currentTime);
    expect(Math.abs(at - (m * 60 + s))).toBeLessThan(0.15);
    expect(at).toBeGreaterThan(0);
    // The clicked command is the one marked, though its click was logged milliseconds after it, at the same moment of
    // the video.
    await list.locator('button[aria-current="true"]').filter({ hasText: /POST \/element \(xpath \/\/android\.widget\.TextView\[@text="Wi-Fi"\]\)/ }).waitFor({ timeout: 2_000 });
    await expect(list.locator('button[aria-current="true"]').count()).resolves.toBe(1);
    // The failed find is marked, with its error.
    const failed = list.locator('li.failed');
    await expect(failed.count()).resolves.toBe(1);
    await expect(failed.textContent()).resolves.toMatch(/No such button.*404.*no such element/);

    // Each log inline, its download beside it.
    const logs = page.getByRole('region', { name: 'Logs' });
    await logs.getByLabel('commands.log', { exact: true }).filter({ hasText: `session ended (taken over by ${OWNER_EMAIL})` }).waitFor();
    await logs.getByRole('tab', { name: 'Appium' }).click();
    await logs.getByLabel('appium.log', { exact: true }).filter({ hasText: 'UiAutomator2' }).waitFor();
    await logs.getByRole('tab', { name: 'Logcat' }).click();
    // The phone's own log, not the tab before it: the simulated phone's logcat has its ActivityManager lines.
    await logs.getByLabel('logcat.txt', { exact: true }).filter({ hasText: 'ActivityManager' }).waitFor();
    await expect(logs.getByRole('button', { name: 'Download logcat.txt' }).count()).resolves.toBe(1);
    await expect(page.getByRole('button', { name: 'Download video.mp4' }).count()).resolves.toBe(1);
    await snap(page, SUITE, 'result');

    expect(await axeViolations(page)).toEqual([]);

    // In the list of results, the run names its phone, and counts no tests it does not have.
    await page.getByRole('link', { name: '← All test results' }).click();
    const row = page.getByRole('table', { name: 'Test results' }).getByRole('row').filter({ hasText: 'watched run' });
    await row.getByText('WebDriver on Pixel 8').waitFor();
    await expect(row.getByText('— / —').count()).resolves.toBe(0);
    await snap(page, SUITE, 'results-list');
    // The filter finds a run by the phone it drove.
    const filter = page.getByLabel('Name, branch, tag or phone');
    await filter.fill('pixel 8');
    await row.waitFor();
    await filter.fill('pixel 7');
    await page.getByText('No test result matches these filters.').waitFor();
    await filter.fill('');
    expect(errors).toEqual([]);
  }, 60_000);
});
