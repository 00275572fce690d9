/**
 * The renderer's build, shared by electron-vite (the desktop app) and by `npm run serve` and the end-to-end tests
 * (the engine serves out/renderer at /). Absolute asset paths: the page is served at every SPA path.
 */
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import type { Plugin, UserConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

/**
 * prefetch.ts as a file of its own, loaded by index.html ahead of the app: it starts the Fleet screen's requests
 * while the browser still downloads and parses the app's bundle (React is most of it). As one more <script> in
 * index.html it would be bundled into the app's entry and run only after it; as a separate entry it is a few hundred
 * bytes that run at once.
 */
function prefetchFirst(): Plugin {
  let ref = '';
  return {
    name: 'benchtop-prefetch-first',
    apply: 'build',
    buildStart() {
      ref = this.emitFile({ type: 'chunk', id: `${root}src/renderer/prefetch.ts`, name: 'prefetch' });
    },
    transformIndexHtml: {
      order: 'post',
      handler(_html, ctx) {
        const file = ctx.bundle && Object.values(ctx.bundle).find((c) => c.type === 'chunk' && c.name === 'prefetch' && c.isEntry);
        if (!file || !ref) throw new Error('the prefetch chunk was not built');
        return [{ tag: 'script', attrs: { type: 'module', crossorigin: true, src: `/${file.fileName}` }, injectTo: 'head-prepend' }];
      },
    },
  };
}

export const rendererConfig: UserConfig = {
  root: `${root}src/renderer`,
  base: '/',
  plugins: [react(), prefetchFirst()],
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
