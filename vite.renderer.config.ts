/**
 * The renderer's build, shared by electron-vite (the desktop app) and by `npm run serve` and the end-to-end tests
 * (the engine serves out/renderer at /). Absolute asset paths: the page is served at every SPA path.
 */
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import type { Plugin, Rolldown, UserConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * prefetch.ts, inlined at the top of index.html: it starts the first screen's requests as soon as the page's first
 * bytes are parsed, while the browser still downloads and parses the app's bundle. As one more module in index.html it
 * would be bundled into the app's entry and run only after it. As a file of its own (a classic <script src>) it still
 * waited 15-30 ms for its own request in a fresh tab. Inline, it runs when the parser reaches it; the CSP allows it
 * by its hash (api/gui.ts). It imports and exports nothing, so its code is wrapped in a function of its own rather
 * than leaving its names on the page's global object; and no file of it is left in the build.
 */
function prefetchInline(): Plugin {
  return {
    name: 'benchtop-prefetch-inline',
    apply: 'build',
    buildStart() {
      this.emitFile({ type: 'chunk', id: `${root}src/renderer/prefetch.ts`, name: 'prefetch' });
    },
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        const bundle = ctx.bundle ?? {};
        const chunk = Object.values(bundle).find((c): c is Rolldown.OutputChunk => c.type === 'chunk' && c.name === 'prefetch' && c.isEntry);
        if (!chunk) throw new Error('the prefetch chunk was not built');
        if (chunk.imports.length > 0 || chunk.exports.length > 0) throw new Error('prefetch.ts must import and export nothing: it is inlined as a classic script');
        delete bundle[chunk.fileName];
        return [{ tag: 'script', children: `(()=>{${chunk.code.trim()}})();`, injectTo: 'head-prepend' }];
      },
    },
  };
}

export const rendererConfig: UserConfig = {
  root: `${root}src/renderer`,
  base: '/',
  plugins: [react(), prefetchInline()],
  resolve: {
    alias: [
      { find: /^react-dom\/client$/, replacement: 'preact/compat/client' },
      { find: /^react-dom$/, replacement: 'preact/compat' },
      { find: /^react\/jsx-runtime$/, replacement: 'preact/jsx-runtime' },
      { find: /^react\/jsx-dev-runtime$/, replacement: 'preact/jsx-dev-runtime' },
      { find: /^react$/, replacement: 'preact/compat' },
    ],
  },
  // No remote content: nothing is inlined as a data: module, and no source is fetched from elsewhere.
  build: {
    outDir: `${root}out/renderer`,
    emptyOutDir: true,
    target: 'es2022',
    reportCompressedSize: false,
    // Every browser the page runs in (Electron's Chromium, and current Chrome, Firefox and Safari on the LAN) knows
    // <link rel="modulepreload">: the polyfill was a few milliseconds of the bundle's first run, for nothing.
    modulePreload: { polyfill: false },
    chunkSizeWarningLimit: 1024,
  },
  worker: { format: 'es' },
  logLevel: 'warn',
};

export default rendererConfig;
