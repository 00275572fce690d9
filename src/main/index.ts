/**
 * Electron entry: the same engine as `npm run serve`, run in-process, behind one window and a tray.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { app, dialog, nativeImage } from 'electron';
import { loadConfig } from './engine/config.js';
import { createEngine } from './engine/engine.js';
import { describeLabSummary } from './engine/services/lab-summary.js';
import { registerIpcHandlers } from './desktop/ipc.js';
import { openSecretStore } from './desktop/keychain.js';
import { createTray } from './desktop/tray.js';
import { confineToOrigin, showMainWindow } from './desktop/window.js';

/** better-sqlite3 built for Electron's ABI by `npm start` (scripts/start.mjs), apart from the Node build. */
function electronSqlite(): string | undefined {
  const binding = join(app.getAppPath(), 'out', 'native', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  return existsSync(binding) ? binding : undefined;
}

async function main(): Promise<void> {
  const config = loadConfig(process.env);
  const secrets = await openSecretStore(config.dataDir, (message) => console.warn(`[benchtop] ${message}`));
  const engine = createEngine(config, { secrets, nativeBinding: electronSqlite() });

  // Quitting waits for in-flight requests and closes the database, so no write is cut off mid-transaction.
  let engineStopped = false;
  app.on('before-quit', (event) => {
    if (engineStopped) return;
    event.preventDefault();
    engine
      .stop()
      .catch((error: Error) => console.error(`Benchtop could not stop cleanly: ${error.message}`))
      .finally(() => {
        engineStopped = true;
        app.quit();
      });
  });

  try {
    await Promise.all([app.whenReady(), engine.start()]);
  } catch (error) {
    await engine.stop();
    throw error;
  }

  const origin = engine.url;
  confineToOrigin(origin);
  registerIpcHandlers(engine, secrets);

  const icon = nativeImage.createFromPath(join(app.getAppPath(), 'resources', 'icon.png'));
  const open = () => showMainWindow(origin, icon);
  const tray = createTray(icon, { open, quit: () => app.quit(), summary: () => describeLabSummary(engine.summary()) });
  // The icon goes as soon as quitting starts, so its menu cannot reopen a lab that is draining. This listener also
  // holds the only reference to the tray, which would vanish from the system tray if garbage-collected.
  app.once('before-quit', () => tray.destroy());

  // The lab keeps serving its phones with the window closed; the tray's Quit is what stops it.
  app.on('window-all-closed', () => {});
  app.on('second-instance', open);
  app.on('activate', open);
  open();
}

// A second copy would contend for the same port and SQLite file; it hands its launch to the first and leaves.
if (app.requestSingleInstanceLock()) {
  main().catch((error: Error) => {
    dialog.showErrorBox('Benchtop could not start', error.message);
    app.exit(1);
  });
} else {
  app.quit();
}
