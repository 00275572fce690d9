/** out/serve/serve.cjs: what `npm run serve` runs (through scripts/code-cache.mjs). */
export const bundle: string;
/** out/serve/metafile.json: esbuild's metafile of the last build. */
export const metafile: string;
/** Resolves true when it built, false when out/serve was already up to date. */
export function buildServe(options?: { force?: boolean }): Promise<boolean>;
