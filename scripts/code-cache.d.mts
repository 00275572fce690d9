/** Runs a CommonJS module from V8's code cache beside it when that was made for it; says what became of the cache. */
export function runWithCodeCache(file: string): 'used' | 'none' | 'rejected';
/** Whether the cache beside `file` was made for it as it is now: what the next start of it would read. */
export function hasCodeCache(file: string): boolean;
