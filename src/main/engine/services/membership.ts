import type { DeviceAllocator } from './devices.js';
import type { Keys } from './keys.js';
import type { RemoteConnect } from './remote-connect.js';
import type { Reservations } from './reservations.js';

/** The releaseReason of an allocation ended because its holder left the organization. */
export const MEMBER_REMOVED = 'member_removed';

/**
 * Membership is live: a member removed from an organization keeps nothing there. revoke() ends, at once, what they
 * hold in it: their allocations (each released as any release, so the phone is cleaned and their WebDriver run ends),
 * their reservation windows running now, the remote connections they opened, their API keys for it, and every
 * connection they act through in it (WebSockets, event streams, MCP sessions), which the API registers with hold().
 * Interactive tokens name no organization: the membership check on every request already refuses them there.
 */
export class Membership {
  /** Ends of the open connections, by organization and member. */
  private readonly connections = new Map<string, Set<() => void>>();

  constructor(
    private readonly parts: {
      allocator: Pick<DeviceAllocator, 'releaseHeldBy'>;
      reservations: Pick<Reservations, 'endRunningOf'>;
      remote: Pick<RemoteConnect, 'forget'>;
      keys: Pick<Keys, 'deleteKeysOf'>;
    },
  ) {}

  /**
   * A connection a member acts through in an organization: `end` is called if they are removed from it. Returns what
   * to call once the connection ends by itself.
   */
  hold(organizationId: string, userId: string, end: () => void): () => void {
    const key = `${organizationId}\n${userId}`;
    let ends = this.connections.get(key);
    if (!ends) this.connections.set(key, (ends = new Set()));
    ends.add(end);
    const held = ends;
    return () => {
      held.delete(end);
      if (held.size === 0 && this.connections.get(key) === held) this.connections.delete(key);
    };
  }

  /** The member has just been removed from the organization (their membership row is gone). */
  revoke(organizationId: string, userId: string): void {
    const { allocator, reservations, remote, keys } = this.parts;
    // Queued requests go with the rest, so a phone freed here never reaches a request of theirs.
    allocator.releaseHeldBy(organizationId, userId, MEMBER_REMOVED);
    reservations.endRunningOf(organizationId, userId);
    remote.forget(organizationId, userId);
    keys.deleteKeysOf(organizationId, userId);
    const key = `${organizationId}\n${userId}`;
    const ends = this.connections.get(key);
    this.connections.delete(key);
    for (const end of ends ?? []) end();
  }
}
