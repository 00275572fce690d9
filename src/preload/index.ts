/**
 * Runs sandboxed, with context isolation: the page gets these three calls and never ipcRenderer itself.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { BRIDGE_GLOBAL, IPC_CHANNELS, type DesktopBridge } from '../main/desktop/ipc-channels.js';

const bridge: DesktopBridge = {
  getApiOrigin: () => ipcRenderer.invoke(IPC_CHANNELS.getApiOrigin),
  getOwnerToken: () => ipcRenderer.invoke(IPC_CHANNELS.getOwnerToken),
  openExternal: (url) => ipcRenderer.invoke(IPC_CHANNELS.openExternal, url),
};

contextBridge.exposeInMainWorld(BRIDGE_GLOBAL, bridge);
