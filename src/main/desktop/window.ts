import { join } from 'node:path';
import { app, BrowserWindow, session, shell, type NativeImage } from 'electron';
import { builtPageScriptHashes } from '../engine/api/gui.js';
import { contentSecurityPolicy } from './csp.js';

const PRELOAD = join(import.meta.dirname, '../preload/index.cjs');

let mainWindow: BrowserWindow | undefined;

/** Shows the one window, creating it again if it was closed: closing it leaves the lab serving. */
export function showMainWindow(origin: string, icon: NativeImage): void {
  if (mainWindow) {
    if (mainWindow.isMinimized()) mainWindow.restore();
    mainWindow.show();
    mainWindow.focus();
    return;
  }
  const window = new BrowserWindow({
    title: 'Benchtop',
    width: 1280,
    height: 800,
    icon,
    webPreferences: { preload: PRELOAD, contextIsolation: true, sandbox: true, nodeIntegration: false },
  });
  mainWindow = window;
  window.on('closed', () => {
    mainWindow = undefined;
  });
  window.loadURL(origin).catch((error: Error) => console.error(`Benchtop could not load ${origin}: ${error.message}`));
}

/**
 * The app shows only the engine's own pages. Links, window.open and navigations elsewhere go to the user's
 * browser, and no request may leave for another host, so no page can pull in remote content. Every response carries
 * a strict CSP, set here rather than trusted to the server. Call once, after ready.
 */
export function confineToOrigin(origin: string): void {
  const engineHost = new URL(origin).host;
  const isEngine = (url: string) => URL.canParse(url) && new URL(url).host === engineHost;
  const openOutside = (url: string) => {
    openExternal(url).catch((error: Error) => console.warn(error.message));
  };

  session.defaultSession.webRequest.onBeforeRequest(
    { urls: ['http://*/*', 'https://*/*', 'ws://*/*', 'wss://*/*'] },
    (details, callback) => callback({ cancel: !isEngine(details.url) }),
  );
  // The page the engine serves is this build's: its inline script (the first screen's early requests) runs by hash.
  const csp = contentSecurityPolicy(origin, builtPageScriptHashes());
  session.defaultSession.webRequest.onHeadersReceived((details, callback) => {
    const headers = Object.fromEntries(
      Object.entries(details.responseHeaders ?? {}).filter(([name]) => name.toLowerCase() !== 'content-security-policy'),
    );
    callback({ responseHeaders: { ...headers, 'Content-Security-Policy': [csp] } });
  });
  session.defaultSession.setPermissionRequestHandler((_contents, _permission, callback) => callback(false));

  app.on('web-contents-created', (_event, contents) => {
    contents.setWindowOpenHandler(({ url }) => {
      openOutside(url);
      return { action: 'deny' };
    });
    contents.on('will-navigate', (event) => {
      if (isEngine(event.url)) return;
      event.preventDefault();
      openOutside(event.url);
    });
  });
}

/** Only http(s): handing file: or a custom scheme to the OS could run a program on the user's machine. */
export async function openExternal(url: string): Promise<void> {
  const protocol = URL.canParse(url) ? new URL(url).protocol : '';
  if (protocol !== 'http:' && protocol !== 'https:') throw new Error(`Benchtop opens only http(s) links, not ${url}.`);
  await shell.openExternal(url);
}
