import type { CalendarSlot, Reservation, Usage } from '../../../../shared/api/sharing.js';
import { iso } from '../../domain/time.js';
import type { Slot } from '../../services/reservations.js';
import type { UsageReportRows } from '../../services/usage.js';
import type { ReservationRow } from '../../store/reservations.js';

/** Reservations, the calendar and the usage report as the API's JSON (and the report as CSV). */

export const presentReservation = (r: ReservationRow, name: string): Reservation => ({
  id: r.id,
  serial: r.serial,
  name,
  startsAt: iso(r.startsAt),
  endsAt: iso(r.endsAt),
  title: r.title,
  createdBy: r.createdBy,
});

/** Another organization's reservation is a busy slot: the phone and the window, nothing about who or why. */
export const presentSlot = ({ row, own, name }: Slot): CalendarSlot => ({
  serial: row.serial,
  name,
  startsAt: iso(row.startsAt),
  endsAt: iso(row.endsAt),
  own,
  ...(own ? { id: row.id, title: row.title, createdBy: row.createdBy } : {}),
});

export const presentUsage = (u: UsageReportRows): Usage => ({
  groupBy: u.groupBy,
  from: iso(u.from),
  to: iso(u.to),
  data: u.groups.map((g) => ({ key: g.key, label: g.label, seconds: g.ms / 1000, allocations: g.allocations })),
});

/** RFC 4180: a field with a comma, quote or line break is quoted, its quotes doubled. */
const csvField = (value: string | number) => {
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
};

export function usageCsv(u: Usage): string {
  const header = u.groupBy === 'member' ? ['userId', 'email', 'seconds', 'allocations'] : ['serial', 'name', 'seconds', 'allocations'];
  const lines = [header, ...u.data.map((r) => [r.key, r.label, r.seconds, r.allocations])];
  return lines.map((line) => line.map(csvField).join(',')).join('\r\n') + '\r\n';
}
