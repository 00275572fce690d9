/**
 * A team's second week in Chromium, as an invited teammate: nothing above or beside the live screen moves when a
 * status text changes (the idle countdown, the feed's rate) at 1440x900, 1280x800 and 1024x768; leaving a queue and
 * one's own release say so; a holder demoted to readonly still gives the phone back, sees the new role at once, and a
 * refusal shows beside the button that caused it; a removed member's page moves to an organization they still belong
 * to, saying why. Screenshots go to test-artifacts/e2e/second-week/.
 */
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, type Client } from '../support/engine.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { chromiumOrSkip, logIn, originOf, sharedChromium, snap, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'second-week';
const SIZES = [{ width: 1440, height: 900 }, { width: 1280, height: 800 }, { width: 1024, height: 768 }];
const MATE = 'mate@team.test';
const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'e2e', SUITE);

type Box = { x: number; y: number; width: number; height: number };

describe.runIf(ready)('GUI: a team\'s second week', () => {
  let lab: TestLab;
  let browser: Browser;
  let page: Page;
  let c: Client;
  let owner: string;
  let mate: { token: string; user: { id: string } };
  let team: string;
  let session: string;
  let serial: string;
  let errors: string[];
  const toolbar = () => page.getByRole('toolbar', { name: 'Controls of Pixel 7' });
  const badge = () => page.locator('.source-badge');
  const act = (body: unknown) => c.call('POST', `/sessions/${session}/devices/${encodeURIComponent(serial)}/actions`, { token: mate.token, org: team, body });
  /** A new session of the team's holding the named phone, in use. */
  const allocateInTeam = async (token: string, name: string) => {
    const id = (await c.call('POST', '/sessions', { token, org: team })).body.id as string;
    const filters = [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: name }];
    const a = (await c.call('POST', `/sessions/${id}/devices`, { token, org: team, body: { filters } })).body;
    const d = await waitFor(`${name} in use`, async () => {
      const x = (await c.call('GET', `/sessions/${id}/devices/${a.id}`, { token, org: team })).body;
      return x.status === 'in_use' ? x : undefined;
    });
    return { session: id, serial: d.info.serial as string };
  };
  const idle = async (seconds: number) => expect((await c.call('PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: seconds } })).status).toBe(200);

  /** Where the screen and every toolbar button are now. */
  const layout = async () => {
    const screen = page.getByRole('img', { name: 'Screen of Pixel 7' }).locator('visible=true');
    const buttons = await toolbar().getByRole('button').all();
    return {
      screen: (await screen.boundingBox())!,
      buttons: Object.fromEntries(await Promise.all(buttons.map(async (b) => [await b.textContent(), (await b.boundingBox())!] as const))) as Record<string, Box>,
    };
  };
  const expectSameLayout = (a: Awaited<ReturnType<typeof layout>>, b: Awaited<ReturnType<typeof layout>>, what: string) => {
    const round = (box: Box) => [box.x, box.y, box.width, box.height].map((n) => Math.round(n));
    expect(round(b.screen), `the screen after ${what}`).toEqual(round(a.screen));
    expect(Object.keys(b.buttons)).toEqual(Object.keys(a.buttons));
    for (const [name, box] of Object.entries(a.buttons)) expect(round(b.buttons[name]!), `"${name}" after ${what}`).toEqual(round(box));
  };
  const alertBeside = async (alert: Locator, button: Locator) => {
    const [a, b] = [(await alert.boundingBox())!, (await button.boundingBox())!];
    // On the button's line (or just under it when the toolbar wraps), not in a panel elsewhere on the page.
    expect(Math.abs(a.y - b.y)).toBeLessThan(60);
    expect(a.y).toBeGreaterThanOrEqual(0);
  };

  beforeAll(async () => {
    [lab, browser] = await Promise.all([
      startLab([{ model: 'Pixel 7', osVersion: '14' }, { model: 'Galaxy S21', osVersion: '12' }], { deviceIdleMinSeconds: 1 }),
      sharedChromium(),
    ]);
    c = client(lab.engine.api);
    owner = await c.login();
    mate = await c.signup(MATE);
    team = await c.createOrganization(owner, 'Team');
    await c.addMember(owner, team, mate.token, MATE, 'readwrite');
    ({ session, serial } = await allocateInTeam(mate.token, 'Pixel 7'));
    const context = await browser.newContext({ viewport: SIZES[0] });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
    await logIn(page, originOf(lab.engine.api), MATE, 'password-123', '/fleet');
    await page.getByLabel('Current organization').selectOption({ label: 'Team (readwrite)' });
    await open(page, `${originOf(lab.engine.api)}/sessions/${session}`);
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
  });

  it.each(SIZES)('at $width x $height neither the screen nor a toolbar button moves when the idle countdown appears or the feed\'s rate changes', async (size) => {
    await idle(0);
    await page.setViewportSize(size);
    // Wherever it is on the page: the countdown used to be above the phone's own region.
    await page.getByText(/unless used/).waitFor({ state: 'detached' });
    await expect.poll(() => badge().textContent(), { timeout: 20_000 }).toMatch(/waiting for the screen to change/);
    const before = await layout();

    // "released in 9:59 unless used" appears.
    await idle(600);
    await page.getByText(/released in \d+:\d\d unless used/).waitFor();
    expectSameLayout(before, await layout(), 'the idle countdown appeared');

    // The screen changes, and the badge says how fast.
    let screens = 0;
    await expect.poll(async () => {
      await act(screens++ % 2 ? { type: 'pressButton', button: 'HOME' } : { type: 'launchApp', packageName: 'com.example.notes' });
      return badge().textContent();
    }, { timeout: 20_000, interval: 150 }).toMatch(/\d fps/);
    const moving = await layout();
    await snap(page, SUITE, `01-phone-${size.width}x${size.height}`);
    expectSameLayout(before, moving, `the badge said ${await badge().textContent()}`);
    await expect.poll(() => badge().textContent(), { timeout: 20_000 }).toMatch(/waiting for the screen to change/);
    expectSameLayout(before, await layout(), 'the badge went back to waiting');
    expect(errors).toEqual([]);
  }, 90_000);

  it('a queued request\'s button leaves the queue, and the session says "you left the queue"', async () => {
    await page.setViewportSize(SIZES[0]!);
    const galaxy = await allocateInTeam(owner, 'Galaxy S21');
    const queued = await c.call('POST', `/sessions/${session}/devices`, { token: mate.token, org: team, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] } });
    expect(queued.body.status).toBe('queued');
    const card = page.getByRole('article', { name: 'the next free Android phone queued' });
    await card.getByRole('button', { name: 'Leave the queue' }).waitFor();
    // The card is under the screen, which a whole-page capture (a window as tall as the page) makes taller still.
    await card.screenshot({ path: join(ARTIFACTS, '02-queued-card.png') });
    await card.getByRole('button', { name: 'Leave the queue' }).click();
    await page.getByRole('region', { name: 'Released phones' }).getByText(/you left the queue before a phone was free/).waitFor();
    expect(await page.getByRole('region', { name: 'Released phones' }).textContent()).not.toMatch(/member of your organization/);
    await page.getByRole('region', { name: 'Released phones' }).screenshot({ path: join(ARTIFACTS, '02-left-the-queue.png') });
    // The owner's Galaxy stays held for the next test: a phone the teammate may not release.
    serialOfGalaxy = galaxy;
  });

  let serialOfGalaxy: { session: string; serial: string } | undefined;

  it('demoted to readonly: the sidebar says so at once; another\'s phone is refused beside its button; their own is released, in their words', async () => {
    const select = page.getByLabel('Current organization');
    const demoted = await c.call('PATCH', `/organizations/${team}/members/${mate.user.id}`, { token: owner, body: { role: 'readonly' } });
    expect(demoted.status).toBe(200);
    await expect.poll(() => select.locator('option:checked').textContent(), { timeout: 10_000 }).toBe('Team (readonly)');

    // The owner's Galaxy, in the owner's session: the lab refuses, and the refusal is beside "Release now".
    await open(page, `${originOf(lab.engine.api)}/sessions/${serialOfGalaxy!.session}`);
    await page.getByRole('button', { name: /^I asked .*: open Galaxy S21$/ }).click();
    const releaseGroup = page.getByRole('toolbar', { name: 'Controls of Galaxy S21' }).getByRole('group', { name: 'Release' });
    await releaseGroup.getByRole('button', { name: 'Release Galaxy S21…' }).click();
    await releaseGroup.getByRole('button', { name: 'Release now' }).click();
    const refusal = releaseGroup.getByRole('alert');
    await refusal.getByText(/readwrite/).waitFor();
    await alertBeside(refusal, releaseGroup.getByRole('button', { name: 'Release now' }));
    await snap(page, SUITE, '03-refused-beside-the-button');
    expect(errors.splice(0)).toEqual([expect.stringContaining('status of 403')]);

    // On their own Pixel 7, Home is refused now: beside Home, not under the screen.
    await open(page, `${originOf(lab.engine.api)}/sessions/${session}`);
    const navigation = toolbar().getByRole('group', { name: 'Navigation' });
    await navigation.getByRole('button', { name: 'Home' }).click();
    await alertBeside(navigation.getByRole('alert').filter({ hasText: 'readwrite' }), navigation.getByRole('button', { name: 'Home' }));
    expect(errors.splice(0)).toEqual([expect.stringContaining('status of 403')]);

    // Their own Pixel 7: released, and the session says they did it.
    const own = toolbar().getByRole('group', { name: 'Release' });
    await own.getByRole('button', { name: 'Release Pixel 7…' }).click();
    await own.getByRole('button', { name: 'Release now' }).click();
    const released = page.getByRole('region', { name: 'Released phones' });
    await released.getByText(/Pixel 7 .* was released at .*: you released it\./).waitFor();
    expect((await c.call('GET', `/sessions/${session}/devices`, { token: owner, org: team })).body.data.find((d: { info: { serial?: string } }) => d.info.serial === serial).status).toBe('released');
    await snap(page, SUITE, '04-released-by-you');
  });

  it('removed from the organization: the open page notices, says why, and moves to one they still belong to', async () => {
    // Back on a screen of the team's: its session list.
    await open(page, `${originOf(lab.engine.api)}/sessions/${session}`);
    await page.getByRole('region', { name: 'Released phones' }).waitFor();
    expect((await c.call('DELETE', `/organizations/${team}/members/${mate.user.id}`, { token: owner })).status).toBe(204);
    const notice = page.getByRole('alert').filter({ hasText: 'no longer a member of Team' });
    await notice.waitFor({ timeout: 15_000 });
    expect(await notice.textContent()).toMatch(/This page now shows Personal/);
    await expect.poll(() => page.getByLabel('Current organization').locator('option:checked').textContent()).toMatch(/^Personal/);
    expect(await page.getByLabel('Current organization').locator('option').allTextContents()).not.toContain('Team (readonly)');
    await page.waitForURL(/\/sessions$/);
    for (const size of SIZES) {
      await page.setViewportSize(size);
      await snap(page, SUITE, `05-removed-${size.width}x${size.height}`);
    }
    // What the old organization answered (403) is all the console saw.
    expect(errors.filter((e) => !/status of 40[34]/.test(e))).toEqual([]);
  });
});
