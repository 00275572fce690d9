// A fresh machine without adb: `npm run serve` still serves, with the Android fleet off and one line saying how to
// switch it on, instead of trying to spawn adb every second.
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { call } from '../support/engine.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const FLEET_OFF = 'The Android fleet is off: adb is not installed. To enable it, install adb (Debian: sudo apt-get install -y adb) and restart.';

const dirs: string[] = [];
const running: ServeProcess[] = [];
const servers: Server[] = [];
afterEach(() => {
  for (const p of running.splice(0)) p.child.kill('SIGKILL');
  for (const s of servers.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** A PATH with node on it and no adb, whatever this machine has installed. */
function machineWithoutAdb() {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-no-adb-'));
  dirs.push(dir);
  symlinkSync(process.execPath, join(dir, 'node'));
  return { PATH: dir, BENCHTOP_DATA_DIR: join(dir, 'data'), HOME: dir };
}

async function listen(server: Server): Promise<number> {
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

/** A loopback port nothing listens on: taken from the kernel, then released. */
async function silentPort(): Promise<number> {
  const server = createServer();
  const port = await listen(server);
  servers.pop();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function serve(env: Record<string, string>) {
  // BENCHTOP_ADB unset (startServeProcess switches it off by default): the fleet decides for itself.
  const p = await startServeProcess({ BENCHTOP_ADB: '', BENCHTOP_LOG_LEVEL: 'warn', ...env });
  running.push(p);
  return p;
}

describe('npm run serve on a machine without adb', () => {
  it('serves with the Android fleet off, says so in one line, and does not keep trying to spawn adb', async () => {
    const p = await serve({ ...machineWithoutAdb(), BENCHTOP_ADB_PORT: String(await silentPort()) });
    expect((await call(p.api, 'GET', '/health')).status).toBe(200);
    expect(p.output().split('\n').filter((line) => line.includes('Android fleet'))).toEqual([FLEET_OFF]);
    // The fleet would retry every second; give it two chances to show up.
    await new Promise((r) => setTimeout(r, 2500));
    expect(p.output()).not.toMatch(/adb at|ENOENT/);
  });

  it('keeps the fleet on when an adb server already answers at its address, though adb is not on PATH', async () => {
    const port = await listen(createServer((socket) => socket.destroy()));
    const p = await serve({ ...machineWithoutAdb(), BENCHTOP_ADB_PORT: String(port) });
    expect((await call(p.api, 'GET', '/health')).status).toBe(200);
    expect(p.output()).not.toContain('Android fleet is off');
  });

  it('refuses npm run demo, naming the package to install', async () => {
    const env = { ...machineWithoutAdb(), BENCHTOP_ADB_PORT: String(await silentPort()), BENCHTOP_DEMO_PHONES: '2' };
    await expect(serve(env)).rejects.toThrow('demo phones need adb, which is not installed (Debian: sudo apt-get install -y adb)');
  });
});
