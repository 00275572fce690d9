import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { demoSession, listeningPorts, processesUnder, startDemoLab, type DemoLab } from '../support/lab-processes.js';
import { adbOrSkip, waitFor } from '../support/lab.js';
import type { ServeProcess } from '../support/serve-process.js';

/**
 * Appium answers the engine alone (issue 41.4): a local process that finds Appium's port (as any can, from /proc)
 * reaches nothing there without the base path only the engine knows, and that secret never reaches a log, a command
 * line or a client. Against the engine as `npm run serve` runs it.
 */
const hasAdb = adbOrSkip();

describe.skipIf(!hasAdb)("Appium's own port (issue 41.4)", () => {
  let dir: string;
  let lab: DemoLab;
  let engine: ServeProcess;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'benchtop-appium-port-'));
    lab = await startDemoLab(dir, { BENCHTOP_LOG_LEVEL: 'info' });
    engine = await lab.serve();
  });
  afterAll(async () => {
    await lab?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers nothing without the secret base path, which no log, command line or client ever sees', async () => {
    const { driver, token, key } = await demoSession(engine.api, 'appium port');
    expect(await driver.getPageSource()).toContain('<hierarchy');
    // Appium's process, and the ports it listens on, as a local process finds them.
    const appium = processesUnder([dir]).find((p) => p.cmdline.includes('appium/index.js server') && !p.cmdline.includes(' -e '))!;
    expect(appium).toBeDefined();
    const ports = listeningPorts(appium.pid);
    expect(ports.length).toBeGreaterThan(0);
    const secret = (JSON.parse(readFileSync(join(dir, 'appium', 'android', 'appium-server.json'), 'utf8')) as { server: { 'base-path': string } }).server['base-path'];
    expect(secret).toMatch(/^\/[0-9a-f]{48}$/);

    for (const port of ports) {
      const root = `http://127.0.0.1:${port}`;
      const asked = [
        await fetch(`${root}/status`),
        await fetch(`${root}/sessions`),
        await fetch(`${root}/appium/sessions`),
        await fetch(`${root}/session`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ capabilities: { alwaysMatch: { platformName: 'Android', 'appium:automationName': 'UiAutomator2' } } }) }),
        await fetch(`${root}/session/${driver.sessionId}/source`),
      ];
      for (const reply of asked) {
        const text = await reply.text();
        expect(reply.status, `${reply.url}: ${text.slice(0, 200)}`).toBe(404);
        expect(text).not.toContain(secret);
      }
    }
    // With the secret, the port is Appium's: what the engine reaches, and the reason the secret must stay the engine's.
    expect((await fetch(`http://127.0.0.1:${ports[0]}${secret}/status`)).status).toBe(200);
    // Session discovery is off even there.
    expect((await fetch(`http://127.0.0.1:${ports[0]}${secret}/appium/sessions`)).status).not.toBe(200);
    // No command line shows it (any local user reads those), nor does any answer to a client.
    expect(processesUnder([dir]).filter((p) => p.cmdline.includes(secret.slice(1)))).toEqual([]);
    expect(JSON.stringify(driver.capabilities)).not.toContain(secret.slice(1));
    const bidi = await fetch(`${new URL(engine.api).origin}/wd/hub/session`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ capabilities: { alwaysMatch: { platformName: 'Android', 'appium:automationName': 'UiAutomator2', webSocketUrl: true } } }),
    });
    expect(await bidi.text()).not.toContain(secret.slice(1));
    await driver.deleteSession();

    // The run's kept appium.log has Appium's lines (its requests, base path taken out), never the secret.
    const result = await waitFor('the run ended', async () => {
      const list = (await (await fetch(`${engine.api}/test-results`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: Array<{ id: string; name: string; status: string }> };
      return list.data.find((r) => r.name === 'appium port' && r.status !== 'running');
    }, 30_000);
    const assets = (await (await fetch(`${engine.api}/test-results/${result.id}/assets`, { headers: { authorization: `Bearer ${token}` } })).json()) as { data: Array<{ id: string; name: string }> };
    const log = await (await fetch(`${engine.api}/test-results/${result.id}/assets/${assets.data.find((a) => a.name === 'appium.log')!.id}`, { headers: { authorization: `Bearer ${token}` } })).text();
    expect(log).toMatch(/--> GET \/session\/[0-9a-f-]+\/source/);
    expect(log).not.toContain(secret.slice(1));

    // Appium dying makes the engine log its last lines (which hold request paths): without the secret all the same.
    process.kill(appium.pid, 'SIGKILL');
    await waitFor("the engine's note of Appium's exit", () => engine.output().includes('Appium exited'), 10_000);
    expect(engine.output()).toContain('Appium is up on port');
    expect(engine.output()).not.toContain(secret.slice(1));
  }, 120_000);
});
