/**
 * The phones of one simulated provider, run inside its network namespace (ip netns exec ... node --import tsx):
 * simulated Android phones on the namespace's own loopback, each joined with `adb connect` to the namespace's adb
 * server. PROVIDER_PHONES is a JSON array of {port, options}; PROVIDER_ADB_PORT the server's port. Prints READY and
 * serves until SIGTERM or until its parent goes away.
 */
import { connectToAdb, SimulatedPhone, type SimulatedPhoneOptions } from '../../../src/sim/android/index.js';
import { stopWithParent } from '../child-lifetime.js';

const specs = JSON.parse(process.env.PROVIDER_PHONES || '[]') as Array<{ port: number; options: SimulatedPhoneOptions }>;
const adbPort = Number(process.env.PROVIDER_ADB_PORT || 5037);
const phones: SimulatedPhone[] = [];
const serials: string[] = [];
for (const spec of specs) {
  const phone = new SimulatedPhone(spec.options);
  phones.push(phone);
  const port = await phone.start(spec.port);
  serials.push(await connectToAdb(port, adbPort));
}
console.log(`READY ${JSON.stringify(serials)}`);

const stop = () => void Promise.all(phones.map((p) => p.stop())).finally(() => process.exit(0));
stopWithParent(stop);
