import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { connectToAdb, startAdbServer, type AdbServer, type SimulatedPhoneOptions } from '../../src/sim/android/index.js';
import { onCleanup, tempDir } from './cleanup.js';
import { nodeScript } from './bundle.js';
import { startChild } from './processes.js';
import { call, engineEnv, ownerApiKey, ROOT, type Server, SERVE_ARGS } from './servers.js';
import { startUsbLink, type UsbLink } from './usb-link.js';

const PHONE_SCRIPT = fileURLToPath(new URL('./phone-process.ts', import.meta.url));
const START_TIMEOUT_MS = 30_000;

/** A lab of one: a private adb server, a simulated phone attached to it, and the engine tracking that server. */
export interface AndroidLab {
  adb: AdbServer;
  /** The phone's adb serial, 127.0.0.1:<port>. */
  serial: string;
  engine: Server;
  /** The engine's data dir, where its SQLite file is. */
  dataDir: string;
  apiKey: string;
  /** The phone's USB cable, when the lab was started with one: its rate can be set to a real phone's. */
  usbLink?: UsbLink;
}

interface FleetDevice {
  serial: string;
  state: string;
  held: boolean;
}

interface Device {
  id: string;
  status: string;
  info: { serial?: string };
}

/** Everything it starts is stopped at cleanup: the engine first, then the phone, then `adb kill-server`. */
/** `engineOverrides` are added to the engine's environment last; `usbLink` puts the phone behind a USB cable's rate. */
export async function startAndroidLab(prefix: string, phone: SimulatedPhoneOptions = {}, engineOverrides: NodeJS.ProcessEnv = {}, { usbLink = false } = {}): Promise<AndroidLab> {
  const adb = await startAdbServer();
  onCleanup(() => adb.stop());

  const phoneProcess = startChild(process.execPath, nodeScript(PHONE_SCRIPT), {
    cwd: ROOT,
    env: { ...process.env, BENCH_PHONE_OPTIONS: JSON.stringify(phone) },
  });
  const [, port] = await phoneProcess.waitForOutput(/listening on 127\.0\.0\.1:(\d+)/, START_TIMEOUT_MS);
  const link = usbLink ? await startUsbLink(Number(port)) : undefined;
  if (link) onCleanup(() => link.close());
  const serial = await connectToAdb(link?.port ?? Number(port), adb.port);

  const dataDir = tempDir(prefix);
  const env = {
    ...engineEnv(dataDir, 0),
    BENCHTOP_ADB: '',
    BENCHTOP_ADB_HOST: '127.0.0.1',
    BENCHTOP_ADB_PORT: String(adb.port),
    BENCHTOP_DEMO_PHONES: '0',
    // The live screen benchmark measures the transport, not the default frame cap.
    BENCHTOP_SCREEN_MAX_FPS: '0',
    ...engineOverrides,
  };
  const child = startChild(process.execPath, SERVE_ARGS, { cwd: ROOT, env });
  const [, url] = await child.waitForOutput(/Benchtop is serving (http:\/\/\S+)\/api\/v1/, START_TIMEOUT_MS);
  const engine = { child, api: `${url}/api/v1` };
  const apiKey = await ownerApiKey(engine.api);
  await waitUntilFree({ engine, apiKey, serial }, START_TIMEOUT_MS);
  return { adb, serial, engine, dataDir, apiKey, usbLink: link };
}

/** Polls the lab inventory until the phone is attached and no allocation holds or cleans it. */
export async function waitUntilFree(lab: Pick<AndroidLab, 'engine' | 'apiKey' | 'serial'>, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const { data } = await call<{ data: FleetDevice[] }>('GET', `${lab.engine.api}/fleet/devices`, { bearer: lab.apiKey });
    const phone = data.find((d) => d.serial === lab.serial);
    if (phone?.state === 'device' && !phone.held) return;
    if (performance.now() > deadline) throw new Error(`${lab.serial} was not free within ${timeoutMs} ms: ${JSON.stringify(phone)}`);
    await sleep(5);
  }
}

/**
 * Allocates an Android phone in the session and polls the session's devices back to back (one request in flight,
 * none waiting) until the allocation is in_use. Resolves to the wall time from sending the POST to the reply
 * that first showed in_use, and the number of polls it took.
 */
export async function allocateUntilInUse(
  lab: Pick<AndroidLab, 'engine' | 'apiKey' | 'serial'>,
  sessionId: string,
  timeoutMs: number,
  /** Called when the POST has answered: the engine's own part, before the phone is prepared. */
  onReply?: () => void,
): Promise<{ ms: number; polls: number }> {
  const devices = `${lab.engine.api}/sessions/${sessionId}/devices`;
  const start = performance.now();
  const allocation = await call<Device>('POST', devices, {
    bearer: lab.apiKey,
    body: { filters: [{ attribute: 'platform', operator: 'EQUALS', value: 'android' }] },
  });
  onReply?.();
  if (allocation.status !== 'provisioning') throw new Error(`the allocation was ${allocation.status}, not provisioning`);
  for (let polls = 1; ; polls++) {
    const { data } = await call<{ data: Device[] }>('GET', devices, { bearer: lab.apiKey });
    const row = data.find((d) => d.id === allocation.id);
    if (row?.status === 'in_use' && row.info.serial) {
      if (row.info.serial !== lab.serial) throw new Error(`allocated ${row.info.serial}, not ${lab.serial}`);
      return { ms: performance.now() - start, polls };
    }
    if (row?.status !== 'provisioning') throw new Error(`the allocation went ${row?.status ?? 'missing'} before in_use`);
    if (performance.now() - start > timeoutMs) throw new Error(`the allocation was not in_use within ${timeoutMs} ms`);
  }
}

/** Releases the phone (202) and waits until its cleanup has finished. Resolves to the time that took. */
export async function releaseUntilFree(lab: Pick<AndroidLab, 'engine' | 'apiKey' | 'serial'>, sessionId: string, timeoutMs: number): Promise<number> {
  const start = performance.now();
  const res = await fetch(`${lab.engine.api}/sessions/${sessionId}/devices/${encodeURIComponent(lab.serial)}/release`, {
    method: 'POST',
    headers: { authorization: `Bearer ${lab.apiKey}` },
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  if (res.status !== 202) throw new Error(`release answered ${res.status}: ${text}`);
  await waitUntilFree(lab, timeoutMs);
  return performance.now() - start;
}
