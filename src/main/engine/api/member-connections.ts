import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Membership } from '../services/membership.js';
import type { Scope } from '../services/scope.js';

/** The organization and member each request last acted as: /ws resolves its scope again on every call. */
const heldAs = new WeakMap<FastifyRequest, string>();

/**
 * Registers the request's connection with the member's holds in the organization it acts on, until it closes. Removal
 * cuts only what stays open (an upgraded socket: /ws, a live screen, a terminal; a stream: logs, events, MCP): an
 * ordinary request in flight finishes, and the next one is refused by the membership check.
 */
export function holdConnection(membership: Pick<Membership, 'hold'>, scope: Scope, request: FastifyRequest, reply: FastifyReply): void {
  const organizationId = scope.organization.id;
  const userId = scope.caller.user.id;
  const key = `${organizationId}\n${userId}`;
  if (heldAs.get(request) === key) return;
  heldAs.set(request, key);
  const release = membership.hold(organizationId, userId, () => {
    if (request.ws || reply.sent) request.raw.socket.destroy();
  });
  // An upgraded request's response is never sent: its socket's end is the connection's.
  if (request.ws) request.raw.socket.once('close', release);
  else reply.raw.once('close', release);
}
