import type { Stores } from '../store/index.js';
import type { Clock } from './scope.js';

/** How often the running engine writes that it is up: the most of the time before a crash that goes unmetered. */
export const HEARTBEAT_MS = 5000;
const HEARTBEAT_KEY = 'heartbeat_at';

/**
 * Nobody pays for time the lab was down. While the engine runs it writes the time to SQLite every HEARTBEAT_MS, and
 * once more when it stops; the next start closes every metered interval still open (a phone or an instance held
 * across the stop, or the crash) at that last beat, and opens it again from the start. A crash leaves up to
 * HEARTBEAT_MS before it unmetered: the holder's gain, never the lab's.
 */
export class Heartbeat {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stores: Pick<Stores, 'settings' | 'usage'>,
    private readonly now: Clock,
    private readonly log: (message: string) => void,
  ) {}

  /** Before anything meters: the down time is cut out of the ledger first. */
  start(): void {
    const lastBeat = Number(this.stores.settings.get(HEARTBEAT_KEY) ?? 0);
    const now = this.now();
    if (lastBeat > 0 && lastBeat < now) {
      const resumed = this.stores.usage.resumeAfterDowntime(lastBeat, now);
      if (resumed > 0) this.log(`${resumed} metered interval(s) held across ${Math.round((now - lastBeat) / 1000)} s down; that time is not metered`);
    }
    this.beat();
    this.timer = setInterval(() => this.beat(), HEARTBEAT_MS);
    this.timer.unref();
  }

  /** The last beat: where the down time starts. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.beat();
  }

  private beat(): void {
    try {
      this.stores.settings.set(HEARTBEAT_KEY, String(this.now()));
    } catch (error) {
      // A beat missed (a disk briefly full) only makes the next crash's unmetered stretch longer.
      this.log(`heartbeat failed: ${(error as Error).message}`);
    }
  }
}
