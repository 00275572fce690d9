/**
 * The remaining screens in Chromium, each against data put in through the API: sessions with infinite scroll, test
 * results with their detail and asset gallery, usage as a chart, and the lab owner's settings; plus keyboard use.
 */
import { PNG } from 'pngjs';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, OWNER_EMAIL, OWNER_PASSWORD, useEngine } from '../support/engine.js';
import { chromiumOrSkip, sharedChromium, logIn, newContext, originOf, snap, open } from './support/browser.js';

const hasChromium = chromiumOrSkip();
const SUITE = 'screens';
const SESSIONS = 70;

function png(width: number, height: number, rgb: [number, number, number]): Buffer {
  const image = new PNG({ width, height });
  for (let i = 0; i < width * height; i++) image.data.set([...rgb, 255], i * 4);
  return PNG.sync.write(image);
}

describe.runIf(hasChromium)('GUI: sessions, test results, usage, settings', () => {
  let browser: Browser;
  let page: Page;
  const c = () => client(lab.t.api);

  const lab = useEngine();

  beforeAll(async () => {
    browser = await sharedChromium();
    for (let i = 0; i < SESSIONS; i++) await c().call('POST', '/sessions', { token: lab.owner });
    page = await (await newContext(browser)).newPage();
    await logIn(page, originOf(lab.t.api), OWNER_EMAIL, OWNER_PASSWORD, '/sessions');
  });
  afterAll(async () => {
    await browser?.close();
  });

  it('scrolls through every session, page after page, newest first', async () => {
    const rows = page.getByRole('table', { name: 'Sessions' }).locator('tbody tr');
    await rows.first().waitFor();
    expect(await rows.count()).toBeLessThan(SESSIONS);
    await snap(page, SUITE, '01-sessions');
    await expect.poll(async () => {
      await page.mouse.wheel(0, 5000);
      return rows.count();
    }, { timeout: 15_000 }).toBe(SESSIONS);
    const newest = (await c().call('GET', '/sessions?limit=1', { token: lab.owner })).body.data[0].id as string;
    expect(await rows.first().textContent()).toContain(newest.slice(0, 8));
  });

  it('filters test results and shows one with its stats, git info, an inline image and a downloadable trace; a build\'s runs at a glance', async () => {
    const create = (body: unknown) => c().call('POST', '/test-results', { token: lab.owner, body }).then((r) => r.body.id as string);
    const passed = await create({
      name: 'checkout-e2e',
      status: 'passed',
      git: { branch: 'main', commitSha: '0123abcdef', commitMessage: 'Pay with one tap', authorName: 'Ada' },
      stats: { expected: 42, unexpected: 0, flaky: 1, skipped: 2, duration: 81234 },
      tags: ['build:nightly-42'],
    });
    await create({ name: 'login-smoke', status: 'failed', reason: 'No element: ~Log in', stats: { expected: 3, unexpected: 1 }, tags: ['build:nightly-42'] });
    await create({ name: 'last-night', status: 'passed', tags: ['build:nightly-41'] });
    const upload = async (name: string, data: Buffer, type: string) => {
      const form = new FormData();
      form.set('name', name);
      form.set('file', new Blob([new Uint8Array(data)], { type }), name);
      const r = await fetch(`${lab.t.api}/test-results/${passed}/assets`, { method: 'POST', headers: { authorization: `Bearer ${lab.owner}` }, body: form });
      expect(r.status).toBe(201);
    };
    await upload('home.png', png(120, 240, [47, 111, 237]), 'image/png');
    await upload('trace.zip', Buffer.from('PK trace bytes'), 'application/zip');

    await page.getByRole('link', { name: 'Test results' }).click();
    const table = page.getByRole('table', { name: 'Test results' });
    await table.getByText('login-smoke').waitFor();
    await page.getByLabel('Status').selectOption('passed');
    await expect.poll(() => table.getByText('login-smoke').count()).toBe(0);
    await page.getByLabel('Name, branch, tag or phone').fill('checkout');
    await table.getByRole('link', { name: 'checkout-e2e' }).click();

    await page.getByRole('heading', { name: 'checkout-e2e' }).waitFor();
    await page.getByText('Pay with one tap').waitFor();
    expect(await page.getByLabel('Statistics').innerText()).toMatch(/42[\s\S]*expected/i);
    const image = page.getByRole('img', { name: 'home.png' });
    await image.waitFor();
    await expect.poll(() => image.evaluate((img: HTMLImageElement) => img.naturalWidth)).toBe(120);
    const download = page.waitForEvent('download');
    await page.getByRole('button', { name: 'Download trace.zip' }).click();
    const file = await download;
    expect(file.suggestedFilename()).toBe('trace.zip');
    await snap(page, SUITE, '02-test-result');

    // Its build, as a cloud lab's build page shows one: that build's runs alone, and how they went.
    await page.getByRole('link', { name: 'build:nightly-42' }).click();
    const build = page.getByRole('region', { name: 'Build' });
    await expect.poll(() => build.innerText()).toMatch(/Build nightly-42: 2 runs · 1 passed, 1 failed/);
    expect(page.url()).toMatch(/\/test-results\?tag=build%3Anightly-42$/);
    await table.getByText('login-smoke').waitFor();
    expect(await table.getByText('last-night').count()).toBe(0);
    // A failed run says why in the list.
    await table.getByRole('row').filter({ hasText: 'login-smoke' }).getByText('No element: ~Log in').waitFor();
    await snap(page, SUITE, '02-build');
    await build.getByRole('link', { name: 'All runs' }).click();
    await table.getByText('last-night').waitFor();
    expect(await build.count()).toBe(0);
    // A build in the list opens the same page.
    await table.getByRole('link', { name: 'nightly-41' }).click();
    await expect.poll(() => build.innerText()).toMatch(/Build nightly-41: 1 run · 1 passed/);
  });

  it('charts seconds used and remaining for the period', async () => {
    await page.getByRole('link', { name: 'Usage' }).click();
    const chart = page.getByRole('img', { name: /devices: .* remaining; instances: / });
    await chart.waitFor();
    const balance = (await c().call('GET', '/billing/balance', { token: lab.owner })).body;
    // The lab owner's own lab has no plan (issue 44.11): the period and the allowance they set, no plan's name.
    expect(await page.getByText(`Plan ${balance.plan}`).count()).toBe(0);
    await page.getByText(/This is your lab: no plan applies to you/).waitFor();
    await snap(page, SUITE, '03-usage');
  });

  it('lets the lab owner add a Mac host in Settings, and shows the API\'s message for a bad one', async () => {
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByRole('button', { name: 'Add a Mac host' }).click();
    const form = page.getByRole('form', { name: 'Add a Mac host' });
    await form.getByLabel('Name').fill('mac-mini');
    await form.getByLabel('Address').fill('bad address!');
    await form.getByLabel('User').fill('admin');
    await form.getByLabel('Password').fill('secret-password');
    await form.getByRole('button', { name: 'Add host' }).click();
    await form.getByRole('alert').waitFor();
    await form.getByLabel('Address').fill('127.0.0.1');
    await form.getByLabel('SSH port').fill('1');
    await form.getByRole('button', { name: 'Add host' }).click();
    const hosts = page.getByRole('table', { name: 'Mac hosts' });
    await hosts.getByText('mac-mini').waitFor({ timeout: 20_000 });
    expect(await page.content()).not.toContain('secret-password');
    await snap(page, SUITE, '04-settings');
  });

  it('works from the keyboard: skip link, navigation and the session tabs', async () => {
    await open(page, `${originOf(lab.t.api)}/fleet`);
    await page.getByRole('heading', { name: 'Fleet' }).waitFor();
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Fleet');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();

    const newest = (await c().call('GET', '/sessions?limit=1', { token: lab.owner })).body.data[0].id as string;
    await open(page, `${originOf(lab.t.api)}/sessions/${newest}`);
    await page.getByRole('tab', { name: 'Devices' }).focus();
    await page.keyboard.press('ArrowRight');
    expect(await page.getByRole('tab', { name: 'Instances' }).getAttribute('aria-selected')).toBe('true');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('tab-Instances');

    // Every control on the screens visited has a name a screen reader can say.
    const unnamed = await page.evaluate(() =>
      [...document.querySelectorAll('button, input, select, textarea, a[href]')].filter((el) => {
        const labelled = el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || (el as HTMLInputElement).labels?.length;
        return !labelled && !(el.textContent ?? '').trim();
      }).map((el) => el.outerHTML.slice(0, 80)),
    );
    expect(unnamed).toEqual([]);
  });

  it('asks who is signed in, and the Fleet screen\'s phones, hosts and providers, once, from the small script that runs before the app', async () => {
    const asked: string[] = [];
    const listen = (request: { url(): string }) => {
      const path = new URL(request.url()).pathname;
      if (path.startsWith('/api/v1/')) asked.push(path);
    };
    page.on('request', listen);
    // The sidebar as it was first added to the page.
    await page.addInitScript(() => new MutationObserver((_, observer) => {
      const sidebar = document.querySelector('nav.sidebar');
      if (!sidebar) return;
      observer.disconnect();
      (globalThis as { __firstSidebar?: string | null }).__firstSidebar = sidebar.textContent;
      (globalThis as { __firstSidebarAt?: number }).__firstSidebarAt = performance.now();
    }).observe(document, { childList: true, subtree: true }));
    try {
      await open(page, `${originOf(lab.t.api)}/fleet`);
      await page.getByRole('table', { name: 'Mac hosts' }).or(page.getByText('No Mac hosts')).first().waitFor();
      // The page's first script is the prefetch, inline (the CSP lets it run by its hash), ahead of the style sheet:
      // a module, or a script that waits for its own request, would ask for the lists later. Its code is wrapped,
      // so none of its names are left on the page's global object.
      expect(await page.evaluate(() => {
        const first = document.querySelector('script')!;
        const sheet = document.querySelector('link[rel="stylesheet"]')!;
        return { src: first.getAttribute('src'), type: first.getAttribute('type'), asks: first.textContent!.includes('/api/v1/fleet/devices'), beforeSheet: (first.compareDocumentPosition(sheet) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0 };
      })).toEqual({ src: null, type: null, asks: true, beforeSheet: true });
      expect(await page.evaluate(() => ['e', 't', 'n', 'FLEET_REQUESTS', 'token'].filter((name) => name in globalThis))).toEqual([]);
      expect(await page.evaluate(() => (globalThis as { __benchtopPrefetched?: Map<string, unknown> }).__benchtopPrefetched?.size)).toBe(0);
      // Within the first second (before any poll is due): each list once, the store's poll and the release warnings'
      // sharing the early answer instead of asking again.
      await new Promise((resolve) => setTimeout(resolve, 1000));
      for (const path of ['/api/v1/me', '/api/v1/organizations', '/api/v1/fleet/devices', '/api/v1/fleet/hosts', '/api/v1/fleet/providers']) {
        expect(asked.filter((p) => p === path), path).toHaveLength(1);
      }
      // And the page was drawn complete the first time: the sidebar came with the signed-in owner's email and the
      // owner's Settings link, rather than without them for a frame. main.tsx waits up to 300 ms for who is signed in
      // (and the Fleet's phones): a page drawn sooner was drawn because they had come, and must be complete; one drawn
      // at that wait's end may lack them (a slow lab, or a loaded machine whose answers came but were not yet read).
      const drawn = await page.evaluate(() => ({
        first: (globalThis as { __firstSidebar?: string }).__firstSidebar,
        at: (globalThis as { __firstSidebarAt?: number }).__firstSidebarAt!,
        now: document.querySelector('nav.sidebar')!.textContent,
        // The page's own script can start no sooner than its document has arrived.
        documentArrived: (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).responseEnd,
      }));
      expect(drawn.now).toMatch(/Settings.*@/);
      if (drawn.at - drawn.documentArrived < 300) expect(drawn.first).toBe(drawn.now);
      else console.warn(`the first drawing came ${Math.round(drawn.at - drawn.documentArrived)} ms after the document, at main.tsx's wait: its completeness is not checked`);
    } finally {
      page.off('request', listen);
    }
  });

  it('shows the Fleet without an error when the browser could not complete its first asks for the phones (the network changed under them)', async () => {
    // Chromium cancels the connections it is opening when the computer's network changes (net::ERR_NETWORK_CHANGED);
    // a fetch then fails as one the connection reset does. The first two asks fail: the early one from the page's
    // first script, and the app's own in its place; a GET is asked once more, and the screen never shows an error.
    let failed = 0;
    await page.route('**/api/v1/fleet/devices', (route) => (failed++ < 2 ? route.abort('connectionreset') : route.continue()));
    await page.addInitScript(() => new MutationObserver(() => {
      if (document.querySelector('[role="alert"]')) (globalThis as { __alerted?: boolean }).__alerted = true;
    }).observe(document, { childList: true, subtree: true }));
    try {
      await open(page, `${originOf(lab.t.api)}/fleet`);
      await page.getByRole('table', { name: 'Mac hosts' }).or(page.getByText('No Mac hosts')).first().waitFor();
      await page.getByRole('heading', { name: 'Phones' }).waitFor();
      expect(failed).toBeGreaterThanOrEqual(3);
      expect(await page.evaluate(() => (globalThis as { __alerted?: boolean }).__alerted ?? false)).toBe(false);
    } finally {
      await page.unrouteAll();
    }
  });
});
