/** A metered interval: a device or instance assignment. endedAt is null while it is still running. */
export interface UsageInterval {
  startedAt: number;
  endedAt: number | null;
}

export interface Period {
  start: number;
  end: number;
}

/** Billing periods are calendar months in UTC. */
export function periodContaining(now: number): Period {
  const d = new Date(now);
  return {
    start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1),
    end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1),
  };
}

/** Whole seconds of the intervals that fall inside the period, counting running ones up to now. */
export function secondsUsed(intervals: readonly UsageInterval[], period: Period, now: number): number {
  let ms = 0;
  for (const { startedAt, endedAt } of intervals) {
    const from = Math.max(startedAt, period.start);
    const to = Math.min(endedAt ?? now, period.end, now);
    if (to > from) ms += to - from;
  }
  return Math.floor(ms / 1000);
}
