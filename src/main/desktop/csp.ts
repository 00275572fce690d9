/**
 * The Content-Security-Policy the Electron window enforces on every response of the engine, whatever the engine
 * itself sends: only the engine's own scripts run, nothing is fetched from elsewhere, and the page cannot be framed.
 * Styles may be inline (React style props, xterm.js's injected sheet); an inline script only if it is the page's own,
 * named by its hash (the first screen's early requests in index.html). No Electron import: tested on Node.
 */
export function contentSecurityPolicy(origin: string, scriptHashes: readonly string[] = []): string {
  const { host, protocol } = new URL(origin);
  // 'self' covers ws: on the same host in current Chromium, but the live screen and terminals must not hinge on it.
  const sockets = `${protocol === 'https:' ? 'wss' : 'ws'}://${host}`;
  return [
    "default-src 'self'",
    ["script-src 'self'", ...scriptHashes].join(' '),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    "media-src 'self' blob:",
    `connect-src 'self' ${sockets}`,
    "worker-src 'self' blob:",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}
