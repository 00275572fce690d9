// npm run build: the desktop app's main, preload and renderer bundles in out/, without Electron installed. Only
// `npm start` installs Electron (in desktop/); the build needs nothing of it but its major version, which picks the
// bundles' Chrome and Node targets: taken from the version desktop/package.json pins.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DESKTOP, ensureDependencies } from './dependencies.mjs';
import { root } from './freshness.mjs';

await ensureDependencies();
const pinned = JSON.parse(readFileSync(join(DESKTOP, 'package.json'), 'utf8')).dependencies.electron;
// electron-vite would look for electron/package.json from its own folder, which cannot see desktop/node_modules.
process.env.ELECTRON_MAJOR_VER ||= /\d+/.exec(pinned)[0];
const { build } = await import('electron-vite');
await build({ root });
