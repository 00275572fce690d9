/**
 * Demo mode (`npm run demo`, or BENCHTOP_DEMO_PHONES=N npm run serve): simulated phones attached through the real
 * adb server, so that a newcomer with no phone at hand can try the whole lab. adb is the only prerequisite.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { waitForDevice } from '../protocols/adb/host.js';
import { connectToAdb, disconnectFromAdb, SimulatedPhone } from '../sim/android/index.js';

/**
 * Who each demo phone is, kept in the data dir: a real phone keeps its serial (an iPhone its UDID) when the lab
 * restarts, so a held phone stays held and a booking keeps its phone. An Android demo phone's serial is its adb
 * address, `127.0.0.1:<port>`, so its port is what it keeps.
 */
export const DEMO_IDENTITIES_FILE = 'demo-phones.json';

interface DemoIdentities {
  android: Array<{ model: string; port: number; serialNo: string }>;
  iphones: Array<{ name: string; udid: string }>;
}

function readIdentities(dataDir: string): DemoIdentities {
  const path = join(dataDir, DEMO_IDENTITIES_FILE);
  const kept = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Partial<DemoIdentities>) : {};
  return { android: kept.android ?? [], iphones: kept.iphones ?? [] };
}

/** Rewrites the file with one platform's phones, keeping the other's. */
function keepIdentities(dataDir: string, patch: Partial<DemoIdentities>): void {
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, DEMO_IDENTITIES_FILE), `${JSON.stringify({ ...readIdentities(dataDir), ...patch }, null, 2)}\n`);
}

/** Listens on the port it had; when another program has taken it since, on a new one, saying so: a new serial is a new phone to the lab. */
async function listenAsBefore(phone: SimulatedPhone, model: string, port: number | undefined, log: (line: string) => void): Promise<number> {
  if (port === undefined) return phone.start();
  try {
    return await phone.start(port);
  } catch (error) {
    const next = await phone.start();
    log(`Demo: ${model} could not listen on its port ${port} again (${(error as Error).message}); it is now 127.0.0.1:${next}, a new phone to the lab, and what was held on 127.0.0.1:${port} is released when its grace period ends.`);
    return next;
  }
}

const MODELS = [
  { model: 'Pixel 8', osVersion: '14', sdk: 34, battery: 92 },
  { model: 'Galaxy S23', manufacturer: 'samsung', osVersion: '14', sdk: 34, battery: 67 },
  { model: 'Pixel 6a', osVersion: '13', sdk: 33, battery: 48 },
  { model: 'Moto G Power', manufacturer: 'motorola', osVersion: '12', sdk: 31, battery: 81 },
];

export interface DemoPhones {
  serials: string[];
  stop(): Promise<void>;
}

/** How long adb may take to list a demo phone as a device once it is connected, and how often it is connected. */
const ATTACH_TIMEOUT_MS = 10_000;
const ATTACH_ATTEMPTS = 3;

/**
 * `adb connect`, then adb's own word that the phone is a device. A run that crashed left adb a transport at this
 * address, offline, that it is still reconnecting or tearing down: adb answers "already connected" to it, and may then
 * drop it, leaving no phone at all (a restart a moment after SIGKILL, on a loaded machine). So that transport is
 * dropped first, and the phone is connected again when adb does not list it in time, as a person would replug it.
 * `adb connect` starts the adb server if none is running, as a USB phone would not need.
 */
async function attach(port: number, adbServerPort: number, leftByAnEarlierRun: boolean): Promise<string> {
  const serial = `127.0.0.1:${port}`;
  for (let attempt = 1; ; attempt++) {
    if (leftByAnEarlierRun || attempt > 1) await disconnectFromAdb(serial, adbServerPort).catch(() => undefined);
    await connectToAdb(port, adbServerPort);
    try {
      await waitForDevice({ host: '127.0.0.1', port: adbServerPort }, serial, ATTACH_TIMEOUT_MS);
      return serial;
    } catch (error) {
      if (attempt === ATTACH_ATTEMPTS) throw new Error(`adb did not list ${serial} as a device after ${ATTACH_ATTEMPTS} connects: ${(error as Error).message}`, { cause: error });
    }
  }
}

export async function startDemoPhones(count: number, adbServerPort: number, dataDir: string, log: (line: string) => void = console.warn): Promise<DemoPhones> {
  const kept = readIdentities(dataDir).android;
  const phones: SimulatedPhone[] = [];
  const identities: DemoIdentities['android'] = [];
  const serials: string[] = [];
  const stop = async () => {
    for (const serial of serials) await disconnectFromAdb(serial, adbServerPort).catch(() => undefined);
    for (const phone of phones) await phone.stop();
  };
  try {
    for (let i = 0; i < count; i++) {
      const spec = MODELS[i % MODELS.length]!;
      const model = count > MODELS.length ? `${spec.model} #${i + 1}` : spec.model;
      const before = kept.find((k) => k.model === model);
      const phone = new SimulatedPhone({ ...spec, model, ...(before && { serialNo: before.serialNo }) });
      phones.push(phone);
      const port = await listenAsBefore(phone, model, before?.port, log);
      serials.push(await attach(port, adbServerPort, port === before?.port));
      identities.push({ model, port, serialNo: phone.serialNo });
    }
    keepIdentities(dataDir, { android: identities });
  } catch (error) {
    await stop();
    throw new Error(`Demo phones could not attach through adb: ${(error as Error).message}. Is adb installed (apt-get install adb)?`, {
      cause: error,
    });
  }
  return { serials, stop };
}

/**
 * An app on each demo iPhone that shares its Documents (UIFileSharingEnabled), so that the phone page's Files tab
 * has an app to open, as a team's own build with file sharing on would.
 */
export const DEMO_SHARING_APP = {
  bundleId: 'com.benchtop.demo.fieldnotes',
  name: 'Field Notes',
  fileSharing: true,
  documents: { 'Welcome.txt': 'Field Notes shares its Documents: upload, download and browse them from the phone page\'s Files tab.\n' },
};

const IPHONES = [
  { name: 'iPhone SE', version: '17.5.1', battery: 88 },
  { name: 'QA iPhone', version: '16.7.8', battery: 54 },
  { name: 'Design iPhone', version: '18.1', battery: 71 },
  // iOS 17.0-17.3: no userspace tunnel, so on a box without a Mac it shows the steps that range needs.
  { name: 'Support iPhone', version: '17.2.1', battery: 63 },
];

export interface DemoIphones {
  /** The simulated usbmuxd's `127.0.0.1:PORT`, which the engine tracks instead of the system's. */
  address: string;
  udids: string[];
  stop(): Promise<void>;
}

/**
 * Demo iPhones (BENCHTOP_DEMO_IPHONES=N): a simulated usbmuxd on loopback with simulated iPhones plugged in, each
 * trusted, with WebDriverAgent's runner installed, as real ones would be: iOS 17.5.1, 16.7.8, 18.1 and 17.2.1 in turn,
 * so that four give one of each kind the lab tells apart (docs/iphones.md). The engine starts WDA on them as on real
 * ones: over lockdown before 17, through a go-ios userspace tunnel from 17.4; 17.2.1 shows the steps for 17.0-17.3.
 */
export async function startDemoIphones(count: number, dataDir: string): Promise<DemoIphones> {
  const { SimulatedIPhone, SimulatedUsbmuxd } = await import('../sim/ios/index.js');
  const kept = readIdentities(dataDir).iphones;
  const usbmuxd = new SimulatedUsbmuxd();
  const address = await usbmuxd.start();
  const phones: Array<InstanceType<typeof SimulatedIPhone>> = [];
  for (let i = 0; i < count; i++) {
    const spec = IPHONES[i % IPHONES.length]!;
    const name = count > IPHONES.length ? `${spec.name} #${i + 1}` : spec.name;
    const udid = kept.find((k) => k.name === name)?.udid;
    const phone = new SimulatedIPhone({ ...spec, name, udid, userApps: [DEMO_SHARING_APP] });
    await phone.plugInto(usbmuxd);
    phones.push(phone);
  }
  keepIdentities(dataDir, { iphones: phones.map((p) => ({ name: p.name, udid: p.udid })) });
  return {
    address,
    udids: phones.map((p) => p.udid),
    async stop() {
      for (const phone of phones) phone.stop();
      await usbmuxd.stop();
    },
  };
}
