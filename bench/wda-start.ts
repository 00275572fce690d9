/**
 * Starting WebDriverAgent: an iOS 16 simulated iPhone with the runner installed but stopped is plugged in, and the
 * fleet (the engine's IosFleet, in this process) starts it through testmanagerd. The figure is the time from the
 * plug to the phone being `device` (allocatable): lockdown's description, the XCTest launch over DTX, and WDA's
 * /status answering through a usbmuxd tunnel. Baselines in the same run: appium-ios-device's own Xctest.start()
 * against the same kind of phone (a child process, its module loading excluded), and the simulated phone's own
 * share of the launch (its first DTX message to the test plan starting).
 *
 * A real phone takes seconds, not milliseconds: the runner process launches, XCTest loads its UI-automation
 * frameworks, and WDA builds its server before /status answers; what this measures is what Benchtop adds.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { IosFleet } from '../src/main/engine/fleet/ios/ios-fleet.js';
import { parseUsbmuxdAddress } from '../src/main/engine/fleet/ios/usbmux.js';
import { SimulatedIPhone, SimulatedUsbmuxd } from '../src/sim/ios/index.js';
import { onCleanup } from './support/cleanup.js';
import { detail, fmtMs, fmtRatio, median, type Benchmark, type Figure } from './support/report.js';
import { SMOKE, sized } from './support/smoke.js';

const WDA = 'com.facebook.WebDriverAgentRunner.xctrunner';
const RUNS = sized(5, 1);
const APPIUM_RUNS = sized(3, 1);
const APPIUM_XCTEST = fileURLToPath(new URL('../test/support/ios-host/appium-xctest.mjs', import.meta.url));

async function until(what: string, check: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Xctest.start() as appium-ios-device runs it, timed inside its own process. */
function appiumXctestMs(address: string, udid: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [APPIUM_XCTEST, udid, WDA], { env: { ...process.env, USBMUXD_SOCKET_ADDRESS: address } });
    onCleanup(() => void child.kill('SIGTERM'));
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /started in (\d+) ms/.exec(out);
      if (m) {
        child.kill('SIGTERM');
        resolve(Number(m[1]));
      }
    });
    child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.on('exit', () => reject(new Error(`Xctest ended: ${out}`)));
  });
}

export const wdaStart: Benchmark = {
  name: 'wda-start',
  title: 'iPhone attach to available, WDA stopped (engine starts it through testmanagerd)',
  async run(): Promise<Figure[]> {
    const usbmuxd = new SimulatedUsbmuxd();
    const address = await usbmuxd.start();
    onCleanup(() => usbmuxd.stop());
    const fleet = new IosFleet(parseUsbmuxdAddress(address), () => undefined, { bundleId: WDA, xcrun: null });
    await fleet.start();
    onCleanup(() => fleet.stop());

    const engineMs: number[] = [];
    const phoneMs: number[] = [];
    // One warm-up attach: appium-ios-device loads on first use (most of a second), once per engine. A smoke run measures
    // nothing, so it warms nothing up.
    for (let i = SMOKE ? 1 : 0; i <= RUNS; i++) {
      const phone = new SimulatedIPhone({ name: `Bench ${i}`, version: '16.7.8', wda: false });
      const start = performance.now();
      await phone.plugInto(usbmuxd);
      await until('device', () => fleet.get(phone.udid)?.state === 'device');
      const elapsed = performance.now() - start;
      const received = phone.testManager.received;
      const plan = received.find((r) => r.selector === '_IDE_startExecutingTestPlanWithProtocolVersion:');
      if (i > 0) {
        engineMs.push(elapsed);
        phoneMs.push(plan!.at - received[0]!.at);
      }
      phone.stop();
    }

    const appiumMs: number[] = [];
    for (let i = 0; i < APPIUM_RUNS; i++) {
      const phone = new SimulatedIPhone({ name: `Appium ${i}`, version: '16.7.8', wda: false });
      await phone.plugInto(usbmuxd);
      appiumMs.push(await appiumXctestMs(address, phone.udid));
      phone.stop();
    }

    const engine = median(engineMs);
    const appium = median(appiumMs);
    detail(`attach -> device: ${engineMs.map(fmtMs).join(', ')}`);
    detail(`the phone's own share (first DTX message -> test plan): median ${fmtMs(median(phoneMs))}`);
    detail(`appium-ios-device Xctest.start(): ${appiumMs.map(fmtMs).join(', ')} (it polls for each DTX reply every 500 ms)`);
    return [
      {
        benchmark: 'wda-start',
        figure: 'attach -> available, WDA started by the engine (iOS 16)',
        value: `median ${fmtMs(engine)}`,
        baseline: `appium-ios-device Xctest.start() median ${fmtMs(appium)}; phone's share ${fmtMs(median(phoneMs))}`,
        ratio: fmtRatio(engine, appium),
        target: '<= 1.00x of Xctest.start() alone',
        met: engine <= appium,
      },
    ];
  },
};
