/**
 * A chat bound to a phone, in Chromium: "tap Settings" streams the assistant's text, shows its tool calls with their
 * screenshots, and the phone ends up in Settings (the lab's default, offline provider). With a scripted model: Stop
 * cancels a slow tool call, and a model that fails shows the API's error.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, allocateInUse, startLab, waitFor, type TestLab } from '../support/lab.js';
import { startScriptedModel, type Script, type ScriptedModel } from '../support/scripted-model.js';
import { chromiumOrSkip, sharedChromium, logIn, newContext, originOf, snap } from './support/browser.js';

const ready = chromiumOrSkip() && adbOrSkip();
const SUITE = 'chat';

describe.runIf(ready)('GUI: a chat that drives a phone', () => {
  let lab: TestLab;
  let browser: Browser;
  let model: ScriptedModel;
  let script: Script = () => ({ text: ['?'] });

  beforeAll(async () => {
    [lab, browser, model] = await Promise.all([
      startLab([{ model: 'Pixel 7', osVersion: '14' }, { model: 'Pixel 5', osVersion: '12' }]),
      sharedChromium(),
      startScriptedModel('openai', (body, i) => script(body, i)),
    ]);
  });
  afterAll(async () => {
    await browser?.close();
    await lab?.stop();
    await model?.stop();
  });

  it('"tap Settings": the tool calls show with their screenshots, and the phone shows Settings', async () => {
    const c = client(lab.engine.api);
    const token = await c.login();
    const { session, serial } = await allocateInUse(c, token, 'Pixel 7');

    const page = await (await newContext(browser)).newPage();
    await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${session}`);
    await page.getByRole('tab', { name: 'Chats' }).click();
    await page.getByLabel('Phone for the new chat').selectOption(serial);
    await page.getByRole('button', { name: 'New chat' }).click();
    await page.getByLabel('Message to the assistant').fill('tap Settings');
    await page.getByRole('button', { name: 'Send' }).click();

    const assistant = page.getByRole('listitem', { name: 'assistant message' }).last();
    const calls = assistant.getByRole('list', { name: 'Tool calls' });
    await calls.getByRole('listitem').first().waitFor({ timeout: 30_000 });
    await snap(page, SUITE, '01-streaming');
    await calls.getByRole('img', { name: /^Screenshot from / }).first().waitFor({ timeout: 30_000 });
    await expect.poll(() => assistant.getByText('running').count(), { timeout: 60_000 }).toBe(0);
    expect((await assistant.innerText()).trim().length).toBeGreaterThan(0);
    await snap(page, SUITE, '02-completed');

    // The phone really is in Settings.
    const elements = async () =>
      (await c.call('GET', `/sessions/${session}/devices/${encodeURIComponent(serial)}/elements`, { token })).body.data as Array<{ text: string }>;
    await waitFor('Settings on the phone', async () => (await elements()).some((e) => /Network|Display|About phone/.test(e.text)));

    // A reload shows the stored conversation once: the text is not doubled by a replayed stream.
    const text = await assistant.locator('.message-text').innerText();
    await page.reload();
    await page.getByRole('tab', { name: 'Chats' }).click();
    const again = page.getByRole('listitem', { name: 'assistant message' }).last();
    await again.locator('.message-text').waitFor();
    expect(await again.locator('.message-text').innerText()).toBe(text);
    await snap(page, SUITE, '03-reloaded');
  });

  it('Stop cancels a slow tool call; a model that fails shows the API\'s error', async () => {
    const c = client(lab.engine.api);
    const token = await c.login();
    const { session, serial } = await allocateInUse(c, token, 'Pixel 5');
    expect((await c.call('PUT', '/lab/assistant', { token, body: { provider: 'openai', endpoint: model.endpoint, model: 'scripted' } })).status).toBe(200);
    try {
      const start = model.requests.length;
      script = (_body, i) => (i === start ? { text: ['Holding it.'], toolCalls: [{ name: 'long_press', arguments: { x: 10, y: 10, durationMs: 20_000 } }] } : { status: 500 });

      const page = await (await newContext(browser)).newPage();
      await logIn(page, originOf(lab.engine.api), OWNER_EMAIL, OWNER_PASSWORD, `/sessions/${session}`);
      await page.getByRole('tab', { name: 'Chats' }).click();
      await page.getByLabel('Phone for the new chat').selectOption(serial);
      await page.getByRole('button', { name: 'New chat' }).click();
      await page.getByLabel('Message to the assistant').fill('hold the screen');
      await page.getByRole('button', { name: 'Send' }).click();

      const held = page.getByRole('listitem', { name: 'assistant message' }).last();
      await held.getByRole('listitem', { name: 'Tool call long_press running' }).waitFor();
      await held.getByRole('button', { name: 'Stop the assistant' }).click();
      await held.getByRole('listitem', { name: 'Tool call long_press cancelled' }).waitFor({ timeout: 5000 });
      await held.getByText('The execution was stopped during this tool call.').waitFor();
      await held.locator('.message-role').getByText('cancelled').waitFor();
      expect(await held.getByRole('button', { name: 'Stop the assistant' }).count()).toBe(0);
      await snap(page, SUITE, '04-cancelled');

      await page.getByLabel('Message to the assistant').fill('and now?');
      await page.getByRole('button', { name: 'Send' }).click();
      const failed = page.getByRole('listitem', { name: 'assistant message' }).last();
      await failed.getByText(/^The model endpoint answered 500/).waitFor();
      await failed.locator('.message-role').getByText('failed').waitFor();
      await snap(page, SUITE, '05-failed');
    } finally {
      await c.call('PUT', '/lab/assistant', { token, body: { provider: 'offline' } });
    }
  });
});
