import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer, type Server, type Socket } from 'node:net';
import { parseUsbmuxdAddress } from '../../src/main/engine/fleet/ios/usbmux.js';
import { tunnel } from '../../src/main/engine/fleet/ios/wda-client.js';
import { SimulatedIPhone, SimulatedUsbmuxd, startCoreDevice, type SimulatedIPhoneOptions } from '../../src/sim/ios/index.js';

const XCRUN_SCRIPT = fileURLToPath(new URL('./ios-host/xcrun.mjs', import.meta.url));

/** libimobiledevice's tools, as Debian packages them. */
export const IDEVICE_TOOLS = { idevice_id: 'libimobiledevice-utils', ideviceinfo: 'libimobiledevice-utils', ideviceinstaller: 'ideviceinstaller' } as const;

function onPath(tool: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/**
 * Tests that read a simulated iPhone with libimobiledevice need its tools: under CI their absence is a failure naming
 * the Debian package; elsewhere those tests are skipped loudly.
 */
export function ideviceToolsOrSkip(): boolean {
  if (onPath('idevice_id') && onPath('ideviceinfo')) return true;
  const message = 'idevice_id/ideviceinfo are missing: install the Debian package `libimobiledevice-utils` (apt-get install -y libimobiledevice-utils libusbmuxd-tools).';
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`SKIPPING: ${message}`);
  return false;
}

/**
 * One of libimobiledevice's tools beyond idevice_id and ideviceinfo (idevicediagnostics, idevicesyslog from
 * libimobiledevice-utils; ideviceinstaller from its own package): under CI its absence fails naming the Debian package,
 * elsewhere the test is skipped loudly.
 */
export function ideviceToolOrSkip(tool: string, debianPackage: string): boolean {
  if (onPath(tool)) return true;
  const message = `${tool} is missing: install the Debian package \`${debianPackage}\` (apt-get install -y ${debianPackage}).`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`SKIPPING: ${message}`);
  return false;
}

/**
 * Writes `dir`/xcrun: the scripted xcrun (ios-host/xcrun.mjs) reaching the CoreDevice endpoint at `url`. Each run's
 * arguments are appended to `dir`/xcrun.log, one line each, so that a test can tell where and how it ran.
 */
export function writeXcrun(dir: string, url: string): string {
  const path = join(dir, 'xcrun');
  const log = join(dir, 'xcrun.log');
  writeFileSync(path, `#!/bin/sh\necho "$*" >> '${log}'\nXCRUN_SIM_URL='${url}' exec '${process.execPath}' '${XCRUN_SCRIPT}' "$@"\n`);
  chmodSync(path, 0o755);
  return path;
}

/** A simulated usbmuxd on loopback with simulated iPhones plugged in. */
export interface IosBus {
  usbmuxd: SimulatedUsbmuxd;
  /** `127.0.0.1:PORT`, the USBMUXD_SOCKET_ADDRESS format. */
  address: string;
  phones: SimulatedIPhone[];
  plug(options?: SimulatedIPhoneOptions): Promise<SimulatedIPhone>;
  /**
   * A scripted `xcrun` (its path) whose `devicectl device process launch` reaches these phones through their
   * CoreDevice endpoint, as a Mac's reaches a real iOS 17+ phone.
   */
  xcrun(): Promise<string>;
  stop(): Promise<void>;
}

export async function startIosBus(phones: SimulatedIPhoneOptions[] = []): Promise<IosBus> {
  const usbmuxd = new SimulatedUsbmuxd();
  const address = await usbmuxd.start();
  let coreDevice: { url: string; stop(): Promise<void>; dir: string; path: string } | undefined;
  const bus: IosBus = {
    usbmuxd,
    address,
    phones: [],
    async plug(options = {}) {
      // WDA running unless a test says otherwise: a phone whose runner someone started (Xcode, devicectl), as every
      // test that does not start WDA itself expects. An iOS 17+ phone left to its default runs none.
      const phone = new SimulatedIPhone({ wda: true, ...options });
      await phone.plugInto(usbmuxd);
      bus.phones.push(phone);
      return phone;
    },
    async xcrun() {
      if (!coreDevice) {
        const endpoint = await startCoreDevice((udid) => bus.phones.find((p) => p.udid === udid && usbmuxd.attachedUdids().includes(udid)));
        const dir = mkdtempSync(join(tmpdir(), 'benchtop-xcrun-'));
        coreDevice = { ...endpoint, dir, path: writeXcrun(dir, endpoint.url) };
      }
      return coreDevice.path;
    },
    async stop() {
      for (const phone of bus.phones) phone.stop();
      await usbmuxd.stop();
      if (coreDevice) {
        await coreDevice.stop();
        rmSync(coreDevice.dir, { recursive: true, force: true });
      }
    },
  };
  for (const options of phones) await bus.plug(options);
  return bus;
}

/** A loopback port whose connections are usbmuxd tunnels to the phone's `port` (what iproxy does). */
export async function forwardPhonePort(bus: IosBus, udid: string, port: number): Promise<{ url: string; server: Server }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    sockets.add(client);
    client.once('close', () => sockets.delete(client));
    client.on('error', () => undefined);
    tunnel(parseUsbmuxdAddress(bus.address), udid, port).then(
      (phone) => {
        phone.on('error', () => client.destroy());
        client.once('close', () => phone.destroy());
        client.pipe(phone).pipe(client);
      },
      () => client.destroy(),
    );
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, server };
}
