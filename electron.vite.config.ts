import { resolve } from 'node:path';
import { defineConfig } from 'electron-vite';
import { rendererConfig } from './vite.renderer.config.js';

export default defineConfig({
  main: {
    build: {
      // better-sqlite3 is a native addon that must be loaded from node_modules, and bundling the engine's other
      // dependencies would only duplicate what `npm run serve` already loads from there.
      externalizeDeps: true,
      rolldownOptions: { input: { index: resolve('src/main/index.ts') } },
    },
  },
  preload: {
    build: {
      // A sandboxed preload is not an ES module and cannot require files: one CommonJS bundle, named .cjs
      // so that "type": "module" in package.json does not claim it.
      rolldownOptions: {
        input: { index: resolve('src/preload/index.ts') },
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    // The same page as `npm run serve` builds (vite.renderer.config.ts): served by the engine at every SPA path.
    base: rendererConfig.base,
    plugins: rendererConfig.plugins,
    worker: rendererConfig.worker,
    build: {
      minify: true,
      rolldownOptions: { input: { index: resolve('src/renderer/index.html') } },
    },
  },
});
