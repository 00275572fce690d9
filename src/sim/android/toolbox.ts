import { createHash } from 'node:crypto';
import { posix } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { FsError } from './mem-fs.js';
import type { CommandContext, CommandFn } from './shell.js';

/** The toybox commands ADB clients lean on, with toybox's messages and exit statuses. */

async function print(ctx: CommandContext, text: string | Buffer): Promise<void> {
  await ctx.stdout.write(text);
}

async function complain(ctx: CommandContext, text: string): Promise<void> {
  await ctx.stderr.write(text.endsWith('\n') ? text : text + '\n');
}

function reason(err: unknown): string {
  return err instanceof FsError ? err.message : String(err);
}

/** Splits `-abc` style flags from operands; flags listed in `withValue` take the next word. */
function parseFlags(args: string[], withValue = ''): { flags: Map<string, string>; operands: string[] } {
  const flags = new Map<string, string>();
  const operands: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      operands.push(...args.slice(i + 1));
      break;
    }
    if (a.length > 1 && a.startsWith('-') && !/^-\d/.test(a)) {
      for (let j = 1; j < a.length; j++) {
        const f = a[j]!;
        if (withValue.includes(f)) {
          const rest = a.slice(j + 1);
          flags.set(f, rest || (args[++i] ?? ''));
          break;
        }
        flags.set(f, '');
      }
      continue;
    }
    operands.push(a);
  }
  return { flags, operands };
}

function readInput(ctx: CommandContext, path: string): Buffer {
  if (path === '-') return ctx.stdin;
  if (path === '/dev/null') return Buffer.alloc(0);
  return ctx.fs.readFile(ctx.fs.resolve(path, ctx.cwd));
}

/** toybox prints `cmd: path: reason` and carries on with the next operand. */
async function eachInput(ctx: CommandContext, name: string, paths: string[], fn: (data: Buffer, path: string) => Promise<void> | void) {
  let status = 0;
  for (const p of paths.length > 0 ? paths : ['-']) {
    let data: Buffer;
    try {
      data = readInput(ctx, p);
    } catch (err) {
      await complain(ctx, `${name}: ${p}: ${reason(err)}`);
      status = 1;
      continue;
    }
    await fn(data, p);
  }
  return status;
}

function lines(data: Buffer): string[] {
  const text = data.toString('utf8');
  if (text === '') return [];
  const parts = text.split('\n');
  if (parts[parts.length - 1] === '') parts.pop();
  return parts;
}

function echoEscapes(s: string): { text: string; stop: boolean } {
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c !== '\\' || i + 1 >= s.length) {
      out += c;
      continue;
    }
    const n = s[++i]!;
    const map: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', a: '\x07', b: '\b', f: '\f', v: '\v', e: '\x1b' };
    if (n === 'c') return { text: out, stop: true };
    out += map[n] ?? `\\${n}`;
  }
  return { text: out, stop: false };
}

function lsMode(kind: 'file' | 'dir', mode: number): string {
  const bits = ['r', 'w', 'x'];
  let s = kind === 'dir' ? 'd' : '-';
  for (let i = 8; i >= 0; i--) s += mode & (1 << i) ? bits[(8 - i) % 3] : '-';
  return s;
}

function formatDate(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

/** BRE to JavaScript: in a basic regex `+ ? | ( ) { }` are literal unless escaped. */
function breToJs(pattern: string): string {
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\' && i + 1 < pattern.length) {
      const n = pattern[++i]!;
      out += '+?|(){}'.includes(n) ? n : `\\${n}`;
    } else if ('+?|(){}'.includes(c)) {
      out += `\\${c}`;
    } else {
      out += c;
    }
  }
  return out;
}

const grep: CommandFn = async (ctx) => {
  const patterns: string[] = [];
  const args = [...ctx.args];
  const opts = new Set<string>();
  const operands: string[] = [];
  let maxCount = Infinity;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '-e') patterns.push(args[++i] ?? '');
    // -m NUM: stop after NUM matching lines (toybox grep; the engine reads the resumed activity with -m 1).
    else if (a === '-m') maxCount = Number(args[++i]);
    else if (/^-m\d+$/.test(a)) maxCount = Number(a.slice(2));
    else if (a.startsWith('-') && a.length > 1) {
      for (const f of a.slice(1)) opts.add(f);
    } else operands.push(a);
  }
  if (patterns.length === 0) {
    if (operands.length === 0) {
      await complain(ctx, 'usage: grep [-EFivwcnqo] [-e REGEX]... [REGEX] [FILE...]');
      return 2;
    }
    patterns.push(operands.shift()!);
  }
  const flags = opts.has('i') ? 'i' : '';
  const sources = patterns.map((p) => {
    let src = opts.has('F') ? p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') : opts.has('E') ? p : breToJs(p);
    if (opts.has('w')) src = `\\b(?:${src})\\b`;
    if (opts.has('x')) src = `^(?:${src})$`;
    return src;
  });
  let re: RegExp;
  try {
    re = new RegExp(sources.map((s) => `(?:${s})`).join('|'), flags);
  } catch {
    await complain(ctx, `grep: bad regex '${patterns[0]}'`);
    return 2;
  }
  let matched = 0;
  const multi = operands.length > 1;
  const status = await eachInput(ctx, 'grep', operands, async (data, path) => {
    let count = 0;
    const all = lines(data);
    for (let n = 0; n < all.length && count < maxCount; n++) {
      const line = all[n]!;
      const hit = re.test(line) !== opts.has('v');
      if (!hit) continue;
      count++;
      matched++;
      if (opts.has('q') || opts.has('c') || opts.has('l')) continue;
      const prefix = (multi ? `${path}:` : '') + (opts.has('n') ? `${n + 1}:` : '');
      if (opts.has('o')) {
        for (const m of line.matchAll(new RegExp(re.source, flags + 'g'))) await print(ctx, `${prefix}${m[0]}\n`);
      } else {
        await print(ctx, `${prefix}${line}\n`);
      }
    }
    if (opts.has('c')) await print(ctx, `${multi ? `${path}:` : ''}${count}\n`);
    if (opts.has('l') && count > 0) await print(ctx, `${path}\n`);
  });
  if (status !== 0 && !opts.has('s')) return 2;
  return matched > 0 ? 0 : 1;
};

function countOption(args: string[]): { count: number; operands: string[]; bytes: boolean } {
  let count = 10;
  let bytes = false;
  const operands: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (/^-\d+$/.test(a)) count = Number(a.slice(1));
    else if (a === '-n' || a === '-c') {
      bytes = a === '-c';
      count = Number(args[++i]);
    } else if (/^-[nc]\d+$/.test(a)) {
      bytes = a[1] === 'c';
      count = Number(a.slice(2));
    } else operands.push(a);
  }
  return { count, operands, bytes };
}

const head: CommandFn = (ctx) => {
  const { count, operands, bytes } = countOption(ctx.args);
  return eachInput(ctx, 'head', operands, async (data) => {
    if (bytes) return print(ctx, data.subarray(0, count));
    const text = data.toString('utf8');
    let idx = -1;
    for (let n = 0; n < count; n++) {
      idx = text.indexOf('\n', idx + 1);
      if (idx < 0) return print(ctx, data);
    }
    await print(ctx, text.slice(0, idx + 1));
  });
};

const tail: CommandFn = (ctx) => {
  const { count, operands, bytes } = countOption(ctx.args);
  return eachInput(ctx, 'tail', operands, async (data) => {
    if (bytes) return print(ctx, data.subarray(Math.max(0, data.length - count)));
    const all = lines(data);
    const picked = all.slice(Math.max(0, all.length - count));
    if (picked.length) await print(ctx, picked.join('\n') + '\n');
  });
};

const cat: CommandFn = (ctx) => eachInput(ctx, 'cat', ctx.args.filter((a) => a !== '-u'), (data) => print(ctx, data));

const echo: CommandFn = async (ctx) => {
  let args = ctx.args;
  let newline = true;
  let escapes = false;
  while (args[0] && /^-[neE]+$/.test(args[0])) {
    for (const f of args[0].slice(1)) {
      if (f === 'n') newline = false;
      if (f === 'e') escapes = true;
      if (f === 'E') escapes = false;
    }
    args = args.slice(1);
  }
  let text = args.join(' ');
  if (escapes) {
    const r = echoEscapes(text);
    text = r.text;
    if (r.stop) newline = false;
  }
  await print(ctx, newline ? text + '\n' : text);
  return 0;
};

const printf: CommandFn = async (ctx) => {
  const [format = '', ...values] = ctx.args;
  let i = 0;
  const once = () =>
    echoEscapes(
      format.replace(/%([-0-9]*)([sdxc%])/g, (_m, _w, conv: string) => {
        if (conv === '%') return '%';
        const v = values[i++] ?? '';
        if (conv === 'd') return String(Number.parseInt(v, 10) || 0);
        if (conv === 'x') return (Number.parseInt(v, 10) || 0).toString(16);
        if (conv === 'c') return v.charAt(0);
        return v;
      }),
    ).text;
  let out = once();
  while (i > 0 && i < values.length) out += once();
  await print(ctx, out);
  return 0;
};

const ls: CommandFn = async (ctx) => {
  const { flags, operands } = parseFlags(ctx.args);
  const long = flags.has('l');
  const all = flags.has('a');
  const dirAsFile = flags.has('d');
  const targets = operands.length > 0 ? operands : ['.'];
  let status = 0;
  const fmt = (name: string, st: { kind: 'file' | 'dir'; mode: number; size: number; mtime: number }) =>
    long
      ? `${lsMode(st.kind, st.mode)} ${st.kind === 'dir' ? 2 : 1} shell shell ${String(st.size).padStart(8)} ${formatDate(new Date(st.mtime * 1000))} ${name}\n`
      : `${name}\n`;
  for (const [n, target] of targets.entries()) {
    const path = ctx.fs.resolve(target, ctx.cwd);
    const st = ctx.fs.stat(path);
    if (!st) {
      await complain(ctx, `ls: ${target}: No such file or directory`);
      status = 1;
      continue;
    }
    if (st.kind === 'file' || dirAsFile) {
      await print(ctx, fmt(target, st));
      continue;
    }
    if (targets.length > 1) await print(ctx, `${n > 0 ? '\n' : ''}${target}:\n`);
    const entries = ctx.fs.list(path).filter((e) => all || !e.name.startsWith('.'));
    if (long) await print(ctx, `total ${entries.length * 8}\n`);
    for (const e of entries) await print(ctx, fmt(e.name, e));
  }
  return status;
};

const rm: CommandFn = async (ctx) => {
  const { flags, operands } = parseFlags(ctx.args);
  const force = flags.has('f');
  const recursive = flags.has('r') || flags.has('R');
  let status = 0;
  for (const target of operands) {
    try {
      ctx.fs.remove(ctx.fs.resolve(target, ctx.cwd), { recursive });
    } catch (err) {
      if (force && err instanceof FsError && err.code === 'ENOENT') continue;
      await complain(ctx, `rm: ${target}: ${reason(err)}`);
      status = 1;
    }
  }
  return status;
};

/**
 * toybox's `find PATH... [-mindepth N] [-maxdepth N] [-type f|d] [-print]`: each path the walk meets, a folder before
 * what is in it, named from the operand as given. A missing operand is an error on stderr, and the walk goes on.
 */
const find: CommandFn = async (ctx) => {
  const paths: string[] = [];
  let i = 0;
  for (; i < ctx.args.length && !ctx.args[i]!.startsWith('-'); i++) paths.push(ctx.args[i]!);
  let minDepth = 0;
  let maxDepth = Infinity;
  let type: 'file' | 'dir' | undefined;
  for (; i < ctx.args.length; i++) {
    const [option, value] = [ctx.args[i]!, ctx.args[i + 1]];
    if (option === '-print') continue;
    if (value === undefined) {
      await complain(ctx, `find: '${option}' needs 1 arg`);
      return 1;
    }
    i++;
    if (option === '-mindepth' || option === '-maxdepth') {
      if (!/^\d+$/.test(value)) {
        await complain(ctx, `find: not integer '${value}'`);
        return 1;
      }
      if (option === '-mindepth') minDepth = Number(value);
      else maxDepth = Number(value);
    } else if (option === '-type' && (value === 'f' || value === 'd')) {
      type = value === 'f' ? 'file' : 'dir';
    } else {
      await complain(ctx, `find: bad arg '${option}'`);
      return 1;
    }
  }
  let status = 0;
  const lines: string[] = [];
  const walk = (path: string, shown: string, depth: number) => {
    const st = ctx.fs.stat(path);
    if (!st) return;
    if (depth >= minDepth && (!type || st.kind === type)) lines.push(shown);
    if (st.kind !== 'dir' || depth >= maxDepth) return;
    for (const e of ctx.fs.list(path)) walk(posix.join(path, e.name), `${shown.endsWith('/') ? shown : shown + '/'}${e.name}`, depth + 1);
  };
  for (const operand of paths.length > 0 ? paths : ['.']) {
    const path = ctx.fs.resolve(operand, ctx.cwd);
    if (!ctx.fs.stat(path)) {
      await complain(ctx, `find: '${operand}': No such file or directory`);
      status = 1;
      continue;
    }
    walk(path, operand, 0);
  }
  if (lines.length) await print(ctx, lines.join('\n') + '\n');
  return status;
};

const mkdir: CommandFn = async (ctx) => {
  const { flags, operands } = parseFlags(ctx.args, 'm');
  let status = 0;
  for (const target of operands) {
    try {
      ctx.fs.mkdir(ctx.fs.resolve(target, ctx.cwd), flags.has('p'));
    } catch (err) {
      await complain(ctx, `mkdir: '${target}': ${reason(err)}`);
      status = 1;
    }
  }
  return status;
};

const touch: CommandFn = async (ctx) => {
  let status = 0;
  for (const target of parseFlags(ctx.args).operands) {
    const path = ctx.fs.resolve(target, ctx.cwd);
    try {
      const st = ctx.fs.stat(path);
      if (st?.kind === 'dir') continue;
      ctx.fs.writeFile(path, st ? ctx.fs.readFile(path) : Buffer.alloc(0));
    } catch (err) {
      await complain(ctx, `touch: '${target}': ${reason(err)}`);
      status = 1;
    }
  }
  return status;
};

function copyOrMove(name: 'cp' | 'mv'): CommandFn {
  return async (ctx) => {
    const { operands } = parseFlags(ctx.args);
    if (operands.length < 2) {
      await complain(ctx, `${name}: Needs 2 arguments`);
      return 1;
    }
    const dest = operands.pop()!;
    const destPath = ctx.fs.resolve(dest, ctx.cwd);
    const destIsDir = ctx.fs.stat(destPath)?.kind === 'dir';
    let status = 0;
    for (const src of operands) {
      const srcPath = ctx.fs.resolve(src, ctx.cwd);
      const target = destIsDir ? posix.join(destPath, posix.basename(srcPath)) : destPath;
      try {
        const data = ctx.fs.readFile(srcPath);
        ctx.fs.writeFile(target, data);
        if (name === 'mv') ctx.fs.remove(srcPath);
      } catch (err) {
        await complain(ctx, `${name}: ${src}: ${reason(err)}`);
        status = 1;
      }
    }
    return status;
  };
}

const chmod: CommandFn = async (ctx) => {
  const { operands } = parseFlags(ctx.args);
  const [mode, ...targets] = operands;
  // Octal modes only: what hosts send (chmod 755, chmod 0755) before running a pushed binary.
  const octal = /^[0-7]{3,4}$/.test(mode ?? '') ? Number.parseInt(mode!, 8) : undefined;
  let status = 0;
  for (const target of targets) {
    const path = ctx.fs.resolve(target, ctx.cwd);
    const st = ctx.fs.stat(path);
    if (!st) {
      await complain(ctx, `chmod: ${target}: No such file or directory`);
      status = 1;
    } else if (octal !== undefined && st.kind === 'file') {
      try {
        ctx.fs.writeFile(path, ctx.fs.readFile(path), { mode: octal, mtime: st.mtime });
      } catch {
        await complain(ctx, `chmod: ${target}: Operation not permitted`);
        status = 1;
      }
    }
  }
  return status;
};

const sleep: CommandFn = async (ctx) => {
  const seconds = Number.parseFloat(ctx.args[0] ?? '');
  if (!Number.isFinite(seconds) || seconds < 0) {
    await complain(ctx, `sleep: invalid time interval '${ctx.args[0] ?? ''}'`);
    return 1;
  }
  try {
    await delay(seconds * 1000, undefined, { signal: ctx.signal });
  } catch {
    return 130;
  }
  return 0;
};

function digest(algorithm: 'md5' | 'sha1' | 'sha256', name: string): CommandFn {
  return (ctx) =>
    eachInput(ctx, name, ctx.args, (data, path) => print(ctx, `${createHash(algorithm).update(data).digest('hex')}  ${path}\n`));
}

const wc: CommandFn = async (ctx) => {
  const { flags, operands } = parseFlags(ctx.args);
  const pick = flags.size > 0 ? flags : new Map([['l', ''], ['w', ''], ['c', '']]);
  return eachInput(ctx, 'wc', operands, async (data, path) => {
    const counts: number[] = [];
    if (pick.has('l')) counts.push(data.toString('utf8').split('\n').length - 1);
    if (pick.has('w')) counts.push(data.toString('utf8').split(/\s+/).filter(Boolean).length);
    if (pick.has('c')) counts.push(data.length);
    const cols = counts.map((n) => (counts.length > 1 ? String(n).padStart(7) : String(n)));
    await print(ctx, cols.join(' ') + (path === '-' ? '' : ` ${path}`) + '\n');
  });
};

const date: CommandFn = async (ctx) => {
  const now = new Date();
  const fmt = ctx.args.find((a) => a.startsWith('+'));
  const p = (n: number) => String(n).padStart(2, '0');
  if (fmt) {
    const out = fmt.slice(1).replace(/%([sYmdHMSz%])/g, (_m, c: string) => {
      switch (c) {
        case 's':
          return String(Math.floor(now.getTime() / 1000));
        case 'Y':
          return String(now.getFullYear());
        case 'm':
          return p(now.getMonth() + 1);
        case 'd':
          return p(now.getDate());
        case 'H':
          return p(now.getHours());
        case 'M':
          return p(now.getMinutes());
        case 'S':
          return p(now.getSeconds());
        case 'z':
          return '+0000';
        default:
          return '%';
      }
    });
    await print(ctx, out + '\n');
    return 0;
  }
  const day = now.toLocaleDateString('en-US', { weekday: 'short', timeZone: 'UTC' });
  const mon = now.toLocaleDateString('en-US', { month: 'short', timeZone: 'UTC' });
  await print(
    ctx,
    `${day} ${mon} ${String(now.getUTCDate()).padStart(2)} ${p(now.getUTCHours())}:${p(now.getUTCMinutes())}:${p(now.getUTCSeconds())} UTC ${now.getUTCFullYear()}\n`,
  );
  return 0;
};

const test: CommandFn = async (ctx) => {
  let args = ctx.args;
  if (args[args.length - 1] === ']') args = args.slice(0, -1);
  const negate = args[0] === '!';
  if (negate) args = args.slice(1);
  const stat = (p: string) => ctx.fs.stat(ctx.fs.resolve(p, ctx.cwd));
  let ok: boolean;
  if (args.length === 0) ok = false;
  else if (args.length === 1) ok = args[0] !== '';
  else if (args.length === 2) {
    const [op, v = ''] = args;
    ok =
      op === '-z' ? v === '' : op === '-n' ? v !== '' : op === '-e' ? !!stat(v) : op === '-f' ? stat(v)?.kind === 'file' : op === '-d' ? stat(v)?.kind === 'dir' : op === '-s' ? (stat(v)?.size ?? 0) > 0 : false;
  } else {
    const [a = '', op, b = ''] = args;
    const na = Number(a);
    const nb = Number(b);
    const table: Record<string, boolean> = {
      '=': a === b,
      '==': a === b,
      '!=': a !== b,
      '-eq': na === nb,
      '-ne': na !== nb,
      '-lt': na < nb,
      '-le': na <= nb,
      '-gt': na > nb,
      '-ge': na >= nb,
    };
    ok = table[op ?? ''] ?? false;
  }
  return ok !== negate ? 0 : 1;
};

export function toolbox(knownCommands: () => Iterable<string>): Map<string, CommandFn> {
  const commands = new Map<string, CommandFn>([
    ['cat', cat],
    ['echo', echo],
    ['printf', printf],
    ['ls', ls],
    ['rm', rm],
    ['find', find],
    ['mkdir', mkdir],
    ['touch', touch],
    ['cp', copyOrMove('cp')],
    ['mv', copyOrMove('mv')],
    ['chmod', chmod],
    ['sleep', sleep],
    ['grep', grep],
    ['head', head],
    ['tail', tail],
    ['wc', wc],
    ['md5sum', digest('md5', 'md5sum')],
    ['sha1sum', digest('sha1', 'sha1sum')],
    ['sha256sum', digest('sha256', 'sha256sum')],
    ['date', date],
    ['test', test],
    ['[', test],
    ['true', () => 0],
    ['false', () => 1],
    ['pwd', async (ctx) => (await print(ctx, ctx.cwd + '\n'), 0)],
    ['id', async (ctx) => (await print(ctx, 'uid=2000(shell) gid=2000(shell) groups=2000(shell),1004(input),1007(log),1011(adb),1015(sdcard_rw),1028(sdcard_r),3001(net_bt_admin),3002(net_bt),3003(inet) context=u:r:shell:s0\n'), 0)],
    ['whoami', async (ctx) => (await print(ctx, 'shell\n'), 0)],
    // toybox's clear: the terminal's own erase-display and cursor-home sequences, whatever $TERM says.
    ['clear', async (ctx) => (await print(ctx, '\x1b[2J\x1b[H'), 0)],
    ['env', async (ctx) => (await print(ctx, [...ctx.vars].map(([name, value]) => `${name}=${value}\n`).join('')), 0)],
    [
      'uname',
      async (ctx) => {
        const a = ctx.args.includes('-a');
        const r = ctx.args.includes('-r');
        const m = ctx.args.includes('-m');
        const text = a ? 'Linux localhost 5.10.157-android13-4 #1 SMP PREEMPT aarch64 Toybox' : r ? '5.10.157-android13-4' : m ? 'aarch64' : 'Linux';
        await print(ctx, text + '\n');
        return 0;
      },
    ],
    [
      'which',
      async (ctx) => {
        const known = new Set(knownCommands());
        let status = 0;
        for (const name of ctx.args) {
          if (known.has(name)) await print(ctx, `/system/bin/${name}\n`);
          else status = 1;
        }
        return status;
      },
    ],
    ['sh', async (ctx) => {
      const c = ctx.args.indexOf('-c');
      if (c >= 0) return ctx.run(ctx.args[c + 1] ?? '');
      return ctx.run(ctx.stdin.toString('utf8'));
    }],
  ]);
  return commands;
}
