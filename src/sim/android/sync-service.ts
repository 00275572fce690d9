import { ERRNO, FsError, S_IFDIR, type FsStat, type MemFs } from './mem-fs.js';
import type { ServiceSession, StreamIo } from '../../protocols/adb/transport.js';

/**
 * The device side of the `sync:` service (AOSP adb/SYNC.TXT, file_sync_service.cpp): a binary request loop of
 * 4-byte ids with 32-bit little-endian lengths, carried inside the stream's WRTE packets with no regard for
 * their boundaries.
 */

const SYNC_DATA_MAX = 64 * 1024;
const PATH_MAX = 1024;
const S_IFLNK = 0o120000;

const id = (s: string) => Buffer.from(s, 'latin1');

function u32(...values: number[]): Buffer {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32LE(v >>> 0, i * 4));
  return b;
}

function fail(message: string): Buffer {
  const text = Buffer.from(message, 'utf8');
  return Buffer.concat([id('FAIL'), u32(text.length), text]);
}

/** struct sync_stat_v2 / the body of sync_dent_v2, after the id. */
function statV2(stat: FsStat | undefined, error: number): Buffer {
  const b = Buffer.alloc(68);
  b.writeUInt32LE(error, 0);
  if (stat) {
    b.writeBigUInt64LE(0xfd00n, 4);
    b.writeBigUInt64LE(BigInt(stat.mtime), 12);
    b.writeUInt32LE(stat.mode, 20);
    b.writeUInt32LE(stat.kind === 'dir' ? 2 : 1, 24);
    b.writeUInt32LE(2000, 28);
    b.writeUInt32LE(2000, 32);
    b.writeBigUInt64LE(BigInt(stat.size), 36);
    b.writeBigInt64LE(BigInt(stat.mtime), 44);
    b.writeBigInt64LE(BigInt(stat.mtime), 52);
    b.writeBigInt64LE(BigInt(stat.mtime), 60);
  }
  return b;
}

export interface SyncObserver {
  /** A file finished arriving through SEND. */
  onPushed?(path: string, size: number): void;
}

export function openSyncService(io: StreamIo, fs: MemFs, observer: SyncObserver = {}): ServiceSession {
  let pending: Buffer = Buffer.alloc(0);
  let upload: { path: string; mode: number; chunks: Buffer[]; size: number } | undefined;
  let stopped = false;

  const stop = async (reply?: Buffer) => {
    stopped = true;
    if (reply) await io.write(reply);
    await io.end();
  };

  const statOf = (path: string) => fs.stat(path);

  async function request(cmd: string, arg: Buffer): Promise<void> {
    const path = arg.toString('utf8');
    switch (cmd) {
      case 'STAT': {
        const st = statOf(path);
        await io.write(Buffer.concat([id('STAT'), st ? u32(st.mode, st.size, st.mtime) : u32(0, 0, 0)]));
        return;
      }
      case 'STA2':
      case 'LST2': {
        const st = statOf(path);
        await io.write(Buffer.concat([id(cmd), statV2(st, st ? 0 : ERRNO.ENOENT)]));
        return;
      }
      case 'LIST':
      case 'LIS2': {
        const v2 = cmd === 'LIS2';
        const dir = statOf(path);
        if (dir?.kind === 'dir') {
          const entries = [
            { name: '.', ...dir },
            { name: '..', ...dir, mode: S_IFDIR | 0o755 },
            ...fs.list(path),
          ];
          for (const entry of entries) {
            const name = Buffer.from(entry.name, 'utf8');
            const body = v2
              ? Buffer.concat([id('DNT2'), statV2(entry, 0), u32(name.length)])
              : Buffer.concat([id('DENT'), u32(entry.mode, entry.size, entry.mtime, name.length)]);
            await io.write(Buffer.concat([body, name]));
          }
        }
        await io.write(Buffer.concat([id('DONE'), Buffer.alloc(v2 ? 72 : 16)]));
        return;
      }
      case 'RECV': {
        let data: Buffer;
        try {
          data = fs.readFile(path);
        } catch (err) {
          const reason = err instanceof FsError ? err.message : String(err);
          return stop(fail(`open failed: ${reason}`));
        }
        for (let off = 0; off < data.length; off += SYNC_DATA_MAX) {
          const chunk = data.subarray(off, off + SYNC_DATA_MAX);
          await io.write(Buffer.concat([id('DATA'), u32(chunk.length), chunk]));
          if (io.signal.aborted) return;
        }
        await io.write(Buffer.concat([id('DONE'), u32(0)]));
        return;
      }
      case 'SEND': {
        const comma = path.lastIndexOf(',');
        const target = comma < 0 ? path : path.slice(0, comma);
        const mode = comma < 0 ? 0o644 : Number.parseInt(path.slice(comma + 1), 10) || 0o644;
        upload = { path: target, mode, chunks: [], size: 0 };
        return;
      }
      case 'QUIT':
        return stop();
      default:
        return stop(fail(`unknown command ${JSON.stringify(cmd)}`));
    }
  }

  async function uploadMessage(cmd: string, value: number, body: Buffer): Promise<void> {
    const up = upload!;
    if (cmd === 'DATA') {
      up.chunks.push(body);
      up.size += body.length;
      return;
    }
    upload = undefined;
    if ((up.mode & 0o170000) === S_IFLNK) {
      return stop(fail('couldn\'t create symlink: Operation not permitted'));
    }
    try {
      fs.writeFile(up.path, Buffer.concat(up.chunks, up.size), { mode: up.mode, mtime: value, makeParents: true });
    } catch (err) {
      const reason = err instanceof FsError ? err.message : String(err);
      return stop(fail(`couldn't create file: ${reason}`));
    }
    observer.onPushed?.(fs.resolve(up.path), up.size);
    await io.write(Buffer.concat([id('OKAY'), u32(0)]));
  }

  async function drain(): Promise<void> {
    while (!stopped && pending.length >= 8) {
      const cmd = pending.subarray(0, 4).toString('latin1');
      const length = pending.readUInt32LE(4);
      if (upload) {
        if (cmd === 'DONE') {
          pending = pending.subarray(8);
          await uploadMessage(cmd, length, Buffer.alloc(0));
          continue;
        }
        if (cmd !== 'DATA') return stop(fail('invalid data message'));
        if (length > SYNC_DATA_MAX) return stop(fail('oversize data message'));
      } else if (length > PATH_MAX && cmd !== 'QUIT') {
        return stop(fail('path too long'));
      }
      if (pending.length < 8 + length) return;
      const body = pending.subarray(8, 8 + length);
      pending = pending.subarray(8 + length);
      if (upload) await uploadMessage(cmd, length, Buffer.from(body));
      else await request(cmd, body);
    }
  }

  return {
    async onData(data) {
      if (stopped) return;
      pending = pending.length === 0 ? data : Buffer.concat([pending, data]);
      await drain();
    },
  };
}
