import type { Socket } from 'node:net';
import { posix } from 'node:path';

export const AFC_SERVICE = 'com.apple.afc';

const MAGIC = Buffer.from('CFA6LPAA');
const HEADER = 40;
const OP = {
  STATUS: 0x01, DATA: 0x02, READ_DIR: 0x03, REMOVE_PATH: 0x08, MAKE_DIR: 0x09, GET_FILE_INFO: 0x0a, GET_DEVINFO: 0x0b,
  FILE_OPEN: 0x0d, FILE_OPEN_RES: 0x0e, FILE_READ: 0x0f, FILE_WRITE: 0x10, FILE_SEEK: 0x11, FILE_TELL: 0x12, FILE_TELL_RES: 0x13,
  FILE_CLOSE: 0x14, FILE_SET_SIZE: 0x15, RENAME_PATH: 0x18, REMOVE_PATH_AND_CONTENTS: 0x22,
} as const;
const ERR = { SUCCESS: 0, UNKNOWN_PACKET_TYPE: 6, INVALID_ARGUMENT: 7, OBJECT_NOT_FOUND: 8, OBJECT_IS_DIRECTORY: 9, PERMISSION_DENIED: 10, DIR_NOT_EMPTY: 33 } as const;
/** AFC file modes: 1 r, 2 r+, 3 w (create, truncate), 4 w+, 5 a, 6 a+. */
const MODE = { RDONLY: 1, RW: 2, WRONLY: 3, WR: 4, APPEND: 5, RDAPPEND: 6 } as const;

/** The media partition AFC serves (/private/var/mobile/Media): uploads land here before installation_proxy reads them. */
export class MediaFs {
  readonly files = new Map<string, Buffer>();
  readonly dirs = new Set<string>(['/', '/DCIM', '/Downloads', '/PublicStaging', '/iTunes_Control']);

  static normalize(path: string): string {
    return posix.normalize('/' + path).replace(/\/+$/, '') || '/';
  }

  read(path: string): Buffer | undefined {
    return this.files.get(MediaFs.normalize(path));
  }

  list(dir: string): string[] | undefined {
    const d = MediaFs.normalize(dir);
    if (!this.dirs.has(d)) return undefined;
    const prefix = d === '/' ? '/' : d + '/';
    const names = new Set<string>();
    for (const p of [...this.dirs, ...this.files.keys()]) {
      if (p !== d && p.startsWith(prefix) && !p.slice(prefix.length).includes('/')) names.add(p.slice(prefix.length));
    }
    return [...names].sort();
  }

  removeTree(path: string): void {
    const p = MediaFs.normalize(path);
    for (const key of [...this.files.keys()]) if (key === p || key.startsWith(p + '/')) this.files.delete(key);
    for (const key of [...this.dirs]) if (key !== '/' && (key === p || key.startsWith(p + '/'))) this.dirs.delete(key);
  }
}

interface Handle {
  path: string;
  position: number;
}

/**
 * An app's data container as installd makes it: Documents (what the Files app and house_arrest's VendDocuments
 * share), Library and tmp.
 */
export function newDataContainer(): MediaFs {
  const fs = new MediaFs();
  fs.dirs.clear();
  for (const dir of ['/', '/Documents', '/Library', '/Library/Caches', '/Library/Preferences', '/tmp']) fs.dirs.add(dir);
  return fs;
}

export interface AfcOptions {
  /**
   * The one folder the client may reach (house_arrest's VendDocuments: /Documents). The root lists only it; any other
   * path is PERMISSION_DENIED, as the phone's sandbox answers.
   */
  only?: string;
}

/**
 * com.apple.afc: 40-byte little-endian headers ("CFA6LPAA", whole length, header length, packet number, operation),
 * answered with STATUS, DATA or a handle. Enough of it to stage an IPA the way every installer does:
 * make PublicStaging, open a file for writing, write it in chunks, close it, and read back its info.
 */
export function serveAfc(socket: Socket, fs: MediaFs, options: AfcOptions = {}): void {
  const only = options.only;
  const reachable = (path: string) => !only || path === '/' || path === only || path.startsWith(only + '/');
  const handles = new Map<number, Handle>();
  let nextHandle = 1;
  let pending: Buffer = Buffer.alloc(0);
  socket.on('error', () => undefined);

  const send = (packetNumber: number, op: number, headerPayload: Buffer, content = Buffer.alloc(0)) => {
    const header = Buffer.alloc(HEADER);
    MAGIC.copy(header);
    header.writeBigUInt64LE(BigInt(HEADER + headerPayload.length + content.length), 8);
    header.writeBigUInt64LE(BigInt(HEADER + headerPayload.length), 16);
    header.writeBigUInt64LE(BigInt(packetNumber), 24);
    header.writeBigUInt64LE(BigInt(op), 32);
    socket.write(Buffer.concat([header, headerPayload, content]));
  };
  const status = (n: number, code: number) => {
    const payload = Buffer.alloc(8);
    payload.writeBigUInt64LE(BigInt(code));
    send(n, OP.STATUS, payload);
  };
  const strings = (buf: Buffer) => buf.toString('utf8').split('\0').filter((s, i, all) => i < all.length - 1 || s !== '');
  const data = (n: number, items: string[]) => send(n, OP.DATA, Buffer.alloc(0), Buffer.from(items.map((s) => s + '\0').join('')));

  /** The paths a request names, when it names any: in the jail, the root only for reading what it holds. */
  const named = (op: number, header: Buffer): string[] => {
    if (op === OP.READ_DIR || op === OP.GET_FILE_INFO || op === OP.MAKE_DIR || op === OP.REMOVE_PATH || op === OP.REMOVE_PATH_AND_CONTENTS) return [MediaFs.normalize(strings(header)[0] ?? '')];
    if (op === OP.RENAME_PATH) return strings(header).map(MediaFs.normalize);
    if (op === OP.FILE_OPEN) return [MediaFs.normalize(header.subarray(8).toString('utf8').replace(/\0.*$/s, ''))];
    return [];
  };

  const handle = (n: number, op: number, header: Buffer, content: Buffer) => {
    const paths = named(op, header);
    const readsRoot = op === OP.READ_DIR || op === OP.GET_FILE_INFO;
    if (paths.some((p) => !reachable(p) || (p === '/' && only && !readsRoot))) return status(n, ERR.PERMISSION_DENIED);
    switch (op) {
      case OP.READ_DIR: {
        const path = MediaFs.normalize(strings(header)[0] ?? '/');
        const names = path === '/' && only ? [only.slice(1)] : fs.list(path);
        return names ? data(n, ['.', '..', ...names]) : status(n, ERR.OBJECT_NOT_FOUND);
      }
      case OP.GET_FILE_INFO: {
        const path = MediaFs.normalize(strings(header)[0] ?? '/');
        const file = fs.files.get(path);
        if (!file && !fs.dirs.has(path)) return status(n, ERR.OBJECT_NOT_FOUND);
        const size = file ? file.length : 64;
        const ns = String(BigInt(Date.now()) * 1_000_000n);
        return data(n, ['st_size', String(size), 'st_blocks', String(Math.ceil(size / 512)), 'st_nlink', '1',
          'st_ifmt', file ? 'S_IFREG' : 'S_IFDIR', 'st_mtime', ns, 'st_birthtime', ns]);
      }
      case OP.GET_DEVINFO:
        return data(n, ['Model', 'iPhone', 'FSTotalBytes', String(64 * 1024 ** 3), 'FSFreeBytes', String(32 * 1024 ** 3), 'FSBlockSize', '4096']);
      case OP.MAKE_DIR: {
        let path = MediaFs.normalize(strings(header)[0] ?? '');
        // mkdir -p, as the real service does.
        while (path !== '/') {
          fs.dirs.add(path);
          path = posix.dirname(path);
        }
        return status(n, ERR.SUCCESS);
      }
      case OP.REMOVE_PATH: {
        const path = MediaFs.normalize(strings(header)[0] ?? '');
        if (fs.files.delete(path)) return status(n, ERR.SUCCESS);
        if (!fs.dirs.has(path)) return status(n, ERR.OBJECT_NOT_FOUND);
        if (fs.list(path)!.length) return status(n, ERR.DIR_NOT_EMPTY);
        fs.dirs.delete(path);
        return status(n, ERR.SUCCESS);
      }
      case OP.REMOVE_PATH_AND_CONTENTS: {
        const path = MediaFs.normalize(strings(header)[0] ?? '');
        if (!fs.files.has(path) && !fs.dirs.has(path)) return status(n, ERR.OBJECT_NOT_FOUND);
        fs.removeTree(path);
        return status(n, ERR.SUCCESS);
      }
      case OP.RENAME_PATH: {
        const [from, to] = strings(header).map(MediaFs.normalize);
        const file = from ? fs.files.get(from) : undefined;
        if (!file || !to) return status(n, ERR.OBJECT_NOT_FOUND);
        fs.files.delete(from!);
        fs.files.set(to, file);
        return status(n, ERR.SUCCESS);
      }
      case OP.FILE_OPEN: {
        const mode = Number(header.readBigUInt64LE(0));
        const path = MediaFs.normalize(header.subarray(8).toString('utf8').replace(/\0.*$/s, ''));
        if (fs.dirs.has(path)) return status(n, ERR.OBJECT_IS_DIRECTORY);
        if (!fs.dirs.has(posix.dirname(path))) return status(n, ERR.OBJECT_NOT_FOUND);
        const exists = fs.files.has(path);
        if (!exists && (mode === MODE.RDONLY || mode === MODE.RW)) return status(n, ERR.OBJECT_NOT_FOUND);
        if (mode === MODE.WRONLY || mode === MODE.WR || !exists) fs.files.set(path, Buffer.alloc(0));
        const id = nextHandle++;
        handles.set(id, { path, position: mode === MODE.APPEND || mode === MODE.RDAPPEND ? fs.files.get(path)!.length : 0 });
        const payload = Buffer.alloc(8);
        payload.writeBigUInt64LE(BigInt(id));
        return send(n, OP.FILE_OPEN_RES, payload);
      }
      case OP.FILE_WRITE: {
        const h = handles.get(Number(header.readBigUInt64LE(0)));
        if (!h) return status(n, ERR.INVALID_ARGUMENT);
        const file = fs.files.get(h.path) ?? Buffer.alloc(0);
        const end = h.position + content.length;
        const grown = end > file.length ? Buffer.concat([file, Buffer.alloc(end - file.length)]) : file;
        content.copy(grown, h.position);
        fs.files.set(h.path, grown);
        h.position = end;
        return status(n, ERR.SUCCESS);
      }
      case OP.FILE_READ: {
        const h = handles.get(Number(header.readBigUInt64LE(0)));
        if (!h) return status(n, ERR.INVALID_ARGUMENT);
        const length = Number(header.readBigUInt64LE(8));
        const file = fs.files.get(h.path) ?? Buffer.alloc(0);
        const chunk = file.subarray(h.position, h.position + length);
        h.position += chunk.length;
        return send(n, OP.DATA, Buffer.alloc(0), Buffer.from(chunk));
      }
      case OP.FILE_TELL: {
        const h = handles.get(Number(header.readBigUInt64LE(0)));
        if (!h) return status(n, ERR.INVALID_ARGUMENT);
        const payload = Buffer.alloc(8);
        payload.writeBigUInt64LE(BigInt(h.position));
        return send(n, OP.FILE_TELL_RES, payload);
      }
      case OP.FILE_SEEK: {
        // handle, whence (0 SEEK_SET, 1 SEEK_CUR, 2 SEEK_END), offset (signed): ifuse seeks before every read and write.
        const h = handles.get(Number(header.readBigUInt64LE(0)));
        if (!h || header.length < 24) return status(n, ERR.INVALID_ARGUMENT);
        const whence = Number(header.readBigUInt64LE(8));
        const offset = Number(header.readBigInt64LE(16));
        const from = whence === 0 ? 0 : whence === 1 ? h.position : whence === 2 ? (fs.files.get(h.path)?.length ?? 0) : NaN;
        if (Number.isNaN(from) || from + offset < 0) return status(n, ERR.INVALID_ARGUMENT);
        h.position = from + offset;
        return status(n, ERR.SUCCESS);
      }
      case OP.FILE_SET_SIZE: {
        // ftruncate: a file opened for writing that is cut to a size (ifuse's truncate, and O_TRUNC on open).
        const h = handles.get(Number(header.readBigUInt64LE(0)));
        if (!h || header.length < 16) return status(n, ERR.INVALID_ARGUMENT);
        const size = Number(header.readBigUInt64LE(8));
        const file = fs.files.get(h.path) ?? Buffer.alloc(0);
        fs.files.set(h.path, size <= file.length ? Buffer.from(file.subarray(0, size)) : Buffer.concat([file, Buffer.alloc(size - file.length)]));
        return status(n, ERR.SUCCESS);
      }
      case OP.FILE_CLOSE:
        return status(n, handles.delete(Number(header.readBigUInt64LE(0))) ? ERR.SUCCESS : ERR.INVALID_ARGUMENT);
      default:
        return status(n, ERR.UNKNOWN_PACKET_TYPE);
    }
  };

  socket.on('data', (chunk: Buffer) => {
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    while (pending.length >= HEADER) {
      if (!pending.subarray(0, 8).equals(MAGIC)) return void socket.destroy();
      const total = Number(pending.readBigUInt64LE(8));
      const headerLength = Number(pending.readBigUInt64LE(16));
      if (total < headerLength || headerLength < HEADER || total > 64 * 1024 * 1024) return void socket.destroy();
      if (pending.length < total) return;
      const packetNumber = Number(pending.readBigUInt64LE(24));
      const op = Number(pending.readBigUInt64LE(32));
      const header = Buffer.from(pending.subarray(HEADER, headerLength));
      const content = Buffer.from(pending.subarray(headerLength, total));
      pending = pending.subarray(total);
      handle(packetNumber, op, header, content);
    }
  });
}
