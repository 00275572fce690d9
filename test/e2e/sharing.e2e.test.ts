/**
 * Sharing in Chromium against a real engine with simulated phones: the warning before an idle release and its
 * "keep" button, the calendar (booking by dragging, another team's busy slots), your bookings on the sessions
 * screen, and the usage report's chart, table and CSV.
 */
import { readFileSync } from 'node:fs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD, type Client } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, type TestLab } from '../support/lab.js';
import { chromiumOrSkip, sharedChromium, logIn, newContext, originOf, snap, watchConsole } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'sharing';

describe.runIf(ready)('GUI: sharing the lab', () => {
  let lab: TestLab;
  let browser: Browser;
  let page: Page;
  let c: Client;
  let owner: string;
  let errors: string[];

  beforeAll(async () => {
    [lab, browser] = await Promise.all([
      startLab([{ model: 'Pixel 7', osVersion: '14' }, { model: 'Galaxy S21', osVersion: '12' }], {
        deviceIdleMinSeconds: 1,
        idleWarningSeconds: 4,
        sharingCheckSeconds: 0.2,
        activityFlushSeconds: 0.3,
      }),
      sharedChromium(),
    ]);
    c = client(lab.engine.api);
    owner = await c.login();
    page = await (await newContext(browser)).newPage();
    errors = watchConsole(page);
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, '/fleet');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
  });

  it('warns the holder before an idle release, on any screen, and "Keep" keeps the phone', async () => {
    expect((await c.call('PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: 6 } })).status).toBe(200);
    const { session, id } = await allocateInUse(c, owner, 'Pixel 7');
    // The fleet shows how long until the phone goes back.
    await page.getByRole('table', { name: 'Phones' }).getByRole('row', { name: /Pixel 7/ }).getByText(/released in \d+:\d\d unless used/).waitFor();
    const warning = page.getByRole('alert', { name: 'Pixel 7 will be released' });
    await warning.waitFor({ timeout: 15_000 });
    await expect.poll(() => warning.textContent()).toMatch(/idle: it goes back to the lab in 0:0\d/);
    await snap(page, SUITE, '01-idle-warning');
    const before = (await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body.idleReleaseAt as string;
    await warning.getByRole('button', { name: 'Keep Pixel 7' }).click();
    await warning.waitFor({ state: 'detached' });
    const after = (await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body;
    expect(Date.parse(after.idleReleaseAt)).toBeGreaterThan(Date.parse(before));
    // Past the deadline it had before "Keep", the phone is still held.
    await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(before) - Date.now()) + 500));
    expect((await c.call('GET', `/sessions/${session}/devices/${id}`, { token: owner })).body.status).toBe('in_use');
    await c.call('PATCH', '/lab/settings', { token: owner, body: { deviceIdleSeconds: 0 } });
    await c.call('POST', `/sessions/${session}/devices/${id}/release`, { token: owner });
  }, 40_000);

  it('books a phone by dragging across its hours in the calendar; another team\'s booking is a busy slot', async () => {
    // Another organization books the Pixel 7 tomorrow from 14:00 to 16:00 (local time).
    const other = await c.signup('other@team.test');
    const tomorrow = new Date();
    tomorrow.setDate(tomorrow.getDate() + 1);
    tomorrow.setHours(14, 0, 0, 0);
    const theirs = await c.call('POST', '/reservations', {
      token: other.token,
      body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }, { attribute: 'name', operator: 'EQUALS', value: 'Pixel 7' }], startsAt: tomorrow.toISOString(), endsAt: new Date(tomorrow.getTime() + 2 * 3600_000).toISOString(), title: 'their secret' },
    });
    expect(theirs.status).toBe(201);

    await page.getByRole('link', { name: 'Calendar' }).click();
    await page.getByRole('button', { name: 'Next day' }).click();
    const grid = page.getByRole('grid', { name: 'Reservations' });
    await grid.getByRole('gridcell', { name: 'Pixel 7 at 14:00, busy 14:00–16:00' }).waitFor();
    await expect(grid.getByText('their secret').count()).resolves.toBe(0);

    const from = grid.getByRole('gridcell', { name: 'Galaxy S21 at 10:00' });
    const to = grid.getByRole('gridcell', { name: 'Galaxy S21 at 12:00' });
    await from.hover();
    await page.mouse.down();
    await grid.getByRole('gridcell', { name: 'Galaxy S21 at 11:00' }).hover();
    await to.hover();
    await page.mouse.up();
    const form = page.getByRole('form', { name: 'Book a phone' });
    await form.waitFor();
    expect(await form.getByLabel('From').inputValue()).toBe('10:00');
    expect(await form.getByLabel('To', { exact: true }).inputValue()).toBe('13:00');
    await form.getByLabel('Title').fill('Nightly run');
    // That very phone, by its serial (of two like phones, the row dragged on), its name and version to read.
    const galaxy = (await c.call('GET', '/fleet/devices', { token: owner })).body.data.find((d: { name: string }) => d.name === 'Galaxy S21');
    expect(await form.getByLabel('Filter 3 value').inputValue()).toBe(galaxy.serial);
    const booking = page.waitForRequest((r) => r.method() === 'POST' && r.url().endsWith('/api/v1/reservations'));
    await form.getByRole('button', { name: 'Book' }).click();
    expect((await booking).postDataJSON().filters).toContainEqual({ attribute: 'serial', operator: 'EQUALS', value: galaxy.serial });
    await grid.getByRole('gridcell', { name: 'Galaxy S21 at 10:00, Nightly run 10:00–13:00' }).waitFor();
    await snap(page, SUITE, '02-calendar');

    // The same window again through the form: the phone is taken, and the engine says so.
    await page.getByRole('button', { name: 'Book a phone' }).click();
    await form.getByRole('button', { name: 'Add name filter' }).click();
    await form.getByLabel('Filter 1 operator').selectOption('EQUALS');
    await form.getByLabel('Filter 1 value').fill('Galaxy S21');
    const day = new Date(tomorrow.getTime() - tomorrow.getTimezoneOffset() * 60_000).toISOString().slice(0, 10);
    await form.getByLabel('Day').fill(day);
    await form.getByLabel('From').fill('11:00');
    await form.getByLabel('To', { exact: true }).fill('12:00');
    await form.getByRole('button', { name: 'Book' }).click();
    await form.getByRole('alert').getByText(/already reserved/).waitFor();
    await form.getByRole('button', { name: 'Cancel' }).click();
  });

  it('shows your bookings on the sessions screen, and cancels one', async () => {
    await page.getByRole('link', { name: 'Sessions' }).click();
    const mine = page.getByRole('region', { name: 'Your bookings' });
    await mine.getByText('Nightly run').waitFor();
    await expect(mine.getByText('their secret').count()).resolves.toBe(0);
    await snap(page, SUITE, '03-your-bookings');
    await mine.getByRole('button', { name: 'Cancel' }).click();
    await mine.getByText('No bookings.').waitFor();
    const left = (await c.call('GET', '/reservations?to=' + encodeURIComponent(new Date(Date.now() + 3 * 86400_000).toISOString()), { token: owner })).body.data;
    expect(left.filter((s: { own: boolean }) => s.own)).toEqual([]);
  });

  it('the Usage screen shows who used what as a chart and a table, and downloads it as CSV', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    const report = page.getByRole('region', { name: 'Who used what' });
    const table = report.getByRole('table', { name: 'Usage by member' });
    await table.getByRole('row', { name: new RegExp(OWNER_EMAIL) }).waitFor();
    await report.getByRole('img', { name: /Device time by member: owner@lab\.test/ }).waitFor();
    await report.getByLabel('Group by').selectOption('device');
    await report.getByRole('table', { name: 'Usage by device' }).getByRole('row', { name: /Pixel 7/ }).waitFor();
    await snap(page, SUITE, '04-usage');

    const [download] = await Promise.all([page.waitForEvent('download'), report.getByRole('button', { name: 'Download CSV' }).click()]);
    expect(download.suggestedFilename()).toBe('benchtop-usage-by-device.csv');
    const text = readFileSync((await download.path())!, 'utf8');
    const lines = text.trim().split('\r\n');
    expect(lines[0]).toBe('serial,name,seconds,allocations');
    expect(lines[1]).toMatch(new RegExp(`^${lab.serials[0]!.replace(/\./g, '\\.')},Pixel 7,\\d+(\\.\\d+)?,1$`));
    // The one failed request is the refused double booking: the browser logs every non-2xx answer.
    expect(errors.filter((e) => !e.includes('status of 409'))).toEqual([]);
  });
});
