import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each of the slowest test files took in a full run of `npm test` on a 2-core machine (the slowest-files
 * reporter prints them after every run; refresh this list when it changes). CI starts from a clean clone, with no vitest cache to
 * order files by, and vitest then orders by file size: a 80 s file that happened to start last kept the suite
 * running a minute after the other workers had finished. The slowest go first; every other file, which takes a few
 * seconds, fills in behind them.
 */
const SLOWEST: Record<string, number> = {
  'test/docs/commands.test.ts': 129,
  'test/webdriver/lab-webdriver.test.ts': 107,
  'test/ios/wda-tunnel.test.ts': 74,
  'test/e2e/phone-toolbox.e2e.test.ts': 68,
  'test/engine/webdriver-leftovers.test.ts': 58,
  'test/e2e/h264-screen.e2e.test.ts': 52,
  'test/e2e/second-week-details.e2e.test.ts': 50,
  'test/fleet/demo-identity.test.ts': 49,
  'test/e2e/first-week.e2e.test.ts': 47,
  'test/webdriver/lab-webdriver-cloud.test.ts': 46,
  'test/fleet/providers.test.ts': 44,
  'test/e2e/iphone.e2e.test.ts': 42,
  'test/webdriver/suite-calls.test.ts': 41,
  'test/e2e/second-week.e2e.test.ts': 40,
  'test/e2e/account.e2e.test.ts': 36,
  'test/e2e/phone-page.e2e.test.ts': 36,
  'test/e2e/second-week-phone.e2e.test.ts': 36,
  'test/engine/crash-fleet.test.ts': 35,
  'test/webdriver/appium-ports.test.ts': 35,
  'test/webdriver/lab-webdriver-gate.test.ts': 34,
  'test/api/authorization.test.ts': 31,
  'test/ios/wda-start.test.ts': 31,
  'test/ws/mobilecli.test.ts': 31,
  'test/reporter/playwright.test.ts': 30,
  'test/api/test-results.test.ts': 29,
  'test/engine/serve.test.ts': 28,
  'test/instances/tart.test.ts': 28,
  'test/sharing/member-removal.test.ts': 28,
  'test/e2e/webdriver-run.e2e.test.ts': 25,
  'test/webdriver/lab-webdriver-provider.test.ts': 23,
  'test/engine/bundle.test.ts': 21,
  'test/fleet/live-screen.test.ts': 21,
  'test/instances/terminal.test.ts': 20,
  'test/webdriver/appium-process.test.ts': 20,
  'test/engine/downtime-billing.test.ts': 19,
  'test/fleet/android-sim.test.ts': 19,
  'test/webdriver/kept-run.test.ts': 19,
  'test/fleet/screenrecord-h264.test.ts': 18,
  'test/sharing/idle-release.test.ts': 18,
  'test/api/organizations.test.ts': 16,
  'test/e2e/chat.e2e.test.ts': 16,
  'test/e2e/device.e2e.test.ts': 16,
  'test/sharing/restart.test.ts': 16,
  'test/appium/android-appium.test.ts': 15,
  'test/api/sessions.test.ts': 15,
  'test/e2e/files.e2e.test.ts': 15,
  'test/e2e/providers.e2e.test.ts': 15,
  'test/e2e/remote-connect.e2e.test.ts': 15,
  'test/e2e/second-week-settings.e2e.test.ts': 15,
  'test/e2e/settings.e2e.test.ts': 15,
  'test/fleet/h264-feed.test.ts': 15,
};

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const seconds = (spec: TestSpecification) => SLOWEST[relative(this.ctx.config.root, spec.moduleId).split('\\').join('/')];
    const slow = rest.filter((spec) => seconds(spec) !== undefined).sort((a, b) => seconds(b)! - seconds(a)!);
    return [...slow, ...rest.filter((spec) => seconds(spec) === undefined)];
  }
}
