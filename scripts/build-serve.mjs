// The engine bundle that `npm run serve` runs, built into out/serve when a source changed since the last build (or
// always with --force). Its own module so that the bundle test runs exactly what `npm run serve` runs.
import { randomUUID } from 'node:crypto';
import { mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isFresh, root } from './freshness.mjs';

export const bundle = join(root, 'out', 'serve', 'serve.cjs');
/**
 * esbuild's account of the build (each input, what it imports and how, and its format), kept beside the bundle for
 * the tests of what the bundle loads at start and of the names each dynamic import takes.
 */
export const metafile = join(root, 'out', 'serve', 'metafile.json');

/**
 * V8 keeps a module's source for as long as the process runs, and one character beyond Latin-1 anywhere in it makes
 * the whole source a two-byte string: an em dash in a comment costs the engine 5 MB of memory. esbuild escapes what
 * it must in strings, not in comments or regular expressions, so the rest is escaped here: \uXXXX means the same
 * character in a string, a template, a regular expression and an identifier, and nothing in a comment.
 */
function asciiOnly(code) {
  return code.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * Two packages that Fastify plugins require at load but call only for what this engine never or rarely does: yaml
 * (@fastify/swagger, for the OpenAPI document as YAML) and glob (@fastify/static, for `wildcard: false`, which the
 * GUI does not use). In the bundle they are small stand-ins that require the real package from node_modules on first
 * use: 300 KB less for Node to compile and run at every start.
 */
const LAZY = {
  yaml: 'module.exports = new Proxy({}, { get: (_, name) => require("yaml")[name] });',
  glob: 'exports.glob = (...args) => require("glob").glob(...args);',
};
const loadedOnFirstUse = {
  name: 'loaded-on-first-use',
  setup(build) {
    const filter = new RegExp(`^(${Object.keys(LAZY).join('|')})$`);
    // The stand-in's own require() is the real package, left to Node.
    build.onResolve({ filter }, (args) => (args.namespace === 'lazy' ? { path: args.path, external: true } : { path: args.path, namespace: 'lazy' }));
    build.onLoad({ filter: /.*/, namespace: 'lazy' }, (args) => ({ contents: LAZY[args.path], loader: 'js' }));
  },
};

/**
 * usbmux.ts imports fleet/android/adbkit-first.ts so that, unbundled, adbkit turns on Bluebird's cancellation before
 * appium-ios-device's @appium/support loads the same node_modules/bluebird. In the bundle adbkit has a Bluebird of its
 * own, which appium-ios-device (required from node_modules) never shares: there the import would only load adbkit,
 * Bluebird and node-forge (650 KB) on the way to the first answer, which the Android fleet loads right after it.
 */
const adbkitWithTheFleet = {
  name: 'adbkit-with-the-fleet',
  setup(build) {
    build.onResolve({ filter: /\/adbkit-first\.js$/ }, (args) =>
      args.importer.endsWith(join('fleet', 'ios', 'usbmux.ts')) ? { path: args.path, namespace: 'nothing' } : undefined);
    build.onLoad({ filter: /.*/, namespace: 'nothing' }, () => ({ contents: '', loader: 'js' }));
  },
};

// The demo mode bundles the simulated phone from src/sim.
const bundleIsFresh = () =>
  isFresh('out/serve/serve.cjs', ['src/main', 'src/shared', 'src/sim', 'src/protocols', 'package-lock.json', 'scripts/build-serve.mjs']);

/** Builds the bundle unless it is newer than every source; resolves to whether it built. */
export async function buildServe({ force = false } = {}) {
  if (!force && bundleIsFresh()) return false;
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [join(root, 'src/main/serve.ts')],
    bundle: true,
    platform: 'node',
    // CommonJS, so that scripts/code-cache.mjs can run it from V8's code cache (Node 20 caches no ES module's code).
    // What is imported on demand (the demo's simulated phones, the iPhone fleet, the MCP server) stays behind
    // import(), which esbuild turns into a require() of a module initialized at its first import: compiled from the
    // cache, code that never runs costs the start nothing.
    format: 'cjs',
    target: 'node20',
    supported: { 'dynamic-import': false },
    outfile: bundle,
    // A native addon loads from node_modules, never from a bundle (ssh2 has optional ones: sshcrypto, cpu-features;
    // sharp is the demo phones' JPEG encoder).
    // The rest are large and loaded on first use (a model request, an app upload, LAN sharing's certificate): left
    // out of the bundle, a lab that never uses them does not parse them at every start. Each must be one that
    // require() can load, as the bundle loads them: plist, an ES module for import only, is bundled instead.
    external: ['better-sqlite3', 'sharp', 'electron', 'ssh2', 'undici', 'selfsigned', '@devicefarmer/adbkit-apkreader', 'bplist-parser', 'yauzl'],
    plugins: [loadedOnFirstUse, adbkitWithTheFleet],
    // import.meta.url, which the sources use to find packages and the GUI from where they run: the bundle's own. The
    // banner starts with the strict mode esbuild gives the file (ES modules are strict), which only the first
    // statement can turn on.
    define: { 'import.meta.url': '__benchtopBundleUrl' },
    banner: { js: "'use strict'; const __benchtopBundleUrl = require('node:url').pathToFileURL(__filename).href;" },
    // Whitespace and comments out, identifiers kept (stack traces still name functions): V8 reads the whole bundle
    // before it runs a line of it, and at a third less text the engine answers its first request sooner.
    minifyWhitespace: true,
    minifySyntax: true,
    legalComments: 'none',
    // Paths in the metafile relative to the repository, wherever the build was started from.
    absWorkingDir: root,
    metafile: true,
    write: false,
    logLevel: 'warning',
  });
  // Each file is written aside and renamed, the bundle last, so that two starts at once never run a half-written one.
  const [entry] = result.outputFiles;
  for (const file of [{ path: metafile, text: JSON.stringify(result.metafile) }, { path: entry.path, text: entry.text }]) {
    mkdirSync(dirname(file.path), { recursive: true });
    const temporary = `${file.path}.${randomUUID()}.tmp`;
    writeFileSync(temporary, asciiOnly(file.text));
    renameSync(temporary, file.path);
  }
  // The ES module bundle and its chunks that builds before this one wrote.
  for (const old of ['serve.mjs', 'chunks']) rmSync(join(dirname(bundle), old), { recursive: true, force: true });
  return true;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  const built = await buildServe({ force: process.argv.includes('--force') });
  console.log(built ? `Built the engine into out/serve in ${((performance.now() - started) / 1000).toFixed(1)} s.` : 'The engine in out/serve is up to date.');
}
