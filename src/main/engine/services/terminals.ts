import type { ClientChannel } from 'ssh2';
import { conflict, ServiceError } from '../domain/errors.js';
import type { InstanceShell } from '../fleet/macos/host.js';

export interface TerminalSize {
  cols: number;
  rows: number;
}

/** The largest side a client may ask for; more is a mistake, not a screen. */
export const MAX_TERMINAL_SIDE = 1000;
/** What a (re)connecting viewer is shown before live output: about a screenful of scrollback, or a few. */
export const REPLAY_BYTES = 64 * 1024;
/**
 * A viewer with more output than this not yet flushed to its socket pauses the shell, which stops reading from SSH,
 * which stops the window, which stops the command: a `cat` of a huge file waits for the slowest viewer.
 */
export const MAX_UNFLUSHED_BYTES = 1024 * 1024;
/** The shell resumes once every viewer is below this, so that it is not toggled on every chunk. */
const RESUME_BELOW_BYTES = 256 * 1024;
/** A viewer that keeps the shell paused this long (a laptop asleep) is dropped, so that the others go on. */
const STALL_MS = 30_000;
/** Distinct named shells per instance: tabs in a GUI, not an unbounded number of SSH connections. */
export const MAX_SHELLS_PER_INSTANCE = 8;

/** Why a terminal ended for its viewers. */
export type TerminalEnd = 'shell_exited' | 'instance_released' | 'connection_lost' | 'fell_behind' | 'shutdown';

/** A connected viewer, as its transport (a WebSocket) implements it. */
export interface TerminalViewer {
  /** Output, in order. `flushed` is called once the bytes have left this process: flow control counts on it. */
  output(data: Buffer, flushed: () => void): void;
  /** The shell's size: on joining, and after any viewer resized it. */
  size(size: TerminalSize): void;
  end(why: TerminalEnd): void;
}

/** What a viewer does to the shell it joined. */
export interface TerminalSeat {
  /** Keystrokes. false: the shell is not keeping up; read no more input until `resume` is called. */
  input(data: Buffer, resume: () => void): boolean;
  resize(size: TerminalSize): void;
  leave(): void;
}

export interface SharedTerminal {
  /** Replays the recent output to the viewer, then sends it live output until it leaves or the terminal ends. */
  join(viewer: TerminalViewer): TerminalSeat;
}

/** The newest `capacity` bytes of output, in a buffer of that size whatever the output's volume. */
class Ring {
  private readonly buffer: Buffer;
  private end = 0;
  private full = false;

  constructor(capacity: number) {
    this.buffer = Buffer.alloc(capacity);
  }

  write(chunk: Buffer): void {
    const capacity = this.buffer.length;
    if (chunk.length >= capacity) {
      chunk.copy(this.buffer, 0, chunk.length - capacity);
      this.end = 0;
      this.full = true;
      return;
    }
    const first = Math.min(chunk.length, capacity - this.end);
    chunk.copy(this.buffer, this.end, 0, first);
    chunk.copy(this.buffer, 0, first);
    this.full ||= this.end + chunk.length >= capacity;
    this.end = (this.end + chunk.length) % capacity;
  }

  contents(): Buffer {
    if (!this.full) return Buffer.from(this.buffer.subarray(0, this.end));
    return Buffer.concat([this.buffer.subarray(this.end), this.buffer.subarray(0, this.end)]);
  }
}

const LEFT: TerminalSeat = { input: () => true, resize: () => undefined, leave: () => undefined };

/** One PTY shell on an instance, over its own SSH connection, and the viewers it fans out to. */
class Terminal implements SharedTerminal {
  private readonly viewers = new Map<TerminalViewer, { unflushed: number }>();
  private readonly ring = new Ring(REPLAY_BYTES);
  private shell: InstanceShell | undefined;
  private stream: ClientChannel | undefined;
  private ended = false;
  /** Why it ended, for a viewer that joins just after; null when it closed idle. */
  private why: TerminalEnd | null = null;
  private paused = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private stallTimer: NodeJS.Timeout | undefined;

  constructor(
    readonly instanceId: string,
    private size: TerminalSize,
    private readonly idleMs: number,
    private readonly onEnd: () => void,
  ) {}

  async open(connect: () => Promise<InstanceShell>): Promise<void> {
    const shell = await connect();
    this.shell = shell;
    if (this.ended) return shell.close();
    shell.ssh.whenClosed(() => this.end('connection_lost'));
    const pty = { term: 'xterm-256color', ...this.size };
    // A bare host's instance is its work dir: a login shell started there rather than in the home dir.
    const stream = await shell.ssh.shell(pty, shell.commandPrefix ? `${shell.commandPrefix}exec "\${SHELL:-/bin/sh}" -l` : undefined);
    if (this.ended) return void stream.close();
    this.stream = stream;
    let exited = false;
    // With a PTY, sshd sends stderr on the channel itself; the stderr stream is read all the same, never left to fill.
    for (const source of [stream, stream.stderr]) source.on('data', (chunk: Buffer) => this.output(chunk));
    stream.on('exit', () => (exited = true));
    stream.on('close', () => this.end(exited ? 'shell_exited' : 'connection_lost'));
    // A write racing the channel's close; the close itself ends the terminal.
    stream.on('error', () => undefined);
    this.idleUnlessWatched();
  }

  join(viewer: TerminalViewer): TerminalSeat {
    if (this.ended) {
      viewer.end(this.why ?? 'connection_lost');
      return LEFT;
    }
    clearTimeout(this.idleTimer);
    const state = { unflushed: 0 };
    this.viewers.set(viewer, state);
    viewer.size(this.size);
    const replay = this.ring.contents();
    if (replay.length > 0) this.send(viewer, state, replay);
    let waiting = false;
    return {
      input: (data, resume) => {
        const stream = this.stream;
        if (this.ended || !stream || !this.viewers.has(viewer)) return true;
        if (stream.write(data) && !waiting) return true;
        if (!waiting) {
          waiting = true;
          stream.once('drain', () => {
            waiting = false;
            resume();
          });
        }
        return false;
      },
      resize: (size) => this.resize(size),
      leave: () => this.leave(viewer),
    };
  }

  /** Ends the shell and its connection; the viewers are told why (none are, for an idle shell). */
  end(why: TerminalEnd | null): void {
    if (this.ended) return;
    this.ended = true;
    this.why = why;
    clearTimeout(this.idleTimer);
    clearTimeout(this.stallTimer);
    this.shell?.close();
    this.onEnd();
    const viewers = [...this.viewers.keys()];
    this.viewers.clear();
    if (why) for (const viewer of viewers) viewer.end(why);
  }

  private output(chunk: Buffer): void {
    this.ring.write(chunk);
    for (const [viewer, state] of this.viewers) this.send(viewer, state, chunk);
  }

  private send(viewer: TerminalViewer, state: { unflushed: number }, data: Buffer): void {
    state.unflushed += data.length;
    viewer.output(data, () => {
      state.unflushed -= data.length;
      if (this.paused && state.unflushed <= RESUME_BELOW_BYTES) this.flow();
    });
    if (!this.paused && state.unflushed > MAX_UNFLUSHED_BYTES) this.flow();
  }

  /** Pauses the shell while any viewer is too far behind; resumes once every one has caught up. */
  private flow(): void {
    if (this.ended || !this.stream) return;
    const states = [...this.viewers.values()];
    if (!this.paused && states.some((s) => s.unflushed > MAX_UNFLUSHED_BYTES)) {
      this.paused = true;
      this.stream.pause();
      this.stream.stderr.pause();
      this.stallTimer = setTimeout(() => this.dropStalled(), STALL_MS);
      this.stallTimer.unref();
    } else if (this.paused && states.every((s) => s.unflushed <= RESUME_BELOW_BYTES)) {
      this.paused = false;
      clearTimeout(this.stallTimer);
      this.stream.resume();
      this.stream.stderr.resume();
    }
  }

  private dropStalled(): void {
    for (const [viewer, state] of [...this.viewers]) {
      if (state.unflushed <= RESUME_BELOW_BYTES) continue;
      this.viewers.delete(viewer);
      viewer.end('fell_behind');
    }
    this.flow();
    this.idleUnlessWatched();
  }

  private resize(size: TerminalSize): void {
    if (this.ended || !this.stream || (size.cols === this.size.cols && size.rows === this.size.rows)) return;
    this.size = size;
    this.stream.setWindow(size.rows, size.cols, 0, 0);
    // The viewers share one PTY: each one's emulator must take the new size, whoever asked for it.
    for (const viewer of this.viewers.keys()) viewer.size(size);
  }

  private leave(viewer: TerminalViewer): void {
    if (!this.viewers.delete(viewer)) return;
    if (this.paused) this.flow();
    this.idleUnlessWatched();
  }

  /** With no viewer the shell keeps running (and its output keeps filling the replay) for a while, then closes. */
  private idleUnlessWatched(): void {
    if (this.ended || this.viewers.size > 0) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.end(null), this.idleMs);
    this.idleTimer.unref();
  }
}

/**
 * Interactive shells on instances, shared: every viewer of the same instance and name sees one shell, and one that
 * reconnects within the idle period resumes it, with its recent output replayed. No HTTP here; the API adapts a
 * WebSocket to a TerminalViewer.
 */
export class Terminals {
  private readonly terminals = new Map<string, { terminal: Terminal; opened: Promise<void> }>();
  private closed = false;

  constructor(private readonly idleMs: number) {}

  /**
   * The instance's shell of that name, opened with `connect` and `size` unless it runs already. Rejects (a
   * conflict) when no shell can be opened.
   */
  async open(instanceId: string, name: string, size: TerminalSize, connect: () => Promise<InstanceShell>): Promise<SharedTerminal> {
    if (this.closed) throw conflict('instance_unreachable', 'Benchtop is shutting down.');
    const key = `${instanceId}\n${name}`;
    let entry = this.terminals.get(key);
    if (!entry) {
      if ([...this.terminals.values()].filter((e) => e.terminal.instanceId === instanceId).length >= MAX_SHELLS_PER_INSTANCE) {
        throw conflict('too_many_terminals', `That instance has ${MAX_SHELLS_PER_INSTANCE} terminals open already; reuse one by its name.`);
      }
      const terminal: Terminal = new Terminal(instanceId, size, this.idleMs, () => {
        if (this.terminals.get(key)?.terminal === terminal) this.terminals.delete(key);
      });
      const opened = terminal.open(connect).catch((error: unknown) => {
        terminal.end(null);
        if (error instanceof ServiceError) throw error;
        throw conflict('instance_unreachable', `Cannot open a shell on the instance: ${(error as Error).message}`);
      });
      entry = { terminal, opened };
      this.terminals.set(key, entry);
    }
    await entry.opened;
    return entry.terminal;
  }

  /** The instance was released or failed: its shells close, and their viewers are told. */
  end(instanceId: string, why: TerminalEnd): void {
    for (const { terminal } of [...this.terminals.values()]) if (terminal.instanceId === instanceId) terminal.end(why);
  }

  /** The engine is stopping. */
  close(): void {
    this.closed = true;
    for (const { terminal } of [...this.terminals.values()]) terminal.end('shutdown');
  }
}
