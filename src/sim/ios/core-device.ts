import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { NSError } from './nskeyed.js';
import type { SimulatedIPhone } from './simulated-iphone.js';

/**
 * The CoreDevice side of simulated iPhones: what a Mac's `devicectl` reaches over its RemoteXPC tunnel to an iOS 17+
 * phone, here as a loopback HTTP endpoint a scripted `xcrun` (test/support/ios-host/xcrun.mjs) calls. It launches
 * through the phone's own process table (TestManager.launchApp), so the phone decides, as a real one would, whether
 * the app exists, may run, and whether a WebDriverAgent runner starts serving.
 *
 * POST /devices/<udid>/processes {bundleId, terminateExisting} -> 200 {processIdentifier} | 404 | 422 {error}
 */
export async function startCoreDevice(find: (udid: string) => SimulatedIPhone | undefined): Promise<{ url: string; stop(): Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const answer = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const m = /^\/devices\/([^/]+)\/processes$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !m) return answer(404, { error: 'no such endpoint' });
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
    req.on('end', () => {
      const phone = find(decodeURIComponent(m[1]!));
      if (!phone) return answer(404, { error: `The specified device was not found.` });
      // CoreDevice (devicectl) serves iOS 17 and later; older phones answer only to lockdown's services.
      if (phone.majorVersion < 17) return answer(422, { error: `The device runs iOS ${phone.version}; CoreDevice requires iOS 17 or later.` });
      let body: { bundleId?: string; terminateExisting?: boolean; environment?: Record<string, unknown> };
      try {
        body = JSON.parse(raw) as typeof body;
      } catch {
        return answer(400, { error: 'the body is not JSON' });
      }
      const pid = phone.testManager.launchApp(String(body.bundleId ?? ''), body.environment ?? {}, body.terminateExisting === true);
      if (pid instanceof NSError) return answer(422, { error: pid.description });
      return answer(200, { processIdentifier: pid });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
