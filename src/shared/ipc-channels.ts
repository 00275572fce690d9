/**
 * The one IPC contract between the main process and the preload. The renderer reaches nothing else of Electron:
 * everything it needs beyond these calls it asks of /api/v1, like any other client.
 * This module is bundled into the sandboxed preload, so it must stay free of imports.
 */

/** An interactive token for the lab owner; expiresAt is in epoch milliseconds. */
export interface OwnerToken {
  token: string;
  expiresAt: number;
}

/** What the preload exposes to the page as window.benchtop. */
export interface DesktopBridge {
  /** The engine's origin, for example http://127.0.0.1:7676. */
  getApiOrigin(): Promise<string>;
  getOwnerToken(): Promise<OwnerToken>;
  /** Opens an http(s) URL in the user's browser; anything else is refused. */
  openExternal(url: string): Promise<void>;
  /**
   * The page's own secrets in the OS keychain (or, without one, the 0600 file), under Benchtop's service name and
   * apart from the engine's: the page can neither read nor overwrite a Mac host's credentials through these.
   * `account` is 1 to 100 letters, digits, dots, dashes or underscores; null when nothing is saved.
   */
  keychainGet(account: string): Promise<string | null>;
  keychainSet(account: string, secret: string): Promise<void>;
}

export const BRIDGE_GLOBAL = 'benchtop';

/** Typed as a full map so that adding a bridge call without its channel fails to compile. */
export const IPC_CHANNELS: { readonly [K in keyof DesktopBridge]: string } = {
  getApiOrigin: 'benchtop:get-api-origin',
  getOwnerToken: 'benchtop:get-owner-token',
  openExternal: 'benchtop:open-external',
  keychainGet: 'benchtop:keychain-get',
  keychainSet: 'benchtop:keychain-set',
};
