import { randomUUID } from 'node:crypto';
import { checkFilters, matches, type DeviceFilter } from '../domain/device-filters.js';
import { conflict, forbidden, invalid, notFound } from '../domain/errors.js';
import type { Stores } from '../store/index.js';
import type { ReservationRow } from '../store/reservations.js';
import { requireRole } from './auth.js';
import type { DeviceAllocator } from './devices.js';
import type { Clock, Scope } from './scope.js';

/** A window may start this far in the past: a booking made "from now" arrives a moment after its start. */
const PAST_TOLERANCE_MS = 60_000;
/** The calendar shown when no window is asked for: a week from now. */
const DEFAULT_CALENDAR_MS = 7 * 24 * 3600 * 1000;
/** The longest calendar one call reads. */
const MAX_CALENDAR_MS = 92 * 24 * 3600 * 1000;

export interface NewReservation {
  filters: DeviceFilter[];
  startsAt: number;
  endsAt: number;
  title?: string;
}

/** A slot of the calendar: the row, and whether the caller's organization may see what it is. */
export interface Slot {
  row: ReservationRow;
  own: boolean;
  name: string;
}

/**
 * Reservations: booking a phone for a window ahead. A window on one phone never overlaps another. During its window
 * a reserved phone is allocated only to the reserving organization (the allocator reads runningAt); enforce() ends
 * another organization's allocation holding it when the window starts. Another organization's bookings are shown
 * as busy slots only: no id, title or creator crosses organizations.
 */
export class Reservations {
  private enforcedUpTo: number;

  constructor(
    private readonly stores: Pick<Stores, 'reservations' | 'fleet' | 'devices'>,
    private readonly allocator: Pick<DeviceAllocator, 'expire' | 'serve'>,
    private readonly now: Clock,
    private readonly options: { maxHours: () => number },
  ) {
    this.enforcedUpTo = now();
  }

  create(scope: Scope, request: NewReservation): ReservationRow {
    requireRole(scope.role, 'readwrite');
    const filters = checkFilters(request.filters);
    const { startsAt, endsAt } = request;
    const now = this.now();
    if (endsAt <= startsAt) throw invalid('window_inverted', 'endsAt must be after startsAt.');
    if (startsAt < now - PAST_TOLERANCE_MS) throw invalid('window_in_past', 'The window starts in the past.');
    const maxHours = this.options.maxHours();
    if (endsAt - startsAt > maxHours * 3600_000) {
      throw invalid('window_too_long', `A reservation is at most ${maxHours} hours long (the lab's reservationMaxHours).`);
    }
    const { fleet, reservations } = this.stores;
    const candidates = fleet.all().filter((phone) => matches(phone, filters));
    if (candidates.length === 0) throw conflict('no_free_slot', 'No phone in this lab matches those filters.');
    // Attached phones first (one gone now is less likely to be there when the window starts), then phones that
    // another organization does not hold now (it would be taken from them when the window starts).
    const heldByOther = (serial: string) => {
      const holder = this.stores.devices.holding(serial);
      return Number(holder !== undefined && holder.organizationId !== scope.organization.id);
    };
    const phone = candidates
      .filter((p) => !reservations.phoneBusy(p.serial, startsAt, endsAt))
      .sort((a, b) => Number(a.state !== 'device') - Number(b.state !== 'device') || heldByOther(a.serial) - heldByOther(b.serial) || a.serial.localeCompare(b.serial))[0];
    if (!phone) throw conflict('no_free_slot', 'Every phone that matches is already reserved for part of that window.');
    const row: ReservationRow = {
      id: randomUUID(),
      organizationId: scope.organization.id,
      serial: phone.serial,
      startsAt,
      endsAt,
      title: request.title?.trim() || null,
      createdBy: scope.caller.user.id,
      createdAt: now,
    };
    reservations.insert(row);
    return row;
  }

  /** The lab's calendar between from and to: every phone's reservations, another organization's as busy slots. */
  calendar(scope: Scope, from?: number, to?: number): Slot[] {
    const start = from ?? this.now();
    const end = to ?? start + DEFAULT_CALENDAR_MS;
    if (end <= start) throw invalid('window_inverted', 'to must be after from.');
    if (end - start > MAX_CALENDAR_MS) throw invalid('window_too_long', 'The calendar is read at most 92 days at a time.');
    return this.stores.reservations.overlapping(start, end).map((row) => ({
      row,
      own: row.organizationId === scope.organization.id,
      name: this.stores.fleet.get(row.serial)?.name ?? '',
    }));
  }

  /** By its creator, or an admin of its organization. Another organization's reservation is not found. */
  remove(scope: Scope, id: string): void {
    const row = this.stores.reservations.get(id);
    if (!row || row.organizationId !== scope.organization.id) throw notFound('reservation');
    if (row.createdBy !== scope.caller.user.id && scope.role !== 'admin') {
      throw forbidden('not_reservation_owner', 'Only who made a reservation, or an admin of its organization, can cancel it.');
    }
    this.stores.reservations.delete(id);
    // A window running now frees its phone for everyone.
    if (row.startsAt <= this.now() && row.endsAt > this.now()) this.allocator.serve();
  }

  /**
   * Ends the windows a member booked for an organization that are running now: their phone is free to everyone at
   * once. Windows still ahead stay on the organization's calendar for an admin to keep or cancel.
   */
  endRunningOf(organizationId: string, userId: string): number {
    const now = this.now();
    const running = this.stores.reservations
      .overlapping(now, now + 1)
      .filter((row) => row.organizationId === organizationId && row.createdBy === userId);
    for (const row of running) this.stores.reservations.delete(row.id);
    if (running.length > 0) this.allocator.serve();
    return running.length;
  }

  /**
   * What a window's start and end change: another organization's allocation holding a phone whose reservation has
   * started is released as `reserved`, and the queue is served when a window starts or ends (the phone is free to
   * its reserving organization, then to everyone). Idempotent, so a sweep after a restart applies what was missed.
   */
  enforce(): void {
    const now = this.now();
    const { reservations, devices } = this.stores;
    for (const [serial, organizationId] of reservations.runningAt(now)) {
      const holder = devices.holding(serial);
      if (holder && holder.organizationId !== organizationId) this.allocator.expire(holder.id, 'reserved');
    }
    if (reservations.boundariesWithin(this.enforcedUpTo, now) > 0) this.allocator.serve();
    this.enforcedUpTo = now;
  }

  /**
   * Each phone's reservation that runs now or starts within `aheadMs` (the earliest), and whether it is the caller's
   * organization's: what the Fleet screen shows, so that nobody takes a phone about to be taken back.
   */
  bookedSoon(scope: Scope, aheadMs: number): Map<string, { startsAt: number; endsAt: number; own: boolean }> {
    const now = this.now();
    const booked = new Map<string, { startsAt: number; endsAt: number; own: boolean }>();
    for (const row of this.stores.reservations.overlapping(now, now + aheadMs)) {
      if (!booked.has(row.serial)) booked.set(row.serial, { startsAt: row.startsAt, endsAt: row.endsAt, own: row.organizationId === scope.organization.id });
    }
    return booked;
  }

  /** Reservations starting within `leadMs`, by phone (the earliest one of each): their holders are warned. */
  startingSoon(leadMs: number): Map<string, ReservationRow> {
    const now = this.now();
    const soon = new Map<string, ReservationRow>();
    for (const row of this.stores.reservations.startingWithin(now, now + leadMs)) {
      if (!soon.has(row.serial)) soon.set(row.serial, row);
    }
    return soon;
  }
}
