import { BRIDGE_GLOBAL, type DesktopBridge } from '../shared/ipc-channels.js';

/** The preload's bridge in the desktop window; undefined in a browser. */
export const desktopBridge = (): DesktopBridge | undefined =>
  (window as unknown as Record<string, DesktopBridge | undefined>)[BRIDGE_GLOBAL];
