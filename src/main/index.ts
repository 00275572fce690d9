/**
 * Electron entry: the same engine as `npm run serve`, run in-process, behind one window and a tray.
 */
import { join } from 'node:path';
import { app, dialog, nativeImage } from 'electron';
import { loadConfig } from './engine/config.js';
import { createEngine } from './engine/engine.js';
import { registerIpcHandlers } from './desktop/ipc.js';
import { createTray } from './desktop/tray.js';
import { confineToOrigin, showMainWindow } from './desktop/window.js';

async function main(): Promise<void> {
  const engine = createEngine(loadConfig(process.env));

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
  registerIpcHandlers(engine);

  const icon = nativeImage.createFromPath(join(app.getAppPath(), 'resources', 'icon.png'));
  const open = () => showMainWindow(origin, icon);
  const tray = createTray(icon, { open, quit: () => app.quit() });
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
