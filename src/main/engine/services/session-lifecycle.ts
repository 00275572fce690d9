import { invalid, notFound } from '../domain/errors.js';
import type { SessionRow } from '../store/sessions.js';
import type { Stores } from '../store/index.js';
import { requireRole } from './auth.js';
import type { DeviceAllocator } from './devices.js';
import type { InstanceManager } from './instances.js';
import type { Scope } from './scope.js';

export const SESSION_NAME_MAX = 100;

/**
 * Naming and ending a session: extensions beyond the spec, for people who keep several sessions open. Ending one
 * releases every phone and Mac instance it holds (each cleaned up as a release of its own would be) and refuses
 * new allocations into it, so that nothing is left running and billed under a session nobody looks at.
 */
export class SessionLifecycle {
  constructor(
    private readonly stores: Pick<Stores, 'sessions' | 'devices' | 'instances'>,
    private readonly allocator: Pick<DeviceAllocator, 'release'>,
    private readonly instances: Pick<InstanceManager, 'release'>,
    private readonly now: () => number,
  ) {}

  private session(scope: Scope, sessionId: string): SessionRow {
    const row = this.stores.sessions.get(sessionId, scope.organization.id);
    if (!row) throw notFound('session');
    return row;
  }

  /** An empty or blank name clears it. */
  rename(scope: Scope, sessionId: string, name: string | null): void {
    requireRole(scope.role, 'readwrite');
    this.session(scope, sessionId);
    const trimmed = name?.trim() ?? '';
    if (trimmed.length > SESSION_NAME_MAX) throw invalid('invalid_name', `A session name has at most ${SESSION_NAME_MAX} characters.`);
    this.stores.sessions.rename(sessionId, scope.organization.id, trimmed || null);
  }

  /** Idempotent: ending an ended session answers it as it is. */
  end(scope: Scope, sessionId: string): void {
    requireRole(scope.role, 'readwrite');
    this.session(scope, sessionId);
    for (const device of this.stores.devices.ofSessions([sessionId])) {
      if (device.releasedAt === null) this.allocator.release(scope, sessionId, device.id);
    }
    for (const instance of this.stores.instances.ofSessions([sessionId])) {
      if (instance.releasedAt === null) this.instances.release(scope, sessionId, instance.id);
    }
    this.stores.sessions.end(sessionId, scope.organization.id, this.now());
  }
}
