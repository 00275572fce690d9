// npm start: build the app and run it in Electron, or say in one line why that cannot happen on this machine.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);

// This is the lookup require('electron') does, minus its fallback: when the binary is missing, that require starts
// a download, which cannot succeed offline and buries the cause under its output.
function electronBinary() {
  let electronDir;
  try {
    electronDir = dirname(require.resolve('electron/package.json'));
  } catch {
    return undefined;
  }
  const pathFile = join(electronDir, 'path.txt');
  if (!existsSync(pathFile)) return undefined;
  const binary = join(electronDir, 'dist', readFileSync(pathFile, 'utf8'));
  return existsSync(binary) ? binary : undefined;
}

const electron = electronBinary();
if (!electron) {
  console.error('The Electron binary is not installed on this machine; use `npm run serve` to run the headless engine.');
  process.exit(1);
}

const { build } = await import('electron-vite');
await build({ root });

// The engine's better-sqlite3 must also be built for Electron's ABI rather than Node's before this window can open
// its database; building it belongs to the desktop packaging work, not to this script.
const child = spawn(electron, [root], { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
