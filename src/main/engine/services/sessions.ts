import { randomUUID } from 'node:crypto';
import { notFound } from '../domain/errors.js';
import type { DeviceAllocationRow } from '../store/devices.js';
import type { InstanceRow } from '../store/instances.js';
import type { SessionRow } from '../store/sessions.js';
import { requireRole } from './auth.js';
import { VersionedCache } from './cache.js';
import type { Stores } from '../store/index.js';
import type { Clock, Scope } from './scope.js';

export interface SessionWithParts extends SessionRow {
  devices: DeviceAllocationRow[];
  instances: InstanceRow[];
}

const DAY_MS = 24 * 3600 * 1000;




function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const map = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = map.get(k);
    if (list) list.push(item);
    else map.set(k, [item]);
  }
  return map;
}

/** Sessions: what a caller's devices and instances are allocated in. */
export class Sessions {
  /** Sessions by id, fresh until the next write to accounts, organizations, devices or instances. */
  private readonly cache: VersionedCache;

  constructor(
    private readonly stores: Pick<Stores, 'sessions' | 'devices' | 'instances' | 'authVersion' | 'sessionPartsVersion'>,
    private readonly now: Clock,
  ) {
    this.cache = new VersionedCache(() => stores.authVersion.value + stores.sessionPartsVersion.value);
  }

  createSession(scope: Scope): SessionWithParts {
    requireRole(scope.role, 'readwrite');
    const row = this.stores.sessions.create(randomUUID(), scope.organization.id, scope.caller.user.id, this.now());
    return { ...row, devices: [], instances: [] };
  }

  getSession(scope: Scope, sessionId: string): SessionWithParts {
    const session = this.cache.memo(`${scope.organization.id}:${sessionId}`, () => {
      const row = this.stores.sessions.get(sessionId, scope.organization.id);
      return row && this.withParts([row])[0]!;
    });
    if (!session) throw notFound('session');
    return session;
  }

  /**
   * Newest first. `before` is a strict createdAt cursor and `days` keeps only the last N days; they combine.
   * One row past the page tells whether a next page exists, so nothing is counted.
   */
  listSessions(
    scope: Scope,
    query: { limit: number; before?: number; days?: number },
  ): { sessions: SessionWithParts[]; nextCursor?: number } {
    const since = query.days ? this.now() - query.days * DAY_MS : 0;
    const rows = this.stores.sessions.page(scope.organization.id, query.before ?? Number.MAX_SAFE_INTEGER, since, query.limit + 1);
    const more = rows.length > query.limit;
    const page = more ? rows.slice(0, query.limit) : rows;
    return { sessions: this.withParts(page), nextCursor: more ? page[page.length - 1]!.createdAt : undefined };
  }

  private withParts(rows: SessionRow[]): SessionWithParts[] {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const devices = groupBy(this.stores.devices.ofSessions(ids), (d) => d.sessionId);
    const instances = groupBy(this.stores.instances.ofSessions(ids), (i) => i.sessionId);
    return rows.map((r) => ({ ...r, devices: devices.get(r.id) ?? [], instances: instances.get(r.id) ?? [] }));
  }
}
