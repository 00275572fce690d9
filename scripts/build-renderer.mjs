// Builds the renderer into out/renderer when a source changed since the last build (or always with --force):
// what `npm run serve` and the end-to-end tests serve at /.
import { readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const index = join(root, 'out', 'renderer', 'index.html');

function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

export function rendererIsFresh() {
  try {
    const built = statSync(index).mtimeMs;
    const sources = ['src/renderer', 'src/shared', 'src/main/desktop/ipc-channels.ts', 'vite.renderer.config.ts', 'package-lock.json'];
    return built > Math.max(...sources.map((p) => newestMtime(join(root, p))));
  } catch {
    return false;
  }
}

export async function buildRenderer({ force = false } = {}) {
  if (!force && rendererIsFresh()) return false;
  const { build } = await import('vite');
  // Vite loads its TypeScript config itself; Node 20 cannot import a .ts file.
  await build({ configFile: join(root, 'vite.renderer.config.ts') });
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  const built = await buildRenderer({ force: process.argv.includes('--force') });
  console.log(built ? `Built the renderer into out/renderer in ${((performance.now() - started) / 1000).toFixed(1)} s.` : 'The renderer in out/renderer is up to date.');
}
