import { setTimeout as sleep } from 'node:timers/promises';
import type { MinicapHost } from './minicap.js';
import { mp4OfJpegs, type Mp4Frame } from '../../protocols/mp4-mjpeg.js';
import type { CommandFn } from './shell.js';

/** How often the simulated recorder looks at the screen; a frame is kept only when the picture changed. */
const POLL_MS = 50;
/** screenrecord's own limit, and its default: three minutes. */
const MAX_TIME_LIMIT_S = 180;
const USAGE = 'Usage: screenrecord [options] <filename>\n\nAndroid screenrecord v1.3.  Records the device\'s display to a .mp4 file.\n';

/**
 * `screenrecord [--time-limit N] [--size WxH] [--bit-rate R] [--verbose] <file>`: records the screen until the time
 * limit, a kill, or the hang-up when its adb stream closes (screenrecord catches SIGINT and SIGHUP and finishes the
 * file, which is how `adb shell screenrecord` ended with Ctrl+C leaves a playable MP4). The file is written when
 * recording stops, as the real muxer writes its moov box last.
 */
export function screenrecord(host: MinicapHost): CommandFn {
  return async (ctx) => {
    let timeLimit = MAX_TIME_LIMIT_S;
    let size: { width: number; height: number } | undefined;
    let file: string | undefined;
    const args = [...ctx.args];
    while (args.length > 0) {
      const arg = args.shift()!;
      if (arg === '--time-limit') timeLimit = Number(args.shift());
      else if (arg === '--size') {
        const m = /^(\d+)x(\d+)$/.exec(args.shift() ?? '');
        if (!m) return (await ctx.stderr.write('Invalid size specified\n'), 2);
        size = { width: +m[1]!, height: +m[2]! };
      } else if (arg === '--bit-rate') args.shift();
      else if (arg === '--verbose' || arg === '--bugreport' || arg === '--rotate') continue;
      else if (arg === '--help') return (await ctx.stdout.write(USAGE), 0);
      else if (arg.startsWith('-')) return (await ctx.stderr.write(`Unknown option ${arg}\n${USAGE}`), 2);
      else file = arg;
    }
    if (!Number.isInteger(timeLimit) || timeLimit < 1 || timeLimit > MAX_TIME_LIMIT_S) {
      await ctx.stderr.write(`Time limit ${timeLimit}s outside acceptable range [1,${MAX_TIME_LIMIT_S}] seconds\n`);
      return 2;
    }
    if (!file) return (await ctx.stderr.write(`Must specify output file (see --help).\n`), 2);
    const path = ctx.fs.resolve(file, ctx.cwd);
    if (!ctx.fs.isWritable(path)) {
      await ctx.stderr.write(`Unable to open '${file}': Permission denied\n`);
      return 1;
    }
    // A portrait frame of the phone's logical screen, halved: small enough to encode in a few milliseconds.
    const screen = host.device.logicalSize;
    const width = size?.width ?? Math.max(2, Math.round(screen.width / 2 / 2) * 2);
    const height = size?.height ?? Math.max(2, Math.round(screen.height / 2 / 2) * 2);
    const proc = host.processes.spawn('screenrecord', ctx.signal);
    const frames: Array<Mp4Frame & { at: number }> = [];
    const deadline = Date.now() + timeLimit * 1000;
    let key: string | undefined;
    try {
      // The first frame is taken at once, so that even a recording stopped straight away has a picture.
      do {
        if (host.screen.key() !== key) {
          key = host.screen.key();
          frames.push({ jpeg: await host.screen.jpeg(width, height, 80), durationMs: 0, at: Date.now() });
        }
        await sleep(POLL_MS, undefined, { signal: proc.signal }).catch(() => undefined);
      } while (!proc.signal.aborted && Date.now() < deadline);
      const end = Date.now();
      frames.forEach((f, i) => (f.durationMs = (frames[i + 1]?.at ?? end) - f.at));
      ctx.fs.writeFile(path, mp4OfJpegs(frames, width, height));
      return 0;
    } finally {
      proc.exit();
    }
  };
}
