/**
 * Demo mode (`npm run demo`, or BENCHTOP_DEMO_PHONES=N npm run serve): simulated phones attached through the real
 * adb server, so that a newcomer with no phone at hand can try the whole lab. adb is the only prerequisite.
 */
import { connectToAdb, runAdb, SimulatedPhone } from '../sim/android/index.js';

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

export async function startDemoPhones(count: number, adbServerPort: number): Promise<DemoPhones> {
  const phones: SimulatedPhone[] = [];
  const serials: string[] = [];
  const stop = async () => {
    for (const serial of serials) await runAdb(['disconnect', serial], { serverPort: adbServerPort, timeoutMs: 10_000 }).catch(() => undefined);
    for (const phone of phones) await phone.stop();
  };
  try {
    for (let i = 0; i < count; i++) {
      const spec = MODELS[i % MODELS.length]!;
      const phone = new SimulatedPhone({ ...spec, model: count > MODELS.length ? `${spec.model} #${i + 1}` : spec.model });
      phones.push(phone);
      // `adb connect` starts the adb server if none is running, as a USB phone would not need.
      serials.push(await connectToAdb(await phone.start(), adbServerPort));
    }
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
];

export interface DemoIphones {
  /** The simulated usbmuxd's `127.0.0.1:PORT`, which the engine tracks instead of the system's. */
  address: string;
  udids: string[];
  stop(): Promise<void>;
}

/**
 * Demo iPhones (BENCHTOP_DEMO_IPHONES=N): a simulated usbmuxd on loopback with simulated iPhones plugged in, each
 * trusted and running WebDriverAgent. Nothing to install: the engine reaches them as it reaches real ones.
 */
export async function startDemoIphones(count: number): Promise<DemoIphones> {
  const { SimulatedIPhone, SimulatedUsbmuxd } = await import('../sim/ios/index.js');
  const usbmuxd = new SimulatedUsbmuxd();
  const address = await usbmuxd.start();
  const phones: Array<InstanceType<typeof SimulatedIPhone>> = [];
  for (let i = 0; i < count; i++) {
    const spec = IPHONES[i % IPHONES.length]!;
    const phone = new SimulatedIPhone({ ...spec, name: count > IPHONES.length ? `${spec.name} #${i + 1}` : spec.name, userApps: [DEMO_SHARING_APP] });
    await phone.plugInto(usbmuxd);
    phones.push(phone);
  }
  return {
    address,
    udids: phones.map((p) => p.udid),
    async stop() {
      for (const phone of phones) phone.stop();
      await usbmuxd.stop();
    },
  };
}
