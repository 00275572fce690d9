import { posix } from 'node:path';
import { FsError, type MemFs } from './mem-fs.js';

/**
 * A small POSIX-ish shell in the style of Android's mksh: enough grammar for what ADB clients send
 * (`a && b`, `a; b`, `a || b`, `|`, redirections such as `2>/dev/null`, quoting, `$VAR`, simple globs,
 * `while`/`until`/`if` loops as in adbkit's `while getprop sys.boot_completed; do sleep 1; done`).
 */

export interface Sink {
  write(data: Buffer | string): void | Promise<void>;
}

export interface CommandContext {
  args: string[];
  stdin: Buffer;
  stdout: Sink;
  stderr: Sink;
  vars: Map<string, string>;
  signal: AbortSignal;
  cwd: string;
  fs: MemFs;
  /** Runs a nested script (`sh -c`) with this context's streams. */
  run(script: string): Promise<number>;
}

export type CommandFn = (ctx: CommandContext) => number | Promise<number>;

export const SHELL = '/system/bin/sh';

// ---------------------------------------------------------------------------------------------------------
// Lexer

type Part = { kind: 'lit'; text: string; quoted: boolean } | { kind: 'var'; name: string; quoted: boolean };

interface WordToken {
  t: 'word';
  parts: Part[];
}
interface OpToken {
  t: 'op';
  v: '&&' | '||' | ';' | '&' | '|' | '\n' | '(' | ')';
}
interface RedirToken {
  t: 'redir';
  fd: number;
  op: '>' | '>>' | '<' | '>&' | '<&' | '&>';
}
type Token = WordToken | OpToken | RedirToken;

export class ShellSyntaxError extends Error {}

function isNameChar(c: string, first: boolean): boolean {
  return /[A-Za-z_]/.test(c) || (!first && /[0-9]/.test(c));
}

function lex(src: string): Token[] {
  const tokens: Token[] = [];
  let parts: Part[] | undefined;
  let i = 0;

  const lit = (text: string, quoted: boolean) => {
    parts ??= [];
    const last = parts[parts.length - 1];
    if (last && last.kind === 'lit' && last.quoted === quoted) last.text += text;
    else parts.push({ kind: 'lit', text, quoted });
  };
  const endWord = () => {
    if (parts) tokens.push({ t: 'word', parts });
    parts = undefined;
  };
  const readVar = (quoted: boolean) => {
    // at src[i] === '$'
    const next = src[i + 1];
    if (next === '{') {
      const close = src.indexOf('}', i + 2);
      if (close < 0) throw new ShellSyntaxError("missing '}'");
      parts ??= [];
      parts.push({ kind: 'var', name: src.slice(i + 2, close), quoted });
      i = close + 1;
      return;
    }
    if (next !== undefined && (next === '?' || next === '$' || next === '#' || /[0-9]/.test(next))) {
      parts ??= [];
      parts.push({ kind: 'var', name: next, quoted });
      i += 2;
      return;
    }
    if (next !== undefined && isNameChar(next, true)) {
      let j = i + 1;
      while (j < src.length && isNameChar(src[j]!, false)) j++;
      parts ??= [];
      parts.push({ kind: 'var', name: src.slice(i + 1, j), quoted });
      i = j;
      return;
    }
    lit('$', quoted);
    i++;
  };

  while (i < src.length) {
    const c = src[i]!;
    if (c === ' ' || c === '\t' || c === '\r') {
      endWord();
      i++;
      continue;
    }
    if (c === '#' && !parts) {
      while (i < src.length && src[i] !== '\n') i++;
      continue;
    }
    if (c === '\\') {
      if (src[i + 1] === '\n') {
        i += 2;
        continue;
      }
      if (i + 1 < src.length) lit(src[i + 1]!, true);
      i += 2;
      continue;
    }
    if (c === "'") {
      const close = src.indexOf("'", i + 1);
      if (close < 0) throw new ShellSyntaxError("unterminated '");
      lit(src.slice(i + 1, close), true);
      i = close + 1;
      continue;
    }
    if (c === '"') {
      i++;
      parts ??= [];
      lit('', true);
      for (;;) {
        if (i >= src.length) throw new ShellSyntaxError('unterminated "');
        const d = src[i]!;
        if (d === '"') {
          i++;
          break;
        }
        if (d === '\\' && i + 1 < src.length && '$`"\\\n'.includes(src[i + 1]!)) {
          if (src[i + 1] !== '\n') lit(src[i + 1]!, true);
          i += 2;
          continue;
        }
        if (d === '$') {
          readVar(true);
          continue;
        }
        lit(d, true);
        i++;
      }
      continue;
    }
    if (c === '$') {
      readVar(false);
      continue;
    }
    if (c === '>' || c === '<') {
      let fd = c === '>' ? 1 : 0;
      const onlyDigits = parts?.length === 1 && parts[0]!.kind === 'lit' && !parts[0]!.quoted && /^\d$/.test(parts[0]!.text);
      if (onlyDigits) {
        fd = Number((parts![0] as { text: string }).text);
        parts = undefined;
      } else {
        endWord();
      }
      let op: RedirToken['op'];
      if (c === '>' && src[i + 1] === '>') {
        op = '>>';
        i += 2;
      } else if (src[i + 1] === '&') {
        op = c === '>' ? '>&' : '<&';
        i += 2;
      } else {
        op = c;
        i += 1;
        if (c === '>' && src[i] === '|') i++;
      }
      tokens.push({ t: 'redir', fd, op });
      continue;
    }
    if (c === '&' && src[i + 1] === '>') {
      endWord();
      tokens.push({ t: 'redir', fd: 1, op: '&>' });
      i += 2;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (two === '&&' || two === '||') {
      endWord();
      tokens.push({ t: 'op', v: two });
      i += 2;
      continue;
    }
    if (c === ';' || c === '&' || c === '|' || c === '\n' || c === '(' || c === ')') {
      endWord();
      tokens.push({ t: 'op', v: c });
      i++;
      continue;
    }
    lit(c, false);
    i++;
  }
  endWord();
  return tokens;
}

// ---------------------------------------------------------------------------------------------------------
// Parser

interface Redirect {
  fd: number;
  op: RedirToken['op'];
  target: WordToken;
}
interface SimpleCommand {
  kind: 'simple';
  assigns: Array<{ name: string; value: WordToken }>;
  words: WordToken[];
  redirects: Redirect[];
}
interface LoopCommand {
  kind: 'loop';
  until: boolean;
  cond: List;
  body: List;
  redirects: Redirect[];
}
interface IfCommand {
  kind: 'if';
  branches: Array<{ cond: List; body: List }>;
  otherwise?: List;
  redirects: Redirect[];
}
interface SubshellCommand {
  kind: 'subshell';
  body: List;
  redirects: Redirect[];
}
type Command = SimpleCommand | LoopCommand | IfCommand | SubshellCommand;
interface Pipeline {
  negate: boolean;
  commands: Command[];
}
interface AndOr {
  first: Pipeline;
  rest: Array<{ op: '&&' | '||'; pipeline: Pipeline }>;
}
type List = AndOr[];

const RESERVED = new Set(['while', 'until', 'do', 'done', 'if', 'then', 'elif', 'else', 'fi', '!']);

function plainWord(tok: Token | undefined): string | undefined {
  if (tok?.t !== 'word' || tok.parts.length !== 1) return undefined;
  const p = tok.parts[0]!;
  return p.kind === 'lit' && !p.quoted ? p.text : undefined;
}

class Parser {
  private pos = 0;
  constructor(private readonly tokens: Token[]) {}

  parseScript(): List {
    const list = this.parseList(new Set());
    const rest = this.tokens[this.pos];
    if (rest) throw new ShellSyntaxError(`unexpected '${describeToken(rest)}'`);
    return list;
  }

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private skipSeparators(): void {
    for (let t = this.peek(); t?.t === 'op' && (t.v === ';' || t.v === '\n' || t.v === '&'); t = this.peek()) this.pos++;
  }

  private parseList(stop: Set<string>): List {
    const list: List = [];
    for (;;) {
      this.skipSeparators();
      const t = this.peek();
      if (!t) break;
      if (t.t === 'op' && t.v === ')') break;
      const word = plainWord(t);
      if (word !== undefined && stop.has(word)) break;
      list.push(this.parseAndOr());
      const sep = this.peek();
      if (sep?.t === 'op' && (sep.v === ';' || sep.v === '\n' || sep.v === '&')) continue;
      break;
    }
    return list;
  }

  private parseAndOr(): AndOr {
    const first = this.parsePipeline();
    const rest: AndOr['rest'] = [];
    for (let t = this.peek(); t?.t === 'op' && (t.v === '&&' || t.v === '||'); t = this.peek()) {
      this.pos++;
      while (this.peek()?.t === 'op' && (this.peek() as OpToken).v === '\n') this.pos++;
      rest.push({ op: t.v, pipeline: this.parsePipeline() });
    }
    return { first, rest };
  }

  private parsePipeline(): Pipeline {
    let negate = false;
    if (plainWord(this.peek()) === '!') {
      negate = true;
      this.pos++;
    }
    const commands = [this.parseCommand()];
    for (let t = this.peek(); t?.t === 'op' && t.v === '|'; t = this.peek()) {
      this.pos++;
      commands.push(this.parseCommand());
    }
    return { negate, commands };
  }

  private expectWord(word: string): void {
    this.skipSeparators();
    if (plainWord(this.peek()) !== word) {
      const t = this.peek();
      throw new ShellSyntaxError(t ? `unexpected '${describeToken(t)}'` : `unexpected end of input, expecting '${word}'`);
    }
    this.pos++;
  }

  private parseCommand(): Command {
    const t = this.peek();
    const word = plainWord(t);
    if (word === 'while' || word === 'until') {
      this.pos++;
      const cond = this.parseList(new Set(['do']));
      this.expectWord('do');
      const body = this.parseList(new Set(['done']));
      this.expectWord('done');
      return { kind: 'loop', until: word === 'until', cond, body, redirects: this.parseRedirects() };
    }
    if (word === 'if') {
      this.pos++;
      const branches: IfCommand['branches'] = [];
      let otherwise: List | undefined;
      for (;;) {
        const cond = this.parseList(new Set(['then']));
        this.expectWord('then');
        const body = this.parseList(new Set(['elif', 'else', 'fi']));
        branches.push({ cond, body });
        this.skipSeparators();
        const next = plainWord(this.peek());
        this.pos++;
        if (next === 'elif') continue;
        if (next === 'else') {
          otherwise = this.parseList(new Set(['fi']));
          this.expectWord('fi');
        } else if (next !== 'fi') {
          throw new ShellSyntaxError("unexpected end of input, expecting 'fi'");
        }
        break;
      }
      return { kind: 'if', branches, otherwise, redirects: this.parseRedirects() };
    }
    if (t?.t === 'op' && t.v === '(') {
      this.pos++;
      const body = this.parseList(new Set());
      const close = this.peek();
      if (close?.t !== 'op' || close.v !== ')') throw new ShellSyntaxError("unexpected end of input, expecting ')'");
      this.pos++;
      return { kind: 'subshell', body, redirects: this.parseRedirects() };
    }
    if (word !== undefined && RESERVED.has(word) && word !== '!') throw new ShellSyntaxError(`unexpected '${word}'`);
    const cmd: SimpleCommand = { kind: 'simple', assigns: [], words: [], redirects: [] };
    for (;;) {
      const tok = this.peek();
      if (!tok || tok.t === 'op') break;
      if (tok.t === 'redir') {
        cmd.redirects.push(this.parseRedirect());
        continue;
      }
      this.pos++;
      const first = tok.parts[0];
      if (cmd.words.length === 0 && first?.kind === 'lit' && !first.quoted) {
        const m = /^([A-Za-z_][A-Za-z0-9_]*)=/.exec(first.text);
        if (m) {
          const valueParts: Part[] = [{ ...first, text: first.text.slice(m[0].length) }, ...tok.parts.slice(1)];
          cmd.assigns.push({ name: m[1]!, value: { t: 'word', parts: valueParts } });
          continue;
        }
      }
      cmd.words.push(tok);
    }
    if (cmd.words.length === 0 && cmd.assigns.length === 0 && cmd.redirects.length === 0) {
      const bad = this.peek();
      throw new ShellSyntaxError(bad ? `unexpected '${describeToken(bad)}'` : 'unexpected end of input');
    }
    return cmd;
  }

  private parseRedirects(): Redirect[] {
    const out: Redirect[] = [];
    while (this.peek()?.t === 'redir') out.push(this.parseRedirect());
    return out;
  }

  private parseRedirect(): Redirect {
    const tok = this.tokens[this.pos++] as RedirToken;
    const target = this.peek();
    if (target?.t !== 'word') throw new ShellSyntaxError(`unexpected ${target ? `'${describeToken(target)}'` : 'end of input'}`);
    this.pos++;
    return { fd: tok.fd, op: tok.op, target };
  }
}

function describeToken(t: Token): string {
  if (t.t === 'op') return t.v === '\n' ? 'newline' : t.v;
  if (t.t === 'redir') return t.op;
  return t.parts.map((p) => (p.kind === 'lit' ? p.text : `$${p.name}`)).join('');
}

// ---------------------------------------------------------------------------------------------------------
// Interpreter

class ExitSignal {
  constructor(readonly status: number) {}
}

/** `break n` / `continue n` unwinding to the n-th enclosing loop. */
class LoopSignal {
  constructor(
    readonly kind: 'break' | 'continue',
    public levels: number,
  ) {}
}

export class BufferSink implements Sink {
  private readonly chunks: Buffer[] = [];
  write(data: Buffer | string): void {
    this.chunks.push(typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  }
  contents(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

export const NULL_SINK: Sink = { write() {} };

export interface ShellSession {
  vars: Map<string, string>;
  cwd: string;
}

interface State {
  vars: Map<string, string>;
  cwd: string;
  status: number;
  signal: AbortSignal;
}

interface Streams {
  stdin: Buffer;
  stdout: Sink;
  stderr: Sink;
}

/** Resolves a file run by its path (`/data/local/tmp/minicap`) to what executing it does, or undefined if absent. */
export type ExecutableLoader = (path: string, ctx: CommandContext) => CommandFn | undefined;

export class Shell {
  constructor(
    private readonly fs: MemFs,
    private readonly commands: Map<string, CommandFn>,
    private readonly baseVars: Record<string, string> = {},
    private readonly loadExecutable?: ExecutableLoader,
  ) {}

  /** Variables and working directory that outlive one command line, for an interactive shell. */
  session(): ShellSession {
    return { vars: new Map(Object.entries(this.baseVars)), cwd: '/' };
  }

  /**
   * What Tab completes `word` to, as mksh does: a command name for the first word of a line (unless it is a path),
   * else the names in the word's directory; a directory's name ends with '/'.
   */
  completions(word: string, session: ShellSession, firstWord: boolean): string[] {
    if (firstWord && !word.includes('/')) return [...this.commands.keys()].filter((name) => name.startsWith(word)).sort();
    const slash = word.lastIndexOf('/');
    const dir = word.slice(0, slash + 1);
    const prefix = word.slice(slash + 1);
    try {
      const folder = this.fs.resolve(dir || '.', session.cwd);
      // Android's storage names (/sdcard) are links to folders: completed as the folders they lead to.
      const names = [...this.fs.list(folder).map((entry) => ({ name: entry.name, dir: entry.kind === 'dir' })), ...this.fs.aliasesIn(folder).map((name) => ({ name, dir: true }))];
      return names
        .filter((entry) => entry.name.startsWith(prefix) && (prefix.startsWith('.') || !entry.name.startsWith('.')))
        .map((entry) => `${dir}${entry.name}${entry.dir ? '/' : ''}`)
        .sort();
    } catch (err) {
      if (err instanceof FsError) return [];
      throw err;
    }
  }

  /** Runs a command line the way `adb shell` hands it to /system/bin/sh -c. Returns the exit status. */
  async run(
    script: string,
    io: { stdout: Sink; stderr?: Sink; stdin?: Buffer; signal?: AbortSignal; session?: ShellSession },
  ): Promise<number> {
    const session = io.session ?? this.session();
    const state: State = { vars: session.vars, cwd: session.cwd, status: 0, signal: io.signal ?? new AbortController().signal };
    const streams: Streams = { stdin: io.stdin ?? Buffer.alloc(0), stdout: io.stdout, stderr: io.stderr ?? io.stdout };
    try {
      return await this.runScript(script, state, streams);
    } finally {
      session.cwd = state.cwd;
    }
  }

  private async runScript(script: string, state: State, streams: Streams): Promise<number> {
    let list: List;
    try {
      list = new Parser(lex(script)).parseScript();
    } catch (err) {
      if (!(err instanceof ShellSyntaxError)) throw err;
      await streams.stderr.write(`${SHELL}: syntax error: ${err.message}\n`);
      return 1;
    }
    try {
      return await this.runList(list, state, streams);
    } catch (err) {
      if (err instanceof ExitSignal) return err.status;
      if (err instanceof LoopSignal) return 0;
      throw err;
    }
  }

  private async runList(list: List, state: State, streams: Streams): Promise<number> {
    for (const item of list) {
      if (state.signal.aborted) break;
      await this.runAndOr(item, state, streams);
    }
    return state.status;
  }

  private async runAndOr(item: AndOr, state: State, streams: Streams): Promise<number> {
    let status = await this.runPipeline(item.first, state, streams);
    for (const { op, pipeline } of item.rest) {
      if ((op === '&&') === (status === 0)) status = await this.runPipeline(pipeline, state, streams);
    }
    return status;
  }

  private async runPipeline(pipeline: Pipeline, state: State, streams: Streams): Promise<number> {
    let stdin = streams.stdin;
    let status = 0;
    for (let i = 0; i < pipeline.commands.length; i++) {
      const last = i === pipeline.commands.length - 1;
      const pipe = last ? undefined : new BufferSink();
      status = await this.runCommand(pipeline.commands[i]!, state, { stdin, stdout: pipe ?? streams.stdout, stderr: streams.stderr });
      if (pipe) stdin = pipe.contents();
    }
    if (pipeline.negate) status = status === 0 ? 1 : 0;
    state.status = status;
    return status;
  }

  private async runCommand(cmd: Command, state: State, streams: Streams): Promise<number> {
    const redirected = await this.applyRedirects(cmd.redirects, state, streams);
    if (!redirected) return (state.status = 1);
    const { streams: io, finish } = redirected;
    try {
      switch (cmd.kind) {
        case 'loop': {
          let status = 0;
          while (!state.signal.aborted) {
            const cond = await this.runList(cmd.cond, state, io);
            if ((cond === 0) === cmd.until) break;
            try {
              status = await this.runList(cmd.body, state, io);
            } catch (err) {
              if (!(err instanceof LoopSignal)) throw err;
              if (--err.levels > 0) throw err;
              if (err.kind === 'break') break;
            }
          }
          return (state.status = status);
        }
        case 'if': {
          for (const branch of cmd.branches) {
            if ((await this.runList(branch.cond, state, io)) === 0) return this.runList(branch.body, state, io);
          }
          state.status = 0;
          return cmd.otherwise ? this.runList(cmd.otherwise, state, io) : 0;
        }
        case 'subshell': {
          const inner: State = { ...state, vars: new Map(state.vars) };
          try {
            return (state.status = await this.runList(cmd.body, inner, io));
          } catch (err) {
            if (err instanceof ExitSignal) return (state.status = err.status);
            throw err;
          }
        }
        case 'simple':
          return (state.status = await this.runSimple(cmd, state, io));
      }
    } finally {
      await finish();
    }
  }

  private async runSimple(cmd: SimpleCommand, state: State, io: Streams): Promise<number> {
    const words: string[] = [];
    for (const w of cmd.words) words.push(...this.expand(w, state));
    const assigned = cmd.assigns.map(({ name, value }) => [name, this.expand(value, state, false).join('')] as const);
    if (words.length === 0) {
      for (const [name, value] of assigned) state.vars.set(name, value);
      return 0;
    }
    const vars = new Map(state.vars);
    for (const [name, value] of assigned) vars.set(name, value);
    // `exec cmd` replaces the shell with cmd; here that is simply running it, as the last thing the script does.
    if (words[0] === 'exec' && words.length > 1) words.shift();
    const [name, ...args] = words as [string, ...string[]];
    switch (name) {
      case 'exit':
        throw new ExitSignal(args[0] !== undefined ? Number(args[0]) & 0xff : state.status);
      case 'break':
      case 'continue':
        throw new LoopSignal(name, Math.max(1, Number(args[0] ?? 1) || 1));
      case 'cd': {
        const target = this.fs.resolve(args[0] ?? '/', state.cwd);
        if (this.fs.stat(target)?.kind !== 'dir') {
          await io.stderr.write(`${SHELL}: cd: ${args[0]}: No such file or directory\n`);
          return 2;
        }
        state.cwd = target;
        return 0;
      }
      case 'export':
        for (const arg of args) {
          const eq = arg.indexOf('=');
          if (eq > 0) state.vars.set(arg.slice(0, eq), arg.slice(eq + 1));
        }
        return 0;
    }
    const base = name.startsWith('/system/bin/') || name.startsWith('/system/xbin/') ? posix.basename(name) : name;
    let fn = name.includes('/') && base === name ? undefined : this.commands.get(base);
    const ctx: CommandContext = {
      args,
      stdin: io.stdin,
      stdout: io.stdout,
      stderr: io.stderr,
      vars,
      signal: state.signal,
      cwd: state.cwd,
      fs: this.fs,
      run: (script) => this.runScript(script, { ...state, vars: new Map(vars), status: 0 }, io),
    };
    if (!fn && name.includes('/')) fn = this.loadExecutable?.(this.fs.resolve(name, state.cwd), ctx);
    if (!fn) {
      await io.stderr.write(`${SHELL}: ${name}: inaccessible or not found\n`);
      return 127;
    }
    return fn(ctx);
  }

  /** Word expansion: variables, then a glob on the last path segment when it has unquoted wildcards. */
  private expand(word: WordToken, state: State, glob = true): string[] {
    let text = '';
    let pattern = '';
    let wild = false;
    for (const part of word.parts) {
      const value =
        part.kind === 'lit'
          ? part.text
          : part.name === '?'
            ? String(state.status)
            : part.name === '$'
              ? '4242'
              : part.name === '#'
                ? '0'
                : (state.vars.get(part.name) ?? '');
      text += value;
      if (part.kind === 'lit' && !part.quoted && /[*?]/.test(value)) {
        wild = true;
        pattern += value.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*').replace(/\?/g, '[^/]');
      } else {
        pattern += value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      }
    }
    if (!glob || !wild) return [text];
    const slash = text.lastIndexOf('/');
    const dir = slash < 0 ? state.cwd : text.slice(0, slash) || '/';
    const prefix = slash < 0 ? '' : text.slice(0, slash + 1);
    const re = new RegExp(`^${pattern}$`);
    let names: string[];
    try {
      names = this.fs.list(this.fs.resolve(dir, state.cwd)).map((e) => e.name);
    } catch {
      return [text];
    }
    const matches = names.map((n) => prefix + n).filter((p) => re.test(p) && !posix.basename(p).startsWith('.'));
    return matches.length > 0 ? matches : [text];
  }

  private async applyRedirects(
    redirects: Redirect[],
    state: State,
    streams: Streams,
  ): Promise<{ streams: Streams; finish: () => Promise<void> } | undefined> {
    const io: Streams = { ...streams };
    const files: Array<{ path: string; sink: BufferSink; append: boolean }> = [];
    const sinkFor = (fd: number) => (fd === 2 ? io.stderr : io.stdout);
    for (const r of redirects) {
      const target = this.expand(r.target, state, false).join('');
      if (r.op === '>&' || r.op === '<&') {
        if (r.op === '>&' && /^\d$/.test(target)) {
          const sink = sinkFor(Number(target));
          if (r.fd === 2) io.stderr = sink;
          else if (r.fd === 1) io.stdout = sink;
          continue;
        }
        if (target === '-') continue;
      }
      if (r.op === '<') {
        if (target === '/dev/null') {
          io.stdin = Buffer.alloc(0);
          continue;
        }
        try {
          io.stdin = this.fs.readFile(this.fs.resolve(target, state.cwd));
        } catch (err) {
          await streams.stderr.write(`${SHELL}: can't open ${target}: ${(err as Error).message}\n`);
          return undefined;
        }
        continue;
      }
      let sink: Sink;
      if (target === '/dev/null') sink = NULL_SINK;
      else if (target === '/dev/stdout') sink = streams.stdout;
      else if (target === '/dev/stderr') sink = streams.stderr;
      else {
        const path = this.fs.resolve(target, state.cwd);
        const append = r.op === '>>';
        try {
          if (append && this.fs.stat(path)) this.fs.appendFile(path, Buffer.alloc(0));
          else this.fs.writeFile(path, Buffer.alloc(0));
        } catch (err) {
          const reason = err instanceof FsError ? err.message : String(err);
          await streams.stderr.write(`${SHELL}: can't create ${target}: ${reason}\n`);
          return undefined;
        }
        const fileSink = new BufferSink();
        files.push({ path, sink: fileSink, append });
        sink = fileSink;
      }
      if (r.op === '&>') {
        io.stdout = sink;
        io.stderr = sink;
      } else if (r.fd === 2) io.stderr = sink;
      else if (r.fd === 1) io.stdout = sink;
    }
    return {
      streams: io,
      finish: async () => {
        for (const f of files) {
          const data = f.sink.contents();
          if (f.append) this.fs.appendFile(f.path, data);
          else this.fs.writeFile(f.path, data);
        }
      },
    };
  }
}
