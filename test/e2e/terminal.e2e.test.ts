/**
 * The GUI in Chromium against a real engine with a Mac host (a real sshd on loopback with a scripted tart):
 * allocating an instance, watching it become ready, and running a command in its terminal.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { sshdOrSkip, startMacLab, type MacLab } from '../support/mac-lab.js';
import { chromiumOrSkip, sharedChromium, logIn, newContext, originOf, snap } from './support/browser.js';

const ready = chromiumOrSkip() && sshdOrSkip();
const SUITE = 'terminal';

/** The terminal's visible text, as xterm.js renders it into rows. */
const screenText = (page: Page) => page.locator('.xterm-rows').innerText();

describe.runIf(ready)('GUI: a Mac instance and its terminal', () => {
  let lab: MacLab;
  let browser: Browser;

  beforeAll(async () => {
    [lab, browser] = await Promise.all([startMacLab([{ name: 'mac-studio' }]), sharedChromium()]);
  });
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
  });

  it('allocates an instance, shows it provisioning then ready, opens a terminal, runs a command, and follows a resize', async () => {
    const page = await (await newContext(browser)).newPage();
    const sessionId = await lab.newSession();
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${sessionId}`);
    await page.getByRole('tab', { name: 'Instances' }).click();
    await page.getByRole('button', { name: 'Allocate macOS instance' }).click();
    const card = page.getByRole('article', { name: /^Instance / });
    await card.waitFor();
    await snap(page, SUITE, '01-allocated');
    await card.getByText('ready', { exact: true }).waitFor({ timeout: 30_000 });
    await card.getByText(/ready after \d+:\d\d/).waitFor();

    await card.getByRole('tab', { name: 'Terminal' }).click();
    await expect.poll(() => screenText(page), { timeout: 10_000 }).toMatch(/[$#]\s*$/m);
    // xterm.js takes keys from its focused textarea; typing goes to the shell as bytes.
    await page.locator('.xterm-helper-textarea').focus();
    await page.keyboard.type('echo benchtop-$((6*7))');
    await page.keyboard.press('Enter');
    await expect.poll(() => screenText(page), { timeout: 10_000 }).toContain('benchtop-42');

    // The fit follows the window: the shell learns the new size through the resize message.
    await page.keyboard.type('stty size');
    await page.keyboard.press('Enter');
    await expect.poll(() => screenText(page), { timeout: 10_000 }).toMatch(/^\d+ \d+\s*$/m);
    const first = (await screenText(page)).match(/^(\d+) (\d+)\s*$/m)!;
    await page.setViewportSize({ width: 1600, height: 1000 });
    await page.waitForTimeout(300);
    await page.keyboard.type('clear; stty size');
    await page.keyboard.press('Enter');
    await expect.poll(async () => (await screenText(page)).match(/^(\d+) (\d+)\s*$/m)?.[2], { timeout: 10_000 }).not.toBe(first[2]);
    await snap(page, SUITE, '02-terminal');

    await card.getByRole('button', { name: 'Release instance' }).click();
    await card.getByText('released', { exact: true }).waitFor({ timeout: 15_000 });
    await snap(page, SUITE, '03-released');
  });
});
