import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { BlobSourceError, BlobStore } from '../../src/main/engine/blobs/blob-store.js';

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
});
