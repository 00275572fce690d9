// npm run serve: the headless engine. The engine is bundled into one file first (and again only when a source
// changed, scripts/build-serve.mjs), because Node resolving and reading a thousand module files costs more start-up
// time than the engine's own work: the bundle is ready in well under a second and holds less memory.
import { ensureDependencies } from './dependencies.mjs';

// Straight after `git clone`, this installs node_modules first.
await ensureDependencies();

const { buildServe, bundle } = await import('./build-serve.mjs');
await buildServe();

// The GUI the engine serves at /, built only when its sources changed: a clean clone serves it on the first start.
const { buildRenderer } = await import('./build-renderer.mjs');
await buildRenderer();

// The bundle's compiled code comes from V8's code cache, written beside it by the first start after a build.
const { runWithCodeCache } = await import('./code-cache.mjs');
runWithCodeCache(bundle);
