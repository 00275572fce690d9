import { randomUUID } from 'node:crypto';
import { mkdirSync, rmSync } from 'node:fs';
import { access, mkdir, open, readdir, rename, rm, stat, utimes, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { HashingThread, type FileHasher } from './file-hasher.js';

/** Content written to a staging file and hashed, not yet at its address. */
export interface StagedBlob {
  /** Hex SHA-256 of the content. */
  readonly sha256: string;
  readonly size: number;
  /** Moves the content to its address; content already stored there is kept once. */
  commit(): Promise<void>;
  /** Removes the staging file; nothing to do once committed. */
  discard(): Promise<void>;
}

/** The source failed or ended early (the client went away, the form broke off): not the store's own fault. */
export class BlobSourceError extends Error {
  constructor(cause: unknown) {
    super('The content stopped arriving before its end.', { cause });
    this.name = 'BlobSourceError';
  }
}

/** Chunks that arrive while a write is in flight queue up to this much; the next write takes them all at once. */
const WRITE_BUFFER_BYTES = 1024 * 1024;
/**
 * While content arrives, what has been written is flushed to disk every this many bytes, in the background. One
 * fsync at the end would leave the disk idle while the network delivers, then make the response wait for the whole
 * file to be written out: flushing as it goes overlaps the two, and the last fsync has only the tail left to write.
 */
export const FLUSH_EVERY_BYTES = 32 * 1024 * 1024;

/**
 * Writes the content to a file, which the hashing thread reads back from the page cache as it goes: this thread
 * receives and writes, that one hashes. It records its own I/O failures, which tells them
 * apart from a failing source when the pipeline rejects. It opens its file itself (writes wait for that), so that
 * the pipeline is attached to the source at once: an error the source emits meanwhile is not missed.
 */
class HashingFileSink extends Writable {
  size = 0;
  private hasher: FileHasher | undefined;
  failure: Error | undefined;
  private file: FileHandle | undefined;
  /**
   * Opened from the start and awaited by close(): a source can fail while the open is still under way, and a file
   * opened after close() had looked would stay behind, open, in staging.
   */
  private readonly opening: Promise<FileHandle>;

  constructor(path: string) {
    super({ highWaterMark: WRITE_BUFFER_BYTES });
    // Read as well as written: the hashing thread reads back what was written.
    this.opening = open(path, 'wx+', 0o600);
    // Its failure is reported through _construct; this handler only keeps it from counting as unhandled.
    this.opening.catch(() => undefined);
  }

  override _construct(callback: (error?: Error | null) => void): void {
    this.own(
      this.opening.then((file) => {
        this.file = file;
        this.hasher = HashingThread.shared().file(file.fd);
      }),
      callback,
    );
  }

  override _writev(chunks: Array<{ chunk: Buffer }>, callback: (error?: Error | null) => void): void {
    const buffers = chunks.map((c) => c.chunk);
    const bytes = buffers.reduce((sum, b) => sum + b.length, 0);
    this.own(writeAll(this.file!, buffers).then(() => {
      this.size += bytes;
      this.hasher!.written(this.size);
      return this.flushAsItGoes(bytes);
    }), callback);
  }

  /** The content is on disk before anything can point at it. */
  override _final(callback: (error?: Error | null) => void): void {
    const synced = (this.flushing ?? Promise.resolve()).then(() => {
      // After a failed flush, a later fsync can succeed with the failed pages lost: the failure itself is final.
      if (this.flushFailure) throw this.flushFailure;
      return this.file!.sync();
    });
    // The hashing thread finishes the tail while the disk takes it.
    this.own(Promise.all([synced, this.sha256()]).then(() => undefined), callback);
  }

  /** The content's SHA-256, once it has all been written. */
  sha256(): Promise<string> {
    return this.hasher!.digest(this.size);
  }

  /** Closes the file once nothing writes to it any more, whether the content is complete or not. */
  async close(): Promise<void> {
    const file = await this.opening.catch(() => undefined);
    await this.flushing?.catch(() => undefined);
    // The hashing thread reads the file by its descriptor, which must not close (and be reused) under it.
    await this.hasher?.release();
    await file?.close();
  }

  private unflushed = 0;
  /** The background flush under way, if any: one at a time. */
  private flushing: Promise<void> | undefined;
  /** A background flush that failed: it fails the next write, or the end. */
  private flushFailure: Error | undefined;

  private async flushAsItGoes(bytes: number): Promise<void> {
    if (this.flushFailure) throw this.flushFailure;
    this.unflushed += bytes;
    if (this.unflushed < FLUSH_EVERY_BYTES) return;
    // Writes never wait for the disk (the network would idle meanwhile): while a flush runs, the next one waits.
    if (this.flushing) return;
    this.unflushed = 0;
    const flush: Promise<void> = this.file!.datasync().then(
      () => undefined,
      (error: Error) => {
        this.flushFailure = error;
      },
    ).finally(() => {
      if (this.flushing === flush) this.flushing = undefined;
    });
    this.flushing = flush;
  }

  private own(io: Promise<void>, callback: (error?: Error | null) => void): void {
    io.then(
      () => callback(),
      (error: Error) => {
        this.failure = error;
        callback(error);
      },
    );
  }
}

/** writev may write less than asked; the rest follows until all is written. */
async function writeAll(file: FileHandle, buffers: Buffer[]): Promise<void> {
  let pending = buffers;
  while (pending.length > 0) {
    let written = (await file.writev(pending)).bytesWritten;
    while (pending.length > 0 && written >= pending[0]!.length) {
      written -= pending[0]!.length;
      pending = pending.slice(1);
    }
    if (written > 0) pending = [pending[0]!.subarray(written), ...pending.slice(1)];
  }
}

/**
 * Content-addressed files under one directory: <root>/<first two hex digits>/<sha256>. Content streams through a
 * staging file while it is hashed, so no blob is ever held in memory, and a rename puts it at its address, so a
 * reader never sees a partial blob. Identical content is stored once.
 */
export class BlobStore {
  private readonly staging: string;

  constructor(private readonly root: string) {
    this.staging = join(root, 'staging');
    // Staging files left by a crash belong to no request any more.
    rmSync(this.staging, { recursive: true, force: true });
    mkdirSync(this.staging, { recursive: true, mode: 0o700 });
  }

  pathOf(sha256: string): string {
    return join(this.root, sha256.slice(0, 2), sha256);
  }

  /** Streams the source into a staging file. Rejects with BlobSourceError when the source, not the disk, failed. */
  async stage(source: Readable): Promise<StagedBlob> {
    // A source destroyed before it got here (a form that broke off) may never settle a pipeline.
    if (source.destroyed) throw new BlobSourceError(source.errored);
    const path = join(this.staging, randomUUID());
    const sink = new HashingFileSink(path);
    let failure: Error | undefined;
    try {
      await pipeline(source, sink);
    } catch (error) {
      failure = sink.failure ?? new BlobSourceError(error);
    } finally {
      await sink.close();
    }
    if (failure) {
      await rm(path, { force: true });
      throw failure;
    }
    const sha256 = await sink.sha256();
    let settled = false;
    return {
      sha256,
      size: sink.size,
      commit: async () => {
        await this.place(path, sha256);
        settled = true;
      },
      discard: async () => {
        if (settled) return;
        settled = true;
        await rm(path, { force: true });
      },
    };
  }

  private async place(staged: string, sha256: string): Promise<void> {
    const target = this.pathOf(sha256);
    if (await exists(target)) {
      // Fresh again: the sweeper spares recent blobs, so content committed just before its row is written survives.
      const now = new Date();
      await utimes(target, now, now);
      // The staged copy is garbage now, and unlinking a large file takes a while (ext4 frees its extents and pages:
      // 160 ms for 500 MiB here), which the reply need not wait for. A crash before it is gone leaves it in staging,
      // which the next start empties.
      void rm(staged, { force: true }).catch(() => undefined);
      return;
    }
    const dir = join(this.root, sha256.slice(0, 2));
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await rename(staged, target);
    // The new directory entry is durable too, before a database row points at it.
    const handle = await open(dir, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  }

  /** Every stored blob, with when it was last committed (ms since the epoch). */
  async list(): Promise<Array<{ sha256: string; committedAt: number }>> {
    const out: Array<{ sha256: string; committedAt: number }> = [];
    for (const dir of await readdir(this.root)) {
      if (!/^[0-9a-f]{2}$/.test(dir)) continue;
      for (const name of await readdir(join(this.root, dir))) {
        const info = await stat(join(this.root, dir, name)).catch(() => undefined);
        if (info && /^[0-9a-f]{64}$/.test(name)) out.push({ sha256: name, committedAt: info.mtimeMs });
      }
    }
    return out;
  }

  async remove(sha256: string): Promise<void> {
    await rm(this.pathOf(sha256), { force: true });
  }

  /** Opens a stored blob for reading; rejects (ENOENT) if it is not there. */
  open(sha256: string): Promise<FileHandle> {
    return open(this.pathOf(sha256), 'r');
  }
}

const exists = (path: string) => access(path).then(() => true, () => false);
