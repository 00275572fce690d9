/**
 * Headless entry (npm run serve): the same engine as the desktop app, with no Electron import.
 */
import { adbAvailable } from './adb-presence.js';
import { isLoopback, loadConfig } from './engine/config.js';
import { createEngine } from './engine/engine.js';
import type { DemoIphones, DemoPhones } from './demo.js';
import { parseUsbmuxdAddress } from './engine/fleet/ios/usbmux.js';

// A function, not top-level await: the bundle is CommonJS, which V8 can cache compiled (scripts/code-cache.mjs).
async function main(): Promise<void> {
  const config = loadConfig(process.env);
  // npm run demo: three simulated phones unless BENCHTOP_DEMO_PHONES says otherwise.
  if (process.argv.includes('--demo') && !process.env.BENCHTOP_DEMO_PHONES) config.demoPhones = 3;
  // A machine without adb still serves, with the Android fleet off. A remote adb server (BENCHTOP_ADB_HOST) is never
  // second-guessed: the fleet keeps retrying it until it answers.
  if (config.adb && isLoopback(config.adb.host) && !(await adbAvailable(config.adb))) {
    if (config.demoPhones > 0) {
      console.error('Benchtop could not start: demo phones need adb, which is not installed (Debian: sudo apt-get install -y adb)');
      process.exit(1);
    }
    config.adb = null;
    console.log('The Android fleet is off: adb is not installed. To enable it, install adb (Debian: sudo apt-get install -y adb) and restart.');
  }
  if (process.argv.includes('--demo') && !process.env.BENCHTOP_DEMO_IPHONES) config.demoIphones = 2;
  const engine = createEngine(config);
  let demo: DemoPhones | undefined;
  let demoIphones: DemoIphones | undefined;

  if (config.demoPhones > 0) {
    if (!config.adb || !isLoopback(config.adb.host)) throw new Error('demo phones need a local adb server (BENCHTOP_ADB_HOST on loopback)');
    // Loaded only in demo mode: the simulated phone and its PNG encoder are no part of a real lab's start-up.
    const { startDemoPhones } = await import('./demo.js');
    demo = await startDemoPhones(config.demoPhones, config.adb.port, config.dataDir);
    console.log(`Demo: ${demo.serials.length} simulated phones attached through adb (${demo.serials.join(', ')})`);
  }
  if (config.demoIphones > 0) {
    const { startDemoIphones } = await import('./demo.js');
    demoIphones = await startDemoIphones(config.demoIphones, config.dataDir);
    // The engine tracks the demo's usbmuxd instead of the system's: read at start, so set before it.
    config.usbmuxd = parseUsbmuxdAddress(demoIphones.address);
    console.log(`Demo: ${demoIphones.udids.length} simulated iPhones on usbmuxd ${demoIphones.address} (${demoIphones.udids.join(', ')})`);
  }
  const { url, owner } = await engine.start();
  if (owner.created) {
    console.log(`Created the lab owner account: ${owner.email}`);
    if (owner.generatedPassword) {
      console.log(`Its password, shown only this once: ${owner.generatedPassword}`);
      console.log('Set BENCHTOP_OWNER_PASSWORD on the first start to choose it yourself.');
    }
  }
  console.log(`Benchtop is serving ${url}/api/v1 (data: ${config.dataDir})`);
  const lan = engine.services.lanSharing.status();
  if (lan.enabled) console.log(`LAN sharing is on: ${lan.urls.join(', ')} (certificate SHA-256 ${lan.certificateSha256})`);

  let signalled = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (signalled) return;
      signalled = true;
      console.log(`${signal}: finishing in-flight requests, then closing the database.`);
      // The demo's phones go once the chats have stopped (a message running on one ends failed), unplugged as a real
      // phone would be: they come back under the same serials at the next start (demo.ts keeps who they are), so what
      // they were held for stays held through the device grace period, and the inventory keeps their names.
      const detachDemo = async () => {
        await demoIphones?.stop();
        await demo?.stop();
      };
      const beforeFleetStops = () => detachDemo().catch((error: Error) => console.error(`The demo phones did not detach: ${error.message}`));
      engine.stop({ beforeFleetStops }).then(
        () => process.exit(0),
        (error: Error) => {
          console.error(`Shutdown failed: ${error.message}`);
          process.exit(1);
        },
      );
    });
  }
}

/**
 * Resolves once the engine serves (and never when it could not start: it exits). scripts/code-cache.mjs caches what
 * V8 compiled at that moment: everything the start ran, and none of what requests ran after it.
 */
export const started = main().catch((error: Error) => {
  // Whatever stops the start, a setting that does not parse or a port in use, is said in one line.
  console.error(`Benchtop could not start: ${error.message}`);
  process.exit(1);
});
