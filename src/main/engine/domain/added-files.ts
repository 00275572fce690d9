/**
 * Release puts a phone's files back as a listing taken at allocation found them (docs/sharing.md): what was added
 * since goes, what was there stays. A listing is a path per entry, every folder's entries under it.
 */

/** Bounds on one listing: beyond them it is not taken, since a partial one cannot tell the lab's files from a holder's. */
export const LISTING_BOUNDS = { entries: 20_000, ms: 10_000 } as const;

/** The paths in `now` and not in `before` whose folder was not added too: removing those (with what is in them) removes all that was added. */
export function addedFiles(before: readonly string[], now: readonly string[]): string[] {
  const kept = new Set(before);
  const added = new Set(now.filter((p) => !kept.has(p)));
  return [...added].filter((p) => !foldersOf(p).some((folder) => added.has(folder)));
}

/** `/a/b/c` -> `/a/b`, `/a`. */
function foldersOf(path: string): string[] {
  const out: string[] = [];
  for (let i = path.lastIndexOf('/'); i > 0; i = path.lastIndexOf('/', i - 1)) out.push(path.slice(0, i));
  return out;
}
