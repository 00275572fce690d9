import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppiumServer } from '../../src/main/engine/fleet/appium/appium-server.js';

/**
 * A relocatable Appium (issue 43.8): Appium's extension manifest records absolute install paths, so an install that
 * was copied or moved (a packaged desktop app, a moved checkout) got an Appium that answered /status and had no
 * drivers. Here an install is moved after its Appium ran, with the manifest the move leaves behind, and the lab's
 * Appium must still list both drivers.
 */
const REAL = dirname(dirname(createRequire(import.meta.url).resolve('appium/package.json')));
const PACKAGES = ['appium', 'appium-uiautomator2-driver', 'appium-xcuitest-driver'];
const root = mkdtempSync(join(tmpdir(), 'benchtop-appium-move-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Appium's lines until it is up: the list of drivers it loaded is among them. */
async function driversListed(data: string, modules: string): Promise<string> {
  const lines: string[] = [];
  const appium = new AppiumServer({ home: join(data, 'appium'), env: {}, startTimeoutMs: 30_000, pidFile: join(data, 'appium', 'pids', 'appium.json'), modules, log: () => undefined });
  appium.on('line', (line) => lines.push(line));
  try {
    await appium.ensure();
  } finally {
    await appium.stop();
  }
  return lines.join('\n');
}

describe('Appium from a moved install (issue 43.8)', () => {
  it('lists its drivers after the install it runs from has moved', async () => {
    // An install at `before`: its node_modules holds Appium and the drivers (linked to this checkout's, whose
    // node_modules is too large to copy in a test; what moves is the path Appium knows them by).
    const before = join(root, 'before');
    mkdirSync(join(before, 'node_modules'), { recursive: true });
    for (const name of PACKAGES) symlinkSync(join(REAL, name), join(before, 'node_modules', name));
    const data = join(root, 'data');
    const first = await driversListed(data, join(before, 'node_modules'));
    expect(first).toMatch(/uiautomator2@[\d.]+ \(automationName 'UiAutomator2'\)/);
    expect(first).toMatch(/xcuitest@[\d.]+ \(automationName 'XCUITest'\)/);
    const manifest = join(data, 'appium', 'appium-home', 'node_modules', '.cache', 'appium', 'extensions.yaml');
    expect(readFileSync(manifest, 'utf8')).toContain('installPath:');

    // The install moves, with a manifest inside it naming the old paths (what `appium` run in place there left).
    const after = join(root, 'after');
    renameSync(before, after);
    mkdirSync(join(after, 'node_modules', '.cache', 'appium'), { recursive: true });
    writeFileSync(join(after, 'node_modules', '.cache', 'appium', 'extensions.yaml'), readFileSync(manifest, 'utf8').replaceAll(join(data, 'appium', 'appium-home'), before));
    const moved = await driversListed(data, join(after, 'node_modules'));
    expect(moved).toMatch(/uiautomator2@[\d.]+ \(automationName 'UiAutomator2'\)/);
    expect(moved).toMatch(/xcuitest@[\d.]+ \(automationName 'XCUITest'\)/);
    expect(moved).not.toContain(before);
  }, 60_000);
});
