// Builds the renderer into out/renderer when a source changed since the last build (or always with --force):
// what `npm run serve` and the end-to-end tests serve at /.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isFresh, root } from './freshness.mjs';

const rendererIsFresh = () =>
  isFresh('out/renderer/index.html', ['src/renderer', 'src/shared', 'vite.renderer.config.ts', 'package-lock.json']);

export async function buildRenderer({ force = false } = {}) {
  if (!force && rendererIsFresh()) return false;
  const { build } = await import('vite');
  // Vite loads its TypeScript config itself; Node 20 cannot import a .ts file.
  // Always React's production build: Vite and its React plugin take NODE_ENV from the environment, and a build
  // started under vitest (NODE_ENV=test) shipped React's development build, which rendered the Fleet screen several
  // times slower. Set for the build only: this runs inside `npm run serve` too.
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ configFile: join(root, 'vite.renderer.config.ts'), mode: 'production' });
  } finally {
    if (nodeEnv === undefined) delete process.env.NODE_ENV;
    else process.env.NODE_ENV = nodeEnv;
  }
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  const built = await buildRenderer({ force: process.argv.includes('--force') });
  console.log(built ? `Built the renderer into out/renderer in ${((performance.now() - started) / 1000).toFixed(1)} s.` : 'The renderer in out/renderer is up to date.');
}
