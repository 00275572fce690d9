import { remote } from 'webdriverio';

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
