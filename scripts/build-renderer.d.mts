/** Resolves true when it built, false when out/renderer was already up to date. */
export function buildRenderer(options?: { force?: boolean }): Promise<boolean>;
