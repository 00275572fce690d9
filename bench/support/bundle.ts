/**
 * A smoke run on plain Node: `bench/run.ts` and the scripts the benchmarks start in processes of their own (the
 * simulated phones, the relay) bundled with esbuild into out/bench/, so that no process of the run loads TypeScript
 * through tsx. tsx took 8 to 11 s of CPU to load the benchmarks, and 1.2 s for each simulated phone's process; the
 * bundle loads in a fraction of that. Packages stay in node_modules (loaded by Node as usual), and each benchmark is a
 * chunk of its own, loaded when it runs. Every module keeps its own `import.meta.url`, so that the paths the
 * benchmarks and the tests' helpers derive from it (the repository's root, a script beside them) are the sources'.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const BENCH = fileURLToPath(new URL('..', import.meta.url));
const REPO = join(BENCH, '..');
/** The scripts that run in processes of their own, besides run.ts: bundled too, and started with plain Node. */
const SCRIPTS = ['support/phone-process.ts', 'support/iphone-process.ts', 'support/iphones-process.ts', 'support/ssh-relay-process.ts'];

/** Set in the bundled run's processes: the directory that holds its bundle. */
const BUNDLE_DIR = process.env.BENCH_BUNDLE_DIR;

/**
 * The arguments that run a script of bench/ in a node process of its own: its bundle in a bundled run, else the
 * TypeScript through tsx.
 */
export function nodeScript(script: string): string[] {
  if (BUNDLE_DIR) {
    const bundled = join(BUNDLE_DIR, relative(BENCH, script).replace(/\.ts$/, '.mjs'));
    if (existsSync(bundled)) return [bundled];
  }
  return ['--import', 'tsx', script];
}

/** Spelled in parts, so that this file's own text holds no `import.meta` followed by `.url` for the plugin to replace. */
const IMPORT_META_URL = new RegExp(['\\bimport', 'meta', 'url\\b'].join('\\.'), 'g');

/** Each source module's `import.meta.url` as the source's own, wherever its code lands in the bundle. */
const ownImportMetaUrl = {
  name: 'own-import-meta-url',
  setup(build: import('esbuild').PluginBuild) {
    build.onLoad({ filter: /\.[cm]?[jt]sx?$/ }, (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const source = readFileSync(args.path, 'utf8');
      if (!source.match(IMPORT_META_URL)) return undefined;
      const loader = /\.[cm]?tsx$/.test(args.path) ? 'tsx' : /\.[cm]?ts$/.test(args.path) ? 'ts' : /\.[cm]?jsx$/.test(args.path) ? 'jsx' : 'js';
      return { contents: source.replace(IMPORT_META_URL, JSON.stringify(pathToFileURL(args.path).href)), loader };
    });
  },
};

/** Bundles run.ts and SCRIPTS into a new directory under out/bench/ (inside the repository, so that Node finds node_modules). */
async function build(): Promise<string> {
  const { build } = await import('esbuild');
  mkdirSync(join(REPO, 'out', 'bench'), { recursive: true });
  const dir = join(REPO, 'out', 'bench', `smoke-${process.pid}-${Date.now().toString(36)}`);
  await build({
    entryPoints: ['run.ts', ...SCRIPTS].map((script) => join(BENCH, script)),
    outbase: BENCH,
    outdir: dir,
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outExtension: { '.js': '.mjs' },
    chunkNames: 'chunks/[name]-[hash]',
    // CommonJS code among the sources still calls require() for Node's built-ins.
    banner: { js: `import { createRequire as __benchRequire } from 'node:module'; const require = __benchRequire(${['import', 'meta', 'url'].join('.')});` },
    plugins: [ownImportMetaUrl],
    absWorkingDir: REPO,
    logLevel: 'error',
  });
  return dir;
}

/**
 * Builds the bundle and runs `node out/bench/.../run.mjs` with these arguments, its output this process's; removes
 * the bundle when it ends. Resolves to its exit code (1 if a signal ended it).
 */
export async function runBundled(args: string[]): Promise<number> {
  const started = performance.now();
  const dir = await build();
  console.log(`Bundled the benchmarks into ${relative(REPO, dir)} in ${((performance.now() - started) / 1000).toFixed(1)} s.`);
  try {
    const child = spawn(process.execPath, [join(dir, 'run.mjs'), ...args], { stdio: 'inherit', env: { ...process.env, BENCH_BUNDLE_DIR: dir } });
    // Stopped by CI or a person: the run gets the signal too and cleans up after itself before it exits.
    const forward = (signal: NodeJS.Signals) => () => child.kill(signal);
    const forwards = (['SIGINT', 'SIGTERM'] as const).map((signal) => [signal, forward(signal)] as const);
    for (const [signal, handler] of forwards) process.on(signal, handler);
    const code = await new Promise<number>((resolve) => {
      child.on('error', () => resolve(1));
      child.on('exit', (exit, signal) => resolve(signal ? 1 : exit ?? 1));
    });
    for (const [signal, handler] of forwards) process.off(signal, handler);
    return code;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
