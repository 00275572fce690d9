/**
 * A team's first day, in Chromium: with LAN sharing on and sign-up invitation-only, the owner invites a teammate, who
 * opens the link at the LAN address, sees who invited them where and with which role, signs up and lands in the
 * organization; the owner then changes the member's role and removes them from the Organization screen.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD, useEngine } from '../support/engine.js';
import { axeViolations, chromiumOrSkip, sharedChromium, logIn, originOf, snap, watchConsole, open } from './support/browser.js';

const hasChromium = chromiumOrSkip();
const SUITE = 'invitations';

describe.runIf(hasChromium)('GUI: an invitation link over the LAN, and managing members', () => {
  let browser: Browser;
  let lanUrl: string;
  const lab = useEngine({ lanPort: 0 });

  beforeAll(async () => {
    browser = await sharedChromium();
    const r = await lab.c.call('PATCH', '/lab/settings', { token: lab.owner, body: { lanSharing: true, signupOpen: false } });
    expect(r.status).toBe(200);
    lanUrl = r.body.lanSharing.urls[0];
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('the invitee opens the LAN link, sees inviter, organization and role, signs up and lands in the organization; the owner changes their role and removes them', async () => {
    const invitee = 'nora@lab.test';
    const owner = await (await browser.newContext({ viewport: { width: 1280, height: 720 } })).newPage();
    await logIn(owner, originOf(lab.t.api), OWNER_EMAIL, OWNER_PASSWORD, '/organization');
    await owner.getByLabel('New organization').fill('Field Team');
    await owner.getByRole('button', { name: 'Create', exact: true }).click();
    await owner.getByRole('heading', { name: 'Field Team' }).waitFor();
    await owner.getByLabel('Email', { exact: true }).fill(invitee);
    await owner.getByLabel('Role').selectOption('readonly');
    await owner.getByRole('button', { name: 'Create invitation link' }).click();
    const link = await owner.getByLabel(`Invitation link for ${invitee}`, { exact: true }).inputValue();
    // The owner works on loopback; the link is at the LAN address, where a teammate can open it.
    expect(link).toMatch(new RegExp(`^${lanUrl}/join/[A-Za-z0-9_-]{43}$`));

    const context = await browser.newContext({ viewport: { width: 1024, height: 768 }, ignoreHTTPSErrors: true });
    const page = await context.newPage();
    const problems = watchConsole(page);
    await open(page, link);
    await page.getByRole('heading', { name: 'Join Field Team' }).waitFor();
    const card = page.getByRole('region', { name: 'Join Field Team' });
    expect(await card.textContent()).toMatch(new RegExp(`${OWNER_EMAIL} invited ${invitee} to the organization Field Team .*as read-only`));
    expect(await page.getByLabel('Email').inputValue()).toBe(invitee);
    expect(await axeViolations(page)).toEqual([]);
    await snap(page, SUITE, '01-invitation-page');

    await page.getByLabel('Password').fill('nora-password');
    await page.getByRole('button', { name: 'Create account and join' }).click();
    await page.getByRole('heading', { name: 'Field Team', exact: true }).waitFor();
    expect(new URL(page.url()).pathname).toBe('/organization');
    expect(await page.getByLabel('Current organization').locator('option:checked').textContent()).toBe('Field Team (readonly)');
    await page.getByRole('table', { name: 'Members' }).getByText(OWNER_EMAIL).waitFor();
    await snap(page, SUITE, '02-landed-in-organization');
    expect(problems).toEqual([]);

    const orgId = (await lab.c.call('GET', '/organizations', { token: lab.owner })).body.data.find((o: { name: string }) => o.name === 'Field Team').id;
    const noraToken = await lab.c.login(invitee, 'nora-password');
    const roleOfNora = async () =>
      (await lab.c.call('GET', '/organizations', { token: noraToken })).body.data.find((o: { id: string }) => o.id === orgId)?.role;

    await owner.reload();
    const members = owner.getByRole('table', { name: 'Members' });
    await members.getByText(invitee).waitFor();
    await owner.getByLabel(`Role of ${invitee}`).selectOption('readwrite');
    await expect.poll(roleOfNora).toBe('readwrite');
    await snap(owner, SUITE, '03-role-changed');

    owner.once('dialog', (dialog) => void dialog.accept());
    await owner.getByRole('button', { name: `Remove ${invitee}` }).click();
    await expect.poll(() => members.getByText(invitee).count()).toBe(0);
    expect(await roleOfNora()).toBeUndefined();
    await context.close();
    await owner.context().close();
  });
});
