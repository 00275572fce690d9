// npm start: build the app and run it in Electron, or say in one line why that cannot happen on this machine.
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DESKTOP, ensureDependencies, installReason } from './dependencies.mjs';

// Straight after `git clone`, this installs node_modules first, then the Electron shell's own package (desktop/):
// Electron and its download tooling are installed here alone, so `npm run serve` and `npm test` never meet them.
await ensureDependencies();
const [major, minor] = process.versions.node.split('.').map(Number);
if (installReason(DESKTOP) && (major < 22 || (major === 22 && minor < 12))) {
  // npm's EBADENGINE lines that follow say this at length.
  console.log(`Electron's download tooling asks for Node.js 22.12 or newer (this is ${process.version}): npm warns about it below, and the install goes on.`);
}
await ensureDependencies(DESKTOP);

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// Electron resolves from desktop/node_modules, as the desktop build's tsconfig (tsconfig.desktop.json) does.
const require = createRequire(join(DESKTOP, 'package.json'));

// This is the lookup require('electron') does (ELECTRON_OVERRIDE_DIST_PATH included), minus its fallback: when the
// binary is missing, that require starts a download, which cannot succeed offline and buries the cause under its output.
function electronBinary() {
  let electronDir;
  try {
    electronDir = dirname(require.resolve('electron/package.json'));
  } catch {
    return undefined;
  }
  const pathFile = join(electronDir, 'path.txt');
  if (!existsSync(pathFile)) return undefined;
  const distDir = process.env.ELECTRON_OVERRIDE_DIST_PATH || join(electronDir, 'dist');
  const binary = join(distDir, readFileSync(pathFile, 'utf8'));
  return existsSync(binary) ? binary : undefined;
}

// src/main/index.ts loads the addon from this same path.
const NATIVE_DIR = join(root, 'out', 'native', 'better-sqlite3');

/**
 * better-sqlite3 built for Electron's ABI, in a copy of the package under out/native: the Node build in node_modules,
 * which the tests and `npm run serve` load, is never replaced. The package's own install script does the work
 * (prebuild-install, else node-gyp), told to target Electron; it runs again only when Electron's version changes.
 */
function prepareElectronSqlite() {
  const electronVersion = require('electron/package.json').version;
  const stamp = join(NATIVE_DIR, '.electron-version');
  const binding = join(NATIVE_DIR, 'build', 'Release', 'better_sqlite3.node');
  if (existsSync(binding) && existsSync(stamp) && readFileSync(stamp, 'utf8') === electronVersion) return;
  console.log(`Building better-sqlite3 for Electron ${electronVersion} in ${NATIVE_DIR}`);
  const source = dirname(require.resolve('better-sqlite3/package.json'));
  rmSync(NATIVE_DIR, { recursive: true, force: true });
  cpSync(source, NATIVE_DIR, { recursive: true, filter: (path) => !path.startsWith(join(source, 'build')) });
  const env = {
    ...process.env,
    npm_config_runtime: 'electron',
    npm_config_target: electronVersion,
    npm_config_disturl: 'https://electronjs.org/headers',
    npm_config_arch: process.arch,
  };
  // nodedir (an npm config, or node-gyp's own) points node-gyp at Node's headers, the wrong ones for Electron.
  delete env.npm_config_nodedir;
  delete env.npm_package_config_node_gyp_nodedir;
  const built = spawnSync('npm', ['run', 'install'], { cwd: NATIVE_DIR, env, stdio: 'inherit', shell: process.platform === 'win32' });
  if (built.status !== 0) {
    console.error(`Could not build better-sqlite3 for Electron ${electronVersion}; see the output above.`);
    process.exit(1);
  }
  writeFileSync(stamp, electronVersion);
}

const electron = electronBinary();
if (!electron) {
  console.error('The Electron binary is not installed on this machine; use `npm run serve` to run the headless engine.');
  process.exit(1);
}

// electron-vite reads Electron's version to pick its build targets, through a lookup from its own folder that cannot
// see desktop/node_modules: it takes the version from this variable instead.
process.env.ELECTRON_MAJOR_VER = require('electron/package.json').version.split('.')[0];
const { build } = await import('electron-vite');
await build({ root });

prepareElectronSqlite();
const child = spawn(electron, [root], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
