/**
 * `npm run bench -- --smoke`, which CI runs after `npm test`: every benchmark once at its smallest size, to show that
 * it still finishes and that its baseline still does the same work as what it measures. Its figures measure nothing.
 */
export const SMOKE = process.argv.includes('--smoke');

/** A count, a window or a size: the measuring run's, or in a smoke run the smallest that still does the work once. */
export const sized = <T>(measuring: T, smoke: T): T => (SMOKE ? smoke : measuring);
