/**
 * A team's second week, the smaller findings, in Chromium at 1440x900: Test results says it has none (and keeps
 * saying so through its polls, rather than flash an empty table), a result's page leads back to the list, and sign-up
 * states the password rule before the lab refuses a password. Screenshots go to test-artifacts/e2e/second-week-small/.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, useEngine } from '../support/engine.js';
import { axeViolations, chromiumOrSkip, logIn, originOf, sharedChromium, snap, watchConsole, open } from './support/browser.js';

const ready = chromiumOrSkip();
const SUITE = 'second-week-small';

describe.runIf(ready)('GUI: a team\'s second week, the smaller findings', () => {
  const lab = useEngine();
  let browser: Browser;
  let page: Page;
  let errors: string[];

  beforeAll(async () => {
    browser = await sharedChromium();
    const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    errors = watchConsole(page);
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('sign-up states the password rule under the field it is about', async () => {
    await open(page, originOf(lab.t.api));
    await page.getByRole('button', { name: 'New here? Create an account' }).click();
    const rule = page.getByText('At least 8 characters.');
    await rule.waitFor();
    expect(await page.getByLabel('Password').getAttribute('aria-describedby')).toBe(await rule.getAttribute('id'));
    await snap(page, SUITE, '01-sign-up');
    await page.getByRole('button', { name: 'Have an account? Sign in' }).click();
    expect(await rule.count()).toBe(0);
  });

  it('Test results with none says so, through its polls too, and passes axe', async () => {
    await logIn(page, originOf(lab.t.api), OWNER_EMAIL, OWNER_PASSWORD, '/test-results');
    const empty = page.getByText(/^No test results yet\. A test run shows here once its reporter posts to \/api\/v1\/test-results/);
    await empty.waitFor();
    // Every 100 ms across a poll (5 s): the words stay, and no empty table takes their place.
    for (const until = Date.now() + 6000; Date.now() < until; await page.waitForTimeout(100)) {
      expect(await empty.isVisible()).toBe(true);
      expect(await page.getByRole('table', { name: 'Test results' }).count()).toBe(0);
    }
    await snap(page, SUITE, '02-test-results-empty');
    expect(await axeViolations(page)).toEqual([]);
    // A filter that hides every result says that, not that there are none.
    await page.getByLabel('Name, branch, tag or phone').fill('nothing like this');
    await page.getByText('No test result matches these filters.').waitFor();
  }, 30_000);

  it('a test result\'s page leads back to the list', async () => {
    const created = await lab.c.call('POST', '/test-results', { token: lab.owner, body: { name: 'checkout flow' } });
    expect(created.status).toBe(201);
    await open(page, `${originOf(lab.t.api)}/test-results/${created.body.id}`);
    await page.getByRole('heading', { name: 'checkout flow', level: 1 }).waitFor();
    await snap(page, SUITE, '03-test-result');
    await page.getByRole('link', { name: '← All test results' }).click();
    await page.waitForURL(/\/test-results$/);
    await page.getByRole('table', { name: 'Test results' }).getByRole('link', { name: 'checkout flow' }).waitFor();
    expect(errors).toEqual([]);
  });
});
