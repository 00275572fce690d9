import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { connectToAdb, findAdb, SimulatedPhone, startAdbServer } from '../../src/sim/android/index.js';
import { loadConfig } from '../../src/main/engine/config.js';
import { createEngine } from '../../src/main/engine/engine.js';
import { AppiumServer, freePort } from '../../src/main/engine/fleet/appium/appium-server.js';
import { PrivateAdbServer } from '../../src/main/engine/fleet/appium/private-adb.js';
import { client, OWNER_EMAIL, OWNER_PASSWORD } from '../support/engine.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import { remotePorts } from '../support/remote.js';
import { labSession, NO_VIDEO } from '../support/webdriver.js';

/**
 * A port the lab picks is free when picked and bound later by its user (issue 45, seen under load as "cannot bind
 * listener: Address already in use"). Here something takes the port in between, on purpose: the picker hands out a port
 * this test already listens on, and the lab's child must come up on another. Where no port can be bound at all, the
 * session's failure names the step (issue 43: a smoke run once failed with a bare "read ECONNRESET").
 */
const hasAdb = adbOrSkip();
const dirs: string[] = [];
const squatters: Server[] = [];
afterAll(() => {
  for (const s of squatters) s.close();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** A loopback listener that accepts and never answers, as another program would hold the port (any, if not named). */
async function squat(port = 0): Promise<number> {
  const server = createServer(() => undefined);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  squatters.push(server);
  return (server.address() as { port: number }).port;
}

/** First the taken port, then free ones: the race, made to happen every time. */
async function racedPicker(): Promise<{ taken: number; pick: () => Promise<number> }> {
  const taken = await squat();
  let first = true;
  return { taken, pick: async () => (first ? ((first = false), taken) : freePort()) };
}

const home = () => {
  const dir = mkdtempSync(join(tmpdir(), 'benchtop-ports-'));
  dirs.push(dir);
  return dir;
};

/**
 * A real adb server with one simulated phone on it, and an engine that picks its ports with `pick`: started, the phone
 * in its fleet, the owner signed in with an API key. `stop` ends all three.
 */
async function labPicking(model: string, pick: () => Promise<number>) {
  const adb = await startAdbServer();
  const phone = new SimulatedPhone({ model });
  const engine = createEngine(
    { ...loadConfig({}), host: '127.0.0.1', port: 0, dataDir: home(), ownerEmail: OWNER_EMAIL, ownerPassword: OWNER_PASSWORD, logLevel: 'silent', adb: { host: '127.0.0.1', port: adb.port }, usbmuxd: null, remotePorts: remotePorts(6), remotePortRestSeconds: 1 },
    { freePort: pick },
  );
  const stop = async () => {
    await engine.stop();
    await phone.stop();
    await adb.stop();
  };
  try {
    await connectToAdb(await phone.start(), adb.port);
    const api = `${(await engine.start()).url}/api/v1`;
    const c = client(api);
    const token = await c.login();
    const key = await c.createKey(token);
    await waitFor('the phone in the fleet', async () => ((await c.call('GET', '/fleet/devices', { token })).body.data as Array<{ state: string }>).some((d) => d.state === 'device'), 30_000);
    return { api, c, token, key, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

describe('ports the lab hands out (issue 45)', () => {
  it.runIf(hasAdb)('the private adb server comes up on another port when its port is taken before it binds it', async () => {
    const dir = home();
    const { taken, pick } = await racedPicker();
    const adb = new PrivateAdbServer(findAdb()!, join(dir, 'adb'), { pidFile: join(dir, 'pids', 'adb.json'), freePort: pick });
    try {
      const port = await adb.ensure();
      expect(port).not.toBe(taken);
      // The server on that port is the private one: its own HOME's key, and it lists devices.
      expect(execFileSync(findAdb()!, ['-H', '127.0.0.1', '-P', String(port), 'devices'], { env: { ...process.env, HOME: join(dir, 'adb') }, encoding: 'utf8' })).toContain('List of devices attached');
      expect(adb.publicKey()).toMatch(/^[A-Za-z0-9+/=]+ /);
    } finally {
      await adb.stop();
    }
  }, 30_000);

  it('Appium comes up on another port when its port is taken before it binds it', async () => {
    const dir = home();
    const { taken, pick } = await racedPicker();
    const lines: string[] = [];
    const appium = new AppiumServer({ platform: 'android', home: dir, env: {}, startTimeoutMs: 60_000, pidFile: join(dir, 'pids', 'appium.json'), freePort: pick, log: (m) => lines.push(m) });
    try {
      const url = new URL(await appium.ensure());
      expect(Number(url.port)).not.toBe(taken);
      expect((await appium.call('GET', '/status')).status).toBe(200);
      expect(lines.join('\n')).toContain("Appium's port was taken before it could bind it");
    } finally {
      await appium.stop();
    }
  }, 90_000);

  it.runIf(hasAdb)("a WebDriver session starts on other ports when one the lab gave Appium is taken before Appium's adb binds it", async () => {
    // The engine's ports come from the OS, as always; the test takes the next `take` of them as soon as they are picked.
    let take = 0;
    const taken: number[] = [];
    const pick = async () => {
      const port = await freePort();
      if (take > 0) {
        take--;
        taken.push(await squat(port));
      }
      return port;
    };
    const { api, key, stop } = await labPicking('Race Pixel', pick);
    try {
      const caps = { platformName: 'Android', 'appium:automationName': 'UiAutomator2', 'benchtop:options': NO_VIDEO };
      // A first session starts Appium and its adb server: the next two ports picked are the next session's own.
      await (await labSession(api, key, caps)).deleteSession();
      take = 2;
      const driver = await labSession(api, key, caps);
      expect(taken).toHaveLength(2);
      const given = driver.capabilities as Record<string, unknown>;
      expect(taken).not.toContain(given['appium:systemPort']);
      expect(taken).not.toContain(given['appium:mjpegServerPort']);
      expect(await driver.getPageSource()).toContain('<hierarchy');
      await driver.deleteSession();
    } finally {
      await stop();
    }
  }, 120_000);

  it.runIf(hasAdb)('a session that cannot start says at which step, and frees its phone', async () => {
    // Appium's port is picked first, as a session starts (and is free); every port after it is taken: Appium's
    // private adb server can bind none.
    let picks = 0;
    const { api, c, token, key, stop } = await labPicking('Stuck Pixel', async () => (picks++ === 0 ? freePort() : squat()));
    try {
      const started = await fetch(`${api.replace(/\/api\/v1$/, '')}/wd/hub/session`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ capabilities: { alwaysMatch: { platformName: 'Android', 'appium:automationName': 'UiAutomator2' } } }),
      });
      expect(started.status).toBe(500);
      const { value } = (await started.json()) as { value: { error: string; message: string } };
      expect(value.error).toBe('session not created');
      expect(value.message).toMatch(/^The session could not start on Stuck Pixel \(starting Appium's adb server\): The private adb server could not bind a port/);
      await waitFor('the phone to be free again', async () => ((await c.call('GET', '/fleet/devices', { token })).body.data as Array<{ held: boolean }>).every((d) => !d.held), 15_000);
    } finally {
      await stop();
    }
  }, 120_000);
});
