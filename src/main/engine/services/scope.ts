import type { Role } from '../domain/roles.js';
import type { OrganizationRow } from '../store/organizations.js';
import type { UserRow } from '../store/users.js';

/** Who is calling: an interactive (JWT) user, or an API key acting for the user who created it. */
export interface Caller {
  kind: 'user' | 'key';
  user: UserRow;
  /** Set for API keys: the key and the one organization it is bound to. */
  key?: { id: string; organizationId: string };
}

/** The organization a request acts on, and the caller's role in it as of this request. */
export interface Scope {
  caller: Caller;
  organization: OrganizationRow;
  role: Role;
}

/** Milliseconds since the epoch; injected so that tests can move time. */
export type Clock = () => number;
