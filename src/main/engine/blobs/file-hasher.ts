import { Worker } from 'node:worker_threads';

/**
 * The hashing thread's code: plain JavaScript in a string, with Node's built-ins only, so that it runs the same
 * whatever loads the engine (a bundler rewrites require() in code it bundles, and a worker file beside the bundle
 * would be one more thing to ship). For each file it hashes what has been written so far, reading it back from the
 * page cache with pread, which leaves the writer's file position alone. Messages are handled in order, so once it
 * has answered for a file it no longer reads that file's descriptor.
 */
const HASHING_THREAD = `
const { parentPort } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { readSync } = require('node:fs');
const READ_BYTES = 4 * 1024 * 1024;
const buffer = Buffer.allocUnsafe(READ_BYTES);
const files = new Map();
parentPort.on('message', ({ id, fd, upTo, end, release }) => {
  if (release) {
    files.delete(id);
    return parentPort.postMessage({ id });
  }
  let file = files.get(id);
  if (!file) files.set(id, (file = { hash: createHash('sha256'), hashed: 0 }));
  try {
    while (file.hashed < upTo) {
      const read = readSync(fd, buffer, 0, Math.min(READ_BYTES, upTo - file.hashed), file.hashed);
      if (read === 0) throw new Error('the file ends at ' + file.hashed + ' bytes, before ' + upTo);
      file.hash.update(buffer.subarray(0, read));
      file.hashed += read;
    }
    if (end) {
      files.delete(id);
      parentPort.postMessage({ id, sha256: file.hash.digest('hex') });
    }
  } catch (error) {
    files.delete(id);
    parentPort.postMessage({ id, error: error.message });
  }
});
`;

/** The thread's answer for a file: its digest, an error, or neither (it has let go of the file). */
type Reply = { id: number; sha256?: string; error?: string };

/**
 * The thread hears of new content once this much more is written (what it reads at a time), not after every write:
 * the network hands content over 64 KiB at a time, and each message wakes the thread, which on a busy machine takes
 * the CPU from the receiving thread. A message per write cost that thread a tenth of its time.
 */
const TELL_EVERY_BYTES = 4 * 1024 * 1024;

/**
 * A thread that computes the SHA-256 of files as they are written, from what is already in them. An upload is read
 * off the socket, parsed and written by the engine's one JavaScript thread; hashing it there as well took 40% of that
 * thread's time for each byte (measured: 0.33 s of 0.85 s for 500 MiB), which the upload then waited for.
 */
export class HashingThread {
  private static current: HashingThread | undefined;

  /** The engine's hashing thread, started on first use and again after it died. */
  static shared(): HashingThread {
    if (!HashingThread.current?.alive) HashingThread.current = new HashingThread();
    return HashingThread.current;
  }

  private readonly worker = new Worker(HASHING_THREAD, { eval: true });
  private alive = true;
  private nextId = 0;
  private readonly waiting = new Map<number, (reply: Reply) => void>();

  constructor() {
    // It waits for files; it does not keep the engine running.
    this.worker.unref();
    this.worker.on('message', (reply: Reply) => {
      const answer = this.waiting.get(reply.id);
      this.waiting.delete(reply.id);
      answer?.(reply);
    });
    const died = (cause: string) => {
      this.alive = false;
      for (const answer of this.waiting.values()) answer({ id: -1, error: cause });
      this.waiting.clear();
    };
    this.worker.on('error', (error) => died(error.message));
    this.worker.on('exit', (code) => died(`the hashing thread exited (${code})`));
  }

  /** A file to hash, open for reading by its descriptor until the hasher has let go of it. */
  file(fd: number): FileHasher {
    return new FileHasher(this, this.nextId++, fd);
  }

  /** Stops the thread; whatever it was hashing fails. */
  terminate(): Promise<number> {
    return this.worker.terminate();
  }

  post(message: { id: number; fd?: number; upTo?: number; end?: boolean; release?: boolean }): void {
    if (this.alive) this.worker.postMessage(message);
  }

  /** Posts a message that the thread answers; a thread that has died answers with an error, and reads nothing more. */
  ask(message: { id: number; fd?: number; upTo?: number; end?: boolean; release?: boolean }): Promise<Reply> {
    if (!this.alive) return Promise.resolve({ id: message.id, error: 'the hashing thread has stopped' });
    return new Promise((resolve) => {
      this.waiting.set(message.id, resolve);
      this.worker.postMessage(message);
    });
  }
}

/** One file's SHA-256, computed on the hashing thread as the file is written. */
export class FileHasher {
  private finished: Promise<Reply> | undefined;
  private told = 0;

  constructor(
    private readonly thread: HashingThread,
    private readonly id: number,
    private readonly fd: number,
  ) {}

  /** The first `bytes` of the file are written: they can be hashed. */
  written(bytes: number): void {
    if (bytes - this.told < TELL_EVERY_BYTES) return;
    this.told = bytes;
    this.thread.post({ id: this.id, fd: this.fd, upTo: bytes });
  }

  /** The digest of the file, which is `bytes` long. */
  async digest(bytes: number): Promise<string> {
    this.finished ??= this.thread.ask({ id: this.id, fd: this.fd, upTo: bytes, end: true });
    const reply = await this.finished;
    if (reply.sha256 === undefined) throw new Error(`Hashing the content failed: ${reply.error}.`);
    return reply.sha256;
  }

  /** Resolves once the thread no longer reads the file, so that its descriptor can close (and be reused). */
  async release(): Promise<void> {
    this.finished ??= this.thread.ask({ id: this.id, release: true });
    await this.finished;
  }
}
