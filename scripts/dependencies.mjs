// npm run serve, npm run demo, npm start and npm test begin here, so that they work straight after `git clone`:
// when node_modules is missing, or package-lock.json changed since the last install (a pull brought a new
// dependency), the locked dependencies are installed first with `npm ci`. Nothing has to be remembered before them.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { root } from './freshness.mjs';

/** The Electron shell's own package (desktop/package.json): installed by `npm start` alone. */
export const DESKTOP = join(root, 'desktop');

/** Why `dir`'s node_modules must be (re)installed, or undefined when it matches its package-lock.json. */
export function installReason(dir = root) {
  const LOCK = join(dir, 'package-lock.json');
  // npm writes this record of what it installed at the end of every install: without it, none has finished.
  const INSTALLED = join(dir, 'node_modules', '.package-lock.json');
  if (!existsSync(INSTALLED)) return 'node_modules is missing';
  // A lock no newer than the install is the common case, and costs two stats instead of parsing two large files.
  if (statSync(LOCK).mtimeMs <= statSync(INSTALLED).mtimeMs) return undefined;
  // Newer is not changed: a checkout or merge that rewrote the lock with the same packages needs no install.
  const wanted = JSON.parse(readFileSync(LOCK, 'utf8')).packages;
  const installed = JSON.parse(readFileSync(INSTALLED, 'utf8')).packages;
  const changed = 'package-lock.json changed since the last install';
  for (const [path, entry] of Object.entries(wanted)) {
    if (path === '') continue;
    // An optional package for another platform (esbuild's and rolldown's binaries) is never installed here.
    if (!installed[path]) {
      if (!entry.optional) return changed;
    } else if (installed[path].version !== entry.version) return changed;
  }
  return Object.keys(installed).some((path) => !wanted[path]) ? changed : undefined;
}

/**
 * Node's own headers, when they sit beside the running node (official tarballs, nvm, Debian and NodeSource packages
 * all ship them under <prefix>/include/node). node-gyp, which compiles better-sqlite3 when no prebuilt binary can be
 * downloaded, would otherwise download them from nodejs.org, which an offline build box cannot reach.
 */
function localNodeHeaders() {
  const prefix = dirname(dirname(process.execPath));
  return existsSync(join(prefix, 'include', 'node', 'node.h')) ? prefix : undefined;
}

/**
 * Runs `npm ci` in `dir` (the repository, or the Electron shell's desktop/) when installReason() says so, saying so in
 * one line; resolves once its node_modules is ready.
 */
export async function ensureDependencies(dir = root) {
  // The floor of what the tooling declares (vite, eslint); an older Node would fail later, and less clearly.
  const [major, minor] = process.versions.node.split('.').map(Number);
  if (major < 20 || (major === 20 && minor < 19)) {
    console.error(`Benchtop needs Node.js 20.19 or newer; this is ${process.version}.`);
    process.exit(1);
  }
  const reason = installReason(dir);
  if (!reason) return;
  console.log(dir === root
    ? `${reason}: installing the locked dependencies with npm ci (a first install takes about 2 minutes, most of it compiling better-sqlite3)...`
    : `desktop/${reason}: installing Electron for the desktop app with npm ci --prefix desktop...`);
  const env = { ...process.env };
  const headers = localNodeHeaders();
  // node-gyp's own setting (npm_package_config_node_gyp_*), not an npm config: npm 11 warns about unknown configs.
  if (headers && !env.npm_package_config_node_gyp_nodedir) env.npm_package_config_node_gyp_nodedir = headers;
  const started = Date.now();
  const child = spawn('npm', ['ci', '--no-fund', '--no-audit'], { cwd: dir, env, stdio: 'inherit', shell: process.platform === 'win32' });
  // On a terminal npm draws its own progress; in a log (CI, an editor's task runner) a line every 20 s shows it lives.
  const progress = process.stdout.isTTY
    ? undefined
    : setInterval(() => console.log(`npm ci: still installing (${Math.round((Date.now() - started) / 1000)} s)`), 20_000);
  const [code, signal] = await new Promise((resolve) => child.on('exit', (c, s) => resolve([c, s])));
  clearInterval(progress);
  if (code !== 0) {
    console.error(`npm ci failed (${signal ?? `exit code ${code}`}); see its output above.`);
    process.exit(1);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await ensureDependencies();
