/**
 * The renderer's build, shared by electron-vite (the desktop app) and by `npm run serve` and the end-to-end tests
 * (the engine serves out/renderer at /). Absolute asset paths: the page is served at every SPA path.
 */
import react from '@vitejs/plugin-react';
import { fileURLToPath } from 'node:url';
import type { UserConfig } from 'vite';

const root = fileURLToPath(new URL('.', import.meta.url));

export const rendererConfig: UserConfig = {
  root: `${root}src/renderer`,
  base: '/',
  plugins: [react()],
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
