import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { BlobSourceError, BlobStore } from '../../src/main/engine/blobs/blob-store.js';
import { HashingThread } from '../../src/main/engine/blobs/file-hasher.js';
import { waitFor } from '../support/lab.js';

describe('the blob store', () => {
  const root = mkdtempSync(join(tmpdir(), 'benchtop-blobs-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('leaves no staging file behind for a source that fails while its file is still being opened', async () => {
    const blobs = new BlobStore(root);
    for (let i = 0; i < 200; i++) {
      const source = new PassThrough();
      // An upload dropped as it starts: the staging file's open() has not finished yet.
      setImmediate(() => source.destroy(new Error('the client went away')));
      await expect(blobs.stage(source)).rejects.toBeInstanceOf(BlobSourceError);
    }
    // A file a late open() created would show up once the thread pool has finished with it.
    await new Promise((r) => setTimeout(r, 100));
    expect(readdirSync(join(root, 'staging'))).toEqual([]);
  });

  /** Chunks of uneven sizes, from one byte to more than the hashing thread reads at once, each with its own bytes. */
  function unevenChunks(): Buffer[] {
    const sizes = [1, 7, 65_536, 3, 5 * 1024 * 1024 + 13, 1024 * 1024, 0, 4 * 1024 * 1024, 99];
    return sizes.map((size, i) => Buffer.alloc(size, i + 1));
  }

  it('hashes on its own thread exactly what it wrote, whatever the chunks, and files it under that hash', async () => {
    const blobs = new BlobStore(root);
    const chunks = unevenChunks();
    const expected = createHash('sha256');
    for (const chunk of chunks) expected.update(chunk);
    const digest = expected.digest('hex');
    const staged = await blobs.stage(Readable.from(chunks));
    expect(staged.sha256).toBe(digest);
    expect(staged.size).toBe(chunks.reduce((sum, c) => sum + c.length, 0));
    await staged.commit();
    expect(readFileSync(blobs.pathOf(digest)).equals(Buffer.concat(chunks))).toBe(true);
    // Empty content has a digest too.
    expect((await blobs.stage(Readable.from([]))).sha256).toBe(createHash('sha256').digest('hex'));
  });

  it('keeps identical content once: the duplicate staged copy goes after its commit, which does not wait for it', async () => {
    const blobs = new BlobStore(root);
    const first = await blobs.stage(Readable.from([Buffer.from('twice')]));
    await first.commit();
    const second = await blobs.stage(Readable.from([Buffer.from('twice')]));
    expect(second.sha256).toBe(first.sha256);
    await second.commit();
    expect(readFileSync(blobs.pathOf(first.sha256), 'utf8')).toBe('twice');
    await waitFor('the duplicate staged copy to be removed', () => readdirSync(join(root, 'staging')).length === 0);
  });

  it('fails an upload whose hashing thread dies, as its own failure, leaves nothing in staging, and hashes the next', async () => {
    const blobs = new BlobStore(root);
    const source = new PassThrough();
    const staging = blobs.stage(source);
    source.write(Buffer.alloc(1024 * 1024, 1));
    await waitFor('the staging file', () => readdirSync(join(root, 'staging')).length === 1);
    await HashingThread.shared().terminate();
    source.end(Buffer.alloc(1024, 2));
    const failure = await staging.then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(Error);
    expect(failure).not.toBeInstanceOf(BlobSourceError);
    expect((failure as Error).message).toMatch(/hashing/i);
    expect(readdirSync(join(root, 'staging'))).toEqual([]);
    const next = await blobs.stage(Readable.from([Buffer.from('after')]));
    expect(next.sha256).toBe(createHash('sha256').update('after').digest('hex'));
  });
});
