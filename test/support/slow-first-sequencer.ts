import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Seconds each of the slowest test files took in a full run on a 2-core machine (the slowest-files reporter prints
 * them after every run; refresh this list when it changes). CI starts from a clean clone, with no vitest cache to
 * order files by, and vitest then orders by file size: a 80 s file that happened to start last kept the suite
 * running a minute after the other workers had finished. The slowest go first; every other file, which takes a few
 * seconds, fills in behind them.
 */
const SLOWEST: Record<string, number> = {
  'test/webdriver/lab-webdriver.test.ts': 81,
  'test/docs/commands.test.ts': 67,
  'test/e2e/phone-toolbox.e2e.test.ts': 50,
  'test/e2e/second-week.e2e.test.ts': 47,
  'test/e2e/h264-screen.e2e.test.ts': 46,
  'test/webdriver/suite-calls.test.ts': 42,
  'test/reporter/playwright.test.ts': 39,
  'test/webdriver/lab-webdriver-gate.test.ts': 38,
  'test/e2e/iphone.e2e.test.ts': 37,
  'test/fleet/providers.test.ts': 37,
  'test/e2e/phone-page.e2e.test.ts': 32,
  'test/api/openapi-fuzz.test.ts': 28,
  'test/engine/crash-fleet.test.ts': 27,
  'test/engine/webdriver-leftovers.test.ts': 27,
  'test/e2e/second-week-phone.e2e.test.ts': 27,
  'test/instances/tart.test.ts': 26,
  'test/ws/mobilecli.test.ts': 26,
  'test/e2e/providers.e2e.test.ts': 25,
  'test/webdriver/appium-ports.test.ts': 25,
  'test/e2e/first-week.e2e.test.ts': 24,
  'test/ios/wda-start.test.ts': 24,
  'test/webdriver/appium-relocate.test.ts': 22,
  'test/e2e/account.e2e.test.ts': 21,
  'test/sharing/member-removal.test.ts': 21,
  'test/sharing/idle-release.test.ts': 20,
  'test/sharing/restart.test.ts': 19,
  'test/engine/serve.test.ts': 18,
  'test/fleet/provider-wda.test.ts': 18,
  'test/instances/terminal.test.ts': 18,
  'test/api/authorization.test.ts': 18,
  'test/ws/mobilewright.test.ts': 17,
  'test/instances/host-down.test.ts': 17,
  'test/e2e/settings.e2e.test.ts': 17,
  'test/fleet/live-screen.test.ts': 16,
  'test/remote/ios-remote.test.ts': 16,
  'test/fleet/screenrecord-h264.test.ts': 16,
};

export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const seconds = (spec: TestSpecification) => SLOWEST[relative(this.ctx.config.root, spec.moduleId).split('\\').join('/')];
    const slow = rest.filter((spec) => seconds(spec) !== undefined).sort((a, b) => seconds(b)! - seconds(a)!);
    return [...slow, ...rest.filter((spec) => seconds(spec) === undefined)];
  }
}
