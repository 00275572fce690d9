// A mobilewright test's device session with the Mobile Next driver, exactly as a user's test runs it: apiKey and an
// https apiUrl (the driver refuses plain http with a key), the fleet's wss:// url, and nothing else. Run as its own
// process so that NODE_EXTRA_CA_CERTS (read only at start-up) can trust Benchtop's self-signed LAN certificate.
// Env: BENCHTOP_API_URL (https://host:port), BENCHTOP_WS_URL (wss://host:port/ws), BENCHTOP_KEY. Prints one JSON line.
import { MobileNextDriver } from '@mobilewright/driver-mobilenext';

const apiUrl = process.env.BENCHTOP_API_URL;
const url = process.env.BENCHTOP_WS_URL;
const apiKey = process.env.BENCHTOP_KEY;

const driver = new MobileNextDriver({ apiKey, apiUrl, testResult: { uploadReport: 'off' } });
const out = {};
const device = await driver.allocate({ platform: 'android' });
out.allocated = device;
out.connected = await driver.connect({ deviceId: device.deviceId, platform: device.platform, url });
const png = await driver.screenshot();
out.screenshot = { bytes: png.length, signature: png.subarray(1, 4).toString('latin1') };
out.hierarchy = (await driver.getViewHierarchy()).length;
out.screenSize = await driver.getScreenSize();
await driver.tap(101, 202);
await driver.launchApp('com.example.notes');
await driver.typeText('typed by mobilewright');
out.foreground = await driver.getForegroundApp();
out.apps = (await driver.listApps()).map((a) => a.bundleId);
out.devices = await driver.listDevices();
// Several calls in flight on the one socket, as a test's parallel steps make them.
out.parallel = await Promise.all([driver.getOrientation(), driver.getScreenSize(), driver.getForegroundApp(), driver.getViewHierarchy().then((h) => h.length)]);
try {
  await driver.setGeolocation({ latitude: 1, longitude: 2 });
} catch (error) {
  out.geolocationError = { name: error.name, code: error.code, message: error.message };
}
await driver.disconnect();
await driver.release(device.deviceId);
out.released = true;
process.stdout.write(JSON.stringify(out) + '\n');
