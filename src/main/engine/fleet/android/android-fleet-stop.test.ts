import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { AndroidFleet } from './android-fleet.js';

/** A port nothing listens on (taken from the OS, then let go). */
async function unusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

describe('a stopped Android fleet', () => {
  it('starts no adb server for a call still in flight: its server was ended on purpose', async () => {
    const port = await unusedPort();
    const fleet = new AndroidFleet({ host: '127.0.0.1', port }, () => undefined);
    await fleet.stop();
    // adbkit would run `adb -P <port> start-server` on the refused connection and answer once it was up.
    await expect(fleet.client.version()).rejects.toThrow();
    await expect(new Promise((resolve, reject) => {
      const probe = createServer();
      probe.once('error', reject);
      probe.listen(port, '127.0.0.1', () => probe.close(() => resolve('free')));
    })).resolves.toBe('free');
  });
});
