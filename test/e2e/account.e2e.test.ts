/**
 * The GUI in Chromium against a real engine: signing in, API keys, and inviting a teammate who accepts in their own
 * browser context.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD, useEngine } from '../support/engine.js';
import { chromiumOrSkip, sharedChromium, logIn, newContext, originOf, snap, watchConsole, open } from './support/browser.js';

const hasChromium = chromiumOrSkip();
const SUITE = 'account';
const CSP_OR_CRASH = /Content Security Policy|Uncaught|Refused to/;

describe.runIf(hasChromium)('GUI: account, keys and invitations', () => {
  let browser: Browser;
  let origin: string;

  const lab = useEngine();

  beforeAll(async () => {
    browser = await sharedChromium();
    origin = originOf(lab.t.api);
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('refuses a wrong password with the API\'s message, then signs in and lands on the fleet', async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    const problems = watchConsole(page);
    await open(page, origin);
    await page.getByLabel('Email').fill(OWNER_EMAIL);
    await page.getByLabel('Password').fill('not-the-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    const alert = page.getByRole('alert');
    await alert.waitFor();
    const message = (await client(lab.t.api).call('POST', '/auth/login', { body: { email: OWNER_EMAIL, password: 'not-the-password' } })).body.error.message;
    expect(await alert.textContent()).toContain(message);
    await snap(page, SUITE, '01-login-refused');

    await page.getByLabel('Password').fill(OWNER_PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    // The owner-only link appears once the signed-in user (and whether they own the lab) has loaded, which can be a
    // moment after the fleet heading: wait for it rather than sample it.
    await page.getByRole('link', { name: 'Settings' }).waitFor({ state: 'visible', timeout: 10_000 });
    await snap(page, SUITE, '02-fleet-after-login');

    // A reload keeps the tab signed in; a deep link is served the app too.
    await open(page, `${origin}/organization`);
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    expect(problems.filter((p) => CSP_OR_CRASH.test(p))).toEqual([]);
    await context.close();
  });

  it('creates an API key, shows its secret once with a copy button, then lists only its suffix', async () => {
    const context = await newContext(browser);
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const page = await context.newPage();
    await logIn(page, origin, OWNER_EMAIL, OWNER_PASSWORD, '/organization');
    await page.getByLabel('Key name').fill('ci-runner');
    await page.getByRole('button', { name: 'Create key' }).click();

    const secretBox = page.getByLabel('The new API key');
    await secretBox.waitFor();
    const secret = await secretBox.inputValue();
    expect(secret).toMatch(/^mob_/);
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByRole('button', { name: 'Copied' }).waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(secret);
    await snap(page, SUITE, '03-key-created');

    // The secret works against the API, and the list shows the suffix, never the secret.
    expect((await client(lab.t.api).call('GET', '/sessions', { token: secret })).status).toBe(200);
    const keys = page.getByRole('table', { name: 'API keys' });
    const row = keys.getByRole('row', { name: /ci-runner/ });
    await row.waitFor();
    const suffix = (await client(lab.t.api).call('GET', '/keys', { token: await client(lab.t.api).login() })).body.data[0].apiKeySuffix;
    expect(await row.textContent()).toContain(suffix);

    await page.getByRole('button', { name: 'Done' }).click();
    await page.reload();
    await keys.getByRole('row', { name: /ci-runner/ }).waitFor();
    expect(await page.content()).not.toContain(secret);
    await snap(page, SUITE, '04-key-suffix-only');

    await page.getByRole('button', { name: 'Delete the key ci-runner' }).click();
    await page.getByText('No API keys.').waitFor();
    expect((await client(lab.t.api).call('GET', '/sessions', { token: secret })).status).toBe(401);
    await context.close();
  });

  it('invites a teammate, who accepts in a second browser context and then sees the organization', async () => {
    const c = client(lab.t.api);
    const teammate = 'teammate@lab.test';
    await c.signup(teammate, 'teammate-password');

    const owner = await (await newContext(browser)).newPage();
    await logIn(owner, origin, OWNER_EMAIL, OWNER_PASSWORD, '/organization');
    await owner.getByLabel('New organization').fill('Device Lab QA');
    await owner.getByRole('button', { name: 'Create', exact: true }).click();
    await owner.getByRole('heading', { name: 'Device Lab QA' }).waitFor();

    await owner.getByLabel('Email', { exact: true }).fill(teammate);
    await owner.getByLabel('Role').selectOption('readwrite');
    await owner.getByRole('button', { name: 'Create invitation link' }).click();
    await owner.getByRole('list', { name: 'Pending invitations' }).getByText(teammate).waitFor();
    await snap(owner, SUITE, '05-invitation-sent');

    // A second invitation to the same email is refused with the API's own message.
    await owner.getByLabel('Email', { exact: true }).fill(teammate);
    await owner.getByRole('button', { name: 'Create invitation link' }).click();
    await owner.getByRole('alert').filter({ hasText: /already/i }).waitFor();

    const mate = await (await newContext(browser)).newPage();
    await logIn(mate, origin, teammate, 'teammate-password', '/organization');
    const incoming = mate.getByRole('list', { name: 'Invitations for you' });
    await incoming.getByText('Device Lab QA').waitFor();
    await snap(mate, SUITE, '06-invitation-received');
    await mate.getByRole('button', { name: 'Accept the invitation to Device Lab QA' }).click();
    await mate.getByRole('button', { name: 'Switch to Device Lab QA' }).click();
    await mate.getByRole('heading', { name: 'Device Lab QA' }).waitFor();
    await mate.getByRole('table', { name: 'Members' }).getByText(OWNER_EMAIL).waitFor();
    await snap(mate, SUITE, '07-teammate-member');

    // The owner sees the new member (after a reload) and no pending invitation left.
    await owner.reload();
    await owner.getByRole('heading', { name: 'Device Lab QA' }).waitFor();
    expect(await owner.getByLabel('Current organization').inputValue()).toBe((await c.call('GET', '/organizations', { token: await c.login() })).body.data.find((o: any) => o.name === 'Device Lab QA').id);
    await owner.getByRole('table', { name: 'Members' }).getByText(teammate).waitFor();
    await owner.getByText('No pending invitations.').waitFor();
    await snap(owner, SUITE, '08-owner-sees-member');
  });

  it('in the desktop window, signs the local owner in through the preload bridge, with no login form', async () => {
    const token = await client(lab.t.api).login();
    const context = await newContext(browser);
    // The preload's contextBridge exposes window.benchtop; here the page gets the same object from an init script.
    await context.addInitScript((t) => {
      (window as any).benchtop = {
        getApiOrigin: async () => location.origin,
        getOwnerToken: async () => ({ token: t, expiresAt: Date.now() + 3_600_000 }),
        openExternal: async () => undefined,
      };
    }, token);
    const page = await context.newPage();
    await open(page, `${origin}/fleet`);
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    expect(await page.getByLabel('Email').count()).toBe(0);
    await page.getByText(OWNER_EMAIL).waitFor();
    await context.close();
  });

  it('lets an admin revoke an invitation, and the invitee reject one', async () => {
    const c = client(lab.t.api);
    const owner = await c.login();
    const org = await c.createOrganization(owner, 'Revocations');
    const mate = await c.signup('declines@lab.test', 'declines-password');
    const invite = (email: string) => c.call('POST', `/organizations/${org}/invitations`, { token: owner, body: { email, role: 'readonly' } });
    await invite('never-joins@lab.test');
    await invite('declines@lab.test');

    const admin = await (await newContext(browser)).newPage();
    await logIn(admin, origin, OWNER_EMAIL, OWNER_PASSWORD, '/organization');
    await admin.getByRole('button', { name: 'Switch to Revocations' }).click();
    await admin.getByRole('button', { name: 'Revoke the invitation of never-joins@lab.test' }).click();
    await expect.poll(() => admin.getByRole('list', { name: 'Pending invitations' }).getByText('never-joins@lab.test').count()).toBe(0);
    expect((await c.call('GET', `/organizations/${org}/invitations`, { token: owner })).body.data.map((i: any) => i.email)).toEqual(['declines@lab.test']);

    const invitee = await (await newContext(browser)).newPage();
    await logIn(invitee, origin, 'declines@lab.test', 'declines-password', '/organization');
    await invitee.getByRole('button', { name: 'Reject the invitation to Revocations' }).click();
    await expect.poll(() => invitee.getByRole('heading', { name: 'Invitations for you' }).count()).toBe(0);
    expect((await c.call('GET', '/invitations', { token: mate.token })).body.data).toEqual([]);
    expect((await c.call('GET', '/organizations', { token: mate.token })).body.data.map((o: any) => o.name)).toEqual(['Personal']);
  });
});
