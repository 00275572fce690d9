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
