import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AppiumServer, type AppiumPlatform } from '../../src/main/engine/fleet/appium/appium-server.js';

/**
 * A relocatable Appium (issue 43.8): Appium's extension manifest records absolute install paths, so an install that
 * was copied or moved (a packaged desktop app, a moved checkout) got an Appium that answered /status and had no
 * drivers. Here an install is moved after its Appiums ran, with the manifest the move leaves behind, and each of the
 * lab's Appiums (one a platform) must still list its platform's driver, and only that one.
 */
const REAL = dirname(dirname(createRequire(import.meta.url).resolve('appium/package.json')));
const PACKAGES = ['appium', 'appium-uiautomator2-driver', 'appium-xcuitest-driver'];
const root = mkdtempSync(join(tmpdir(), 'benchtop-appium-move-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A platform's Appium's lines until it is up: the list of drivers it loaded is among them. */
async function driversListed(data: string, modules: string, platform: AppiumPlatform): Promise<string> {
  const lines: string[] = [];
  const appium = new AppiumServer({ platform, home: join(data, 'appium', platform), env: {}, startTimeoutMs: 30_000, pidFile: join(data, 'appium', 'pids', `appium-${platform}.json`), modules, log: () => undefined });
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
    const UIAUTOMATOR2 = /uiautomator2@[\d.]+ \(automationName 'UiAutomator2'\)/;
    const XCUITEST = /xcuitest@[\d.]+ \(automationName 'XCUITest'\)/;
    const [android, ios] = await Promise.all([driversListed(data, join(before, 'node_modules'), 'android'), driversListed(data, join(before, 'node_modules'), 'ios')]);
    expect(android).toMatch(UIAUTOMATOR2);
    expect(android).not.toMatch(XCUITEST);
    expect(ios).toMatch(XCUITEST);
    expect(ios).not.toMatch(UIAUTOMATOR2);
    const manifest = join(data, 'appium', 'android', 'appium-home', 'node_modules', '.cache', 'appium', 'extensions.yaml');
    expect(readFileSync(manifest, 'utf8')).toContain('installPath:');

    // The install moves, with a manifest inside it naming the old paths (what `appium` run in place there left).
    const after = join(root, 'after');
    renameSync(before, after);
    mkdirSync(join(after, 'node_modules', '.cache', 'appium'), { recursive: true });
    writeFileSync(join(after, 'node_modules', '.cache', 'appium', 'extensions.yaml'), readFileSync(manifest, 'utf8').replaceAll(join(data, 'appium', 'android', 'appium-home'), before));
    const [movedAndroid, movedIos] = await Promise.all([driversListed(data, join(after, 'node_modules'), 'android'), driversListed(data, join(after, 'node_modules'), 'ios')]);
    expect(movedAndroid).toMatch(UIAUTOMATOR2);
    expect(movedIos).toMatch(XCUITEST);
    expect(movedAndroid + movedIos).not.toContain(before);
  }, 60_000);
});
