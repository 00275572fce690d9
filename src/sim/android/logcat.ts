import type { CommandContext } from './shell.js';

/**
 * The phone's main log buffer and the `logcat` tool over it: what the system and apps log as the phone does
 * things (taps, key presses, app starts, installs), in logcat's own formats, dumped or followed.
 */

export type LogPriority = 'V' | 'D' | 'I' | 'W' | 'E' | 'F';

export interface LogEntry {
  /** Milliseconds since the epoch. */
  time: number;
  pid: number;
  tid: number;
  priority: LogPriority;
  tag: string;
  message: string;
}

/** system_server, where ActivityManager, PackageManager, InputDispatcher and BatteryService log from. */
export const SYSTEM_SERVER_PID = 1432;
const CAPACITY = 5000;
const PRIORITIES: LogPriority[] = ['V', 'D', 'I', 'W', 'E', 'F'];

export class LogBuffer {
  private entries: LogEntry[] = [];
  private readonly followers = new Set<(entry: LogEntry) => void>();

  append(priority: LogPriority, tag: string, message: string, pid = SYSTEM_SERVER_PID, tid = pid + 17): void {
    const entry = { time: Date.now(), pid, tid, priority, tag, message };
    this.entries.push(entry);
    if (this.entries.length > CAPACITY) this.entries.splice(0, this.entries.length - CAPACITY);
    for (const follow of this.followers) follow(entry);
  }

  clear(): void {
    this.entries = [];
  }

  all(): LogEntry[] {
    return [...this.entries];
  }

  follow(listener: (entry: LogEntry) => void): () => void {
    this.followers.add(listener);
    return () => this.followers.delete(listener);
  }
}

interface Format {
  name: 'threadtime' | 'brief' | 'time' | 'tag' | 'process' | 'raw';
  year: boolean;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** The phone's timezone is UTC (persist.sys.timezone), so local and UTC times are the same here. */
function timestamp(time: number, year: boolean): string {
  const d = new Date(time);
  const date = `${year ? `${d.getUTCFullYear()}-` : ''}${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  return `${date} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${pad(d.getUTCMilliseconds(), 3)}`;
}

/** One entry as logcat prints it (logprint.cpp's formats). */
export function formatEntry(e: LogEntry, format: Format): string {
  switch (format.name) {
    case 'brief':
      return `${e.priority}/${e.tag}(${String(e.pid).padStart(5)}): ${e.message}`;
    case 'time':
      return `${timestamp(e.time, format.year)} ${e.priority}/${e.tag}(${String(e.pid).padStart(5)}): ${e.message}`;
    case 'tag':
      return `${e.priority}/${e.tag}: ${e.message}`;
    case 'process':
      return `${e.priority}(${String(e.pid).padStart(5)}) ${e.message}  (${e.tag})`;
    case 'raw':
      return e.message;
    case 'threadtime':
      return `${timestamp(e.time, format.year)} ${String(e.pid).padStart(5)} ${String(e.tid).padStart(5)} ${e.priority} ${e.tag.padEnd(8)}: ${e.message}`;
  }
}

const USAGE = 'Usage: logcat [options] [filterspecs]\n  -c  clear the log\n  -d  dump the log and exit\n  -t <count>  print the most recent <count> lines and exit\n  -T <count>  print the most recent <count> lines and keep following\n  -v <format>  brief process tag raw time threadtime, with the modifiers year and UTC\n  -s  silence every tag not named in filterspecs\n';

/** `logcat [-c] [-d] [-t N] [-T N] [-v format]... [-s] [-b buffer] [tag:priority]...` */
export async function logcat(ctx: CommandContext, log: LogBuffer): Promise<number> {
  const format: Format = { name: 'threadtime', year: false };
  let dump = false;
  let tail: number | undefined;
  let silent = false;
  const specs: Array<{ tag: string; min: number }> = [];
  const args = ctx.args;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    const value = () => args[++i] ?? '';
    if (a === '-c') {
      log.clear();
      return 0;
    } else if (a === '-d') dump = true;
    else if (a === '-s') silent = true;
    else if (a === '-b') value();
    else if (a === '-t' || a === '-T') {
      const n = Number.parseInt(value(), 10);
      if (!(n > 0)) {
        await ctx.stderr.write(`logcat: ${a} needs a positive count\n${USAGE}`);
        return 1;
      }
      tail = n;
      if (a === '-t') dump = true;
    } else if (a === '-v' || a.startsWith('-v')) {
      for (const word of (a === '-v' ? value() : a.slice(2)).split(',')) {
        if (word === 'year') format.year = true;
        else if (word === 'UTC' || word === 'color' || word === 'printable' || word === 'uid') continue;
        else if (['threadtime', 'brief', 'time', 'tag', 'process', 'raw'].includes(word)) format.name = word as Format['name'];
        else {
          await ctx.stderr.write(`logcat: Invalid parameter "${word}" to -v\n`);
          return 1;
        }
      }
    } else if (/^[^-][^:]*(:[VDIWEFS*])?$/.test(a)) {
      const [tag, level = 'V'] = a.split(':');
      specs.push({ tag: tag!, min: level === 'S' ? 99 : level === '*' ? 0 : PRIORITIES.indexOf(level as LogPriority) });
    } else {
      await ctx.stderr.write(`logcat: unknown option ${a}\n${USAGE}`);
      return 1;
    }
  }
  const shown = (e: LogEntry) => {
    const spec = specs.find((s) => s.tag === e.tag) ?? specs.find((s) => s.tag === '*');
    const min = spec ? spec.min : silent ? 99 : 0;
    return PRIORITIES.indexOf(e.priority) >= min;
  };
  const print = (e: LogEntry) => ctx.stdout.write(`${formatEntry(e, format)}\n`);
  await ctx.stdout.write('--------- beginning of main\n');
  const backlog = log.all().filter(shown);
  // Followed from here, so that nothing logged while the backlog is written is lost.
  const live: LogEntry[] = [];
  let wake: (() => void) | undefined;
  const onAbort = () => wake?.();
  ctx.signal.addEventListener('abort', onAbort, { once: true });
  const unfollow = dump ? () => undefined : log.follow((e) => {
    if (!shown(e)) return;
    live.push(e);
    wake?.();
  });
  try {
    for (const e of tail === undefined ? backlog : backlog.slice(-tail)) await print(e);
    if (dump) return 0;
    while (!ctx.signal.aborted) {
      while (live.length > 0) await print(live.shift()!);
      if (live.length > 0) continue;
      await new Promise<void>((resolve) => {
        wake = resolve;
        if (ctx.signal.aborted) resolve();
      });
      wake = undefined;
    }
    return 0;
  } finally {
    unfollow();
    ctx.signal.removeEventListener('abort', onAbort);
  }
}
