/**
 * Whether the Android fleet can work on this machine, checked once at start-up: an adb server already answers at
 * its address (Android Studio's, say, with platform-tools off PATH), or `adb` is on PATH to start one. Without
 * either, adbkit would try to spawn adb again every second and log `spawn adb ENOENT` for ever.
 */
import { accessSync, constants } from 'node:fs';
import { createConnection } from 'node:net';
import { delimiter, join } from 'node:path';

export async function adbAvailable(address: { host: string; port: number }, env: NodeJS.ProcessEnv = process.env): Promise<boolean> {
  return adbOnPath(env) || (await answers(address));
}

function adbOnPath(env: NodeJS.ProcessEnv): boolean {
  const name = process.platform === 'win32' ? 'adb.exe' : 'adb';
  return (env.PATH ?? '').split(delimiter).some((dir) => {
    if (!dir) return false;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** A local connect is refused at once when nothing listens; the timeout only bounds a filtered port. */
function answers({ host, port }: { host: string; port: number }): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port });
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
