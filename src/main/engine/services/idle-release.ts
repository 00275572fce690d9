import type { DeviceAllocationRow } from '../store/devices.js';
import type { Stores } from '../store/index.js';
import { requireRole } from './auth.js';
import type { DeviceAllocator } from './devices.js';
import type { Reservations } from './reservations.js';
import type { Clock, Scope } from './scope.js';

/** What anything that uses a held phone reports: every front door's calls, viewers, and later remote-connect streams. */
export interface Activity {
  /** The allocation was used just now. Cheap: kept in memory, written to SQLite coalesced. */
  touch(allocationId: string): void;
  /** The allocation is in use for as long as this lasts (a connected live screen, an open log stream); call the answer to end it. */
  hold(allocationId: string): () => void;
}

export interface IdleReleaseOptions {
  /** The lab setting, read on each check: 0 means never. */
  idleSeconds: () => number;
  /** How long before an idle release the holder is warned. */
  idleWarningMs: number;
  /** How long before a reservation starts another organization's holder is warned. */
  reservationWarningMs: number;
  /** How often deadlines, warnings and reservation windows are checked. */
  checkMs: number;
  /** How often activity held in memory is written. */
  flushMs: number;
  log: (message: string) => void;
}

type Warning = { reason: 'idle_timeout' | 'reserved'; releaseAt: number };

/**
 * Idle release, and the warnings of every release the lab decides on its own. An allocation in_use with no activity
 * for deviceIdleSeconds is released as idle_timeout, with cleanup, like any release. Activity lives in memory (a tap
 * costs a Map write); a check every few hundred milliseconds applies deadlines. Activity is written flushMs after the
 * first touch that SQLite does not have yet (a timer of its own, not the next check after that), and at once when
 * a warning changes, so that a SIGKILL loses at most flushMs of it and no due warning.
 * The one warning an allocation carries is the earliest release ahead: its idle deadline, or a reservation of
 * another organization's that starts on its phone.
 */
export class IdleRelease implements Activity {
  /** The newest activity of each allocation seen in_use. */
  private readonly last = new Map<string, number>();
  /** Allocations whose activity in memory is newer than what SQLite has. */
  private readonly dirty = new Set<string>();
  /** Viewers and streams holding each allocation. */
  private readonly holds = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  /** Armed by the first activity SQLite does not have, it writes that activity and any since. */
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly stores: Pick<Stores, 'devices'>,
    private readonly allocator: Pick<DeviceAllocator, 'expire' | 'find'>,
    private readonly reservations: Pick<Reservations, 'enforce' | 'startingSoon'>,
    private readonly now: Clock,
    private readonly options: IdleReleaseOptions,
  ) {}

  start(): void {
    this.timer ??= setInterval(() => this.check(), this.options.checkMs);
    this.timer.unref();
    if (this.dirty.size > 0) this.flushSoon();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    // What is held in memory is written on a graceful stop (no release is decided then): only a crash loses up to
    // flushMs of it.
    const idleMs = this.options.idleSeconds() * 1000;
    this.stores.devices.setActivity(
      [...this.dirty].map((id) => {
        const last = this.last.get(id)!;
        return { id, lastActivityAt: last, idleDeadlineAt: idleMs > 0 ? last + idleMs : null };
      }),
    );
    this.dirty.clear();
  }

  touch(allocationId: string): void {
    this.last.set(allocationId, this.now());
    this.markDirty(allocationId);
  }

  private markDirty(allocationId: string): void {
    this.dirty.add(allocationId);
    this.flushSoon();
  }

  /** Stopped, nothing is written by a timer: stop() writes what is held. */
  private flushSoon(): void {
    if (this.flushTimer || !this.timer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.check(true);
    }, this.options.flushMs);
    this.flushTimer.unref();
  }

  hold(allocationId: string): () => void {
    this.holds.set(allocationId, (this.holds.get(allocationId) ?? 0) + 1);
    this.touch(allocationId);
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const left = (this.holds.get(allocationId) ?? 1) - 1;
      if (left > 0) this.holds.set(allocationId, left);
      else this.holds.delete(allocationId);
      // Watching until now was activity: the idle time starts when the last viewer leaves.
      this.touch(allocationId);
    };
  }

  /** "Keep the phone": the holder answers a warning. Counts as activity, written and applied at once. */
  keep(scope: Scope, sessionId: string, deviceId: string): DeviceAllocationRow {
    requireRole(scope.role, 'readwrite');
    const row = this.allocator.find(scope, sessionId, deviceId);
    if (row.releasedAt === null) {
      this.touch(row.id);
      this.check(true);
    }
    return this.stores.devices.get(row.id)!;
  }

  /** Applies deadlines and warnings; `flush` writes every activity held in memory now. */
  check(flush = false): void {
    try {
      this.reservations.enforce();
      this.apply(flush);
    } catch (error) {
      // The database is closed (the engine is stopping): the next start applies what is due.
      this.options.log(`checking idle allocations failed: ${(error as Error).message}`);
    }
  }

  private apply(flush: boolean): void {
    const now = this.now();
    const idleMs = this.options.idleSeconds() * 1000;
    const soon = this.reservations.startingSoon(this.options.reservationWarningMs);
    const writes: Array<{ id: string; lastActivityAt: number; idleDeadlineAt: number | null }> = [];
    const active = new Set<string>();
    for (const row of this.stores.devices.active()) {
      if (row.status !== 'in_use' && row.status !== 'offline') continue;
      active.add(row.id);
      if (!this.last.has(row.id)) {
        // First seen in_use (or first since a restart): the stored activity, else now, when it was handed over.
        this.last.set(row.id, row.lastActivityAt ?? now);
        if (row.lastActivityAt === null) this.markDirty(row.id);
      }
      // An unplugged phone cannot be used: its idle time waits, and the device grace period decides.
      if (row.status === 'offline' || this.holds.has(row.id)) this.touch(row.id);
      const last = this.last.get(row.id)!;
      const deadline = idleMs > 0 ? last + idleMs : null;
      if (deadline !== null && now >= deadline) {
        if (this.allocator.expire(row.id, 'idle_timeout')) this.options.log(`allocation ${row.id} on ${row.serial} was idle ${idleMs / 1000} s; released`);
        continue;
      }
      const warning = this.warningOf(row, deadline, soon, now);
      const warningChanged = warning?.reason !== (row.warningReason ?? undefined) || (warning?.releaseAt ?? null) !== row.warningReleaseAt;
      if (warningChanged) this.stores.devices.setWarning(row.id, warning);
      // A changed setting moves every deadline shown; a changed warning writes the activity it was decided on.
      const stale = row.idleDeadlineAt !== (idleMs > 0 && row.lastActivityAt !== null ? row.lastActivityAt + idleMs : null);
      if (stale || (this.dirty.has(row.id) && (flush || warningChanged))) {
        writes.push({ id: row.id, lastActivityAt: last, idleDeadlineAt: deadline });
        this.dirty.delete(row.id);
      }
    }
    if (writes.length > 0) this.stores.devices.setActivity(writes);
    // Released allocations are forgotten; a held one keeps its holds until its viewers leave.
    for (const id of this.last.keys()) {
      if (!active.has(id)) {
        this.last.delete(id);
        this.dirty.delete(id);
      }
    }
  }

  private warningOf(row: DeviceAllocationRow, deadline: number | null, soon: ReturnType<Reservations['startingSoon']>, now: number): Warning | null {
    const reserved = row.serial ? soon.get(row.serial) : undefined;
    const byReservation: Warning | null =
      reserved && reserved.organizationId !== row.organizationId ? { reason: 'reserved', releaseAt: reserved.startsAt } : null;
    const byIdle: Warning | null =
      deadline !== null && now >= deadline - this.options.idleWarningMs ? { reason: 'idle_timeout', releaseAt: deadline } : null;
    if (byReservation && byIdle) return byReservation.releaseAt <= byIdle.releaseAt ? byReservation : byIdle;
    return byReservation ?? byIdle;
  }
}
