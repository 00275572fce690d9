// Whether a build output is newer than every file of its sources: npm run serve rebuilds only what a change touched.
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

/** `output` and `sources` are relative to the repository root; a missing output is stale. */
export function isFresh(output, sources) {
  try {
    const built = statSync(join(root, output)).mtimeMs;
    return built > Math.max(...sources.map((p) => newestMtime(join(root, p))));
  } catch {
    return false;
  }
}
