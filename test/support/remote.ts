import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { AdbResult } from '../../src/sim/android/index.js';
import { buildApk } from './app-fixtures.js';

/**
 * A small remote-connect port pool for one test file, below Linux's ephemeral range (32768-60999): there the other
 * test files' outgoing connections and `listen(0)` servers take ports at random and can fill a pool of three.
 */
export function remotePorts(size: number): { first: number; last: number } {
  const first = 20000 + Math.floor(Math.random() * 1200) * 10;
  return { first, last: first + size - 1 };
}

/** A loopback port nothing listens on now. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** Whether nothing listens on the port (of loopback, unless another host is named) any more. */
export function refused(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

export const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/**
 * What a user's adb does with a phone, through whatever path `adb` takes (`-s <address>` already given): shell_v2
 * keeps the exit code and stderr apart, install then pm list, logcat, an 8 MiB push and pull that come back equal,
 * and forward. Resolves to the checksum of what was pushed to `remotePath`, and the forward's local port.
 */
export async function adbWorksAsOnThePhone(adb: (args: string[]) => Promise<AdbResult>, tmp: string, packageName: string, remotePath: string): Promise<{ pushed: string; forwardPort: number }> {
  const failing = await adb(['shell', 'echo e >&2; exit 3']);
  expect([failing.code, failing.stdout.toString(), failing.stderr.trim()]).toEqual([3, '', 'e']);

  const apk = join(tmp, `${packageName}.apk`);
  writeFileSync(apk, buildApk({ packageName, label: 'Remote', versionCode: 1 }));
  const installed = await adb(['install', apk]);
  expect(installed.stdout.toString(), installed.stderr).toContain('Success');
  expect((await adb(['shell', 'pm', 'list', 'packages'])).stdout.toString()).toContain(`package:${packageName}`);
  expect((await adb(['logcat', '-d'])).stdout.toString()).toMatch(/BatteryService|PackageManager|ActivityManager/);

  const bytes = randomBytes(8 * 1024 * 1024);
  const up = join(tmp, 'push.bin');
  const back = join(tmp, 'pulled.bin');
  writeFileSync(up, bytes);
  expect((await adb(['push', up, remotePath])).code).toBe(0);
  expect((await adb(['pull', remotePath, back])).code).toBe(0);
  expect(sha256(readFileSync(back))).toBe(sha256(bytes));

  const forwarded = await adb(['forward', 'tcp:0', 'localabstract:remote-probe']);
  const forwardPort = Number(forwarded.stdout.toString().trim());
  expect(forwardPort).toBeGreaterThan(0);
  return { pushed: sha256(bytes), forwardPort };
}
