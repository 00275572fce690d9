import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { adbOrSkip } from '../support/lab.js';

const hasAdb = adbOrSkip();
// Slow enough that its wait on the wire (1 s for 4 MiB) outlasts the CPU both pushes need on a loaded 2-core machine,
// where the unthrottled push took 716 ms and a 16 MB/s one 671 ms.
const RATE = 4e6;
const BYTES = 4 * 1024 * 1024;

// Benchmarks measure pushes and installs at a real phone's USB rate through this option: it must hold the rate.
describe.skipIf(!hasAdb)('a simulated phone at a USB link\'s rate (usbReadBytesPerSecond)', () => {
  let adb: AdbServer;
  const slow = new SimulatedPhone({ model: 'USB Phone', usbReadBytesPerSecond: RATE });
  const fast = new SimulatedPhone({ model: 'Memory Phone' });
  const serials: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-usb-rate-'));
  const file = join(dir, 'push.bin');
  const bytes = randomBytes(BYTES);

  beforeAll(async () => {
    adb = await startAdbServer();
    writeFileSync(file, bytes);
    for (const phone of [slow, fast]) serials.push(await connectToAdb(await phone.start(), adb.port));
  }, 30_000);
  afterAll(async () => {
    await Promise.all([slow.stop(), fast.stop()]);
    await adb?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const push = async (serial: string) => {
    const begin = performance.now();
    const pushed = await adb.run(['-s', serial, 'push', file, '/data/local/tmp/push.bin'], { timeoutMs: 20_000 });
    expect(pushed.code, pushed.stderr).toBe(0);
    return performance.now() - begin;
  };

  it('takes an adb push in no faster than its rate, whole, while a phone without one takes it at once', async () => {
    const slowMs = await push(serials[0]!);
    const fastMs = await push(serials[1]!);
    // 4 MiB at 4 MB/s is 1049 ms on the wire; the first chunk is read before any wait, so allow a little under.
    expect(slowMs).toBeGreaterThan(((BYTES / RATE) * 1000) * 0.85);
    expect(fastMs).toBeLessThan(slowMs);
    expect(slow.readFile('/data/local/tmp/push.bin')?.equals(bytes)).toBe(true);
    expect(fast.readFile('/data/local/tmp/push.bin')?.equals(bytes)).toBe(true);
  });
});
