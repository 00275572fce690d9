import { remote } from 'webdriverio';

/**
 * `benchtop:options` of a run whose test is not about its video. A simulated Android phone encodes a run's video with
 * ffmpeg on the test machine's own two cores, where a real phone encodes on its own hardware: four such test files,
 * each run alone, took 70 s of CPU with it and 52 s without. The video is the lab's default, and the tests about it
 * keep it on (kept-run, lab-webdriver, lab-webdriver-ios, suite-calls, the webdriver-run GUI test).
 */
export const NO_VIDEO = { video: false } as const;

/**
 * WebdriverIO pointed at a lab's /wd/hub as a suite points it at a cloud: the API key as the password of HTTP Basic,
 * no retries (a failure is the test's to see), and time for Appium to start with the first session.
 */
export function labSession(api: string, key: string, capabilities: Record<string, unknown>): Promise<WebdriverIO.Browser> {
  return remote({
    protocol: 'http',
    hostname: '127.0.0.1',
    port: Number(new URL(api).port),
    path: '/wd/hub',
    user: 'ci',
    key,
    logLevel: 'silent',
    connectionRetryCount: 0,
    connectionRetryTimeout: 120_000,
    capabilities: capabilities as WebdriverIO.Capabilities,
  });
}
