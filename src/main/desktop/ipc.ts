import { ipcMain, type IpcMainInvokeEvent } from 'electron';
import type { Engine } from '../engine/engine.js';
import type { SecretStore } from '../engine/secrets.js';
import { IPC_CHANNELS, type DesktopBridge } from '../../shared/ipc-channels.js';
import { pageSecrets } from './page-secrets.js';
import { openExternal } from './window.js';

/** Arguments arrive from the page, so each handler takes them as unknown and checks them itself. */
type Handlers = {
  [K in keyof DesktopBridge]: (...args: unknown[]) => ReturnType<DesktopBridge[K]> | Awaited<ReturnType<DesktopBridge[K]>>;
};

export function registerIpcHandlers(engine: Engine, secrets: SecretStore): void {
  const keychain = pageSecrets(secrets);
  const handlers: Handlers = {
    getApiOrigin: () => engine.url,
    getOwnerToken: () => engine.ownerToken(),
    openExternal: (url) => {
      if (typeof url !== 'string') throw new TypeError('openExternal takes a URL string.');
      return openExternal(url);
    },
    keychainGet: (account) => keychain.get(account),
    keychainSet: (account, secret) => keychain.set(account, secret),
  };

  for (const method of Object.keys(handlers) as (keyof DesktopBridge)[]) {
    ipcMain.handle(IPC_CHANNELS[method], (event, ...args) => {
      assertFromEngine(event, engine.url);
      return handlers[method](...args);
    });
  }
}

/** The owner token signs in as the lab owner: only a frame showing the engine's own page may have it. */
function assertFromEngine(event: IpcMainInvokeEvent, origin: string): void {
  const frameUrl = event.senderFrame?.url ?? '';
  if (!URL.canParse(frameUrl) || new URL(frameUrl).origin !== origin) {
    throw new Error(`Refused an IPC call from ${frameUrl || 'a detached frame'}.`);
  }
}
