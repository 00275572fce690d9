import { findAdb, SimulatedPhone, startAdbServer, connectToAdb, disconnectFromAdb, type AdbServer, type SimulatedPhoneOptions } from '../../src/sim/android/index.js';
import { startEngine, type client, type TestEngine } from './engine.js';
import type { EngineConfig } from '../../src/main/engine/config.js';

/**
 * A lab for fleet tests: a private real adb server, simulated phones connected to it with `adb connect`, and an
 * engine tracking that adb server.
 */
export interface TestLab {
  adb: AdbServer;
  engine: TestEngine;
  phones: SimulatedPhone[];
  serials: string[];
  /** Plugs a new simulated phone in and resolves to its serial. */
  plug(options?: SimulatedPhoneOptions): Promise<string>;
  /** Pulls a phone's cable (adb loses the transport). */
  unplug(serial: string): Promise<void>;
  /** Plugs a pulled phone back in. */
  replug(serial: string): Promise<void>;
  phone(serial: string): SimulatedPhone;
  stop(): Promise<void>;
}

/** Fleet tests need Debian's adb: under CI its absence is a failure, elsewhere the suite is skipped loudly. */
export function adbOrSkip(): boolean {
  if (findAdb()) return true;
  if (process.env.CI === 'true') throw new Error('adb is missing: install the Debian package `adb` (apt-get install -y adb).');
  console.warn('SKIPPING fleet tests: adb is not installed (apt-get install -y adb).');
  return false;
}

export async function startLab(phones: SimulatedPhoneOptions[], config: Partial<EngineConfig> = {}): Promise<TestLab> {
  const adb = await startAdbServer();
  const lab: TestLab = {
    adb,
    engine: undefined as unknown as TestEngine,
    phones: [],
    serials: [],
    async plug(options = {}) {
      const phone = new SimulatedPhone(options);
      const port = await phone.start();
      const serial = await connectToAdb(port, adb.port);
      lab.phones.push(phone);
      lab.serials.push(serial);
      return serial;
    },
    async unplug(serial) {
      await disconnectFromAdb(serial, adb.port);
    },
    async replug(serial) {
      await connectToAdb(Number(serial.split(':')[1]), adb.port);
    },
    phone(serial) {
      return lab.phones[lab.serials.indexOf(serial)]!;
    },
    async stop() {
      await lab.engine?.stop();
      for (const p of lab.phones) await p.stop();
      await adb.stop();
    },
  };
  try {
    for (const options of phones) await lab.plug(options);
    lab.engine = await startEngine({ adb: { host: '127.0.0.1', port: adb.port }, ...config });
  } catch (error) {
    await lab.stop();
    throw error;
  }
  return lab;
}

/** Polls until `check` returns a value (not undefined/false), or fails after the timeout with the last value seen. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Uploads an app through POST /files/upload and waits until the lab has read it; resolves to the file's id. */
export async function uploadReadyApp(c: ReturnType<typeof client>, token: string, bytes: Buffer, filename: string): Promise<string> {
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(bytes)]), filename);
  const up = await fetch(`${c.api}/files/upload`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: form });
  const fileId = ((await up.json()) as { id: string }).id;
  await waitFor(`file ${fileId} ready`, async () => (await c.call('GET', `/files/${fileId}`, { token })).body.status === 'ready');
  return fileId;
}

/** Allocates a phone (Android unless `platform` says; by model name, if given) in a new session and waits until it is in_use. */
export async function allocateInUse(c: ReturnType<typeof client>, token: string, name?: string, { platform = 'android', timeoutMs }: { platform?: string; timeoutMs?: number } = {}) {
  const session = (await c.call('POST', '/sessions', { token })).body.id as string;
  const filters = [{ attribute: 'platform', operator: 'EQUALS', value: platform }];
  if (name) filters.push({ attribute: 'name', operator: 'EQUALS', value: name });
  const a = (await c.call('POST', `/sessions/${session}/devices`, { token, body: { filters } })).body;
  const d = await waitFor(`${a.id} to be in_use`, async () => {
    const x = (await c.call('GET', `/sessions/${session}/devices/${a.id}`, { token })).body;
    return x.status === 'in_use' ? x : undefined;
  }, timeoutMs);
  return { session, serial: d.info.serial as string, id: a.id as string };
}
