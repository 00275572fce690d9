import { Menu, Tray, type NativeImage } from 'electron';

const REFRESH_MS = 5000;

/**
 * The tray is how the lab is reached, and quit, while its window is closed. It shows the lab at a glance (phones free
 * and in use, instances running), refreshed every few seconds from `summary`. Keep the returned Tray referenced.
 */
export function createTray(icon: NativeImage, actions: { open(): void; quit(): void; summary(): string }): Tray {
  const tray = new Tray(icon.resize({ width: 16, height: 16 }));
  const show = () => {
    const line = actions.summary();
    tray.setToolTip(`Benchtop: ${line}`);
    tray.setContextMenu(
      Menu.buildFromTemplate([
        { label: line, enabled: false },
        { type: 'separator' },
        { label: 'Open Benchtop', click: actions.open },
        { type: 'separator' },
        { label: 'Quit Benchtop', click: actions.quit },
      ]),
    );
  };
  show();
  const timer = setInterval(() => {
    if (tray.isDestroyed()) clearInterval(timer);
    else show();
  }, REFRESH_MS);
  timer.unref();
  tray.on('click', actions.open);
  return tray;
}
