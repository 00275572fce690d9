/**
 * One simulated Android phone in its own process (node --import tsx), so that the phone's work never shares an
 * event loop with the benchmark that times it, as a real phone's never would. Options come as JSON in
 * BENCH_PHONE_OPTIONS; it prints its port and serves until SIGTERM, or until its parent goes away.
 */
import { SimulatedPhone, type SimulatedPhoneOptions } from '../../src/sim/android/index.js';
import { stopWithParent } from '../../test/support/child-lifetime.js';

const options = JSON.parse(process.env.BENCH_PHONE_OPTIONS || '{}') as SimulatedPhoneOptions;
const phone = new SimulatedPhone(options);
const port = await phone.start();
console.log(`Simulated phone listening on 127.0.0.1:${port}`);

const stop = () => void phone.stop().finally(() => process.exit(0));
stopWithParent(stop);
