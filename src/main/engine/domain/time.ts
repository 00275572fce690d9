/** RFC 3339 UTC with milliseconds, the one time format of the API. */
export const iso = (ms: number): string => new Date(ms).toISOString();
export const isoOrNull = (ms: number | null | undefined): string | null => (ms == null ? null : iso(ms));

/**
 * createdAt is unique within an organization (so that a strict `before` cursor never skips or repeats an item):
 * a row created in the same millisecond as the newest one takes the next millisecond.
 */
export function uniqueCreatedAt(now: number, newestInOrg: number | null | undefined): number {
  return newestInOrg == null || now > newestInOrg ? now : newestInOrg + 1;
}

/** The promise, or an error naming `what` once `ms` have passed: a step on a phone may fail, never hang. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms / 1000} s`)), ms);
    }),
  ]);
}
