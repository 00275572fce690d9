/**
 * The iPhones of one simulated provider, run inside its network namespace: a simulated usbmuxd with simulated
 * iPhones, reachable at the Unix socket PROVIDER_USBMUXD_SOCKET as a provider's real usbmuxd is at
 * /var/run/usbmuxd. PROVIDER_IPHONES is a JSON array of SimulatedIPhoneOptions. With PROVIDER_XCRUN_DIR (a Mac
 * provider), their CoreDevice endpoint listens on the namespace's loopback and the scripted xcrun that reaches it is
 * written to that directory. Prints READY and the UDIDs.
 */
import { connect, createServer } from 'node:net';
import { rmSync } from 'node:fs';
import { SimulatedIPhone, SimulatedUsbmuxd, startCoreDevice, type SimulatedIPhoneOptions } from '../../../src/sim/ios/index.js';
import { stopWithParent } from '../child-lifetime.js';
import { writeXcrun } from '../ios-lab.js';

const socketPath = process.env.PROVIDER_USBMUXD_SOCKET!;
const options = JSON.parse(process.env.PROVIDER_IPHONES || '[]') as SimulatedIPhoneOptions[];
const usbmuxd = new SimulatedUsbmuxd();
const address = await usbmuxd.start();
const [host, port] = [address.slice(0, address.lastIndexOf(':')), Number(address.slice(address.lastIndexOf(':') + 1))];
const phones: SimulatedIPhone[] = [];
for (const o of options) {
  // WDA running unless the test says otherwise, as ios-lab.ts plugs them.
  const phone = new SimulatedIPhone({ wda: true, ...o });
  await phone.plugInto(usbmuxd);
  phones.push(phone);
}
const xcrunDir = process.env.PROVIDER_XCRUN_DIR;
const coreDevice = xcrunDir ? await startCoreDevice((udid) => phones.find((p) => p.udid === udid)) : undefined;
if (xcrunDir && coreDevice) writeXcrun(xcrunDir, coreDevice.url);
// The simulated usbmuxd listens on TCP; a provider's usbmuxd is a Unix socket, which is what the hub forwards to.
rmSync(socketPath, { force: true });
const relay = createServer((client) => {
  const upstream = connect(port, host);
  client.pipe(upstream).pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
});
await new Promise<void>((resolve) => relay.listen(socketPath, resolve));
console.log(`READY ${JSON.stringify(phones.map((p) => p.udid))}`);

const stop = () => {
  relay.close();
  void coreDevice?.stop();
  for (const p of phones) p.stop();
  void usbmuxd.stop().finally(() => process.exit(0));
};
stopWithParent(stop);
