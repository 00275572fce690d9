import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectToAdb, SimulatedPhone, startAdbServer, type AdbServer } from '../../src/sim/android/index.js';
import { HEARTBEAT_MS } from '../../src/main/engine/services/heartbeat.js';
import { call } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { startServeProcess, type ServeProcess } from '../support/serve-process.js';

const hasAdb = adbOrSkip();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** The longest an engine takes from its first step to serving, on a busy machine: far less than the 7 s down. */
const STARTUP_MS = 2000;

/**
 * Nobody pays for time the lab was down (issue 33.5): a phone held across a SIGKILL is metered up to the engine's
 * last heartbeat and again from its restart, not through the time between. The engine is down 7 s here.
 */
describe.skipIf(!hasAdb)('metering across a SIGKILL', () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-downtime-'));
  const running: ServeProcess[] = [];
  let phone: SimulatedPhone;
  let adb: AdbServer;
  let env: Record<string, string>;

  beforeAll(async () => {
    adb = await startAdbServer();
    phone = new SimulatedPhone({ model: 'Pixel 8', osVersion: '14' });
    await connectToAdb(await phone.start(), adb.port);
    env = {
      BENCHTOP_DATA_DIR: dir,
      BENCHTOP_OWNER_EMAIL: 'down@lab.test',
      BENCHTOP_OWNER_PASSWORD: 'password-1',
      BENCHTOP_ADB: 'on',
      BENCHTOP_ADB_PORT: String(adb.port),
    };
  }, 60_000);
  afterAll(async () => {
    for (const p of running) p.child.kill('SIGKILL');
    await phone?.stop();
    await adb?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = async () => {
    const p = await startServeProcess(env);
    running.push(p);
    return p;
  };
  const login = async (api: string) => (await call(api, 'POST', '/auth/login', { body: { email: 'down@lab.test', password: 'password-1' } })).body.token as string;
  const devicesLeft = async (api: string, token: string) => (await call(api, 'GET', '/billing/balance', { token })).body.secondsRemaining.devices as number;
  const meteredMs = async (api: string, token: string) =>
    ((await call(api, 'GET', '/usage?groupBy=member', { token })).body.data as Array<{ seconds: number }>).reduce((sum, g) => sum + g.seconds * 1000, 0);

  it('bills the time a phone was held before the kill and after the restart, not the time the engine was down', async () => {
    const first = await serve();
    let token = await login(first.api);
    const allowance = await devicesLeft(first.api, token);
    const session = (await call(first.api, 'POST', '/sessions', { token })).body.id as string;
    const filters = [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }];
    // Metering starts when the phone is assigned, within the request that allocates it.
    const requestedAt = Date.now();
    const allocation = (await call(first.api, 'POST', `/sessions/${session}/devices`, { token, body: { filters } })).body.id as string;
    const assignedBy = Date.now();
    await waitFor('in_use', async () => (await call(first.api, 'GET', `/sessions/${session}/devices/${allocation}`, { token })).body.status === 'in_use');
    await sleep(3000);
    const killing = Date.now();
    first.child.kill('SIGKILL');
    expect((await first.exited).signal).toBe('SIGKILL');
    const killedBy = Date.now();
    await sleep(7000);

    const second = await serve();
    // Metering starts again as the engine starts, a little before it serves.
    const upBy = Date.now() - STARTUP_MS;
    token = await login(second.api);
    expect((await call(second.api, 'GET', `/sessions/${session}/devices/${allocation}`, { token })).body.status).toMatch(/in_use|offline/);
    expect((await call(second.api, 'POST', `/sessions/${session}/devices/${allocation}/release`, { token })).status).toBe(202);
    const releasedAt = Date.now();

    // Held while the engine ran: at most from the request to the kill, and from the restart to the release; at least
    // from the assignment to the kill, less the use since the last heartbeat before it.
    const heldAtMost = killedBy - requestedAt + (releasedAt - upBy);
    const heldAtLeast = killing - assignedBy - HEARTBEAT_MS;
    const metered = await meteredMs(second.api, token);
    const billed = allowance - (await devicesLeft(second.api, token));
    expect(metered).toBeLessThanOrEqual(heldAtMost);
    expect(metered).toBeGreaterThanOrEqual(heldAtLeast);
    // Billing counts whole seconds of the same ledger.
    expect(billed).toBeLessThanOrEqual(Math.ceil(heldAtMost / 1000));
    expect(billed).toBeGreaterThanOrEqual(Math.floor(heldAtLeast / 1000) - 1);
  }, 90_000);
});
