/**
 * The renderer's build, shared by electron-vite (the desktop app) and by `npm run serve` and the end-to-end tests
 * (the engine serves out/renderer at /). Absolute asset paths: the page is served at every SPA path.
 */
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import type { Plugin, Rolldown, UserConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * prefetch.ts as a file of its own, loaded by index.html ahead of the app: it starts the Fleet screen's requests
 * while the browser still downloads and parses the app's bundle. As one more <script> in index.html it would be
 * bundled into the app's entry and run only after it; as a separate entry it is a few hundred bytes that run at once.
 * It is a classic script, not a module: a module (like any deferred script) runs only once the page is parsed and
 * its style sheet has loaded, and its requests then left 20-30 ms later. A classic script before the style sheet
 * runs as soon as it arrives. It imports and exports nothing, so its code is wrapped in a function of its own
 * rather than leaving its names on the page's global object.
 */
function prefetchFirst(): Plugin {
  const prefetchChunk = (bundle: Rolldown.OutputBundle): Rolldown.OutputChunk => {
    const chunk = Object.values(bundle).find((c): c is Rolldown.OutputChunk => c.type === 'chunk' && c.name === 'prefetch' && c.isEntry);
    if (!chunk) throw new Error('the prefetch chunk was not built');
    return chunk;
  };
  let ref = '';
  return {
    name: 'benchtop-prefetch-first',
    apply: 'build',
    buildStart() {
      ref = this.emitFile({ type: 'chunk', id: `${root}src/renderer/prefetch.ts`, name: 'prefetch' });
    },
    // Its name's hash covers the wrapping too: a browser holding the module build of the same source (cached as
    // immutable) must not run that as a classic script.
    augmentChunkHash(chunk) {
      return chunk.name === 'prefetch' ? 'classic script' : undefined;
    },
    generateBundle(_options, bundle) {
      const chunk = prefetchChunk(bundle);
      if (chunk.imports.length > 0 || chunk.exports.length > 0) throw new Error('prefetch.ts must import and export nothing: it runs as a classic script');
      chunk.code = `(()=>{${chunk.code}})();\n`;
    },
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        if (!ctx.bundle || !ref) throw new Error('the prefetch chunk was not built');
        return [{ tag: 'script', attrs: { src: `/${prefetchChunk(ctx.bundle).fileName}` }, injectTo: 'head-prepend' }];
      },
    },
  };
}

export const rendererConfig: UserConfig = {
  root: `${root}src/renderer`,
  base: '/',
  plugins: [react(), prefetchFirst()],
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
    chunkSizeWarningLimit: 1024,
  },
  worker: { format: 'es' },
  logLevel: 'warn',
};

export default rendererConfig;
