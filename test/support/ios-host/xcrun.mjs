#!/usr/bin/env node
// A scripted stand-in for Apple's `xcrun devicectl`, for tests on Linux: `devicectl device process launch` asks the
// simulated iPhone's CoreDevice endpoint ($XCRUN_SIM_URL, src/sim/ios/core-device.ts) to launch the app, and writes
// devicectl's --json-output report; `xcrun --find devicectl` answers Xcode's path. Anything else fails as devicectl does
// with an unknown command.
import { writeFileSync } from 'node:fs';

const args = process.argv.slice(2);
// `xcrun --find devicectl`: where Xcode 15+ keeps it, as a Mac with Xcode answers.
if (args.join(' ') === '--find devicectl') {
  process.stdout.write('/Applications/Xcode.app/Contents/Developer/usr/bin/devicectl\n');
  process.exit(0);
}
const fail = (message, report) => {
  if (report) writeFileSync(report, JSON.stringify({ info: { arguments: args, outcome: 'failed' }, error: { code: 1, domain: 'com.apple.dt.CoreDeviceError', userInfo: { NSLocalizedDescription: { string: message } } } }));
  process.stderr.write(`ERROR: ${message}\n`);
  process.exit(1);
};
if (args.slice(0, 4).join(' ') !== 'devicectl device process launch') fail(`xcrun: unsupported command: ${args.join(' ')}`);
let device;
let report;
let terminateExisting = false;
const rest = [];
for (let i = 4; i < args.length; i++) {
  const a = args[i];
  if (a === '--device' || a === '-d') device = args[++i];
  else if (a === '--json-output' || a === '-j') report = args[++i];
  else if (a === '--terminate-existing') terminateExisting = true;
  else if (a.startsWith('-')) fail(`Unknown option '${a}'`, report);
  else rest.push(a);
}
if (!device || rest.length !== 1) fail('Usage: devicectl device process launch --device <uuid|ecid|serial_number|udid|name|dns_name> <bundle-identifier-or-path>', report);
const base = process.env.XCRUN_SIM_URL;
if (!base) fail('XCRUN_SIM_URL is not set', report);
const res = await fetch(`${base}/devices/${encodeURIComponent(device)}/processes`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ bundleId: rest[0], terminateExisting }),
});
const body = await res.json();
if (res.status !== 200) fail(body.error ?? `launch failed (${res.status})`, report);
if (report) writeFileSync(report, JSON.stringify({ info: { arguments: args, outcome: 'success' }, result: { process: { processIdentifier: body.processIdentifier, executable: `file:///${rest[0]}` } } }));
process.stdout.write(`Launched application with ${rest[0]} bundle identifier.\n`);
