import { randomUUID } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Duplex } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from './adb.js';
import { readAll } from './adb.js';
import { jpegSize } from '../../domain/image-size.js';

/**
 * minicap (DeviceFarmer, from @devicefarmer/minicap-prebuilt) as a phone's live screen: the phone encodes JPEGs
 * itself and pushes one whenever its screen changes, instead of answering one screencap at a time. Up to SDK 30 the
 * native binary runs with the `minicap.so` built for that SDK; from SDK 31 (where no such library exists) the
 * `minicap.apk` runs through app_process.
 */

/** One JPEG minicap sent, with its size read from the JPEG itself. */
export interface MinicapFrame {
  data: Buffer;
  format: 'jpeg';
  width: number;
  height: number;
  source: 'minicap';
  /** The phone's screen the frame shows, in the phone's pixels (what taps use); the frame may be scaled down. */
  screen: { width: number; height: number };
}

export interface MinicapOptions {
  /** The longest side of the frames, in pixels; the phone's own size when larger. */
  maxSize: number;
  /** At most this many frames per second (minicap's -r); 0 for the display's own rate. */
  maxFps: number;
  quality?: number;
}

/** Where the pushed files live: the one place the shell user may write and execute on every Android version. */
const DIR = '/data/local/tmp';
export const MINICAP_REMOTE_FILES = [`${DIR}/minicap`, `${DIR}/minicap.so`, `${DIR}/minicap.apk`];
const APK_SDK = 31;
const BANNER_SIZE = 24;
const CONNECT_ATTEMPTS = 20;
const CONNECT_RETRY_MS = 100;
/** A started minicap that prints nothing, or a socket that sends no banner, has failed. */
const START_TIMEOUT_MS = 10_000;

let prebuiltRoot: string | undefined;
function prebuilt(): string {
  prebuiltRoot ??= join(dirname(createRequire(import.meta.url).resolve('@devicefarmer/minicap-prebuilt/package.json')), 'prebuilt');
  return prebuiltRoot;
}

export interface MinicapBuild {
  /** Local file -> path and mode on the phone. */
  files: Array<{ local: string; remote: string; mode: number }>;
  /** The shell command that runs minicap with the given arguments. */
  command(args: string): string;
}

/** The build for a phone's ABI and SDK, or undefined when the package has none for it. */
export function minicapBuild(abi: string, sdk: number): MinicapBuild | undefined {
  const root = prebuilt();
  if (sdk >= APK_SDK) {
    const local = join(root, 'noarch', 'minicap.apk');
    return {
      files: [{ local, remote: `${DIR}/minicap.apk`, mode: 0o644 }],
      command: (args) => `CLASSPATH=${DIR}/minicap.apk exec app_process /system/bin io.devicefarmer.minicap.Main ${args}`,
    };
  }
  // PIE executables only from SDK 16 (Android 4.1); older linkers refuse them.
  const binary = join(root, abi, 'bin', sdk >= 16 ? 'minicap' : 'minicap-nopie');
  const library = join(root, abi, 'lib', `android-${sdk}`, 'minicap.so');
  if (!/^[\w-]+$/.test(abi) || !existsSync(binary) || !existsSync(library)) return undefined;
  return {
    files: [
      { local: binary, remote: `${DIR}/minicap`, mode: 0o755 },
      { local: library, remote: `${DIR}/minicap.so`, mode: 0o644 },
    ],
    command: (args) => `LD_LIBRARY_PATH=${DIR} exec ${DIR}/minicap ${args}`,
  };
}

/** Reads exact byte counts off a stream; fails when the stream ends or errors first. */
class ExactReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private waiter: (() => void) | undefined;
  private failure: Error | undefined;

  constructor(stream: Duplex) {
    const wake = () => {
      const w = this.waiter;
      this.waiter = undefined;
      w?.();
    };
    stream.on('data', (chunk: Buffer) => {
      this.chunks.push(chunk);
      this.buffered += chunk.length;
      wake();
    });
    stream.on('end', () => {
      this.failure ??= new Error('minicap closed its socket');
      wake();
    });
    stream.on('close', () => {
      this.failure ??= new Error('minicap closed its socket');
      wake();
    });
    stream.on('error', (error: Error) => {
      this.failure ??= error;
      wake();
    });
  }

  async read(n: number): Promise<Buffer> {
    while (this.buffered < n) {
      if (this.failure) throw this.failure;
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const out = all.subarray(0, n);
    const rest = all.subarray(n);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered -= n;
    return out;
  }
}

async function shell(client: Client, serial: string, command: string): Promise<string> {
  return (await readAll(await client.getDevice(serial).shell(command))).toString('utf8');
}

/** The natural display size (`wm size`, an override winning) and the current rotation in degrees. */
export async function displayOf(client: Client, serial: string): Promise<{ width: number; height: number; rotation: number }> {
  const size = await shell(client, serial, 'wm size');
  const m = /Override size: (\d+)x(\d+)/.exec(size) ?? /Physical size: (\d+)x(\d+)/.exec(size);
  if (!m) throw new Error(`the phone did not report its screen size: ${size.trim()}`);
  const display = await shell(client, serial, 'dumpsys display');
  const rotation = Number(/mBaseDisplayInfo=.*?rotation (\d)/.exec(display)?.[1] ?? 0);
  return { width: +m[1]!, height: +m[2]!, rotation: (rotation & 3) * 90 };
}

/**
 * minicaps started through a client whose kill at the end did not get through (the link to a provider broke, or the
 * adb server went away), by phone: the phone may have kept them running, since only the link broke. The next start
 * on that phone through the same client ends them first, so that a reconnect does not leave two running.
 */
const leftovers = new WeakMap<Client, Map<string, number[]>>();

/** The names a minicap runs under: the native binary, or app_process (app_process64/32 where that is the real file). */
const MINICAP_NAMES = 'minicap app_process app_process64 app_process32';

/**
 * Ends the minicaps this client left running on the phone. A recorded pid is killed only while a process of minicap's
 * names still has it (`pidof`), so that a pid reused after a reboot is left alone.
 */
async function endLeftovers(client: Client, serial: string): Promise<void> {
  const pids = leftovers.get(client)?.get(serial);
  if (!pids?.length) return;
  const running = new Set((await shell(client, serial, `pidof ${MINICAP_NAMES}`)).trim().split(/\s+/).map(Number));
  const stale = pids.filter((pid) => running.has(pid));
  if (stale.length > 0) await shell(client, serial, `kill ${stale.join(' ')}`);
  leftovers.get(client)?.delete(serial);
}

function rememberLeftover(client: Client, serial: string, pid: number): void {
  let bySerial = leftovers.get(client);
  if (!bySerial) leftovers.set(client, (bySerial = new Map()));
  bySerial.set(serial, [...(bySerial.get(serial) ?? []), pid]);
}

/** Pushes what the phone lacks: a file already there with the same size is the same build. */
async function pushBuild(client: Client, serial: string, build: MinicapBuild): Promise<void> {
  const device = client.getDevice(serial);
  for (const file of build.files) {
    const size = statSync(file.local).size;
    const there = await device.stat(file.remote).then((s: { size: number }) => s.size, () => -1);
    if (there === size) continue;
    const transfer = await device.push(file.local, file.remote, file.mode);
    await new Promise<void>((resolve, reject) => {
      transfer.on('end', resolve);
      transfer.on('error', reject);
    });
  }
}

/**
 * Runs minicap on the phone and yields its frames until `signal` aborts; then stops it (by the pid its banner
 * names, and by closing its shell). Throws when the phone cannot run it, so that the caller can fall back.
 */
export async function* minicapFrames(client: Client, serial: string, options: MinicapOptions, signal: AbortSignal): AsyncGenerator<MinicapFrame> {
  const device = client.getDevice(serial);
  const props = await device.getProperties();
  const preview = Number(props['ro.build.version.preview_sdk'] || 0) > 0 ? 1 : 0;
  const sdk = Number(props['ro.build.version.sdk']) + preview;
  const abi = props['ro.product.cpu.abi'] ?? '';
  const build = minicapBuild(abi, sdk);
  if (!build) throw new Error(`minicap has no build for ${abi || 'an unknown ABI'} on SDK ${sdk}`);
  const display = await displayOf(client, serial);
  const scale = Math.min(1, options.maxSize / Math.max(display.width, display.height));
  const virtual = `${Math.round(display.width * scale)}x${Math.round(display.height * scale)}`;
  await pushBuild(client, serial, build);
  // Not fatal: a phone that cannot be asked now fails at the start below anyway, and the pids stay for the next one.
  await endLeftovers(client, serial).catch(() => undefined);
  // A socket name of our own, so that a minicap left over from an earlier run (or another engine) is not ours.
  const socketName = `minicap_${randomUUID().slice(0, 8)}`;
  const args = [`-n ${socketName}`, `-P ${display.width}x${display.height}@${virtual}/${display.rotation}`, `-Q ${options.quality ?? 80}`];
  if (options.maxFps > 0) args.push(`-r ${options.maxFps}`);
  signal.throwIfAborted();

  const process = await device.shell(build.command(args.join(' ')));
  let output = '';
  let exited = false;
  const started = new Promise<void>((resolve, reject) => {
    process.on('data', (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (/^INFO:/m.test(output)) resolve();
    });
    const ended = () => {
      exited = true;
      reject(new Error(`minicap exited: ${output.trim().split('\n').slice(-2).join(' ') || 'no output'}`));
    };
    process.on('end', ended);
    process.on('close', ended);
    process.on('error', reject);
  });
  started.catch(() => undefined);
  let socket: Duplex | undefined;
  let pid: number | undefined;
  try {
    await withTimeout(started, START_TIMEOUT_MS, 'minicap did not start');
    // It prints its projection before it listens: connect until the socket answers.
    const connect = async (): Promise<Duplex> => {
      for (let attempt = 1; ; attempt++) {
        signal.throwIfAborted();
        try {
          return await device.openLocal(`localabstract:${socketName}`);
        } catch (error) {
          if (exited || attempt >= CONNECT_ATTEMPTS) throw error;
          await sleep(CONNECT_RETRY_MS);
        }
      }
    };
    const open = await connect();
    socket = open;
    const stop = () => open.destroy();
    signal.addEventListener('abort', stop, { once: true });
    try {
      const reader = new ExactReader(open);
      const banner = await withTimeout(reader.read(2), START_TIMEOUT_MS, 'minicap sent no banner');
      if (banner[0] !== 1 || banner[1]! < BANNER_SIZE) throw new Error(`unknown minicap banner version ${banner[0]} of ${banner[1]} bytes`);
      const rest = await reader.read(banner[1]! - 2);
      pid = rest.readUInt32LE(0);
      const real = { long: Math.max(rest.readUInt32LE(4), rest.readUInt32LE(8)), short: Math.min(rest.readUInt32LE(4), rest.readUInt32LE(8)) };
      while (!signal.aborted) {
        const length = (await reader.read(4)).readUInt32LE(0);
        const data = await reader.read(length);
        const size = jpegSize(data);
        if (!size) throw new Error('minicap sent a frame that is not a JPEG');
        // Frames come upright (QUIRK_ALWAYS_UPRIGHT): the screen has the frame's orientation.
        const screen = size.width > size.height ? { width: real.long, height: real.short } : { width: real.short, height: real.long };
        yield { data, format: 'jpeg', ...size, source: 'minicap', screen };
      }
    } catch (error) {
      if (signal.aborted) return;
      throw error;
    } finally {
      signal.removeEventListener('abort', stop);
    }
  } finally {
    socket?.destroy();
    // Closing its shell hangs it up on most phones; the kill by pid covers the ones that keep it running. It is sent
    // even when the shell's stream has ended: that may only mean the link to the adb server broke, not that minicap
    // exited. A kill that cannot get through now is sent at the next start on the phone.
    process.destroy();
    if (pid !== undefined) {
      const killed = await shell(client, serial, `kill ${pid} 2>/dev/null`).then(() => true, () => false);
      if (!killed) rememberLeftover(client, serial, pid);
    }
  }
}

/** Removes what minicapFrames pushed: at release, the phone is left as it was found. */
export async function removeMinicap(client: Client, serial: string): Promise<void> {
  await shell(client, serial, `rm -f ${MINICAP_REMOTE_FILES.join(' ')}`);
}

async function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([work, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
