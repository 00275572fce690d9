import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectToAdb, runAdb, SimulatedPhone } from '../../src/sim/android/index.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { freePort } from '../support/remote.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const hasAdb = adbOrSkip();

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe.skipIf(!hasAdb)('the adb server', () => {
  const root = mkdtempSync(join(tmpdir(), 'benchtop-adbstart-'));
  const env = { HOME: join(root, 'home'), TMPDIR: join(root, 'tmp') };
  mkdirSync(env.HOME);
  mkdirSync(env.TMPDIR);
  let port = 0;
  let serve: ServeProcess | undefined;
  const phone = new SimulatedPhone({ model: 'Late Phone' });
  afterAll(async () => {
    serve?.child.kill('SIGKILL');
    await phone.stop();
    if (port) await runAdb(['kill-server'], { serverPort: port, env: { ...process.env, ...env }, timeoutMs: 10_000 }).catch(() => undefined);
    rmSync(root, { recursive: true, force: true });
  });

  it('is started by the engine when none answers and adb is on PATH, and the fleet then tracks it', async () => {
    port = await freePort();
    expect(await listening(port)).toBe(false);
    serve = await startServeProcess({
      ...env,
      BENCHTOP_DATA_DIR: join(root, 'data'),
      BENCHTOP_OWNER_EMAIL: 'o@lab.test',
      BENCHTOP_OWNER_PASSWORD: 'password-1',
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(port),
    });
    // Probed with a bare TCP connect: an `adb` command would start a server itself and prove nothing.
    await waitFor('an adb server on the port', () => listening(port));
    // A phone arrives after the server has settled, as a cable plugged in later would: an `adb connect` racing the
    // new server's own start-up is sometimes never reported to trackers (seen with adb 1.0.41).
    await new Promise((r) => setTimeout(r, 1000));
    const serial = await connectToAdb(await phone.start(), port);
    const token = (await call(serve.api, 'POST', '/auth/login', { body: { email: 'o@lab.test', password: 'password-1' } })).body.token;
    const seen = await waitFor('the phone in the fleet', async () =>
      (await call(serve!.api, 'GET', '/fleet/devices', { token })).body.data.find((p: { serial: string; state: string }) => p.serial === serial && p.state === 'device'));
    expect(seen.name).toBe('Late Phone');
  });
});
