/**
 * A simulated usbmuxd in a process of its own (node --import tsx), into which simulated iPhones are plugged and
 * unplugged on the benchmark's word, so that a benchmark can time a plug-in and still keep the phones' work (their
 * TLS, their tunnels' TCP endpoints, PNG and JPEG encoding) off the engine's event loop and out of its CPU time, as a
 * real phone's is. Prints `Simulated usbmuxd on <address>, control on <url>`; the control server (loopback) takes
 *   POST /phones?version=17.5.1&udid=...&name=...   plugs in a phone of that iOS version (and that UDID, if given)
 *                                                   whose WebDriverAgent is stopped (the lab starts it); answers its UDID
 *   DELETE /phones/<udid>                  unplugs and stops it
 * Serves until SIGTERM, or until its parent goes away.
 */
import { createServer } from 'node:http';
import { SimulatedIPhone, SimulatedUsbmuxd } from '../../src/sim/ios/index.js';
import { stopWithParent } from '../../test/support/child-lifetime.js';

const usbmuxd = new SimulatedUsbmuxd();
const address = await usbmuxd.start();
const phones = new Map<string, SimulatedIPhone>();

const control = createServer((req, res) => {
  void (async () => {
    const url = new URL(req.url ?? '/', 'http://control');
    const version = url.searchParams.get('version');
    if (req.method === 'POST' && url.pathname === '/phones' && version && /^\d+\.\d+(\.\d+)?$/.test(version)) {
      const asked = url.searchParams.get('udid');
      if (asked !== null && !/^[0-9A-F]{8}-[0-9A-F]{16}$/.test(asked)) return res.writeHead(400).end();
      const phone = new SimulatedIPhone({ name: url.searchParams.get('name') ?? `iPhone ${version}`, version, udid: asked ?? undefined, wda: false });
      phones.set(phone.udid, phone);
      await phone.plugInto(usbmuxd);
      return res.end(phone.udid);
    }
    const udid = /^\/phones\/([\w-]+)$/.exec(url.pathname)?.[1];
    if (req.method === 'DELETE' && udid && phones.has(udid)) {
      phones.get(udid)!.stop();
      phones.delete(udid);
      return res.end();
    }
    res.statusCode = 404;
    res.end();
  })();
});
await new Promise<void>((resolve) => control.listen(0, '127.0.0.1', resolve));
console.log(`Simulated usbmuxd on ${address}, control on http://127.0.0.1:${(control.address() as { port: number }).port}`);

stopWithParent(() => {
  for (const phone of phones.values()) phone.stop();
  control.close();
  void usbmuxd.stop().finally(() => process.exit(0));
});
