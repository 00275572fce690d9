import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, posix } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Device } from './device.js';
import type { ProcessTable } from './processes.js';
import type { Screen } from './screen.js';
import type { CommandContext, CommandFn } from './shell.js';
import type { ServiceSession, StreamIo } from '../../protocols/adb/transport.js';

/**
 * minicap on the simulated phone (DeviceFarmer/minicap, as shipped by @devicefarmer/minicap-prebuilt): the native
 * binary with its per-SDK `minicap.so`, or `minicap.apk` through app_process. The phone recognizes the pushed files
 * by their bytes, so a host that pushes the wrong ABI's binary or another SDK's library fails as a real phone
 * would, and one that gets it right gets minicap's socket protocol: a 24-byte banner, then frames (a 32-bit
 * little-endian length and a JPEG) whenever the screen changed, at most once per display refresh.
 */

export type MinicapArtifact =
  | { kind: 'binary'; abi: string; pie: boolean }
  | { kind: 'library'; abi: string; sdk: number }
  | { kind: 'apk' };

export const MINICAP_APK_CLASS = 'io.devicefarmer.minicap.Main';
const BANNER_SIZE = 24;
const QUIRK_ALWAYS_UPRIGHT = 2;

let artifacts: Map<string, MinicapArtifact> | undefined;

/** sha256 of every file the npm package ships, read once: the phone knows minicap's builds as a linker would. */
function knownArtifacts(): Map<string, MinicapArtifact> {
  if (artifacts) return artifacts;
  artifacts = new Map();
  let root: string;
  try {
    root = join(dirname(createRequire(import.meta.url).resolve('@devicefarmer/minicap-prebuilt/package.json')), 'prebuilt');
  } catch {
    return artifacts;
  }
  const hash = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex');
  const add = (path: string, artifact: MinicapArtifact) => existsSync(path) && artifacts!.set(hash(path), artifact);
  // ELF e_type: ET_DYN (3) is a position-independent executable, ET_EXEC (2) is not; some ABIs ship one file twice.
  const pie = (path: string) => readFileSync(path).readUInt16LE(16) === 3;
  for (const abi of readdirSync(root)) {
    if (abi === 'noarch') {
      add(join(root, abi, 'minicap.apk'), { kind: 'apk' });
      continue;
    }
    for (const name of ['minicap', 'minicap-nopie']) {
      const path = join(root, abi, 'bin', name);
      if (existsSync(path)) add(path, { kind: 'binary', abi, pie: pie(path) });
    }
    const libs = join(root, abi, 'lib');
    if (!existsSync(libs)) continue;
    for (const dir of readdirSync(libs)) {
      const sdk = Number(/^android-(\d+)$/.exec(dir)?.[1]);
      if (sdk) add(join(libs, dir, 'minicap.so'), { kind: 'library', abi, sdk });
    }
  }
  return artifacts;
}

export function identifyMinicap(data: Buffer): MinicapArtifact | undefined {
  return knownArtifacts().get(createHash('sha256').update(data).digest('hex'));
}

export interface Projection {
  realWidth: number;
  realHeight: number;
  virtualWidth: number;
  virtualHeight: number;
  rotation: 0 | 90 | 180 | 270;
}

/** `-P <w>x<h>@<w>x<h>/{0|90|180|270}`, then clamped and fitted to the real aspect ratio as minicap does. */
export function parseProjection(text: string): Projection | undefined {
  const m = /^(\d+)x(\d+)@(\d+)x(\d+)\/(0|90|180|270)$/.exec(text);
  if (!m) return undefined;
  const p: Projection = { realWidth: +m[1]!, realHeight: +m[2]!, virtualWidth: +m[3]!, virtualHeight: +m[4]!, rotation: +m[5]! as Projection['rotation'] };
  p.virtualWidth = Math.min(p.virtualWidth, p.realWidth);
  p.virtualHeight = Math.min(p.virtualHeight, p.realHeight);
  const aspect = p.realWidth / p.realHeight;
  if (p.virtualHeight > Math.trunc(p.virtualWidth / aspect)) p.virtualHeight = Math.round(p.virtualWidth / aspect);
  else p.virtualWidth = Math.round(p.virtualHeight * aspect);
  const valid = p.realWidth > 0 && p.realHeight > 0 && p.virtualWidth > 0 && p.virtualHeight > 0;
  return valid ? p : undefined;
}

const showProjection = (p: Projection) => `${p.realWidth}x${p.realHeight}@${p.virtualWidth}x${p.virtualHeight}/${p.rotation}`;

/** A server socket in the abstract namespace, as `localabstract:<name>` reaches it through adbd. */
export type AbstractListener = (io: StreamIo) => ServiceSession;

interface MinicapOptions {
  name: string;
  projection?: Projection;
  quality: number;
  /** Frames per second at most (-r); the display's own rate otherwise. */
  frameRate?: number;
  info: boolean;
  screenshot: boolean;
  test: boolean;
  help: boolean;
}

function parseArgs(args: string[], defaultQuality: number): MinicapOptions | string {
  const o: MinicapOptions = { name: 'minicap', quality: defaultQuality, info: false, screenshot: false, test: false, help: false };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const value = () => args[++i] ?? '';
    switch (a) {
      case '-d':
        value();
        break;
      case '-n':
        o.name = value();
        break;
      case '-P': {
        const p = parseProjection(value());
        if (!p) return 'ERROR: invalid format for -P, need <w>x<h>@<w>x<h>/{0|90|180|270}';
        o.projection = p;
        break;
      }
      case '-Q':
        o.quality = Math.max(1, Math.min(100, Number.parseInt(value(), 10) || defaultQuality));
        break;
      case '-r': {
        const rate = Number.parseFloat(value());
        if (!(rate > 0)) return `INFO: Invalid framerate, expecting a float > 0`;
        o.frameRate = rate;
        break;
      }
      case '-s':
        o.screenshot = true;
        break;
      case '-i':
        o.info = true;
        break;
      case '-t':
        o.test = true;
        break;
      case '-S':
        break;
      case '-h':
        o.help = true;
        break;
      default:
        return `minicap: invalid option -- '${a.replace(/^-/, '')}'`;
    }
  }
  return o;
}

const USAGE =
  'Usage: %s [-h] [-n <name>]\n' +
  '  -d <id>:       Display ID. (0)\n' +
  '  -n <name>:     Change the name of the abtract unix domain socket. (minicap)\n' +
  '  -P <value>:    Display projection (<w>x<h>@<w>x<h>/{0|90|180|270}).\n' +
  '  -Q <value>:    JPEG quality (0-100).\n' +
  '  -s:            Take a screenshot and output it to stdout. Needs -P.\n' +
  '  -S:            Skip frames when they cannot be consumed quickly enough.\n' +
  '  -r <value>:    Frame rate (frames/s)' +
  '  -t:            Attempt to get the capture method running, then exit.\n' +
  '  -i:            Get display information in JSON format. May segfault.\n' +
  '  -h:            Show help.\n';

export interface MinicapHost {
  device: Device;
  screen: Screen;
  processes: ProcessTable;
  sockets: Map<string, AbstractListener>;
}

/** The frame minicap's virtual display shows: the screen scaled to the projection, upright (QUIRK_ALWAYS_UPRIGHT). */
function frameSize(host: MinicapHost, p: Projection): { width: number; height: number } {
  const { width, height } = host.device.logicalSize;
  const landscape = width > height;
  const vw = landscape === p.virtualWidth > p.virtualHeight ? p.virtualWidth : p.virtualHeight;
  const vh = vw === p.virtualWidth ? p.virtualHeight : p.virtualWidth;
  return { width: vw, height: vh };
}

function displayInfo(host: MinicapHost, flavour: 'native' | 'apk'): string {
  const d = host.device;
  const { width, height } = d.logicalSize;
  const density = d.options.density;
  const rotation = d.rotation * 90;
  if (flavour === 'apk') {
    return `{\n   "id": 0,\n   "width": ${width},\n   "height": ${height},\n   "xdpi": ${density.toFixed(1)},\n   "ydpi": ${density.toFixed(1)},\n   "density": ${density},\n   "rotation": ${d.rotation}\n}\n\n`;
  }
  const inches = Math.hypot(d.options.width, d.options.height) / density;
  const fields = [
    ['id', '0'],
    ['width', String(width)],
    ['height', String(height)],
    ['xdpi', density.toFixed(2)],
    ['ydpi', density.toFixed(2)],
    ['size', inches.toFixed(2)],
    ['density', (density / 160).toFixed(2)],
    ['fps', d.options.refreshRate.toFixed(2)],
    ['secure', 'true'],
    ['rotation', String(rotation)],
  ];
  return `{\n${fields.map(([k, v]) => `    "${k}": ${v}`).join(',\n')}\n}\n`;
}

/**
 * Runs minicap with `args` on behalf of a shell command: prints display info, takes a screenshot, or serves the
 * abstract socket until the process is killed or its adb shell stream closes.
 */
async function minicapMain(ctx: CommandContext, host: MinicapHost, flavour: 'native' | 'apk', argv0: string): Promise<number> {
  const err = (line: string) => ctx.stderr.write(line.endsWith('\n') ? line : `${line}\n`);
  const parsed = parseArgs(ctx.args, flavour === 'apk' ? 100 : 80);
  if (typeof parsed === 'string') {
    await err(parsed);
    await err(USAGE.replace('%s', argv0));
    return 1;
  }
  const o = parsed;
  if (o.help) {
    await (flavour === 'apk' ? ctx.stdout : ctx.stderr).write(USAGE.replace('%s', argv0));
    return 0;
  }
  if (o.info) {
    await ctx.stdout.write(displayInfo(host, flavour));
    return 0;
  }
  const p = o.projection;
  if (!p) {
    await err('ERROR: missing or invalid -P');
    return 1;
  }
  if (!host.device.options.minicapCapture) {
    await err(`PID: ${4000 + Math.floor(Math.random() * 1000)}`);
    await err('ERROR: (jni/minicap/minicap.cpp:365: errno: Permission denied) Unable to start minicap with current config');
    return 1;
  }
  if (o.screenshot) {
    const { width, height } = frameSize(host, p);
    await ctx.stdout.write(await host.screen.jpeg(width, height, o.quality));
    return 0;
  }
  if (o.test) {
    await ctx.stdout.write('OK\n');
    return 0;
  }
  const name = flavour === 'apk' ? 'app_process' : posix.basename(argv0);
  const proc = host.processes.spawn(name, ctx.signal);
  try {
    await err(`PID: ${proc.pid}`);
    await err(flavour === 'apk' ? `INFO: ${showProjection(p)}` : `INFO: Using projection ${showProjection(p)}`);
    if (host.sockets.has(o.name)) {
      await err(`ERROR: (jni/minicap/minicap.cpp:485: errno: Address already in use) Unable to start server on namespace '${o.name}'`);
      return 1;
    }
    const banner = Buffer.alloc(BANNER_SIZE);
    banner[0] = 1;
    banner[1] = BANNER_SIZE;
    banner.writeUInt32LE(proc.pid, 2);
    banner.writeUInt32LE(p.realWidth, 6);
    banner.writeUInt32LE(p.realHeight, 10);
    banner.writeUInt32LE(p.virtualWidth, 14);
    banner.writeUInt32LE(p.virtualHeight, 18);
    banner[22] = p.rotation / 90;
    banner[23] = QUIRK_ALWAYS_UPRIGHT;
    // The native server accepts clients one after another; the apk's accepts exactly one, ever.
    let queue: Promise<void> = Promise.resolve();
    let served = 0;
    host.sockets.set(o.name, (io) => {
      const turn = served++;
      if (flavour === 'native' || turn === 0) {
        queue = queue.then(() => serveClient(io, banner, host, p, o, proc.signal));
      } else {
        // Connected but never accepted: the socket only closes when the process goes.
        proc.signal.addEventListener('abort', () => void io.end(), { once: true });
      }
      return {};
    });
    await new Promise<void>((resolve) => {
      if (proc.signal.aborted) resolve();
      else proc.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    host.sockets.delete(o.name);
    await err(flavour === 'apk' ? 'INFO: stopping' : 'INFO: (jni/minicap/minicap.cpp:266) Received SIGTERM, stopping');
    await queue;
    return 0;
  } finally {
    host.sockets.delete(o.name);
    proc.exit();
  }
}

/** One client: the banner, then a frame whenever the screen changed, checked once per display refresh. */
async function serveClient(io: StreamIo, banner: Buffer, host: MinicapHost, p: Projection, o: MinicapOptions, stop: AbortSignal): Promise<void> {
  if (io.signal.aborted || stop.aborted) return io.end();
  await io.write(banner);
  const period = 1000 / Math.min(host.device.options.refreshRate, o.frameRate ?? Infinity);
  let last: string | undefined;
  while (!io.signal.aborted && !stop.aborted) {
    const started = performance.now();
    const key = host.screen.key();
    if (key !== last) {
      last = key;
      const { width, height } = frameSize(host, p);
      const jpg = await host.screen.jpeg(width, height, o.quality);
      const length = Buffer.alloc(4);
      length.writeUInt32LE(jpg.length);
      await io.write(Buffer.concat([length, jpg]));
    }
    const wait = period - (performance.now() - started);
    await sleep(Math.max(1, wait));
    // A still screen: nothing to send until something changes or the clock turns a minute.
    if (last !== undefined && !io.signal.aborted && !stop.aborted) await host.screen.stillUntil(last, 60_000, AbortSignal.any([io.signal, stop]));
  }
  await io.end();
}

/** The shell's loader for files run by path: minicap's builds, with the linker's and the kernel's refusals. */
export function executableLoader(host: MinicapHost): (path: string, ctx: CommandContext) => CommandFn | undefined {
  const { device } = host;
  const abis = (device.props.get('ro.product.cpu.abilist') ?? '').split(',');
  return (path, ctx) => {
    const st = ctx.fs.stat(path);
    if (!st || st.kind !== 'file') return undefined;
    const data = ctx.fs.readFile(path);
    const artifact = identifyMinicap(data);
    return async (run) => {
      const fail = async (message: string, status: number) => {
        await run.stderr.write(`${message}\n`);
        return status;
      };
      if ((st.mode & 0o111) === 0) return fail(`/system/bin/sh: ${path}: can't execute: Permission denied`, 126);
      if (artifact?.kind !== 'binary') {
        const elf = data.subarray(0, 4).equals(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
        return fail(`/system/bin/sh: ${path}: ${elf ? 'not executable: unknown ELF' : "can't execute: Exec format error"}`, 126);
      }
      if (!abis.includes(artifact.abi)) {
        const bits = artifact.abi.includes('64') ? '64' : '32';
        return fail(`/system/bin/sh: ${path}: not executable: ${bits}-bit ELF file`, 126);
      }
      if (artifact.pie === false && device.options.sdk >= 21) {
        return fail(`error: only position independent executables (PIE) are supported.`, 1);
      }
      const library = findLibrary(run, artifact.abi);
      if (!library) return fail(`CANNOT LINK EXECUTABLE "${path}": library "minicap.so" not found`, 1);
      if (library.artifact?.kind !== 'library' || library.artifact.abi !== artifact.abi) {
        return fail(`CANNOT LINK EXECUTABLE "${path}": "${library.path}" is for a different architecture`, 1);
      }
      if (library.artifact.sdk !== device.options.sdk) {
        // A library built against another release's private SurfaceFlinger API: the symbols are not there.
        return fail(`CANNOT LINK EXECUTABLE "${path}": cannot locate symbol "_ZN7android14SurfaceComposerClient13createDisplayERKNS_7String8Eb" referenced by "${library.path}"...`, 1);
      }
      return minicapMain(run, host, 'native', path);
    };
  };
}

function findLibrary(ctx: CommandContext, abi: string): { path: string; artifact: MinicapArtifact | undefined } | undefined {
  const system = abi.includes('64') ? ['/system/lib64', '/vendor/lib64'] : ['/system/lib', '/vendor/lib'];
  const dirs = [...(ctx.vars.get('LD_LIBRARY_PATH') ?? '').split(':').filter(Boolean), ...system];
  for (const dir of dirs) {
    const path = posix.join(ctx.fs.resolve(dir, ctx.cwd), 'minicap.so');
    if (ctx.fs.stat(path)?.kind === 'file') return { path, artifact: identifyMinicap(ctx.fs.readFile(path)) };
  }
  return undefined;
}

/**
 * `app_process [vm-options] <cmd-dir> <class> [args]`, with CLASSPATH naming the jar or apk to load the class from.
 * Only minicap.apk's main class is loadable here.
 */
export function appProcess(host: MinicapHost): CommandFn {
  return async (ctx) => {
    const words = ctx.args.filter((a, i) => !(a.startsWith('-') && ctx.args.slice(0, i).every((b) => b.startsWith('-'))));
    const [, className, ...rest] = words;
    const classpath = ctx.vars.get('CLASSPATH') ?? '';
    if (!className) {
      await ctx.stderr.write('Usage: app_process [java-options] cmd-dir start-class-name [options]\n');
      return 1;
    }
    const jar = classpath.split(':').filter(Boolean).map((p) => ctx.fs.resolve(p, ctx.cwd)).find((p) => ctx.fs.stat(p)?.kind === 'file');
    const loaded = jar !== undefined && identifyMinicap(ctx.fs.readFile(jar))?.kind === 'apk' && className === MINICAP_APK_CLASS;
    if (!loaded) {
      await ctx.stderr.write(`Error: Could not find or load main class ${className}\nCaused by: java.lang.ClassNotFoundException: ${className}\n`);
      return 1;
    }
    return minicapMain({ ...ctx, args: rest }, host, 'apk', 'minicap');
  };
}
