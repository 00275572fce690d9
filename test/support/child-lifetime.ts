/**
 * For a process a benchmark or a test starts (a simulated phone, a relay): `stop` runs on SIGTERM or SIGINT, or once the
 * parent is gone. A parent killed outright cannot stop its children; an orphan notices and stops itself.
 */
export function stopWithParent(stop: () => void): void {
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop();
  }, 1000).unref();
}
