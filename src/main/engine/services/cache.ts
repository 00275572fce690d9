/**
 * A read-through cache of rows whose every write bumps a version counter. One comparison per read tells whether
 * the cache is still exact; any write clears it, so a reader never sees a value older than the last write.
 * The hot request paths (authorization, a session by id) read SQLite once per write instead of once per request.
 */
export class VersionedCache {
  private seen = -1;
  private readonly entries = new Map<string, unknown>();

  constructor(
    private readonly version: () => number,
    private readonly limit = 10_000,
  ) {}

  memo<T>(key: string, load: () => T): T {
    const current = this.version();
    if (current !== this.seen || this.entries.size >= this.limit) {
      this.entries.clear();
      this.seen = current;
    }
    if (this.entries.has(key)) return this.entries.get(key) as T;
    const value = load();
    // A miss is not remembered: the row may be created without any versioned write (a new session, say).
    if (value !== undefined) this.entries.set(key, value);
    return value;
  }
}

/** One cache per engine context, made on first use. */
export function perContext<C extends object>(make: (ctx: C) => VersionedCache): (ctx: C) => VersionedCache {
  const caches = new WeakMap<C, VersionedCache>();
  return (ctx) => {
    let cache = caches.get(ctx);
    if (!cache) caches.set(ctx, (cache = make(ctx)));
    return cache;
  };
}
