import { invalid } from '../domain/errors.js';
import type { Stores } from '../store/index.js';
import type { LabUsageRow, UsageGroup } from '../store/usage.js';
import type { Clock, Scope } from './scope.js';

/** The report's default window: the last 30 days. */
const DEFAULT_WINDOW_MS = 30 * 24 * 3600 * 1000;
/** The longest window one report reads. */
const MAX_WINDOW_MS = 366 * 24 * 3600 * 1000;

export interface UsageReportRows {
  groupBy: 'member' | 'device';
  from: number;
  to: number;
  groups: UsageGroup[];
}

/**
 * Who used what: the device time an organization's allocations held, from assignment to release (what metering
 * counts), summed per member who allocated or per phone, within a window. Every member of the organization may read it.
 */
export class UsageReport {
  constructor(
    private readonly stores: Pick<Stores, 'usage'>,
    private readonly now: Clock,
  ) {}

  devices(scope: Scope, query: { from?: number; to?: number; groupBy?: 'member' | 'device' }): UsageReportRows {
    const { from, to, now } = this.window(query);
    const groupBy = query.groupBy ?? 'member';
    const groups = this.stores.usage.devicesBy(groupBy, { organizationId: scope.organization.id, from, to, now });
    return { groupBy, from, to, groups };
  }

  /** Every organization's device time on each phone: for the lab owner (the caller is checked by the route). */
  lab(query: { from?: number; to?: number }): { from: number; to: number; rows: LabUsageRow[] } {
    const { from, to, now } = this.window(query);
    return { from, to, rows: this.stores.usage.labDevices({ from, to, now }) };
  }

  private window(query: { from?: number; to?: number }): { from: number; to: number; now: number } {
    const now = this.now();
    const to = query.to ?? now;
    const from = query.from ?? to - DEFAULT_WINDOW_MS;
    if (to <= from) throw invalid('window_inverted', 'to must be after from.');
    if (to - from > MAX_WINDOW_MS) throw invalid('window_too_long', 'Usage is read at most 366 days at a time.');
    return { from, to, now };
  }
}
