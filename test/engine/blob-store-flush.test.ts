import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { BlobStore } from '../../src/main/engine/blobs/blob-store.js';

const MiB = 1024 * 1024;

describe('the blob store, flushing as content arrives (issue 13.9)', () => {
  const root = mkdtempSync(join(tmpdir(), 'benchtop-blobs-flush-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  it('puts what it has written on disk while the rest still arrives, not all at the end; the content is intact', async () => {
    const SIZE = 100 * MiB;
    let produced = 0;
    let ended = false;
    const source = new Readable({
      read() {
        if (produced >= SIZE) {
          ended = true;
          return void this.push(null);
        }
        const chunk = Buffer.alloc(MiB, produced / MiB);
        produced += chunk.length;
        this.push(chunk);
      },
    });
    // Node's own FileHandle, observed (not replaced): which flushes ran before the source had ended.
    const probe = await open(join(root, 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as FileHandle;
    await probe.close();
    const original = { datasync: proto.datasync, sync: proto.sync };
    const flushes: Array<{ kind: string; before: boolean }> = [];
    proto.datasync = function (this: FileHandle) {
      flushes.push({ kind: 'datasync', before: !ended });
      return original.datasync.call(this);
    };
    proto.sync = function (this: FileHandle) {
      flushes.push({ kind: 'sync', before: !ended });
      return original.sync.call(this);
    };
    let staged;
    try {
      staged = await new BlobStore(root).stage(source);
    } finally {
      proto.datasync = original.datasync;
      proto.sync = original.sync;
    }
    expect(flushes.filter((f) => f.before).length).toBeGreaterThanOrEqual(1);
    // The last flush still comes after the end: the whole content is durable before anything points at it.
    expect(flushes.at(-1)).toEqual({ kind: 'sync', before: false });
    expect(staged.size).toBe(SIZE);
    await staged.commit();
    const expected = createHash('sha256');
    for (let i = 0; i < 100; i++) expected.update(Buffer.alloc(MiB, i));
    expect(staged.sha256).toBe(expected.digest('hex'));
    expect(createHash('sha256').update(readFileSync(join(root, staged.sha256.slice(0, 2), staged.sha256))).digest('hex')).toBe(staged.sha256);
  });
});
