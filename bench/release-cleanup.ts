/**
 * What resetting a phone at release costs (docs/sharing.md): the engine's AndroidDriver.cleanup() after a holder
 * installed an app, pushed files, started Settings and their app and copied text, on a simulated phone whose shared
 * storage holds the lab's own files. Baselines measured in the same run on the same phone: the cleanup the lab ran
 * before (uninstall what was added, force-stop third-party packages, HOME, rotation) and one `adb shell true` round
 * trip. Each round prepares the phone (which takes the listing cleanup compares against; timed too, against the
 * preparation without listings) and leaves the same mess.
 *
 * The simulated phone answers `pm`, `am` and `cmd` in about a millisecond. A real phone's are Binder calls through
 * the `cmd` binary (Android 7 and later) and take tens of milliseconds each; with no published figure per call found,
 * the estimate beside the figure assumes ASSUMED_REAL_COMMAND_MS per shell command, over USB.
 */
import { Readable } from 'node:stream';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AndroidFleet } from '../src/main/engine/fleet/android/android-fleet.js';
import type { AndroidDriver } from '../src/main/engine/fleet/android/driver.js';
import { removeMinicap } from '../src/main/engine/fleet/android/minicap.js';
import { buildApk } from '../src/sim/android/apk.js';
import { startAndroidLab } from './support/android-lab.js';
import { tempDir } from './support/cleanup.js';
import { detail, fmtMs, fmtRatio, median, percentile, type Benchmark } from './support/report.js';
import { sized } from './support/smoke.js';

const WARMUP_ROUNDS = sized(2, 0);
const ROUNDS = sized(15, 1);
/** The lab's own files in shared storage, which every cleanup lists twice and keeps. */
const LAB_FILES = sized(2_000, 10);
const HOLDER_FILES = sized(20, 1);
const ASSUMED_REAL_COMMAND_MS = 100;
const HOLDER_APP = 'com.example.holder';

const summary = (xs: number[]) => `median ${fmtMs(median(xs))}, p95 ${fmtMs(percentile(xs, 95))}`;

/** The cleanup before this round's: what was added uninstalled, third-party packages force-stopped, HOME, rotation. */
async function uninstallOnlyCleanup(driver: AndroidDriver, packagesBefore: readonly string[]): Promise<void> {
  const before = new Set(packagesBefore);
  for (const pkg of await driver.packages()) if (!before.has(pkg)) await driver.shell(`pm uninstall ${pkg}`);
  for (const pkg of await driver.packages('-3')) await driver.shell(`am force-stop ${pkg}`);
  await driver.shell('input keyevent KEYCODE_HOME');
  await driver.shell('settings put system accelerometer_rotation 0');
  await driver.shell('settings put system user_rotation 0');
}

/** The preparation before this round's: no listing of files or processes to go back to. */
async function packagesOnlyPrepare(driver: AndroidDriver): Promise<void> {
  for (const command of ['logcat -c', 'input keyevent KEYCODE_WAKEUP', 'wm dismiss-keyguard', 'input keyevent KEYCODE_HOME']) await driver.shell(command);
  await driver.packages();
}

/** What a holder leaves: their app installed and running, Settings open, files in Download, a copied password. */
async function leaveAMess(driver: AndroidDriver, apk: string): Promise<void> {
  await driver.install(apk);
  for (let i = 0; i < HOLDER_FILES; i++) await driver.writeFile(`/sdcard/Download/holder-${i}.bin`, Readable.from([Buffer.alloc(1024)]));
  await driver.act({ type: 'launchApp', packageName: HOLDER_APP });
  await driver.act({ type: 'launchApp', packageName: 'com.android.settings' });
  await driver.shell("cmd clipboard set text 'a password'");
}

export const releaseCleanup: Benchmark = {
  name: 'release-cleanup',
  title: `AndroidDriver.cleanup() after a holder's run on a simulated phone with ${LAB_FILES.toLocaleString('en-US')} lab files, vs the uninstall-only cleanup and one adb shell round trip, ${ROUNDS} rounds`,
  async run() {
    const lab = await startAndroidLab('benchtop-bench-release-cleanup-');
    const fleet = new AndroidFleet({ host: '127.0.0.1', port: lab.adb.port }, () => undefined);
    const driver = fleet.driver(lab.serial);
    let commands = 0;
    const shell = driver.shell.bind(driver);
    driver.shell = (command, signal) => (commands++, shell(command, signal));
    const apk = join(tempDir('benchtop-bench-release-cleanup-apk-'), 'holder.apk');
    writeFileSync(apk, buildApk({ packageName: HOLDER_APP }));
    for (let i = 0; i < LAB_FILES; i += 200) {
      const names = Array.from({ length: Math.min(200, LAB_FILES - i) }, (_, j) => `/sdcard/Music/lab-${i + j}.ogg`);
      await driver.shell(`touch ${names.join(' ')}`);
    }

    const cleanups: number[] = [];
    const oldCleanups: number[] = [];
    const roundTrips: number[] = [];
    const commandsPerCleanup: number[] = [];
    const prepares: number[] = [];
    const oldPrepares: number[] = [];
    for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
      let start = performance.now();
      await packagesOnlyPrepare(driver);
      const oldPrepare = performance.now() - start;
      start = performance.now();
      const baseline = await driver.prepare();
      const prepare = performance.now() - start;
      await leaveAMess(driver, apk);
      commands = 0;
      start = performance.now();
      await driver.cleanup(baseline);
      const cleanup = performance.now() - start;
      const sent = commands;
      const left = await driver.shell('ls /sdcard/Download; pidof com.android.settings; cmd clipboard get text');
      if (left.trim() !== '') throw new Error(`the cleanup left: ${left}`);

      await leaveAMess(driver, apk);
      start = performance.now();
      await uninstallOnlyCleanup(driver, baseline.packages);
      await removeMinicap(fleet.client, lab.serial);
      const old = performance.now() - start;
      // What the old cleanup leaves, so that the next round starts from the same phone.
      await driver.cleanup(baseline);

      start = performance.now();
      await driver.shell('true');
      const trip = performance.now() - start;
      if (round < WARMUP_ROUNDS) continue;
      prepares.push(prepare);
      oldPrepares.push(oldPrepare);
      cleanups.push(cleanup);
      oldCleanups.push(old);
      roundTrips.push(trip);
      commandsPerCleanup.push(sent);
    }
    await lab.engine.child.stop();

    const [now, before, trip] = [median(cleanups), median(oldCleanups), median(roundTrips)];
    const sent = median(commandsPerCleanup);
    detail(`cleanup (files, processes, clipboard, packages): ${summary(cleanups)}, ${sent} shell commands`);
    detail(`uninstall-only cleanup, as before: ${summary(oldCleanups)}`);
    detail(`one adb shell round trip (true): ${summary(roundTrips)}`);
    detail(`preparation at allocation, with the listings: ${summary(prepares)}; without them, as before: ${summary(oldPrepares)}`);
    detail(`on a real phone, at an assumed ${ASSUMED_REAL_COMMAND_MS} ms per shell command over USB: about ${fmtMs(sent * ASSUMED_REAL_COMMAND_MS)}`);
    return [
      {
        benchmark: this.name,
        figure: 'cleanup at release, simulated phone',
        value: `${fmtMs(now)} median, ${sent} shell commands (real phone: ~${fmtMs(sent * ASSUMED_REAL_COMMAND_MS)} at ${ASSUMED_REAL_COMMAND_MS} ms each, assumed)`,
        baseline: `uninstall-only cleanup ${fmtMs(before)}`,
        ratio: fmtRatio(now, before),
        target: 'reported',
        met: true,
      },
      {
        benchmark: this.name,
        figure: 'preparation at allocation (lists files and processes)',
        value: fmtMs(median(prepares)),
        baseline: `preparation without the listings ${fmtMs(median(oldPrepares))}`,
        ratio: fmtRatio(median(prepares), median(oldPrepares)),
        target: 'reported',
        met: true,
      },
      {
        benchmark: this.name,
        figure: 'cleanup at release in adb round trips',
        value: fmtMs(now),
        baseline: `adb shell true ${fmtMs(trip)}`,
        ratio: fmtRatio(now, trip),
        target: 'reported',
        met: true,
      },
    ];
  },
};
