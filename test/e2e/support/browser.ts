import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

/** Debian's Chromium browser (package `chromium`): what the benchmarks measure and a user's own Playwright runs. */
export const CHROMIUM = process.env.BENCHTOP_CHROMIUM ?? '/usr/bin/chromium';
/**
 * Debian's Chromium headless shell (package `chromium-headless-shell`, built from the same source and version): the
 * same Blink, V8 and media stack without the browser's own layers, as Playwright itself runs headless tests. The GUI
 * tests run in it because it costs a third less CPU (account.e2e: 25 s of the machine against 46 s), and on two cores
 * the suite's time is its CPU. The first week ran in the full browser until it cost 21 s of Chromium's CPU against the
 * shell's 11 s; the full browser is still what a benchmark measures, and what a user's own Playwright reports from
 * (test/reporter/playwright.test.ts).
 */
export const HEADLESS_SHELL = process.env.BENCHTOP_CHROMIUM_SHELL ?? '/usr/bin/chromium-headless-shell';
/**
 * The last two spare the tests' machine CPU that is Chromium's own work, not the pages': the display compositor runs in
 * the browser process rather than a GPU process of its own (no GPU here either way), and the test pages (all of them
 * the lab's own origin on localhost) share renderer processes instead of one per site isolation group. account.e2e and
 * phone-page.e2e together: Chromium 23.8 s of CPU against 30.5-31.0 s.
 */
export const CHROMIUM_ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run', '--disable-sync',
  '--in-process-gpu', '--disable-site-isolation-trials',
];

export type Build = 'headless-shell' | 'chromium';
const EXECUTABLE: Record<Build, string> = { 'headless-shell': HEADLESS_SHELL, chromium: CHROMIUM };
const PACKAGE: Record<Build, string> = { 'headless-shell': 'chromium-headless-shell', chromium: 'chromium' };

/** The end-to-end tests need Debian's chromium: under CI its absence is a failure, elsewhere they are skipped loudly. */
export function chromiumOrSkip(build: Build = 'headless-shell'): boolean {
  const path = EXECUTABLE[build];
  if (existsSync(path)) return true;
  const install = `install the Debian package \`${PACKAGE[build]}\` (apt-get install -y ${PACKAGE[build]})`;
  if (process.env.CI === 'true') throw new Error(`${PACKAGE[build]} is missing at ${path}: ${install}.`);
  console.warn(`SKIPPING end-to-end tests: ${PACKAGE[build]} is not installed at ${path} (${install}).`);
  return false;
}

export function launchChromium(build: Build = 'headless-shell'): Promise<Browser> {
  return chromium.launch({ executablePath: EXECUTABLE[build], args: CHROMIUM_ARGS, headless: true });
}

const shared = new Map<Build, Promise<Browser>>();

/**
 * The test worker's one Chromium of each build, for an end-to-end test file: a worker runs file after file (vitest's isolate is off),
 * and starting Chromium for each of them was a minute of CPU in all. Each file still gets fresh profiles (contexts);
 * the handle's close() closes the contexts this file opened, not the browser, which ends with the worker.
 */
export async function sharedChromium(build: Build = 'headless-shell'): Promise<Browser> {
  if (!shared.has(build)) shared.set(build, launchChromium(build));
  let browser = await shared.get(build)!;
  if (!browser.isConnected()) {
    shared.set(build, launchChromium(build));
    browser = await shared.get(build)!;
  }
  const real = browser;
  const opened = new Set<BrowserContext>();
  const track = <T extends BrowserContext>(context: T): T => {
    opened.add(context);
    context.once('close', () => opened.delete(context));
    return context;
  };
  return new Proxy(real, {
    get(target, property) {
      if (property === 'newContext') return async (...args: Parameters<Browser['newContext']>) => track(await target.newContext(...args));
      if (property === 'newPage') {
        return async (...args: Parameters<Browser['newPage']>) => {
          const page = await target.newPage(...args);
          track(page.context());
          return page;
        };
      }
      if (property === 'close') return async () => void (await Promise.all([...opened].map((c) => c.close().catch(() => undefined))));
      const value = Reflect.get(target, property, target) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

/** A fresh browser profile, like a teammate's browser: its own storage, a laptop-sized window. */
export async function newContext(browser: Browser): Promise<BrowserContext> {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } });
  context.setDefaultTimeout(15_000);
  return context;
}

const ARTIFACTS = join(process.cwd(), 'test-artifacts', 'e2e');

/**
 * Saves a screenshot of the whole page as test-artifacts/e2e/<suite>/<name>.png. The window is made as tall as the
 * page for it (Chromium's full-page capture misplaces the fixed sidebar), then restored.
 */
export async function snap(page: Page, suite: string, name: string): Promise<string> {
  const dir = join(ARTIFACTS, suite);
  mkdirSync(dir, { recursive: true });
  const path = join(dir, `${name}.png`);
  const size = page.viewportSize()!;
  const height = await page.evaluate(() => document.documentElement.scrollHeight);
  if (height > size.height) await page.setViewportSize({ width: size.width, height });
  await page.screenshot({ path });
  if (height > size.height) await page.setViewportSize(size);
  return path;
}

/** The origin the engine serves the GUI at, from its API URL. */
export const originOf = (api: string) => api.replace(/\/api\/v1$/, '');

/**
 * Navigates, again if Chromium cancelled the navigation because the machine's network changed, which is the test
 * machine's doing, not the page's. The namespaces other test files plug in and out change no address of this host
 * (test/support/netns.ts); what else changes the machine's network may come in a burst, so a navigation is asked up to
 * four times. Every test's navigation goes through here (`npm run lint` refuses a `goto` elsewhere under test/e2e).
 */
export async function open(page: Page, url: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await page.goto(url);
      return;
    } catch (error) {
      if (attempt === 4 || !String(error).includes('net::ERR_NETWORK_CHANGED')) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250 * attempt));
    }
  }
}

/** Signs in through the login form and waits for the app's navigation. */
export async function logIn(page: Page, origin: string, email: string, password: string, path = '/'): Promise<void> {
  await open(page, origin + path);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByRole('navigation', { name: 'Main' }).waitFor();
}

/** Fails the test on any error the page logs or throws (a CSP violation included). */
export function watchConsole(page: Page): string[] {
  const errors: string[] = [];
  page.on('console', (m) => {
    // Chromium cancels what is in flight when the machine's network changes (see open()): the test machine's doing,
    // not the page's.
    if (m.type() === 'error' && !m.text().includes('net::ERR_NETWORK_CHANGED')) errors.push(m.text());
  });
  page.on('pageerror', (e) => errors.push(e.message));
  return errors;
}

let axeSource: string | undefined;

/**
 * Runs axe-core's WCAG 2 A and AA rules on the page as it is; answers the violations, each as "rule: target". axe-core
 * is put into a document once, and only the violations come back: axe's whole result (every passing node's HTML too)
 * cost Chromium and the test's worker more than the rules' run itself (on the Fleet, 0.78 s of CPU a call against 0.27 s).
 */
export async function axeViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the page's Content-Security-Policy does not govern.
  if (!(await page.evaluate(() => 'axe' in window))) {
    axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
    await page.evaluate(axeSource);
  }
  return page.evaluate(async () => {
    type Result = { violations: Array<{ id: string; nodes: Array<{ target: string[] }> }> };
    const axe = (window as unknown as { axe: { run(context: unknown, options: unknown): Promise<Result> } }).axe;
    const result = await axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'] });
    return result.violations.flatMap((v) => v.nodes.map((n) => `${v.id}: ${n.target.join(' ')}`));
  });
}

