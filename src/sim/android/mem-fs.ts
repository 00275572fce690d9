import { posix } from 'node:path';

export const S_IFDIR = 0o040000;
export const S_IFREG = 0o100000;

export type FsErrorCode = 'ENOENT' | 'EISDIR' | 'ENOTDIR' | 'EACCES' | 'EEXIST' | 'ENOTEMPTY';

const MESSAGES: Record<FsErrorCode, string> = {
  ENOENT: 'No such file or directory',
  EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory',
  EACCES: 'Permission denied',
  EEXIST: 'File exists',
  ENOTEMPTY: 'Directory not empty',
};

export const ERRNO: Record<FsErrorCode, number> = {
  ENOENT: 2,
  EACCES: 13,
  EEXIST: 17,
  ENOTDIR: 20,
  EISDIR: 21,
  ENOTEMPTY: 39,
};

export class FsError extends Error {
  constructor(
    readonly code: FsErrorCode,
    readonly path: string,
  ) {
    super(MESSAGES[code]);
  }
}

interface FileNode {
  kind: 'file';
  mode: number;
  mtime: number;
  data: Buffer;
}

interface DirNode {
  kind: 'dir';
  mode: number;
  mtime: number;
  children: Map<string, Node>;
}

type Node = FileNode | DirNode;

export interface FsStat {
  kind: 'file' | 'dir';
  /** Includes the file-type bits, as st_mode does. */
  mode: number;
  size: number;
  mtime: number;
}

export interface FsEntry extends FsStat {
  name: string;
}

/** Storage views that Android exposes under several names. */
const ALIASES: Array<[string, string]> = [
  ['/sdcard', '/storage/emulated/0'],
  ['/mnt/sdcard', '/storage/emulated/0'],
  ['/storage/self/primary', '/storage/emulated/0'],
];

/** Where the `shell` user may write; everything else is the system's. */
const WRITABLE = ['/data/local/tmp', '/storage/emulated/0'];

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The phone's files, in memory: enough of Android's layout for push, pull, install and shell redirects. */
export class MemFs {
  private readonly root: DirNode = { kind: 'dir', mode: 0o755, mtime: nowSeconds(), children: new Map() };

  constructor() {
    for (const dir of [
      '/data/local/tmp',
      '/data/app',
      '/system/bin',
      '/system/app',
      '/system/priv-app',
      '/vendor',
      '/dev',
      '/proc',
      '/storage/emulated/0/Android',
      '/storage/emulated/0/DCIM',
      '/storage/emulated/0/Documents',
      '/storage/emulated/0/Download',
      '/storage/emulated/0/Movies',
      '/storage/emulated/0/Music',
      '/storage/emulated/0/Pictures',
    ]) {
      this.mkdirp(dir);
    }
  }

  /** Absolute, normalized, with storage aliases folded onto their real place. */
  resolve(path: string, cwd = '/'): string {
    let p = posix.normalize(path.startsWith('/') ? path : posix.join(cwd, path));
    if (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
    for (const [alias, target] of ALIASES) {
      if (p === alias || p.startsWith(alias + '/')) return target + p.slice(alias.length);
    }
    return p;
  }

  isWritable(path: string): boolean {
    const p = this.resolve(path);
    return WRITABLE.some((root) => p === root || p.startsWith(root + '/'));
  }

  stat(path: string): FsStat | undefined {
    const node = this.lookup(this.resolve(path));
    return node ? describe(node) : undefined;
  }

  readFile(path: string): Buffer {
    const p = this.resolve(path);
    const node = this.lookup(p);
    if (!node) throw new FsError('ENOENT', path);
    if (node.kind === 'dir') throw new FsError('EISDIR', path);
    return node.data;
  }

  writeFile(path: string, data: Buffer, options: { mode?: number; mtime?: number; makeParents?: boolean } = {}): void {
    const p = this.resolve(path);
    if (!this.isWritable(p)) throw new FsError('EACCES', path);
    const parentPath = posix.dirname(p);
    if (options.makeParents) this.mkdirp(parentPath);
    const parent = this.lookup(parentPath);
    if (!parent) throw new FsError('ENOENT', path);
    if (parent.kind !== 'dir') throw new FsError('ENOTDIR', path);
    const name = posix.basename(p);
    const existing = parent.children.get(name);
    if (existing?.kind === 'dir') throw new FsError('EISDIR', path);
    const mtime = options.mtime ?? nowSeconds();
    parent.children.set(name, { kind: 'file', mode: (options.mode ?? existing?.mode ?? 0o644) & 0o7777, mtime, data });
    parent.mtime = mtime;
  }

  /** The package manager writes where the shell may not. */
  writeSystemFile(path: string, data: Buffer): void {
    const p = this.resolve(path);
    const parent = this.mkdirp(posix.dirname(p));
    parent.children.set(posix.basename(p), { kind: 'file', mode: 0o644, mtime: nowSeconds(), data });
  }

  /** A file the kernel writes as it is read (procfs): its content is what `read` answers at that moment. */
  provide(path: string, read: () => Buffer): void {
    const p = this.resolve(path);
    const parent = this.mkdirp(posix.dirname(p));
    const node: FileNode = {
      kind: 'file',
      mode: 0o444,
      mtime: nowSeconds(),
      get data() {
        return read();
      },
      set data(_ignored: Buffer) {
        // Read-only, as /proc's files are to the shell user.
      },
    };
    parent.children.set(posix.basename(p), node);
  }

  appendFile(path: string, data: Buffer): void {
    const p = this.resolve(path);
    const node = this.lookup(p);
    if (node?.kind === 'file') {
      if (!this.isWritable(p)) throw new FsError('EACCES', path);
      node.data = Buffer.concat([node.data, data]);
      node.mtime = nowSeconds();
      return;
    }
    this.writeFile(path, data);
  }

  /** The storage names (/sdcard) that are links in a folder, as `ls -l` shows them; list() leaves them out. */
  aliasesIn(folder: string): string[] {
    return ALIASES.filter(([alias]) => posix.dirname(alias) === folder).map(([alias]) => posix.basename(alias));
  }

  list(path: string): FsEntry[] {
    const node = this.lookup(this.resolve(path));
    if (!node) throw new FsError('ENOENT', path);
    if (node.kind !== 'dir') throw new FsError('ENOTDIR', path);
    return [...node.children.entries()]
      .map(([name, child]) => ({ name, ...describe(child) }))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  mkdir(path: string, recursive: boolean): void {
    const p = this.resolve(path);
    if (!this.isWritable(p)) throw new FsError('EACCES', path);
    if (recursive) {
      const existing = this.lookup(p);
      if (existing && existing.kind !== 'dir') throw new FsError('EEXIST', path);
      this.mkdirp(p);
      return;
    }
    if (this.lookup(p)) throw new FsError('EEXIST', path);
    const parent = this.lookup(posix.dirname(p));
    if (!parent) throw new FsError('ENOENT', path);
    if (parent.kind !== 'dir') throw new FsError('ENOTDIR', path);
    parent.children.set(posix.basename(p), { kind: 'dir', mode: 0o771, mtime: nowSeconds(), children: new Map() });
  }

  remove(path: string, options: { recursive?: boolean; system?: boolean } = {}): void {
    const p = this.resolve(path);
    const node = this.lookup(p);
    if (!node) throw new FsError('ENOENT', path);
    if (!options.system && !this.isWritable(p)) throw new FsError('EACCES', path);
    if (node.kind === 'dir' && !options.recursive) throw new FsError('EISDIR', path);
    const parent = this.lookup(posix.dirname(p)) as DirNode;
    parent.children.delete(posix.basename(p));
  }

  private mkdirp(path: string): DirNode {
    let node: DirNode = this.root;
    for (const part of path.split('/').filter(Boolean)) {
      let next = node.children.get(part);
      if (!next) {
        next = { kind: 'dir', mode: 0o771, mtime: nowSeconds(), children: new Map() };
        node.children.set(part, next);
      }
      if (next.kind !== 'dir') throw new FsError('ENOTDIR', path);
      node = next;
    }
    return node;
  }

  private lookup(resolved: string): Node | undefined {
    let node: Node = this.root;
    for (const part of resolved.split('/').filter(Boolean)) {
      if (node.kind !== 'dir') return undefined;
      const next: Node | undefined = node.children.get(part);
      if (!next) return undefined;
      node = next;
    }
    return node;
  }
}

function describe(node: Node): FsStat {
  return node.kind === 'dir'
    ? { kind: 'dir', mode: S_IFDIR | node.mode, size: 4096, mtime: node.mtime }
    : { kind: 'file', mode: S_IFREG | node.mode, size: node.data.length, mtime: node.mtime };
}
