import { randomUUID } from 'node:crypto';
import { checkFilters, matches, type DeviceFilter } from '../domain/device-filters.js';
import { conflict, invalid, notFound, ServiceError } from '../domain/errors.js';
import type { Phone, PhoneBaseline, PhoneSource } from '../fleet/types.js';
import type { DeviceAllocationRow } from '../store/devices.js';
import type { FileRow } from '../store/files.js';
import type { FleetDeviceRow } from '../store/fleet.js';
import type { Stores } from '../store/index.js';
import { refuseIfEnded } from '../domain/session-state.js';
import { withTimeout } from '../domain/time.js';
import { requireRole } from './auth.js';
import type { Clock, Scope } from './scope.js';

/** What the allocator reads and writes: allocations, the inventory, metering, and the apps to install. */
export type AllocatorStores = Pick<Stores, 'sessions' | 'devices' | 'fleet' | 'usage' | 'files' | 'reservations' | 'users'>;

/** The stored app files an allocation's installApps names. */
export interface AppFiles {
  /** The caller's stored file that a file:<id> reference names, ready to install; throws not_found otherwise. */
  readyFile(scope: Scope, ref: string): FileRow;
  /** Where the file's bytes are on disk. */
  pathOf(file: FileRow): string;
  /** App names by package name or bundle id, from the organization's stored files. */
  labels(scope: Scope): Map<string, string>;
}

export interface AllocatorOptions {
  /** Devices an organization may hold at once, as the lab owner set it now. */
  deviceQuota: () => number;
  /** How long an unplugged allocated phone may stay away before it is released as device_lost. */
  graceMs: number;
  /** Provisioning that takes longer fails: nothing stays provisioning forever. */
  prepareTimeoutMs: number;
  /** A phone another organization has reserved from within this long is handed out last. */
  reservationWarningMs: number;
  log: (message: string) => void;
}

/** An installApps file that could not be installed: the allocation is released as install_failed. */
class InstallFailed extends Error {}

const FILE_REF = /^file:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

/**
 * Device allocation: matches filters against the fleet, queues first-in first-out when every match is busy,
 * prepares a phone before handing it over, cleans it after release, and survives unplugging and restarts.
 * Every state lives in SQLite; the timers and in-flight preparations here are rebuilt from it on start.
 */
export class DeviceAllocator {
  private readonly graceTimers = new Map<string, NodeJS.Timeout>();
  /** Phones being cleaned after a release: not free until their cleanup finishes. */
  private readonly cleaning = new Set<string>();
  /** Allocations whose preparation is running now, and its end. */
  private readonly preparing = new Map<string, Promise<void>>();
  private stopped = false;
  /** Told of each release before its cleanup starts (remote connections close first, so nobody races the cleanup). */
  private readonly releaseListeners: Array<(row: DeviceAllocationRow) => void | Promise<void>> = [];
  /** Until the fleet has been read, an unseen phone is unknown, not gone: no allocation is touched for it. */
  private reconciled = false;
  /** Told each time an allocation's phone is ready (in_use), so that a waiter need not look again on a timer. */
  private readonly readyListeners = new Set<() => void>();

  constructor(
    private readonly stores: AllocatorStores,
    private readonly phones: PhoneSource,
    private readonly appFiles: AppFiles,
    private readonly now: Clock,
    private readonly options: AllocatorOptions,
  ) {}

  /**
   * Calls `listener` each time an allocation's phone is ready (in_use) until the answer is called: a new WebDriver
   * session waiting for its phone goes on as soon as it is ready, not at its next look (50 ms later at most).
   */
  onReady(listener: () => void): () => void {
    this.readyListeners.add(listener);
    return () => this.readyListeners.delete(listener);
  }

  private ready(id: string): void {
    this.stores.devices.setStatus(id, 'in_use');
    for (const listener of [...this.readyListeners]) listener();
  }

  /**
   * Listens to the fleet. Called before the fleet starts, so that no change is missed between the fleet's first
   * look at the phones and reconcile().
   */
  listen(): void {
    this.phones.on('phone', (phone) => this.onPhone(phone));
    this.phones.on('gone', (serial) => this.onUnavailable(serial));
  }

  /** Once the fleet knows which phones are attached: reconciles stored allocations with them. */
  reconcile(): void {
    this.reconciled = true;
    const { fleet, devices } = this.stores;
    fleet.markAllGone('android');
    fleet.markAllGone('ios');
    for (const phone of this.phones.list()) fleet.upsert(phone, this.now());
    for (const row of devices.uncleaned()) {
      if (this.attached(row.serial!)) void this.cleanup(row);
    }
    for (const row of devices.active()) {
      const attached = row.serial !== null && this.attached(row.serial);
      if (row.status === 'provisioning') {
        if (attached) void this.prepare(row);
        // All of them back in the queue before it is served once, below: each requeue serving it would hand a
        // phone to a later allocation before the earlier ones were back in line.
        else this.putBack(row);
      } else if (row.status === 'in_use' && !attached) {
        this.goOffline(row, this.now());
      } else if (row.status === 'offline') {
        if (attached) this.ready(row.id);
        else this.armGrace(row.id, row.offlineSince ?? this.now());
      }
    }
    this.serveQueue();
  }

  /**
   * Calls `listener` synchronously when an allocation is released (by its holder, session end or device_lost); the
   * phone's cleanup waits for the promise it may return.
   */
  onRelease(listener: (row: DeviceAllocationRow) => void | Promise<void>): void {
    this.releaseListeners.push(listener);
  }

  stop(): void {
    this.stopped = true;
    for (const timer of this.graceTimers.values()) clearTimeout(timer);
    this.graceTimers.clear();
  }

  // ---- the API's operations ----

  allocate(scope: Scope, sessionId: string, request: { filters: DeviceFilter[]; installApps?: string[] }): DeviceAllocationRow {
    requireRole(scope.role, 'readwrite');
    const { sessions, devices, fleet } = this.stores;
    const session = sessions.get(sessionId, scope.organization.id);
    if (!session) throw notFound('session');
    refuseIfEnded(session);
    const filters = checkFilters(request.filters);
    const installs = (request.installApps ?? []).map((ref) => {
      if (!FILE_REF.test(ref)) throw invalid('invalid_install_apps', `installApps entries look like file:<fileId>, not "${ref}".`);
      const file = this.appFiles.readyFile(scope, ref);
      const platform = filters.find((f) => f.attribute === 'platform')?.value;
      if (file.platform !== platform) throw invalid('wrong_platform', `${ref} is an ${file.platform} app; this allocation asks for ${platform}.`);
      return file.id;
    });
    // Until the fleet's first look (just after the API starts answering), no phone is known yet: the allocation waits
    // in the queue for it rather than being told that nothing in the lab could ever match.
    if (this.reconciled && !fleet.all().some((phone) => matches(phone, filters))) {
      throw new ServiceError('not_found', 'no_matching_device', 'No device in this lab matches those filters, now or offline.');
    }
    const quota = this.options.deviceQuota();
    if (devices.activeCount(scope.organization.id) >= quota) {
      throw conflict(
        'concurrency_limit',
        `This organization already holds ${quota} devices, its quota. Release one first.`,
      );
    }
    const id = randomUUID();
    const asked = (attribute: string) => filters.find((f) => f.attribute === attribute && f.operator === 'EQUALS')?.value ?? '';
    devices.insert({
      id,
      sessionId,
      organizationId: scope.organization.id,
      platform: asked('platform'),
      name: asked('name'),
      osVersion: asked('version'),
      filters: JSON.stringify(filters),
      createdBy: scope.caller.user.id,
      now: this.now(),
    });
    this.stores.files.addInstalls(id, installs);
    this.serveQueue();
    return devices.get(id)!;
  }

  list(scope: Scope, sessionId: string): DeviceAllocationRow[] {
    if (!this.stores.sessions.get(sessionId, scope.organization.id)) throw notFound('session');
    return this.stores.devices.ofSessions([sessionId]);
  }

  /** A session's device by its serial (or, for one still queued without a serial, its allocation id). */
  find(scope: Scope, sessionId: string, deviceId: string): DeviceAllocationRow {
    if (!this.stores.sessions.get(sessionId, scope.organization.id)) throw notFound('session');
    // Every action and screenshot asks this first: one indexed row, not the whole of a long-lived session's list.
    const row = this.stores.devices.inSession(sessionId, deviceId);
    if (!row) throw notFound('device');
    return row;
  }

  /**
   * Idempotent: releasing a released device answers it as it is. Its holder may release it (or leave the queue) whatever
   * their role is now: a member demoted to readonly must not be stuck holding a phone nobody else may give back.
   */
  release(scope: Scope, sessionId: string, deviceId: string): DeviceAllocationRow {
    const row = this.find(scope, sessionId, deviceId);
    if (this.holderOf(row) !== scope.caller.user.id) requireRole(scope.role, 'readwrite');
    if (row.releasedAt === null) this.finish(row, this.now(), null, true, scope.caller.user.id);
    return this.stores.devices.get(row.id)!;
  }

  /**
   * Releases an allocation for the lab's own reasons (idle_timeout, reserved): billing stops now, cleanup runs and
   * the queue is served, as for any release. `by` is the member whose act it is (a WebDriver client ending its run);
   * null when the lab ends it. Answers whether it was still unreleased.
   */
  expire(allocationId: string, reason: string, by: string | null = null): boolean {
    const row = this.stores.devices.get(allocationId);
    if (!row || row.releasedAt !== null) return false;
    this.finish(row, this.now(), reason, true, by);
    return true;
  }

  /**
   * Releases every allocation a member holds in an organization (queued, provisioning, in use or offline) with
   * `reason`, each as any release: billing stops, what uses the phone ends, the phone is cleaned.
   */
  releaseHeldBy(organizationId: string, userId: string, reason: string): number {
    const rows = this.stores.devices.active().filter((row) => row.organizationId === organizationId && this.holderOf(row) === userId);
    // Queued ones first: a phone freed by the others would otherwise go to the member's own next request in line.
    rows.sort((a, b) => Number(a.status !== 'queued') - Number(b.status !== 'queued'));
    for (const row of rows) this.expire(row.id, reason);
    return rows.length;
  }

  /** Hands free phones to queued allocations: for when a phone becomes free without an event of the fleet's (a reservation's window ended). */
  serve(): void {
    this.serveQueue();
  }

  /**
   * The phones a new allocation of this organization would be handed at once: attached, not paused, not held or being
   * cleaned, not reserved by another organization; none while the organization holds its quota. What /wd/hub/status
   * tells a caller, so it names nothing of other organizations' phones beyond what this one could use.
   */
  freeFor(organizationId: string): Phone[] {
    const { devices } = this.stores;
    if (!this.reconciled || devices.activeCount(organizationId) >= this.options.deviceQuota()) return [];
    const dirty = new Set(devices.uncleaned().map((r) => r.serial));
    const reserved = this.stores.reservations.runningAt(this.now());
    return this.phones
      .list()
      .filter((p) => p.state === 'device' && !p.paused && !this.cleaning.has(p.serial) && !dirty.has(p.serial) && !devices.holding(p.serial))
      .filter((p) => (reserved.get(p.serial) ?? organizationId) === organizationId);
  }

  /** The organization's allocations not yet released, in every session, oldest first (what /ws's devices.list shows). */
  held(scope: Scope): DeviceAllocationRow[] {
    return this.stores.devices.active().filter((row) => row.organizationId === scope.organization.id);
  }

  /**
   * The lab owner's note on a phone, what tells identical phones apart ("shelf B"); null or blank removes it. The
   * phone as the inventory lists it; not found for a serial the lab has never seen.
   */
  setNote(serial: string, note: string | null): ReturnType<DeviceAllocator['inventory']>[number] {
    if (!this.stores.fleet.setNote(serial, note?.trim() || null)) throw new ServiceError('not_found', 'device_not_found', `No phone ${serial} in this lab.`);
    return this.inventory().find((d) => d.serial === serial)!;
  }

  /**
   * Every phone the lab has seen, with its last known state: an attached one with its model and, while it cannot be
   * allocated, the steps to fix that; one away with the model it last reported, and the lab owner's note.
   */
  inventory(): Array<FleetDeviceRow & Pick<Phone, 'model' | 'steps' | 'wdaLaunch'>> {
    return this.stores.fleet.all().map(({ model, ...row }) => {
      const live = row.state === 'gone' ? undefined : this.phones.get(row.serial);
      if (live) return { ...row, model: live.model, steps: live.steps, wdaLaunch: live.wdaLaunch };
      // Until the fleet's first look at the phones (reconcile), a stored state is the last run's: after a crash, a
      // phone unplugged meanwhile would be listed as attached. One not seen yet in this run is not here yet. A phone
      // away keeps the model it last reported.
      return { ...row, model: model ?? undefined, ...(this.reconciled ? {} : { state: 'gone' as const }) };
    });
  }

  /**
   * Whether a phone is held, and by whom (the session, the member who allocated it, and its idle release and warning)
   * only when it is the caller's own organization: another organization's hold is a bare yes.
   */
  holder(serial: string, organizationId: string): { held: boolean; sessionId?: string; allocationId?: string; memberEmail?: string; idleReleaseAt?: number | null; warning?: { reason: string; releaseAt: number } } {
    const { devices } = this.stores;
    const row = devices.holding(serial);
    // A phone whose cleanup has not finished is not free: the queue will not hand it out either.
    // A cleanup still owed holds a phone that is here; one that is gone (perhaps never to return, as a crashed demo's
    // phones) is held by nobody: if it comes back, it is cleaned before anyone gets it.
    if (!row) return { held: this.cleaning.has(serial) || (this.attached(serial) && devices.uncleaned().some((r) => r.serial === serial)) };
    if (row.organizationId !== organizationId) return { held: true };
    const member = this.holderOf(row);
    const memberEmail = member ? this.stores.users.get(member)?.email : undefined;
    return {
      held: true,
      sessionId: row.sessionId,
      allocationId: row.id,
      ...(memberEmail ? { memberEmail } : {}),
      ...(row.status === 'in_use' ? { idleReleaseAt: row.idleDeadlineAt } : {}),
      ...(row.warningReason && row.warningReleaseAt !== null ? { warning: { reason: row.warningReason, releaseAt: row.warningReleaseAt } } : {}),
    };
  }

  /** The member who allocated it; an allocation from before that was recorded names its session's creator. */
  private holderOf(row: DeviceAllocationRow): string | null | undefined {
    return row.createdBy ?? this.stores.sessions.get(row.sessionId, row.organizationId)?.createdBy;
  }

  // ---- the fleet's events ----

  private attached(serial: string): boolean {
    return this.phones.get(serial)?.state === 'device';
  }

  private onPhone(phone: Phone): void {
    if (this.stopped) return;
    const before = this.stores.fleet.get(phone.serial);
    this.stores.fleet.upsert(phone, this.now());
    if (!this.reconciled) return;
    // The same serial from another host is another phone (a duplicate serial took over): what was held on the
    // first one is lost, not handed over.
    const held = this.stores.devices.holding(phone.serial);
    if (held && before && before.host !== (phone.host ?? null)) {
      this.options.log(`${phone.serial} now reports from ${phone.host ?? 'this workstation'}, not ${before.host ?? 'this workstation'}; allocation ${held.id} ends as device_lost`);
      this.finish(held, this.now(), 'device_lost', false);
    }
    if (phone.state !== 'device') return this.onUnavailable(phone.serial);
    const row = this.stores.devices.holding(phone.serial);
    if (row?.status === 'offline') {
      clearTimeout(this.graceTimers.get(row.id));
      this.graceTimers.delete(row.id);
      this.ready(row.id);
      this.options.log(`${phone.serial} is back; allocation ${row.id} is in_use again`);
    } else if (row?.status === 'provisioning' && !this.preparing.has(row.id)) {
      void this.prepare(row);
    }
    const unfinished = this.stores.devices.uncleaned().find((r) => r.serial === phone.serial);
    if (unfinished && !this.cleaning.has(phone.serial)) void this.cleanup(unfinished);
    this.serveQueue();
  }

  private onUnavailable(serial: string): void {
    if (this.stopped || !this.reconciled) return;
    const { fleet, devices } = this.stores;
    if (!this.phones.get(serial)) fleet.setState(serial, 'gone');
    const row = devices.holding(serial);
    if (row?.status === 'in_use') this.goOffline(row, this.now());
    else if (row?.status === 'provisioning') this.requeue(row);
  }

  private goOffline(row: DeviceAllocationRow, since: number): void {
    this.stores.devices.setStatus(row.id, 'offline', since);
    this.options.log(`${row.serial} went away; allocation ${row.id} is offline for up to ${this.options.graceMs / 1000} s`);
    this.armGrace(row.id, since);
  }

  private armGrace(allocationId: string, since: number): void {
    clearTimeout(this.graceTimers.get(allocationId));
    const wait = Math.max(0, since + this.options.graceMs - this.now());
    const timer = setTimeout(() => {
      this.graceTimers.delete(allocationId);
      const row = this.stores.devices.get(allocationId);
      // Billing stops when the phone went away, not when the lab gave up waiting for it.
      if (row?.status === 'offline') this.finish(row, row.offlineSince ?? this.now(), 'device_lost');
    }, wait);
    timer.unref();
    this.graceTimers.set(allocationId, timer);
  }

  // ---- assignment, preparation, release ----

  /** Hands free phones to queued allocations, oldest first; an allocation no free phone matches waits. */
  private serveQueue(): void {
    if (this.stopped || !this.reconciled) return;
    const { devices } = this.stores;
    // A phone whose last cleanup has not finished is not handed out: it may still hold the last user's apps.
    const dirty = new Set(devices.uncleaned().map((r) => r.serial));
    let reserved: Map<string, string> | undefined;
    let soon: Map<string, string> | undefined;
    for (const row of devices.active()) {
      if (row.status !== 'queued') continue;
      // Read once, and only when something waits: the calendar may be long, and most calls find no queue.
      reserved ??= this.stores.reservations.runningAt(this.now());
      soon ??= this.reservedSoon();
      const filters = JSON.parse(row.filters) as DeviceFilter[];
      // A phone reserved now is free only to the reserving organization, which gets it before any other match; a
      // phone another organization reserved from soon comes last, so that it is not handed out only to be taken back.
      const ownFirst = (p: Phone) =>
        reserved!.get(p.serial) === row.organizationId ? 0 : (soon!.get(p.serial) ?? row.organizationId) !== row.organizationId ? 2 : 1;
      const phone = this.phones
        .list()
        .filter((p) => p.state === 'device' && !p.paused && !this.cleaning.has(p.serial) && !dirty.has(p.serial) && !devices.holding(p.serial) && matches(p, filters))
        .filter((p) => (reserved!.get(p.serial) ?? row.organizationId) === row.organizationId)
        .sort((a, b) => ownFirst(a) - ownFirst(b) || a.serial.localeCompare(b.serial))[0];
      if (!phone) continue;
      const now = this.now();
      if (!devices.assign(row.id, phone, now)) continue;
      this.stores.usage.start(row.organizationId, 'devices', row.id, now, phone.serial);
      void this.prepare(devices.get(row.id)!);
    }
  }

  /** Phones whose reservation starts within the warning lead, and by which organization. */
  private reservedSoon(): Map<string, string> {
    const now = this.now();
    const rows = this.stores.reservations.startingWithin(now, now + this.options.reservationWarningMs);
    // Earliest last, so that it is the one kept for its phone.
    return new Map(rows.reverse().map((r) => [r.serial, r.organizationId]));
  }

  private prepare(row: DeviceAllocationRow): Promise<void> {
    const running = this.preparation(row).finally(() => this.preparing.delete(row.id));
    this.preparing.set(row.id, running);
    return running;
  }

  private async preparation(row: DeviceAllocationRow): Promise<void> {
    const serial = row.serial!;
    try {
      const baseline = await withTimeout(this.phones.driver(serial).prepare(), this.options.prepareTimeoutMs, 'Preparing the phone');
      if (this.stopped) return;
      const current = this.stores.devices.get(row.id);
      if (current?.status !== 'provisioning' || current.serial !== serial) return;
      // Kept from a preparation a restart interrupted, which may have installed some of the apps already. Recorded
      // before installing, so that cleanup removes what installApps adds.
      if (current.packagesBefore === null) this.stores.devices.setBaseline(row.id, baseline);
      await this.installApps(current);
      // Released, or requeued because the phone went away, while the apps were installing.
      const installed = this.stores.devices.get(row.id);
      if (this.stopped || installed?.status !== 'provisioning' || installed.serial !== serial) return;
      this.ready(row.id);
    } catch (error) {
      if (this.stopped) return;
      const current = this.stores.devices.get(row.id);
      if (current?.status !== 'provisioning') return;
      this.options.log(`${serial}: preparing allocation ${row.id} failed: ${(error as Error).message}`);
      if (!this.attached(serial)) this.requeue(current);
      else this.finish(current, this.now(), error instanceof InstallFailed ? 'install_failed' : 'provisioning_failed');
    }
  }

  /** Installs the allocation's installApps, in order, before it goes in_use. */
  private async installApps(row: DeviceAllocationRow): Promise<void> {
    for (const fileId of this.stores.files.installsOf(row.id)) {
      const file = this.stores.files.get(fileId, row.organizationId, this.now());
      if (file?.status !== 'ready') throw new InstallFailed(`file ${fileId} is no longer stored`);
      try {
        await withTimeout(this.phones.driver(row.serial!).install(this.appFiles.pathOf(file)), this.options.prepareTimeoutMs, `Installing ${file.filename}`);
      } catch (error) {
        throw new InstallFailed(`installing ${file.filename}: ${(error as Error).message}`);
      }
    }
  }

  /** Back in the queue, at its original place (its createdAt), when its phone vanished while provisioning. */
  private requeue(row: DeviceAllocationRow): void {
    this.putBack(row);
    this.serveQueue();
  }

  private putBack(row: DeviceAllocationRow): void {
    this.stores.usage.stop(row.id, this.now());
    this.stores.devices.requeue(row.id);
  }

  /**
   * Releases an allocation (billing stops at `at`), then cleans its phone and serves the queue. `by` is the member who
   * released it; null when the lab did, for `reason`.
   */
  private finish(row: DeviceAllocationRow, at: number, reason: string | null, cleanPhone = true, by: string | null = null): void {
    const { devices, usage } = this.stores;
    clearTimeout(this.graceTimers.get(row.id));
    this.graceTimers.delete(row.id);
    if (!devices.release(row.id, at, reason, by)) return;
    usage.stop(row.id, at);
    const released = devices.get(row.id)!;
    // What still works on the phone for the allocation (a WebDriver session ending) finishes before cleanup starts.
    const ending: Array<Promise<void>> = [this.preparing.get(row.id) ?? Promise.resolve()];
    for (const listener of this.releaseListeners) {
      try {
        const more = listener(released);
        if (more) ending.push(withTimeout(more, this.options.prepareTimeoutMs, 'Ending what used the phone').catch((error: Error) => this.options.log(`after releasing ${row.id}: ${error.message}`)));
      } catch (error) {
        this.options.log(`after releasing ${row.id}: ${(error as Error).message}`);
      }
    }
    // A release while installApps are still installing cleans up after the install in flight, or it would stay.
    // Not cleanPhone: the phone under this serial now is another one, whose apps are not this allocation's to remove.
    if (cleanPhone && released.serial && released.packagesBefore && this.attached(released.serial)) {
      void Promise.all(ending).then(() => this.cleanup(released));
    } else if (!released.packagesBefore || !cleanPhone) devices.markCleaned(row.id, this.now());
    this.serveQueue();
  }

  private async cleanup(row: DeviceAllocationRow): Promise<void> {
    const serial = row.serial!;
    if (this.cleaning.has(serial)) return;
    this.cleaning.add(serial);
    try {
      const before: PhoneBaseline = {
        packages: JSON.parse(row.packagesBefore!) as string[],
        ...(row.filesBefore ? { files: JSON.parse(row.filesBefore) as string[] } : {}),
        ...(row.runningBefore ? { processes: JSON.parse(row.runningBefore) as PhoneBaseline['processes'] } : {}),
      };
      await withTimeout(this.phones.driver(serial).cleanup(before), this.options.prepareTimeoutMs, 'Cleaning the phone');
      if (!this.stopped) this.stores.devices.markCleaned(row.id, this.now());
    } catch (error) {
      // Left uncleaned: the next time the phone appears (or the engine starts) cleanup runs again.
      this.options.log(`${serial}: cleanup after allocation ${row.id} failed: ${(error as Error).message}`);
    } finally {
      this.cleaning.delete(serial);
      if (!this.stopped) this.serveQueue();
    }
  }
}
