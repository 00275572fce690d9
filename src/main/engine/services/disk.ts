import { statfsSync } from 'node:fs';

/** Free bytes on the disk that holds `path` (for an unprivileged user), or null where the system does not say. */
export function diskFreeBytes(path: string): number | null {
  try {
    const disk = statfsSync(path);
    return disk.bavail * disk.bsize;
  } catch {
    return null;
  }
}
