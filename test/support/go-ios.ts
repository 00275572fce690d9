import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { parseIpv6Address } from '../../src/sim/ios/tunnel/packets.js';

/** go-ios's Linux binary from its npm tarball, run in place (its postinstall is not allowed to run). */
export const GO_IOS = join(process.cwd(), 'node_modules/go-ios/dist', `go-ios-linux-${process.arch === 'arm64' ? 'arm64_linux_arm64' : 'amd64_linux_amd64'}`, 'ios');

/** Whether go-ios is there: under CI its absence fails the file, elsewhere the file is skipped loudly. */
export function goIosOrSkip(): boolean {
  if (existsSync(GO_IOS)) return true;
  const message = `go-ios is missing at ${GO_IOS}: run \`npm install\` (package.json names go-ios 1.2.0).`;
  if (process.env.CI === 'true') throw new Error(message);
  console.warn(`SKIPPING: ${message}`);
  return false;
}

/** One tunnel as `ios tunnel ls` lists it. */
export interface GoIosTunnel {
  address: string;
  rsdPort: number;
  udid: string;
  userspaceTun?: boolean;
  userspaceTunPort: number;
}

/**
 * A connection to `port` on the phone through go-ios's userspace tunnel: go-ios listens on a local port per tunnel
 * and takes a 20-byte preamble, the device's 16-byte IPv6 address and the port as 4 bytes little-endian.
 */
export async function throughTunnel(tunnel: GoIosTunnel, port: number): Promise<Socket> {
  const socket = connect(tunnel.userspaceTunPort, '127.0.0.1');
  socket.on('error', () => undefined);
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const preamble = Buffer.alloc(20);
  parseIpv6Address(tunnel.address)!.copy(preamble);
  preamble.writeUInt32LE(port, 16);
  socket.write(preamble);
  return socket;
}

/** go-ios processes (the binary itself, not the guards around them) working for this phone, by pid, with their arguments. */
export function goIosProcesses(udid: string): Array<{ pid: number; args: string[] }> {
  const found: Array<{ pid: number; args: string[] }> = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let args: string[];
    try {
      args = readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').filter(Boolean);
    } catch {
      continue;
    }
    if (/go-ios-[^/]+\/ios(\.exe)?$/.test(args[0] ?? '') && args.some((a) => a.includes(udid))) found.push({ pid: Number(name), args });
  }
  return found;
}

/** Whether a process is still running (a zombie's command line is empty). */
export function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8') !== '';
  } catch {
    return false;
  }
}

/** One variable of a running process's environment, as it was started with it. */
export function envOf(pid: number, name: string): string | undefined {
  const entry = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').find((e) => e.startsWith(`${name}=`));
  return entry?.slice(name.length + 1);
}
