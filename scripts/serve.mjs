// npm run serve: the headless engine. The engine is bundled into one file first (and again only when a source
// changed), because Node resolving and reading a thousand module files costs more start-up time than the
// engine's own work: the bundle is ready in well under a second and holds less memory.
import { randomUUID } from 'node:crypto';
import { readdirSync, renameSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const bundle = join(root, 'out', 'serve', 'serve.mjs');

function newestMtime(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  let newest = stat.mtimeMs;
  for (const entry of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, entry)));
  return newest;
}

function bundleIsFresh() {
  try {
    const built = statSync(bundle).mtimeMs;
    // The demo mode bundles the simulated phone from test/support.
    const sources = ['src/main', 'src/shared', 'test/support/android-sim', 'package-lock.json'].map((p) => newestMtime(join(root, p)));
    return built > Math.max(...sources);
  } catch {
    return false;
  }
}

if (!bundleIsFresh()) {
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [join(root, 'src/main/serve.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // A native addon loads from node_modules, never from a bundle (ssh2 has optional ones: sshcrypto, cpu-features).
    external: ['better-sqlite3', 'electron', 'ssh2'],
    // CommonJS dependencies inside an ES module bundle still call require() for Node's built-ins.
    banner: { js: "import { createRequire as __benchtopRequire } from 'node:module'; const require = __benchtopRequire(import.meta.url);" },
    write: false,
    logLevel: 'warning',
  });
  // Written aside and renamed, so that two starts at once never run a half-written file.
  mkdirSync(dirname(bundle), { recursive: true });
  const temporary = `${bundle}.${randomUUID()}.tmp`;
  writeFileSync(temporary, result.outputFiles[0].contents);
  renameSync(temporary, bundle);
}

// The GUI the engine serves at /, built only when its sources changed: a clean clone serves it on the first start.
const { buildRenderer } = await import('./build-renderer.mjs');
await buildRenderer();

await import(pathToFileURL(bundle).href);
