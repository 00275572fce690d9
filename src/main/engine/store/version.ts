/**
 * A counter that a store bumps on every write to the rows it guards, so that a cache of those rows can tell,
 * with one comparison, whether it is still exact.
 */
export class Version {
  value = 0;

  /** Bumps the version and passes the write's result through. */
  bump<T>(result: T): T {
    this.value++;
    return result;
  }
}
