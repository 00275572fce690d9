/**
 * Runs sandboxed, with context isolation: the page gets these few calls and never ipcRenderer itself.
 */
import { contextBridge, ipcRenderer } from 'electron';
import { BRIDGE_GLOBAL, IPC_CHANNELS, type DesktopBridge } from '../shared/ipc-channels.js';

const bridge: DesktopBridge = {
  getApiOrigin: () => ipcRenderer.invoke(IPC_CHANNELS.getApiOrigin),
  getOwnerToken: () => ipcRenderer.invoke(IPC_CHANNELS.getOwnerToken),
  openExternal: (url) => ipcRenderer.invoke(IPC_CHANNELS.openExternal, url),
  keychainGet: (account) => ipcRenderer.invoke(IPC_CHANNELS.keychainGet, account),
  keychainSet: (account, secret) => ipcRenderer.invoke(IPC_CHANNELS.keychainSet, account, secret),
};

contextBridge.exposeInMainWorld(BRIDGE_GLOBAL, bridge);
