import { Menu, Tray, type NativeImage } from 'electron';

/** The tray is how the lab is reached, and quit, while its window is closed. Keep the returned Tray referenced. */
export function createTray(icon: NativeImage, actions: { open(): void; quit(): void }): Tray {
  const tray = new Tray(icon.resize({ width: 16, height: 16 }));
  tray.setToolTip('Benchtop');
  tray.setContextMenu(
    Menu.buildFromTemplate([
      { label: 'Open Benchtop', click: actions.open },
      { type: 'separator' },
      { label: 'Quit Benchtop', click: actions.quit },
    ]),
  );
  tray.on('click', actions.open);
  return tray;
}
