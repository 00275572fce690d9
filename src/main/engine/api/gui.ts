import fastifyStatic from '@fastify/static';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { App } from './http.js';

/**
 * The built renderer's directory: out/renderer under the package root, found from this module's own place, which is
 * src/main/engine/api in tests and out/serve (the bundle) or out/main (Electron) when running.
 */
export function rendererDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
  return join(dir, 'out', 'renderer');
}

/** A host header worth echoing into the CSP: a name or address with an optional port, nothing else. */
const HOST = /^[A-Za-z0-9.-]+(:\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](:\d{1,5})?$/;

/**
 * The CSP sources of a page's inline scripts, by hash: index.html carries one (the first screen's early requests,
 * vite.renderer.config.ts), and only that exact script may run inline, never one injected into the page.
 */
export function inlineScriptHashes(html: string): string[] {
  return [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(([, code]) => `'sha256-${createHash('sha256').update(code!).digest('base64')}'`);
}

/** The hashes of the built page's inline scripts, or none when the GUI is not built (the page then has none). */
export function builtPageScriptHashes(dir = rendererDir()): string[] {
  const file = join(dir, 'index.html');
  return existsSync(file) ? inlineScriptHashes(readFileSync(file, 'utf8')) : [];
}

/**
 * The page may load only its own files and talk only to its own origin (HTTP and WebSocket); images also come
 * from blob: (live screen frames, assets fetched with the bearer) and data: (screenshots in tool calls).
 * Inline styles are allowed because xterm.js writes its theme into a <style> element; scripts are 'self' and the
 * page's own inline scripts, named by hash.
 */
export function contentSecurityPolicy(host: string | undefined, scriptHashes: readonly string[] = []): string {
  const sockets = host && HOST.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'self'",
    ["script-src 'self'", ...scriptHashes].join(' '),
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' blob: data:",
    // A test result's video plays from the blob its bytes were fetched into (with the bearer).
    "media-src 'self' blob:",
    `connect-src 'self'${sockets}`,
    "worker-src 'self'",
    "font-src 'self'",
    "object-src 'none'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

const NOT_BUILT =
  '<!doctype html><title>Benchtop</title><h1>Benchtop</h1><p>The lab is running, but its GUI is not built: run ' +
  '<code>npm run build:renderer</code> (npm run serve does it for you). The API is at <a href="/api/v1/openapi.json">/api/v1</a>.</p>';

/** index.html as last read, with its scripts' hashes: read again only when a build replaced it. */
interface IndexPage {
  mtimeMs: number;
  html: string;
  scriptHashes: string[];
}

/**
 * Serves the GUI at /: hashed assets with a long cache, and index.html, with the CSP, for any other path that is not
 * the API, so that a deep link such as /sessions/<id> loads the app. Every route here is public: the page carries
 * no data, and it signs in through the API.
 */
export async function registerGui(app: App, dir = rendererDir()): Promise<void> {
  // Only reply.sendFile: the routes below carry the config the auth hook reads.
  await app.register(fastifyStatic, { root: dir, serve: false });

  const publicRoute = { config: { public: true }, schema: { hide: true } };
  app.get('/assets/*', publicRoute, (req, reply) => {
    // File names carry a content hash: a new build has new names.
    return reply.sendFile(`assets/${(req.params as { '*': string })['*']}`, { maxAge: '365d', immutable: true });
  });

  let page: IndexPage | undefined;
  const indexPage = (): IndexPage | undefined => {
    const file = join(dir, 'index.html');
    const mtimeMs = statSync(file, { throwIfNoEntry: false })?.mtimeMs;
    if (mtimeMs === undefined) return undefined;
    if (page?.mtimeMs !== mtimeMs) {
      const html = readFileSync(file, 'utf8');
      page = { mtimeMs, html, scriptHashes: inlineScriptHashes(html) };
    }
    return page;
  };
  const index = (req: FastifyRequest, reply: FastifyReply) => {
    // The page names the current build's assets: it is checked again on every load.
    const current = indexPage();
    reply.header('content-security-policy', contentSecurityPolicy(req.headers.host, current?.scriptHashes)).header('cache-control', 'no-cache');
    return reply.type('text/html; charset=utf-8').send(current?.html ?? NOT_BUILT);
  };
  app.get('/', publicRoute, (req, reply) => index(req, reply));
  app.get('/*', publicRoute, (req, reply) => {
    // Unknown API paths stay JSON 404s; the GUI has no path under /api.
    if (req.url.startsWith('/api/') || req.url === '/api') return reply.callNotFound();
    return index(req, reply);
  });
}
