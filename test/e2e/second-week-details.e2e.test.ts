/**
 * A team's second week, the details (issue 44.11), in Chromium at 1440x900 (and 1024x768 for the invitation link)
 * with a Pixel 7 on the real adb server and an iPhone on a simulated usbmuxd: sign-in offers sign-up only while it is
 * open; a mistyped join link says what to do; focus after "Share, invitations only", a role change and "Release now"
 * lands on what they did, not on the page; the Calendar has a "now" line and names its time zone; Sessions names
 * each session's owner; chats go by the phone's name; an iPhone's apps show their names and versions; the invitation
 * link shows whole; the Assistant's box is named by the words above it; a lab owner sees no plan; the phone's shell
 * has $TERM, `clear` and Tab completion. axe-core (WCAG 2 A and AA) finds nothing on each screen. Screenshots go to
 * test-artifacts/e2e/second-week-details/.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { startIosBus, type IosBus } from '../support/ios-lab.js';
import { adbOrSkip, startLab, waitFor, type TestLab } from '../support/lab.js';
import { labSession, NO_VIDEO } from '../support/webdriver.js';
import { axeViolations, chromiumOrSkip, logIn, originOf, sharedChromium, snap, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'second-week-details';
const IPHONE = 'Field iPhone';
const TEAMMATE = 'teammate@lab.test';
const ZONE = 'Europe/Berlin';
/** axe-core's default run (WCAG and best practices: heading order, ARIA roles), as "rule (impact): target". */
async function allAxeViolations(page: Page): Promise<string[]> {
  await page.evaluate(readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8'));
  const result = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run(context: unknown): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }> } }).axe;
    return axe.run(document);
  });
  return result.violations.flatMap((v) => v.nodes.map((n) => `${v.id} (${v.impact}): ${n.target.join(' ')}`));
}

describe.runIf(ready)('GUI: a team\'s second week, the details', () => {
  let bus: IosBus;
  let lab: TestLab;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let origin: string;
  let owner: string;
  let ownerId: string;
  let team: string;
  let mate: { token: string; id: string };
  let session: string;
  let pixel: { id: string; serial: string };
  const c = () => client(lab.engine.api);
  const focused = () => page.evaluate(() => {
    const e = document.activeElement;
    return { tag: e?.tagName.toLowerCase(), text: (e as HTMLElement | null)?.innerText?.trim() ?? '', label: e?.getAttribute('aria-label') ?? '' };
  });
  const allocate = async (token: string, sessionId: string, platform: string, org?: string) => {
    const a = (await c().call('POST', `/sessions/${sessionId}/devices`, { token, org, body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: platform }] } })).body;
    return waitFor(`the ${platform} phone in use`, async () => {
      const d = (await c().call('GET', `/sessions/${sessionId}/devices/${a.id}`, { token, org })).body;
      return d.status === 'in_use' ? { id: d.id as string, serial: d.info.serial as string } : undefined;
    }, 30_000);
  };

  beforeAll(async () => {
    bus = await startIosBus([{ name: IPHONE, version: '17.5.1', userApps: [{ bundleId: 'com.example.fieldnotes', name: 'Field Notes', version: '2.4' }] }]);
    [lab, browser] = await Promise.all([
      startLab([{ model: 'Pixel 7', osVersion: '14', uiautomator2ServerInstalled: true }], { usbmuxd: parseUsbmuxdAddress(bus.address) }),
      sharedChromium(),
    ]);
    origin = originOf(lab.engine.api);
    owner = await c().login();
    ownerId = (await c().call('GET', '/me', { token: owner })).body.id;
    team = await c().createOrganization(owner, 'Details team');
    const signedUp = await c().signup(TEAMMATE);
    mate = { token: signedUp.token, id: signedUp.user.id };
    await c().addMember(owner, team, mate.token, TEAMMATE, 'readwrite');
    await waitFor('both phones in the fleet', async () => {
      const fleet = (await c().call('GET', '/fleet/devices', { token: owner })).body.data as Array<{ name: string; state: string }>;
      return fleet.some((d) => d.name === 'Pixel 7' && d.state === 'device') && fleet.some((d) => d.name === IPHONE && d.state === 'device');
    }, 30_000);
    session = (await c().call('POST', '/sessions', { token: owner })).body.id;
    pixel = await allocate(owner, session, 'android');
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, timezoneId: ZONE });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
    await bus?.stop();
  });

  it('sign-in offers sign-up only while it is open, and says how to get in while it is by invitation', async () => {
    expect((await c().call('PATCH', '/lab/settings', { token: owner, body: { signupOpen: false } })).status).toBe(200);
    await open(page, origin);
    await page.getByText('New here? Sign-up is by invitation: ask a member of this lab for an invitation link.').waitFor();
    expect(await page.getByRole('button', { name: /Create an account/ }).count()).toBe(0);
    await snap(page, SUITE, '01-sign-in-invitation-only');
    expect(await axeViolations(page)).toEqual([]);
    expect((await c().call('PATCH', '/lab/settings', { token: owner, body: { signupOpen: true } })).status).toBe(200);
    await page.reload();
    await page.getByRole('button', { name: 'New here? Create an account' }).waitFor();
    expect(await page.getByText(/Sign-up is by invitation/).count()).toBe(0);
  });

  it('a mistyped join link says what to do, not "No resource with that id."', async () => {
    for (const secret of ['not-a-real-link', 'A'.repeat(43)]) {
      await open(page, `${origin}/join/${secret}`);
      await page.getByText(/This invitation link does not work here: it may be mistyped or cut short/).waitFor();
      expect(await page.getByText('No resource with that id.').count()).toBe(0);
    }
    await page.getByRole('button', { name: 'Go to sign in' }).waitFor();
    await snap(page, SUITE, '02-join-mistyped');
    expect(await axeViolations(page)).toEqual([]);
  });

  it('"Share, invitations only" leaves focus on what it did', async () => {
    // The mistyped links' 404s, which Chromium logs as errors: what they show was checked above.
    errors.length = 0;
    await logIn(page, origin, OWNER_EMAIL, OWNER_PASSWORD, '/settings');
    await page.getByLabel(/Share this lab on the LAN/).check();
    await page.getByRole('button', { name: 'Share, invitations only' }).click();
    const note = page.getByRole('status').filter({ hasText: 'Shared on the LAN; sign-up is by invitation only.' });
    await note.waitFor();
    await waitFor('focus on the note', async () => {
      const now = await focused();
      return (now.tag === 'p' && now.text === 'Shared on the LAN; sign-up is by invitation only.') || undefined;
    }, 5000);
    const settings = (await c().call('GET', '/lab/settings', { token: owner })).body;
    expect([settings.lanSharing.enabled, settings.signupOpen]).toEqual([true, false]);
    await snap(page, SUITE, '03-shared-invitations-only');
    expect(await axeViolations(page)).toEqual([]);
  });

  it('the invitation link shows whole, at 1440 and at 1024', async () => {
    await page.locator('select[aria-label="Current organization"]').selectOption(team);
    await page.getByRole('link', { name: 'Organization', exact: true }).click();
    await page.getByLabel('Email').fill('newcomer@lab.test');
    await page.getByRole('button', { name: 'Create invitation link' }).click();
    const box = page.getByLabel('Invitation link for newcomer@lab.test', { exact: true });
    await box.waitFor();
    const link = await box.inputValue();
    expect(link).toMatch(/\/join\/[\w-]{20,}$/);
    for (const size of [{ width: 1440, height: 900 }, { width: 1024, height: 768 }]) {
      await page.setViewportSize(size);
      // Nothing of the link is scrolled out of its box, across or down.
      await waitFor(`the whole link at ${size.width}`, () => box.evaluate((e: HTMLTextAreaElement) => e.scrollWidth <= e.clientWidth && e.scrollHeight <= e.clientHeight + 1 && e.clientWidth > 100) || undefined, 3000);
      await snap(page, SUITE, `04-invitation-link-${size.width}`);
    }
    await page.setViewportSize({ width: 1440, height: 900 });
  });

  it('a role change says what it did, and focus stays on the select', async () => {
    const role = page.getByLabel(`Role of ${TEAMMATE}`);
    await role.focus();
    await role.selectOption('readonly');
    await page.getByRole('status').filter({ hasText: `${TEAMMATE} is now readonly, from their next request.` }).waitFor();
    expect(await focused()).toMatchObject({ tag: 'select', label: `Role of ${TEAMMATE}` });
    const members = (await c().call('GET', `/organizations/${team}/members`, { token: owner })).body.data as Array<{ userId: string; role: string }>;
    expect(members.find((m) => m.userId === mate.id)?.role).toBe('readonly');
    expect(await axeViolations(page)).toEqual([]);
    await role.selectOption('readwrite');
    await page.getByRole('status').filter({ hasText: `${TEAMMATE} is now readwrite` }).waitFor();
  });

  it('Sessions names whose each session is', async () => {
    const mine = (await c().call('POST', '/sessions', { token: owner, org: team })).body.id as string;
    const theirs = (await c().call('POST', '/sessions', { token: mate.token, org: team })).body.id as string;
    await c().call('PATCH', `/sessions/${theirs}`, { token: mate.token, org: team, body: { name: 'their checkout run' } });
    await page.getByRole('link', { name: 'Sessions', exact: true }).click();
    const table = page.getByRole('table', { name: 'Sessions' });
    await table.getByRole('columnheader', { name: 'Owner' }).waitFor();
    const owned = table.getByRole('row').filter({ hasText: 'their checkout run' });
    await owned.getByRole('cell', { name: TEAMMATE }).waitFor();
    await table.getByRole('row').filter({ hasText: mine.slice(0, 8) }).getByRole('cell', { name: 'you', exact: true }).waitFor();
    await snap(page, SUITE, '05-sessions-owner');
    expect(await axeViolations(page)).toEqual([]);
  });

  it('the Calendar draws a line at now and names its time zone', async () => {
    await page.getByRole('link', { name: 'Calendar', exact: true }).click();
    await page.getByText(new RegExp(`^Times in ${ZONE}, UTC\\+0[12]:00$`)).waitFor();
    const line = page.locator('.calendar-now');
    await line.waitFor();
    // The line is where the clock is, between the hour columns of the head row.
    const { lineX, expected } = await page.evaluate(() => {
      const heads = [...document.querySelectorAll('.calendar-head .calendar-hour')] as HTMLElement[];
      const now = new Date();
      const h = heads[now.getHours()]!.getBoundingClientRect();
      const lineBox = document.querySelector('.calendar-now')!.getBoundingClientRect();
      return { lineX: lineBox.left + lineBox.width / 2, expected: h.left + (h.width * (now.getMinutes() + now.getSeconds() / 60)) / 60 };
    });
    expect(Math.abs(lineX - expected)).toBeLessThan(3);
    await snap(page, SUITE, '06-calendar-now');
    expect(await axeViolations(page)).toEqual([]);
    // Another day has no "now".
    await page.getByRole('button', { name: 'Next day' }).click();
    await waitFor('no line on another day', async () => (await line.count()) === 0 || undefined, 3000);
  });

  it('a lab owner\'s Usage names no plan', async () => {
    await page.getByRole('link', { name: 'Usage', exact: true }).click();
    await page.getByText(/This is your lab: no plan applies to you/).waitFor();
    expect(await page.getByText(/Plan hobby/).count()).toBe(0);
    expect(await page.getByText('hobby', { exact: true }).count()).toBe(0);
    // The allowance the owner set still shows, as time used and remaining.
    await page.getByRole('img', { name: /devices: .* remaining; instances: / }).waitFor();
    await snap(page, SUITE, '07-usage-lab-owner');
  });

  it('an iPhone\'s apps show their names and versions', async () => {
    await page.locator('select[aria-label="Current organization"]').selectOption({ index: 0 });
    const iphoneSession = (await c().call('POST', '/sessions', { token: owner })).body.id as string;
    await allocate(owner, iphoneSession, 'ios');
    await open(page, `${origin}/sessions/${iphoneSession}`);
    await page.getByRole('tab', { name: 'Apps', exact: true }).click();
    const app = page.getByRole('list', { name: `Apps on ${IPHONE}` }).getByRole('listitem', { name: 'Field Notes' });
    await app.waitFor();
    expect(await app.locator('.app-name').innerText()).toMatch(/^Field Notes 2\.4 \(1\)\s+com\.example\.fieldnotes$/);
    await snap(page, SUITE, '08-iphone-apps');
  });

  it('chats go by the phone\'s name, and the Assistant\'s box is named by the words above it', async () => {
    const chat = await c().call('POST', `/sessions/${session}/chats`, { token: owner, body: { metadata: { deviceId: pixel.serial } } });
    expect(chat.status).toBe(201);
    await open(page, `${origin}/sessions/${session}`);
    await page.getByRole('tab', { name: 'Chats' }).click();
    const chats = page.getByRole('list', { name: 'Chats' });
    await chats.getByRole('button', { name: /^Pixel 7 · \d\d:\d\d$/ }).waitFor();
    expect(await chats.innerText()).not.toContain(pixel.serial);
    const box = page.getByRole('textbox', { name: 'Message to the assistant', exact: true });
    await box.waitFor();
    // The name is the words a reader sees beside the box.
    expect(await page.getByText('Message to the assistant', { exact: true }).isVisible()).toBe(true);
    await snap(page, SUITE, '09-chats');
    expect(await axeViolations(page)).toEqual([]);
  });

  it('the phone\'s shell has $TERM, clear and Tab completion', async () => {
    await page.getByRole('tab', { name: 'Devices' }).click();
    await page.getByRole('tab', { name: 'Shell', exact: true }).click();
    const terminal = page.getByRole('region', { name: 'Shell on Pixel 7' });
    await terminal.locator('.xterm-rows').getByText('$').first().waitFor();
    const screen = () => terminal.locator('.xterm-rows').innerText();
    await terminal.click();
    await page.keyboard.type('echo "term is $TERM"\n');
    await waitFor('$TERM', async () => (await screen()).includes('term is xterm-256color') || undefined);
    await page.keyboard.type('ls /sdc');
    await page.keyboard.press('Tab');
    await waitFor('/sdc completed', async () => (await screen()).includes('ls /sdcard/') || undefined);
    await page.keyboard.type('\n');
    await waitFor('the listing', async () => (await screen()).includes('Download') || undefined);
    await page.keyboard.type('clear\n');
    await waitFor('a clear screen', async () => !(await screen()).includes('term is') || undefined);
    await snap(page, SUITE, '10-shell');
  });

  it('"Release now" takes focus to the line saying the phone was released', async () => {
    await page.getByRole('button', { name: 'Release Pixel 7…' }).click();
    await page.getByRole('button', { name: 'Release now' }).click();
    const line = page.getByRole('region', { name: 'Released phones' }).getByRole('listitem').filter({ hasText: 'you released it.' });
    await line.waitFor();
    await waitFor('focus on the release', async () => {
      const now = await focused();
      return (now.tag === 'li' && now.text.includes('Pixel 7') && now.text.endsWith('you released it.')) || undefined;
    }, 5000);
    const released = (await c().call('GET', `/sessions/${session}/devices/${pixel.id}`, { token: owner })).body;
    expect(released.releasedBy).toBe(ownerId);
    await snap(page, SUITE, '11-released');
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('axe finds nothing on the phone page, on any tab, while a WebDriver run (WebdriverIO) holds the phone', async () => {
    const key = await c().createKey(owner);
    const driver = await labSession(lab.engine.api, key, { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'benchtop:options': { name: 'axe while running', ...NO_VIDEO } });
    try {
      const runSession = (driver.capabilities as Record<string, unknown>)['benchtop:session'] as string;
      await driver.getPageSource();
      await open(page, `${origin}/sessions/${runSession}`);
      await page.getByRole('img', { name: 'Screen of Pixel 7' }).waitFor({ timeout: 30_000 });
      // Every tab the page offers during a run (a watch-only page may offer fewer than a holder's).
      const tabs = await page.getByRole('tablist', { name: 'About Pixel 7' }).getByRole('tab').allInnerTexts();
      expect(tabs.length).toBeGreaterThan(0);
      const found: string[] = [];
      for (const name of tabs) {
        await page.getByRole('tab', { name, exact: true }).click();
        await page.getByRole('tabpanel', { name, exact: true }).waitFor();
        found.push(...(await allAxeViolations(page)).map((v) => `${name}: ${v}`), ...(await axeViolations(page)).map((v) => `${name}: ${v}`));
      }
      await snap(page, SUITE, '12-phone-page-webdriver-run');
      expect(found).toEqual([]);
      // The client's DELETE is its user's release: releasedBy names the key's owner.
      await driver.deleteSession();
      const released = await waitFor('the run\'s phone released', async () => {
        const d = ((await c().call('GET', `/sessions/${runSession}/devices`, { token: owner })).body.data as Array<Record<string, unknown>>)[0];
        return d?.status === 'released' ? d : undefined;
      });
      expect(released).toMatchObject({ releaseReason: 'webdriver_ended', releasedBy: ownerId });
    } finally {
      await driver.deleteSession().catch(() => undefined);
    }
  }, 120_000);

  it('a phone a teammate released says who did, by email', async () => {
    await page.locator('select[aria-label="Current organization"]').selectOption(team);
    const teamSession = (await c().call('POST', '/sessions', { token: owner, org: team })).body.id as string;
    const held = await allocate(owner, teamSession, 'android', team);
    expect((await c().call('POST', `/sessions/${teamSession}/devices/${held.serial}/release`, { token: mate.token, org: team })).status).toBe(202);
    await open(page, `${origin}/sessions/${teamSession}`);
    await page.getByRole('region', { name: 'Released phones' }).getByText(`${TEAMMATE} released it.`).waitFor();
    await snap(page, SUITE, '13-released-by-teammate');
  });
});
