import { randomUUID } from 'node:crypto';
import { notFound } from '../domain/errors.js';
import type { DeviceAllocationRow } from '../store/devices.js';
import type { InstanceRow } from '../store/instances.js';
import type { SessionRow } from '../store/sessions.js';
import { requireRole } from './auth.js';
import { perContext, VersionedCache } from './cache.js';
import type { EngineContext, Scope } from './context.js';

export interface SessionWithParts extends SessionRow {
  devices: DeviceAllocationRow[];
  instances: InstanceRow[];
}

const DAY_MS = 24 * 3600 * 1000;

export function createSession(ctx: EngineContext, scope: Scope): SessionWithParts {
  requireRole(scope.role, 'readwrite');
  const row = ctx.stores.sessions.create(randomUUID(), scope.organization.id, scope.caller.user.id, ctx.now());
  return { ...row, devices: [], instances: [] };
}

/** Sessions by id, fresh until the next write to accounts, organizations, devices or instances. */
const cacheOf = perContext(
  (ctx: EngineContext) => new VersionedCache(() => ctx.stores.authVersion.value + ctx.stores.sessionPartsVersion.value),
);

export function getSession(ctx: EngineContext, scope: Scope, sessionId: string): SessionWithParts {
  const session = cacheOf(ctx).memo(`${scope.organization.id}:${sessionId}`, () => {
    const row = ctx.stores.sessions.get(sessionId, scope.organization.id);
    return row && withParts(ctx, [row])[0]!;
  });
  if (!session) throw notFound('session');
  return session;
}

/**
 * Newest first. `before` is a strict createdAt cursor and `days` keeps only the last N days; they combine.
 * One row past the page tells whether a next page exists, so nothing is counted.
 */
export function listSessions(
  ctx: EngineContext,
  scope: Scope,
  query: { limit: number; before?: number; days?: number },
): { sessions: SessionWithParts[]; nextCursor?: number } {
  const since = query.days ? ctx.now() - query.days * DAY_MS : 0;
  const rows = ctx.stores.sessions.page(scope.organization.id, query.before ?? Number.MAX_SAFE_INTEGER, since, query.limit + 1);
  const more = rows.length > query.limit;
  const page = more ? rows.slice(0, query.limit) : rows;
  return { sessions: withParts(ctx, page), nextCursor: more ? page[page.length - 1]!.createdAt : undefined };
}

function withParts(ctx: EngineContext, rows: SessionRow[]): SessionWithParts[] {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const devices = groupBy(ctx.stores.devices.ofSessions(ids), (d) => d.sessionId);
  const instances = groupBy(ctx.stores.instances.ofSessions(ids), (i) => i.sessionId);
  return rows.map((r) => ({ ...r, devices: devices.get(r.id) ?? [], instances: instances.get(r.id) ?? [] }));
}

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
