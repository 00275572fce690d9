// Runs appium-ios-device's own Xctest (the launch Appium uses for preinstalled WDA on iOS < 17) against the usbmuxd in
// USBMUXD_SOCKET_ADDRESS: a third-party client for the simulated iPhone's house_arrest, instruments and testmanagerd.
// Usage: node appium-xctest.mjs <udid> <bundle id>; prints "started in N ms" once Xctest.start() resolves, then keeps the run.
// Xctest closes the runner's container right after ending its file stream, before the stream's own close of the AFC
// file handle is written, which throws ERR_STREAM_WRITE_AFTER_END from a stream callback (its bug, on any phone): that
// one error is ignored here, so that the run goes on as it does inside Appium.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { log } = require('appium-ios-device/build/lib/logger.js');
const { Xctest } = require('appium-ios-device');

log.level = 'silent';
process.on('uncaughtException', (error) => {
  if (error && error.code === 'ERR_STREAM_WRITE_AFTER_END') return;
  console.error(error);
  process.exit(1);
});
const xctest = new Xctest(process.argv[2], process.argv[3]);
const begun = performance.now();
xctest.start().then(
  () => console.log(`started in ${Math.round(performance.now() - begun)} ms`),
  (error) => {
    console.error(error.message);
    process.exit(2);
  },
);
process.on('SIGTERM', () => {
  xctest.stop();
  process.exit(0);
});
