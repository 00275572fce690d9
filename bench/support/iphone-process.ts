/**
 * A simulated usbmuxd with one simulated iPhone in its own process (node --import tsx), so that the phone's work
 * (PNG and JPEG encoding) never shares an event loop with the engine or the benchmark, as a real phone's never would.
 * Prints the usbmuxd address and the UDID, and serves until SIGTERM or until its parent goes away.
 */
import { SimulatedIPhone, SimulatedUsbmuxd } from '../../src/sim/ios/index.js';
import { stopWithParent } from '../../test/support/child-lifetime.js';

const usbmuxd = new SimulatedUsbmuxd();
const address = await usbmuxd.start();
// WDA running, as a phone whose runner someone started: what the benchmarks measure is driving it.
const phone = new SimulatedIPhone({ name: 'Bench iPhone', version: '17.5.1', wda: true });
await phone.plugInto(usbmuxd);
console.log(`Simulated usbmuxd on ${address} with ${phone.udid}`);

const stop = () => {
  phone.stop();
  void usbmuxd.stop().finally(() => process.exit(0));
};
stopWithParent(stop);
